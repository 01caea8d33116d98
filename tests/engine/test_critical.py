"""Analytic critical value of Theorem 2 (methods.md §2.4b, invariant §2.7.7)."""

from __future__ import annotations

import math

import pytest
from scipy.optimize import minimize_scalar
from scipy.special import ndtr
from scipy.stats import norm

from fairscan.engine.critical import K1, K2_SQUARED, critical_value


# the two objectives of Theorem 2, written out here (the package keeps only their maxima)
def k1_objective(beta: float) -> float:
    """-2 beta phi(-beta) - 2 beta^2 (1 - Phi(-beta)); its maximum over beta is k1."""
    return -2.0 * beta * norm.pdf(-beta) - 2.0 * beta**2 * (1.0 - ndtr(-beta))


def k2_squared_objective(beta: float) -> float:
    """4 beta^2 (1 - Phi(-b)) (1 - b h(-b) - h(-b)^2 + (b + h(-b))^2 Phi(-b)); max is k2^2."""
    h = norm.pdf(-beta) / (1.0 - ndtr(-beta))
    return float(
        4.0
        * beta**2
        * (1.0 - ndtr(-beta))
        * (1.0 - beta * h - h**2 + (beta + h) ** 2 * ndtr(-beta))
    )


def test_constants_reproduce_by_numerical_maximisation():
    r1 = minimize_scalar(
        lambda b: -k1_objective(b), bounds=(-3, 0), method="bounded", options={"xatol": 1e-10}
    )
    r2 = minimize_scalar(
        lambda b: -k2_squared_objective(b),
        bounds=(-3, 0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert -r1.fun == pytest.approx(K1, abs=1e-6)
    assert -r2.fun == pytest.approx(K2_SQUARED, abs=1e-6)
    assert r1.x == pytest.approx(-0.612, abs=2e-3)
    assert r2.x == pytest.approx(-0.983, abs=2e-3)


def test_h_is_increasing_in_profiles_and_decreasing_in_alpha():
    assert critical_value(0.05, 100) < critical_value(0.05, 101)
    assert critical_value(0.01, 100) > critical_value(0.05, 100) > critical_value(0.2, 100)
    z = 1.6448536269514722
    assert critical_value(0.05, 144) == pytest.approx(K1 * 144 + math.sqrt(K2_SQUARED) * z * 12)
