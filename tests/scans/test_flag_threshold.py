"""A scan-level `threshold` compares with any real score: decile >= 5 equals decile/10 >= 0.5."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from fairscan.api import RunOptions, run_audit
from fairscan.report.models import AuditReport


def _flag_report(tmp_path: Path, csv: Path, prediction: str, threshold: float) -> AuditReport:
    spec = tmp_path / f"{prediction}.audit.yaml"
    spec.write_text(
        f"""version: 1
name: flag-threshold
data: {{path: {csv}}}
columns: {{outcome: two_year_recid, prediction: {prediction}}}
attributes: [race, sex, age_cat]
scans:
  - id: fpr-flags
    type: flag
    metric: fpr
    threshold: {threshold}
    target: overall
    groups: {{attributes: [race, sex, age_cat], max_order: 3, min_size: 1}}
    tolerance: 0.05
    bootstrap: 200
significance: {{alpha: 0.1, seed: 0}}
"""
    )
    report = run_audit(spec, RunOptions(write=False)).report
    assert report.scans[0].status != "error", report.scans[0].error
    return report


def _comparable(report: AuditReport) -> tuple[list[dict], list[dict]]:
    scan = report.scans[0]
    findings = [f.model_dump(exclude={"description"}) for f in scan.findings]
    groups = scan.detail["certification"]["groups"]
    return findings, groups


def test_raw_decile_threshold_equals_scaled_decile_threshold(tmp_path, compas_csv):
    frame = pl.read_csv(compas_csv)
    csv = tmp_path / "compas_scaled.csv"
    frame.with_columns((pl.col("decile_score") / 10).alias("decile_tenths")).write_csv(csv)

    raw = _flag_report(tmp_path, csv, "decile_score", 5)
    scaled = _flag_report(tmp_path, csv, "decile_tenths", 0.5)

    raw_findings, raw_groups = _comparable(raw)
    scaled_findings, scaled_groups = _comparable(scaled)
    assert raw_findings and raw_findings == scaled_findings
    assert raw_groups == scaled_groups
    assert raw.verdict.significant_findings == scaled.verdict.significant_findings
    assert raw.verdict.significant_findings == len(raw_findings)


def test_scan_threshold_matches_the_recommendation_column(tmp_path, compas_csv):
    """high_risk is decile_score >= 5 (scripts/prepare_compas.py): the same flags."""
    frame = pl.read_csv(compas_csv)
    assert (frame["high_risk"] == (frame["decile_score"] >= 5).cast(pl.Int64)).all()
    raw = _flag_report(tmp_path, compas_csv, "decile_score", 5)
    spec = tmp_path / "rec.audit.yaml"
    text = (
        (tmp_path / "decile_score.audit.yaml")
        .read_text()
        .replace("prediction: decile_score", "recommendation: high_risk")
        .replace("    threshold: 5\n", "")
    )
    spec.write_text(text)
    rec = run_audit(spec, RunOptions(write=False)).report
    assert _comparable(raw) == _comparable(rec)
    assert [f.label for f in rec.scans[0].findings] == [f.label for f in raw.scans[0].findings]
    assert rec.verdict.significant_findings == len(raw.scans[0].findings)
