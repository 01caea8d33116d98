"""Render hooks of the ``cbs`` scan: the cell, the runs table, model calibration, per-run nulls."""

from __future__ import annotations

from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import cell
from fairscan.report.models import Finding, ScanResult
from fairscan.report.sink_escape import md_text
from fairscan.report.text import fmt_number, fmt_p, percent
from fairscan.scans.cbs.models import CbsCalibration, CbsFindingDetail, CbsScanDetail
from fairscan.scans.mdss_render import finding_markdown


def _calibration_lines(title: str, cal: CbsCalibration) -> list[str]:
    lines = [
        f"{title}: {cal.model}, fitted on {cal.fitted_on} ({cal.rows} rows); "
        f"Brier score {cal.brier:.4f}.",
        "",
        "| predicted in | rows | weight | mean predicted | mean observed |",
        "|---|---:|---:|---:|---:|",
    ]
    for b in cal.bins:
        lines.append(
            f"| [{b.low:.1f}, {b.high:.1f}) | {b.rows} | {b.weight:.1f} | {b.mean_predicted:.3f} "
            f"| {b.mean_observed:.3f} |"
        )
    lines.append("")
    return lines


def _detail(scan: ScanResult) -> CbsScanDetail | None:
    raw = scan.detail.get("cbs")
    return None if raw is None else CbsScanDetail.model_validate(raw)


def render_markdown(scan: ScanResult) -> list[str]:
    """The cell, the runs table, sigma notes and the calibration of both models per run."""
    info = _detail(scan)
    if info is None:
        return []
    sigma = f", sigma {info.sigma_rule}" if info.sigma_rule else ""
    lines = [
        f"CBS cell: {info.cell}; direction {info.direction}; {info.likelihood} score{sigma}; "
        f"I-hat from {info.expectations}.",
        "",
        "| protected class | status | scanned | comparison | J(S*) | F(S*) | p-value | alpha |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in info.runs:
        lines.append(
            f"| {cell(run.protected)} | {run.status.replace('_', ' ')} | {run.scanned_rows} "
            f"| {run.comparison_rows} | {fmt_number(run.score)} | {fmt_number(run.llr)} "
            f"| {fmt_p(run.p_value)} | {run.alpha:.4g} |"
        )
    lines.append("")
    for run in info.runs:
        protected = md_text(run.protected)  # an attribute name from the data
        if run.reason:
            lines += [f"{protected}: not auditable: {md_text(run.reason)}.", ""]
        if run.sigma is not None:
            lines += [
                f"{protected}: sigma = {run.sigma:.4g}, mean Delta = "
                f"{fmt_number(run.mean_delta, 4)} (a non-zero mean can be a Jensen gap, not "
                "bias; the permutation test calibrates it).",
                "",
            ]
        if run.propensity_calibration is not None:
            lines += _calibration_lines(
                f"{protected}: propensity model", run.propensity_calibration
            )
        if run.outcome_calibration is not None:
            lines += _calibration_lines(f"{protected}: outcome model", run.outcome_calibration)
    return lines


def render_finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures, then the same subgroup among the non-protected rows."""
    lines = finding_markdown(scan, finding)
    raw = finding.detail.get("cbs")
    if raw is None:
        return lines
    d = CbsFindingDetail.model_validate(raw)
    return [
        *lines,
        f"{d.protected}: {d.metric} {percent(d.protected_metric, 1)} in S* "
        f"({d.protected_rows} rows) vs {percent(d.protected_expected, 1)} expected; the same "
        f"subgroup among non-protected rows: {percent(d.comparison_metric, 1)} "
        f"({d.comparison_rows} rows); {d.parameter} = {d.value:.3f}.",
        "",
    ]


def render_html(scan: ScanResult) -> str:
    """The cell and the runs table."""
    from fairscan.report.html import escape, html_table

    info = _detail(scan)
    if info is None:
        return ""
    rows = [
        [
            r.protected,
            r.status.replace("_", " "),
            fmt_number(r.score, 2),
            fmt_p(r.p_value),
            f"{r.alpha:.4g}",
            r.reason or "",
        ]
        for r in info.runs
    ]
    table = html_table(
        ["protected", "status", "score", "p-value", "alpha", "note"], rows, {2, 3, 4}
    )
    return f"<p>{escape(info.cell)}</p>{table}"


def render_finding_html(scan: ScanResult, finding: Finding) -> str:
    """A finding's null histogram from its own run, when the scan has several runs (the
    common renderer draws ``scan.null_distribution``, set for a single run)."""
    info = _detail(scan)
    raw = finding.detail.get("cbs")
    observed = finding.statistic.value
    if info is None or raw is None or observed is None or scan.null_distribution is not None:
        return ""
    protected = CbsFindingDetail.model_validate(raw).protected
    run = next((r for r in info.runs if r.protected == protected), None)
    if run is None or run.null is None or not run.null.scores:
        return ""
    from fairscan.report.html import null_histogram

    chart = null_histogram(
        run.null,
        observed,
        caption=f"Permutation null of the run for {protected} (alpha {run.alpha:.4g}).",
    )
    return f'<div class="charts">{chart}</div>'


CBS_HOOKS = RenderHooks(
    markdown=render_markdown,
    html=render_html,
    finding_markdown=render_finding_markdown,
    finding_html=render_finding_html,
)
