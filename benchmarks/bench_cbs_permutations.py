"""CBS permutation test vs FPR-Scan null replicates on COMPAS (issue 12).

    python benchmarks/bench_cbs_permutations.py [--scans suf-pred-cal ...] [--workers 1 2]
        [--replicates 999] [--repeats 3]
    python benchmarks/bench_cbs_permutations.py --breakdown   # CPU per replicate, by step

Runs each audit scan alone (the CBS scans of audits/compas-cbs.audit.yaml, the FPR-Scan of
audits/compas-fpr.audit.yaml) through the library API in a fresh process, back to back, and
measures its significance phase: wall seconds (the report's ``significance_seconds``) and CPU
seconds (the process and its reaped worker processes, from ``getrusage``, minus the same scan
run with 0 replicates), and how many cores the rest of the machine kept busy meanwhile. Prints the medians over ``--repeats`` rounds, the CBS / FPR-Scan ratio,
and each CBS scan's S*, J(S*) and p-value (seed 0). Needs build/compas.csv
(python scripts/prepare_compas.py). Results: benchmarks/RESULTS.md (issue 12, CBS permutations).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CBS_SCANS = ["sep-pred-fpe", "sep-rec-fpr", "suf-pred-cal", "suf-rec-ppv"]
FPR_SCAN = "fpr"


def _spec(scan_id: str, replicates: int, workers: int) -> dict[str, Any]:
    """The audit spec holding only ``scan_id`` (from the COMPAS CBS or FPR audit)."""
    source = "compas-fpr" if scan_id == FPR_SCAN else "compas-cbs"
    spec = yaml.safe_load((ROOT / "audits" / f"{source}.audit.yaml").read_text())
    spec["data"]["path"] = str(ROOT / "build" / "compas.csv")
    spec["scans"] = [s for s in spec["scans"] if s["id"] == scan_id]
    spec["significance"] = {"replicates": replicates, "alpha": 0.05, "seed": 0, "workers": workers}
    if os.environ.get("FAIRSCAN_BENCH_FIXED"):  # the fixed count, to compare with a tree before it
        spec["significance"]["sequential"] = False
    spec.pop("output", None)
    return spec


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (the worker processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run(path: Path) -> tuple[Any, float, float]:
    """(scan result, wall seconds, CPU seconds) of the audit at ``path``."""
    from fairscan.api import RunOptions, prepare_audit, run_prepared

    prepared = prepare_audit(path)
    cpu, wall = _cpu(), time.perf_counter()
    scan = run_prepared(prepared, RunOptions(write=False)).report.scans[0]
    return scan, time.perf_counter() - wall, _cpu() - cpu


def measure(scan_id: str, replicates: int, workers: int) -> dict[str, Any]:
    """One scan's significance phase in this process: a warm-up run (imports, kernels), the
    scan with 0 replicates (the CPU of everything but the replicates), then with ``replicates``."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for count in (0, replicates):
            path = Path(tmp) / f"r{count}.audit.yaml"
            path.write_text(yaml.safe_dump(_spec(scan_id, count, workers)))
            paths.append(path)
        _run(paths[0])
        _, _, cpu0 = _run(paths[0])
        scan, wall, cpu = _run(paths[1])
    finding = scan.findings[0] if scan.findings else None
    return {
        "scan": scan_id,
        "workers": workers,
        "significance_wall": scan.timing.significance_seconds,
        "significance_cpu": cpu - cpu0,
        "run_wall": wall,
        "subgroup": finding.subgroup if finding else None,
        "score": finding.statistic.value if finding else None,
        "p_value": finding.p_value if finding else None,
    }


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [float(v) for v in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _child(scan_id: str, replicates: int, workers: int) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter (no state shared between measurements), with the
    cores the rest of the machine kept busy meanwhile (``other_busy``, per wall second)."""
    command = [sys.executable, __file__, "--measure", scan_id]
    command += ["--replicates", str(replicates), "--workers", str(workers)]
    busy, wall = _busy_seconds(), time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise RuntimeError(f"{scan_id}: the measurement failed ({status})")
    wall = time.perf_counter() - wall
    own = usage.ru_utime + usage.ru_stime
    row = dict(json.loads(out.strip().splitlines()[-1]))
    row["other_busy"] = (_busy_seconds() - busy - own) / wall
    return row


def _table(rows: list[dict[str, Any]], scans: list[str], workers: list[int]) -> str:
    lines = [
        "| scan | workers | significance wall (s) | significance CPU (s) | x FPR-Scan wall "
        "| x FPR-Scan CPU | other cores busy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for w in workers:
        med: dict[str, tuple[float, float, float]] = {}
        for s in [FPR_SCAN, *scans]:
            mine = [r for r in rows if r["scan"] == s and r["workers"] == w]
            med[s] = (
                statistics.median(r["significance_wall"] for r in mine),
                statistics.median(r["significance_cpu"] for r in mine),
                statistics.median(r.get("other_busy", float("nan")) for r in mine),
            )
        for s in [FPR_SCAN, *scans]:
            wall, cpu, other = med[s]
            ratio_wall, ratio_cpu = wall / med[FPR_SCAN][0], cpu / med[FPR_SCAN][1]
            lines.append(
                f"| {s} | {w} | {wall:.2f} | {cpu:.2f} | {ratio_wall:.2f} | {ratio_cpu:.2f} "
                f"| {other:.2f} |"
            )
    return "\n".join(lines)


def _cpu_ms(fn: Any, calls: int) -> float:
    """Median CPU milliseconds per call over 5 rounds of ``calls`` calls."""
    rounds = []
    for _ in range(5):
        start = _cpu()
        for i in range(calls):
            fn(i)
        rounds.append((_cpu() - start) / calls * 1e3)
    return statistics.median(rounds)


def _breakdown_row(data: Any, a: Any, settings: Any, calls: int) -> str:
    import numpy as np
    import sklearn.linear_model  # noqa: F401  (loaded before the limit, so that it sees its BLAS)
    from threadpoolctl import threadpool_limits

    from fairscan.engine import cbs
    from fairscan.engine.seeds import child_seed

    job = cbs.CbsPermutation(data, a, settings, child_seed(np.random.SeedSequence(0), 1))
    job(0)
    perm = [np.random.default_rng(i).permutation(a) for i in range(calls)]
    est = [cbs.estimate(data, settings, p, job.models) for p in perm]
    fast = _cpu_ms(lambda i: cbs.estimate(data, settings, perm[i], job.models), calls)
    with threadpool_limits(limits=1, user_api="blas"):
        rows = _cpu_ms(lambda i: cbs.estimate(data, settings, perm[i]), calls)
    scan = _cpu_ms(lambda i: cbs.scan_estimate(data, settings, est[i], i), calls)
    whole = _cpu_ms(lambda i: job(i + 1), calls)
    return f"{fast:.2f} | {rows:.2f} | {scan:.2f} | {whole:.2f}"


def breakdown(scans: list[str], calls: int = 40) -> None:
    """CPU per permutation replicate: the model fits (on patterns, and on rows as before) and
    the scan, in this process (bench_cbs.py's COMPAS arrays, the audit's settings)."""
    from bench_cbs import SCANS, compas

    from fairscan.engine import cbs

    data, a = compas()
    print(
        "| scan | fits on patterns (ms) | fits on rows, before (ms) | scan (ms) | replicate (ms) |"
    )
    print("|---|---:|---:|---:|---:|")
    for name in scans:
        family, on, cond, direction = SCANS[name]
        settings = cbs.CbsSettings(family, on, cond, 1, direction, 1.0, 500)
        print(f"| {name} | {_breakdown_row(data, a, settings, calls)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scans", nargs="+", default=CBS_SCANS, choices=CBS_SCANS)
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--replicates", type=int, default=999)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    ap.add_argument("--breakdown", action="store_true", help="CPU per replicate, by step")
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # one measurement (child process)
    args = ap.parse_args()
    if args.breakdown:
        breakdown(args.scans)
        return
    if args.measure:
        print(json.dumps(measure(args.measure, args.replicates, args.workers[0])))
        return
    rows = []
    for _ in range(args.repeats):
        for w in args.workers:
            for scan_id in [FPR_SCAN, *args.scans]:
                row = _child(scan_id, args.replicates, w)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(_table(rows, args.scans, args.workers))


if __name__ == "__main__":
    main()
