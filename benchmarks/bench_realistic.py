"""Where an FPR-Scan's time goes when cells are about rows (issue 36), for the fairscan on
``PYTHONPATH``: the table of ``make_realistic.py`` (2,000,000 rows, 8 attributes of 6 values),
its true negatives compressed into cells, the search (20 restarts, penalty 1) and null replicates
(``MdssReplicate``, as the randomization test runs them), each timed in wall and CPU seconds.

Compare two trees by running each as a whole process, alternating::

    PYTHONPATH=/work/main/src .venv/bin/python benchmarks/bench_realistic.py --replicates 5
    PYTHONPATH=src .venv/bin/python benchmarks/bench_realistic.py --replicates 5

The digest (search score, replicate scores) must be the same bits for both.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_realistic as mr

RESTARTS = 20
T = TypeVar("T")
PENALTY = 1.0


def timed(label: str, fn: Callable[[], T]) -> tuple[T, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<22} wall {wall:7.3f} s   cpu {cpu:7.3f} s", flush=True)
    return out, wall, cpu


def main() -> int:
    from fairscan.engine.mdss import ScanProblem, search
    from fairscan.engine.randomization import MdssReplicate, NullSettings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=mr.ROWS)
    ap.add_argument("--replicates", type=int, default=5)
    args = ap.parse_args()
    table = mr.make_table(args.rows)
    negatives = table["defaulted"] == 0
    observed = table["flagged"][negatives].astype(np.float64)
    codes = table["codes"][negatives].astype(np.int32)
    expected = np.full(observed.shape[0], observed.mean())
    problem, _, _ = timed("prepare (problem)", lambda: ScanProblem.build(codes, observed, expected))
    cells, _, _ = timed("cells", problem.cells)
    print(f"rows {observed.shape[0]:,} true negatives, {cells.n_cells:,} cells")
    best, _, _ = timed(
        "search",
        lambda: search(cells, direction=1, penalty=PENALTY, restarts=RESTARTS, seed=12345),
    )
    job = MdssReplicate(cells, NullSettings(1, PENALTY, RESTARTS), np.random.SeedSequence(7))
    walls: list[float] = []
    cpus: list[float] = []
    scores: list[float] = []
    for r in range(args.replicates):
        score, wall, cpu = timed(f"replicate {r}", partial(job, r))
        walls.append(wall)
        cpus.append(cpu)
        scores.append(score)
    print(
        f"replicate median       wall {statistics.median(walls):7.3f} s   "
        f"cpu {statistics.median(cpus):7.3f} s"
    )
    print(f"digest {best.score!r} {int(best.size)} {[repr(s) for s in scores]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
