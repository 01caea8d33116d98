"""The audit history (``output.history: PATH``): every run appended to one SQLite file.

Why SQLite: it is in Python's standard library (no extra dependency), a single file that a CI
cache or an artifact store can keep, and its transactions make concurrent appends safe: two
runs appending at once each take the database's write lock in turn (``BEGIN IMMEDIATE`` with a
busy timeout), so nothing is lost or half-written. A directory of Parquet files would suit
object storage, but needs pyarrow and a naming scheme to avoid two writers colliding; one
SQLite file per team or pipeline is the simpler contract.

Each run is one ``runs`` row (time, spec name and hash, data hash, verdict, exit code) and one
``findings`` row per finding (scan, subgroup key and label, baseline label, statistic, p-value,
significant, effect inside and reference).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from fairscan.errors import DataError
from fairscan.report.models import AuditReport

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    utc_time TEXT NOT NULL,
    name TEXT NOT NULL,
    spec_sha256 TEXT NOT NULL,
    data_sha256 TEXT NOT NULL,
    verdict TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    tool_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS findings (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    scan_id TEXT NOT NULL,
    scan_type TEXT NOT NULL,
    subgroup_key TEXT NOT NULL,
    label TEXT NOT NULL,
    baseline_label TEXT,
    statistic REAL,
    p_value REAL,
    significant INTEGER,
    effect_metric TEXT,
    effect_inside REAL,
    effect_reference REAL
);
CREATE INDEX IF NOT EXISTS findings_run ON findings(run_id);
"""
BUSY_SECONDS = 60.0  # how long an append waits for another writer's lock


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)) as db:
            yield db
    except sqlite3.DatabaseError as error:
        raise DataError(
            f"cannot use the history file {path}: {error}",
            field="output.history",
            hint="give the path of a fairscan history (an SQLite file), or a new file",
        ) from None


def subgroup_key(subgroup: dict[str, list[str]] | None, group: str | None) -> str:
    """One finding's identity across runs: its subgroup (sorted), or its group's name."""
    if subgroup is None:
        return f"group:{group}"
    return json.dumps({k: sorted(v) for k, v in sorted(subgroup.items())}, ensure_ascii=False)


def append_run(path: Path, report: AuditReport) -> int:
    """Append ``report`` to the history at ``path`` (created if absent); the run's id."""
    labels: dict[tuple[str, str], str] = {}
    if report.baseline is not None:
        for e in report.baseline.entries:
            side = e.after or e.before
            if side is not None:
                labels[(e.scan_id, subgroup_key(side.subgroup, None))] = e.label
    with _connect(path) as db:
        db.executescript(SCHEMA)
        db.execute("BEGIN IMMEDIATE")
        try:
            p = report.provenance
            cursor = db.execute(
                "INSERT INTO runs (utc_time, name, spec_sha256, data_sha256, verdict, exit_code,"
                " tool_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    p.utc_time,
                    report.name,
                    p.spec_sha256,
                    p.data_sha256,
                    report.verdict.status,
                    report.verdict.exit_code,
                    p.tool_version,
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            rows = []
            for scan in report.scans:
                for f in scan.findings:
                    key = subgroup_key(f.subgroup, f.group)
                    rows.append(
                        (
                            run_id,
                            scan.id,
                            scan.type,
                            key,
                            f.label,
                            labels.get((scan.id, key)),
                            f.statistic.value,
                            f.p_value,
                            None if f.significant is None else int(f.significant),
                            f.effect.metric,
                            f.effect.inside,
                            f.effect.reference,
                        )
                    )
            db.executemany("INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return run_id


@dataclass(frozen=True)
class Point:
    """One finding in one run."""

    run_id: int
    utc_time: str
    statistic: float | None
    p_value: float | None
    significant: bool | None
    inside: float | None
    reference: float | None
    baseline_label: str | None


@dataclass(frozen=True)
class Trend:
    """One finding (scan and subgroup) across the runs that reported it."""

    name: str
    scan_id: str
    label: str
    metric: str | None
    points: tuple[Point, ...]


def read_history(path: Path, spec: str | None = None) -> list[Trend]:
    """The trend of every finding in the history, per audit name (only ``spec`` if given)."""
    if not path.is_file():
        raise DataError(
            f"no history file at {path}", field="PATH", hint="set output.history in a spec"
        )
    with _connect(path) as db:
        db.executescript(SCHEMA)
        query = (
            "SELECT r.name, f.scan_id, f.subgroup_key, f.label, f.effect_metric, r.id, "
            "r.utc_time, f.statistic, f.p_value, f.significant, f.effect_inside, "
            "f.effect_reference, f.baseline_label FROM findings f JOIN runs r ON r.id = f.run_id"
        )
        args: tuple[str, ...] = ()
        if spec is not None:
            query += " WHERE r.name = ?"
            args = (spec,)
        rows = db.execute(query + " ORDER BY r.name, f.scan_id, f.subgroup_key, r.id", args)
        trends: dict[tuple[str, str, str], list[tuple[str, str | None, Point]]] = {}
        for row in rows.fetchall():
            point = Point(
                run_id=row[5],
                utc_time=row[6],
                statistic=row[7],
                p_value=row[8],
                significant=None if row[9] is None else bool(row[9]),
                inside=row[10],
                reference=row[11],
                baseline_label=row[12],
            )
            trends.setdefault((row[0], row[1], row[2]), []).append((row[3], row[4], point))
    return [
        Trend(
            name=name,
            scan_id=scan_id,
            label=items[-1][0],
            metric=items[-1][1],
            points=tuple(p for _, _, p in items),
        )
        for (name, scan_id, _), items in trends.items()
    ]


def run_count(path: Path) -> int:
    with _connect(path) as db:
        db.executescript(SCHEMA)
        return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


__all__ = ["Point", "Trend", "append_run", "read_history", "run_count", "subgroup_key"]
