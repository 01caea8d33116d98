"""Version 1 reports (written by fairscan before the v2 contract) upgraded to schema_version 2.

The fixtures in data/ are real v1 reports written by the v1 code (COMPAS: fpr_scan, bias_scan,
ijdi_scan with mitigation, cbs with each_value, flag, certify with both claims; Adult: subroc),
with long arrays (null scores, ROC points) shortened.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from fairscan.report.baseline import compare_reports
from fairscan.report.formats import report_json
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditReport
from fairscan.report.upgrade import upgrade_report

DATA = Path(__file__).resolve().parent / "data"


def _v1(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compas() -> AuditReport:
    return AuditReport.model_validate(upgrade_report(_v1("v1_compas.json")))


@pytest.fixture(scope="module")
def adult() -> AuditReport:
    return AuditReport.model_validate(upgrade_report(_v1("v1_adult_subroc.json")))


def test_v1_compas_report_becomes_v2(compas: AuditReport) -> None:
    v1 = _v1("v1_compas.json")
    assert v1["schema_version"] == 1 and compas.schema_version == 2
    # every v1 result that counted is now a finding, and the verdict count is unchanged
    counts = {s.id: (len(s.findings), s.significant_count()) for s in compas.scans}
    assert counts == {
        "fpr": (1, 1),
        "calibration": (1, 1),
        "ijdi": (1, 1),
        "cbs-fpr": (3, 0),
        "fpr-flags": (2, 2),
        "ppv-cert": (1, 1),
        "fair-cert": (1, 1),
    }
    assert compas.verdict.significant_findings == v1["verdict"]["significant_findings"] == 7
    assert [s.status for s in compas.scans] == [s["status"] for s in v1["scans"]]


def test_v1_subset_scan_findings(compas: AuditReport) -> None:
    scans = {s.id: s for s in compas.scans}
    fpr = scans["fpr"].findings[0]
    assert fpr.label == "priors = Over 5" and fpr.group is None
    assert fpr.statistic.name == "penalised_score"
    assert fpr.statistic.value == pytest.approx(95.8199, abs=1e-3)
    assert fpr.effect.metric == "false positive rate"
    assert fpr.effect.inside == pytest.approx(232 / 349)
    assert fpr.effect.reference_count == 3363 - 349
    assert fpr.effect.expected == pytest.approx(0.3027, abs=1e-4)
    assert {"llr", "q", "penalty_cost", "observed_count", "expected_count"} <= set(fpr.detail)
    assert fpr.adjusted_p_value is None
    # scan-level v1 blocks move to detail under their v1 names
    assert scans["calibration"].detail["critical_value"]["profiles"] == 111
    assert scans["ijdi"].detail["ijdi"]["mitigation_status"] == "cap"
    assert scans["ijdi"].findings[0].detail["ijdi"]["violated"] is True
    assert scans["ijdi"].findings[0].effect.metric == "false positive rate"
    # CBS: protected vs comparable non-protected rows; Bonferroni over the runs (one per race)
    cbs = scans["cbs-fpr"].findings[0]
    assert cbs.effect.inside_count == 1168 and cbs.effect.reference_count == 1433
    assert cbs.detail["cbs"]["protected"] == "race = African-American"
    runs = len(scans["cbs-fpr"].detail["cbs"]["runs"])
    assert runs == 6
    assert cbs.p_value is not None
    assert cbs.adjusted_p_value == pytest.approx(min(1, runs * cbs.p_value))


def test_v1_certify_and_flag_groups(compas: AuditReport) -> None:
    scans = {s.id: s for s in compas.scans}
    flags = scans["fpr-flags"].findings
    # intersection groups keep their subgroup (group: null, as the v2 scans report them)
    assert [f.subgroup for f in flags] == [
        {"race": ["African-American"], "sex": ["Male"]},
        {"race": ["African-American"]},
    ]
    assert [f.group for f in flags] == [None, None]
    assert flags[0].detail["name"] == "race = African-American & sex = Male"
    assert flags[0].label == "race = African-American and sex = Male"
    assert flags[0].statistic.name == "gap" and flags[0].significant is True
    assert flags[0].adjusted_p_value is not None and flags[0].adjusted_p_value < 1e-10
    groups = scans["fpr-flags"].detail["certification"]["groups"]
    assert len(groups) == 20  # all groups kept, the hits marked
    assert sum(g["finding"] for g in groups) == 2 and flags[0].detail["finding"] is True
    # claim disparity: the certified filter group, without a subgroup
    ppv = scans["ppv-cert"].findings[0]
    assert (ppv.group, ppv.subgroup, ppv.label) == ("African-American", None, "African-American")
    assert ppv.statistic.name == "lower_bound"
    assert ppv.statistic.value == pytest.approx(0.022055, abs=1e-6)
    assert ppv.detail["filter"] == "race = 'African-American'"
    # claim fairness: the tested group that could not be certified is the finding
    fair = scans["fair-cert"].findings[0]
    assert fair.statistic.name == "upper_bound" and "cannot be certified" in fair.description
    v1_groups = _v1("v1_compas.json")["scans"][6]["certification"]["groups"]
    failed = [g["name"] for g in v1_groups if g["certified"] is False and g["status"] == "ok"]
    assert [fair.detail["name"]] == failed == ["race = African-American"]
    assert fair.subgroup == {"race": ["African-American"]} and fair.group is None


def test_v1_subroc_patterns(adult: AuditReport) -> None:
    (scan,) = adult.scans
    assert scan.type == "subroc" and len(scan.findings) == 5
    assert adult.verdict.significant_findings == 5
    top = scan.findings[0]
    assert top.label == "marital-status = Married-civ-spouse"
    assert top.statistic.name == "interestingness"
    assert top.statistic.value == pytest.approx(467.7213, abs=1e-3)
    assert top.adjusted_p_value == pytest.approx(0.037496, abs=1e-6)
    assert top.p_value == pytest.approx(0.0099, abs=1e-4)
    assert top.effect.metric == "ROC AUC"
    assert top.effect.reference_name == "everyone in the search set"
    assert top.effect.inside == pytest.approx(0.84167, abs=1e-5)
    assert top.effect.inside_count == top.size == 6995
    assert top.detail["rank"] == 1 and top.detail["validation"]["size"] == 7108
    assert "roc" in top.detail
    # the unreported candidates stay in the scan detail
    patterns = scan.detail["subroc"]["patterns"]
    assert any(not p["reported"] for p in patterns)
    assert patterns[0]["label"] == top.label


def test_v2_input_is_unchanged(compas: AuditReport) -> None:
    data = json.loads(report_json(compas))
    assert upgrade_report(data) is data
    # upgrading does not modify its input
    v1 = _v1("v1_compas.json")
    before = copy.deepcopy(v1)
    upgrade_report(v1)
    assert v1 == before


def test_upgraded_report_renders_and_compares(compas: AuditReport) -> None:
    text = render_markdown(compas)
    assert "race = African-American and sex = Male" in text and "lower bound" in text
    same = compare_reports(compas, compas)
    assert same.new_significant == 0 and same.counts["persisting"] == 7
    assert all(e.match == "exact" for e in same.entries)


@pytest.mark.parametrize("name", ["v1_compas.json", "v1_adult_subroc.json"])
def test_upgraded_reports_render_with_the_registry_hooks(name: str) -> None:
    """The scan types' hooks read the upgraded detail blocks (labels added where v2 has them)."""
    from fairscan.report.html import render_html
    from fairscan.scans import render_hooks

    upgraded = AuditReport.model_validate(upgrade_report(_v1(name)))
    hooks = render_hooks()
    assert render_markdown(upgraded, hooks).startswith("# Fairness audit:")
    assert render_html(upgraded, hooks).startswith("<!DOCTYPE html>")
