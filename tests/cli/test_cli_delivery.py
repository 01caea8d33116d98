"""Reports leave by one failure policy (issue 37, fairscan.run.delivery): after the report files
are written, every delivery (output.history, output.mlflow, the GitHub job summary) runs on its
own; one that fails loses none of the others, says why as an error, and the run exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import FAST, Invoke, Project, line_of, spec_text

from fairscan.report.verdict import ExitCode


@pytest.fixture
def _no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("_no_ci")
def test_a_failing_history_loses_neither_the_reports_nor_the_job_summary(
    cli: Invoke, project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data(bias=True)
    (project.root / "history").mkdir()  # a folder where the history file should be
    text = spec_text().replace("output: {dir: reports}", "output: {dir: reports, history: history}")
    spec = project.spec(text)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    outcome = cli("run", spec, *FAST, "--job-summary", "--exit-zero", code=ExitCode.ERROR)
    assert (project.root / "reports" / "synthetic.json").is_file()
    assert summary.read_text(encoding="utf-8").startswith("# ")  # delivered all the same
    where = f"{spec}:{line_of(text, 'output:')}:"
    assert where in outcome.stderr and "output.history" in outcome.stderr, outcome.stderr
    assert "the reports are written" in outcome.stderr
    assert "FAIL: " in outcome.stderr  # the summary was printed: nothing of the run is lost


@pytest.mark.usefixtures("_no_ci")
def test_an_unwritable_job_summary_is_an_error_not_a_warning(
    cli: Invoke, project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data(bias=True)
    spec = project.spec(spec_text())
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: cannot be appended to
    outcome = cli("run", spec, *FAST, "--job-summary", "--exit-zero", code=ExitCode.ERROR)
    assert "error: GITHUB_STEP_SUMMARY: cannot append to GITHUB_STEP_SUMMARY" in outcome.stderr
    assert "the reports are written" in outcome.stderr
    assert (project.root / "reports" / "synthetic.json").is_file()
