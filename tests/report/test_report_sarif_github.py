"""SARIF for GitHub code scanning (issue 38): each result at its scan's line and column in the
spec (where the GitHub annotations put it, a parent's line for a scan that ``extends`` brings),
each rule with ``help`` (text and Markdown) and a human ``name`` that is not its id; and, where
Microsoft's SARIF multitool is installed, no error or warning under its GitHub rules."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from report_builders import finding, report, scan

from fairscan.report.models import AuditReport
from fairscan.report.sarif import sarif_log

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
MULTITOOL_VARIABLE = "FAIRSCAN_SARIF_MULTITOOL"  # the Sarif.Multitool executable

PARENT = """\
version: 1
name: base
data: {path: d.csv}
attributes: [sex]
scans:
  - {id: fpr, type: fpr_scan}

  - id: flag
    type: flag
"""


def _line_col(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first ``needle`` in ``text`` (by plain search)."""
    before = text[: text.index(needle)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _from_spec(spec: Path, shown: str) -> AuditReport:
    """A two-scan report whose provenance names ``shown`` (relative to the current folder)
    and the hash of ``spec``'s bytes, as a run of that spec writes it."""
    rep = report(scan([finding()]), scan([finding(group="young", subgroup=None)], id="flag"))
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()
    provenance = rep.provenance.model_copy(update={"spec_path": shown, "spec_sha256": digest})
    return rep.model_copy(update={"provenance": provenance})


def _regions(log: dict[str, Any]) -> list[tuple[str, dict[str, int]]]:
    return [
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"],
        )
        for r in log["runs"][0]["results"]
    ]


def test_results_carry_the_scans_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "audits").mkdir()
    spec = tmp_path / "audits" / "credit.audit.yaml"
    spec.write_text(PARENT, encoding="utf-8")
    log = sarif_log(_from_spec(spec, "audits/credit.audit.yaml"))
    fpr_line, fpr_col = _line_col(PARENT, "{id: fpr")
    flag_line, flag_col = _line_col(PARENT, "id: flag")
    assert _regions(log) == [
        ("audits/credit.audit.yaml", {"startLine": fpr_line, "startColumn": fpr_col}),
        ("audits/credit.audit.yaml", {"startLine": flag_line, "startColumn": flag_col}),
    ]
    assert (fpr_line, flag_line) == (6, 8)


def test_scans_from_a_parent_point_at_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base.audit.yaml").write_text(PARENT, encoding="utf-8")
    (tmp_path / "audits").mkdir()
    child = tmp_path / "audits" / "child.audit.yaml"
    child.write_text("extends: ../base.audit.yaml\nversion: 1\nname: child\n", encoding="utf-8")
    log = sarif_log(_from_spec(child, "audits/child.audit.yaml"))
    assert [uri for uri, _ in _regions(log)] == ["base.audit.yaml", "base.audit.yaml"]
    assert [region["startLine"] for _, region in _regions(log)] == [6, 8]


def test_an_edited_or_missing_spec_falls_back_to_its_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report read back after its spec changed: its lines would point at other text."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(PARENT, encoding="utf-8")
    rep = _from_spec(spec, "credit.audit.yaml")
    spec.write_text("# a new first line\n" + PARENT, encoding="utf-8")
    assert [region for _, region in _regions(sarif_log(rep))] == [{"startLine": 1}] * 2
    spec.unlink()
    assert [region for _, region in _regions(sarif_log(rep))] == [{"startLine": 1}] * 2


def test_rules_carry_help_and_a_human_name() -> None:
    rep = report(scan([finding()]), scan([], id="fpr_scan", type="fpr_scan"))
    rules = sarif_log(rep)["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["name"] for rule in rules] == ["FprScanFpr", "FprScanFprScan"]
    for rule in rules:
        assert rule["name"].lower() != rule["id"].lower()  # SARIF1001 compares so
        help_ = rule["help"]
        assert set(help_) == {"text", "markdown"}
        assert "`" not in help_["text"]  # plain text
        assert f"`audit explain {rule['properties']['scanType']}`" in help_["markdown"]
        assert rule["shortDescription"]["text"].replace("`", "") in help_["text"]


# --- Microsoft's SARIF multitool (the validator GitHub's SARIF docs point to) -----------------


def _multitool() -> str | None:
    """The multitool's executable: $FAIRSCAN_SARIF_MULTITOOL, else the npm package that
    .ci/run installs under build/sarif-multitool (its platform binary: the npm wrapper runs
    it through a shell, which splits a `;` list), else Sarif.Multitool on PATH."""
    given = os.environ.get(MULTITOOL_VARIABLE)
    if given:
        return given
    pattern = "build/sarif-multitool/node_modules/@microsoft/sarif-multitool-*/Sarif.Multitool*"
    for found in sorted(glob.glob(str(ROOT / pattern))):
        if not found.endswith((".pdb", ".xml", ".config")) and os.access(found, os.X_OK):
            return found
    return shutil.which("Sarif.Multitool")


CREDIT_SPEC = f"""\
version: 1
name: credit
data: {{path: {CREDIT.as_posix()}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 5}}
  - id: calibration
    type: bias_scan
    restarts: 5
significance: {{replicates: 19, seed: 0, workers: 1}}
output: {{formats: [sarif]}}
"""


def test_a_real_sarif_is_clean_under_githubs_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = _multitool()
    if tool is None:
        pytest.skip(
            "Microsoft's SARIF multitool is not installed: `npm install --prefix "
            "build/sarif-multitool @microsoft/sarif-multitool` (.ci/run does) or set "
            f"{MULTITOOL_VARIABLE}"
        )
    from fairscan.api import RunOptions, run_audit

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(CREDIT_SPEC, encoding="utf-8")
    outcome = run_audit(Path(spec.name), RunOptions())
    (sarif,) = outcome.written
    log = json.loads(Path(sarif).read_text(encoding="utf-8"))
    assert log["runs"][0]["results"], "the credit data has significant findings to check"
    checked = tmp_path / "validation.sarif"
    done = subprocess.run(
        [tool, "validate", "--rule-kind", "Sarif;Gh", "--output", str(checked), str(sarif)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(checked.read_text(encoding="utf-8-sig"))["runs"][0]["results"]
    assert found == [], done.stdout
