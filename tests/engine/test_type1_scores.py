"""Type-I error of every score beyond Bernoulli, by simulation under a true null (slow).

Each scenario of ``benchmarks/bench_type1.py`` (Poisson counts; ordinal codes against their
mean, less and more dispersed than Poisson; Gaussian with a pooled variance and with a per-row
``variance_column``; Berk-Jones at one alpha and over a grid; a nominal outcome with class
probabilities) draws tables whose outcomes follow the model's own law, audits each through the
public API (``fairscan.audit`` with the spec keys, the path of ``audit run``) and checks that
the rejection rate at a = 0.05 and 0.1 is within the binomial error of a:
rate <= a + 2.5 sqrt(a (1 - a) / sims). 39 replicates make the Monte-Carlo test exact at both
levels (a (R + 1) is an integer). The benchmark runs the same scenarios with more simulations
(benchmarks/RESULTS.md).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_type1.py"
_spec = importlib.util.spec_from_file_location("fairscan_bench_type1", BENCH)
assert _spec is not None and _spec.loader is not None
bench_type1 = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench_type1  # dataclasses look their module up while it loads
_spec.loader.exec_module(bench_type1)

SIMS = 200
SETTINGS = Namespace(replicates=39, restarts=3, rows=600, path="spec")
SEED = 7  # independent of the benchmark's seed


@pytest.mark.slow
@pytest.mark.parametrize("scenario", bench_type1.SCENARIOS, ids=lambda s: s.name)
def test_rejection_rate_is_not_anti_conservative(scenario) -> None:
    index = bench_type1.SCENARIOS.index(scenario)
    p_values = []
    for k in range(SIMS):
        rng = np.random.default_rng([SEED, index, k])
        frame = scenario.make(rng, SETTINGS.rows)
        p_values.append(bench_type1.p_spec(scenario, frame, 1000 * index + k, SETTINGS))
    p = np.array(p_values)
    assert np.all((p > 0) & (p <= 1))
    for level in (0.05, 0.1):
        rate = float(np.mean(p <= level + 1e-12))
        limit = level + 2.5 * math.sqrt(level * (1 - level) / SIMS)
        assert rate <= limit, (
            f"{scenario.name} ({scenario.note}): P(p <= {level}) = {rate:.3f} over {SIMS} null "
            f"tables exceeds {limit:.3f}"
        )
