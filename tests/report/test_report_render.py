"""Report rendering: strict JSON, Markdown wording, atomic writes."""

from __future__ import annotations

import json
import math

import pytest

from fairscan.report.markdown import render_markdown
from fairscan.report.models import (
    AuditReport,
    Environment,
    Finding,
    NullDistribution,
    Population,
    Provenance,
    ScanResult,
    ScanTiming,
    Verdict,
)
from fairscan.report.text import describe_subgroup
from fairscan.report.write import atomic_write_text, report_json, write_reports


def _report(p_value: float | None = 0.001, outside: float | None = 0.3) -> AuditReport:
    finding = Finding(
        subgroup={"priors": ["Over 5"]},
        score=95.82,
        llr=96.82,
        penalty_cost=1.0,
        size=349,
        observed_count=232,
        expected_count=105.6,
        observed_rate=232 / 349,
        expected_rate=0.3027,
        outside_rate=outside,
        q=4.57,
        p_value=p_value,
        significant=None if p_value is None else p_value <= 0.05,
        null_quantile=None if p_value is None else 8.1,
        description="Among true negatives, the 349 rows with priors = Over 5 are flagged 66% of the time.",
    )
    scan = ScanResult(
        id="fpr",
        type="fpr_scan",
        status="significant" if p_value is not None else "untested",
        parameters={"penalty": 1.0, "restarts": 100},
        timing=ScanTiming(search_seconds=0.01, significance_seconds=2.0, total_seconds=2.01),
        population=Population(
            description="true negatives (y = 0)",
            size=3363,
            observed_rate=0.3027,
            expected_rate=0.3027,
            observed_label="recommended positive",
        ),
        findings=[finding],
        null_distribution=None
        if p_value is None
        else NullDistribution(
            replicates=999,
            alpha=0.05,
            quantile=8.1,
            mean=5.0,
            max=12.0,
            exceed_count=0,
            scores=[1.0, 2.0],
        ),
    )
    return AuditReport(
        name="compas-fpr",
        verdict=Verdict(
            status="findings", exit_code=1, significant_findings=1, scans=1, scans_with_errors=0
        ),
        provenance=Provenance(
            tool_version="0.1.0",
            spec_path="s.audit.yaml",
            spec_sha256="a" * 64,
            data_path="d.csv",
            data_sha256="b" * 64,
            data_rows=7214,
            rows_after_filter=6172,
            filter=None,
            seed=0,
            seed_entropy="0",
            utc_time="2026-11-22T00:00:00Z",
            finished_utc_time="2026-11-22T00:00:01Z",
            total_seconds=1.0,
            workers=2,
            parameters={},
            environment=Environment(python="3.11", platform="x", packages={}),
        ),
        attributes={"priors": ["None", "1 to 5", "Over 5"]},
        scans=[scan],
    )


def _strict(text: str) -> object:
    def reject(name: str) -> None:
        raise ValueError(name)

    return json.loads(text, parse_constant=reject)


def test_json_is_strict_and_nan_becomes_null():
    report = _report(outside=math.nan)
    data = _strict(report_json(report))
    assert data["scans"][0]["findings"][0]["outside_rate"] is None
    assert data["scans"][0]["timing"] == {
        "search_seconds": 0.01,
        "significance_seconds": 2.0,
        "total_seconds": 2.01,
    }


def test_untested_finding_has_null_p_value():
    data = _strict(report_json(_report(p_value=None)))
    finding = data["scans"][0]["findings"][0]
    assert (
        finding["p_value"] is None
        and finding["significant"] is None
        and finding["null_quantile"] is None
    )


def test_markdown_leads_with_the_verdict_and_explains_findings():
    text = render_markdown(_report())
    first = [line for line in text.splitlines() if line][1]
    assert first.startswith("**FAIL**")
    assert "priors = Over 5" in text
    assert "Among true negatives" in text
    assert "0 of 999 null replicates" in text
    assert "## Provenance" in text and "6172 after filter" in text


def test_markdown_untested():
    text = render_markdown(_report(p_value=None))
    assert "not tested" in text


@pytest.mark.parametrize(
    ("subgroup", "words"),
    [
        ({}, "everyone (no attribute constrained)"),
        ({"race": ["A"]}, "race = A"),
        ({"race": ["A", "B"], "sex": ["F"]}, "race in {A, B} and sex = F"),
    ],
)
def test_describe_subgroup(subgroup, words):
    assert describe_subgroup(subgroup) == words


def test_reports_are_written_atomically(tmp_path):
    paths = write_reports(_report(), tmp_path / "out", ["json", "markdown"])
    assert [p.name for p in paths] == ["compas-fpr.json", "compas-fpr.md"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "compas-fpr.json",
        "compas-fpr.md",
    ]


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
