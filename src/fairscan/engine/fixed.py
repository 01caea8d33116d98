"""The test of one given subgroup under an MDSS scan's own null model (no search).

For a fixed subgroup S the scan's statistic F(S) (the direction-constrained log-likelihood
ratio, minus a penalty that is constant for a fixed S) is a non-decreasing function of the
subgroup's observed sum C alone, strictly increasing where it is positive: Bernoulli and
Poisson ``max_{q > 1} C log q - G(q)``, Berk-Jones (the maximum of such terms over its levels),
Gaussian ``max_{mu > 0} mu s - mu^2 n / 2``. So its p-value is the null probability of an
observed sum at least as extreme as C (1 when F(S) = 0: no deviation in the scan's direction):

* ``exact binomial``: Bernoulli draws with one expectation p inside S (FPR/TPR-Scan, a bias
  scan without predictions, Berk-Jones): C ~ Binomial(N, p) under the null, exactly.
* ``parametric draws``: otherwise, the scan's own null draws (``engine.scores.draw_cells``:
  Bernoulli per row with its own probability, Poisson, Gaussian, or the permutation of the
  residuals) restricted to S's cells, ``replicates`` times; p = (1 + #{C* >= C}) / (1 + R).

No search is involved, so no search correction applies: the p-value is that of one subgroup
chosen before looking at the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairscan.engine.cells import Cells, restrict
from fairscan.engine.mdss import members
from fairscan.engine.scores import Draw, draw_cells
from fairscan.engine.seeds import child_seed, replicate_rng

EXACT = "exact binomial"
PARAMETRIC = "parametric draws"


@dataclass(frozen=True)
class FixedTest:
    """The p-value of one fixed subgroup and how it was computed."""

    p_value: float | None  # None: untested (replicates 0 where draws were needed)
    method: str  # EXACT or PARAMETRIC (or "no deviation" when F(S) = 0)
    replicates: int  # draws made (0 for the exact tail)
    exceed_count: int | None = None  # draws at least as extreme (parametric only)


def _tolerance(c: float) -> float:
    return 1e-9 * max(1.0, abs(c))


def constant_inside(cells: Cells, inside: np.ndarray) -> float | None:
    """The one expectation of the cells inside, or None when they differ."""
    expected = cells.expected[inside]
    if expected.size == 0:
        return None
    first = float(expected[0])
    return first if bool(np.all(np.abs(expected - first) <= 1e-12)) else None


def fixed_test(
    cells: Cells,
    selection: np.ndarray,
    *,
    direction: int,
    llr: float,
    draw: Draw,
    seed: np.random.SeedSequence,
    replicates: int,
    residuals: np.ndarray | None = None,
    material: bool = True,
) -> FixedTest:
    """The p-value of the subgroup ``selection`` whose statistic has the unpenalised ``llr``."""
    inside = members(cells.codes, selection)
    observed = float(cells.observed[inside].sum())
    if not material or llr <= 0.0 or not inside.any():
        return FixedTest(1.0, "no deviation in the scan's direction", 0)
    p = constant_inside(cells, inside) if draw == "binomial" else None
    weights = cells.weight[inside]
    if p is not None and bool(np.all(weights == np.round(weights))):
        from scipy.stats import binom  # only where a fixed subgroup is tested

        n = int(weights.sum())
        c = round(observed)
        tail = binom.sf(c - 1, n, p) if direction > 0 else binom.cdf(c, n, p)
        return FixedTest(float(min(1.0, tail)), EXACT, 0)
    if replicates <= 0:
        return FixedTest(None, PARAMETRIC, 0)
    drawn = draw_sums(cells, inside, draw, seed, replicates, residuals)
    tol = _tolerance(observed)
    extreme = drawn >= observed - tol if direction > 0 else drawn <= observed + tol
    exceed = int(np.count_nonzero(extreme))
    return FixedTest((1 + exceed) / (1 + replicates), PARAMETRIC, replicates, exceed)


def alternative(expected: np.ndarray, q: float, draw: Draw) -> np.ndarray | None:
    """The expectations under an effect of size ``q`` (odds multiplier for Bernoulli draws,
    rate multiplier for Poisson); None where the scan's null has no such alternative."""
    if draw == "binomial":
        return q * expected / (1.0 - expected + q * expected)
    if draw == "poisson":
        return q * expected
    return None


def fixed_power(
    cells: Cells,
    selection: np.ndarray,
    *,
    direction: int,
    q: float,
    alpha: float,
    draw: Draw,
    seed: np.random.SeedSequence,
    replicates: int,
) -> float | None:
    """The power of the fixed-subgroup test at level ``alpha`` against the effect ``q`` (the
    odds or rate multiplier a baseline finding had): exact for the binomial tail, else the
    same parametric draws under the null (critical sum) and under the alternative (power)."""
    inside = members(cells.codes, selection)
    if not inside.any() or not np.isfinite(q) or q <= 0:
        return None
    p = constant_inside(cells, inside) if draw == "binomial" else None
    weights = cells.weight[inside]
    if p is not None and bool(np.all(weights == np.round(weights))):
        from scipy.stats import binom

        n = int(weights.sum())
        p_alt = float(q * p / (1.0 - p + q * p))
        if direction > 0:  # smallest c with P(C >= c) <= alpha
            c = int(binom.isf(alpha, n, p)) + 1
            return float(binom.sf(c - 1, n, p_alt))
        c = int(binom.ppf(alpha, n, p))  # largest c with P(C <= c) <= alpha
        if binom.cdf(c, n, p) > alpha:
            c -= 1
        return float(binom.cdf(c, n, p_alt)) if c >= 0 else 0.0
    expected = alternative(cells.expected[inside], q, draw)
    if expected is None or replicates <= 0:
        return None
    null = np.sort(draw_sums(cells, inside, draw, seed, replicates))
    sub = restrict(cells, inside, np.clip(expected, 0.0, None if draw == "poisson" else 1.0))
    # the null draws use the replicate children of ``seed``; the alternative's, one level down
    alt_seed = child_seed(seed, replicates)
    alt = np.array(
        [
            draw_cells(sub, draw, replicate_rng(alt_seed, r)).observed.sum()
            for r in range(replicates)
        ]
    )
    if direction > 0:  # draws at least as large as each alternative sum
        exceed = replicates - np.searchsorted(null, alt - _tolerance(1.0), side="left")
    else:
        exceed = np.searchsorted(null, alt + _tolerance(1.0), side="right")
    return float(np.mean((1 + exceed) / (1 + replicates) <= alpha))


def draw_sums(
    cells: Cells,
    inside: np.ndarray,
    draw: Draw,
    seed: np.random.SeedSequence,
    replicates: int,
    residuals: np.ndarray | None = None,
) -> np.ndarray:
    """The subgroup's observed sum in each null replicate (replicate ``r`` uses its own stream,
    so the draws do not depend on how they are split)."""
    sums = np.empty(replicates)
    if draw == "permutation":  # residuals are permuted across every row
        for r in range(replicates):
            sums[r] = (
                draw_cells(cells, draw, replicate_rng(seed, r), residuals).observed[inside].sum()
            )
        return sums
    sub = restrict(cells, inside)
    for r in range(replicates):
        sums[r] = draw_cells(sub, draw, replicate_rng(seed, r)).observed.sum()
    return sums


__all__ = [
    "EXACT",
    "PARAMETRIC",
    "FixedTest",
    "alternative",
    "constant_inside",
    "draw_sums",
    "fixed_power",
    "fixed_test",
]
