"""Render hooks of the ``ijdi_scan`` scan: settings, edge-case loop, mitigation, criterion."""

from __future__ import annotations

from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import cell
from fairscan.report.models import Finding, ScanResult
from fairscan.report.text import fmt_p, percent
from fairscan.scans.ijdi_scan.models import IjdiCriterion, IjdiScanDetail
from fairscan.scans.mdss_render import finding_html, finding_markdown_with_intervals


def render_markdown(scan: ScanResult) -> list[str]:
    """IJDI settings, the edge-case loop and the mitigation table."""
    if "ijdi" not in scan.detail:
        return []
    info = IjdiScanDetail.model_validate(scan.detail["ijdi"])
    passes = "pass" if info.passes == 1 else "passes"
    source = f"; recommendation: {info.recommendation}" if info.recommendation else ""
    lines = [
        f"IJDI settings: side {info.side}, lambda = {info.lam:g}, base rate from "
        f"{info.base_rate_source}{source}; edge-case loop: {info.passes} scan {passes}, "
        f"{len(info.corrections)} correction(s)"
        + ("" if info.converged else " (stopped at the pass cap)")
        + ".",
        "",
    ]
    if info.mitigation is None:
        return lines
    lines += [
        f"Mitigation (iterative thresholds): {len(info.mitigation)} correction(s), "
        f"status {(info.mitigation_status or 'not needed').replace('_', ' ')}.",
        "",
    ]
    if info.mitigation:
        lines += [
            "| subgroup | new threshold | rate before | rate after | score before | p before |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for step in info.mitigation:
            lines.append(
                f"| {cell(step.label)} | {step.threshold:.4f} | {percent(step.rate_before, 1)} "
                f"| {percent(step.rate_after, 1)} | {step.score_before:.2f} "
                f"| {fmt_p(step.p_value_before)} |"
            )
        lines.append("")
    return lines


def render_finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures, then the IJDI criterion (allowed vs observed gap)."""
    lines = finding_markdown_with_intervals(scan, finding)
    if "ijdi" not in finding.detail:
        return lines
    crit = IjdiCriterion.model_validate(finding.detail["ijdi"])
    if crit.observed_gap is None or crit.allowed_gap is None:
        return lines
    verdict = "exceeds" if crit.violated else "does not exceed"
    return [
        *lines,
        f"IJDI criterion: the {crit.rate_name} gap of {100 * crit.observed_gap:.1f} points "
        f"{verdict} the {100 * crit.allowed_gap:.1f} points that the base-rate gap "
        f"({percent(crit.base_rate_inside, 1)} vs {percent(crit.base_rate_outside, 1)}) "
        f"justifies at lambda = {crit.lam:g}.",
        "",
    ]


IJDI_HOOKS = RenderHooks(
    markdown=render_markdown,
    finding_markdown=render_finding_markdown,
    finding_html=finding_html,
)
