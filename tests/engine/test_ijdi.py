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
def test_edge_case_2_raises_scan_expectations_to_the_uncensored_mean(w, data):
    """Invariant §4.10.3: afterwards the mean scan expectation over S* is the uncensored mean (or 1)."""
    n = len(w)
    weight = np.array(w, float)
    u = np.array(data.draw(st.lists(st.floats(-0.5, 2.0), min_size=n, max_size=n)))
    # the scan state starts as clip(u) and may already have been raised
    raise_by = np.array(data.draw(st.lists(st.floats(0.0, 0.3), min_size=n, max_size=n)))
    expected = np.minimum(np.clip(u, 0, 1) + raise_by, 1.0)
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    result = edge_case_2(expected, u, weight, inside)
    if not inside.any():
        assert result is None
        return
    target = min(np.average(u[inside], weights=weight[inside]), 1.0)
    current = np.average(expected[inside], weights=weight[inside])
    if current >= target - 1e-12:
        assert result is None
        return
    new, _beta = result
    assert np.average(new[inside], weights=weight[inside]) == pytest.approx(target, abs=1e-9)
    assert np.all(new >= expected - 1e-15) and np.all(new <= 1.0 + 1e-15)
    assert np.array_equal(new[~inside], expected[~inside])
    order = np.argsort(expected[inside], kind="stable")
    assert np.all(np.diff(new[inside][order]) >= -1e-12)
    # a second call on the same subgroup has nothing left to do
    assert edge_case_2(new, u, weight, inside) is None


def test_edge_case_2_matches_the_paper_formula_without_negative_u():
    weight = np.array([1.0, 2.0, 1.0, 3.0])
    u = np.array([1.4, 0.5, 0.2, 0.9])
    inside = np.ones(4, bool)
    new, beta = edge_case_2(np.clip(u, 0, 1), u, weight, inside)
    paper_beta = (1 * 0.4) / (2 * 0.5 + 1 * 0.8 + 3 * 0.1)
    assert beta == pytest.approx(paper_beta)
    assert np.allclose(new, np.where(u < 1, u + paper_beta * (1 - u), 1.0))


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


def _experiment_1(lam: float, seed: int, k: int = 1, n: int = 6000):
    """methods.md §4.7 Experiment 1 (sharp threshold) on synthetic attributes; S = {a0: 0, a1: 0}."""
    from fairscan.engine.mdss import is_material

    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)])
    in_s = (codes[:, 0] == 0) & (codes[:, 1] == 0)
    p = np.where(
        in_s,
        rng.uniform(0.51 - 0.01 * k, 0.51 + 0.01 * k, n),
        rng.uniform(0.49 - 0.01 * k, 0.49 + 0.01 * k, n),
    )
    rec = (p > 0.5).astype(float)
    neg = rng.random(n) >= p  # y = 0
    problem = ScanProblem.build(codes[neg], rec[neg], np.full(int(neg.sum()), 0.5))
    cells = IjdiCells.from_records(problem.codes, rec[neg], p[neg], problem.cardinality)
    out = ijdi_loop(cells, lam=lam, penalty=0.0, restarts=20, seed=1)
    inside = problem.members(out.best.selection)
    iou = (inside & in_s[neg]).sum() / (inside | in_s[neg]).sum()
    return out, iou if is_material(out.best) else 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_experiment_1_sharp_cut_off_at_lambda_star(seed):
    """Below lambda* (= 50.007 for k = 1) the IJDI subgroup is found; above it nothing is left.

    Regression: edge case 2 used to raise u itself, so the same S* re-fired until every
    expectation in it was 1, which erased the finding just below lambda*.
    """
    lam_star = 374850 / (7497 - 1)
    below, iou_below = _experiment_1(0.8 * lam_star, seed)
    assert iou_below == pytest.approx(1.0)
    assert below.best.score > 50 and below.passes <= 3
    above, iou_above = _experiment_1(1.25 * lam_star, seed)
    assert iou_above == 0.0 and above.passes <= 3
