"""Type-I error of the calibration Bias Scan with per-row probabilities, by simulation (slow).

Tables from ``benchmarks/bench_sequential.py``'s generator with no planted subgroup (each
outcome drawn from its row's probability, continuous or one of three values) are audited
through the public API with the fixed replicates; the rejection rate at a = 0.05 and 0.1 must
be within the binomial error of a: rate <= a + 2.5 sqrt(a (1 - a) / sims). 39 replicates make
the Monte-Carlo test exact at both levels (a (R + 1) is an integer).

The seeds are independent of the benchmark's (its null tables 10000..10399 happen to have
over-dispersed outcomes: a plain per-profile chi-square of observed against expected counts,
which involves no search, rejects them too; see the benchmark's docstring).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

import fairscan
from fairscan.report.formats import report_json

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sequential.py"
_spec = importlib.util.spec_from_file_location("fairscan_bench_sequential", BENCH)
assert _spec is not None and _spec.loader is not None
bench_sequential = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench_sequential
_spec.loader.exec_module(bench_sequential)

SIMS = 300
REPLICATES = 39
SEED = 300_000  # independent of the benchmark's seeds


def p_value(discrete: bool, k: int) -> float:
    frame = bench_sequential.table(SEED + k, 1000, 1.0, discrete)
    report = fairscan.audit(
        frame,
        name="type1-calibration",
        outcome="y",
        prediction="p",
        attributes=["a", "b", "c"],
        scans=[{"id": "cal", "type": "bias_scan", "direction": "positive", "restarts": 3}],
        significance={"replicates": REPLICATES, "seed": k, "workers": 1, "sequential": False},
    )
    findings = json.loads(report_json(report))["scans"][0]["findings"]
    return float(findings[0]["p_value"]) if findings else 1.0


@pytest.mark.slow
@pytest.mark.parametrize("discrete", [False, True], ids=["per-row", "three-values"])
def test_rejection_rate_is_not_anti_conservative(discrete: bool) -> None:
    p = [p_value(discrete, k) for k in range(SIMS)]
    assert all(0 < value <= 1 for value in p)
    for level in (0.05, 0.1):
        rate = sum(value <= level + 1e-12 for value in p) / SIMS
        limit = level + 2.5 * math.sqrt(level * (1 - level) / SIMS)
        assert rate <= limit, f"P(p <= {level}) = {rate:.3f} over {SIMS} null tables > {limit:.3f}"
