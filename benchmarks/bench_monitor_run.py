"""The monitor's cost beyond the audit itself, end to end (issue 35: <= 1 s for 10^6 new rows).

Writes a seeded table of --rows rows (four attributes of 4-6 values, a calibrated probability,
a decision flagged at 15%), then runs `audit run` on a spec with a `bias_scan` and an
`fpr_scan` under `monitor:` --runs times (each run a new seeded table: new rows). Every run
reports `monitor.seconds` (reading the evidence, each process's evidence from this run's
rows, labels and alarms) beside the run's total time; the table goes to stdout (and is
appended to --write).

    python benchmarks/bench_monitor_run.py --rows 1000000 --runs 3 [--write benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

SPEC = """\
version: 1
name: monitor-cost
data: {path: run.parquet}
columns: {outcome: y, prediction: p, recommendation: flag}
attributes: [region, channel, product, tenure]
scans:
  - {id: calibration, type: bias_scan, direction: positive, restarts: 5}
  - {id: fpr, type: fpr_scan, restarts: 5}
significance: {replicates: 19, seed: 1}
output: {dir: reports, formats: [json], history: history.sqlite}
monitor: {alpha: 0.05%s}
"""
ATTRIBUTES = {"region": 6, "channel": 4, "product": 5, "tenure": 6}


def listed_subgroups(count: int) -> str:
    """``count`` subgroups per scan for monitor.subgroups: each value of each attribute, then
    pairs of values, in a fixed order (with 20: every scan runs 21 processes, the issue's case)."""
    singles = [{a: [f"{a[0]}{i}"]} for a, k in ATTRIBUTES.items() for i in range(k)]
    names = list(ATTRIBUTES)
    pairs = [
        {names[j]: [f"{names[j][0]}{i % ATTRIBUTES[names[j]]}"],
         names[j + 1]: [f"{names[j + 1][0]}{i % ATTRIBUTES[names[j + 1]]}"]}
        for i in range(8) for j in range(3)
    ]  # fmt: skip
    chosen = (singles + pairs)[:count]
    if not chosen:
        return ""
    listed = json.dumps(chosen)
    return f", subgroups: {{calibration: {listed}, fpr: {listed}}}"


def write_table(path: Path, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = 1.0 / (1.0 + np.exp(-rng.normal(-1.0, 1.0, rows)))
    frame = pl.DataFrame(
        {
            "region": rng.choice([f"r{i}" for i in range(6)], rows),
            "channel": rng.choice([f"c{i}" for i in range(4)], rows),
            "product": rng.choice([f"p{i}" for i in range(5)], rows),
            "tenure": rng.choice([f"t{i}" for i in range(6)], rows),
            "p": p,
            "y": (rng.random(rows) < p).astype(np.int8),
            "flag": (rng.random(rows) < 0.15).astype(np.int8),
        }
    )
    frame.write_parquet(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--listed", type=int, default=20, help="subgroups listed per scan")
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    audit = Path(sys.executable).with_name("audit")
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "m.audit.yaml").write_text(SPEC % listed_subgroups(args.listed))
        for run in range(1, args.runs + 1):
            write_table(root / "run.parquet", args.rows, seed=run)
            started = time.perf_counter()
            done = subprocess.run(
                [str(audit), "run", str(root / "m.audit.yaml"), "--no-progress", "--workers", "1"],
                capture_output=True,
                text=True,
                check=False,
            )
            total = time.perf_counter() - started
            if done.returncode not in (0, 1):
                raise SystemExit(done.stderr)
            report = json.loads((root / "reports" / "monitor-cost.json").read_text())
            monitor = report["monitor"]
            lines.append(
                f"| {run} | {args.rows:,} | {len(monitor['subgroups'])} | "
                f"{monitor['seconds']:.3f} | {total:.1f} | {os.getloadavg()[0]:.1f} |"
            )
    text = "\n".join(
        [
            f"\n### Monitor cost per run (bench_monitor_run.py), {time.strftime('%Y-%m-%d')}\n",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}; bias_scan + fpr_scan, 19 replicates, 1 worker.\n",
            "| run | rows | processes reported | monitor (s) | whole audit (s) | load |",
            "|---:|---:|---:|---:|---:|---:|",
            *lines,
            "",
        ]
    )
    print(text)
    if args.write:
        with args.write.open("a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
