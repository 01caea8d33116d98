"""The monitor's e-processes (engine/evidence.py) against independent computations: exact
enumeration of every outcome under the null, scipy's Fisher non-central hypergeometric, a
direct per-row loop, and seeded simulations of Ville's inequality and confidence coverage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom, hypergeom, nchypergeom_fisher

from fairscan.engine import evidence as ev

RUN_P = np.array([0.1, 0.35, 0.5, 0.8, 0.93])


def _outcomes(p: np.ndarray):
    """Every 0/1 outcome vector of rows with probabilities p, with its null probability."""
    for bits in itertools.product((0, 1), repeat=p.size):
        y = np.array(bits, dtype=np.int8)
        yield y, float(np.prod(np.where(y == 1, p, 1.0 - p)))


def _run_factor(run_loglik: np.ndarray) -> float:
    return float(np.sum(ev.WEIGHTS * np.exp(run_loglik - run_loglik[ev.NULL_INDEX])))


def test_grid_has_the_null_and_weights_sum_to_one():
    assert ev.GRID[ev.NULL_INDEX] == 1.0
    assert np.all(np.diff(ev.GRID) > 0)
    assert ev.GRID[0] == pytest.approx(0.25) and ev.GRID[-1] == pytest.approx(4.0)
    assert ev.WEIGHTS.sum() == pytest.approx(1.0, abs=1e-12)
    assert ev.WEIGHTS[ev.NULL_INDEX] == 0.0


def test_bernoulli_loglik_matches_a_row_loop_and_cells_match_rows():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.99, 300)
    y = (rng.random(300) < p).astype(np.int8)
    expected = np.array(
        [
            sum(yi * math.log(g) - math.log(1 - pi + g * pi) for yi, pi in zip(y, p, strict=True))
            for g in ev.GRID
        ]
    )
    np.testing.assert_allclose(ev.bernoulli_loglik(y, p), expected, rtol=1e-12, atol=1e-9)
    # cells: three probabilities, positives and rows per cell
    cell_p = np.array([0.2, 0.5, 0.7])
    cell = rng.integers(0, 3, 500)
    y = (rng.random(500) < cell_p[cell]).astype(np.int8)
    positives = np.bincount(cell, weights=y, minlength=3)
    rows = np.bincount(cell, minlength=3)
    np.testing.assert_allclose(
        ev.bernoulli_loglik(positives, cell_p, rows),
        ev.bernoulli_loglik(y, cell_p[cell]),
        rtol=1e-12,
    )


def test_cell_loglik_sums_to_each_cells_rows():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, 20_000)
    y = (rng.random(p.size) < p).astype(np.int8)
    cell = rng.integers(0, 37, p.size)
    per_cell = ev.bernoulli_cell_loglik(y, p, cell, 40)
    assert per_cell.shape == (40, ev.GRID_SIZE)
    np.testing.assert_array_equal(per_cell[37:], 0.0)
    for c in (0, 5, 36):
        np.testing.assert_allclose(
            per_cell[c], ev.bernoulli_loglik(y[cell == c], p[cell == c]), rtol=1e-11
        )


def test_bernoulli_run_factor_has_mean_exactly_one_under_the_null():
    mean = sum(prob * _run_factor(ev.bernoulli_loglik(y, RUN_P)) for y, prob in _outcomes(RUN_P))
    assert mean == pytest.approx(1.0, abs=1e-12)
    # per-cell counts: enumerate binomial counts in two cells
    rows, cell_p = np.array([4, 6]), np.array([0.3, 0.65])
    mean = 0.0
    for a in range(5):
        for b in range(7):
            prob = binom.pmf(a, 4, 0.3) * binom.pmf(b, 6, 0.65)
            mean += prob * _run_factor(ev.bernoulli_loglik(np.array([a, b]), cell_p, rows))
    assert mean == pytest.approx(1.0, abs=1e-12)


def test_subgroup_and_scan_evidence_are_martingales_by_enumeration():
    """E[E_2 | run 1] = E_1 exactly for every run-1 outcome, for both update rules."""
    first_p, second_p = np.array([0.2, 0.6, 0.9]), np.array([0.4, 0.7, 0.15, 0.5])
    for y1, _ in _outcomes(first_p):
        run1 = ev.bernoulli_loglik(y1, first_p)
        for update in (ev.update_subgroup, ev.update_scan):
            state = update(ev.ProcessState(), run1)
            mean = sum(
                prob * ev.e_value(update(state, ev.bernoulli_loglik(y2, second_p)))
                for y2, prob in _outcomes(second_p)
            )
            assert mean == pytest.approx(ev.e_value(state), rel=1e-12)


def test_hypergeometric_loglik_matches_scipy():
    for x, n, k, m in [(7, 50, 20, 12), (0, 30, 10, 5), (5, 30, 10, 5), (40, 200, 90, 60)]:
        for i in (0, 7, ev.NULL_INDEX, 33, ev.GRID_SIZE - 1):
            expected = nchypergeom_fisher.logpmf(x, n, m, k, ev.GRID[i])
            assert ev.hypergeometric_loglik(x, n, k, m)[i] == pytest.approx(
                expected, rel=1e-9, abs=1e-9
            )
    # at the null it is the central hypergeometric
    assert ev.hypergeometric_loglik(7, 50, 20, 12)[ev.NULL_INDEX] == pytest.approx(
        hypergeom.logpmf(7, 50, 12, 20)
    )


def test_hypergeometric_is_stable_for_large_margins_and_sums_to_one():
    ll = ev.hypergeometric_loglik(3_100, 500_000, 150_000, 10_000)
    assert np.all(np.isfinite(ll)) and np.all(ll <= 0)
    support = range(0, 13)
    total = np.logaddexp.reduce([ev.hypergeometric_loglik(x, 40, 12, 15) for x in support], axis=0)
    np.testing.assert_allclose(total, 0.0, atol=1e-12)


def _full_support_loglik(x: int, n: int, k: int, m: int) -> np.ndarray:
    """The normaliser summed over the whole support, written out (the window's reference)."""
    low, high = max(0, m + k - n), min(m, k)
    xs = np.arange(low, high + 1, dtype=np.float64)
    base = ev._log_choose(m, xs) + ev._log_choose(n - m, k - xs)
    terms = base[None, :] + ev._LOG_GRID[:, None] * xs[None, :]
    top = terms.max(axis=1, keepdims=True)
    log_norm = (np.log(np.exp(terms - top).sum(axis=1, keepdims=True)) + top)[:, 0]
    return base[x - low] + x * ev._LOG_GRID - log_norm


@pytest.mark.parametrize(
    ("n", "k", "m"),
    [(500_000, 50_000, 100_000), (1_000_000, 300_000, 500_000), (200_000, 100_000, 199_000),
     (1_000_000, 10, 999_990), (300_000, 1_000, 150_000)],
)  # fmt: skip
@pytest.mark.slow
def test_hypergeometric_window_equals_the_whole_support(n: int, k: int, m: int) -> None:
    low, high = max(0, m + k - n), min(m, k)
    for x in {low, high, (low + high) // 2, low + (high - low) // 7}:
        full = _full_support_loglik(x, n, k, m)
        got = ev.hypergeometric_loglik(x, n, k, m)
        np.testing.assert_allclose(got, full, rtol=1e-12, atol=1e-9)


def test_hypergeometric_run_factor_has_mean_exactly_one_under_the_null():
    n, k, m = 40, 12, 15
    mean = sum(
        hypergeom.pmf(x, n, m, k) * _run_factor(ev.hypergeometric_loglik(x, n, k, m))
        for x in range(0, 13)
    )
    assert mean == pytest.approx(1.0, abs=1e-12)


def test_hypergeometric_rejects_impossible_counts():
    with pytest.raises(ValueError, match="support"):
        ev.hypergeometric_loglik(13, 40, 12, 15)
    with pytest.raises(ValueError, match="margins"):
        ev.hypergeometric_loglik(1, 10, 12, 5)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="probabilities"):
        ev.bernoulli_loglik(np.array([1]), np.array([1.2]))
    with pytest.raises(ValueError, match="0 or 1"):
        ev.bernoulli_loglik(np.array([2]), np.array([0.5]))
    with pytest.raises(ValueError, match="row count"):
        ev.bernoulli_loglik(np.array([5]), np.array([0.5]), np.array([4]))
    with pytest.raises(ValueError, match="finite"):
        ev.update_subgroup(ev.ProcessState(), np.zeros(3))


def test_json_round_trip_is_bit_exact():
    rng = np.random.default_rng(9)
    state = ev.ProcessState()
    for _ in range(3):
        p = rng.uniform(0.1, 0.9, 400)
        state = ev.update_subgroup(
            state, ev.bernoulli_loglik((rng.random(400) < p * 1.3).astype(int), p)
        )
    state = ev.ProcessState(**{**state.__dict__, "first_alarm_run": 2})
    back = ev.ProcessState.from_json(state.to_json())
    assert back.loglik.tobytes() == state.loglik.tobytes()
    for name in ("log_e", "log_running_max", "log_cusum", "runs", "first_alarm_run"):
        assert getattr(back, name) == getattr(state, name)
    assert back.to_json() == state.to_json()
    with pytest.raises(ValueError, match="grid"):
        ev.ProcessState.from_json('{"grid_size": 3, "loglik": [0, 0, 0]}')
    with pytest.raises(ValueError, match="monitor state"):
        ev.ProcessState.from_json('{"grid_size": 41}')
    with pytest.raises(ValueError, match="monitor state"):
        ev.ProcessState.from_json("not json")


def test_evidence_running_max_cusum_and_p_value_follow_their_definitions():
    good = ev.bernoulli_loglik(np.ones(40, dtype=int), np.full(40, 0.5))  # far too many positives
    fair = ev.bernoulli_loglik(np.array([1, 0] * 20), np.full(40, 0.5))
    state = ev.update_subgroup(ev.ProcessState(), good)
    assert ev.e_value(state) > 1e6 and state.log_running_max == state.log_e
    factor = math.log(_run_factor(good))
    assert state.log_cusum == pytest.approx(factor)
    state2 = ev.update_subgroup(state, fair)
    assert state2.log_running_max == state.log_e > state2.log_e
    assert state2.log_cusum == pytest.approx(factor + math.log(_run_factor(fair)))
    assert ev.p_value_anytime(state2) == pytest.approx(math.exp(-state.log_e))
    assert ev.p_value_anytime(ev.ProcessState()) == 1.0
    scan = ev.update_scan(ev.update_scan(ev.ProcessState(), good), fair)
    assert scan.log_e == pytest.approx(factor + math.log(_run_factor(fair)))


def test_onset_cusum_restarts_at_one_and_forgets_old_fair_runs():
    fair = ev.bernoulli_loglik(np.array([0] * 30 + [1] * 30), np.full(60, 0.5))
    biased = ev.bernoulli_loglik(np.array([0] * 10 + [1] * 50), np.full(60, 0.5))
    state = ev.ProcessState()
    for _ in range(20):
        state = ev.update_subgroup(state, fair)
    assert state.log_cusum < 0  # every fair factor is below 1
    onset = ev.update_subgroup(state, biased)
    assert onset.log_cusum == pytest.approx(math.log(_run_factor(biased)))  # max(C, 1) restarted it
    threshold, onset_threshold = ev.thresholds(0.05, 21, 52)
    assert (threshold, onset_threshold) == pytest.approx((840.0, 43_680.0))
    twice = ev.update_subgroup(onset, biased)
    assert twice.log_cusum >= math.log(onset_threshold)
    checked, kinds = ev.record_alarms(
        twice, 23, threshold=threshold, onset_threshold=onset_threshold, tolerance=1.25, alpha=0.05
    )
    assert "onset" in kinds and checked.first_alarm_run == 23
    again, _ = ev.record_alarms(
        checked,
        24,
        threshold=threshold,
        onset_threshold=onset_threshold,
        tolerance=1.25,
        alpha=0.05,
    )
    assert again.first_alarm_run == 23


def test_after_a_bias_ends_the_scan_process_stops_alarming_and_onset_restarts():
    """The scan process alarms while its evidence reaches new highs above the threshold (or on
    onset) and stops once the runs are fair again; a fixed subgroup keeps persisting until its
    effect is resolved. An onset alarm restarts the detector (C = 1)."""
    fair = ev.bernoulli_loglik(np.array([0] * 30 + [1] * 30), np.full(60, 0.5))
    biased = ev.bernoulli_loglik(np.array([0] * 5 + [1] * 55), np.full(60, 0.5))
    threshold, onset_threshold = ev.thresholds(0.05, 21, 52)
    limits = {"threshold": threshold, "onset_threshold": onset_threshold, "alpha": 0.05}
    scan, subgroup = ev.ProcessState(), ev.ProcessState()
    scan_alarms, subgroup_alarms = [], []
    for run, loglik in enumerate([biased] * 3 + [fair] * 4, start=1):
        scan, kinds = ev.record_alarms(ev.update_scan(scan, loglik), run, tolerance=None, **limits)
        scan_alarms.append(kinds)
        subgroup, kinds = ev.record_alarms(
            ev.update_subgroup(subgroup, loglik), run, tolerance=1.25, **limits
        )
        subgroup_alarms.append(kinds)
        if "onset" in scan_alarms[-1]:
            assert scan.log_cusum == 0.0  # restarted
    assert scan.first_alarm_run is not None and scan.first_alarm_run <= 3
    assert any("evidence" in kinds for kinds in scan_alarms[:3])
    assert scan_alarms[3:] == [[], [], [], []]  # fair runs: no alarm, though the max crossed
    assert scan.log_running_max >= math.log(threshold)
    assert ev.label(scan, tolerance=None, **limits) == "inconclusive"
    assert all("evidence" in kinds for kinds in subgroup_alarms[3:])  # not resolved yet
    assert ev.label(subgroup, tolerance=1.25, **limits) == "persists"


def test_adjusted_p_value_crosses_alpha_with_the_evidence_threshold():
    threshold, _ = ev.thresholds(0.05, 21, 52)
    below = ev.ProcessState(log_running_max=math.log(threshold) - 1e-9)
    at = ev.ProcessState(log_running_max=math.log(threshold))
    assert ev.p_value_adjusted(below, 21) > 0.05
    assert ev.p_value_adjusted(at, 21) == pytest.approx(0.05, rel=1e-12)
    assert ev.p_value_adjusted(ev.ProcessState(), 21) == 1.0
    with pytest.raises(ValueError):
        ev.p_value_adjusted(at, 0)


def test_thresholds_refuse_bad_arguments():
    with pytest.raises(ValueError):
        ev.thresholds(0.0, 3, 10)
    with pytest.raises(ValueError):
        ev.thresholds(0.05, 0, 10)


def test_labels():
    limits = {"threshold": 40.0, "onset_threshold": 1e300, "tolerance": 1.25, "alpha": 0.05}
    assert ev.label(ev.ProcessState(), **limits) == "new"
    rng = np.random.default_rng(5)
    p = np.full(200_000, 0.3)
    fair = ev.update_subgroup(
        ev.ProcessState(), ev.bernoulli_loglik((rng.random(p.size) < p).astype(int), p)
    )
    assert ev.label(fair, **limits) == "resolved"
    assert ev.label(fair, **{**limits, "tolerance": None}) == "inconclusive"
    small = ev.update_subgroup(
        ev.ProcessState(), ev.bernoulli_loglik(np.array([1, 0]), np.array([0.3, 0.3]))
    )
    assert ev.label(small, **limits) == "inconclusive"
    q = 0.3 * 2 / (1 - 0.3 + 0.3 * 2)  # odds doubled
    biased = ev.update_subgroup(
        ev.ProcessState(), ev.bernoulli_loglik((rng.random(5000) < q).astype(int), p[:5000])
    )
    assert ev.label(biased, **limits) == "persists"
    state, kinds = ev.record_alarms(biased, 3, **limits)
    assert kinds == ["evidence"] and state.first_alarm_run == 3
    _, none = ev.record_alarms(fair, 3, **limits)
    assert none == []


def test_confidence_sequence_brackets_the_estimate_and_is_unbounded_without_data():
    assert ev.confidence_sequence(ev.ProcessState(), 0.05) == (0.0, math.inf)
    rng = np.random.default_rng(6)
    p = np.full(50_000, 0.4)
    q = 0.4 * 1.6 / (1 - 0.4 + 0.4 * 1.6)
    state = ev.update_subgroup(
        ev.ProcessState(), ev.bernoulli_loglik((rng.random(p.size) < q).astype(int), p)
    )
    low, high = ev.confidence_sequence(state, 0.05)
    assert 1.3 < low < 1.6 < high < 2.0


def _coverage_misses(rng: np.random.Generator, paths: int, runs: int, effect: float) -> int:
    misses = 0
    for _ in range(paths):
        state = ev.ProcessState()
        for _ in range(runs):
            p, rows = rng.uniform(0.1, 0.6, 3), rng.integers(50, 150, 3)
            q = p * effect / (1 - p + p * effect)
            state = ev.update_subgroup(state, ev.bernoulli_loglik(rng.binomial(rows, q), p, rows))
            low, high = ev.confidence_sequence(state, 0.1)
            if not low < effect < high:
                misses += 1
                break
    return misses


def test_confidence_sequence_covers_the_true_effect_at_every_run():
    """Seeded: the chance the sequence ever misses the effect (off the grid) is at most alpha."""
    paths = 300
    misses = _coverage_misses(np.random.default_rng(11), paths, 8, 1.37)
    assert misses / paths <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / paths)


def _ville_crossings(
    rng: np.random.Generator, paths: int, runs: int, alpha: float
) -> tuple[int, int]:
    subgroup = scan = 0
    for _ in range(paths):
        state, betting = ev.ProcessState(), ev.ProcessState()
        for _ in range(runs):
            p, rows = rng.uniform(0.05, 0.95, 4), rng.integers(1, 50, 4)
            state = ev.update_subgroup(state, ev.bernoulli_loglik(rng.binomial(rows, p), p, rows))
            x_rows = int(rng.integers(20, 80))
            n, k = 200, int(rng.integers(10, 190))
            x = int(rng.hypergeometric(x_rows, n - x_rows, k))
            betting = ev.update_scan(betting, ev.hypergeometric_loglik(x, n, k, x_rows))
        subgroup += state.log_running_max >= math.log(1 / alpha)
        scan += betting.log_running_max >= math.log(1 / alpha)
    return subgroup, scan


@pytest.mark.slow
def test_ville_null_paths_rarely_cross_one_over_alpha():
    paths, alpha = 300, 0.1
    subgroup, scan = _ville_crossings(np.random.default_rng(12), paths, 10, alpha)
    bound = alpha + 3 * math.sqrt(alpha * (1 - alpha) / paths)
    assert subgroup / paths <= bound and scan / paths <= bound


@pytest.mark.slow
def test_ville_and_coverage_at_a_larger_size():
    paths, alpha = 3000, 0.05
    subgroup, scan = _ville_crossings(np.random.default_rng(13), paths, 30, alpha)
    bound = alpha + 3 * math.sqrt(alpha * (1 - alpha) / paths)
    assert subgroup / paths <= bound and scan / paths <= bound
    misses = _coverage_misses(np.random.default_rng(14), 2000, 20, 0.71)
    assert misses / 2000 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 2000)
