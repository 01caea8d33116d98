"""Warehouse benchmarks (issue 27): audits of a DuckDB table with the preparation pushed down.

``memory``: a table of ``--rows`` rows (default 3M) with a continuous score read through a
threshold, a quantile-binned continuous attribute (income) and a filter on a continuous column
(amount). Peak RSS (``/usr/bin/time -v``) of separate processes:

* ``before``: ``fairscan.audit(duckdb_relation)`` with the sources of ``--before-src`` (main
  before issue 27: the distinct raw audited columns come back through narwhals);
* ``api``: the same call with this tree (the preparation pushed down);
* ``spec``: ``audit run`` of a spec with ``data.connection`` / ``data.table``;
* ``memory``: the table read into a polars DataFrame, audited in memory (the reference report).

``speed``: a ``--rows`` table (default 100M): FPR-Scan with 19 replicates through
``data.connection`` against DuckDB's own time for the equivalent ``GROUP BY`` (same filter,
same bins, same columns, one count per group) of the same table, in the same run.

    python benchmarks/bench_warehouse.py memory [--rows 3000000]
    python benchmarks/bench_warehouse.py speed [--rows 100000000]
    python benchmarks/bench_warehouse.py calibration|calibrated [--rows 10000000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = Path(os.environ.get("FAIRSCAN_BENCH_WORK", HERE / "work"))  # e.g. under /tmp
SRC = HERE.parent / "src"

AUDIT: dict[str, Any] = {
    "outcome": "outcome",
    "prediction": "score",
    "threshold": 0.5,
    "attributes": ["region", "sex", "channel", "segment", "age", "income"],
    "discretize": {"age": {"edges": [18, 25, 35, 50, 65, 81]}, "income": {"quantiles": 5}},
    "filter": "amount >= 100",
    "scans": [{"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 20}],
    "significance": {"replicates": 19, "seed": 0, "workers": 2},
}
SPEED_AUDIT: dict[str, Any] = {
    **AUDIT,
    "prediction": None,
    "threshold": None,
    "recommendation": "decision",
    "discretize": {"age": {"edges": [18, 25, 35, 50, 65, 81]}},
    "attributes": ["region", "sex", "channel", "segment", "age"],
}
THRESHOLD_AUDIT: dict[str, Any] = {**SPEED_AUDIT, "prediction": "score", "threshold": 0.5}
THRESHOLD_AUDIT["recommendation"] = None
CALIBRATION_AUDIT: dict[str, Any] = {
    **SPEED_AUDIT,
    "prediction": "score",
    "recommendation": None,
    "scans": [{"id": "calibration", "type": "bias_scan", "direction": "negative", "restarts": 10}],
}
# calibrated probabilities (the outcome is Bernoulli(0.3) whatever the attributes) except for
# segment E aged 18-24, where they are 0.08 too high: the negative calibration scan's subgroup
CALIBRATED_SQL = (
    "select region, sex, channel, segment, age, amount, outcome, "
    "0.2 + 0.2 * ((hash(id * 7 + 3) % 1000003) / 1000003.0) "
    "+ case when segment = 'E' and age <= 24 then 0.08 else 0 end as score from predictions"
)
CALIBRATED_AUDIT: dict[str, Any] = {**CALIBRATION_AUDIT, "sql": CALIBRATED_SQL}
GROUP_BY = """
select region, sex, channel, segment,
       case when age is null or isnan(age::double) then null
            else (age >= 25)::int + (age >= 35)::int + (age >= 50)::int + (age >= 65)::int end
            as age,
       outcome, decision, count(*) as n
from predictions where amount >= 100 group by all
"""


def _summary(report: Any) -> list[Any]:
    return [
        (
            scan.id,
            scan.status,
            [(f.label, f.statistic.value, f.p_value, f.size) for f in scan.findings],
            scan.null_distribution.scores if scan.null_distribution else None,
        )
        for scan in report.scans
    ]


def _connection(db: Path) -> str:
    """The DuckDB file, with the settings of --duckdb-options (e.g. memory_limit=512MB)."""
    options = os.environ.get("FAIRSCAN_BENCH_DUCKDB_OPTIONS")
    return f"duckdb://{db}?{options}" if options else str(db)


def _spec_text(db: Path, audit: dict[str, Any]) -> str:
    columns = {k: audit.get(k) for k in ("outcome", "prediction", "threshold", "recommendation")}
    spec = {
        "version": 1,
        "name": "warehouse",
        "data": {
            "connection": _connection(db),
            **({"sql": audit["sql"]} if "sql" in audit else {"table": "predictions"}),
            "filter": audit["filter"],
        },
        "columns": {k: v for k, v in columns.items() if v is not None},
        "attributes": audit["attributes"],
        "discretize": audit["discretize"],
        "scans": audit["scans"],
        "significance": audit["significance"],
        "output": {"dir": str(WORK / "warehouse-out"), "formats": ["json"]},
    }
    return json.dumps(spec)  # JSON is YAML


def child(mode: str, db: Path, out: Path, audit_name: str) -> None:
    """One measured process: audits the table and writes its summary to ``out``."""
    import duckdb

    import fairscan
    from fairscan import api

    audit = {
        "memory": AUDIT,
        "speed": SPEED_AUDIT,
        "threshold": THRESHOLD_AUDIT,
        "calibration": CALIBRATION_AUDIT,
        "calibrated": CALIBRATED_AUDIT,
    }[audit_name]
    keywords = {k: v for k, v in audit.items() if v is not None and k != "sql"}
    query = audit.get("sql", "select * from predictions")
    started = time.perf_counter()
    if mode in ("api", "before"):
        relation = duckdb.connect(str(db), read_only=True).table("predictions")
        report = fairscan.audit(relation, **keywords)
    elif mode == "memory":
        frame = duckdb.connect(str(db), read_only=True).sql(query).pl()
        report = fairscan.audit(frame, **keywords)
    else:
        spec = out.with_suffix(".audit.yaml")
        spec.write_text(_spec_text(db, audit))
        report = api.run_audit(spec, api.RunOptions(write=False)).report
    seconds = time.perf_counter() - started
    source = getattr(report.provenance, "data_source", None)
    out.write_text(
        json.dumps(
            {
                "seconds": seconds,
                "summary": _summary(report),
                "rows": report.provenance.rows_after_filter,
                "data_source": source,
            },
            default=str,
        )
    )


def _measure(mode: str, db: Path, audit_name: str, src: Path) -> dict[str, Any]:
    out = WORK / f"warehouse-{mode}-{audit_name}.json"
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [
        "/usr/bin/time",
        "-v",
        sys.executable,
        __file__,
        "child",
        mode,
        str(db),
        str(out),
        audit_name,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))  # type: ignore[union-attr]
    result = json.loads(out.read_text())
    result["peak_rss_mb"] = rss / 1024
    return result


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def memory(rows: int, before_src: Path) -> None:
    from make_warehouse_table import make

    db = WORK / f"warehouse-{rows}.duckdb"
    if not db.exists():
        print(f"made the table in {make(rows, db):.1f} s")
    print(f"{rows:,} rows; load average before: {_load()}")
    results = {}
    for mode, src in (("before", before_src), ("api", SRC), ("spec", SRC), ("memory", SRC)):
        results[mode] = _measure(mode, db, "memory", src)
        r = results[mode]
        print(
            f"{mode:7s} peak RSS {r['peak_rss_mb']:7.0f} MB, audit {r['seconds']:6.1f} s, "
            f"rows after filter {r['rows']:,}; load {_load()}"
        )
    for mode in ("before", "api", "spec"):
        same = results[mode]["summary"] == results["memory"]["summary"]
        print(f"{mode}: same report as in memory: {same}")
    print("pushed down:", results["spec"]["data_source"])


def calibration(rows: int, before_src: Path, audit_name: str = "calibration") -> None:
    """bias_scan with continuous probabilities: through the database (``before``: the sources
    of ``--before-src``, the probabilities a grouping column; ``spec``: this tree, per-profile
    sums pushed down) and in memory (the reference)."""
    from make_warehouse_table import make

    db = WORK / f"warehouse-{rows}.duckdb"
    if not db.exists():
        print(f"made the table in {make(rows, db):.1f} s")
    print(f"{rows:,} rows; load average before: {_load()}")
    results = {}
    for mode, src in (("before", before_src), ("spec", SRC), ("memory", SRC)):
        try:
            results[mode] = r = _measure("spec" if mode == "before" else mode, db, audit_name, src)
        except SystemExit as exc:
            print(f"{mode}: {str(exc)[-600:]}")
            continue
        print(
            f"{mode:7s} peak RSS {r['peak_rss_mb']:7.0f} MB, audit {r['seconds']:6.1f} s; "
            f"load {_load()}; aggregated rows {(r['data_source'] or {}).get('aggregated_rows')}"
        )
    if "memory" not in results:
        return
    (_, _, reference, _), *_ = results["memory"]["summary"]
    for mode in ("before", "spec"):
        if mode not in results:
            continue
        (_, _, found, _), *_ = results[mode]["summary"]
        for (label, score, p, size), (ref_label, ref_score, ref_p, ref_size) in zip(
            found, reference, strict=True
        ):
            print(
                f"{mode}: {label} (in memory: {ref_label}), size {size} / {ref_size}, "
                f"score {score!r} / {ref_score!r} (relative difference "
                f"{abs(score - ref_score) / abs(ref_score):.2e}), p-value {p} / {ref_p}"
            )
    print("pushed down:", (results.get("spec") or {}).get("data_source"))


def speed(rows: int, threshold: bool, options: str | None) -> None:
    import duckdb
    from make_warehouse_table import make

    db = WORK / f"warehouse-{rows}.duckdb"
    if not db.exists():
        print(f"made the table in {make(rows, db):.1f} s")
    print(f"{rows:,} rows; load average before: {_load()}")
    con = duckdb.connect(str(db), read_only=True)
    started = time.perf_counter()
    group_by_sql = GROUP_BY.replace("decision", "(score >= 0.5)::int") if threshold else GROUP_BY
    groups = con.sql(group_by_sql).fetchall()
    group_by = time.perf_counter() - started
    con.close()
    print(f"DuckDB GROUP BY alone: {group_by:.2f} s ({len(groups):,} groups); load {_load()}")
    if options:
        os.environ["FAIRSCAN_BENCH_DUCKDB_OPTIONS"] = options
        print(f"data.connection: duckdb://...?{options}")
    started = time.perf_counter()
    result = _measure("spec", db, "threshold" if threshold else "speed", SRC)
    wall = time.perf_counter() - started
    print(
        f"fairscan audit run (FPR-Scan, 19 replicates): process wall {wall:.2f} s "
        f"(audit {result['seconds']:.2f} s), peak RSS {result['peak_rss_mb']:.0f} MB; "
        f"ratio {wall / group_by:.2f}x the GROUP BY; load {_load()}"
    )
    con = duckdb.connect(str(db), read_only=True)
    started = time.perf_counter()
    con.sql(group_by_sql).fetchall()
    again = time.perf_counter() - started
    con.close()
    print(
        f"DuckDB GROUP BY again: {again:.2f} s; ratio to the mean {2 * wall / (group_by + again):.2f}x"
    )
    print("found:", result["summary"][0][2][:1], "pushed down:", result["data_source"])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["memory", "speed", "calibration", "calibrated"])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--before-src", type=Path, default=Path("/work/main/src"))
    parser.add_argument(
        "--duckdb-options",
        default=None,
        help="speed: DuckDB settings in the connection URL, e.g. memory_limit=512MB",
    )
    parser.add_argument(
        "--threshold",
        action="store_true",
        help="speed: the recommendation is score >= 0.5 (a continuous score) instead of the "
        "decision column",
    )
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    sys.path.insert(0, str(HERE))
    if args.what == "memory":
        memory(args.rows or 3_000_000, args.before_src)
    elif args.what == "calibration":
        calibration(args.rows or 10_000_000, args.before_src)
    elif args.what == "calibrated":  # calibrated probabilities but for one subgroup
        calibration(args.rows or 10_000_000, args.before_src, "calibrated")
    else:
        speed(args.rows or 100_000_000, args.threshold, args.duckdb_options)


if __name__ == "__main__":
    main()
