"""Profile summaries of per-row Bernoulli expectations (issue 12) vs the row-level computation.

* the piecewise Chebyshev expansion of g(u) = sum log(1 - p + p e^u) against direct evaluation;
* the search over profiles against the row-level search (kernels.pyx): same subgroups, scores
  within 1e-9 relative;
* null replicates against the row-level computation of the same draws; worker independence.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from fairscan.engine import expectation_kernels
from fairscan.engine.expectation_cells import (
    ExpectationReplicate,
    max_score,
    pieces,
    profiles_of,
    representation_costs,
    score_subgroup,
    search,
    summarise,
    worth_summarising,
)
from fairscan.engine.mdss import ScanProblem
from fairscan.engine.mdss import max_score as row_max_score
from fairscan.engine.mdss import score_subgroup as row_score_subgroup
from fairscan.engine.mdss import search as row_search
from fairscan.engine.randomization import NullSettings, run_replicates
from fairscan.engine.seeds import child_seed, search_seed

REL = 1e-9


def _g(u: np.ndarray, p: float) -> np.ndarray:
    """log(1 - p + p e^u) without cancellation (the reference)."""
    x = p * np.expm1(u)
    return np.where(x < -0.5, np.log((1.0 - p) + p * np.exp(u)), np.log1p(x))


def _dg(u: np.ndarray, p: float) -> np.ndarray:
    return p * np.exp(u) / ((1.0 - p) + p * np.exp(u))


def _probabilities(rng: np.random.Generator) -> np.ndarray:
    near0 = 10.0 ** rng.uniform(-6, -1, 25)
    return np.concatenate(
        [rng.random(25), near0, 1.0 - near0, [1e-6, 1.0 - 1e-6, 0.5, 1e-3, 1.0 - 1e-3]]
    )


@pytest.mark.parametrize("direction", [1, -1])
def test_expansion_matches_direct_evaluation(direction):
    rng = np.random.default_rng(7 + direction)
    breaks, offsets = pieces(direction)
    half = (0.0, expectation_kernels.U_HI) if direction > 0 else (-expectation_kernels.U_HI, 0.0)
    assert (breaks[0], breaks[-1]) == half
    for p in _probabilities(rng):
        coef = expectation_kernels.fit_coefficients(
            np.zeros(1, np.int64), np.ones(1), np.array([p]), 1, breaks, offsets
        )[0]
        for lo, hi in itertools.pairwise(breaks):
            u = np.linspace(lo, hi, 97)
            truth = _g(u, p)
            got = np.array([expectation_kernels.evaluate(coef, breaks, offsets, x) for x in u])
            scale = np.max(np.abs(truth))
            # relative to the largest |g| on the piece (g(0) = 0, so not pointwise)
            assert np.max(np.abs(got[:, 0] - truth)) <= 1e-12 * scale, (p, lo, hi)
            # G' (Newton steps only) to the same scale per unit of u
            dscale = scale / (hi - lo) + np.max(np.abs(_dg(u, p)))
            assert np.max(np.abs(got[:, 1] - _dg(u, p))) <= 1e-10 * dscale, (p, lo, hi)


def test_cell_expansion_is_the_sum_of_its_rows():
    rng = np.random.default_rng(3)
    breaks, offsets = pieces(1)
    p = np.clip(np.concatenate([rng.random(300), [0.0, 1.0]]), 1e-6, 1 - 1e-6)
    w = rng.integers(1, 4, p.shape[0]).astype(float)
    cell = rng.integers(0, 3, p.shape[0]).astype(np.int64)
    coef = expectation_kernels.fit_coefficients(cell, w, p, 3, breaks, offsets)
    for c in range(3):
        rows = cell == c
        for u in np.linspace(0.0, breaks[-1], 41):
            truth = float(np.sum(w[rows] * np.array([_g(np.array([u]), pi)[0] for pi in p[rows]])))
            g = expectation_kernels.evaluate(coef[c], breaks, offsets, u)[0]
            assert abs(g - truth) <= 1e-12 * max(1.0, float(np.sum(w[rows])) * breaks[-1])


def _random_problem(rng: np.random.Generator) -> tuple[ScanProblem, int, float]:
    n = int(rng.integers(150, 2500))
    m = int(rng.integers(1, 5))
    card = rng.integers(2, 7, m)
    codes = np.column_stack([rng.integers(0, k, n) for k in card])
    p = 1.0 / (1.0 + np.exp(-rng.normal(rng.uniform(-2, 1), rng.uniform(0.3, 2.5), n)))
    kind = rng.integers(0, 4)
    if kind == 0:  # some extreme and clipped probabilities
        p[: n // 10] = rng.choice([0.0, 1.0, 1e-7, 1 - 1e-7, 1e-6], n // 10)
    elif kind == 1:  # few distinct probabilities (cells with several rows)
        p = np.round(p, 1)
    shift = rng.uniform(0.5, 1.5, card[0])[codes[:, 0]]
    y = (rng.random(n) < np.clip(p * shift, 0, 1)).astype(float)
    direction = int(rng.choice([1, -1]))
    penalty = float(rng.choice([0.0, 1e-17, 0.5, 1.0, 3.0]))
    return ScanProblem.build(codes, y, p), direction, penalty


def test_profile_search_finds_the_row_level_subgroup():
    rng = np.random.default_rng(2026)
    for trial in range(80):
        problem, direction, penalty = _random_problem(rng)
        cells = problem.cells()
        summary = summarise(cells, direction)
        seed = int(rng.integers(1 << 62))
        row = row_search(cells, direction=direction, penalty=penalty, restarts=6, seed=seed)
        got = search(summary, penalty=penalty, restarts=6, seed=seed)
        assert np.array_equal(row.selection, got.selection), trial
        assert got.score == pytest.approx(row.score, rel=REL, abs=1e-12), trial
        assert got.log_q == pytest.approx(row.log_q, rel=1e-6, abs=1e-9), trial
        assert got.size == row.size and got.observed == row.observed
        assert got.expected == pytest.approx(row.expected, rel=1e-12)


def test_subgroup_scores_match_row_level_scores():
    rng = np.random.default_rng(11)
    for _ in range(30):
        problem, direction, _penalty = _random_problem(rng)
        cells = problem.cells()
        summary = summarise(cells, direction)
        k = int(cells.cardinality.max())
        for _ in range(10):
            selection = np.zeros((cells.codes.shape[1], k), bool)
            for j, card in enumerate(cells.cardinality):
                selection[j, :card] = rng.random(card) < 0.6
                selection[j, rng.integers(card)] = True
            row = row_score_subgroup(cells, selection, direction, 0.5)
            got = score_subgroup(summary, selection, 0.5)
            assert got.llr == pytest.approx(row.llr, rel=REL, abs=1e-12)


def _small_problem(seed: int, n: int = 1500) -> ScanProblem:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 4)])
    p = 1.0 / (1.0 + np.exp(-rng.normal(-0.7, 1.0, n)))
    y = (rng.random(n) < p).astype(float)
    return ScanProblem.build(codes, y, p)


@pytest.mark.parametrize(("direction", "penalty"), [(1, 0.0), (-1, 0.0), (-1, 1.0), (1, 0.5)])
def test_null_replicates_match_the_row_level_computation(direction, penalty):
    cells = _small_problem(5).cells()
    summary = summarise(cells, direction)
    settings = NullSettings(direction, penalty, 5)
    seed = np.random.SeedSequence(77)
    job = ExpectationReplicate(summary, settings, seed)
    for r in range(6):
        # the same draws, scored by the row-level search
        rng = np.random.Generator(np.random.PCG64(child_seed(seed, r)))
        drawn = (rng.random(cells.n_cells) < cells.expected).astype(np.float64)
        row = row_max_score(
            replace(cells, observed=drawn),
            direction=direction,
            penalty=penalty,
            restarts=5,
            seed=search_seed(child_seed(seed, r, 0)),
        )
        assert job(r) == pytest.approx(row, rel=REL, abs=1e-12)


def test_replicates_with_weighted_cells_draw_binomials():
    problem = _small_problem(6)
    cells = problem.cells()
    rounded = ScanProblem.build(
        problem.codes, problem.observed, np.round(problem.expected, 2)
    ).cells()
    summary = summarise(rounded, 1)
    assert summary.source_weight.max() > 1
    draws = summary.draw(np.random.default_rng(0))
    assert draws.sum() <= summary.weight.sum() and np.all(draws <= summary.weight)
    assert max_score(summary.with_observed(draws), penalty=0.0, restarts=3, seed=1) >= 0.0
    assert cells.n_cells > rounded.n_cells


def test_replicates_are_identical_for_any_worker_count(monkeypatch):
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    summary = summarise(_small_problem(8).cells(), -1)
    job = ExpectationReplicate(summary, NullSettings(-1, 0.5, 4), np.random.SeedSequence(3))
    one = run_replicates(job, 12, workers=1)
    two = run_replicates(job, 12, workers=2)
    assert np.array_equal(one, two)
    assert np.array_equal(one, run_replicates(job, 12, workers=1))


def test_direction_mismatch_is_refused():
    summary = summarise(_small_problem(9).cells(), 1)
    job = ExpectationReplicate(summary, NullSettings(-1, 0.0, 2), np.random.SeedSequence(0))
    with pytest.raises(ValueError, match="other direction"):
        job(0)


def test_summary_is_chosen_by_its_estimated_cost():
    # one row in each of 1,024 profiles: the build is repaid by replicates, not by one search
    codes = np.indices((4,) * 5).reshape(5, -1).T
    rng = np.random.default_rng(11)
    p = rng.uniform(0.05, 0.95, codes.shape[0])
    single = ScanProblem.build(codes, (rng.random(p.shape[0]) < p).astype(float), p).cells()
    profiles = profiles_of(single)
    assert single.n_cells == profiles.n_cells == 1024
    assert not worth_summarising(single, profiles, restarts=10, replicates=0)
    assert worth_summarising(single, profiles, restarts=10, replicates=999)
    # 1,500 rows in 24 profiles: the summary pays at once
    problem = _small_problem(10)
    cells = problem.cells()
    assert worth_summarising(cells, profiles_of(cells), restarts=10, replicates=999)
    constant = ScanProblem.build(problem.codes, problem.observed, np.full(1500, 0.3)).cells()
    assert not worth_summarising(constant, profiles_of(constant), restarts=10, replicates=999)


@pytest.mark.parametrize("rows_per_profile", [1, 2, 4, 14, 100, 1000])
def test_the_cost_model_prefers_the_summary_with_many_replicates(rows_per_profile):
    """One row per profile and up: a replicate over the summary costs less than one over the
    rows (benchmarks/bench_representation.py), so enough replicates repay the build."""
    profiles = 69_120
    costs = representation_costs(profiles * rows_per_profile, profiles, 8, 10)
    assert costs.summary_replicate < costs.row_replicate
    assert costs.summary_pays(999)
    assert not costs.summary_pays(0) or rows_per_profile >= 4
    # more replicates never turn the choice back to the rows
    paid = [costs.summary_pays(r) for r in (0, 1, 9, 99, 999, 9999)]
    assert paid == sorted(paid)
