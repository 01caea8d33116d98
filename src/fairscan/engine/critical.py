"""Analytic critical value of the Bias Scan (methods.md §2.4b, Theorem 2).

``h(alpha) = k1 * M + k2 * z_{1-alpha} * sqrt(M)`` with M the number of distinct covariate
profiles. Asymptotic and conservative (it bounds the maximum over *all* subsets of profiles);
derived for penalty 0 and the negative direction only. A screening figure: the randomization
test is the primary decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# scipy.special, not scipy.stats: the same function (norm.ppf is ndtri) without importing all
# of scipy.stats (about a second of CPU) on the first scan that needs h(alpha)
from scipy.special import ndtri

# Re-derived numerically (see tests/engine/test_critical.py, which recomputes both maxima).
K1 = 0.2024565
K2_SQUARED = 0.2737092


def critical_value(alpha: float, profiles: int) -> float:
    """h(alpha) for M = ``profiles`` distinct covariate profiles."""
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    z = float(ndtri(1.0 - alpha))
    return K1 * profiles + math.sqrt(K2_SQUARED) * z * math.sqrt(profiles)


def _negative_llr_gap(observed: np.ndarray, expected: np.ndarray, log_delta: float) -> float:
    """Q(Delta) = sum log(Delta p + 1 - p) - y log Delta (methods.md §2.5)."""
    return float(np.sum(np.log1p(expected * np.expm1(log_delta)) - observed * log_delta))


def unconstrained_llr(observed: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """F_old = max over q > 0 of sum y log q - log(1 - p + q p), and log q at the maximum."""
    c = float(observed.sum())
    if c <= 0.0 or c >= observed.shape[0]:
        raise ValueError("F_old needs both outcomes in the subgroup (0 < sum y < n)")
    lo, hi = -50.0, 50.0
    for _ in range(200):  # bisection on the increasing derivative sum q p / (1 - p + q p) - c
        mid = 0.5 * (lo + hi)
        q = math.exp(mid)
        g = float(np.sum(q * expected / (1.0 - expected + q * expected))) - c
        if g < 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    u = 0.5 * (lo + hi)
    return -_negative_llr_gap(observed, expected, u), u


@dataclass(frozen=True)
class Detectability:
    """How strong a bias in a target subgroup must be for the Bias Scan to detect it."""

    alpha: float
    profiles: int
    h: float
    f_old: float  # unconstrained score of the subgroup with the unbiased probabilities
    q_mle: float
    delta_thresh: float  # odds multiplier Delta at which F_old + Q(Delta) reaches h(alpha)


def detectability_threshold(
    observed: np.ndarray, expected: np.ndarray, alpha: float, profiles: int
) -> Detectability:
    """Delta_thresh = max(1, Q^{-1}(h(alpha) - F_old)) on the branch Delta >= q_MLE (§2.5, Thm 4).

    Solves F_old + Q(Delta) = h(alpha) by bisection in log Delta, doubling the upper end.
    """
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.clip(np.asarray(expected, dtype=np.float64), 1e-12, 1 - 1e-12)
    h = critical_value(alpha, profiles)
    f_old, u_mle = unconstrained_llr(observed, expected)

    def excess(log_delta: float) -> float:
        return f_old + _negative_llr_gap(observed, expected, log_delta) - h

    lo = u_mle
    hi = max(u_mle, 0.0) + 1.0
    while excess(hi) < 0.0:
        lo, hi = hi, 2.0 * hi + 1.0
        if hi > 700:
            raise ValueError("no finite Delta reaches h(alpha) for this subgroup")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if excess(mid) < 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    delta = math.exp(0.5 * (lo + hi))
    return Detectability(
        alpha=alpha,
        profiles=profiles,
        h=h,
        f_old=f_old,
        q_mle=math.exp(u_mle),
        delta_thresh=max(1.0, delta),
    )
