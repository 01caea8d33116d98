"""Streaming benchmark (issue 12): an FPR-Scan of a 200M-row, 8-attribute Parquet dataset.

Writes the dataset if it is missing (``make_large_dataset.py``: 20 files of 10M rows in
``benchmarks/work/large/``, about 620 MB), then runs ``audit run`` on it as a separate process
(19 null replicates, 2 workers) and reports its wall time, CPU time and peak resident memory
(the largest of the process and its workers, from ``wait4``), and whether the injected subgroup
(segment E, age 18-24) was found.

    python benchmarks/bench_streaming.py [--rows N --files K] [--replicates R]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"

SPEC = """\
version: 1
name: large-fpr
description: FPR-Scan of a streamed Parquet dataset (benchmarks/make_large_dataset.py)
data:
  path: {data}
columns:
  outcome: outcome
  recommendation: decision
attributes: [region, sex, channel, product, segment, device, age, tenure_years]
discretize:
  age: {{quantiles: 5}}
  tenure_years: {{quantiles: 4}}
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 50}}
significance: {{replicates: {replicates}, seed: 0, workers: {workers}}}
output: {{dir: large-out, formats: [json]}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=19)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    data = WORK / f"large-{args.rows}"
    if args.rows == 200_000_000:
        data = WORK / "large"
    if not data.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_large_dataset.py"),
                "--rows",
                str(args.rows),
                "--files",
                str(args.files),
                "--out",
                str(data),
            ],
            check=True,
        )
    spec = WORK / "large-fpr.audit.yaml"
    spec.write_text(
        SPEC.format(data=data.name + "/", replicates=args.replicates, workers=args.workers)
    )
    audit = Path(sys.executable).with_name("audit")
    started = time.perf_counter()
    process = subprocess.Popen([str(audit), "run", str(spec)], stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    report = json.loads((WORK / "large-out" / "large-fpr.json").read_text())
    scan = report["scans"][0]
    finding = scan["findings"][0] if scan["findings"] else None
    result = {
        "rows": report["provenance"]["data_rows"],
        "files": len(list(data.glob("*.parquet"))),
        "cells": scan["parameters"]["cells"],
        "exit_code": os.waitstatus_to_exitcode(status),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_gib": round(usage.ru_maxrss * 1024 / 2**30, 3),
        "search_seconds": round(scan["timing"]["search_seconds"], 1),
        "significance_seconds": round(scan["timing"]["significance_seconds"], 1),
        "finding": finding["label"] if finding else None,
        "p_value": finding["p_value"] if finding else None,
        "inside_rate": finding["effect"]["inside"] if finding else None,
        "reference_rate": finding["effect"]["reference"] if finding else None,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
