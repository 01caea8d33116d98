"""Analytic critical value of the Bias Scan (methods.md §2.4b, Theorem 2).

``h(alpha) = k1 * M + k2 * z_{1-alpha} * sqrt(M)`` with M the number of distinct covariate
profiles. Asymptotic and conservative (it bounds the maximum over *all* subsets of profiles);
derived for penalty 0 and the negative direction only. A screening figure: the randomization
test is the primary decision.
"""

from __future__ import annotations

import math

from scipy.stats import norm

# Re-derived numerically (see tests/engine/test_critical.py, which recomputes both maxima).
K1 = 0.2024565
K2_SQUARED = 0.2737092


def k1_objective(beta: float) -> float:
    """-2 beta phi(-beta) - 2 beta^2 (1 - Phi(-beta)); its maximum over beta is k1."""
    return -2.0 * beta * norm.pdf(-beta) - 2.0 * beta**2 * (1.0 - norm.cdf(-beta))


def k2_squared_objective(beta: float) -> float:
    """4 beta^2 (1 - Phi(-b)) (1 - b h(-b) - h(-b)^2 + (b + h(-b))^2 Phi(-b)); max is k2^2."""
    h = norm.pdf(-beta) / (1.0 - norm.cdf(-beta))
    return (
        4.0
        * beta**2
        * (1.0 - norm.cdf(-beta))
        * (1.0 - beta * h - h**2 + (beta + h) ** 2 * norm.cdf(-beta))
    )


def critical_value(alpha: float, profiles: int) -> float:
    """h(alpha) for M = ``profiles`` distinct covariate profiles."""
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    z = float(norm.ppf(1.0 - alpha))
    return K1 * profiles + math.sqrt(K2_SQUARED) * z * math.sqrt(profiles)
