"""Issue 28: what a Bias Scan report says. Without a prediction the scan compares with the
overall rate: a warning says so and the finding does not speak of the model's probabilities.
With one, a significant finding under the analytic critical value explains why both hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairscan.api import RunOptions, run_audit
from fairscan.report.formats import render
from fairscan.scans import render_hooks

ROOT = Path(__file__).resolve().parents[2]
CREDIT = (ROOT / "sample_data" / "credit.csv").as_posix()


def _run(tmp_path: Path, columns: str, replicates: int = 49):
    spec = tmp_path / "bias.audit.yaml"
    spec.write_text(
        f"""version: 1
name: bias-wording
data: {{path: {CREDIT}}}
columns: {columns}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: calibration, type: bias_scan, direction: negative, penalty: 1, restarts: 10}}
significance: {{replicates: {replicates}, seed: 0}}
""",
        encoding="utf-8",
    )
    return run_audit(spec, RunOptions(write=False)).report


def test_without_prediction_a_warning_and_an_honest_sentence(tmp_path: Path) -> None:
    report = _run(tmp_path, "{outcome: default}")
    scan = report.scans[0]
    assert any("no prediction column" in w for w in scan.warnings), scan.warnings
    assert scan.findings, "the demo data has a subgroup with a lower default rate"
    top = scan.findings[0]
    assert "No prediction was given" in top.description
    assert "model's probabilities are" not in top.description
    assert "overall rate" in top.effect.reference_name
    assert "mean predicted probability" not in top.effect.reference_name
    markdown = render(report, "markdown", render_hooks())
    assert "> Warning: no prediction column" in markdown


def test_with_prediction_the_description_is_unchanged(tmp_path: Path) -> None:
    report = _run(tmp_path, "{outcome: default, prediction: score}")
    scan = report.scans[0]
    assert not any("no prediction" in w for w in scan.warnings)
    assert "the model's probabilities are over-estimated there" in scan.findings[0].description


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_significant_score_under_the_critical_value_is_explained(tmp_path: Path, fmt) -> None:
    report = _run(tmp_path, "{outcome: default, prediction: score}", replicates=99)
    scan = report.scans[0]
    critical = scan.detail["critical_value"]
    assert scan.findings[0].significant and not critical["exceeded"]
    text = render(report, fmt, render_hooks())
    assert "does not exceed it" in text
    assert "The finding is significant all the same" in text
