"""MDSS engine vs the independent brute-force oracle (methods.md §1.4, §2.7)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from brute_force import brute_force_scan, score_records
from hypothesis import given
from hypothesis import strategies as st

from fairscan.engine import kernels
from fairscan.engine.mdss import ScanProblem, score_subgroup, search

DIRECTIONS = {1: "positive", -1: "negative"}


@st.composite
def tables(draw, max_attrs: int = 3, max_card: int = 4, constant: bool | None = None):
    m = draw(st.integers(1, max_attrs))
    cards = [draw(st.integers(1, max_card)) for _ in range(m)]
    n = draw(st.integers(5, 80))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in cards]).astype(np.int32)
    is_constant = draw(st.booleans()) if constant is None else constant
    if is_constant:
        expected = np.full(n, draw(st.sampled_from([0.1, 0.3, 0.5, 0.8])))
    else:
        expected = rng.choice([0.1, 0.25, 0.4, 0.6, 0.9], size=n)
    tilt = rng.normal(0, 1.0, size=max(cards))
    logit = np.log(expected / (1 - expected)) + tilt[codes[:, 0]]
    observed = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    return codes, observed, expected


def _selection_from(problem: ScanProblem, subgroup: dict) -> np.ndarray:
    m = problem.codes.shape[1]
    sel = np.zeros((m, int(problem.cardinality.max())), bool)
    for j in range(m):
        k = problem.cardinality[j]
        key = f"x{j}"
        if key in subgroup:
            for code in subgroup[key]:
                local = int(np.searchsorted(problem.value_index[j], code))
                sel[j, local] = True
        else:
            sel[j, :k] = True
    return sel


@given(tables(), st.sampled_from([1, -1]), st.sampled_from([0.0, 0.5, 1.0, 2.0]))
def test_score_of_any_subgroup_matches_record_level_oracle(table, direction, penalty):
    codes, observed, expected = table
    problem = ScanProblem.build(codes, observed, expected)
    cells = problem.cells()
    rng = np.random.default_rng(0)
    sel = rng.random((codes.shape[1], int(problem.cardinality.max()))) < 0.6
    for j, k in enumerate(problem.cardinality):
        if not sel[j, :k].any():
            sel[j, 0] = True
    inside = np.all([sel[j, problem.codes[:, j]] for j in range(codes.shape[1])], axis=0)
    want, _ = score_records(
        problem.observed[inside], problem.expected[inside], DIRECTIONS[direction]
    )
    got = score_subgroup(cells, sel, direction, penalty)
    assert got.llr == pytest.approx(want, rel=1e-8, abs=1e-8)
    assert got.size == inside.sum()
    assert got.llr >= 0.0


@given(tables(), st.sampled_from([1, -1]), st.sampled_from([0.0, 0.3, 1.0, 3.0]), st.data())
def test_ltss_step_equals_brute_force_over_value_subsets(table, direction, penalty, data):
    """Invariant §2.7.4: the exact attribute step finds the best S_j given the other attributes."""
    codes, observed, expected = table
    problem = ScanProblem.build(codes, observed, expected)
    cells = problem.cells()
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
    got = kernels.ltss_step(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.constant_expectation,
        sel,
        cells.cardinality,
        mismatch,
        j,
        penalty,
        direction,
        row,
    )
    k = int(problem.cardinality[j])
    best = -math.inf
    for bits in itertools.product([False, True], repeat=k):
        if not any(bits):
            continue
        trial = sel.copy()
        trial[j, :k] = bits
        s = score_subgroup(cells, trial, direction, 0.0)
        cost = 0.0 if all(bits) else penalty * sum(bits)
        best = max(best, s.llr - cost)
    assert got == pytest.approx(best, rel=1e-8, abs=1e-8)
    # the returned value set achieves the returned objective
    trial = sel.copy()
    trial[j, :k] = row[:k]
    s = score_subgroup(cells, trial, direction, 0.0)
    cost = 0.0 if row[:k].all() else penalty * row[:k].sum()
    assert s.llr - cost == pytest.approx(got, rel=1e-8, abs=1e-8)


@given(tables(max_attrs=1, max_card=6), st.sampled_from([1, -1]), st.sampled_from([0.0, 0.5, 2.0]))
def test_one_attribute_single_restart_is_the_global_optimum(table, direction, penalty):
    """Invariant §2.7.5."""
    codes, observed, expected = table
    problem = ScanProblem.build(codes, observed, expected)
    got = search(problem.cells(), direction=direction, penalty=penalty, restarts=1, seed=1)
    want = brute_force_scan(codes, observed, expected, DIRECTIONS[direction], penalty)
    assert got.score == pytest.approx(want.J, rel=1e-8, abs=1e-8)


@given(tables(max_attrs=3, max_card=4), st.sampled_from([1, -1]), st.sampled_from([0.0, 1.0]))
def test_search_never_beats_brute_force_and_rescoring_is_consistent(table, direction, penalty):
    codes, observed, expected = table
    problem = ScanProblem.build(codes, observed, expected)
    got = search(problem.cells(), direction=direction, penalty=penalty, restarts=30, seed=7)
    want = brute_force_scan(codes, observed, expected, DIRECTIONS[direction], penalty)
    assert got.score <= want.J + 1e-8 * max(1.0, abs(want.J))
    rescored = score_subgroup(problem.cells(), got.selection, direction, penalty)
    assert rescored.score == pytest.approx(got.score, rel=1e-12, abs=1e-12)


def test_search_finds_brute_force_optimum_on_random_tables():
    """With enough restarts the coordinate ascent reaches the global optimum on small tables."""
    rng = np.random.default_rng(2024)
    for case in range(40):
        m = int(rng.integers(2, 4))
        cards = rng.integers(2, 5, m)
        n = int(rng.integers(40, 300))
        codes = np.column_stack([rng.integers(0, k, n) for k in cards])
        constant = case % 2 == 0
        expected = np.full(n, 0.3) if constant else rng.choice([0.2, 0.35, 0.5, 0.7], n)
        observed = (rng.random(n) < np.clip(expected + 0.25 * (codes[:, 0] == 0), 0, 1)).astype(
            float
        )
        direction = 1 if case % 3 else -1
        penalty = float(rng.choice([0.0, 0.5, 1.0]))
        problem = ScanProblem.build(codes, observed, expected)
        got = search(problem.cells(), direction=direction, penalty=penalty, restarts=100, seed=case)
        want = brute_force_scan(codes, observed, expected, DIRECTIONS[direction], penalty)
        assert got.score == pytest.approx(want.J, rel=1e-8, abs=1e-8), (case, got, want.describe())


@given(tables())
def test_direction_symmetry(table):
    """F_pos(S; I, E) = F_neg(S; 1 - I, 1 - E) (methods.md §1.4.1)."""
    codes, observed, expected = table
    pos = ScanProblem.build(codes, observed, expected)
    neg = ScanProblem.build(codes, 1 - observed, 1 - expected)
    sel = np.ones((codes.shape[1], int(pos.cardinality.max())), bool)
    sel[0, 0] = not pos.cardinality[0] > 1
    a = score_subgroup(pos.cells(), sel, 1, 0.0)
    b = score_subgroup(neg.cells(), sel, -1, 0.0)
    assert a.llr == pytest.approx(b.llr, rel=1e-9, abs=1e-9)
    assert a.log_q == pytest.approx(-b.log_q, rel=1e-6, abs=1e-9)


def test_constant_expectation_closed_form():
    """Invariant §2.7.2: F = n KL(c/n || p) on the constrained side, 0 otherwise."""
    codes = np.zeros((50, 1), np.int32)
    for c, p, direction in [(20, 0.2, 1), (5, 0.2, -1), (5, 0.2, 1), (20, 0.2, -1)]:
        observed = np.zeros(50)
        observed[:c] = 1
        problem = ScanProblem.build(codes, observed, np.full(50, p))
        sel = np.ones((1, 1), bool)
        got = score_subgroup(problem.cells(), sel, direction, 0.0).llr
        r = c / 50
        kl = 50 * (r * math.log(r / p) + (1 - r) * math.log((1 - r) / (1 - p)))
        on_side = (r > p) if direction == 1 else (r < p)
        assert got == pytest.approx(kl if on_side else 0.0, rel=1e-12, abs=1e-12)


@given(tables(), st.sampled_from([1, -1]))
def test_compression_and_row_order_invariance(table, direction):
    codes, observed, expected = table
    problem = ScanProblem.build(codes, observed, expected)
    base = search(problem.cells(), direction=direction, penalty=0.5, restarts=10, seed=3)
    perm = np.random.default_rng(1).permutation(len(observed))
    shuffled = ScanProblem.build(codes[perm], observed[perm], expected[perm])
    again = search(shuffled.cells(), direction=direction, penalty=0.5, restarts=10, seed=3)
    assert again.score == base.score  # bit for bit: cells are canonical
    doubled = ScanProblem.build(
        np.vstack([codes, codes]), np.tile(observed, 2), np.tile(expected, 2)
    )
    sel_score = score_subgroup(doubled.cells(), base.selection, direction, 0.0)
    assert sel_score.llr == pytest.approx(2 * base.llr, rel=1e-9, abs=1e-9)


def test_search_is_reproducible_for_a_seed():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 4, (500, 4))
    observed = (rng.random(500) < 0.4).astype(float)
    problem = ScanProblem.build(codes, observed, np.full(500, 0.35))
    a = search(problem.cells(), direction=1, penalty=0.0, restarts=20, seed=11)
    b = search(problem.cells(), direction=1, penalty=0.0, restarts=20, seed=11)
    assert a.score == b.score and np.array_equal(a.selection, b.selection)


def test_expectations_are_clipped():
    codes = np.zeros((4, 1), np.int32)
    problem = ScanProblem.build(codes, np.array([1.0, 0, 0, 0]), np.array([0.0, 0.5, 1.0, 0.5]))
    assert problem.clipped == 2
    assert problem.expected.min() == 1e-6 and problem.expected.max() == 1 - 1e-6
