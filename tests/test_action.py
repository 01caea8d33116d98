"""The GitHub Action (action.yml, composite; issue 38): valid action metadata, the job summary
written by default whatever the specs' formats, and the user's Python left alone (fairscan in
a venv of its own; setup-python only when no usable Python is found, and then off PATH). The
steps' scripts (action/*.sh) run here as the runner runs them: bash with the step's env."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
SCRIPTS = ROOT / "action"
CREDIT = ROOT / "sample_data" / "credit.csv"

SPEC = f"""\
version: 1
name: credit
data: {{path: {CREDIT.as_posix()}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 5}}
significance: {{replicates: 19, seed: 0, workers: 1}}
output: {{formats: [FORMATS]}}
"""


def _action() -> dict[str, Any]:
    loaded = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "FAIRSCAN_"))}
    return subprocess.run(
        ["bash", str(SCRIPTS / script)],
        env={**base, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outputs(path: Path) -> dict[str, str]:
    """``name=value`` lines of a $GITHUB_OUTPUT file (the scripts write single lines)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line and "<<" not in line)


def test_the_metadata_validates_against_githubs_schema() -> None:
    checker = shutil.which("check-jsonschema") or str(
        Path(sys.executable).with_name("check-jsonschema")
    )
    if not Path(checker).exists() and shutil.which(checker) is None:
        pytest.skip("check-jsonschema is not installed (the test extra has it)")
    done = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-actions", str(ACTION)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_steps_leave_the_jobs_python_alone() -> None:
    steps = _action()["runs"]["steps"]
    for step in steps:
        assert "GITHUB_PATH" not in step.get("run", "") and "GITHUB_ENV" not in step.get("run", "")
        if str(step.get("uses", "")).startswith("actions/setup-python"):
            assert step["with"]["update-environment"] is False
            assert step["if"] == "steps.python.outputs.python == ''"
    scripts = [step["run"] for step in steps if "run" in step]
    for script in SCRIPTS.glob("*.sh"):
        assert any(script.name in run for run in scripts), script
        text = script.read_text(encoding="utf-8")
        assert "GITHUB_PATH" not in text and "GITHUB_ENV" not in text
    assert _action()["inputs"]["summary"]["default"] == "true"


def test_the_runners_python_is_used_when_it_fits(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    output = tmp_path / "output"
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "GITHUB_OUTPUT": str(output)}
    done = _bash("find-python.sh", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _outputs(output) == {"python": str(bin_dir / "python3")}


def test_an_old_python_means_setup_python_off_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3", "python"):  # a Python 3.8, as far as the check can tell
        fake = bin_dir / name
        fake.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
        fake.chmod(0o755)
    output = tmp_path / "output"
    env = {"PATH": f"{bin_dir}{os.pathsep}/bin", "GITHUB_OUTPUT": str(output)}
    done = _bash("find-python.sh", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _outputs(output) == {"python": ""}  # the setup-python step's condition
    assert "actions/setup-python will install one, off PATH" in done.stderr


def test_a_given_python_that_does_not_fit_is_an_error(tmp_path: Path) -> None:
    output = tmp_path / "output"
    env = {"GITHUB_OUTPUT": str(output), "FAIRSCAN_PYTHON": str(tmp_path / "no-python")}
    done = _bash("find-python.sh", env, tmp_path)
    assert done.returncode == 2
    assert "::error title=fairscan action::the python input" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("summary", "formats"), [("true", "json"), ("false", "json, github")])
def test_the_job_summary_by_default_and_off_on_request(
    tmp_path: Path, summary: str, formats: str
) -> None:
    """The default writes the summary although the spec does not list `github`; "false"
    writes none although it does. The exit code (1: a finding) and the outputs are kept."""
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(SPEC.replace("FORMATS", formats), encoding="utf-8")
    step_summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {
        "FAIRSCAN_RUN_PYTHON": sys.executable,
        "SPECS": spec.name,
        "ARGS": "--workers 1",
        "SUMMARY": summary,
        "CI": "true",
        "GITHUB_STEP_SUMMARY": str(step_summary),
        "GITHUB_OUTPUT": str(output),
    }
    done = _bash("run.sh", env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert _outputs(output)["exit-code"] == "1"
    if summary == "true":
        text = step_summary.read_text(encoding="utf-8")
        assert text.startswith("# ") and "credit" in text
    else:
        assert not step_summary.exists()


def test_the_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    done = subprocess.run(
        [shellcheck, *map(str, sorted(SCRIPTS.glob("*.sh")))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout
