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

A spec with ``monitor:`` also keeps its evidence here (no data rows: a few numbers per
monitored subgroup): ``monitor_state`` holds each process's state per spec name (read, updated
with the run's data and written back inside the run's own ``BEGIN IMMEDIATE`` transaction, so
two runs appending at once each update the other's result, never the same old state), and
``monitor_runs`` one row per process per run (label, e-value, anytime p-value, threshold,
alarm) for ``audit history``.

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
CREATE TABLE IF NOT EXISTS monitor_state (
    name TEXT NOT NULL,
    process_key TEXT NOT NULL,
    scan_id TEXT NOT NULL,
    scan_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    subgroup_json TEXT NOT NULL,
    state_json TEXT NOT NULL,
    first_run_id INTEGER,
    PRIMARY KEY (name, process_key)
);
CREATE TABLE IF NOT EXISTS monitor_runs (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    process_key TEXT NOT NULL,
    scan_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    subgroup_json TEXT NOT NULL,
    label TEXT NOT NULL,
    e_value REAL NOT NULL,
    p_value_anytime REAL NOT NULL,
    threshold REAL NOT NULL,
    alarm TEXT
);
CREATE INDEX IF NOT EXISTS monitor_runs_run ON monitor_runs(run_id);
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


@dataclass(frozen=True)
class StoredProcess:
    """One monitored process of a spec name as ``monitor_state`` keeps it."""

    key: str  # process_key: "<scan>|subgroup|<subgroup_key>" or "<scan>|scan"
    scan_id: str
    scan_type: str
    kind: str  # subgroup, or scan (the scan's open process)
    # the subgroup (scan process: the one the next run bets on, {} for none yet)
    subgroup: dict[str, list[str]]
    state_json: str  # fairscan.engine.evidence.ProcessState.to_json()
    first_run_id: int | None  # the run that registered it (None: the run being appended)


@dataclass(frozen=True)
class Ledger:
    """What the history holds for one spec name's monitor, read when a run appends."""

    run_index: int  # the run being appended: 1 + the name's earlier monitored runs
    processes: tuple[StoredProcess, ...]  # in registration order


@dataclass(frozen=True)
class MonitorRow:
    """One process's result in one run (a ``monitor_runs`` row)."""

    process_key: str
    scan_id: str
    kind: str
    subgroup: dict[str, list[str]]
    label: str
    e_value: float
    p_value_anytime: float
    threshold: float
    alarm: str | None  # evidence, onset, or None


@dataclass(frozen=True)
class LedgerUpdate:
    """What a monitored run writes back: every process's new state, and its row for the run."""

    processes: tuple[StoredProcess, ...]
    rows: tuple[MonitorRow, ...]


# a monitored run: (the ledger read inside the transaction) -> the report with its monitor
# object and gated verdict, and what to write back
MonitorStep = Callable[[Ledger], tuple[AuditReport, LedgerUpdate]]


def process_key(scan_id: str, kind: str, subgroup: dict[str, list[str]] | None = None) -> str:
    """A monitored process's identity across runs (the subgroup in canonical order)."""
    if kind == "scan":
        return f"{scan_id}|scan"
    return f"{scan_id}|subgroup|{subgroup_key(subgroup or {}, None)}"


def append_run(path: Path, report: AuditReport) -> int:
    """Append ``report`` to the history at ``path`` (created if absent); the run's id."""
    return _append(path, report, None, None)[0]


def append_monitored_run(
    path: Path,
    report: AuditReport,
    step: MonitorStep,
    before_commit: Callable[[AuditReport], None],
) -> tuple[int, AuditReport]:
    """Append a monitored run: inside one ``BEGIN IMMEDIATE`` transaction, read the ledger of
    ``report.name``, let ``step`` update it with the run (the report it returns is the one
    recorded), write it back, call ``before_commit`` (the report files: a run whose reports
    cannot be written leaves the history as it was), then commit. The run's id and report."""
    return _append(path, report, step, before_commit)


def _append(
    path: Path,
    report: AuditReport,
    step: MonitorStep | None,
    before_commit: Callable[[AuditReport], None] | None,
) -> tuple[int, AuditReport]:
    with _connect(path) as db:
        _patiently(lambda: db.executescript(SCHEMA))
        _patiently(lambda: db.execute("BEGIN IMMEDIATE"))
        try:
            _add_rows_column(db)
            update = None
            if step is not None:
                report, update = step(_read_ledger(db, path, report.name))
            run_id = _insert_run(db, report)
            if update is not None:
                _write_ledger(db, report.name, run_id, update)
            if before_commit is not None:
                before_commit(report)
            _patiently(lambda: db.execute("COMMIT"))  # waits for readers to let go
        except BaseException:
            # SQLite ends the transaction itself on some errors (a full disk): a ROLLBACK then
            # fails, and its "no transaction is active" would hide what went wrong
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return run_id, report


def _insert_run(db: sqlite3.Connection, report: AuditReport) -> int:
    """The run's ``runs`` row and its ``findings`` rows; the run's id."""
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
    return run_id


def _stored_subgroup(text: object) -> dict[str, list[str]] | None:
    """A subgroup read back from its JSON, or None when it is not attribute -> [labels]."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values()
    ):
        return None
    return {str(k): list(v) for k, v in value.items()}


def _read_ledger(db: sqlite3.Connection, path: Path, name: str) -> Ledger:
    """The monitor's processes of spec ``name`` and this run's index (inside the transaction)."""
    found = db.execute(
        "SELECT COUNT(DISTINCT m.run_id) FROM monitor_runs m JOIN runs r ON r.id = m.run_id "
        "WHERE r.name = ?",
        (name,),
    ).fetchone()[0]
    processes = []
    query = (
        "SELECT process_key, scan_id, scan_type, kind, subgroup_json, state_json, first_run_id,"
        " rowid FROM monitor_state WHERE name = ? ORDER BY rowid"
    )
    for row in db.execute(query, (name,)).fetchall():
        subgroup = _stored_subgroup(row[4])
        texts = all(isinstance(v, str) for v in row[:6])
        if subgroup is None or not texts or row[3] not in ("subgroup", "scan"):
            raise DataError(
                f"history file {path}: monitor_state row {row[7]} ({row[0]!r}) is not a "
                "monitored process fairscan wrote",
                field=FIELD,
                hint="the file was edited or written by another tool: delete that row (the "
                "process then starts again), or point output.history at another file",
            )
        processes.append(
            StoredProcess(
                key=row[0],
                scan_id=row[1],
                scan_type=row[2],
                kind=row[3],
                subgroup=subgroup,
                state_json=row[5],
                first_run_id=row[6] if isinstance(row[6], int) else None,
            )
        )
    return Ledger(run_index=int(found) + 1, processes=tuple(processes))


def _write_ledger(db: sqlite3.Connection, name: str, run_id: int, update: LedgerUpdate) -> None:
    """Every process's state (updated in place: the registration order is the rowid's) and
    its row for this run."""
    db.executemany(
        "INSERT INTO monitor_state (name, process_key, scan_id, scan_type, kind, subgroup_json,"
        " state_json, first_run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name,"
        " process_key) DO UPDATE SET subgroup_json = excluded.subgroup_json, state_json ="
        " excluded.state_json",
        [
            (
                name,
                p.key,
                p.scan_id,
                p.scan_type,
                p.kind,
                json.dumps(p.subgroup, ensure_ascii=False),
                p.state_json,
                run_id if p.first_run_id is None else p.first_run_id,
            )
            for p in update.processes
        ],
    )
    db.executemany(
        "INSERT INTO monitor_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                r.process_key,
                r.scan_id,
                r.kind,
                json.dumps(r.subgroup, ensure_ascii=False),
                r.label,
                r.e_value,
                r.p_value_anytime,
                r.threshold,
                r.alarm,
            )
            for r in update.rows
        ],
    )


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
    """One monitored process in one run (a ``monitor_runs`` row, with its run)."""

    run_index: int  # 1 = the spec name's first monitored run
    run_id: int
    utc_time: str
    subgroup: dict[str, list[str]]  # the scan process: the subgroup bet on in that run
    label: str
    e_value: float
    p_value_anytime: float
    threshold: float
    alarm: str | None


@dataclass(frozen=True)
class MonitorSeries:
    """One monitored process (keyed by its identity, not its label) over the runs."""

    name: str
    scan_id: str
    kind: str  # subgroup, or scan (the scan's open process)
    process_key: str
    points: tuple[MonitorPoint, ...]

    @property
    def subgroup(self) -> dict[str, list[str]]:
        """The process's subgroup (the scan process: the one bet on in its latest run)."""
        return self.points[-1].subgroup if self.points else {}


_MONITOR_QUERY = (
    "SELECT m.rowid, r.name, m.scan_id, m.kind, m.process_key, r.id, r.utc_time, "
    "m.subgroup_json, m.label, m.e_value, m.p_value_anytime, m.threshold, m.alarm "
    "FROM monitor_runs m JOIN runs r ON r.id = m.run_id"
)
_MONITOR_COLUMNS = {
    "run_id", "process_key", "scan_id", "kind", "subgroup_json", "label", "e_value",
    "p_value_anytime", "threshold", "alarm",
}  # fmt: skip
_LABELS = ("new", "persists", "resolved", "inconclusive")


def _monitor_problem(row: tuple[object, ...]) -> str | None:
    """What is wrong with one row of the monitor query (None when fairscan could have written it)."""
    for name, value in (("scan_id", row[2]), ("process_key", row[4]), ("utc_time", row[6])):
        if not isinstance(value, str):
            return f"{name} is {value!r}, not a text"
    if row[3] not in ("subgroup", "scan"):
        return f"kind is {row[3]!r}, not subgroup or scan"
    if row[8] not in _LABELS:
        return f"label is {row[8]!r}, not one of {sorted(_LABELS)}"
    if _stored_subgroup(row[7]) is None:
        return f"subgroup_json is {row[7]!r}, not a mapping of attribute to values"
    numbers = {"e_value": row[9], "p_value_anytime": row[10], "threshold": row[11]}
    for name, value in numbers.items():
        if value is None or not _number(value) or not math.isfinite(cast("float", value)):
            return f"{name} is {value!r}, not a finite number"
        if cast("float", value) < 0:
            return f"{name} is {value!r}, below 0"
    if not 0.0 <= cast("float", row[10]) <= 1.0:
        return f"p_value_anytime is {row[10]!r}, outside [0, 1]"
    if row[12] not in (None, "evidence", "onset"):
        return f"alarm is {row[12]!r}, not evidence, onset or NULL"
    return None


def read_monitor(path: Path, spec: str | None = None) -> list[MonitorSeries]:
    """Every monitored process's evidence over the runs, per spec name (only ``spec`` if
    given), read-only. A history without the monitor's tables (written before them, or never
    monitored) has none."""
    if not path.is_file():
        raise DataError(
            f"no history file at {path}", field="PATH", hint="set output.history in a spec"
        )
    query, args = _MONITOR_QUERY, cast("tuple[str, ...]", ())
    if spec is not None:
        query, args = query + " WHERE r.name = ?", (spec,)
    with _connect(path, read_only=True) as db:
        _check_tables(db, path)
        if not _columns_of(db, "monitor_runs") >= _MONITOR_COLUMNS:
            return []
        rows = _patiently(lambda: db.execute(query + " ORDER BY r.id, m.rowid", args).fetchall())
    index: dict[tuple[str, int], int] = {}  # (name, run id) -> run index
    counted: dict[str, int] = {}  # name -> its monitored runs so far
    series: dict[tuple[str, str], list[MonitorPoint]] = {}
    kinds: dict[tuple[str, str], tuple[str, str]] = {}
    for row in rows:
        if (problem := _monitor_problem(row)) is not None:
            raise DataError(
                f"history file {path}: monitor_runs row {row[0]} (run {row[5]}): {problem}",
                field="PATH",
                hint="the file was edited or written by another tool: fix or delete that row "
                "(e.g. with the sqlite3 shell), or give another history",
            )
        r = cast("tuple[Any, ...]", row)
        if (r[1], r[5]) not in index:
            counted[r[1]] = counted.get(r[1], 0) + 1
            index[(r[1], r[5])] = counted[r[1]]
        run_index = index[(r[1], r[5])]
        point = MonitorPoint(
            run_index=run_index,
            run_id=r[5],
            utc_time=r[6],
            subgroup=_stored_subgroup(r[7]) or {},
            label=r[8],
            e_value=float(r[9]),
            p_value_anytime=float(r[10]),
            threshold=float(r[11]),
            alarm=r[12],
        )
        series.setdefault((r[1], r[4]), []).append(point)
        kinds[(r[1], r[4])] = (r[2], r[3])
    return [
        MonitorSeries(name, kinds[(name, key)][0], kinds[(name, key)][1], key, tuple(points))
        for (name, key), points in series.items()
    ]


def run_count(path: Path) -> int:
    """The runs in the history at ``path`` (read-only)."""
    with _connect(path, read_only=True) as db:
        _check_tables(db, path)
        return int(_patiently(lambda: db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]))


__all__ = [
    "Ledger",
    "LedgerUpdate",
    "MonitorPoint",
    "MonitorRow",
    "MonitorSeries",
    "Point",
    "Run",
    "StoredProcess",
    "Trend",
    "append_monitored_run",
    "append_run",
    "process_key",
    "read_history",
    "read_monitor",
    "read_runs",
    "run_count",
    "subgroup_key",
]
