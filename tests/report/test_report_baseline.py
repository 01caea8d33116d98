"""Baseline comparison on the v2 contract: findings only, subgroups by overlap, groups by name."""

from __future__ import annotations

import pytest
from report_builders import finding, report, scan

from fairscan.report.baseline import compare_reports, finding_side, scan_items
from fairscan.report.markdown import render_comparison, render_diff
from fairscan.report.verdict import ExitCode, diff_verdict, diff_verdict_of, gated_exit_code

ATTRS = {"race": ["A", "B", "C"], "sex": ["F", "M"]}


def _labels(comparison) -> list[tuple[str, str]]:
    return sorted((e.label, e.match) for e in comparison.entries)


def test_side_reads_the_contract():
    f = finding(
        {"race": ["A"]},
        statistic=("interestingness", 12.5),
        inside=0.7,
        expected=0.5,
        p_value=0.01,
        adjusted_p_value=0.04,
    )
    side = finding_side(f)
    assert side.subgroup == {"race": ["A"]} and side.label == "race = A"
    assert (side.score, side.p_value, side.rate, side.expected_rate) == (12.5, 0.04, 0.7, 0.5)
    assert side.significant is True
    # no adjusted p-value: the raw one; untested: not significant
    untested = finding_side(finding({"race": ["A"]}, p_value=None))
    assert untested.p_value is None and untested.significant is False
    # a named group without a subgroup
    group = finding_side(finding(group="African-American", statistic=("lower_bound", 0.02)))
    assert group.subgroup == {"group": ["African-American"]} and group.label == "African-American"
    # everyone ({}) stays a subgroup
    assert finding_side(finding({}, label="everyone")).subgroup == {}


def test_items_are_the_findings_keyed_by_subgroup_or_group_name():
    s = scan(
        [
            finding({"sex": ["F"], "race": ["B", "A"]}),
            finding(group="race = A", subgroup={"race": ["A"]}),
            finding(group="filter group"),
        ]
    )
    items = scan_items(s)
    assert [(i.key, i.by_name) for i in items] == [
        ("race=A|B;sex=F", False),
        ("group:race = A", True),
        ("group:filter group", True),
    ]


def test_subgroups_match_exactly_then_by_overlap():
    base = report(scan([finding({"race": ["A"]})]), attributes=ATTRS)
    same = compare_reports(base, base)
    assert _labels(same) == [("persisting", "exact")]
    shifted = report(scan([finding({"race": ["A", "B"]})]), attributes=ATTRS)
    changed = compare_reports(base, shifted)
    assert _labels(changed) == [("changed", "overlap")]
    assert changed.entries[0].similarity == pytest.approx(0.5)
    far = report(scan([finding({"race": ["C"], "sex": ["F"]})]), attributes=ATTRS)
    assert _labels(compare_reports(base, far)) == [("new", "none"), ("resolved", "none")]


def test_groups_match_by_name_only():
    by_name = report(
        scan([finding(group="race = A", subgroup={"race": ["A"]})], id="flags", type="flag"),
        attributes=ATTRS,
    )
    assert _labels(compare_reports(by_name, by_name)) == [("persisting", "exact")]
    # the same subgroup reported without a group name is a different result
    as_subgroup = report(
        scan([finding({"race": ["A"]})], id="flags", type="flag"), attributes=ATTRS
    )
    assert _labels(compare_reports(by_name, as_subgroup)) == [("new", "none"), ("resolved", "none")]
    # a group whose subgroup overlaps another group's is not matched by overlap
    other = report(
        scan(
            [finding(group="race in {A, B}", subgroup={"race": ["A", "B"]})],
            id="flags",
            type="flag",
        ),
        attributes=ATTRS,
    )
    assert _labels(compare_reports(by_name, other)) == [("new", "none"), ("resolved", "none")]
    # the same name matches whatever its subgroup (a filter group has none)
    renamed = report(scan([finding(group="race = A")], id="flags", type="flag"), attributes=ATTRS)
    assert _labels(compare_reports(by_name, renamed)) == [("persisting", "exact")]


def test_significance_changes_label_new_and_resolved():
    sig = report(scan([finding(group="g", p_value=0.001)], id="flags", type="flag"))
    quiet = report(scan([finding(group="g", p_value=0.5)], id="flags", type="flag"))
    gone = report(scan([], id="flags", type="flag"))
    assert _labels(compare_reports(quiet, sig)) == [("new", "exact")]
    assert _labels(compare_reports(sig, quiet)) == [("resolved", "exact")]
    assert _labels(compare_reports(sig, gone)) == [("resolved", "none")]
    assert compare_reports(quiet, quiet).entries == []  # not significant in either run
    comparison = compare_reports(gone, sig)
    assert comparison.new_significant == 1
    assert gated_exit_code(1, comparison.new_significant, "new_significant") is ExitCode.FINDINGS
    assert gated_exit_code(1, 0, "new_significant") is ExitCode.OK


def test_scans_added_removed_and_type_changes():
    old = report(scan([finding()], id="a"), scan([finding()], id="b"))
    new = report(scan([finding()], id="a", type="bias_scan"), scan([finding()], id="c"))
    comparison = compare_reports(old, new)
    assert comparison.scans_added == ["c"] and comparison.scans_removed == ["b"]
    # same id, another type: nothing to compare, so the current finding is new
    by_scan = {(e.scan_id, e.label) for e in comparison.entries}
    assert by_scan == {("a", "new"), ("b", "resolved"), ("c", "new")}


def test_comparison_markdown_uses_labels():
    base = report(scan([finding(group="African-American", statistic=("lower_bound", 0.02))]))
    gone = report(scan([]))
    comparison = compare_reports(base, gone)
    lines = "\n".join(render_comparison(comparison))
    assert "| **resolved** | `fpr` | African-American | 0.02 → - |" in lines
    text = render_diff(comparison, gone)
    assert text.startswith("# Fairness audit diff: compas-fpr")
    assert "**PASS**: no new significant finding." in text


def test_diff_with_persisting_findings_says_no_new_finding_not_pass():
    """Issue 16: persisting findings are still findings: no bare PASS."""
    base = report(scan([finding(group="African-American", statistic=("lower_bound", 0.02))]))
    comparison = compare_reports(base, base)
    assert comparison.counts["persisting"] == 1 and comparison.new_significant == 0
    text = render_diff(comparison, base)
    assert "PASS" not in text
    # the gate (fail_on significant) fails on them: the line says FAIL, as the code does
    assert (
        "**FAIL**: no new significant finding; 1 persisting finding(s) from the baseline are "
        "still significant." in text
    )
    verdict = diff_verdict_of(base, comparison)
    assert verdict.exit_code == ExitCode.FINDINGS
    assert diff_verdict(comparison, verdict).startswith(
        "FAIL: no new significant finding; 1 persisting"
    )
