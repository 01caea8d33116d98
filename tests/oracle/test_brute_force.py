"""Self-tests of the brute-force oracle (does not import fairscan)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brute_force import (
    Q_HI,
    brute_force_scan,
    naive_scan,
    score_constant,
    score_records,
)


def _random_case(rng, n=60, arities=(2, 3, 3), constant=False):
    codes = np.column_stack([rng.integers(0, k, n) for k in arities])
    # make sure every value is present so V_j is the full range
    for j, k in enumerate(arities):
        codes[:k, j] = np.arange(k)
    if constant:
        exp = np.full(n, rng.uniform(0.1, 0.9))
    else:
        exp = rng.choice(rng.uniform(0.05, 0.95, 4), n)
    obs = (rng.uniform(size=n) < np.clip(exp * rng.uniform(0.3, 1.7, n), 0, 1)).astype(float)
    return codes, obs, exp


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_matches_naive_enumeration(seed, direction):
    rng = np.random.default_rng(seed)
    constant = seed % 2 == 0
    codes, obs, exp = _random_case(rng, constant=constant)
    for pen in (0.0, 0.5, 2.0):
        res = brute_force_scan(codes, obs, exp, direction, pen)
        J_naive, _ = naive_scan(codes, obs, exp, direction, pen)
        assert pytest.approx(J_naive, abs=1e-9) == res.J
        # the reported subgroup re-scores to the reported objective
        mask = np.ones(len(obs), dtype=bool)
        for j in range(codes.shape[1]):
            key = f"x{j}"
            if key in res.subgroup:
                mask &= np.isin(codes[:, j], res.subgroup[key])
        F, _ = score_records(obs[mask], exp[mask], direction)
        assert F - pen * res.complexity == pytest.approx(res.J, abs=1e-9)


@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_closed_form_equals_numeric(direction):
    rng = np.random.default_rng(42)
    codes, obs, exp = _random_case(rng, n=400, arities=(2, 4, 3, 2), constant=True)
    a = brute_force_scan(codes, obs, exp, direction, 0.3, keep_all=True)
    b = brute_force_scan(codes, obs, exp, direction, 0.3, method="numeric", keep_all=True)
    np.testing.assert_allclose(a.all_J, b.all_J, rtol=0, atol=1e-9)


def test_bracket_endpoint_when_all_observed():
    p = 0.3
    F, u = score_constant(np.array([5.0]), np.array([5.0]), p, "positive")
    expected = 5 * math.log(Q_HI) - 5 * math.log(1 - p + Q_HI * p)
    assert F[0] == pytest.approx(expected, rel=1e-12)
    assert u[0] == pytest.approx(math.log(Q_HI))
    # wrong direction -> 0
    F, _ = score_constant(np.array([5.0]), np.array([5.0]), p, "negative")
    assert F[0] == 0.0


def test_kl_closed_form():
    n, c, p = 50.0, 30.0, 0.4
    F, _ = score_constant(np.array([n]), np.array([c]), p, "positive")
    kl = c * math.log(c / (n * p)) + (n - c) * math.log((n - c) / (n * (1 - p)))
    assert F[0] == pytest.approx(kl, rel=1e-12)


def test_symmetry_pos_neg():
    rng = np.random.default_rng(7)
    codes, obs, exp = _random_case(rng, n=200, arities=(3, 3, 2))
    a = brute_force_scan(codes, obs, exp, "positive", 0.0, keep_all=True)
    b = brute_force_scan(codes, 1 - obs, 1 - exp, "negative", 0.0, keep_all=True)
    np.testing.assert_allclose(a.all_J, b.all_J, rtol=0, atol=1e-8)
