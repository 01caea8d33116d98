"""Everything but the report on stderr (issue 38): with ``--out -`` stdout holds the report and
nothing else, whatever else the run says (``-v/--verbose``'s data source and phase timings, an
interrupt, the job summary's delivery); a command's messages about an empty result go to
stderr too. Real processes with separate pipes where the streams matter most."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import FAST, Invoke, Project, spec_text, strict_json

import fairscan.api

pytestmark = pytest.mark.usefixtures("_not_in_ci")


@pytest.fixture
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def biased_spec(project: Project) -> Path:
    project.data(bias=True)
    return project.spec(spec_text())


def test_verbose_says_the_source_and_the_phases_on_stderr(cli: Invoke, biased_spec: Path) -> None:
    outcome = cli("run", biased_spec, "-o", "-", "-v", *FAST, code=1)
    report = strict_json(outcome.stdout)  # stdout: the report, whole, and nothing else
    assert isinstance(report, dict) and report["name"] == "synthetic"
    lines = [line for line in outcome.stderr.splitlines() if line.startswith("verbose: ")]
    data_csv = str(biased_spec.parent / "data.csv")
    assert lines[0] == f"verbose: spec {biased_spec}"
    assert lines[1] == f"verbose: data: {data_csv}: 3000 rows after the filter"
    assert lines[2].startswith("verbose: phase read and prepare the data: ")
    assert [line.split(":")[1] for line in lines[3:5]] == [
        " phase scan fpr (fpr_scan)",
        " phase scan calibration (bias_scan)",
    ]
    assert lines[-1].startswith("verbose: total: ") and lines[-1].endswith(" s")
    assert "verbose: " not in outcome.stdout


def test_without_verbose_no_phase_lines(cli: Invoke, biased_spec: Path) -> None:
    outcome = cli("run", biased_spec, "-o", "-", *FAST, code=1)
    assert "verbose: " not in outcome.stderr + outcome.stdout


def test_an_interrupt_says_so_on_stderr_only(
    cli: Invoke, biased_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fairscan.api, "run_prepared", interrupted)
    outcome = cli("run", biased_spec, "-o", "-", "-v", *FAST, code=130)
    assert outcome.stdout == ""
    assert outcome.stderr.splitlines()[-1] == "interrupted"


@pytest.mark.slow
def test_a_real_ctrl_c_leaves_stdout_empty(biased_spec: Path) -> None:
    """SIGINT once the scans run (the verbose line after the data says so): stdout stays
    empty, stderr ends with "interrupted", the process exits 130."""
    slow = biased_spec.read_text(encoding="utf-8").replace(
        "replicates: 19", "replicates: 99999, sequential: false"
    )
    spec = biased_spec.with_name("slow.audit.yaml")
    spec.write_text(slow, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRSCAN_", "GITHUB_"))}
    argv = [sys.executable, "-m", "fairscan.cli", "run", str(spec), "-o", "-", "-v"]
    process = subprocess.Popen(
        [*argv, "--workers", "1", "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=spec.parent,
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # blocks until the run has read its data
        seen.append(line)
        if line.startswith("verbose: phase read and prepare the data"):
            break
    process.send_signal(signal.SIGINT)
    stdout, rest = process.communicate(timeout=300)
    assert process.returncode == 130, "".join(seen) + rest
    assert stdout == ""
    assert rest.splitlines()[-1] == "interrupted"


def test_the_job_summary_flag_writes_it_whatever_the_formats(
    cli: Invoke, biased_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GitHub Action's default (summary: "true" passes --job-summary): the spec does not
    list `github`, the summary is written anyway, once, and stdout keeps the report alone."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    outcome = cli("run", biased_spec, "--out", tmp_path / "r", *FAST, code=1)
    assert not summary.exists()  # the spec's formats (json, markdown): no summary unasked
    cli("run", biased_spec, "--out", tmp_path / "r", *FAST, "--job-summary", code=1)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# ") and "synthetic" in text
    both = cli("run", biased_spec, "--out", tmp_path / "r", *FAST, "--job-summary", "-f", "github")
    heading = text.splitlines()[0]
    assert summary.read_text(encoding="utf-8").count(heading) == 2  # once more, not twice
    assert both.code == 1 and outcome.stdout == "" and both.stdout == ""


def test_an_empty_history_says_so_on_stderr(cli: Invoke, project: Project) -> None:
    project.data(bias=True)
    spec = project.spec(spec_text().replace("output: {dir: reports}", "output: {history: h.db}"))
    cli("run", spec, *FAST, "-q", code=1)
    outcome = cli("history", project.root / "h.db", "--spec", "another", code=0)
    assert outcome.stdout == ""
    assert "no finding in the history for another" in outcome.stderr
    listed = cli("history", project.root / "h.db", code=0)
    assert "synthetic / fpr" in listed.stdout
    assert "no finding" not in listed.stdout + listed.stderr  # the trend: stdout, as before


@pytest.mark.slow
def test_verbose_names_a_database_table_and_its_engine(cli: Invoke, project: Project) -> None:
    duckdb = pytest.importorskip("duckdb")
    csv = project.data(bias=True)
    con = duckdb.connect(str(project.root / "rows.duckdb"))
    con.execute(f"create table predictions as select * from read_csv('{csv.as_posix()}')")
    con.close()
    text = spec_text().replace(
        "  path: data.csv", "  connection: rows.duckdb\n  table: predictions"
    )
    outcome = cli("run", project.spec(text), "-o", "-", "-v", *FAST, code=1)
    assert strict_json(outcome.stdout)
    where = project.root / "rows.duckdb"
    assert f"verbose: data: table predictions, duckdb at {where}: 3000 rows after the filter" in (
        outcome.stderr
    )
