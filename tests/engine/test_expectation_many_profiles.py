"""Calibration scans on many small profiles (issue 29) against independent computations.

* the search over profile summaries (pieces summed when first evaluated, far ends decided from
  one number per cell) against the row-level search: same subgroups, scores within 1e-9;
* its subgroup scores against the oracle's direct per-row score (tests/oracle/brute_force.py);
* null replicates against the row-level search of the same draws; draws counted per profile in
  one pass equal ``np.bincount``;
* the profile-key index lists the same cells as a pass over them: identical bits with and without
  it, for both kernels;
* a job too large to pickle with every chunk reaches the workers once, with the same scores.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from brute_force import score_records

from fairscan.engine import expectation_kernels, kernels
from fairscan.engine.expectation_cells import (
    ExpectationReplicate,
    score_subgroup,
    search,
    summarise,
)
from fairscan.engine.mdss import ScanProblem
from fairscan.engine.mdss import max_score as row_max_score
from fairscan.engine.mdss import search as row_search
from fairscan.engine.randomization import NullSettings, run_replicates
from fairscan.engine.seeds import child_seed, search_seed

REL = 1e-9


def _many_profiles(
    rng: np.random.Generator, extremes: bool = True
) -> tuple[ScanProblem, int, float]:
    """5-7 attributes, a few rows per profile on average (1-20), some profiles empty."""
    m = int(rng.integers(5, 8))
    card = rng.integers(2, 6, m)
    profiles = int(np.prod(card))
    n = int(profiles * rng.uniform(1.0, 20.0))
    codes = np.column_stack([rng.integers(0, k, n) for k in card])
    if rng.random() < 0.5:  # a sparse grid: one value of the first attribute mostly missing
        codes = codes[(codes[:, 0] != 0) | (rng.random(n) < 0.05)]
        n = codes.shape[0]
    logit = rng.normal(rng.uniform(-2.0, 0.5), rng.uniform(0.3, 2.0), n)
    for j, k in enumerate(card):
        logit += rng.normal(0.0, 0.3, k)[codes[:, j]]
    p = 1.0 / (1.0 + np.exp(-logit))
    if extremes and rng.random() < 0.3:  # extreme and clipped probabilities (repeated)
        p[: n // 20] = rng.choice([0.0, 1.0, 1e-7, 1 - 1e-7, 1e-6, 0.999], n // 20)
    factor = rng.uniform(0.6, 1.4, card[1])[codes[:, 1]]
    y = (rng.random(n) < np.clip(p * factor, 0.0, 1.0)).astype(float)
    direction = int(rng.choice([1, -1]))
    penalty = float(rng.choice([0.0, 1e-17, 0.5, 2.0]))
    return ScanProblem.build(codes, y, p), direction, penalty


@pytest.mark.slow
def test_profile_search_finds_the_row_level_subgroup_on_many_small_profiles():
    rng = np.random.default_rng(2029)
    for trial in range(25):
        problem, direction, penalty = _many_profiles(rng)
        cells = problem.cells()
        summary = summarise(cells, direction)
        assert summary.n_cells > 0.3 * cells.n_cells / 20  # many profiles, few rows each
        seed = int(rng.integers(1 << 62))
        row = row_search(cells, direction=direction, penalty=penalty, restarts=4, seed=seed)
        got = search(summary, penalty=penalty, restarts=4, seed=seed)
        assert np.array_equal(row.selection, got.selection), trial
        assert got.score == pytest.approx(row.score, rel=REL, abs=1e-12), trial
        assert got.size == row.size and got.observed == row.observed


def test_profile_scores_match_the_oracles_per_row_score():
    rng = np.random.default_rng(29)
    for _ in range(12):
        problem, direction, _ = _many_profiles(rng)
        summary = summarise(problem.cells(), direction)
        k = int(problem.cardinality.max())
        for _ in range(6):
            selection = np.zeros((problem.codes.shape[1], k), bool)
            for j, card in enumerate(problem.cardinality):
                selection[j, :card] = rng.random(card) < 0.7
                selection[j, rng.integers(card)] = True
            inside = problem.members(selection)
            truth, _q = score_records(
                problem.observed[inside],
                problem.expected[inside],
                "positive" if direction > 0 else "negative",
            )
            got = score_subgroup(summary, selection, 0.0)
            assert got.llr == pytest.approx(truth, rel=REL, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(("direction", "penalty"), [(-1, 0.0), (1, 0.0), (-1, 1.0), (1, 1e-17)])
def test_null_replicates_on_many_profiles_match_the_row_level_search(direction, penalty):
    rng = np.random.default_rng(7)
    problem = _many_profiles(rng, extremes=False)[0]
    cells = problem.cells()
    summary = summarise(cells, direction)
    assert summary.single_rows  # one uniform per row
    seed = np.random.SeedSequence(5)
    job = ExpectationReplicate(summary, NullSettings(direction, penalty, 4), seed)
    for r in range(4):
        # the same draws (one uniform per row, in row order), scored by the row-level search
        uniform = np.random.Generator(np.random.PCG64(child_seed(seed, r))).random(cells.n_cells)
        drawn = (uniform < cells.expected).astype(np.float64)
        row = row_max_score(
            replace(cells, observed=drawn),
            direction=direction,
            penalty=penalty,
            restarts=4,
            seed=search_seed(child_seed(seed, r, 0)),
        )
        assert job(r) == pytest.approx(row, rel=REL, abs=1e-12)


def test_draws_counted_in_one_pass_are_bincounts():
    rng = np.random.default_rng(3)
    p = rng.random(10_000)
    u = rng.random(10_000)
    cell = rng.integers(0, 97, 10_000).astype(np.int64)
    got = expectation_kernels.count_below(u, p, cell, 97)
    assert np.array_equal(got, np.bincount(cell, weights=(u < p).astype(float), minlength=97))
    with pytest.raises(ValueError, match="out of range"):
        expectation_kernels.count_below(u, p, np.full(10_000, 97, np.int64), 97)


def _index_cases(rng: np.random.Generator):
    for _ in range(20):
        problem, direction, penalty = _many_profiles(rng)
        yield problem.cells(), direction, penalty
    # cells not sorted by profile: no index (the rows' order is the cells' order)
    problem, direction, penalty = _many_profiles(rng)
    cells = problem.cells()
    order = rng.permutation(cells.n_cells)
    yield (
        replace(
            cells,
            codes=np.ascontiguousarray(cells.codes[order]),
            observed=cells.observed[order],
            weight=cells.weight[order],
            expected=cells.expected[order],
        ),
        direction,
        penalty,
    )


@pytest.mark.slow
def test_profile_key_index_gives_the_same_bits_in_both_kernels():
    rng = np.random.default_rng(11)
    for cells, direction, penalty in _index_cases(rng):
        seed = np.uint64(rng.integers(1 << 62))
        args = (
            cells.codes,
            cells.observed,
            cells.weight,
            cells.expected,
            cells.constant_expectation,
            cells.cardinality,
            direction,
            penalty,
            5,
            seed,
        )
        with_index = kernels.coordinate_ascent(*args)
        without = kernels.coordinate_ascent(*args, index=False)
        assert with_index[0].tobytes() == without[0].tobytes()
        assert with_index[1] == without[1]
        gauss = (*args[:4], True, *args[5:], kernels.GAUSSIAN, 0.5)
        gauss_args = (
            gauss[0],
            np.ascontiguousarray(cells.observed - cells.weight * cells.expected),
            *gauss[2:],
        )
        assert (
            kernels.coordinate_ascent_lik(*gauss_args)[1]
            == kernels.coordinate_ascent_lik(*gauss_args, index=False)[1]
        )
        summary = summarise(cells, direction)
        profile_args = (
            summary.codes,
            summary.observed,
            summary.weight,
            summary.expected,
            summary.coefficients,
            summary.ends,
            summary.breaks,
            summary.offsets,
            summary.cardinality,
            penalty,
            5,
            seed,
        )
        with_index = expectation_kernels.coordinate_ascent(*profile_args)
        without = expectation_kernels.coordinate_ascent(*profile_args, index=False)
        assert with_index[0].tobytes() == without[0].tobytes()
        assert with_index[1] == without[1]


@pytest.mark.slow
def test_a_large_job_reaches_the_workers_once_with_the_same_scores(monkeypatch, tmp_path):
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    monkeypatch.setattr("fairscan.engine.workers.SHARE_JOB_BYTES", 0)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    problem = _many_profiles(np.random.default_rng(4))[0]
    summary = summarise(problem.cells(), -1)
    job = ExpectationReplicate(summary, NullSettings(-1, 0.0, 3), np.random.SeedSequence(9))
    one = run_replicates(job, 10, workers=1)
    two = run_replicates(job, 10, workers=2)
    assert np.array_equal(one, two)
    assert not list(tmp_path.glob("fairscan-job-*"))  # the job's file is removed
