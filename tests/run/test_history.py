"""The audit history (`output.history`, `audit history`): appends, concurrency, trends."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from fairscan.cli import app
from fairscan.report.models import AuditReport
from fairscan.run.execute import run_audit
from fairscan.run.history import append_run, read_history, run_count
from fairscan.run.options import RunOptions


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, reaudit_data: ModuleType) -> dict[str, Path]:
    """The baseline, then the retrain and the fixed model against it, with a history."""
    root = tmp_path_factory.mktemp("history")
    specs = reaudit_data.write(root, replicates=19)
    for spec in specs.values():
        text = spec.read_text(encoding="utf-8")
        spec.write_text(
            text.replace("formats: [json, markdown]}", "formats: [json], history: audits.sqlite}"),
            encoding="utf-8",
        )
    run_audit(specs["baseline"], RunOptions(workers=1))
    baseline = root / "baseline" / "credit-reaudit.json"
    for name in ("retrain", "fixed"):
        run_audit(specs[name], RunOptions(workers=1, baseline=baseline))
    return {"root": root, "history": root / "audits.sqlite", "baseline": baseline}


def test_every_run_is_appended_with_its_findings(runs: dict[str, Path]) -> None:
    assert run_count(runs["history"]) == 3
    trends = read_history(runs["history"])
    fpr = next(t for t in trends if t.scan_id == "fpr" and "male" in t.label)
    assert fpr.label == "sex = male and education in {high school, university}"
    # baseline, retrain, and the fixed model's re-test (it used to leave no row: the trend
    # joined over it)
    assert [p.significant for p in fpr.points] == [True, True, False]
    assert [p.baseline_label for p in fpr.points] == [None, "persists", "resolved"]
    assert fpr.points[0].p_value is not None and fpr.points[0].inside is not None
    assert read_history(runs["history"], "another-spec") == []


def test_resolved_label_is_kept_for_the_baseline_finding(runs: dict[str, Path]) -> None:
    with sqlite3.connect(runs["history"]) as db:
        labels = [r[0] for r in db.execute("SELECT baseline_label FROM findings")]
    assert "persists" in labels and "resolved" in labels


def test_history_command_prints_trends_and_writes_html(runs: dict[str, Path]) -> None:
    page = runs["root"] / "history.html"
    result = CliRunner().invoke(
        app, ["history", str(runs["history"]), "--spec", "credit-reaudit", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    assert "credit-reaudit / fpr: sex = male and education in {high school, university}" in (
        result.stdout
    )
    assert "[persists]" in result.stdout
    html = page.read_text(encoding="utf-8")
    assert html.count('<section class="series finding"') >= 2 and "<script" not in html
    assert 'class="significant"' in html and ">resolved</text>" in html
    assert html.count("<tr>") == 1 + 3  # the table of runs: its head and the three runs


def test_history_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["history", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2 and "no history file" in result.output
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database", encoding="utf-8")
    result = CliRunner().invoke(app, ["history", str(bad)])
    assert result.exit_code == 2 and "cannot use the history file" in result.output


def _append_many(path: str, report_json: str, times: int) -> None:
    report = AuditReport.model_validate_json(report_json)
    for _ in range(times):
        append_run(Path(path), report)


@pytest.mark.slow
def test_concurrent_processes_lose_nothing(runs: dict[str, Path], tmp_path: Path) -> None:
    """Four processes append ten runs each at once: 40 runs, every finding of each."""
    report_json = runs["baseline"].read_text(encoding="utf-8")
    findings = sum(len(s.findings) for s in AuditReport.model_validate_json(report_json).scans)
    path = tmp_path / "shared.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(path), report_json, 10)) for _ in range(4)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
        assert w.exitcode == 0
    assert run_count(path) == 40
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 40 * findings
