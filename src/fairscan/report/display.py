"""The report as a Python object shows itself: a findings table, a one-line repr, a short text
summary and the compact HTML that Jupyter displays (``AuditReport._repr_html_``).

Like every renderer, this reads only the result contract. polars is imported only by
:func:`findings_frame`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fairscan.report.html import escape, html_table
from fairscan.report.markdown import SUMMARY_HEAD, summary_rows, verdict_line
from fairscan.report.models import AuditReport, Finding, ScanResult
from fairscan.report.text import (
    fmt_p,
    fmt_value,
    headline_p,
    significance_words,
    statistic_words,
)
from fairscan.report.verdict import verdict_word

if TYPE_CHECKING:
    import polars as pl

# Findings listed in the compact HTML summary (the full list: report.findings / report.to_html()).
TOP_FINDINGS = 5

_VERDICT_STYLE = {
    "clean": "background:#dff3e4;color:#17622e",
    "findings": "background:#fde2e1;color:#8d1d16",
    "error": "background:#fff1cc;color:#7a5300",
}


def repr_line(report: AuditReport) -> str:
    """``<AuditReport 'compas' FAIL: 3 significant findings in 3 scans>``."""
    v = report.verdict
    scans = f"{v.scans} scan" if v.scans == 1 else f"{v.scans} scans"
    if v.status == "error":
        what = f"{v.scans_with_errors} of {scans} failed"
    else:
        noun = "finding" if v.significant_findings == 1 else "findings"
        what = f"{v.significant_findings} significant {noun} in {scans}"
    return f"<AuditReport {report.name!r} {verdict_word(report.verdict)}: {what}>"


# --- the findings table --------------------------------------------------------------------


def _findings_schema() -> dict[str, Any]:
    import polars as pl

    return {
        "scan_id": pl.String,
        "type": pl.String,
        "rank": pl.Int64,
        "label": pl.String,
        "subgroup": pl.String,
        "group": pl.String,
        "size": pl.Int64,
        "statistic": pl.String,
        "statistic_value": pl.Float64,
        "effect_metric": pl.String,
        "effect_inside": pl.Float64,
        "effect_reference": pl.Float64,
        "p_value": pl.Float64,
        "adjusted_p_value": pl.Float64,
        "significant": pl.Boolean,
        "description": pl.String,
    }


FINDINGS_COLUMNS = (
    "scan_id",
    "type",
    "rank",
    "label",
    "subgroup",
    "group",
    "size",
    "statistic",
    "statistic_value",
    "effect_metric",
    "effect_inside",
    "effect_reference",
    "p_value",
    "adjusted_p_value",
    "significant",
    "description",
)


def _finding_row(scan: ScanResult, rank: int, finding: Finding) -> dict[str, Any]:
    return {
        "scan_id": scan.id,
        "type": scan.type,
        "rank": rank,
        "label": finding.label,
        "subgroup": None
        if finding.subgroup is None
        else json.dumps(finding.subgroup, ensure_ascii=False),
        "group": finding.group,
        "size": finding.size,
        "statistic": finding.statistic.name,
        "statistic_value": finding.statistic.value,
        "effect_metric": finding.effect.metric,
        "effect_inside": finding.effect.inside,
        "effect_reference": finding.effect.reference,
        "p_value": finding.p_value,
        "adjusted_p_value": finding.adjusted_p_value,
        "significant": finding.significant,
        "description": finding.description,
    }


def findings_frame(report: AuditReport) -> pl.DataFrame:
    """One row per finding over all scans, in scan order and, within a scan, most important
    first (``rank`` 1). ``subgroup`` is the JSON text of the attribute -> values mapping (null for
    a named group, whose name is in ``group``); undefined numbers are null."""
    import polars as pl

    rows = [
        _finding_row(scan, rank, finding)
        for scan in report.scans
        for rank, finding in enumerate(scan.findings, start=1)
    ]
    return pl.DataFrame(rows, schema=_findings_schema(), orient="row")


# --- text and HTML summaries ---------------------------------------------------------------


def top_findings(
    report: AuditReport, limit: int = TOP_FINDINGS
) -> list[tuple[ScanResult, Finding]]:
    """The findings a summary shows: significant ones first, then each scan's best in turn."""
    ranked = [
        (finding.significant is not True, rank, i, scan, finding)
        for i, scan in enumerate(report.scans)
        for rank, finding in enumerate(scan.findings)
    ]
    ranked.sort(key=lambda item: item[:3])
    return [(scan, finding) for *_, scan, finding in ranked[:limit]]


def summary_text(report: AuditReport) -> str:
    """A few plain lines: the verdict, then one line per scan with its top finding."""
    lines = [f"Fairness audit: {report.name}", verdict_line(report).replace("**", "")]
    for scan_id, scan_type, status, counts, *top in summary_rows(report):
        line = f"  {scan_id} ({scan_type}): {status}, {counts} significant"
        if top and top[0] != "-":
            line += f"; top: {top[0]} ({top[1]}, p = {top[2]})"
        lines.append(line)
    return "\n".join(lines)


def summary_html(report: AuditReport) -> str:
    """Compact HTML for notebooks: the verdict, one row per scan and the top findings.

    Every data string is escaped; inline styles only (no script, no stylesheet).
    """
    v = report.verdict
    style = _VERDICT_STYLE.get(v.status, "")
    verdict = verdict_line(report).replace("**", "")
    parts = [
        '<div class="fairscan-report">',
        f"<p><strong>Fairness audit: {escape(report.name)}</strong> "
        f'<span style="{style};padding:2px 8px;border-radius:5px;font-weight:600">'
        f"{escape(verdict)}</span></p>",
    ]
    if report.description:
        parts.append(f"<p>{escape(report.description)}</p>")
    parts.append(html_table(SUMMARY_HEAD, summary_rows(report), {3, 5, 6}))
    top = top_findings(report)
    if top:
        rows = []
        for scan, finding in top:
            effect = finding.effect
            rows.append(
                [
                    scan.id,
                    finding.label,
                    finding.size,
                    f"{effect.metric} {fmt_value(effect.inside)} vs {fmt_value(effect.reference)}",
                    f"{statistic_words(finding.statistic.name)} "
                    f"{fmt_value(finding.statistic.value)}",
                    fmt_p(headline_p(finding)),
                    significance_words(finding.significant),
                ]
            )
        head = ["scan", "finding", "size", "effect", "statistic", "p-value", "significant"]
        parts += ["<p><strong>Top findings</strong></p>", html_table(head, rows, {2, 4, 5})]
    for scan in report.scans:
        if scan.error:
            first = scan.error.splitlines()[0] if scan.error.strip() else "error"
            parts.append(f"<p>Scan {escape(scan.id)} failed: {escape(first)}</p>")
    total = sum(len(scan.findings) for scan in report.scans)
    noun = "finding" if total == 1 else "findings"
    parts.append(
        f'<p style="color:#666;font-size:.85em">{total} {noun} in <code>report.findings</code>; '
        "<code>report.to_html()</code> or <code>report.write(dir)</code> for the full report "
        "with charts.</p></div>"
    )
    return "".join(parts)
