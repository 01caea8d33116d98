"""The audit history (``output.history: PATH``): every run appended to one SQLite file.

Why SQLite: it is in Python's standard library (no extra dependency), a single file that a CI
cache or an artifact store can keep, and its transactions make concurrent appends safe: two
runs appending at once each take the database's write lock in turn (``BEGIN IMMEDIATE``, tried
again while the other holds it), so nothing is lost or half-written. A directory of Parquet files would suit
object storage, but needs pyarrow and a naming scheme to avoid two writers colliding; one
SQLite file per team or pipeline is the simpler contract.

Each run is one ``runs`` row (time, spec name and hash, data hash, verdict, exit code, rows
audited: a column older files gain on their next append) and one ``findings`` row per finding
(scan, subgroup key and label, baseline label, statistic, p-value as the report shows it,
significant, effect inside and reference), plus, with a baseline, one per re-tested baseline
finding that is not a finding of the run (``resolved``, ``inconclusive``): a trend then shows
that run rather than joining the runs around it.

Reads open the file read-only and check its tables and every row they use (a history edited or
written by another tool is an error naming the file and the row, never an internal error). Every
statement is interruptible (a progress handler lets Ctrl-C and SIGTERM in) and every wait for
another run's lock is bounded (:data:`LOCK_SECONDS`, then "locked by another run; retry").
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

from fairscan.errors import DataError
from fairscan.report.models import AuditReport, BaselineSide
from fairscan.report.text import headline_p

T = TypeVar("T")

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
# How long a run waits for another run's lock on the history before giving up with an error.
LOCK_SECONDS = 30.0
# SQLite's own busy wait per attempt; between attempts the wait sleeps in Python, where Ctrl-C
# and SIGTERM are handled (SQLite's busy handler sleeps in C and would hold them back).
_ATTEMPT_SECONDS = 0.05
# SQLite virtual-machine steps between two calls of the progress handler: a Python call, where
# a pending Ctrl-C or SIGTERM raises, which aborts the running statement (SQLITE_INTERRUPT).
_PROGRESS_STEPS = 10_000
FIELD = "output.history"


def _let_signals_in() -> int:
    """The progress handler: running Python code lets a pending signal's handler raise, and
    SQLite then aborts the statement ("interrupted"), turned back into the interrupt below."""
    return 0


def _history_error(path: Path, error: sqlite3.Error, field: str) -> BaseException:
    """What a failing SQLite call means for the user: an interrupt, a lock held too long, a full
    disk, or a file that is not a history."""
    code = getattr(error, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_INTERRUPT or str(error) == "interrupted":
        return KeyboardInterrupt()
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DataError(
            f"history file {path} is locked by another run; retry (waited {LOCK_SECONDS:g} s)",
            field=field,
            hint="retry once the other run has finished; a run that died holding the lock "
            "releases it when its process ends",
        )
    if code == sqlite3.SQLITE_FULL:
        return DataError(
            f"disk full: cannot write the history file {path}",
            field=field,
            hint="free space on that disk, or point output.history at another one",
        )
    return DataError(
        f"cannot use the history file {path}: {error}",
        field=field,
        hint="give the path of a fairscan history (an SQLite file), or a new file",
    )


def _busy(error: sqlite3.Error) -> bool:
    return getattr(error, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _patiently(step: Callable[[], T]) -> T:
    """``step()``, tried again while another run holds the lock, for up to LOCK_SECONDS."""
    deadline = time.monotonic() + LOCK_SECONDS
    while True:
        try:
            return step()
        except sqlite3.OperationalError as error:
            if not _busy(error) or time.monotonic() >= deadline:
                raise
        time.sleep(_ATTEMPT_SECONDS)  # Ctrl-C and SIGTERM are handled here


@contextmanager
def _connect(path: Path, *, read_only: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the history at ``path``: read-only (``mode=ro``: it never creates or
    changes the file) for reads; every statement interruptible and every lock wait bounded."""
    try:
        if read_only:
            target = "file:" + quote(str(path.resolve())) + "?mode=ro"
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            target = str(path)
        db = sqlite3.connect(target, timeout=_ATTEMPT_SECONDS, isolation_level=None, uri=read_only)
        with closing(db):
            db.set_progress_handler(_let_signals_in, _PROGRESS_STEPS)
            yield db
    except sqlite3.Error as error:
        # a read names the command's argument, an append the spec field
        raise _history_error(path, error, "PATH" if read_only else FIELD) from None


def subgroup_key(subgroup: dict[str, list[str]] | None, group: str | None) -> str:
    """One finding's identity across runs: its subgroup (sorted), or its group's name."""
    if subgroup is None:
        return f"group:{group}"
    return json.dumps({k: sorted(v) for k, v in sorted(subgroup.items())}, ensure_ascii=False)


def _side_key(side: BaselineSide, attributes: Mapping[str, object]) -> str:
    """The identity (as :func:`subgroup_key`) of a baseline comparison's side: a named group's
    side is ``{"group": [name]}`` (report/baseline.py), told apart from an attribute called
    ``group`` by the report's attributes."""
    values = side.subgroup.get("group")
    if (
        set(side.subgroup) == {"group"}
        and values
        and len(values) == 1
        and "group" not in attributes
    ):
        return subgroup_key(None, values[0])
    return subgroup_key(side.subgroup, None)


def _finding_rows(report: AuditReport, run_id: int) -> list[tuple[object, ...]]:
    """The run's ``findings`` rows: each finding with its p-value as the report shows it
    (adjusted where the scan adjusts), then every baseline re-test that is not a finding of
    this run (resolved, inconclusive) with its label, so a series shows that run instead of
    joining the runs around it."""
    labels: dict[tuple[str, str], str] = {}
    retests: dict[tuple[str, str], tuple[str, str, BaselineSide | None, str]] = {}
    if report.baseline is not None:
        for e in report.baseline.entries:
            side = e.after or e.before
            if side is not None:
                key = _side_key(side, report.attributes)
                labels[(e.scan_id, key)] = e.label
                retests[(e.scan_id, key)] = (e.scan_type, e.label, e.after, side.label or key)
    rows: list[tuple[object, ...]] = []
    metrics: dict[str, str] = {}
    for scan in report.scans:
        for f in scan.findings:
            key = subgroup_key(f.subgroup, f.group)
            metrics.setdefault(scan.id, f.effect.metric)
            retests.pop((scan.id, key), None)
            significant = None if f.significant is None else int(f.significant)
            rows.append(
                (run_id, scan.id, scan.type, key, f.label, labels.get((scan.id, key)),
                 f.statistic.value, headline_p(f), significant,
                 f.effect.metric, f.effect.inside, f.effect.reference)
            )  # fmt: skip
    for (scan_id, key), (scan_type, label, after, text) in retests.items():
        # the re-test's own figures (none where it could not be re-tested)
        score = p = rate = expected = significant = None
        if after is not None:
            score, p, rate, expected = after.score, after.p_value, after.rate, after.expected_rate
            significant = int(after.significant)
        rows.append(
            (run_id, scan_id, scan_type, key, text, label, score, p, significant,
             metrics.get(scan_id), rate, expected)
        )  # fmt: skip
    return rows


def _add_rows_column(db: sqlite3.Connection) -> None:
    """Give a history written before ``runs.rows`` existed that column (inside the append's
    transaction: two runs migrating at once cannot both add it)."""
    if "rows" not in _columns_of(db, "runs"):
        db.execute("ALTER TABLE runs ADD COLUMN rows INTEGER")


def append_run(path: Path, report: AuditReport) -> int:
    """Append ``report`` to the history at ``path`` (created if absent); the run's id."""
    with _connect(path) as db:
        _patiently(lambda: db.executescript(SCHEMA))
        _patiently(lambda: db.execute("BEGIN IMMEDIATE"))
        try:
            _add_rows_column(db)
            p = report.provenance
            cursor = db.execute(
                "INSERT INTO runs (utc_time, name, spec_sha256, data_sha256, verdict, exit_code,"
                " tool_version, rows) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    p.utc_time,
                    report.name,
                    p.spec_sha256,
                    p.data_sha256,
                    report.verdict.status,
                    report.verdict.exit_code,
                    p.tool_version,
                    p.rows_after_filter,
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            rows = _finding_rows(report, run_id)
            db.executemany("INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            _patiently(lambda: db.execute("COMMIT"))  # waits for readers to let go
        except BaseException:
            # SQLite ends the transaction itself on some errors (a full disk): a ROLLBACK then
            # fails, and its "no transaction is active" would hide what went wrong
            if db.in_transaction:
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
    subgroup_key: str = ""  # its identity with scan_id (the label text may change)


# The columns a read needs, per table: a file without them is not a fairscan history.
_COLUMNS = {
    "runs": {"id", "utc_time", "name"},
    "findings": {
        "run_id", "scan_id", "subgroup_key", "label", "baseline_label", "statistic",
        "p_value", "significant", "effect_metric", "effect_inside", "effect_reference",
    },
}  # fmt: skip
_QUERY = (
    "SELECT f.rowid, r.name, f.scan_id, f.subgroup_key, f.label, f.effect_metric, r.id, "
    "r.utc_time, f.statistic, f.p_value, f.significant, f.effect_inside, f.effect_reference, "
    "f.baseline_label FROM findings f JOIN runs r ON r.id = f.run_id"
)


def _columns_of(db: sqlite3.Connection, table: str) -> set[str]:
    def read() -> list[Any]:
        return db.execute(f"PRAGMA table_info({table})").fetchall()

    return {row[1] for row in _patiently(read)}


def _check_tables(db: sqlite3.Connection, path: Path) -> None:
    """A :class:`DataError` where the SQLite file at ``path`` is not a fairscan history."""
    for table, needed in _COLUMNS.items():
        columns = _columns_of(db, table)
        if not needed <= columns:
            raise DataError(
                f"{path} is not a fairscan history: its table {table!r} is missing or lacks "
                f"the columns {sorted(needed - columns)}",
                field="PATH",
                hint="give the file that output.history names (audit run writes it)",
            )


def _number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _row_problem(row: tuple[object, ...]) -> str | None:
    """What is wrong with one row of the read query (None when it is a valid finding)."""
    texts = {"name": row[1], "scan_id": row[2], "subgroup_key": row[3], "label": row[4]}
    texts["utc_time"] = row[7]
    for name, value in texts.items():
        if not isinstance(value, str):
            return f"{name} is {value!r}, not a text"
    for name, value in (("effect_metric", row[5]), ("baseline_label", row[13])):
        if value is not None and not isinstance(value, str):
            return f"{name} is {value!r}, not a text"
    numbers = {"statistic": row[8], "p_value": row[9], "effect_inside": row[11]}
    numbers["effect_reference"] = row[12]
    for name, value in numbers.items():
        if not _number(value):
            return f"{name} is {value!r}, not a number"
    p = row[9]
    if isinstance(p, int | float) and not 0.0 <= p <= 1.0:
        return f"p_value is {p!r}, outside [0, 1]"
    if row[10] not in (None, 0, 1):
        return f"significant is {row[10]!r}, not 0 or 1"
    return None


def _valid_rows(path: Path, rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """The rows, each checked: a history edited or written by another tool is an error naming
    the file and the row, never a wrong trend or an internal error (docs/ci.md)."""
    for row in rows:
        if (problem := _row_problem(row)) is not None:
            raise DataError(
                f"history file {path}: findings row {row[0]} (run {row[6]}): {problem}",
                field="PATH",
                hint="the file was edited or written by another tool: fix or delete that row "
                "(e.g. with the sqlite3 shell), or give another history",
            )
    return rows


def read_history(path: Path, spec: str | None = None) -> list[Trend]:
    """The trend of every finding in the history, per audit name (only ``spec`` if given).
    The file is opened read-only: reading never creates a table or changes a byte."""
    if not path.is_file():
        raise DataError(
            f"no history file at {path}", field="PATH", hint="set output.history in a spec"
        )
    query = _QUERY
    args: tuple[str, ...] = ()
    if spec is not None:
        query += " WHERE r.name = ?"
        args = (spec,)
    query += " ORDER BY r.name, f.scan_id, f.subgroup_key, r.id"
    with _connect(path, read_only=True) as db:
        _check_tables(db, path)
        rows = _valid_rows(path, _patiently(lambda: db.execute(query, args).fetchall()))
    trends: dict[tuple[str, str, str], list[tuple[str, str | None, Point]]] = {}
    for row in rows:  # checked by _valid_rows: texts, numbers or None, significant 0/1/None
        r = cast("tuple[Any, ...]", row)
        point = Point(
            run_id=r[6],
            utc_time=r[7],
            statistic=r[8],
            p_value=r[9],
            significant=None if r[10] is None else bool(r[10]),
            inside=r[11],
            reference=r[12],
            baseline_label=r[13],
        )
        trends.setdefault((r[1], r[2], r[3]), []).append((r[4], r[5], point))
    return [
        Trend(
            name=name,
            scan_id=scan_id,
            label=items[-1][0],
            metric=items[-1][1],
            points=tuple(p for _, _, p in items),
            subgroup_key=key,
        )
        for (name, scan_id, key), items in trends.items()
    ]


def _no_file(path: Path) -> DataError:
    return DataError(
        f"no history file at {path}", field="PATH", hint="set output.history in a spec"
    )


def _bad_row(path: Path, row: str, problem: str) -> DataError:
    return DataError(
        f"history file {path}: {row}: {problem}",
        field="PATH",
        hint="the file was edited or written by another tool: fix or delete that row "
        "(e.g. with the sqlite3 shell), or give another history",
    )


@dataclass(frozen=True)
class Run:
    """One audit run of the history (the page's table of runs)."""

    run_id: int
    utc_time: str
    name: str
    data_sha256: str
    rows: int | None  # None in histories written before the column existed
    verdict: str
    exit_code: int


_RUN_COLUMNS = {"id", "utc_time", "name", "data_sha256", "verdict", "exit_code"}


def _run_problem(row: tuple[object, ...]) -> str | None:
    for name, value in zip(("utc_time", "name", "data_sha256", "verdict"), row[1:5], strict=True):
        if not isinstance(value, str):
            return f"{name} is {value!r}, not a text"
    for name, value in (("exit_code", row[5]), ("rows", row[6])):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return f"{name} is {value!r}, not a whole number"
    if row[5] is None:
        return "exit_code is None, not a whole number"
    return None


def read_runs(path: Path, spec: str | None = None) -> list[Run]:
    """Every run in the history (only the audits named ``spec`` if given), oldest first; read-
    only. A history written before ``runs.rows`` existed reads with ``rows`` None."""
    if not path.is_file():
        raise _no_file(path)
    with _connect(path, read_only=True) as db:
        columns = _columns_of(db, "runs")
        if not columns >= _RUN_COLUMNS:
            raise DataError(
                f"{path} is not a fairscan history: its table 'runs' lacks the columns "
                f"{sorted(_RUN_COLUMNS - columns)}",
                field="PATH",
                hint="give the file that output.history names (audit run writes it)",
            )
        rows_column = "rows" if "rows" in columns else "NULL"
        query = (
            f"SELECT id, utc_time, name, data_sha256, verdict, exit_code, {rows_column} FROM runs"
            + (" WHERE name = ?" if spec is not None else "")
            + " ORDER BY id"
        )
        args = () if spec is None else (spec,)
        rows = _patiently(lambda: db.execute(query, args).fetchall())
    runs = []
    for row in rows:
        if (problem := _run_problem(row)) is not None:
            raise _bad_row(path, f"runs row {row[0]}", problem)
        runs.append(Run(row[0], row[1], row[2], row[3], row[6], row[4], row[5]))
    return runs


@dataclass(frozen=True)
class MonitorPoint:
    """One monitored process after one run (a ``monitor_runs`` row)."""

    run_id: int
    utc_time: str
    label: str
    e_value: float
    p_value_anytime: float
    threshold: float
    alarm: str | None  # "evidence" or "onset" when the process alarmed on this run


@dataclass(frozen=True)
class MonitorSeries:
    """One monitored process (a subgroup's evidence, or a scan's open process) over the runs,
    keyed by its identity (``process_key``: scan id and canonical subgroup), not its label."""

    name: str
    process_key: str
    scan_id: str
    kind: str
    subgroup: dict[str, list[str]]
    points: tuple[MonitorPoint, ...]


# monitor_runs as DESIGN35 defines it (written by the run's monitor step in its transaction)
_MONITOR_COLUMNS = {
    "run_id", "process_key", "scan_id", "kind", "subgroup_json", "label", "e_value",
    "p_value_anytime", "threshold", "alarm",
}  # fmt: skip
_MONITOR_LABELS = {"new", "persists", "resolved", "inconclusive"}
_MONITOR_QUERY = (
    "SELECT m.rowid, r.name, m.process_key, m.scan_id, m.kind, m.subgroup_json, m.label, "
    "m.e_value, m.p_value_anytime, m.threshold, m.alarm, r.id, r.utc_time "
    "FROM monitor_runs m JOIN runs r ON r.id = m.run_id"
)


def _mapping(text: object) -> dict[str, list[str]] | None:
    """A subgroup_json value as a mapping of attribute to values (None when it is not one)."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values()
    ):
        return None
    return value


def _monitor_problem(row: tuple[object, ...]) -> str | None:
    """What is wrong with one row of the monitor query (None when it is valid)."""
    texts = ("name", "process_key", "scan_id", "kind", "label")
    for name, value in zip(texts, (row[1], row[2], row[3], row[4], row[6]), strict=True):
        if not isinstance(value, str):
            return f"{name} is {value!r}, not a text"
    if not isinstance(row[12], str):
        return f"utc_time is {row[12]!r}, not a text"
    if row[4] not in ("subgroup", "scan"):
        return f"kind is {row[4]!r}, not subgroup or scan"
    if row[6] not in _MONITOR_LABELS:
        return f"label is {row[6]!r}, not one of {sorted(_MONITOR_LABELS)}"
    if _mapping(row[5]) is None:
        return f"subgroup_json is {row[5]!r}, not a mapping of attribute to values"
    numbers = {"e_value": row[7], "p_value_anytime": row[8], "threshold": row[9]}
    for name, value in numbers.items():
        if value is None or not _number(value) or not math.isfinite(cast("float", value)):
            return f"{name} is {value!r}, not a finite number"
        if cast("float", value) < 0:
            return f"{name} is {value!r}, below 0"
    if not 0.0 <= cast("float", row[8]) <= 1.0:
        return f"p_value_anytime is {row[8]!r}, outside [0, 1]"
    if row[10] not in (None, "evidence", "onset"):
        return f"alarm is {row[10]!r}, not evidence, onset or NULL"
    return None


def read_monitor_series(path: Path, spec: str | None = None) -> list[MonitorSeries]:
    """Every monitored process's evidence over the runs (only the audits named ``spec`` if
    given), read-only; a history without monitor tables (written before monitoring, or
    without a ``monitor:`` block) holds no evidence: an empty list."""
    if not path.is_file():
        raise _no_file(path)
    query = _MONITOR_QUERY + (" WHERE r.name = ?" if spec is not None else "")
    query += " ORDER BY r.name, m.process_key, r.id"
    args = () if spec is None else (spec,)
    with _connect(path, read_only=True) as db:
        columns = _columns_of(db, "monitor_runs")
        if not columns:
            return []
        _check_tables(db, path)
        if not columns >= _MONITOR_COLUMNS:
            raise DataError(
                f"{path} is not a fairscan history: its table 'monitor_runs' lacks the "
                f"columns {sorted(_MONITOR_COLUMNS - columns)}",
                field="PATH",
                hint="give the file that output.history names (audit run writes it)",
            )
        rows = _patiently(lambda: db.execute(query, args).fetchall())
    series: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in rows:
        if (problem := _monitor_problem(row)) is not None:
            raise _bad_row(path, f"monitor_runs row {row[0]} (run {row[11]})", problem)
        series.setdefault((row[1], row[2]), []).append(row)
    return [
        MonitorSeries(
            name=name,
            process_key=key,
            scan_id=items[-1][3],
            kind=items[-1][4],
            subgroup=cast("dict[str, list[str]]", _mapping(items[-1][5])),
            points=tuple(
                MonitorPoint(r[11], r[12], r[6], float(r[7]), float(r[8]), float(r[9]), r[10])
                for r in items
            ),
        )
        for (name, key), items in series.items()
    ]


def run_count(path: Path) -> int:
    """The runs in the history at ``path`` (read-only)."""
    with _connect(path, read_only=True) as db:
        _check_tables(db, path)
        return int(_patiently(lambda: db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]))


__all__ = [
    "MonitorPoint",
    "MonitorSeries",
    "Point",
    "Run",
    "Trend",
    "append_run",
    "read_history",
    "read_monitor_series",
    "read_runs",
    "run_count",
    "subgroup_key",
]
