"""Render hooks of the certify/flag scans: the group table (Markdown, HTML) and forest plot."""

from __future__ import annotations

from functools import partial

from fairscan.report.hooks import RenderHooks
from fairscan.report.models import ScanResult
from fairscan.report.text import fmt_number, fmt_p
from fairscan.scans.certification.models import DETAIL_KEY, AuditGroup, CertificationResult

_f = partial(fmt_number, signed=True)
_p = partial(fmt_p, missing="n/a")

MAX_ROWS = 25  # Markdown: findings are always shown; other groups up to this many rows
HTML_ROWS = 40


def _detail(scan: ScanResult) -> CertificationResult | None:
    if DETAIL_KEY not in scan.detail:
        return None
    return CertificationResult.model_validate(scan.detail[DETAIL_KEY])


def _hit(result: CertificationResult, g: AuditGroup) -> bool | None:
    return g.flagged if result.mode == "flag" else g.certified


def _mark(hit: bool | None) -> str:
    return "yes" if hit else ("no" if hit is not None else "-")


def _summary_lines(result: CertificationResult) -> list[str]:
    lines = [
        f"{result.metric_description}; target theta = {result.theta:.4f} ({result.target}); "
        f"n = {result.rows} rows resampled, {result.population_rows} in the population; "
        f"B = {result.bootstrap}, alpha = {result.alpha:g}.",
        "",
    ]
    if result.mode == "flag":
        what = {"above": "exceeds", "below": "falls short of", "both": "differs from"}[result.side]
        return [
            *lines,
            f"Flagged: groups whose gap {what} {result.tolerance:+g}, "
            f"{result.correction.upper() if result.correction else ''} at FDR {result.alpha:g}: "
            f"**{result.hits}** of {result.groups_tested} tested groups "
            f"({result.groups_total} in the collection). Interval columns: marginal "
            f"{100 * (1 - result.alpha):g}% Wald intervals from the MAD scale.",
            "",
        ]
    crit = ", ".join(f"t*_{k} = {v:.4g}" for k, v in result.critical_values.items())
    scaling = (
        f"rescaled (p* = {result.p_star:g}, w0 = {result.w0})"
        if result.p_star is not None
        else "unscaled (s = 1)"
    )
    found = (
        "certified groups are findings (a proven disparity)"
        if result.claim == "disparity"
        else "groups that cannot be certified are findings"
    )
    return [
        *lines,
        f"{result.bound} certification, simultaneous at {100 * (1 - result.alpha):g}%, "
        f"{scaling}; {crit}. Certified: **{result.hits}** of {result.groups_tested} tested "
        f"groups; {result.failed} not certified (tolerance {result.tolerance:+g}, "
        f"side {result.side}); {found}.",
        "",
    ]


def certification_markdown(scan: ScanResult) -> list[str]:
    """Summary of the audit and the table of its groups (findings first, up to MAX_ROWS)."""
    result = _detail(scan)
    if result is None:
        return []
    flag = result.mode == "flag"
    head = "| group | n | estimate | gap | lower | upper |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if flag:
        head += " p | adjusted p | flagged | status |"
        rule += "---:|---:|:---:|---|"
    else:
        head += " certified | status |"
        rule += ":---:|---|"
    lines = [*_summary_lines(result), head, rule]
    shown = 0
    for g in result.groups:
        hit = _hit(result, g)
        if not (hit or g.finding) and shown >= MAX_ROWS:
            continue
        shown += 1
        est = "n/a" if g.estimate is None else f"{g.estimate:.3f}"
        row = f"| {g.name} | {g.size} | {est} | {_f(g.gap)} | {_f(g.lower)} | {_f(g.upper)} |"
        if flag:
            row += f" {_p(g.p_value)} | {_p(g.adjusted_p_value)} | {_mark(hit)} | {g.status} |"
        else:
            row += f" {_mark(hit)} | {g.status} |"
        lines.append(row)
    if shown < len(result.groups):
        lines.append(f"\n{len(result.groups) - shown} more groups in the JSON report.")
    lines.append("")
    return lines


def certification_html(scan: ScanResult) -> str:
    """Summary, forest plot of the gap bounds per group, and the first groups as a table."""
    from fairscan.report.html import escape, forest_plot, html_table

    result = _detail(scan)
    if result is None:
        return ""
    flag = result.mode == "flag"
    hits = "flagged" if flag else "certified"
    summary = (
        f"{result.metric_description}; target theta = {result.theta:.4f} ({result.target}); "
        f"{result.hits} of {result.groups_tested} tested groups {hits} "
        f"({result.groups_total} in the collection); tolerance {result.tolerance:+g}, "
        f"side {result.side}, alpha {result.alpha:g}, B = {result.bootstrap}."
    )
    plotted = [g for g in result.groups if g.gap is not None or g.lower is not None]
    red = {"disparity": "certified", "fairness": "not certified"}.get(result.claim or "", "flagged")
    plot = forest_plot(
        [g.name for g in plotted],
        [g.gap for g in plotted],
        [g.lower for g in plotted],
        [g.upper for g in plotted],
        [g.finding for g in plotted],
        result.tolerance,
        result.side == "both",
        hit_label=red,
        metric=result.metric,
    )
    head = ["group", "n", "estimate", "gap", "lower", "upper"]
    head += ["adj. p", "flagged", "status"] if flag else ["certified", "status"]
    rows: list[list[object]] = []
    for g in result.groups[:HTML_ROWS]:
        row: list[object] = [g.name, g.size, fmt_number(g.estimate)]
        row += [_f(g.gap), _f(g.lower), _f(g.upper)]
        if flag:
            row += [_p(g.adjusted_p_value), _mark(g.flagged), g.status]
        else:
            row += ["n/a" if g.certified is None else _mark(g.certified), g.status]
        rows.append(row)
    more = (
        f'<p class="muted">First {HTML_ROWS} of {len(result.groups)} groups (all are in the '
        "JSON report).</p>"
        if len(result.groups) > HTML_ROWS
        else ""
    )
    return (
        f"<p>{escape(summary)}</p>"
        + f'<div class="charts">{plot}</div>'
        + html_table(head, rows, {1, 2, 3, 4, 5, 6})
        + more
    )


CERTIFICATION_HOOKS = RenderHooks(markdown=certification_markdown, html=certification_html)
