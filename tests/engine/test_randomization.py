"""Randomization test: p-value formula, seeding, worker independence, null calibration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairscan.engine.mdss import ScanProblem, search
from fairscan.engine.randomization import NullSettings, null_scores, p_value, randomization_test
from fairscan.engine.seeds import child_seed


def _problem(seed: int, n: int = 400, bias: float = 0.0) -> ScanProblem:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 3)])
    expected = np.full(n, 0.3)
    observed = (rng.random(n) < expected + bias * (codes[:, 1] == 0)).astype(float)
    return ScanProblem.build(codes, observed, expected)


def test_p_value_formula_counts_ties_and_never_returns_zero():
    scores = np.array([0.0, 1.0, 2.0, 3.0])
    assert p_value(2.0, scores) == (pytest.approx(3 / 5), 2)
    assert p_value(10.0, scores) == (pytest.approx(1 / 5), 0)
    assert p_value(0.0, scores) == (pytest.approx(1.0), 4)


def test_child_seeds_are_addressed_by_index():
    root = np.random.SeedSequence(42)
    a = child_seed(root, 1, 7).generate_state(2)
    root.spawn(3)  # spawning elsewhere must not change addressed children
    b = child_seed(root, 1, 7).generate_state(2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, child_seed(root, 1, 8).generate_state(2))


def test_results_are_bit_identical_regardless_of_worker_count(monkeypatch):
    # force the process pool even though this job is too small to need it
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    cells = _problem(0).cells()
    settings = NullSettings(direction=1, penalty=0.5, restarts=5)
    seed = np.random.SeedSequence(123)
    one = null_scores(cells, settings, seed, 40, workers=1)
    two = null_scores(cells, settings, seed, 40, workers=2)
    assert np.array_equal(one, two)
    # more workers than cores (loky's executor is resized, not restarted, between the calls)
    sixteen = null_scores(cells, settings, seed, 40, workers=16)
    assert np.array_equal(one, sixteen)
    again = null_scores(cells, settings, seed, 40, workers=1)
    assert np.array_equal(one, again)


def test_progress_is_reported_per_replicate():
    cells = _problem(1).cells()
    seen: list[int] = []
    null_scores(
        cells, NullSettings(1, 0.0, 2), np.random.SeedSequence(0), 5, on_progress=seen.append
    )
    assert sum(seen) == 5


def test_injected_bias_is_detected():
    problem = _problem(3, n=2000, bias=0.25)
    cells = problem.cells()
    best = search(cells, direction=1, penalty=0.0, restarts=10, seed=1)
    result = randomization_test(
        cells, NullSettings(1, 0.0, 10), best.score, np.random.SeedSequence(9), 99, 0.05
    )
    assert result.p_value == pytest.approx(0.01)
    assert result.significant


@pytest.mark.slow
def test_null_p_values_are_uniform_and_type_one_error_is_controlled():
    """Invariant §2.7.9: under H0 the randomization p-values are ~U(0, 1)."""
    p_values = []
    for k in range(150):
        rng = np.random.default_rng(10_000 + k)
        n = 200
        codes = np.column_stack([rng.integers(0, c, n) for c in (2, 3)])
        expected = rng.choice([0.2, 0.5], n)
        observed = (rng.random(n) < expected).astype(float)
        problem = ScanProblem.build(codes, observed, expected)
        cells = problem.cells()
        best = search(cells, direction=-1, penalty=0.0, restarts=3, seed=k)
        result = randomization_test(
            cells, NullSettings(-1, 0.0, 3), best.score, np.random.SeedSequence(k), 39, 0.05
        )
        p_values.append(result.p_value)
    p_values = np.array(p_values)
    # discrete p-values on the grid {1/40, ..., 1}: compare with the uniform on that grid
    assert stats.kstest(p_values, "uniform").pvalue > 0.001
    assert np.mean(p_values <= 0.05) <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / len(p_values))
