"""Multidimensional subset scan (methods.md §1.4): the library-level API over the kernels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairscan.engine import kernels
from fairscan.engine.cells import Cells, compress

EPSILON = 1e-6  # expectations are clipped to [eps, 1 - eps] (methods.md §1.4.1)

Direction = int  # +1 positive (observed above expectation), -1 negative


def direction_code(direction: str) -> int:
    if direction == "positive":
        return 1
    if direction == "negative":
        return -1
    raise ValueError(f"unknown direction {direction!r}")


@dataclass(frozen=True)
class ScanProblem:
    """Scanned rows: attribute codes (re-indexed to the values present), observed, expected."""

    codes: np.ndarray  # (n, m) int32, codes 0..card-1, every code present
    observed: np.ndarray  # (n,) float64 in {0, 1}
    expected: np.ndarray  # (n,) float64 in [eps, 1 - eps]
    cardinality: np.ndarray  # (m,) int32
    value_index: tuple[np.ndarray, ...]  # per attribute: original code of each local code
    clipped: int  # how many expectations the epsilon clip changed

    @classmethod
    def build(
        cls,
        codes: np.ndarray,
        observed: np.ndarray,
        expected: np.ndarray,
        *,
        clip: bool = True,
    ) -> ScanProblem:
        """Re-index each attribute to the values present (V_j, methods.md §1.2) and clip.

        ``clip=False`` keeps expectations that are not probabilities (Poisson means, Gaussian
        residual scans) as they are.
        """
        codes = np.asarray(codes)
        m = codes.shape[1]
        local = np.empty(codes.shape, np.int32)
        value_index = []
        card = np.empty(m, np.int32)
        for j in range(m):
            present, inverse = np.unique(codes[:, j], return_inverse=True)
            local[:, j] = inverse.reshape(-1)
            value_index.append(present.astype(np.int64))
            card[j] = len(present)
        expected = np.asarray(expected, dtype=np.float64)
        clipped_expected = np.clip(expected, EPSILON, 1.0 - EPSILON) if clip else expected
        clipped = int(np.count_nonzero(clipped_expected != expected))
        return cls(
            codes=np.ascontiguousarray(local),
            observed=np.asarray(observed, dtype=np.float64),
            expected=clipped_expected,
            cardinality=card,
            value_index=tuple(value_index),
            clipped=clipped,
        )

    def members(self, selection: np.ndarray) -> np.ndarray:
        """Boolean mask of the scanned rows inside the subgroup ``selection`` (local codes)."""
        return members(self.codes, selection)

    def rows_in(self, codes: np.ndarray, selection: np.ndarray) -> np.ndarray:
        """Rows of a whole table (original ``codes``) inside a subgroup of this problem.

        Attributes with every present value selected are unconstrained, so rows with values
        absent from the scanned rows still belong to the subgroup.
        """
        inside = np.ones(codes.shape[0], bool)
        for j in range(codes.shape[1]):
            chosen = selection[j, : int(self.cardinality[j])]
            if not chosen.all():
                inside &= np.isin(codes[:, j], self.value_index[j][chosen])
        return inside

    def cells(self, observed: np.ndarray | None = None) -> Cells:
        return compress(
            self.codes,
            self.observed if observed is None else observed,
            self.expected,
            self.cardinality,
        )


@dataclass(frozen=True)
class SubgroupScore:
    """A subgroup (local value sets per attribute) with its scores and counts."""

    selection: np.ndarray  # (m, kmax) bool over local codes
    score: float  # penalised objective J(S)
    llr: float  # unpenalised F(S)
    penalty_units: int  # c(S)
    log_q: float
    size: float
    observed: float
    expected: float

    @property
    def q(self) -> float:
        return float(np.exp(self.log_q))


def members(codes: np.ndarray, selection: np.ndarray) -> np.ndarray:
    """The one home of subgroup membership: rows (or cells) of ``codes`` inside ``selection``."""
    inside = np.ones(codes.shape[0], dtype=bool)
    for j in range(codes.shape[1]):
        inside &= selection[j, codes[:, j]]
    return inside


def is_material(score: SubgroupScore) -> bool:
    """Whether a score is more than the epsilon clip of the expectations can produce.

    With expectations clipped to 1 - eps and every observation 1 (or to eps and every
    observation 0), a subgroup scores about size * eps without any real deviation; such
    scores (<= 2 * eps * size) are not findings.
    """
    return score.llr > 2.0 * EPSILON * max(score.size, 1.0)


def penalty_units(selection: np.ndarray, cardinality: np.ndarray) -> int:
    """c(S) = sum over constrained attributes of the number of selected values."""
    total = 0
    for j, k in enumerate(cardinality):
        cnt = int(selection[j, :k].sum())
        if cnt < k:
            total += cnt
    return total


def score_subgroup(
    cells: Cells,
    selection: np.ndarray,
    direction: Direction,
    penalty: float,
    *,
    likelihood: int = kernels.BERNOULLI,
    sigma: float = 1.0,
) -> SubgroupScore:
    """Score a subgroup from scratch (used to re-score the search result before reporting).

    ``likelihood`` is ``kernels.BERNOULLI``, ``kernels.POISSON`` (expectations are means, not
    probabilities) or ``kernels.GAUSSIAN`` (whose ``sigma`` is used and whose ``log_q`` holds
    mu-hat).
    """
    if likelihood == kernels.BERNOULLI:
        f, u, size, obs, exp_ = kernels.score_selection(
            cells.codes, cells.observed, cells.weight, cells.expected, selection, direction
        )
    else:
        f, u, size, obs, exp_ = kernels.score_selection_lik(
            cells.codes,
            cells.observed,
            cells.weight,
            cells.expected,
            selection,
            direction,
            likelihood,
            float(sigma),
        )
    units = penalty_units(selection, cells.cardinality)
    return SubgroupScore(
        selection=selection,
        score=f - penalty * units,
        llr=f,
        penalty_units=units,
        log_q=u,
        size=size,
        observed=obs,
        expected=exp_,
    )


def search(
    cells: Cells,
    *,
    direction: Direction,
    penalty: float,
    restarts: int,
    seed: int,
    likelihood: int = kernels.BERNOULLI,
    sigma: float = 1.0,
) -> SubgroupScore:
    """Coordinate ascent with random restarts; the best subgroup re-scored from scratch."""
    args = (
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.constant_expectation,
        cells.cardinality,
        direction,
        float(penalty),
        int(restarts),
        np.uint64(seed),
    )
    if likelihood == kernels.BERNOULLI:
        selection, _best = kernels.coordinate_ascent(*args)
    else:
        selection, _best = kernels.coordinate_ascent_lik(*args, likelihood, float(sigma))
    return score_subgroup(cells, selection, direction, penalty, likelihood=likelihood, sigma=sigma)


def max_score(
    cells: Cells,
    *,
    direction: Direction,
    penalty: float,
    restarts: int,
    seed: int,
    likelihood: int = kernels.BERNOULLI,
    sigma: float = 1.0,
) -> float:
    """The randomization-test statistic: J(S*) of the search, re-scored from scratch."""
    return search(
        cells,
        direction=direction,
        penalty=penalty,
        restarts=restarts,
        seed=seed,
        likelihood=likelihood,
        sigma=sigma,
    ).score


__all__ = [
    "EPSILON",
    "Cells",
    "ScanProblem",
    "SubgroupScore",
    "compress",
    "direction_code",
    "is_material",
    "max_score",
    "penalty_units",
    "score_subgroup",
    "search",
]
