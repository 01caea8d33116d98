"""CLI conventions (issue 28): defaults from ``[tool.fairscan]`` in ``pyproject.toml`` with
their precedence, shell completion, usage lines, ``explain``'s did-you-mean and
``audit scan --type flag`` taking the attributes once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_support import Invoke, Project, spec_text, strict_json

from fairscan.cli.config import load_config
from fairscan.errors import UsageError

AUDIT = Path(sys.executable).with_name("audit")  # the console script: completion is for `audit`

CONFIG = """\
[project]
name = "model"

[tool.fairscan]
format = ["json", "sarif"]
out = "audit-reports"
replicates = 0
seed = 11
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("FAIRSCAN_") or name.startswith("GITHUB_"):
            monkeypatch.delenv(name)


def _report(path: Path) -> dict[str, object]:
    report = strict_json(path.read_text(encoding="utf-8"))
    assert isinstance(report, dict)
    return report


def test_pyproject_defaults_and_their_precedence(
    project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data()
    # replicates = 0 below makes the run UNTESTED (issue 34): allowed here, to test precedence
    text = spec_text(data="../data.csv") + "gate: {allow_untested: true}\n"
    spec = project.spec(text, "audits/synthetic.audit.yaml")
    (project.root / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    # found from a sub-folder of the project: paths in it are relative to the file
    work = project.root / "audits"
    monkeypatch.chdir(work)
    cli("run", spec.name, "--no-progress", code=0)
    out = project.root / "audit-reports"
    assert sorted(p.name for p in out.iterdir()) == ["synthetic.json", "synthetic.sarif"]
    parameters = _report(out / "synthetic.json")["provenance"]["parameters"]  # type: ignore[index]
    assert parameters["significance"]["replicates"] == 0  # pyproject over the spec's 19
    assert _report(out / "synthetic.json")["verdict"]["status"] == "untested"  # type: ignore[index]
    assert parameters["significance"]["seed"] == 11
    # the environment over pyproject, a flag over both
    monkeypatch.setenv("FAIRSCAN_SEED", "12")
    cli("run", spec.name, "--no-progress", code=0)
    assert _report(out / "synthetic.json")["provenance"]["parameters"]["significance"]["seed"] == 12  # type: ignore[index]
    cli("run", spec.name, "--no-progress", "--seed", "13", "--format", "json", code=0)
    assert _report(out / "synthetic.json")["provenance"]["parameters"]["significance"]["seed"] == 13  # type: ignore[index]
    # --show-resolved says where each override came from
    monkeypatch.delenv("FAIRSCAN_SEED")
    shown = cli("validate", spec.name, "--show-resolved", code=0).stdout
    source = f"{project.root / 'pyproject.toml'} [tool.fairscan]"
    assert f"significance.replicates = 0  (from {source})" in shown
    assert "precedence: flag > FAIRSCAN_* env > [tool.fairscan] in pyproject.toml > spec" in shown
    resolved = yaml.safe_load(shown)
    assert resolved["significance"]["replicates"] == 0


def test_only_a_pyproject_with_the_table_counts(tmp_path: Path) -> None:
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "a" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n", "utf-8")
    config = load_config(inner)
    assert config is not None and config.path == tmp_path / "pyproject.toml"
    assert config.values["replicates"] == 0
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    assert load_config(inner) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("replicate = 9", "[tool.fairscan] replicate: unknown key"),
        ("replicates = -1", "[tool.fairscan] replicates: must be between 0 and"),
        ("seed = 'x'", "[tool.fairscan] seed: expected a whole number"),
        ("format = 'pdf'", "[tool.fairscan] format: unknown report format 'pdf'"),
        ("exit_zero = 1", "[tool.fairscan] exit_zero: expected true or false"),
    ],
)
def test_bad_settings_name_the_file_line_and_key(
    tmp_path: Path, line: str, expected: str, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.fairscan]\n{line}\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{path}:5:1: {expected}")
    monkeypatch.chdir(tmp_path)
    outcome = cli("run", "whatever.audit.yaml", code=2)
    assert f"usage error: {path}:5:1: {expected}" in outcome.stderr


def test_usage_lines_have_no_braces(cli: Invoke) -> None:
    # typer >= 0.26 writes `SPECS...`, earlier releases (click's own rule) `SPECS`
    usage = cli("run", "--help", code=0).stdout.splitlines()[0]
    assert usage in ("Usage: audit run [OPTIONS] SPECS...", "Usage: audit run [OPTIONS] SPECS")
    assert "Usage: audit explain [OPTIONS] TYPE\n" in cli("explain", "--help", code=0).stdout
    assert "Usage: audit scan [OPTIONS] DATA\n" in cli("scan", "--help", code=0).stdout
    for command in ("run", "validate", "explain", "scan", "diff", "init", "power"):
        assert "{" not in cli(command, "--help", code=0).stdout.splitlines()[0], command


def test_explain_suggests_the_type_meant(cli: Invoke) -> None:
    for typed, meant in (("fpr_sca", "fpr_scan"), ("FPR_SCAN", "fpr_scan"), ("cert", "certify")):
        outcome = cli("explain", typed, code=2)
        assert f"unknown scan type {typed!r}" in outcome.stderr
        assert f"did you mean {meant!r}?" in outcome.stderr
    assert "did you mean" not in cli("explain", "xyz", code=2).stderr


@pytest.mark.slow
def test_shell_completion(cli: Invoke) -> None:
    top = cli("--help", code=0).stdout
    assert "--install-completion" in top and "--show-completion" in top
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = subprocess.run(
        [str(AUDIT), "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert script.returncode == 0, script.stderr
    assert "_AUDIT_COMPLETE=complete_bash" in script.stdout

    def complete(words: str, cword: int) -> list[str]:
        done = subprocess.run(
            [str(AUDIT)],
            capture_output=True,
            text=True,
            timeout=120,
            env={
                **os.environ,
                "_AUDIT_COMPLETE": "complete_bash",
                "COMP_WORDS": words,
                "COMP_CWORD": str(cword),
            },
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("audit ru", 1) == ["run"]
    assert complete("audit run s.audit.yaml --format sa", 4) == ["sarif"]
    assert complete("audit explain ce", 2) == ["certify"]


def test_scan_flag_takes_the_attributes_once(project: Project, cli: Invoke) -> None:
    data = project.data(bias=True)
    saved = project.root / "flag.audit.yaml"
    cli(
        "scan",
        data,
        *("--type", "flag", "--outcome", "y", "--recommendation", "rec"),
        *("--attributes", "region,age_group", "--set", "metric=fpr"),
        *("--set", "tolerance=0.05", "--set", "bootstrap=50", "--no-progress"),
        *("--save-spec", saved),
    )
    spec = yaml.safe_load(saved.read_text(encoding="utf-8"))
    assert spec["scans"][0]["groups"] == {"attributes": ["region", "age_group"]}
    # groups given with --set still win
    outcome = cli(
        "scan",
        data,
        *("--type", "flag", "--outcome", "y", "--recommendation", "rec"),
        *("--attributes", "region,age_group", "--set", "metric=fpr"),
        *("--set", "groups={attributes: [region]}", "--set", "tolerance=0.05"),
        *("--set", "bootstrap=50", "--no-progress"),
        *("--save-spec", saved, "--force"),
    )
    assert outcome.code in (0, 1), outcome.output
    spec = yaml.safe_load(saved.read_text(encoding="utf-8"))
    assert spec["scans"][0]["groups"] == {"attributes": ["region"]}
