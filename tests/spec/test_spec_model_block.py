"""Issue 28: the spec's optional ``model: {name, version, owner, description}`` block reaches
every report format (JSON's optional ``model`` key, Markdown, HTML, the notebook display); a
misspelt or incomplete block is a spec error naming the field and its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairscan.api import RunOptions, load_spec, run_audit
from fairscan.errors import SpecError
from fairscan.report.formats import render
from fairscan.report.view import ReportView
from fairscan.scans import render_hooks

ROOT = Path(__file__).resolve().parents[2]
CREDIT = (ROOT / "sample_data" / "credit.csv").as_posix()
SPEC = """version: 1
name: with-model
{model}
data: {{path: {data}}}
columns: {{outcome: default, recommendation: high_risk}}
attributes: [sex, ethnicity]
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
significance: {{replicates: 0, seed: 0}}
"""


def _spec(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "with-model.audit.yaml"
    path.write_text(SPEC.format(model=model, data=CREDIT), encoding="utf-8")
    return path


def test_the_model_block_is_in_every_format(tmp_path: Path) -> None:
    path = _spec(
        tmp_path,
        'model: {name: credit-risk, version: "2.3.1", owner: risk-analytics, '
        "description: Gradient-boosted default score}",
    )
    report = run_audit(path, RunOptions(write=False)).report
    hooks = render_hooks()
    data = json.loads(render(report, "json", hooks))
    assert data["model"] == {
        "name": "credit-risk",
        "version": "2.3.1",
        "owner": "risk-analytics",
        "description": "Gradient-boosted default score",
    }
    assert data["provenance"]["parameters"]["model"] == data["model"]
    line = "credit-risk 2.3.1, owned by risk-analytics: Gradient-boosted default score"
    assert f"Model: {line}" in render(report, "markdown", hooks)
    assert f"<strong>Model:</strong> {line}" in render(report, "html", hooks)
    assert line in ReportView.of(report, hooks)._repr_html_()
    junit = render(report, "junit", hooks)
    assert '<property name="model.name" value="credit-risk" />' in junit
    assert '<property name="model.version" value="2.3.1" />' in junit


def test_without_a_model_block_the_report_has_no_model_key(tmp_path: Path) -> None:
    report = run_audit(_spec(tmp_path, ""), RunOptions(write=False)).report
    data = json.loads(render(report, "json"))
    assert "model" not in data and "model" not in data["provenance"]["parameters"]
    assert "Model:" not in render(report, "markdown")


def test_a_bad_model_block_names_the_field(tmp_path: Path) -> None:
    path = _spec(tmp_path, 'model: {version: "2", ownr: x}')
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    text = str(caught.value)
    assert f"{path}:3:1: model.name: missing required key 'name'" in text
    assert "model.ownr: unknown key 'ownr'" in text and "did you mean 'owner'?" in text
