"""The history's reads for the page (issue 35): runs with their rows (older files without the
column), every re-test label recorded, p-values as the report shows them, and the monitor
evidence (tables as DESIGN35 defines them; the monitor step writes them, these tests insert
rows directly)."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from pathlib import Path

import pytest

from fairscan.errors import DataError
from fairscan.report.models import BaselineComparison, BaselineEntry, BaselineSide
from fairscan.run.history import (
    SCHEMA,
    append_run,
    read_history,
    read_monitor,
    read_runs,
    subgroup_key,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from report_builders import finding, report, scan

OLD_RUN = "(1, '2026-01-01T00:00:00Z', 'compas-fpr', 'x', 'y', 'clean', 0, '0.1')"
MALE = {"sex": ["male"]}
FEMALE = {"sex": ["female"]}


def _old_history(path: Path) -> Path:
    """A history written before ``runs.rows`` existed (the schema as it was)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA)
        db.execute(f"INSERT INTO runs VALUES {OLD_RUN}")
        db.commit()
    return path


def test_rows_are_recorded_and_older_histories_migrate(tmp_path: Path) -> None:
    path = _old_history(tmp_path / "h.db")
    assert [r.rows for r in read_runs(path)] == [None]  # read without the column
    append_run(path, report(scan([finding(MALE)])))
    runs = read_runs(path)
    assert [r.rows for r in runs] == [None, 6172]
    assert runs[1].data_sha256 == "b" * 64 and runs[1].verdict == "findings"
    fresh = tmp_path / "new.db"
    append_run(fresh, report(scan([finding(MALE)])))
    assert [r.rows for r in read_runs(fresh, "compas-fpr")] == [6172]
    assert read_runs(fresh, "another") == []


def test_stored_p_value_is_the_adjusted_one_the_report_shows(tmp_path: Path) -> None:
    """Flag p-values were stored unadjusted (0.0222) while the report showed 0.0443."""
    path = tmp_path / "h.db"
    flagged = finding(MALE, p_value=0.0222, adjusted_p_value=0.0443, significant=True)
    append_run(path, report(scan([flagged, finding(FEMALE, p_value=0.3)])))
    points = {t.subgroup_key: t.points[0].p_value for t in read_history(path)}
    assert points[subgroup_key(MALE, None)] == pytest.approx(0.0443)
    assert points[subgroup_key(FEMALE, None)] == pytest.approx(0.3)  # none adjusted: as is


def _side(subgroup: dict[str, list[str]], p: float, significant: bool) -> BaselineSide:
    return BaselineSide(
        subgroup=subgroup, label="sex = male", score=3.0, p_value=p, rate=0.2,
        expected_rate=0.18, significant=significant,
    )  # fmt: skip


def _entry(label: str, before: BaselineSide | None, after: BaselineSide | None) -> BaselineEntry:
    return BaselineEntry(
        scan_id="fpr", scan_type="fpr_scan", label=label,  # type: ignore[arg-type]
        match="exact", similarity=1.0, before=before, after=after,
    )  # fmt: skip


def _with_baseline(entries: list[BaselineEntry], findings: list) -> object:
    r = report(scan(findings))
    r.baseline = BaselineComparison(
        baseline_path="b.json", baseline_name="compas-fpr", baseline_utc_time="2026-01-01",
        overlap_threshold=0.5, fail_on="new_significant", counts={}, new_significant=0,
        method="retest", scans_added=[], scans_removed=[], entries=entries,
    )  # fmt: skip
    return r


def test_resolved_and_inconclusive_retests_are_recorded(tmp_path: Path) -> None:
    """A run whose baseline finding re-tested resolved (or inconclusive) used to leave no row,
    so the trend joined the runs around it."""
    path = tmp_path / "h.db"
    group_side = BaselineSide(
        subgroup={"group": ["young"]}, label="young", score=None, p_value=None, rate=None,
        significant=False,
    )  # fmt: skip
    entries = [
        _entry("resolved", _side(MALE, 0.001, True), _side(MALE, 0.62, False)),
        _entry("inconclusive", group_side, None),
        _entry("persists", _side(FEMALE, 0.001, True), _side(FEMALE, 0.004, True)),
    ]
    current = finding(FEMALE, p_value=0.004, significant=True)
    append_run(path, _with_baseline(entries, [current]))  # type: ignore[arg-type]
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT subgroup_key, label, baseline_label, p_value, significant FROM findings"
        ).fetchall()
    assert sorted(rows) == sorted(
        [
            (subgroup_key(FEMALE, None), "sex = female", "persists", 0.004, 1),
            (subgroup_key(MALE, None), "sex = male", "resolved", 0.62, 0),
            (subgroup_key(None, "young"), "young", "inconclusive", None, None),
        ]
    )


def _monitor_history(path: Path, rows: list[str]) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA)  # the monitor tables included
        db.execute(f"INSERT INTO runs VALUES {OLD_RUN}")
        db.execute("INSERT INTO runs VALUES (2, '2026-01-08T00:00:00Z', 'compas-fpr', 'x', 'z',"
                   " 'findings', 1, '0.1')")  # fmt: skip
        for row in rows:
            db.execute(f"INSERT INTO monitor_runs VALUES {row}")
        db.commit()
    return path


KEY = 'fpr|subgroup|{"sex":["male"]}'
ROW1 = f"""(1, '{KEY}', 'fpr', 'subgroup', '{{"sex":["male"]}}', 'new', 1.0, 1.0, 2100.0, NULL)"""
ROW2 = f"""(2, '{KEY}', 'fpr', 'subgroup', '{{"sex":["male"]}}', 'persists', 3e4, 3.3e-5, 2100.0,
    'evidence')"""
SCAN = "(2, 'fpr|scan', 'fpr', 'scan', '{}', 'inconclusive', 0.5, 1.0, 2100.0, NULL)"


def test_monitor_series_read_per_process_identity(tmp_path: Path) -> None:
    path = _monitor_history(tmp_path / "h.db", [ROW2, SCAN, ROW1])
    series = {s.process_key: s for s in read_monitor(path)}
    male = series[KEY]
    assert male.subgroup == MALE and male.kind == "subgroup" and male.scan_id == "fpr"
    assert [(p.run_id, p.label, p.alarm) for p in male.points] == [
        (1, "new", None),
        (2, "persists", "evidence"),
    ]
    assert male.points[1].e_value == pytest.approx(3e4)
    assert male.points[1].utc_time == "2026-01-08T00:00:00Z"
    assert series["fpr|scan"].kind == "scan" and series["fpr|scan"].subgroup == {}
    assert read_monitor(path, "another") == []


def test_a_history_without_monitor_tables_holds_no_evidence(tmp_path: Path) -> None:
    path = _old_history(tmp_path / "h.db")
    before = path.read_bytes()
    assert read_monitor(path) == []
    assert path.read_bytes() == before  # read-only: no table created


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (ROW1.replace("'new'", "'great'"), "label is 'great', not one of"),
        (ROW1.replace("1.0, 1.0,", "'x', 1.0,"), "e_value is 'x', not a finite number"),
        (ROW1.replace("1.0, 1.0,", "1.0, 1.5,"), "p_value_anytime is 1.5, outside [0, 1]"),
        (ROW1.replace("NULL)", "'loud')"), "alarm is 'loud', not evidence, onset or NULL"),
        (ROW1.replace('\'{"sex":["male"]}\'', "'[1]'"), "subgroup_json is '[1]', not a mapping"),
    ],
)
def test_bad_monitor_rows_are_an_error_naming_the_row(
    tmp_path: Path, row: str, problem: str
) -> None:
    path = _monitor_history(tmp_path / "h.db", [row])
    with pytest.raises(DataError) as caught:
        read_monitor(path)
    assert f"history file {path}: monitor_runs row 1 (run 1): {problem}" in str(caught.value)


def test_bad_run_rows_are_an_error_naming_the_row(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA.replace(" NOT NULL", ""))
        db.execute("INSERT INTO runs VALUES (1, 't', 'n', 'x', NULL, 'clean', 0, '1')")
        db.commit()
    with pytest.raises(DataError, match="runs row 1: data_sha256 is None, not a text"):
        read_runs(path)


def test_history_command_prints_each_monitored_subgroup_s_evidence(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fairscan.cli import app

    path = _monitor_history(tmp_path / "h.db", [ROW1, ROW2, SCAN])
    result = CliRunner().invoke(app, ["history", str(path)])
    assert result.exit_code == 0, result.output
    assert "monitor compas-fpr / fpr: evidence for sex = male" in result.stdout
    assert "evidence 30,000 (alarm threshold 2,100)" in result.stdout
    assert "anytime p-value 3.3e-05  [persists]  ALARM (evidence)" in result.stdout
    assert "monitor compas-fpr / fpr: evidence for the open scan" in result.stdout
