"""IJDI edge-case loop (methods.md §4.5, invariants §4.10)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.engine.ijdi import (
    IjdiCells,
    edge_case_1,
    edge_case_2,
    ijdi_loop,
    uncensored_expectations,
)
from fairscan.engine.mdss import ScanProblem, search

weights = st.lists(st.integers(1, 20), min_size=2, max_size=12)


@given(weights, st.data(), st.floats(0.0, 5.0))
def test_edge_case_1_equalises_base_rates_and_keeps_order(w, data, lam):
    n = len(w)
    weight = np.array(w, float)
    p = np.array(data.draw(st.lists(st.floats(0.01, 0.99), min_size=n, max_size=n)))
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    u = 0.3 + lam * (p - p.mean())
    result = edge_case_1(p, u, weight, inside, lam)
    if not inside.any() or inside.all():
        assert result is None
        return
    p_in = np.average(p[inside], weights=weight[inside])
    p_out = np.average(p[~inside], weights=weight[~inside])
    if p_in >= p_out - 1e-12:
        assert result is None
        return
    new_p, new_u, alpha = result
    assert 0 < alpha <= 1 + 1e-12
    assert np.average(new_p[inside], weights=weight[inside]) == pytest.approx(p_out, abs=1e-12)
    assert np.all(new_p >= p - 1e-15) and np.all(new_u >= u - 1e-15)
    assert np.array_equal(new_p[~inside], p[~inside])
    order = np.argsort(p[inside], kind="stable")
    assert np.all(np.diff(new_p[inside][order]) >= -1e-12)
    assert np.allclose(new_u - u, lam * (new_p - p))


@given(weights, st.data())
def test_edge_case_2_restores_the_uncensored_mean(w, data):
    n = len(w)
    weight = np.array(w, float)
    u = np.array(data.draw(st.lists(st.floats(-0.5, 2.0), min_size=n, max_size=n)))
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    result = edge_case_2(u, weight, inside)
    if not inside.any():
        assert result is None
        return
    unc = np.average(u[inside], weights=weight[inside])
    cens = np.average(np.clip(u[inside], 0, 1), weights=weight[inside])
    if cens >= min(unc, 1.0) - 1e-12:
        assert result is None
        return
    new_u, _beta = result
    new_cens = np.average(np.clip(new_u[inside], 0, 1), weights=weight[inside])
    if np.all(u[inside] >= 0):
        # exact when nothing in S* is censored from below (methods.md §4.10.3)
        assert new_cens == pytest.approx(min(unc, 1.0), abs=1e-9)
    else:
        # a negative u raised by beta may stay below 0; the loop corrects again next pass
        assert new_cens >= cens - 1e-12
    assert np.all(new_u >= u - 1e-15)
    assert np.array_equal(new_u[~inside], u[~inside])
    order = np.argsort(u[inside], kind="stable")
    assert np.all(np.diff(np.clip(new_u[inside][order], None, None)) >= -1e-12)


def _cells(seed: int, n: int = 600, lam_bias: float = 0.0) -> IjdiCells:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 4)])
    p = np.round(rng.uniform(0.1, 0.9, n), 1)
    rec = (
        rng.random(n) < np.clip(0.3 + 0.5 * (p - 0.5) + lam_bias * (codes[:, 1] == 0), 0, 1)
    ).astype(float)
    problem = ScanProblem.build(codes, rec, np.full(n, 0.5))
    return IjdiCells.from_records(problem.codes, rec, p, problem.cardinality)


def test_lambda_zero_is_the_fpr_scan():
    """Invariant §4.10.1: same subgroup and score, bit for bit."""
    cells = _cells(1, lam_bias=0.2)
    outcome = ijdi_loop(cells, lam=0.0, penalty=1.0, restarts=30, seed=5)
    from fairscan.engine.cells import compress

    plain = compress(
        cells.codes,
        cells.observed,
        np.full(cells.weight.shape, cells.observed.sum() / cells.weight.sum()),
        cells.cardinality,
        weight=cells.weight,
    )
    fpr = search(plain, direction=1, penalty=1.0, restarts=30, seed=5)
    assert outcome.best.score == fpr.score
    assert np.array_equal(outcome.best.selection, fpr.selection)


@given(st.integers(0, 10_000), st.sampled_from([0.5, 2.0, 10.0, 1e4]))
def test_loop_terminates_and_final_subgroup_has_no_pending_correction(seed, lam):
    """Invariant §4.10.6: termination on adversarial inputs (huge lambda)."""
    cells = _cells(seed, n=300, lam_bias=0.3)
    outcome = ijdi_loop(cells, lam=lam, penalty=0.0, restarts=5, seed=seed, max_passes=100)
    assert outcome.passes <= 100
    assert outcome.converged
    assert outcome.best.score >= 0.0


def test_uncensored_expectations_use_weighted_means():
    cells = _cells(3)
    u, pbar_b, pbar = uncensored_expectations(cells, 2.0)
    assert pbar_b == pytest.approx(cells.observed.sum() / cells.weight.sum())
    assert pbar == pytest.approx(np.average(cells.base_rate, weights=cells.weight))
    assert np.allclose(u, pbar_b + 2.0 * (cells.base_rate - pbar))


def test_criterion_forms_agree():
    """Invariant §4.10.4: FPR(S) - FPR(~S) <= lam (p(S) - p(~S)) iff the utility form holds."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = 50
        rec = (rng.random(n) < 0.4).astype(float)
        p = rng.random(n)
        inside = rng.random(n) < 0.3
        if inside.all() or not inside.any():
            continue
        lam = rng.uniform(0, 3)
        gap_rate = rec[inside].mean() - rec[~inside].mean()
        gap_p = p[inside].mean() - p[~inside].mean()
        direct = gap_rate <= lam * gap_p
        utility = (rec[inside] - rec.mean()).sum() <= lam * (p[inside] - p.mean()).sum()
        assert direct == utility
