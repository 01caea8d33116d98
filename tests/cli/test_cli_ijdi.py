"""`audit lambda`, `audit power` and an IJDI spec through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "audits" / "sample.audit.yaml"


def test_lambda_answers_follow_one_flag_or_repeat_it(cli):
    one = cli("lambda", "--cfn-over-cfp", "2", "--answers", "40,60,55", "20,30,27", code=0)
    repeated = cli(
        "lambda", "--cfn-over-cfp", "2", "--answers", "40,60,55", "--answers", "20,30,27", code=0
    )
    # x = 20, 10; y = 5, 2 -> ratio 4 (100 + 20) / (400 + 100) = 0.96 -> lambda 3 / 0.96
    assert one.stdout == repeated.stdout == "lambda: 3.125\n"


def test_lambda_from_answers(cli):
    out = cli("lambda", "--cfn-over-cfp", "2", "--answers", "40,60,55", code=0)
    assert out.stdout.strip() == "lambda: 3"
    out = cli(
        "lambda", "--cfn-over-cfp", "2", "--answers", "40,60,55", "--side", "positives", code=0
    )
    assert out.stdout.strip() == "lambda: 1.5"


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [("40,60,45", "below the midpoint"), ("40,60", "three whole numbers"), ("41,60,55", "even")],
)
def test_lambda_rejects_bad_answers(cli, answer, phrase):
    out = cli("lambda", "--cfn-over-cfp", "2", "--answers", answer, code=2)
    assert phrase in out.stderr


def test_power_reports_threshold(cli):
    out = cli("power", SAMPLE, "--where", "ethnicity=A", "--where", "sex=Female", code=0)
    assert "h(0.05) = " in out.stdout
    assert "Delta_thresh = " in out.stdout
    assert "ethnicity = A and sex = Female" in out.stdout


@pytest.mark.parametrize(
    ("where", "phrase"),
    [
        ("etnicity=A", "did you mean 'ethnicity'"),
        ("ethnicity=Q", "has no value 'Q'"),
        ("ethnicity", "attribute=value"),
    ],
)
def test_power_bad_subgroup(cli, where, phrase):
    out = cli("power", SAMPLE, "--where", where, code=2)
    assert phrase in out.stderr


def test_ijdi_spec_runs_and_reports_criterion(cli, tmp_path):
    spec = tmp_path / "ijdi.audit.yaml"
    spec.write_text(
        f"""
version: 1
name: ijdi
data: {{path: {ROOT / "sample_data" / "credit.csv"}}}
columns: {{outcome: default, prediction: score}}
attributes: [sex, ethnicity, age_group]
scans:
  - {{id: ij, type: ijdi_scan, lambda: 0.5, threshold: 0.5, threshold_rule: ge, restarts: 20,
      model_attributes: [sex, ethnicity, age_group, employment, income]}}
significance: {{replicates: 19, seed: 0, workers: 1}}
"""
    )
    cli("run", spec, "--out", tmp_path / "out", code=1)
    report = json.loads((tmp_path / "out" / "ijdi.json").read_text())
    scan = report["scans"][0]
    finding = scan["findings"][0]
    assert finding["subgroup"] == {"ethnicity": ["C"], "age_group": ["18-24"]}
    assert finding["detail"]["ijdi"]["violated"] is True
    assert finding["statistic"]["name"] == "penalised_score"
    assert finding["effect"]["metric"] == "false positive rate"
    assert scan["detail"]["ijdi"]["base_rate_source"].startswith("logistic regression")
    assert scan["detail"]["ijdi"]["recommendation"] == "score >= 0.5"
    markdown = (tmp_path / "out" / "ijdi.md").read_text()
    assert "IJDI settings: side negatives, lambda = 0.5" in markdown
