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

import math
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
    # the exact tail's base-10 logarithm, exact even where the p-value is below any float
    log10_p_value: float | None = None


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
        # scipy's tail underflows (to 0 below 1e-308): there it is summed in logs
        log_tail = (
            math.log(tail) if tail >= TINY_TAIL else log_binomial_tail(c, n, p, upper=direction > 0)
        )
        # a tail smaller than any float keeps the smallest positive one: never 0
        p_value = min(1.0, max(math.exp(log_tail), SMALLEST_P))
        return FixedTest(p_value, EXACT, 0, log10_p_value=min(0.0, log_tail / math.log(10.0)))
    if replicates <= 0:
        return FixedTest(None, PARAMETRIC, 0)
    drawn = draw_sums(cells, inside, draw, seed, replicates, residuals)
    tol = _tolerance(observed)
    extreme = drawn >= observed - tol if direction > 0 else drawn <= observed + tol
    exceed = int(np.count_nonzero(extreme))
    return FixedTest((1 + exceed) / (1 + replicates), PARAMETRIC, replicates, exceed)


# Below this, an exact tail is summed in log space: scipy's binomial tails lose precision and
# then underflow to 0 there, and a report must never say "p = 0" (issue 34).
TINY_TAIL = 1e-250
# The smallest positive float: the p-value stored for a tail even smaller than that (its text
# is "p < 1e-300", fairscan.report.text.fmt_p).
SMALLEST_P = math.ulp(0.0)


def log_binomial_tail(c: int, n: int, p: float, *, upper: bool) -> float:
    """log P(C >= c) (``upper``) or log P(C <= c) for C ~ Binomial(n, p), without underflow.

    Used beyond the mode only (the tails that underflow): there the terms fall away from ``c``
    with ratio at most r_c < 1, so summing them in logs until they drop below 1e-17 of the
    first (``log-sum-exp``) gives the tail to double precision."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    if upper:
        if c <= 0:
            return 0.0
        stop = n
        ratio = (n - c) / (c + 1) * p / (1.0 - p) if p < 1.0 else 1.0
    else:
        if c >= n:
            return 0.0
        stop = 0
        ratio = c / (n - c + 1) * (1.0 - p) / p if p > 0.0 else 1.0
    if ratio >= 1.0:  # at or before the mode: the tail cannot underflow
        return float(np.log(binom.sf(c - 1, n, p) if upper else binom.cdf(c, n, p)))
    reach = 1 if ratio <= 0.0 else math.ceil(40.0 / -math.log(ratio)) + 1
    terms = min(abs(stop - c) + 1, reach)
    k = np.arange(c, c + terms) if upper else np.arange(c, c - terms, -1)
    return float(min(0.0, logsumexp(binom.logpmf(k, n, p))))


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


# --- one group's mean gap under the multinomial bootstrap (shift's given subgroups) -----------

GAP_BOOTSTRAP = "multinomial bootstrap of the subgroup's gap (one group, no simultaneous bound)"


@dataclass(frozen=True)
class GapBootstrap:
    """The gap eps(S) = mean of L over S - theta and its centred bootstrap draws."""

    estimate: float
    theta: float
    centred: np.ndarray  # eps*_b(S) - eps(S) over the resamples with rows of S


def gap_bootstrap(
    L: np.ndarray,
    inside: np.ndarray,
    *,
    theta: float | None,
    resamples: int,
    seed: np.random.SeedSequence,
    weight: np.ndarray | None = None,
) -> GapBootstrap:
    """Cherian-Candès' bootstrap (methods.md §5.3) for the one group S: multinomial(n; 1/n)
    resample counts w, eps*_b = sum_S w L / sum_S w - theta*_b with theta*_b the resample's
    mean of L (``theta`` None: estimated, Algorithm 8's target) or the known ``theta``.
    Resample ``b`` uses its own stream; a resample with no row of S is left out. ``weight``:
    the rows' sample weights (means become weighted means; a resampled row carries its
    weight, as in the shift scan's own bootstrap)."""
    n = L.shape[0]
    if weight is not None:
        return _weighted_gap_bootstrap(L, inside, theta, resamples, seed, weight)
    mean = float(L.mean()) if theta is None else float(theta)
    estimate = float(L[inside].mean()) - mean
    sums = np.empty((resamples, 3))
    probabilities = np.full(n, 1.0 / n)
    Lin = np.where(inside, L, 0.0)
    for b in range(resamples):
        w = replicate_rng(seed, b).multinomial(n, probabilities).astype(np.float64)
        sums[b] = (w @ Lin, w @ inside, w @ L)
    kept = sums[:, 1] > 0
    theta_b = sums[kept, 2] / n if theta is None else np.full(int(kept.sum()), mean)
    centred = sums[kept, 0] / sums[kept, 1] - theta_b - estimate
    return GapBootstrap(estimate, mean, centred)


def _weighted_gap_bootstrap(
    L: np.ndarray,
    inside: np.ndarray,
    theta: float | None,
    resamples: int,
    seed: np.random.SeedSequence,
    weight: np.ndarray,
) -> GapBootstrap:
    """:func:`gap_bootstrap` with sample weights ``v``: weighted means, and each resampled row
    carrying its weight (resample counts w times v), the same draws as without weights."""
    n = L.shape[0]
    v = np.asarray(weight, dtype=np.float64)
    mean = float(v @ L / v.sum()) if theta is None else float(theta)
    estimate = float(v[inside] @ L[inside] / v[inside].sum()) - mean
    sums = np.empty((resamples, 4))
    probabilities = np.full(n, 1.0 / n)
    vL, vin = v * L, v * inside
    vLin = np.where(inside, vL, 0.0)
    for b in range(resamples):
        w = replicate_rng(seed, b).multinomial(n, probabilities).astype(np.float64)
        sums[b] = (w @ vLin, w @ vin, w @ vL, w @ v)
    kept = (sums[:, 1] > 0) & (sums[:, 3] > 0)
    theta_b = sums[kept, 2] / sums[kept, 3] if theta is None else np.full(int(kept.sum()), mean)
    centred = sums[kept, 0] / sums[kept, 1] - theta_b - estimate
    return GapBootstrap(estimate, mean, centred)


def gap_p_value(boot: GapBootstrap, side: str, shift: float = 0.0) -> tuple[float, int]:
    """The bootstrap p-value of H0: no gap on the harmful side (lower: eps <= 0, a higher
    metric is harmful; upper: eps >= 0; both: eps = 0), at the estimate moved by ``shift``:
    (1 + #{centred draws at least as extreme}) / (1 + B)."""
    value = boot.estimate + shift
    d = boot.centred
    tol = 1e-12 * max(1.0, abs(value))
    if side == "lower":
        exceed = int(np.count_nonzero(d >= value - tol))
    elif side == "upper":
        exceed = int(np.count_nonzero(d <= value + tol))
    else:
        exceed = int(np.count_nonzero(np.abs(d) >= abs(value) - tol))
    return (1 + exceed) / (1 + len(d)), exceed


def gap_power(boot: GapBootstrap, side: str, effect: float, alpha: float) -> float | None:
    """Power at ``alpha`` against a gap ``effect`` (a baseline's), by the bootstrap law moved
    to it: the share of draws ``effect + d_b`` whose p-value is at most ``alpha``."""
    d = np.sort(boot.centred)
    if not d.size:
        return None
    values = effect + d
    if side == "lower":
        exceed = d.size - np.searchsorted(d, values, side="left")
    elif side == "upper":
        exceed = np.searchsorted(d, values, side="right")
    else:
        a = np.sort(np.abs(d))
        exceed = a.size - np.searchsorted(a, np.abs(values), side="left")
    return float(np.mean((1 + exceed) / (1 + d.size) <= alpha))


__all__ = [
    "EXACT",
    "GAP_BOOTSTRAP",
    "PARAMETRIC",
    "FixedTest",
    "GapBootstrap",
    "alternative",
    "constant_inside",
    "draw_sums",
    "fixed_power",
    "fixed_test",
    "gap_bootstrap",
    "gap_p_value",
    "gap_power",
]
