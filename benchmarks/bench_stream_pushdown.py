"""Streamed dataset vs DuckDB's own GROUP BY (issue 29): a 200M-row, 8-attribute Parquet
dataset in 20 files, FPR-Scan with 19 replicates, side by side in one run.

Writes the dataset if it is missing (``make_large_dataset.py``, under ``--data``, by default
``/tmp/fairscan-bench/large``: never into the repository), then, each as a separate process
whose peak RSS is ``wait4``'s maximum over the process and its children:

1. DuckDB's ``GROUP BY`` of the 8 attributes, the outcome and the decision, with counts, over
   the same files (``threads`` and ``memory_limit`` as fairscan sets them);
2. ``audit run`` of a spec naming the folder (``--src``: the sources to run, e.g. a checkout
   of an earlier commit for a before/after);
3. the ``GROUP BY`` again.

It prints the ratio of the audit's wall time to the ``GROUP BY``'s (alone and to the mean of
the two), the peak RSS, whether the injected subgroup (segment E aged 18-24) is found, and the
load average (``uptime``) before each step.

    python benchmarks/bench_stream_pushdown.py [--rows N --files K] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

SPEC = """\
version: 1
name: large-fpr
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
significance: {{replicates: {replicates}, seed: 0, workers: 2}}
output: {{dir: {out}, formats: [json]}}
"""

# The audit's bins (its report's `bins`: exact quantile edges of the 200M-row dataset); the
# GROUP BY cuts age and tenure_years at the same inner edges, so that it builds the same groups
# as the audit (172,800), as bench_warehouse.py does.
AGE_EDGES = (30, 43, 55, 68)
TENURE_EDGES = (7, 15, 23)
GROUP_BY = """
import sys, time, duckdb
con = duckdb.connect(config={"threads": 2, "memory_limit": sys.argv[2]})
con.execute("SET enable_progress_bar = false")
started = time.perf_counter()
rows = con.sql(
    "select region, sex, channel, product, segment, device, "
    + sys.argv[3] + " as age, " + sys.argv[4] + " as tenure_years, outcome, decision, "
    "count(*) as n from read_parquet(?) group by all",
    params=[sys.argv[1] + "/*.parquet"],
).fetchall()
print(time.perf_counter() - started, len(rows), sum(r[-1] for r in rows))
"""


# polars' streaming engine on the same aggregation (the alternative the issue names)
POLARS_GROUP_BY = """
import sys, time, polars as pl
started = time.perf_counter()
lazy = pl.scan_parquet(sys.argv[1] + "/*.parquet")
def bins(column, edges):
    return pl.sum_horizontal([(pl.col(column) >= e).cast(pl.Int32) for e in edges]).alias(column)
table = (
    lazy.with_columns(bins("age", (30, 43, 55, 68)), bins("tenure_years", (7, 15, 23)))
    .group_by("region", "sex", "channel", "product", "segment", "device", "age",
              "tenure_years", "outcome", "decision")
    .agg(pl.len())
    .collect(engine="streaming")
)
print(time.perf_counter() - started, table.height, table["len"].sum())
"""


def _bins(column: str, edges: tuple[int, ...]) -> str:
    return " + ".join(f"({column} >= {e})::int" for e in edges)


def _load() -> str:
    return os.getloadavg().__repr__()


CPU: dict[str, float] = {}  # CPU seconds (user + system) of the last process, and its children


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB, stdout) of a separate process (its CPU time, with its
    worker processes', in ``CPU["last"]``: the figure a loaded machine disturbs least)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.read().decode()
    err = process.stderr.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    CPU["last"] = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({code}):\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


def _group_by(data: Path, memory_limit: str) -> tuple[float, float, float, int]:
    """(query seconds, process wall, peak RSS MiB, groups) of DuckDB's GROUP BY."""
    wall, rss, out = _run(
        [
            sys.executable,
            *("-c", GROUP_BY, str(data), memory_limit),
            *(_bins("age", AGE_EDGES), _bins("tenure_years", TENURE_EDGES)),
        ]
    )
    seconds, groups, _rows = out.split()
    return float(seconds), wall, rss, int(groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=19)
    parser.add_argument("--data", type=Path, default=Path("/tmp/fairscan-bench/large"))
    parser.add_argument("--src", type=Path, default=SRC, help="the fairscan sources to run")
    parser.add_argument("--memory-limit", default="512MB", help="DuckDB's, for the GROUP BY")
    parser.add_argument("--skip-anchor", action="store_true", help="the audit only")
    parser.add_argument(
        "--polars", action="store_true", help="also polars' streaming GROUP BY of the files"
    )
    args = parser.parse_args()
    data: Path = args.data
    if not data.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "make_large_dataset.py"),
                *("--rows", str(args.rows), "--files", str(args.files), "--out", str(data)),
            ],
            check=True,
        )
    work = data.parent
    spec = work / "large-fpr.audit.yaml"
    out = work / "large-out"
    spec.write_text(SPEC.format(data=str(data) + "/", replicates=args.replicates, out=str(out)))
    print(f"sources: {args.src}; data: {data} ({len(list(data.glob('*.parquet')))} files)")
    result: dict[str, Any] = {}
    if not args.skip_anchor:
        print(f"load before GROUP BY: {_load()}", flush=True)
        q1, w1, r1, groups = _group_by(data, args.memory_limit)
        c1 = CPU["last"]
        print(f"DuckDB GROUP BY: {q1:.2f} s (process {w1:.2f} s, {r1:.0f} MiB), {groups:,} groups")
        result["group_by_seconds"] = [round(q1, 2)]
        result["group_by_process_seconds"] = [round(w1, 2)]
        result["group_by_peak_rss_mib"] = round(r1)
    env = {**os.environ, "PYTHONPATH": str(args.src)}
    audit = [sys.executable, "-m", "fairscan.cli", "run", str(spec)]
    print(f"load before audit run: {_load()}", flush=True)
    wall, rss, _ = _run(audit, env)
    cpu = CPU["last"]
    report = json.loads((out / "large-fpr.json").read_text())
    scan = report["scans"][0]
    finding = scan["findings"][0] if scan["findings"] else None
    found = bool(finding) and "segment = E" in finding["label"] and "age" in finding["label"]
    bins = report.get("bins") or {}
    same_bins = bins.get("age", [])[1:-1] == list(AGE_EDGES) and bins.get("tenure_years", [])[
        1:-1
    ] == list(TENURE_EDGES)
    if not same_bins:
        print(f"note: the audit's bins {bins} differ from the GROUP BY's")
    print(
        f"audit run: {wall:.2f} s, peak RSS {rss:.0f} MiB, finding: "
        f"{finding['label'] if finding else None} (p = {finding['p_value'] if finding else None})"
    )
    result.update(
        audit_seconds=round(wall, 2),
        audit_cpu_seconds=round(cpu, 1),
        audit_peak_rss_mib=round(rss),
        injected_subgroup_found=found,
        finding=finding["label"] if finding else None,
        p_value=finding["p_value"] if finding else None,
        rows=report["provenance"]["data_rows"],
        same_bins_as_group_by=same_bins,
        pushdown=(report["provenance"].get("data_source") or {}).get("pushdown"),
    )
    if not args.skip_anchor:
        print(f"load before GROUP BY again: {_load()}", flush=True)
        q2, w2, _, _ = _group_by(data, args.memory_limit)
        c2 = CPU["last"]
        result["group_by_cpu_seconds"] = [round(c1, 1), round(c2, 1)]
        result["cpu_ratio_to_mean"] = round(2 * cpu / (c1 + c2), 2)
        result["group_by_seconds"].append(round(q2, 2))
        result["group_by_process_seconds"].append(round(w2, 2))
        result["ratio_to_first"] = round(wall / q1, 2)
        result["ratio_to_mean"] = round(2 * wall / (q1 + q2), 2)
        result["ratio_to_mean_process"] = round(2 * wall / (w1 + w2), 2)
        print(f"DuckDB GROUP BY again: {q2:.2f} s (process {w2:.2f} s)")
    if args.polars:
        print(f"load before polars' streaming GROUP BY: {_load()}", flush=True)
        _, rss_p, out_p = _run([sys.executable, "-c", POLARS_GROUP_BY, str(data)])
        result["polars_streaming_seconds"] = round(float(out_p.split()[0]), 2)
        result["polars_streaming_peak_rss_mib"] = round(rss_p)
        print(f"polars streaming GROUP BY: {out_p.split()[0]} s, {rss_p:.0f} MiB")
    result["load_after"] = _load()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
