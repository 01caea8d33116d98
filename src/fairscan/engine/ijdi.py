"""IJDI-Scan: base-rate-adjusted error-rate imbalance with the edge-case loop (methods.md §4.3-4.6).

The scan runs on one side of the outcome (negatives: FPR, positives: TPR). Observed is the
binary recommendation; the expectation of record i is the "uncensored" ``u_i = pbar_b +
lambda (p_i - pbar)`` censored to [0, 1], where ``p_i`` is the base rate Pr(y = 1 | x). Two
edge cases raise expectations inside the detected subgroup S* and rescan until neither fires:

1. the base rate inside S* is below the base rate outside: the low ``p_i`` in S* are raised
   toward ``p(~S*)`` (keeping their order) and ``u`` follows with slope lambda;
2. censoring lowered the expected mean of S*: the scan expectations below 1 are raised so that
   their mean equals the uncensored mean of S* (or everything to 1). They are kept apart from
   ``u`` (see :func:`edge_case_2`).

``pbar`` and ``pbar_b`` are fixed at their initial values (methods.md §8 I2), so both
corrections only raise expectations and the loop terminates; a pass cap bounds it anyway.

Everything is computed on cells (records with identical attribute profile and base rate): the
corrections depend on nothing else, so this is exact and much faster than per record.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from fairscan.engine.cells import Cells, compress
from fairscan.engine.mdss import EPSILON, SubgroupScore, members, score_subgroup, search

TAU = 1e-12  # tolerance of the edge-case conditions (methods.md §4.5)
MAX_PASSES = 100


@dataclass(frozen=True)
class Correction:
    """One edge-case correction applied during the loop."""

    edge_case: int  # 1 (base rate) or 2 (censoring)
    scan_pass: int
    size: float  # records of S* at that pass
    factor: float  # alpha_1 or beta_2 (1.0 when everything was set to 1)


@dataclass(frozen=True)
class IjdiCells:
    """Scanned records compressed by (profile, base rate): the loop's state lives on these."""

    codes: np.ndarray  # (M, m) int32 local codes
    weight: np.ndarray  # (M,)
    observed: np.ndarray  # (M,) number of positive recommendations
    base_rate: np.ndarray  # (M,) p_i
    cardinality: np.ndarray
    # fractional sample weights: each record's cell and weight, for per-record null draws
    row_cell: np.ndarray | None = None
    row_weight: np.ndarray | None = None

    @classmethod
    def from_records(
        cls,
        codes: np.ndarray,
        recommendation: np.ndarray,
        base_rate: np.ndarray,
        cardinality: np.ndarray,
        weight: np.ndarray | None = None,
    ) -> IjdiCells:
        """Records compressed to cells; with sample ``weight`` every sum is weighted."""
        if weight is None:
            cells = compress(codes, recommendation, base_rate, cardinality)
            return cls(cells.codes, cells.weight, cells.observed, cells.expected, cells.cardinality)
        w = weight.astype(np.float64)
        cells = compress(codes, recommendation * w, base_rate, cardinality, weight=w)
        return cls(
            cells.codes,
            cells.weight,
            cells.observed,
            cells.expected,
            cells.cardinality,
            cells.row_cell,
            w,
        )

    def with_observed(self, observed: np.ndarray) -> IjdiCells:
        return replace(self, observed=observed)

    def draw(self, expected: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Null recommendations summed per cell: Bernoulli(expected) per record (per unit of
        weight), or per record times its fractional weight."""
        if self.row_cell is None or self.row_weight is None:
            return rng.binomial(self.weight.astype(np.int64), expected).astype(np.float64)
        drawn = rng.random(self.row_cell.shape[0]) < expected[self.row_cell]
        return np.bincount(
            self.row_cell, weights=drawn * self.row_weight, minlength=self.weight.shape[0]
        )


@dataclass(frozen=True)
class IjdiOutcome:
    best: SubgroupScore
    inside: np.ndarray  # (M,) bool: cells in S*
    passes: int
    converged: bool  # False when the pass cap stopped the loop
    corrections: list[Correction] = field(default_factory=list)
    pbar_b: float = 0.0
    pbar: float = 0.0


def uncensored_expectations(cells: IjdiCells, lam: float) -> tuple[np.ndarray, float, float]:
    """``u = pbar_b + lambda (p - pbar)`` with the weighted overall means."""
    total = cells.weight.sum()
    pbar_b = float(cells.observed.sum() / total)
    pbar = float((cells.weight * cells.base_rate).sum() / total)
    return pbar_b + lam * (cells.base_rate - pbar), pbar_b, pbar


def censored_expectations(u: np.ndarray) -> np.ndarray:
    """clip(u, 0, 1), then the epsilon clip of the Bernoulli score (methods.md §1.4.1)."""
    return np.clip(u, EPSILON, 1.0 - EPSILON)


def _search_cells(cells: IjdiCells, expected: np.ndarray) -> Cells:
    return compress(cells.codes, cells.observed, expected, cells.cardinality, weight=cells.weight)


def edge_case_1(
    base_rate: np.ndarray, u: np.ndarray, weight: np.ndarray, inside: np.ndarray, lam: float
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Raise the low base rates in S* so that p(S*) = p(~S*); None when it does not apply."""
    outside = ~inside
    if not outside.any() or not inside.any():
        return None
    w_in = weight[inside].sum()
    p_in = (weight[inside] * base_rate[inside]).sum() / w_in
    p_out = (weight[outside] * base_rate[outside]).sum() / weight[outside].sum()
    if not p_in < p_out - TAU:
        return None
    gap = p_out - base_rate
    low = inside & (base_rate < p_out)
    alpha = float((weight[inside] * gap[inside]).sum() / (weight[low] * gap[low]).sum())
    delta = np.where(low, alpha * gap, 0.0)
    return base_rate + delta, u + lam * delta, alpha


def edge_case_2(
    expected: np.ndarray, u: np.ndarray, weight: np.ndarray, inside: np.ndarray
) -> tuple[np.ndarray, float] | None:
    """Raise the scan expectations e_i < 1 in S* so their mean reaches the uncensored mean.

    ``expected`` is the scan state e (initially clip(u, 0, 1)); ``u`` is not changed here. The
    target is min(mean of u over S*, 1) ("(or 1)", methods.md §4.5). Keeping e apart from u is
    the paper's reading of Algorithm 1 (lines 11-12 act on the scan expectations): raising u
    itself would also raise the uncensored mean by the part above 1, so the same S* would fire
    again and again until every expectation in it is 1 (found by the Experiment-1 benchmark).
    With e = clip(u) and no u < 0 this is exactly beta_2 = sum(u - 1)+ / sum(1 - u)_{u < 1}.
    """
    if not inside.any():
        return None
    w_in = weight[inside]
    total = w_in.sum()
    target = min(float((w_in * u[inside]).sum() / total), 1.0)
    current = float((w_in * expected[inside]).sum() / total)
    if not current < target - TAU:
        return None
    below = inside & (expected < 1.0)
    if target >= 1.0:
        return np.where(below, 1.0, expected), 1.0
    beta = float((target - current) * total / (weight[below] * (1.0 - expected[below])).sum())
    return np.where(below, expected + beta * (1.0 - expected), expected), beta


def ijdi_loop(
    cells: IjdiCells,
    *,
    lam: float,
    penalty: float,
    restarts: int,
    seed: int,
    max_passes: int = MAX_PASSES,
) -> IjdiOutcome:
    """Algorithm 1 with both edge cases (methods.md §4.5); positive direction (q > 1)."""
    u, pbar_b, pbar = uncensored_expectations(cells, lam)
    base_rate = cells.base_rate.copy()
    expected = np.clip(u, 0.0, 1.0)  # the scan expectations; only ever raised
    corrections: list[Correction] = []
    best: SubgroupScore | None = None
    inside = np.zeros(cells.weight.shape[0], dtype=bool)
    for scan_pass in range(1, max_passes + 1):
        search_cells = _search_cells(cells, censored_expectations(expected))
        best = search(search_cells, direction=1, penalty=penalty, restarts=restarts, seed=seed)
        if best.llr <= 0.0:
            inside = np.zeros_like(inside)
            return IjdiOutcome(best, inside, scan_pass, True, corrections, pbar_b, pbar)
        inside = members(cells.codes, best.selection)
        size = float(cells.weight[inside].sum())
        first = edge_case_1(base_rate, u, cells.weight, inside, lam)
        if first is not None:
            base_rate, u, alpha = first
            expected = np.maximum(expected, np.clip(u, 0.0, 1.0))
            corrections.append(Correction(1, scan_pass, size, alpha))
            continue
        second = edge_case_2(expected, u, cells.weight, inside)
        if second is not None:
            expected, beta = second
            corrections.append(Correction(2, scan_pass, size, beta))
            continue
        return IjdiOutcome(best, inside, scan_pass, True, corrections, pbar_b, pbar)
    assert best is not None
    return IjdiOutcome(best, inside, max_passes, False, corrections, pbar_b, pbar)


def null_expectations(cells: IjdiCells, lam: float) -> np.ndarray:
    """Censored expectations from the original base rates: the null law of the recommendations."""
    u, _, _ = uncensored_expectations(cells, lam)
    return np.clip(u, 0.0, 1.0)


def rescore(
    cells: IjdiCells, selection: np.ndarray, expected: np.ndarray, penalty: float
) -> SubgroupScore:
    return score_subgroup(_search_cells(cells, expected), selection, 1, penalty)


# --- a given subgroup (issue 26): its score under the scan's null redraw, no search ----------


def fixed_expectations(cells: IjdiCells, inside: np.ndarray, lam: float) -> np.ndarray:
    """The scan expectations of a fixed subgroup S: the loop of Algorithm 1 with S* held at S.

    Edge case 1 makes p(S) = p(~S) and never fires again; edge case 2 then makes the censored
    mean of S equal its uncensored mean and never fires again either, so the loop settles after
    at most these two corrections (in this order, as in :func:`ijdi_loop`).
    """
    u, _, _ = uncensored_expectations(cells, lam)
    expected = np.clip(u, 0.0, 1.0)
    first = edge_case_1(cells.base_rate, u, cells.weight, inside, lam)
    if first is not None:
        _, u, _ = first
        expected = np.maximum(expected, np.clip(u, 0.0, 1.0))
    second = edge_case_2(expected, u, cells.weight, inside)
    if second is not None:
        expected, _ = second
    return censored_expectations(expected)


def fixed_score(
    cells: IjdiCells, selection: np.ndarray, lam: float, penalty: float
) -> SubgroupScore:
    """The IJDI score F(S) of a fixed subgroup (positive direction) at its own expectations."""
    inside = members(cells.codes, selection)
    return rescore(cells, selection, fixed_expectations(cells, inside, lam), penalty)


@dataclass(frozen=True)
class FixedReplicate:
    """Replicate ``r`` of a given subgroup's null (:func:`fixed_draws`) as a replicate job: its
    own stream per index, so the sequential rule can stop the draws anywhere and the scores
    up to there are the same whatever ran them (workers, executors)."""

    cells: IjdiCells
    selection: np.ndarray
    lam: float
    seed: np.random.SeedSequence
    q: float | None = None
    expected: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        expected = null_expectations(self.cells, self.lam)
        if self.q is not None:
            inside = members(self.cells.codes, self.selection)
            tilted = self.q * expected / (1.0 - expected + self.q * expected)
            expected = np.where(inside, tilted, expected)
        object.__setattr__(self, "expected", expected)

    def __call__(self, index: int) -> float:
        from fairscan.engine.seeds import replicate_rng

        counts = self.cells.weight.astype(np.int64)
        observed = replicate_rng(self.seed, index).binomial(counts, self.expected)
        cells = self.cells.with_observed(observed.astype(np.float64))
        return float(fixed_score(cells, self.selection, self.lam, 0.0).llr)


def fixed_draws(
    cells: IjdiCells,
    selection: np.ndarray,
    *,
    lam: float,
    seed: np.random.SeedSequence,
    replicates: int,
    q: float | None = None,
) -> np.ndarray:
    """F(S) in ``replicates`` redraws of the recommendations (replicate ``r``: its own stream).

    Under the null (``q`` None) every record is redrawn from the censored expectations of the
    original base rates, as the scan's own null replicates (methods.md §4.6); pbar_b, the
    expectations and the edge cases are recomputed from each replicate. With ``q`` the records
    in S are drawn with their null odds multiplied by ``q`` (the alternative of a power)."""
    job = FixedReplicate(cells, selection, lam, seed, q)
    return np.array([job(r) for r in range(replicates)], dtype=np.float64)
