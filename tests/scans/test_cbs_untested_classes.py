"""Issue 34: a ``cbs`` scan over every value of its protected column tests each class at
alpha / classes (Bonferroni), so replicates that reach alpha for one class can leave every class
untestable: the scan is UNTESTED (exit 2), never PASS."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fairscan.cli import app
from fairscan.scans.cbs.runner import _unreachable

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
version: 1
name: cbs-classes
data: {{path: {data}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [ethnicity, sex, age_group]
scans:
  - {{id: classes, type: cbs, protected: {{column: ethnicity, each_value: true}}, metric: fpr, restarts: 2}}
significance: {{replicates: {replicates}, seed: 0, workers: 1}}
output: {{dir: out, formats: [json]}}
"""


def test_the_bonferroni_floor_over_classes_is_exact() -> None:
    # 3 classes at alpha 0.05: each run at 0.01667; 1/60 reaches it, 1/59 does not
    assert _unreachable(59, 0.05, 3) is None
    reason = _unreachable(58, 0.05, 3)
    assert reason is not None and "at least 59" in reason and "3 protected classes" in reason
    assert _unreachable(19, 0.05, 1) is None  # one class: the gate's own check decides
    assert _unreachable(0, 0.05, 3) is None  # no test at all: the gate's own check too


def test_a_scan_over_three_classes_with_19_replicates_is_untested(tmp_path: Path) -> None:
    spec = tmp_path / "classes.audit.yaml"
    spec.write_text(SPEC.format(data=ROOT / "sample_data" / "credit.csv", replicates=19))
    result = CliRunner().invoke(app, ["run", str(spec), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "UNTESTED" in result.output and "PASS" not in result.output
    report = json.loads((tmp_path / "out" / "cbs-classes.json").read_text("utf-8"))
    assert report["verdict"]["status"] == "untested"
    (scan,) = report["scans"]
    assert scan["status"] == "untested"
    assert "4 protected classes" in scan["untested_reason"]  # ethnicity: A-D
    assert [u["scan"] for u in report["verdict"]["untested_scans"]] == ["classes"]
