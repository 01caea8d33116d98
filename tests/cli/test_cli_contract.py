"""Issue 17 end to end through the CLI: one result contract over several scan types on real
data, labels as the data come (a positive label, range labels), and per-scan columns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_support import FAST, Invoke

import fairscan

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_package_name_is_an_attribute_error() -> None:
    # the names themselves are pinned both ways in tests/test_exported_members.py
    with pytest.raises(AttributeError):
        _ = fairscan.not_a_name  # type: ignore[attr-defined]


@pytest.mark.shared_data
def test_compas_flagging_and_a_certificate_report_every_result_as_a_finding(
    cli: Invoke, compas_csv: Path, tmp_path: Path
) -> None:
    """The issue's example: FPR flagging plus a PPV certificate count 14 significant results,
    and `findings` holds exactly those 14."""
    spec = tmp_path / "both.audit.yaml"
    spec.write_text(
        f"""
version: 1
name: compas-flag-and-certify
data: {{path: {compas_csv}}}
columns: {{outcome: two_year_recid, recommendation: high_risk}}
attributes: [race, sex, age_cat]
scans:
  - id: fpr-flags
    type: flag
    metric: fpr
    groups: {{attributes: [race, sex, age_cat], max_order: 3}}
    tolerance: 0.05
  - id: ppv
    type: certify
    metric: ppv
    target: {{reference: {{column: race, value: Caucasian}}}}
    groups: [{{name: African-American, filter: "race = 'African-American'"}}]
    bound: lower
significance: {{alpha: 0.1, seed: 0}}
output: {{dir: out, formats: [json, markdown, junit]}}
""",
        encoding="utf-8",
    )
    cli("run", spec, code=1)
    report = json.loads((tmp_path / "out" / "compas-flag-and-certify.json").read_text())
    flags, certificate = report["scans"]
    assert len(flags["findings"]) == 13 and len(certificate["findings"]) == 1
    significant = [f for s in report["scans"] for f in s["findings"] if f["significant"] is True]
    assert report["verdict"]["significant_findings"] == len(significant) == 14
    assert certificate["findings"][0]["group"] == "African-American"
    assert certificate["findings"][0]["subgroup"] is None
    assert certificate["findings"][0]["statistic"]["name"] == "lower_bound"
    top = flags["findings"][0]
    assert top["statistic"]["name"] == "gap" and top["adjusted_p_value"] is not None
    assert top["effect"]["metric"] == "false positive rate"
    # every group, flagged or not, stays in the scan's detail
    assert len(flags["detail"]["certification"]["groups"]) > 13
    markdown = (tmp_path / "out" / "compas-flag-and-certify.md").read_text()
    assert all(f["description"] in markdown for f in flags["findings"])


@pytest.mark.shared_data
def test_german_credit_class_coded_1_2_needs_no_preprocessing(
    cli: Invoke, shared_data: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "german.audit.yaml"
    spec.write_text(
        f"""
version: 1
name: german
data: {{path: {shared_data / "german" / "german.csv"}}}
columns: {{outcome: class, positive: 2, prediction: credit_amount, threshold: 5000}}
attributes: [personal_status, duration, housing]
discretize: {{duration: {{quantiles: 5}}}}
scans: [{{id: fpr, type: fpr_scan, penalty: 1, restarts: 50}}]
significance: {{seed: 0}}
output: {{dir: out}}
""",
        encoding="utf-8",
    )
    cli("run", spec, *FAST, code=1)
    report = json.loads((tmp_path / "out" / "german.json").read_text())
    (finding,) = report["scans"][0]["findings"]
    # bad credit (class 2) is the positive class: true negatives are the 700 good ones
    assert report["scans"][0]["population"]["size"] == 700
    assert "(class != 2)" in finding["description"]
    # contiguous duration bins read as a range, not as a list of bins
    assert finding["subgroup"] == {"duration": ["[30, 72]"]}
    assert finding["label"] == "duration >= 30"
    assert "credit_amount >= 5000" in finding["description"]


def test_one_spec_audits_several_targets_of_one_table(cli: Invoke, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 4000
    g = rng.choice(["a", "b", "c"], size=n)
    h = rng.choice(["x", "y"], size=n)
    p1 = np.full(n, 0.3)
    p2 = np.where((g == "a") & (h == "x"), 0.7, 0.3)  # over-estimated for a & x
    y1 = (rng.random(n) < p1).astype(int)
    y2 = (rng.random(n) < 0.3).astype(int)
    pl.DataFrame({"g": g, "h": h, "y1": y1, "y2": y2, "p1": p1, "p2": p2}).write_csv(
        tmp_path / "d.csv"
    )
    spec = tmp_path / "two.audit.yaml"
    spec.write_text(
        """
version: 1
name: two-targets
data: {path: d.csv}
columns: {outcome: y1, prediction: p1}
attributes: [g, h]
scans:
  - {id: first, type: bias_scan, restarts: 20}
  - {id: second, type: bias_scan, outcome: y2, prediction: p2, restarts: 20}
significance: {seed: 0}
output: {dir: out}
""",
        encoding="utf-8",
    )
    cli("run", spec, *FAST, code=1)
    report = json.loads((tmp_path / "out" / "two-targets.json").read_text())
    first, second = report["scans"]
    assert first["status"] in ("not_significant", "no_finding")
    assert second["status"] == "significant"
    assert second["findings"][0]["subgroup"] == {"g": ["a"], "h": ["x"]}
    assert "y2 = 1" in second["findings"][0]["description"]
    assert report["verdict"]["significant_findings"] == 1


def test_a_threshold_on_a_score_outside_0_1_is_accepted_but_not_as_a_probability(
    cli: Invoke, tmp_path: Path
) -> None:
    rng = np.random.default_rng(4)
    n = 500
    decile = rng.integers(1, 11, size=n)
    y = (rng.random(n) < decile / 12).astype(int)
    pl.DataFrame({"g": rng.choice(["a", "b"], size=n), "y": y, "decile": decile}).write_csv(
        tmp_path / "d.csv"
    )
    spec = tmp_path / "t.audit.yaml"
    text = """
version: 1
name: deciles
data: {path: d.csv}
columns: {outcome: y, prediction: decile, threshold: 5}
attributes: [g]
scans: [{id: fpr, type: fpr_scan, restarts: 5}]
significance: {seed: 0}
output: {dir: out}
"""
    spec.write_text(text, encoding="utf-8")
    cli("validate", spec, code=0)
    spec.write_text(text.replace("type: fpr_scan", "type: bias_scan"), encoding="utf-8")
    outcome = cli("validate", spec, code=2)
    assert "columns.prediction" in outcome.stderr
    assert "probabilities in [0, 1]" in outcome.stderr


def test_a_scan_types_own_spec_checks_run_without_data(cli: Invoke, tmp_path: Path) -> None:
    """`check` hooks of the registry (here CBS: the protected column defines A) run in
    `audit validate --no-data` and point at the scan's field."""
    spec = tmp_path / "cbs.audit.yaml"
    spec.write_text(
        """
version: 1
name: cbs-check
data: {path: not-there.csv}
columns: {outcome: y, recommendation: r}
attributes: [race]
scans:
  - id: c
    type: cbs
    protected: {column: race, value: A}
    metric: fpr
    model_attributes: [sex, race]
""",
        encoding="utf-8",
    )
    outcome = cli("validate", spec, "--no-data", code=2)
    assert "scans[0].protected.column: no scan attribute is left" in outcome.stderr
    assert "scans[0].model_attributes[1]: model_attributes must not include" in outcome.stderr
    assert f"{spec}:10:" in outcome.stderr  # the `protected:` line
