"""The CLI in pipes and in CI (issue 28): ``audit run --format`` and ``--out -`` (only the
report on stdout), GitHub annotations under ``GITHUB_ACTIONS=true`` (escaped as GitHub's toolkit
escapes them) and the step outputs written to ``$GITHUB_OUTPUT``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import BIASED_GROUP, Invoke, Project, line_of, spec_text, strict_json

from fairscan.cli.github import annotation, escape_data, escape_property, step_outputs
from fairscan.errors import Issue, SpecError

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

CREDIT_SPEC = f"""\
version: 1
name: credit
data: {{path: {CREDIT.as_posix()}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 10}}
significance: {{replicates: 19, seed: 0, workers: 1}}
"""


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.slow
def test_json_to_stdout_pipes_into_json_load(tmp_path: Path) -> None:
    """The issue's line, through a real shell pipe: stdout is the JSON report and nothing else;
    nothing is written to disk (no report folder, no file named `-`)."""
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(CREDIT_SPEC, encoding="utf-8")
    python = shlex.quote(sys.executable)
    line = (
        f"{python} -m fairscan.cli run {shlex.quote(spec.name)} --format json --out - "
        f"| {python} -c 'import json,sys; json.load(sys.stdin); print(\"parsed\")'; "
        'echo "codes ${PIPESTATUS[*]}"'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRSCAN_", "GITHUB_"))}
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.stdout.splitlines() == ["parsed", "codes 1 0"], done.stdout + done.stderr
    assert "FAIL: 1 significant finding(s) in 1 scan(s). Reports: stdout" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["credit.audit.yaml"]


@pytest.mark.parametrize("fmt", ["json", "sarif", "markdown", "html", "junit", "github"])
def test_every_format_goes_to_stdout_alone(
    fmt: str, project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data(bias=True)
    spec = project.spec(spec_text())
    monkeypatch.chdir(project.root)
    outcome = cli("run", spec, "--format", fmt, "--out", "-", "--no-progress", code=1)
    text = outcome.stdout
    if fmt in ("json", "sarif"):
        strict_json(text)
    elif fmt == "html":
        assert text.lstrip().lower().startswith("<!doctype html>")
    elif fmt == "junit":
        assert text.lstrip().startswith("<?xml")
    else:
        assert text.startswith("#")
    assert "significant finding" not in text.splitlines()[-1]  # the summary is not on stdout
    assert "Reports: stdout" in outcome.stderr
    assert not (project.root / "reports").exists()
    assert not (project.root / "-").exists()


def test_out_dash_defaults_to_json_and_format_overrides_the_spec(
    project: Project, cli: Invoke
) -> None:
    project.data()
    spec = project.spec(spec_text())
    report = strict_json(cli("run", spec, "--out", "-", "--no-progress").stdout)
    assert isinstance(report, dict) and report["name"] == "synthetic"
    out = project.root / "out"
    cli("run", spec, "--out", out, "--format", "sarif", "-f", "html", "--no-progress")
    assert sorted(p.name for p in out.iterdir()) == ["synthetic.html", "synthetic.sarif"]


def test_bad_format_uses_are_usage_errors(project: Project, cli: Invoke) -> None:
    project.data()
    spec = project.spec(spec_text())
    other = project.spec(spec_text("other"), "other.audit.yaml")
    outcome = cli("run", spec, "--format", "sarf", code=2)
    assert "usage error: --format: unknown report format 'sarf'" in outcome.stderr
    assert "did you mean 'sarif'?" in outcome.stderr
    outcome = cli("run", spec, "--out", "-", "-f", "json", "-f", "html", code=2)
    assert "--format: --out - writes one report to stdout, but 2 formats" in outcome.stderr
    outcome = cli("run", spec, other, "--out", "-", code=2)
    assert "--out: --out - writes one report to stdout, but 2 specs" in outcome.stderr
    assert outcome.stdout == ""


# --- GitHub Actions ------------------------------------------------------------------------


def test_workflow_commands_are_escaped_as_github_s_toolkit_does() -> None:
    assert escape_data("50% done\r\nnext::error::x") == "50%25 done%0D%0Anext::error::x"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = annotation("error", "two\nlines", file="a,b.yaml", line=3, col=5, title="t: x")
    assert line == "::error file=a%2Cb.yaml,line=3,col=5,title=t%3A x::two%0Alines"
    assert "\n" not in line
    assert annotation("warning", "m") == "::warning::m"


def test_spec_errors_are_annotated_at_their_line(
    project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data()
    text = spec_text().replace("  outcome: y\n", "  outcome: y\n  recomendation: rec\n")
    spec = project.spec(text)
    outcome = cli("run", spec, code=2)
    assert "::error" not in outcome.output  # not in GitHub Actions: plain messages only
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    outcome = cli("run", spec, code=2)
    line = line_of(text, "  recomendation:")
    expected = (
        f"::error file={escape_property(str(spec))},line={line},col=3,"
        "title=fairscan spec error::columns.recomendation: unknown key"
    )
    annotations = [a for a in outcome.stderr.splitlines() if a.startswith("::error")]
    assert any(a.startswith(expected) for a in annotations), outcome.stderr
    assert all("\n" not in a for a in annotations)
    assert outcome.stdout == ""


def test_findings_are_annotated_and_step_outputs_written(
    project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project.data(bias=True)
    text = spec_text()
    spec = project.spec(text)
    github_output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(github_output))
    outcome = cli("run", spec, "--no-progress", code=1)
    annotations = [a for a in outcome.stderr.splitlines() if a.startswith("::")]
    assert annotations, outcome.stderr
    head = f"::error file={escape_property(str(spec))},line={line_of(text, '  - {id: fpr')},col=5"
    assert all(a.startswith(head) for a in annotations if "scan fpr" in a)
    assert any(f"region = {BIASED_GROUP['region']}" in a and "age_group" in a for a in annotations)
    outputs = _parse_outputs(github_output.read_text(encoding="utf-8"))
    report = json.loads((project.root / "reports" / "synthetic.json").read_text("utf-8"))
    assert outputs["significant-findings"] == str(report["verdict"]["significant_findings"])
    assert outputs["verdict"] == "FAIL" and outputs["exit-code"] == "1"
    assert outputs["report-paths"].splitlines() == [
        str(project.root / "reports" / "synthetic.json"),
        str(project.root / "reports" / "synthetic.md"),
    ]
    # --exit-zero: the step passes, its outputs still say what was found
    github_output.unlink()
    cli("run", spec, "--no-progress", "--exit-zero", code=0)
    outputs = _parse_outputs(github_output.read_text(encoding="utf-8"))
    assert (outputs["verdict"], outputs["exit-code"]) == ("FAIL", "0")


def _parse_outputs(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` read as the runner reads it (``name<<DELIM`` blocks, ``name=value``)."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def test_step_outputs_hold_any_value() -> None:
    text = step_outputs({"report-paths": "a\nb", "verdict": "PASS"})
    assert _parse_outputs(text) == {"report-paths": "a\nb", "verdict": "PASS"}


def test_annotations_of_issues_without_a_file_have_no_location() -> None:
    from fairscan.cli.github import error_annotations

    (line,) = error_annotations(SpecError(issues=[Issue("bad, really", field="--out")]))
    assert line == "::error title=fairscan spec error::--out: bad, really"


def test_the_action_exposes_the_step_outputs() -> None:
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    outputs = action["outputs"]
    for name in ("exit-code", "significant-findings", "verdict", "report-paths"):
        assert outputs[name]["value"] == f"${{{{ steps.audit.outputs.{name} }}}}"


def test_audit_scan_writes_to_stdout_too(project: Project, cli: Invoke) -> None:
    data = project.data(bias=True)
    args = ["scan", data, "--type", "fpr_scan", "--outcome", "y", "--recommendation", "rec"]
    args += ["--attributes", "sex,region,age_group", "--replicates", "19", "--no-progress"]
    outcome = cli(*args, "--out", "-", "--format", "sarif")
    log = strict_json(outcome.stdout)
    assert isinstance(log, dict) and log["version"] == "2.1.0"
    assert "no reports written" not in outcome.stderr
    assert sorted(p.name for p in project.root.iterdir()) == ["data.csv"]


def test_annotation_paths_are_relative_to_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "audits" / "x.audit.yaml"
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    line = annotation("error", "m", file=str(spec), line=2)
    assert line == "::error file=audits/x.audit.yaml,line=2::m"
    outside = annotation("error", "m", file="/elsewhere/y.audit.yaml")
    assert outside == "::error file=/elsewhere/y.audit.yaml::m"
