"""Null replicates of a calibration bias_scan drawn from pushed-down probability bins (issue 27).

A database returns, per (profile, outcome), the rows of each of ``bins`` probability bins and
their mean probability; a null replicate draws Binomial(count, bin mean) per bin instead of
Bernoulli(p_i) per row. Two measurements (helpers of tests/engine/test_expectation_sums.py):

* agreement: on datasets with and without an injected miscalibration, the p-value of the
  observed maximum from ``--replicates`` row-level replicates and from as many binned ones;
* type-I error: ``--datasets`` datasets drawn under the null (y ~ Bernoulli(p)), the binned
  p-value (99 replicates each), rejection rates at alpha 0.05 and 0.1.

    python benchmarks/bench_binned_replicates.py [--replicates 999] [--datasets 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=999)
    parser.add_argument("--datasets", type=int, default=1000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    import test_expectation_sums as t

    with open("/proc/loadavg") as fh:
        print("load average:", " ".join(fh.read().split()[:3]))
    print(f"agreement, {args.replicates} replicates each (row-level vs binned p-value):")
    for bins in (1000, 10):
        for effect in (0.0, 0.03, 0.08, 0.12):
            rng = np.random.default_rng(100 + int(effect * 100))
            codes, y, p = t._data(rng, 8000, effect)
            rows, binned = t._p_values(codes, y, p, 1, bins, args.replicates)
            mid = 0.5 * (rows + binned)
            se = np.sqrt(2.0 * max(mid * (1 - mid), 1e-9) / args.replicates)
            print(
                f"  bins {bins:4d}, effect {effect:.2f}: {rows:.4f} vs {binned:.4f} "
                f"(difference {binned - rows:+.4f}, {abs(binned - rows) / se:.2f} SE)"
            )
    for bins in (1000, 10) if args.datasets else ():
        started = time.perf_counter()
        pv = t._type1(args.datasets, 99, bins, 40 + bins)
        rates = ", ".join(
            f"alpha {a}: {np.mean(pv <= a):.3f} (MC SE {np.sqrt(a * (1 - a) / args.datasets):.3f})"
            for a in (0.05, 0.1)
        )
        print(
            f"type-I, bins {bins}, {args.datasets} null datasets x 99 replicates: {rates}; "
            f"{time.perf_counter() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
