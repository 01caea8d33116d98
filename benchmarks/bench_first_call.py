"""First-call benchmark (issue 23): CPU of the first ``fairscan.audit`` call in a fresh process.

A new interpreter imports ``fairscan`` (lazy: nothing heavy) and runs one FPR-Scan on COMPAS
(build/compas.csv, ``make compas``) with ``replicates: 0``; the CPU time (user + system,
``time.process_time``) of that call is what a user waits for before the first report, almost all
of it imports when they are not deferred to the paths that use them. Goal: under 0.5 s.

    python benchmarks/bench_first_call.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPAS = ROOT / "build" / "compas.csv"
GOAL_CPU_SECONDS = 0.5

PROBE = """
import json, sys, time
import fairscan
start_cpu, start_wall = time.process_time(), time.perf_counter()
report = fairscan.audit(
    sys.argv[1],
    outcome="two_year_recid",
    prediction="prob_decile",
    recommendation="high_risk",
    attributes=["sex", "race", "age_group", "c_charge_degree", "priors"],
    scans=[json.loads(sys.argv[2])],
    significance={"replicates": 0, "seed": 0},
)
cpu, wall = time.process_time() - start_cpu, time.perf_counter() - start_wall
process_cpu = time.process_time()  # the whole process: interpreter start, imports, the call
heavy = sorted(m for m in ("scipy.stats", "sklearn", "pandas", "pyarrow", "pydantic", "rich",
                           "typer", "scipy.optimize") if m in sys.modules)
print(json.dumps({"cpu": cpu, "wall": wall, "process_cpu": process_cpu, "modules": len(sys.modules), "heavy": heavy,
                  "score": report.scans[0].findings[0].statistic.value}))
"""


SCANS = {
    "fpr_scan": {"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 100},
    "bias_scan": {"id": "cal", "type": "bias_scan", "direction": "negative", "restarts": 100},
}


def first_call(python: str, scan: str, src: str | None) -> dict[str, object]:
    env = dict(os.environ)
    if src:  # another checkout's sources (with their built kernels), e.g. the commit before
        env["PYTHONPATH"] = src
    done = subprocess.run(
        [python, "-c", PROBE, str(COMPAS), json.dumps(SCANS[scan])],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--scan", choices=sorted(SCANS), default="fpr_scan")
    parser.add_argument("--src", help="PYTHONPATH of the fairscan to time (default: installed)")
    args = parser.parse_args()
    if not COMPAS.is_file():
        raise SystemExit(f"{COMPAS} is missing: run `make compas` first")
    first_call(args.python, args.scan, args.src)  # bytecode compiled once, as by an earlier run
    runs = [first_call(args.python, args.scan, args.src) for _ in range(args.runs)]
    cpu = [float(r["cpu"]) for r in runs]  # type: ignore[arg-type]
    wall = [float(r["wall"]) for r in runs]  # type: ignore[arg-type]
    whole = [float(r["process_cpu"]) for r in runs]  # type: ignore[arg-type]
    load = os.getloadavg()
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f}")
    print(
        f"first fairscan.audit call ({args.scan}, COMPAS, replicates 0), {args.runs} fresh"
        f" processes: CPU median {statistics.median(cpu):.2f} s (range {min(cpu):.2f}-"
        f"{max(cpu):.2f}), wall median {statistics.median(wall):.2f} s, whole process CPU median"
        f" {statistics.median(whole):.2f} s; goal < {GOAL_CPU_SECONDS} s CPU for the call"
    )
    print(f"modules loaded: {runs[0]['modules']}; heavy: {', '.join(runs[0]['heavy']) or 'none'}")  # type: ignore[arg-type]
    print(f"score: {runs[0]['score']}")


if __name__ == "__main__":
    main()
