"""IJDI-Scan end to end (methods.md §4) through the library API."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, check_spec, load_spec_from_text, prepare_audit, run_prepared
from fairscan.errors import SpecError
from fairscan.report.markdown import render_markdown
from fairscan.scans import SCAN_TYPES, render_hooks
from fairscan.scans.ijdi_scan import IjdiCriterion, IjdiScanDetail

ROOT = Path(__file__).resolve().parents[2]

COMPAS = """
version: 1
name: compas-ijdi
data: {{path: {path}}}
columns: {{outcome: two_year_recid, prediction: prob_decile, recommendation: high_risk}}
attributes: [sex, race, age_group, c_charge_degree, priors]
scans:
{scans}
significance: {{replicates: {replicates}, seed: 0, workers: 1}}
"""


def _run(tmp_path: Path, path: Path, scans: str, replicates: int = 0):
    spec = tmp_path / "x.audit.yaml"
    spec.write_text(COMPAS.format(path=path, scans=scans, replicates=replicates))
    return run_prepared(prepare_audit(spec), RunOptions(write=False)).report


def _score(scan) -> float:
    return scan.findings[0].statistic.value if scan.findings else 0.0


@pytest.mark.shared_data
def test_lambda_zero_with_only_the_recommendation_column_is_the_fpr_scan(compas_csv, tmp_path):
    """Issue 17: an ijdi_scan reads columns.recommendation like every other scan; lambda 0 is
    then exactly the FPR-Scan (TPR-Scan) on the same recommendation (audits/compas-fpr data)."""
    spec = (ROOT / "audits" / "compas-fpr.audit.yaml").read_text()
    head = spec[: spec.index("scans:")].replace("../build/compas.csv", str(compas_csv))
    assert "recommendation: high_risk" in head and "threshold" not in head
    path = tmp_path / "lam0.audit.yaml"
    path.write_text(
        head + "scans:\n"
        "  - {id: fpr, type: fpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ij, type: ijdi_scan, lambda: 0, penalty: 1, restarts: 100}\n"
        "  - {id: tpr, type: tpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ijp, type: ijdi_scan, side: positives, lambda: 0, penalty: 1, restarts: 100}\n"
        "significance: {replicates: 0, seed: 0}\n"
    )
    fpr, ij, tpr, ijp = run_prepared(prepare_audit(path), RunOptions(write=False)).report.scans
    assert ij.findings[0].subgroup == fpr.findings[0].subgroup == {"priors": ["Over 5"]}
    assert ij.findings[0].statistic.value == fpr.findings[0].statistic.value == 95.81993475399541
    assert ijp.findings[0].subgroup == tpr.findings[0].subgroup
    assert ijp.findings[0].statistic.value == tpr.findings[0].statistic.value
    assert ij.detail["ijdi"]["recommendation"] == "high_risk"
    assert ij.findings[0].effect.inside == fpr.findings[0].effect.inside
    assert ij.findings[0].effect.reference == fpr.findings[0].effect.reference


@pytest.mark.shared_data
def test_lambda_zero_equals_fpr_scan_on_compas(compas_csv, tmp_path):
    report = _run(
        tmp_path,
        compas_csv,
        "  - {id: fpr, type: fpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ij, type: ijdi_scan, lambda: 0, base_rate: prob_decile, threshold: 0.45, threshold_rule: gt, penalty: 1, restarts: 100}\n"
        "  - {id: ijt, type: tpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ijp, type: ijdi_scan, side: positives, lambda: 0, base_rate: prob_decile, threshold: 0.45, threshold_rule: gt, penalty: 1, restarts: 100}",
    )
    fpr, ij, tpr, ijp = report.scans
    assert ij.findings[0].subgroup == fpr.findings[0].subgroup == {"priors": ["Over 5"]}
    assert _score(ij) == _score(fpr)
    assert _score(ijp) == _score(tpr)
    assert ijp.findings[0].subgroup == tpr.findings[0].subgroup
    assert ij.detail["ijdi"]["recommendation"] == "prob_decile > 0.45"


@pytest.mark.shared_data
def test_larger_lambda_never_raises_the_score_on_compas(compas_csv, tmp_path):
    lambdas = [0, 0.25, 0.5, 1, 1.5, 2, 3, 5]
    scans = "\n".join(
        f"  - {{id: l{i}, type: ijdi_scan, lambda: {lam}, base_rate: prob_decile, threshold: 0.45, threshold_rule: gt, penalty: 1, restarts: 100}}"
        for i, lam in enumerate(lambdas)
    )
    report = _run(tmp_path, compas_csv, scans)
    scores = [_score(s) for s in report.scans]
    assert scores[0] == pytest.approx(95.819935, abs=1e-6)
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(scores)), scores
    assert scores[-1] == 0.0
    finding = report.scans[3].findings[0]
    crit = IjdiCriterion.model_validate(finding.detail["ijdi"])
    assert crit.violated
    assert crit.allowed_gap == pytest.approx(1.0 * (crit.base_rate_inside - crit.base_rate_outside))
    # the finding's effect: the FPR inside vs the other true negatives, and the expectation
    assert finding.effect.metric == "false positive rate"
    assert finding.effect.inside == crit.rate_inside
    assert finding.effect.reference == crit.rate_outside
    assert finding.effect.reference_name == "the other true negatives"
    assert finding.effect.expected is not None and finding.effect.expected < crit.rate_inside
    assert finding.statistic.name == "penalised_score"


SYNTH = """
version: 1
name: synth
data: {{path: d.csv}}
columns: {{outcome: y, prediction: score, threshold: 0.5, threshold_rule: gt}}
attributes: [a, b]
scans:
  - {{id: ij, type: ijdi_scan, {extra}}}
significance: {{replicates: 19, seed: 3, workers: 1}}
"""


def _synthetic(tmp_path: Path, extra: str, n: int = 4000, seed: int = 0) -> object:
    """Base rate depends on `b`; the model over-flags a = x among negatives beyond it."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z"], n)
    b = rng.choice(["lo", "hi"], n)
    p_true = np.where(b == "hi", 0.6, 0.3)
    y = (rng.random(n) < p_true).astype(int)
    score = np.clip(p_true + rng.normal(0, 0.15, n) + 0.25 * (a == "x"), 0, 1)
    lines = ["a,b,y,score,p_true"] + [
        f"{a[i]},{b[i]},{y[i]},{score[i]:.4f},{p_true[i]}" for i in range(n)
    ]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "s.audit.yaml"
    spec.write_text(SYNTH.format(extra=extra))
    return run_prepared(prepare_audit(spec), RunOptions(write=False)).report


def test_ijdi_finds_the_over_flagged_group_and_mitigation_resolves_it(tmp_path):
    report = _synthetic(
        tmp_path,
        "lambda: 1, base_rate: p_true, restarts: 20, threshold: 0.5, threshold_rule: gt, "
        "mitigation: {method: iterative_thresholds, max_corrections: 5}",
    )
    scan = report.scans[0]
    finding = scan.findings[0]
    assert finding.subgroup["a"] == ["x"]
    assert finding.significant is True and scan.status == "significant"
    assert report.verdict.significant_findings == 1
    info = IjdiScanDetail.model_validate(scan.detail["ijdi"])
    assert info.base_rate_source == "p_true"
    steps = info.mitigation
    assert steps and steps[0].rate_after < steps[0].rate_before
    assert info.mitigation_status == "resolved"
    # the seeded numbers of the v1 runner (threshold 0.5, rule gt) are unchanged
    assert finding.statistic.value == pytest.approx(139.92191330761796, rel=1e-12)
    assert [s.threshold for s in steps] == [0.749, 0.7327, 0.9056]
    text = render_markdown(report, render_hooks())
    assert "IJDI settings: side negatives, lambda = 1" in text
    assert "Mitigation (iterative thresholds): 3 correction(s), status resolved." in text
    assert "IJDI criterion: the false positive rate gap" in text


def test_recommendation_from_columns_threshold_and_estimated_base_rate(tmp_path):
    report = _synthetic(tmp_path, "costs: {fp: 1, fn: 2, delta_fpr: 3}, restarts: 20")
    scan = report.scans[0]
    info = IjdiScanDetail.model_validate(scan.detail["ijdi"])
    assert info.lam == pytest.approx(1.0)
    assert info.base_rate_source.startswith("logistic regression on a, b")
    assert info.recommendation == "score > 0.5"  # columns.threshold with its rule
    assert scan.findings[0].subgroup.get("a") == ["x"]
    assert scan.findings[0].statistic.value == pytest.approx(141.88746521742485, rel=1e-12)


def test_needs_the_prediction_only_for_mitigation():
    entry = SCAN_TYPES["ijdi_scan"]
    plain = entry.spec_model.model_validate({"id": "a", "type": "ijdi_scan", "lambda": 1})
    mitigated = entry.spec_model.model_validate(
        {
            "id": "b",
            "type": "ijdi_scan",
            "lambda": 1,
            "mitigation": {"method": "iterative_thresholds"},
        }
    )
    assert entry.roles_for(plain) == {"outcome", "recommendation"}
    assert entry.roles_for(mitigated) == {"outcome", "recommendation", "score"}


def test_without_a_recommendation_source_the_spec_is_rejected():
    text = SYNTH.format(extra="lambda: 1").replace(", threshold: 0.5, threshold_rule: gt", "")
    loaded = load_spec_from_text(text, "s.audit.yaml")
    issues = check_spec(loaded.spec)
    assert any("needs binary recommendations" in i.message for i in issues), issues


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("restarts: 5", "exactly one of `lambda` or `costs`"),
        ("lambda: 1, costs: {fp: 1, fn: 1, delta_fpr: 1}", "exactly one of `lambda` or `costs`"),
        ("side: positives, costs: {fp: 1, fn: 1, delta_fpr: 1}", "costs.delta_tpr"),
        ("lambda: -1", "scans[0].lambda: must be >= 0"),
        ("lambda: 1, threshold: .inf", "threshold must be a finite number"),
    ],
)
def test_spec_errors(extra, message):
    with pytest.raises(SpecError) as info:
        load_spec_from_text(
            SYNTH.format(extra="id: ij, type: ijdi_scan, " + extra).replace(
                "{id: ij, type: ijdi_scan, id: ij, type: ijdi_scan, ", "{id: ij, type: ijdi_scan, "
            ),
            "s.audit.yaml",
        )
    assert message in info.value.render()


def test_per_row_threshold_column_matches_constant_threshold(tmp_path):
    rng = np.random.default_rng(4)
    n = 1500
    a = rng.choice(["x", "y", "z"], n)
    p_true = rng.uniform(0.2, 0.8, n)
    y = (rng.random(n) < p_true).astype(int)
    score = np.clip(p_true + 0.2 * (a == "x"), 0, 1)
    lines = ["a,y,score,p_true,theta"] + [
        f"{a[i]},{y[i]},{score[i]:.4f},{p_true[i]:.4f},0.5" for i in range(n)
    ]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "t.audit.yaml"
    spec.write_text(
        """
version: 1
name: t
data: {path: d.csv}
columns: {outcome: y, prediction: score}
attributes: [a]
scans:
  - {id: const, type: ijdi_scan, lambda: 0.5, base_rate: p_true, threshold: 0.5, restarts: 5}
  - {id: column, type: ijdi_scan, lambda: 0.5, base_rate: p_true, threshold: theta, restarts: 5}
significance: {replicates: 0, seed: 1}
"""
    )
    const, column = run_prepared(prepare_audit(spec), RunOptions(write=False)).report.scans
    assert const.findings[0].subgroup == column.findings[0].subgroup == {"a": ["x"]}
    assert const.findings[0].statistic.value == column.findings[0].statistic.value
    assert column.detail["ijdi"]["recommendation"] == "score >= theta"


def test_base_rate_outside_unit_interval_is_a_scan_error(tmp_path):
    (tmp_path / "d.csv").write_text(
        "a,y,score,p\nx,0,0.6,1.5\ny,1,0.4,0.2\nx,1,0.7,0.3\ny,0,0.2,0.1\n"
    )
    spec = tmp_path / "t.audit.yaml"
    spec.write_text(
        """
version: 1
name: t
data: {path: d.csv}
columns: {outcome: y, prediction: score}
attributes: [a]
scans: [{id: ij, type: ijdi_scan, lambda: 1, base_rate: p, threshold: 0.5, restarts: 2}]
significance: {replicates: 0}
"""
    )
    report = run_prepared(prepare_audit(spec), RunOptions(write=False)).report
    assert report.scans[0].status == "error"
    assert "must hold probabilities in [0, 1]" in report.scans[0].error
    assert report.verdict.exit_code == 2
