"""The audit history against hostile files (issue 34): reads that never write, rows validated on
read, the page written to its own path, every query and lock wait interruptible and bounded,
and a full disk named as such."""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import fairscan.run.history as history
from fairscan.cli import app
from fairscan.errors import DataError
from fairscan.report.models import AuditReport
from fairscan.report.read import read_report
from fairscan.run.history import SCHEMA, append_run, read_history, run_count

ROOT = Path(__file__).resolve().parents[2]
AUDIT = Path(sys.executable).with_name("audit")
# A missed signal would sit in SQLite's busy handler for the whole lock wait (60 s): half of it
# is far above any load, and no budget a busy machine can break (issue 38)
LOCK_WAIT_BOUND = 30.0
FINDING = "(1, 's', 'fpr_scan', 'k', 'lab', NULL, 1.0, 0.5, 0, 'fpr', 0.1, 0.2)"


@pytest.fixture(scope="module")
def report() -> AuditReport:
    return read_report(ROOT / "tests" / "report" / "data" / "v1_compas.json")


def _history(path: Path, run: str = "(1, '2026-01-01T00:00:00', 'a', 'x', 'y', 'clean', 0, '1')",
             finding: str = FINDING, schema: str = SCHEMA) -> Path:  # fmt: skip
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(schema)
        db.execute(f"INSERT INTO runs VALUES {run}")
        db.execute(f"INSERT INTO findings VALUES {finding}")
        db.commit()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the page goes to its own path; reads never write ------------------------------------------


def test_html_given_the_history_s_own_path_is_refused(tmp_path: Path) -> None:
    """`audit history h.db --html h.db` wrote the page over the history it read."""
    path = _history(tmp_path / "h.db")
    before = _digest(path)
    result = CliRunner().invoke(app, ["history", str(path), "--html", str(path)])
    assert result.exit_code == 2, result.output
    assert "--html" in result.output and "the history file itself" in result.output
    assert _digest(path) == before


def test_html_given_another_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = _history(tmp_path / "h.db")
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE t (x)")
        db.commit()
    before = _digest(other)
    result = CliRunner().invoke(app, ["history", str(path), "--html", str(other)])
    assert result.exit_code == 2 and "an SQLite file" in result.output
    assert _digest(other) == before


def test_reading_never_writes_the_file(tmp_path: Path) -> None:
    """Reading a history used to create its tables in any SQLite file it was pointed at."""
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE t (x)")
        db.commit()
    before = _digest(other)
    for read in (read_history, run_count):
        with pytest.raises(DataError, match="is not a fairscan history"):
            read(other)
    assert _digest(other) == before
    path = _history(tmp_path / "h.db")
    before = _digest(path)
    assert read_history(path)[0].points[0].p_value == pytest.approx(0.5)
    assert run_count(path) == 1 and _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db", "other.db"]  # no journal


def test_a_read_only_history_can_be_read(tmp_path: Path) -> None:
    path = _history(tmp_path / "h.db")
    path.chmod(0o444)
    tmp_path.chmod(0o555)  # not even a journal could be created
    try:
        assert run_count(path) == 1
    finally:
        tmp_path.chmod(0o755)


# --- rows validated on read ---------------------------------------------------------------------

LOOSE = SCHEMA.replace(" NOT NULL", "")  # a history written by another tool


@pytest.mark.parametrize(
    ("run", "finding", "problem"),
    [
        (None, FINDING.replace("0.5,", "'abc',"), "p_value is 'abc', not a number"),
        (None, FINDING.replace("0.5,", "1.5,"), "p_value is 1.5, outside [0, 1]"),
        (None, FINDING.replace("1.0,", "x'00',"), "statistic is b'\\x00', not a number"),
        (None, FINDING.replace("'lab'", "NULL"), "label is None, not a text"),
        (None, FINDING.replace(" 0, 'fpr'", " 7, 'fpr'"), "significant is 7, not 0 or 1"),
        ("(1, NULL, 'a', 'x', 'y', 'clean', 0, '1')", FINDING, "utc_time is None, not a text"),
    ],
)
def test_bad_rows_are_an_error_naming_the_file_and_the_row(
    tmp_path: Path, run: str | None, finding: str, problem: str
) -> None:
    path = tmp_path / "h.db"
    if run is None:
        _history(path, finding=finding, schema=LOOSE)
    else:
        _history(path, run=run, finding=finding, schema=LOOSE)
    result = CliRunner().invoke(app, ["history", str(path)])
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    text = " ".join(result.output.split())
    assert f"history file {path}: findings row 1 (run 1): {problem}" in text


# --- interruptible and bounded -----------------------------------------------------------------

# A `runs` that never ends: the history query joins it for ever (only SIGKILL ended it).
ENDLESS = """
CREATE TABLE findings (run_id, scan_id, scan_type, subgroup_key, label, baseline_label,
    statistic, p_value, significant, effect_metric, effect_inside, effect_reference);
INSERT INTO findings VALUES (1, 's', 'fpr_scan', 'k', 'lab', NULL, 1.0, 0.5, 0, 'fpr', 0.1, 0.2);
CREATE VIEW runs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
    SELECT x AS id, 't' AS utc_time, 'n' AS name FROM c;
"""


def _signal_history(path: Path, signum: int, cpu: float) -> Any:
    """``audit history PATH``, signalled once it has opened the history and used ``cpu`` more
    seconds of CPU (not a fixed sleep, which a loaded machine spends still starting up)."""
    # here, not at the top: a child interpreter imports this module with tests/run alone on its
    # path (test_a_failing_write_names_the_failure_not_a_rollback)
    from signal_probe import cpu_seconds, stop, wait_for_cpu, wait_for_handlers, wait_for_open

    process = subprocess.Popen(
        [str(AUDIT), "history", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        start_new_session=True,
    )
    wait_for_handlers(process)
    wait_for_open(process, path)
    wait_for_cpu(process, (cpu_seconds(process.pid) or 0.0) + cpu)
    return stop(process, signum)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs POSIX signals")
@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_long_history_query_stops_within_2s(
    tmp_path: Path, signum: int, expected: int
) -> None:
    path = tmp_path / "endless.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(ENDLESS)
    stopped = _signal_history(path, signum, cpu=1.0)  # into the endless query
    assert stopped.returncode == expected, stopped.stderr
    assert "Traceback" not in stopped.stderr and "internal error" not in stopped.stderr
    # the 2 s as CPU seconds (tests/support/signal_probe.py: PROMPT_CPU_SECONDS)
    assert stopped.cpu < 2.0, f"{stopped.cpu:.2f} s of CPU after the signal"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Another connection holding the history's exclusive lock (a run stuck mid-append)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")


def test_a_locked_history_is_an_error_after_the_lock_timeout(
    tmp_path: Path, report: AuditReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _history(tmp_path / "h.db")
    monkeypatch.setattr(history, "LOCK_SECONDS", 0.3)
    with _locked(path):
        for step in (lambda: read_history(path), lambda: append_run(path, report)):
            with pytest.raises(DataError, match="locked by another run; retry"):
                step()
    assert run_count(path) == 1
    append_run(path, report)  # once the lock is released
    assert run_count(path) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs POSIX signals")
def test_ctrl_c_while_waiting_for_a_locked_history_stops_within_2s(tmp_path: Path) -> None:
    """The wait for the lock used to sit in SQLite's busy handler for up to 60 s."""
    path = _history(tmp_path / "h.db")
    with _locked(path):
        stopped = _signal_history(path, signal.SIGINT, cpu=0.0)  # waiting for the lock
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert stopped.wall < LOCK_WAIT_BOUND, f"took {stopped.wall:.2f} s"


# --- a full disk --------------------------------------------------------------------------------


def _append_in_child(path: str, report_json: str, limit: int) -> None:
    """Append under a file-size limit: SQLite's write fails part-way through the transaction
    and SQLite rolls it back itself (the case whose ROLLBACK said "no transaction is active")."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    report = AuditReport.model_validate_json(report_json)
    appended = 0
    try:
        for _ in range(200):
            append_run(Path(path), report)
            appended += 1
    except DataError as error:
        sys.stdout.write(f"{appended}\n{error}")


def test_a_failing_write_names_the_failure_not_a_rollback(
    tmp_path: Path, report: AuditReport
) -> None:
    path = _history(tmp_path / "h.db")
    limit = path.stat().st_size + 100  # the next page added to the file is cut short
    code = (
        "import sys; sys.path[:0] = [sys.argv[1]]; "
        "from test_history_hostile import _append_in_child as a; "
        "a(sys.argv[2], sys.stdin.read(), int(sys.argv[3]))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(Path(__file__).parent),
            str(path),
            str(limit),
        ],
        input=report.model_dump_json(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "cannot use the history file" in done.stdout, done.stdout + done.stderr
    assert "no transaction is active" not in done.stdout
    # the appends before the page that no longer fits (free space in the schema's pages),
    # and nothing of the failed one
    appended = int(done.stdout.split("\n", 1)[0])
    assert run_count(path) == 1 + appended


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (needs root and mount(2); skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_says_disk_full(small_disk: Path, report: AuditReport) -> None:
    path = small_disk / "h.db"
    with pytest.raises(DataError) as raised:
        for _ in range(1000):
            append_run(path, report)
    text = str(raised.value)
    assert "disk full" in text and "no transaction is active" not in text, text
    assert run_count(path) >= 1
