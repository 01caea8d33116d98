"""IJDI-Scan end to end (methods.md §4) through the library API."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, prepare_audit, run_prepared
from fairscan.errors import SpecError
from fairscan.spec.load import load_spec_from_text

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


@pytest.mark.shared_data
def test_lambda_zero_equals_fpr_scan_on_compas(compas_csv, tmp_path):
    report = _run(
        tmp_path,
        compas_csv,
        "  - {id: fpr, type: fpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ij, type: ijdi_scan, lambda: 0, base_rate: prob_decile, threshold: 0.45, penalty: 1, restarts: 100}\n"
        "  - {id: ijt, type: tpr_scan, penalty: 1, restarts: 100}\n"
        "  - {id: ijp, type: ijdi_scan, side: positives, lambda: 0, base_rate: prob_decile, threshold: 0.45, penalty: 1, restarts: 100}",
    )
    fpr, ij, tpr, ijp = report.scans
    assert ij.findings[0].subgroup == fpr.findings[0].subgroup == {"priors": ["Over 5"]}
    assert ij.findings[0].score == fpr.findings[0].score
    assert ijp.findings[0].score == tpr.findings[0].score
    assert ijp.findings[0].subgroup == tpr.findings[0].subgroup


@pytest.mark.shared_data
def test_larger_lambda_never_raises_the_score_on_compas(compas_csv, tmp_path):
    lambdas = [0, 0.25, 0.5, 1, 1.5, 2, 3, 5]
    scans = "\n".join(
        f"  - {{id: l{i}, type: ijdi_scan, lambda: {lam}, base_rate: prob_decile, threshold: 0.45, penalty: 1, restarts: 100}}"
        for i, lam in enumerate(lambdas)
    )
    report = _run(tmp_path, compas_csv, scans)
    scores = [s.findings[0].score if s.findings else 0.0 for s in report.scans]
    assert scores[0] == pytest.approx(95.819935, abs=1e-6)
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(scores)), scores
    assert scores[-1] == 0.0
    finding = report.scans[3].findings[0]
    crit = finding.ijdi
    assert crit is not None and crit.violated
    assert crit.allowed_gap == pytest.approx(1.0 * (crit.base_rate_inside - crit.base_rate_outside))


SYNTH = """
version: 1
name: synth
data: {{path: d.csv}}
columns: {{outcome: y, prediction: score}}
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
        "lambda: 1, base_rate: p_true, restarts: 20, mitigation: {method: iterative_thresholds, max_corrections: 5}",
    )
    scan = report.scans[0]
    finding = scan.findings[0]
    assert finding.subgroup["a"] == ["x"]
    assert finding.significant
    assert scan.ijdi is not None and scan.ijdi.base_rate_source == "p_true"
    steps = scan.ijdi.mitigation
    assert steps and steps[0].rate_after < steps[0].rate_before
    assert scan.ijdi.mitigation_status == "resolved"


def test_estimated_base_rate_and_costs(tmp_path):
    report = _synthetic(tmp_path, "costs: {fp: 1, fn: 2, delta_fpr: 3}, restarts: 20")
    scan = report.scans[0]
    assert scan.ijdi.lam == pytest.approx(1.0)
    assert scan.ijdi.base_rate_source.startswith("logistic regression on a, b")
    assert scan.findings[0].subgroup.get("a") == ["x"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("restarts: 5", "exactly one of `lambda` or `costs`"),
        ("lambda: 1, costs: {fp: 1, fn: 1, delta_fpr: 1}", "exactly one of `lambda` or `costs`"),
        ("side: positives, costs: {fp: 1, fn: 1, delta_fpr: 1}", "costs.delta_tpr"),
        ("lambda: -1", "scans[0].lambda: must be >= 0"),
        ("lambda: 1, threshold: 1.5", "threshold must lie in [0, 1]"),
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
    assert const.findings[0].score == column.findings[0].score


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
scans: [{id: ij, type: ijdi_scan, lambda: 1, base_rate: p, restarts: 2}]
significance: {replicates: 0}
"""
    )
    report = run_prepared(prepare_audit(spec), RunOptions(write=False)).report
    assert report.scans[0].status == "error"
    assert "must hold probabilities in [0, 1]" in report.scans[0].error
    assert report.verdict.exit_code == 2
