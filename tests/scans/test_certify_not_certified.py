"""certify reports `not certified` as its own status, never "significant", and keeps every bound
within the range the gap can take (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, run_audit
from fairscan.cli.console import findings_text, summary_table, verdict_text
from fairscan.cli.github import finding_annotations
from fairscan.report.html import render_html
from fairscan.report.junit import render_junit
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditReport
from fairscan.report.sarif import render_sarif


def _csv(tmp_path: Path, per_group: int, seed: int = 0) -> Path:
    """Groups a, b, c with the same positive rate 0.5 and a true-outcome column: no disparity,
    and groups small enough that no interval excludes 0."""
    rng = np.random.default_rng(seed)
    grp = np.repeat(["a", "b", "c"], per_group)
    y = rng.integers(0, 2, len(grp))
    rec = rng.integers(0, 2, len(grp))
    rows = ["grp,y,rec"] + [f"{g},{a},{b}" for g, a, b in zip(grp, y, rec, strict=True)]
    path = tmp_path / "same.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(tmp_path: Path, csv: Path, scan: str, gate: str = "significant") -> AuditReport:
    spec = tmp_path / "s.audit.yaml"
    spec.write_text(
        f"""version: 1
name: certify-words
data: {{path: {csv}}}
columns: {{outcome: y, recommendation: rec}}
attributes: [grp]
scans:
  - {scan}
significance: {{alpha: 0.1, seed: 3}}
gate: {{fail_on: {gate}}}
"""
    )
    report = run_audit(spec, RunOptions(write=False)).report
    assert report.scans[0].status != "error", report.scans[0].error
    return report


FAIRNESS = (
    "{id: fair, type: certify, metric: positive_rate, target: overall, groups: {attributes: "
    "[grp]}, bound: two_sided, side: both, tolerance: 0.05, bootstrap: 200}"
)


def test_groups_whose_interval_contains_zero_are_not_certified_never_significant(tmp_path):
    report = _run(tmp_path, _csv(tmp_path, 60), FAIRNESS)
    scan = report.scans[0]
    groups = scan.detail["certification"]["groups"]
    assert all(g["lower"] < 0 < g["upper"] for g in groups)  # nothing shows a disparity
    assert len(scan.findings) == 3
    for finding in scan.findings:
        assert finding.significant is False and finding.certified is False
    assert scan.status == "not_certified" and scan.significant_count() == 0
    v = report.verdict
    assert (v.status, v.exit_code, v.significant_findings, v.not_certified) == ("clean", 0, 0, 3)


def test_the_gate_fails_on_not_certified_groups_only_when_asked(tmp_path):
    report = _run(tmp_path, _csv(tmp_path, 60), FAIRNESS, gate="not_certified")
    v = report.verdict
    assert (v.status, v.exit_code, v.significant_findings, v.not_certified) == (
        "findings",
        1,
        0,
        3,
    )
    line = verdict_text(report, []).plain
    assert (
        line.startswith("FAIL") and "3 group(s) not certified (gate: fail on not_certified)" in line
    )


def test_renderers_say_not_certified_never_significant(tmp_path):
    report = _run(tmp_path, _csv(tmp_path, 60), FAIRNESS)
    md = render_markdown(report)
    assert "**PASS**: no significant finding in 1 scan. 3 group(s) not certified." in md
    assert "| not certified |" in md and "3 findings, 0 significant, 3 not certified." in md
    html = render_html(report)
    assert ">not certified</span>" in html and "3 not certified" in html
    assert 'class="badge b-significant"' not in html
    junit = render_junit(report)
    assert 'type="not_certified"' in junit and "significant_finding" not in junit
    sarif = json.loads(render_sarif(report))["runs"][0]
    assert sarif["properties"]["notCertified"] == 3
    assert [r["properties"]["certified"] for r in sarif["results"]] == [False] * 3
    assert "not certified" in str(summary_table(report).columns[2]._cells)
    assert len(findings_text(report)) == 3
    annotations = finding_annotations(report, [None])
    assert len(annotations) == 3 and all("group not certified" in a for a in annotations)
    assert not any("significant finding" in a for a in annotations)


def _ppv_csv(tmp_path: Path) -> Path:
    """A PPV per group on a handful of flagged rows: intervals beyond +-1 unclipped (before
    issue 34 group c's two-sided interval about the reference was [-0.516, +1.549])."""
    rng = np.random.default_rng(5)
    n = {"a": 300, "b": 3, "c": 2}  # b and c: under p_* = 1% of the flagged rows
    rows = ["grp,y,rec"]
    for g, k in n.items():
        rec = np.ones(k, dtype=int)
        y = rng.integers(0, 2, k)
        rows += [f"{g},{a},{b}" for a, b in zip(y, rec, strict=True)]
    path = tmp_path / "ppv.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    ("target", "limits"),
    [
        ("{reference: {column: grp, value: a}}", (-1.0, 1.0)),  # a rate minus a rate
        ("overall", (-1.0, 1.0)),
        ("0.3", (-0.3, 0.7)),  # a rate minus a known 0.3
    ],
)
def test_ppv_bounds_stay_within_the_range_of_the_gap(tmp_path, target, limits):
    report = _run(
        tmp_path,
        _ppv_csv(tmp_path),
        f"{{id: ppv, type: certify, metric: ppv, target: {target}, groups: {{attributes: "
        "[grp]}, bound: two_sided, side: both, tolerance: 0.05, bootstrap: 200}",
    )
    groups = report.scans[0].detail["certification"]["groups"]
    small = [g for g in groups if g["name"] in ("grp = b", "grp = c")]
    assert small and all(g["lower"] is not None for g in small)
    lo, hi = limits
    for g in groups:
        assert lo - 1e-12 <= g["lower"] <= g["gap"] <= g["upper"] <= hi + 1e-12, g
    # the small groups' intervals would leave the range: they are cut at its ends
    assert any(g["lower"] == pytest.approx(lo) or g["upper"] == pytest.approx(hi) for g in small)


def test_the_sarif_rule_of_certify_comes_from_its_own_package(tmp_path):
    """The certify wording of a SARIF rule is the type's render hook (scans/certification),
    not a scan-type test in the SARIF writer: with the registry's hooks it reads as certify's,
    without them as any scan's."""
    from fairscan.report.formats import render
    from fairscan.scans import render_hooks

    report = _run(tmp_path, _csv(tmp_path, 60), FAIRNESS)
    own = json.loads(render(report, "sarif", render_hooks()))["runs"][0]["tool"]["driver"]
    plain = json.loads(render_sarif(report))["runs"][0]["tool"]["driver"]
    assert "groups with a certified" in own["rules"][0]["shortDescription"]["text"]
    assert "differs significantly" in plain["rules"][0]["shortDescription"]["text"]
    sarif_writer = Path(__file__).resolve().parents[2] / "src/fairscan/report/sarif.py"
    assert '"certify"' not in sarif_writer.read_text(encoding="utf-8")
