"""Replicates locally and on a Dask cluster (issue 12): the COMPAS 3-scan audit, 999 replicates.

Runs ``audit run audits/compas-fpr.audit.yaml`` (fpr_scan, tpr_scan and bias_scan, 100 restarts
each, 999 replicates, seed 0) in fresh processes:

* locally with ``--workers 1`` and ``--workers 2`` (the spawned process pool);
* with ``--executor dask://127.0.0.1:PORT`` against a 2-worker cluster started here
  (``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1``); its start-up is timed apart.

CPU is user + system time of the ``audit`` process and its children (``os.wait4``), plus for the
Dask runs the CPU the cluster's processes (scheduler, nanny, workers) used meanwhile (psutil).
"other cores" is the CPU time the rest of the machine used during a run, per wall second (from
/proc/stat), since the machine may be shared. Every run checks that the null distributions and
p-values equal those of the first local run. Prints a Markdown section.

    python benchmarks/bench_dask.py [--runs 3] [--replicates 999]

Needs build/compas.csv (``make compas``) and ``fairscan[dask]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "audits" / "compas-fpr.audit.yaml"
COMPAS = ROOT / "build" / "compas.csv"
BIN = Path(sys.executable).parent
HZ = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores), from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / HZ


def tree_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their live children (psutil)."""
    import psutil

    total = 0.0
    seen: set[int] = set()
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                if proc.pid in seen:
                    continue
                seen.add(proc.pid)
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def audit(args: list[str], out: Path, cluster: list[int]) -> dict[str, Any]:
    """One ``audit run``: wall, CPU (process tree + cluster), other cores, the report."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [str(BIN / "audit"), "run", str(SPEC), "--out", str(out), "--no-progress", "-q", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRSCAN_")}
    busy0, cluster0 = busy_seconds(), tree_cpu(cluster)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    cluster_cpu = tree_cpu(cluster) - cluster0
    busy = busy_seconds() - busy0
    code = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {code}:\n{stderr}")
    cpu = usage.ru_utime + usage.ru_stime + cluster_cpu
    report = json.loads((out / "compas-fpr.json").read_text(encoding="utf-8"))
    return {
        "wall": wall,
        "cpu": cpu,
        "other": max(0.0, busy - cpu) / wall,
        "report": report,
    }


def results(report: dict[str, Any]) -> Any:
    return [
        (
            scan["id"],
            scan["null_distribution"]["scores"],
            [f["p_value"] for f in scan["findings"]],
        )
        for scan in report["scans"]
    ]


def start_cluster(workers: int) -> tuple[str, list[subprocess.Popen[bytes]], float]:
    """``dask scheduler`` and ``dask worker --nworkers N --nthreads 1``; (address, procs, s)."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    start = time.perf_counter()
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [str(BIN / "dask"), "scheduler", "--port", str(port), "--no-dashboard"], **quiet
    )
    worker = subprocess.Popen(
        [
            str(BIN / "dask"),
            "worker",
            address,
            "--nworkers",
            str(workers),
            "--nthreads",
            "1",
            "--no-dashboard",
        ],
        **quiet,
    )
    from distributed import Client

    client = Client(address, timeout=60, set_as_default=False)
    client.wait_for_workers(workers, timeout=120)
    client.close()
    return address, [scheduler, worker], time.perf_counter() - start


def stop_cluster(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def row(label: str, runs: list[dict[str, Any]], base: float | None) -> str:
    walls = [r["wall"] for r in runs]
    wall = statistics.median(walls)
    cpu = statistics.median(r["cpu"] for r in runs)
    other = statistics.mean(r["other"] for r in runs)
    speed = f"{base / wall:.2f}×" if base else "1.00×"
    shown = ", ".join(f"{w:.1f}" for w in walls)
    return f"| {label} | **{wall:.1f} s** | {cpu:.1f} s | {speed} | {shown} | {other:.2f} | identical |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=999)
    args = parser.parse_args()
    if not COMPAS.exists():
        raise SystemExit("build/compas.csv is missing: run `make compas` first")
    common = ["--replicates", str(args.replicates)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reports"
        configs: list[tuple[str, list[str]]] = [
            ("local, `--workers 1`", ["--workers", "1"]),
            ("local, `--workers 2`", ["--workers", "2"]),
        ]
        measured: dict[str, list[dict[str, Any]]] = {}
        reference = None
        load_start = os.getloadavg()
        for label, extra in configs:
            measured[label] = []
            for _ in range(args.runs):
                run = audit([*common, *extra], out, [])
                if reference is None:
                    reference = results(run["report"])
                assert results(run["report"]) == reference, label
                measured[label].append(run)
        address, procs, startup = start_cluster(2)
        try:
            label = "Dask cluster on this machine, 2 workers × 1 thread"
            executor = address.replace("tcp://", "dask://")
            measured[label] = []
            cluster_pids = [p.pid for p in procs]
            for _ in range(args.runs):
                run = audit([*common, "--executor", executor], out, cluster_pids)
                assert results(run["report"]) == reference, label
                assert run["report"]["provenance"]["executor"] == executor
                measured[label].append(run)
        finally:
            stop_cluster(procs)
    base = statistics.median(r["wall"] for r in measured["local, `--workers 1`"])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], cwd=ROOT, capture_output=True, text=True
    ).stdout.splitlines()
    source = commit + (f" + uncommitted changes in {len(dirty)} files under src/" if dirty else "")
    import distributed

    lines = [
        f"COMPAS 3-scan audit (`audits/compas-fpr.audit.yaml`: fpr_scan, tpr_scan, bias_scan, "
        f"100 restarts each), {args.replicates} replicates, seed 0, whole `audit run` processes; "
        f"median of {args.runs} runs.",
        "",
        f"- date (UTC): {datetime.now(UTC):%Y-%m-%d %H:%M}; fairscan source: {source}; "
        f"nproc {os.cpu_count()}; python {platform.python_version()}; "
        f"distributed {distributed.__version__}",
        f"- load average at start (1/5/15 min): {' / '.join(f'{x:.2f}' for x in load_start)}",
        f"- cluster start-up (`dask scheduler` + `dask worker --nworkers 2 --nthreads 1`, until "
        f"both workers registered): {startup:.1f} s, not included below",
        "",
        "| where | wall | CPU (user + system) | speed-up (wall) | runs (wall, s) | other "
        "cores busy | null distributions and p-values |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, runs in measured.items():
        lines.append(row(label, runs, None if label.startswith("local, `--workers 1`") else base))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
