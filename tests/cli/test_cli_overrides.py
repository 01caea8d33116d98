"""Every setting not written in the spec is shown and recorded (issue 34): a value from
``[tool.fairscan]`` in a ``pyproject.toml`` up the folders, a ``FAIRSCAN_*`` variable or a flag
that changes the run or the gate is printed on stderr with its source and stored in the report
as ``provenance.overrides``; a ``pyproject.toml`` on the way up that cannot be read or parsed
is an error (exit 2) naming it, and every TOML form of the table is honoured."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from cli_support import Invoke, Project, strict_json

from fairscan.report.sink_escape import md_text

SPEC = """\
version: 1
name: inherited
data: {path: ../data.csv}
columns: {outcome: y, prediction: p, recommendation: rec}
attributes: [sex, region, age_group]
scans:
  - {id: fpr, type: fpr_scan, penalty: 0.5, restarts: 5}
significance: {replicates: 39, alpha: 0.05, seed: 7, workers: 1}
output: {dir: reports, formats: [json, markdown, html]}
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("FAIRSCAN_") or name.startswith("GITHUB_"):
            monkeypatch.delenv(name)


@pytest.fixture
def work(project: Project, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``project/repo/audits``, the working directory: the spec there, its data in ``repo``;
    ``project`` is the parent folder whose pyproject.toml the run inherits."""
    repo = project.root / "repo"
    project.spec(SPEC, "repo/audits/inherited.audit.yaml")
    project.data("repo/data.csv", bias=True)
    monkeypatch.chdir(repo / "audits")
    return repo


def _report(work: Path) -> dict[str, Any]:
    report = strict_json((work / "audits" / "reports" / "inherited.json").read_text("utf-8"))
    assert isinstance(report, dict)
    return report


def _source(path: Path) -> str:
    return f"{path} [tool.fairscan]"


def test_a_parent_exit_zero_is_shown_and_recorded(
    project: Project, work: Path, cli: Invoke
) -> None:
    (project.root / "pyproject.toml").write_text("[tool.fairscan]\nexit-zero = true\n")
    done = cli("run", "inherited.audit.yaml", "--no-progress", code=0)
    source = _source(project.root / "pyproject.toml")
    assert f"setting exit-zero = true from {source}" in done.stderr
    report = _report(work)
    assert report["verdict"]["exit_code"] == 1  # the finding is there; the gate was relaxed
    assert report["provenance"]["overrides"] == [
        {"key": "exit-zero", "value": True, "source": source}
    ]
    written = (work / "audits" / "reports" / "inherited.md").read_text("utf-8")
    assert md_text(f"exit-zero = true from {source}") in written  # escaped as Markdown text
    assert f"exit-zero = true from {source}" in (
        work / "audits" / "reports" / "inherited.html"
    ).read_text("utf-8")


def test_a_parent_replicates_and_variables_and_flags_are_recorded(
    project: Project, work: Path, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project.root / "pyproject.toml").write_text("[tool.fairscan]\nreplicates = 19\n")
    monkeypatch.setenv("FAIRSCAN_SEED", "5")
    done = cli("run", "inherited.audit.yaml", "--no-progress", "--workers", "1")
    source = _source(project.root / "pyproject.toml")
    for line in (f"setting replicates = 19 from {source}", "setting seed = 5 from FAIRSCAN_SEED"):
        assert line in done.stderr
    assert "setting workers = 1 from --workers" in done.stderr  # flags are named too
    report = _report(work)
    assert report["provenance"]["parameters"]["significance"]["replicates"] == 19
    assert report["provenance"]["overrides"] == [
        {"key": "seed", "value": 5, "source": "FAIRSCAN_SEED"},
        {"key": "replicates", "value": 19, "source": source},
        {"key": "workers", "value": 1, "source": "--workers"},
    ]


def test_none_is_recorded_when_the_spec_says_everything(work: Path, cli: Invoke) -> None:
    done = cli("run", "inherited.audit.yaml", "--no-progress")
    assert "setting " not in done.stderr
    assert _report(work)["provenance"]["overrides"] == []


def test_a_parent_executor_is_shown_before_anything_is_sent(
    project: Project, work: Path, cli: Invoke
) -> None:
    with socket.socket() as s:  # nobody listens there: the run fails, after saying why it tried
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (project.root / "pyproject.toml").write_text(
        f'[tool.fairscan]\nexecutor = "dask://127.0.0.1:{port}"\n'
    )
    source = _source(project.root / "pyproject.toml")
    done = cli("run", "inherited.audit.yaml", "--no-progress")
    assert f"setting executor = dask://127.0.0.1:{port} from {source}" in done.stderr
    shown = cli("validate", "inherited.audit.yaml", "--show-resolved", code=0)
    assert f"setting executor = dask://127.0.0.1:{port} from {source}" in shown.stderr


@pytest.mark.parametrize(
    "child",
    [
        b"tool.fairscan.replicates = 29\n",
        b"tool = {fairscan = {replicates = 29}}\n",
        b"[tool]\nfairscan.replicates = 29\n",
        b"\xef\xbb\xbf[tool.fairscan]\nreplicates = 29\n",
    ],
    ids=["dotted", "inline", "dotted-in-tool", "bom"],
)
def test_a_child_table_in_any_toml_form_is_honoured(
    project: Project, work: Path, cli: Invoke, child: bytes
) -> None:
    (project.root / "pyproject.toml").write_text("[tool.fairscan]\nreplicates = 0\n")
    (work / "pyproject.toml").write_bytes(child)
    done = cli("run", "inherited.audit.yaml", "--no-progress", "--format", "json")
    source = _source(work / "pyproject.toml")
    assert f"setting replicates = 29 from {source}" in done.stderr
    report = _report(work)
    assert report["provenance"]["parameters"]["significance"]["replicates"] == 29
    assert report["provenance"]["overrides"] == [
        {"key": "replicates", "value": 29, "source": source}
    ]


@pytest.mark.parametrize(
    ("child", "said"),
    [
        (b"[tool.fairscan]\nreplicates = 99 # r\xe9plicas\n", "not UTF-8"),
        (b"[tool.fairscan\nreplicates = 99\n", "not valid TOML"),
        (b"[project]\nname = 'x\n", "not valid TOML"),
        (b"tool.fairscan = 99\n", "expected a table"),
    ],
    ids=["latin-1", "broken-header", "broken-elsewhere", "not-a-table"],
)
def test_a_pyproject_that_cannot_be_read_is_an_error(
    project: Project, work: Path, cli: Invoke, child: bytes, said: str
) -> None:
    (project.root / "pyproject.toml").write_text("[tool.fairscan]\nreplicates = 0\n")
    (work / "pyproject.toml").write_bytes(child)
    done = cli("run", "inherited.audit.yaml", "--no-progress", code=2)
    assert str(work / "pyproject.toml") in done.stderr and said in done.stderr
    assert not (work / "audits" / "reports").exists()


def test_audit_scan_shows_and_records_what_it_inherits(
    project: Project, work: Path, cli: Invoke
) -> None:
    """``audit scan``'s flags are its spec; a parent's settings are shown and recorded."""
    (project.root / "pyproject.toml").write_text(
        "[tool.fairscan]\nexit-zero = true\nreplicates = 19\n"
    )
    source = _source(project.root / "pyproject.toml")
    flags = ["--type", "fpr_scan", "--outcome", "y", "--recommendation", "rec"]
    flags += ["--attributes", "sex,region,age_group", "--set", "restarts=5", "--workers", "1"]
    done = cli("scan", work / "data.csv", *flags, "--out", work / "scanned", code=0)
    assert f"setting exit-zero = true from {source}" in done.stderr
    assert f"setting replicates = 19 from {source}" in done.stderr
    report = strict_json(next((work / "scanned").glob("*.json")).read_text("utf-8"))
    assert isinstance(report, dict)
    assert report["provenance"]["overrides"] == [
        {"key": "replicates", "value": 19, "source": source},
        {"key": "exit-zero", "value": True, "source": source},
    ]
