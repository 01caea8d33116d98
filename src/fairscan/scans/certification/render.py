"""Render hooks of the certify/flag scans: the group table (Markdown, HTML) and forest plot."""

from __future__ import annotations

from functools import partial

from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import cell
from fairscan.report.models import ScanResult
from fairscan.report.text import fmt_number, fmt_p, p_equals
from fairscan.scans.certification.models import (
    DETAIL_KEY,
    AuditGroup,
    CertificationResult,
    flag_region,
)

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


def _metric_line(result: CertificationResult) -> str:
    return (
        f"Metric: {result.metric_description}, compared with the {result.target} "
        f"({result.theta:.4f}). {result.rows} rows resampled ({result.population_rows} in the "
        f"metric's population), {result.bootstrap} bootstrap resamples, alpha = {result.alpha:g}."
    )


def why(result: CertificationResult, g: AuditGroup) -> str:
    """Why a group is (or is not) flagged or certified, in words."""
    if g.status == "empty":
        return "not tested: no rows in the metric's population"
    if g.status == "too_small":
        return f"not tested: too small ({g.size} rows)"
    if g.status == "degenerate":
        return "the metric does not vary here, so no difference can be shown"
    if g.status == "unstable":
        return "not tested: absent from over half of the bootstrap resamples"
    gap = "n/a" if g.gap is None else f"{g.gap:+.3f}"
    if result.mode == "flag":
        adjusted = p_equals(g.adjusted_p_value, missing="n/a", name="FDR-adjusted p")
        if g.flagged:
            return f"flagged: {flag_region(result.side, result.tolerance)} with {adjusted}"
        inside = g.gap is not None and (
            (result.side == "above" and g.gap <= result.tolerance)
            or (result.side == "below" and g.gap >= result.tolerance)
            or (result.side == "both" and abs(g.gap) <= abs(result.tolerance))
        )
        if inside:
            return f"not flagged: gap {gap} is within the tolerance of {result.tolerance:g}"
        return f"not flagged: gap {gap} is not significant ({adjusted})"
    if g.certified is None:
        return "not tested"
    level = f"{100 * (1 - result.alpha):g}%"
    bounds = (
        f"[{_f(g.lower)}, {_f(g.upper)}]"
        if g.lower is not None and g.upper is not None
        else _f(g.lower if g.lower is not None else g.upper)
    )
    if g.certified:
        return (
            f"certified: the {level} bound {bounds} clears the tolerance of {result.tolerance:+g}"
        )
    return (
        f"not certified: the {level} bound {bounds} does not clear the tolerance of "
        f"{result.tolerance:+g}"
    )


def _summary_lines(result: CertificationResult) -> list[str]:
    lines = [_metric_line(result), ""]
    level = f"{100 * (1 - result.alpha):g}%"
    if result.mode == "flag":
        return [
            *lines,
            f"Flagged: groups whose gap {flag_region(result.side, result.tolerance)} with "
            f"FDR-adjusted p <= {result.alpha:g} "
            f"({result.correction.upper() if result.correction else ''} correction): "
            f"**{result.hits}** of {result.groups_tested} tested groups "
            f"({result.groups_total} in the collection). lower and upper: {level} interval of "
            "each group's gap, not adjusted for the number of groups.",
            "",
        ]
    scaling = (
        f"widened for small groups (rescale p_star = {result.p_star:g}, w0 = {result.w0})"
        if result.p_star is not None
        else "not rescaled"
    )
    found = (
        "certified groups are findings (a proven disparity)"
        if result.claim == "disparity"
        else "groups that cannot be certified are findings, not certified (never significant)"
    )
    bound = (result.bound or "").replace("_", "-")
    return [
        *lines,
        f"Certification with {bound} bounds holding at {level} for all tested groups at once, "
        f"{scaling}. Certified: **{result.hits}** of {result.groups_tested} tested "
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
        head += " p | adjusted p | flagged | why |"
        rule += "---:|---:|:---:|---|"
    else:
        head += " certified | why |"
        rule += ":---:|---|"
    lines = [*_summary_lines(result), head, rule]
    shown = 0
    for g in result.groups:
        hit = _hit(result, g)
        if not (hit or g.finding) and shown >= MAX_ROWS:
            continue
        shown += 1
        est = "n/a" if g.estimate is None else f"{g.estimate:.3f}"
        row = f"| {cell(g.name)} | {g.size} | {est} | {_f(g.gap)} | {_f(g.lower)} | {_f(g.upper)} |"
        if flag:
            row += (
                f" {_p(g.p_value)} | {_p(g.adjusted_p_value)} | {_mark(hit)} | {why(result, g)} |"
            )
        else:
            row += f" {_mark(hit)} | {why(result, g)} |"
        lines.append(row)
    if shown < len(result.groups):
        lines.append(f"\n{len(result.groups) - shown} more groups in the JSON report.")
    lines.append("")
    return lines


def certification_lead_html(scan: ScanResult) -> str:
    """Before the findings: the summary and the forest plot of the gap bounds per group."""
    from fairscan.report.html import escape

    result = _detail(scan)
    if result is None:
        return ""
    summary, plot = _summary_and_plot(result)
    return f"<p>{escape(summary)}</p>" + f'<div class="charts">{plot}</div>'


def _summary_and_plot(result: CertificationResult) -> tuple[str, str]:
    from fairscan.report.html import forest_plot

    flag = result.mode == "flag"
    hits = "flagged" if flag else "certified"
    summary = (
        f"{_metric_line(result)} {result.hits} of {result.groups_tested} tested groups {hits} "
        f"({result.groups_total} in the collection); tolerance {result.tolerance:+g}, "
        f"side {result.side}."
    )
    untested = [g for g in result.groups if g.lower is None and g.upper is None]
    plotted = [g for g in result.groups if not (g.lower is None and g.upper is None)]
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
        untested=[(g.name, why(result, g).removeprefix("not tested: ")) for g in untested],
    )
    return summary, plot


def certification_table_html(scan: ScanResult) -> str:
    """After the findings: the first groups as a table."""
    from fairscan.report.html import html_table

    result = _detail(scan)
    if result is None:
        return ""
    flag = result.mode == "flag"
    head = ["group", "n", "estimate", "gap", "lower", "upper"]
    head += ["adj. p", "flagged", "why"] if flag else ["certified", "why"]
    rows: list[list[object]] = []
    for g in result.groups[:HTML_ROWS]:
        row: list[object] = [g.name, g.size, fmt_number(g.estimate)]
        row += [_f(g.gap), _f(g.lower), _f(g.upper)]
        if flag:
            row += [_p(g.adjusted_p_value), _mark(g.flagged), why(result, g)]
        else:
            row += ["n/a" if g.certified is None else _mark(g.certified), why(result, g)]
        rows.append(row)
    more = (
        f'<p class="muted">First {HTML_ROWS} of {len(result.groups)} groups (all are in the '
        "JSON report).</p>"
        if len(result.groups) > HTML_ROWS
        else ""
    )
    return "<h3>All groups</h3>" + html_table(head, rows, {1, 2, 3, 4, 5, 6}) + more


def sarif_rule(scan: ScanResult, metric: str) -> str | None:
    """A certify scan's results are certified disparities or groups that cannot be certified
    (a flag scan's read as any scan's: None)."""
    if scan.type != "certify":
        return None
    return (
        f"certify scan `{scan.id}`: groups with a certified {metric} disparity, or that "
        "cannot be certified"
    )


# the forest plot (HTML) and the group table (Markdown) come first, before the findings
CERTIFICATION_HOOKS = RenderHooks(
    lead_markdown=certification_markdown,
    lead_html=certification_lead_html,
    html=certification_table_html,
    sarif_rule=sarif_rule,
)
