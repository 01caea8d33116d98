"""Gaussian score in the MDSS kernels (methods.md §1.4.2) against an independent brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.engine import kernels
from fairscan.engine.mdss import ScanProblem


def gauss_f(delta: np.ndarray, sigma: float, direction: int) -> float:
    """Independent: maximise (2 mu s - n mu^2) / (2 sigma^2) over mu on the direction's side."""
    n = len(delta)
    if n == 0:
        return 0.0
    s = float(delta.sum())
    mu = s / n
    mu = max(mu, 0.0) if direction > 0 else min(mu, 0.0)
    return (2 * mu * s - n * mu * mu) / (2 * sigma * sigma)


def value_sets(k: int):
    for bits in itertools.product([False, True], repeat=k):
        if any(bits):
            yield np.array(bits)


def brute_force(codes, delta, card, sigma, direction, penalty):
    """Best J over all rectangular subgroups (all-values sets cost nothing)."""
    best = -math.inf
    for choice in itertools.product(*(list(value_sets(int(k))) for k in card)):
        inside = np.ones(len(delta), bool)
        cost = 0
        for j, chosen in enumerate(choice):
            inside &= chosen[codes[:, j]]
            if not chosen.all():
                cost += int(chosen.sum())
        best = max(best, gauss_f(delta[inside], sigma, direction) - penalty * cost)
    return best


@st.composite
def gaussian_tables(draw):
    m = draw(st.integers(1, 3))
    card = [draw(st.integers(1, 4)) for _ in range(m)]
    n = draw(st.integers(2, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in card]).astype(np.int32)
    shift = draw(st.sampled_from([0.0, 0.5, -0.5, 1.5]))
    delta = rng.normal(0.0, 1.0, n) + shift * (codes[:, 0] == 0)
    return codes, delta


def _cells(codes, delta):
    problem = ScanProblem.build(codes, delta, np.full(len(delta), 0.5))
    return problem, problem.cells()


@given(
    gaussian_tables(),
    st.sampled_from([1, -1]),
    st.sampled_from([0.0, 0.3, 1.0, 3.0]),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.data(),
)
def test_gaussian_ltss_step_equals_brute_force(table, direction, penalty, sigma, data):
    codes, delta = table
    problem, cells = _cells(codes, delta)
    m = codes.shape[1]
    kmax = int(problem.cardinality.max())
    sel = np.zeros((m, kmax), bool)
    for a in range(m):
        k = int(problem.cardinality[a])
        chosen = data.draw(st.lists(st.booleans(), min_size=k, max_size=k))
        if not any(chosen):
            chosen[0] = True
        sel[a, :k] = chosen
    j = data.draw(st.integers(0, m - 1))
    mismatch = np.zeros(cells.n_cells, np.int32)
    kernels._compute_mismatch(cells.codes, sel, mismatch)
    row = np.zeros(kmax, bool)
    got = kernels.ltss_step_lik(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        True,
        sel,
        cells.cardinality,
        mismatch,
        j,
        penalty,
        direction,
        row,
        kernels.GAUSSIAN,
        sigma,
    )
    # brute force over S_j given the other attributes, on the raw rows
    others = np.ones(len(delta), bool)
    for a in range(m):
        if a != j:
            others &= sel[a, problem.codes[:, a]]
    k = int(problem.cardinality[j])
    best = -math.inf
    for chosen in value_sets(k):
        inside = others & chosen[problem.codes[:, j]]
        cost = 0 if chosen.all() else int(chosen.sum())
        best = max(best, gauss_f(delta[inside], sigma, direction) - penalty * cost)
    assert got == pytest.approx(best, rel=1e-9, abs=1e-9)
    # the returned set attains it
    inside = others & row[:k][problem.codes[:, j]]
    cost = 0 if row[:k].all() else int(row[:k].sum())
    assert gauss_f(delta[inside], sigma, direction) - penalty * cost == pytest.approx(
        got, rel=1e-9, abs=1e-9
    )


@given(gaussian_tables(), st.sampled_from([1, -1]), st.sampled_from([0.0, 1.0]))
def test_gaussian_search_finds_the_brute_force_optimum(table, direction, penalty):
    codes, delta = table
    sigma = 0.8
    problem, cells = _cells(codes, delta)
    sel, best = kernels.coordinate_ascent_lik(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        True,
        cells.cardinality,
        direction,
        penalty,
        30,
        np.uint64(7),
        kernels.GAUSSIAN,
        sigma,
    )
    want = brute_force(problem.codes, delta, problem.cardinality, sigma, direction, penalty)
    assert best == pytest.approx(max(want, best), rel=1e-9, abs=1e-9)
    assert best == pytest.approx(want, rel=1e-9, abs=1e-9)
    f, mu, size, s, _ = kernels.score_selection_lik(
        cells.codes, cells.observed, cells.weight, cells.expected, sel, direction, 1, sigma
    )
    inside = np.all([sel[j, problem.codes[:, j]] for j in range(codes.shape[1])], axis=0)
    assert size == inside.sum()
    assert s == pytest.approx(delta[inside].sum())
    assert f == pytest.approx(gauss_f(delta[inside], sigma, direction), rel=1e-12, abs=1e-12)
    assert f >= 0.0
    if f > 0:
        assert mu == pytest.approx(delta[inside].mean())
        assert f == pytest.approx(s * s / (2 * sigma**2 * size))


def test_bernoulli_entry_points_unchanged_by_the_switch():
    """The likelihood switch with BERNOULLI gives bit-identical results to the plain kernels."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 4, (300, 3)).astype(np.int32)
    expected = rng.uniform(0.1, 0.9, 300)
    observed = (rng.random(300) < expected * (1 + 0.5 * (codes[:, 0] == 1))).astype(float)
    problem = ScanProblem.build(codes, observed, expected)
    cells = problem.cells()
    args = (
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.constant_expectation,
        cells.cardinality,
        1,
        0.5,
        20,
        np.uint64(11),
    )
    sel_a, best_a = kernels.coordinate_ascent(*args)
    sel_b, best_b = kernels.coordinate_ascent_lik(*args, kernels.BERNOULLI, 1.0)
    assert best_a == best_b
    assert np.array_equal(sel_a, sel_b)
    a = kernels.score_selection(cells.codes, cells.observed, cells.weight, cells.expected, sel_a, 1)
    b = kernels.score_selection_lik(
        cells.codes, cells.observed, cells.weight, cells.expected, sel_a, 1, 0, 1.0
    )
    assert a == b
