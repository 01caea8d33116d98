"""The monitor's must-show simulations (benchmarks/bench_monitor.py) at a smaller size.

The full sizes and their numbers are in benchmarks/RESULTS.md ("Monitoring over a series of
audits"). Here: a calibrated model keeps the family-wise false-alarm rate (evidence and onset,
21 processes, 52 runs) within simulation error of 0.05, a planted bias is caught within three
runs, and the onset detector's run length under the null is at least its threshold.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_monitor.py"
_spec = importlib.util.spec_from_file_location("fairscan_bench_monitor", BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up while it loads
_spec.loader.exec_module(bench)

pytestmark = pytest.mark.slow


def test_world_plants_two_percent_outside_the_monitored_subgroups():
    world = bench.make_world()
    assert world.share[world.planted].sum() == pytest.approx(0.02)
    assert len(world.monitored) == 20
    assert not any(np.array_equal(m, world.planted) for m in world.monitored)


def test_calibrated_series_rarely_raise_a_false_alarm():
    world = bench.make_world()
    series = 20
    alarms = sum(
        bench.simulate_series(world, 100 + s, runs=52, rows=(10_000, 20_000)).first_alarm
        is not None
        for s in range(series)
    )
    assert alarms / series <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / series)


def test_planted_bias_is_caught_within_three_runs():
    world = bench.make_world()
    firsts = [
        bench.simulate_series(
            world, 200 + s, runs=20, rows=(100_000, 100_000), bias_start=10
        ).first_alarm
        for s in range(6)
    ]
    assert all(f is not None and f >= 10 for f in firsts)
    assert np.median([f - 10 for f in firsts]) <= 3


def test_onset_run_length_under_the_null_is_at_least_its_threshold():
    for threshold, (mean_length, _) in bench.onset_run_length(
        (5.0, 10.0), paths=30, cap=200
    ).items():
        assert mean_length >= threshold


def test_clopper_pearson_upper_bound_matches_the_closed_form_at_zero():
    # no successes in n trials: the upper end is 1 - 0.025^(1/n)
    assert bench.clopper_pearson_upper(0, 100) == pytest.approx(1 - 0.025 ** (1 / 100))
