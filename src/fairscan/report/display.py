"""The report as a Python object shows itself: a findings table, a one-line repr, a short text
summary and the compact HTML that Jupyter displays (``AuditReport._repr_html_``).

Like every renderer, this reads only the result contract. polars is imported only by
:func:`findings_frame`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fairscan.report.html import escape, overview_chart, overview_rows
from fairscan.report.markdown import SUMMARY_HEAD, effect_cell, summary_rows, verdict_line
from fairscan.report.models import AuditReport, Finding, ScanResult
from fairscan.report.overview import effect_size, model_text, readable_label
from fairscan.report.text import (
    finding_significance,
    fmt_p,
    fmt_value,
    headline_p,
    is_rate,
    p_equals,
    statistic_words,
)
from fairscan.report.verdict import not_certified_note, verdict_word

if TYPE_CHECKING:
    import polars as pl

# Findings listed in the compact HTML summary (the full list: report.findings / report.to_html()).
TOP_FINDINGS = 5

_VERDICT_STYLE = {
    "clean": "background:#dff3e4;color:#17622e",
    "findings": "background:#fde2e1;color:#8d1d16",
    "error": "background:#fff1cc;color:#7a5300",
    "untested": "background:#fff1cc;color:#7a5300",
}


def repr_line(report: AuditReport) -> str:
    """``<AuditReport 'compas' FAIL: 3 significant findings in 3 scans>``."""
    v = report.verdict
    scans = f"{v.scans} scan" if v.scans == 1 else f"{v.scans} scans"
    if v.status == "error":
        what = f"{v.scans_with_errors} of {scans} failed"
    elif v.status == "untested":
        what = f"{len(v.untested_scans)} of {scans} could not reach significance"
    else:
        noun = "finding" if v.significant_findings == 1 else "findings"
        what = f"{v.significant_findings} significant {noun} in {scans}"
    note = not_certified_note(v).rstrip(".")
    what += f";{note}" if note else ""
    return f"<AuditReport {report.name!r} {verdict_word(report.verdict)}: {what}>"


# --- the findings table --------------------------------------------------------------------


def _subgroup_fields(report: AuditReport) -> list[str]:
    """The ``subgroup`` struct's fields: every attribute, then any other a finding names."""
    names = list(report.attributes)
    for scan in report.scans:
        for finding in scan.findings:
            names += [n for n in (finding.subgroup or {}) if n not in names]
    return names


def _findings_schema(fields: Sequence[str]) -> dict[str, Any]:
    import polars as pl

    return {
        "scan_id": pl.String,
        "type": pl.String,
        "rank": pl.Int64,
        "label": pl.String,
        "subgroup": pl.Struct({name: pl.List(pl.String) for name in fields}),
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


def _finding_row(
    scan: ScanResult, rank: int, finding: Finding, fields: Sequence[str]
) -> dict[str, Any]:
    subgroup = finding.subgroup
    return {
        "scan_id": scan.id,
        "type": scan.type,
        "rank": rank,
        "label": finding.label,
        # a struct: one field per attribute, its selected values (null: unconstrained)
        "subgroup": None
        if subgroup is None
        else {name: (list(subgroup[name]) if name in subgroup else None) for name in fields},
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
    first (``rank`` 1). ``subgroup`` is a struct with one field per attribute, holding the
    values the finding selects (null where it leaves the attribute unconstrained; the whole
    struct is null for a named group, whose name is in ``group``); undefined numbers are null.
    Its notebook display shows labels and descriptions in full."""
    import polars as pl

    fields = _subgroup_fields(report)
    rows = [
        _finding_row(scan, rank, finding, fields)
        for scan in report.scans
        for rank, finding in enumerate(scan.findings, start=1)
    ]
    frame = pl.DataFrame(rows, schema=_findings_schema(fields), orient="row")
    return _full_text_frame(frame)


def _full_text_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` displayed (in a notebook, or printed) with its text in full: polars cuts
    strings to a few characters by default, which would cut every label. Operations on it give
    plain polars frames."""
    full = _findings_frame_type().__new__(_findings_frame_type())
    full._df = frame._df
    return full


@functools.cache
def _findings_frame_type() -> type[pl.DataFrame]:
    import polars as pl

    def full_text() -> pl.Config:
        return pl.Config(fmt_str_lengths=1000, tbl_cols=-1, tbl_width_chars=10_000)

    class FindingsFrame(pl.DataFrame):
        """The findings table: a polars DataFrame that shows its text in full."""

        def _repr_html_(self, **kwargs: Any) -> str:
            with full_text():
                return super()._repr_html_(**kwargs)

        def __str__(self) -> str:
            with full_text():
                return super().__str__()

    return FindingsFrame


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
    for scan, row in zip(report.scans, summary_rows(report), strict=True):
        scan_id, scan_type, status, counts, *top = row
        line = f"  {scan_id} ({scan_type}): {status}, {counts} significant"
        head = scan.headline()
        if head is not None:
            line += f"; top: {top[0]} ({top[1]}, {p_equals(headline_p(head))})"
        lines.append(line)
    return "\n".join(lines)


# Inline styles only: notebook front-ends strip or override stylesheets (JupyterLab right-aligns
# every cell and drops borders; an untrusted notebook drops <style>), and a dark theme would
# otherwise paint light text on the white card. Inline styles win over all of them.
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
_CARD = (
    f"{_FONT};color:#1d2330;background:#fff;border:1px solid #dde1e8;border-radius:8px;"
    "padding:10px 14px;margin:4px 0;max-width:1100px;line-height:1.45;font-size:13px"
)
_TABLE = (
    "border-collapse:collapse;table-layout:auto;margin:6px 0;font-size:12.5px;color:#1d2330;"
    "background:#fff"
)
_CELL = (
    "border:1px solid #dde1e8;padding:3px 8px;vertical-align:top;color:#1d2330;white-space:normal"
)
_HEAD_CELL = f"{_CELL};background:#f3f5f8;font-weight:600"
_LEFT = "text-align:left"
_RIGHT = "text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap"
_MUTED = "color:#5b6270;font-size:12px;margin:6px 0 0"


def styled_table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int]) -> str:
    """A table whose every cell carries its own style (borders, alignment, colours): it looks
    the same in Jupyter, JupyterLab, VS Code and a bare browser. Cells are escaped."""

    def align(i: int) -> str:
        return _RIGHT if i in numeric else _LEFT

    out = [f'<table style="{_TABLE}"><thead><tr>']
    out += [f'<th style="{_HEAD_CELL};{align(i)}">{escape(h)}</th>' for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = "".join(
            f'<td style="{_CELL};{align(i)}">{escape(v)}</td>' for i, v in enumerate(row)
        )
        out.append(f'<tr style="background:#fff">{cells}</tr>')
    out.append("</tbody></table>")
    return "".join(out)


def effect_text(finding: Finding) -> str:
    """``false positive rate 71.0% (142 of 200) vs 9.4% (714 of 7582)``: the metric, then
    inside vs the reference, rates as percentages with their counts."""
    e = finding.effect
    rate = is_rate(e.metric, e.inside, e.reference)
    inside = effect_cell(e.metric, e.inside, e.inside_count, rate)
    reference = effect_cell(e.metric, e.reference, e.reference_count, rate)
    return f"{e.metric}: {inside} vs {reference}"


TOP_HEAD = ["scan", "finding", "size", "effect (inside vs reference)", "difference", "statistic"]
TOP_HEAD += ["p-value", "significant"]


def summary_html(report: AuditReport) -> str:
    """Compact HTML for notebooks: the verdict, one row per scan, the overview chart of the top
    findings' effects and the top findings with their full labels.

    Every data string is escaped; inline styles only (no script, no stylesheet).
    """
    v = report.verdict
    style = _VERDICT_STYLE.get(v.status, "")
    verdict = verdict_line(report).replace("**", "")
    parts = [
        f'<div class="fairscan-report" style="{_CARD}">',
        f'<div style="font-size:15px;font-weight:600;margin:0 0 6px">Fairness audit: '
        f"{escape(report.name)} "
        f'<span style="{style};padding:2px 8px;border-radius:5px;font-weight:600;font-size:13px">'
        f"{escape(verdict)}</span></div>",
    ]
    if report.description:
        parts.append(f'<div style="margin:2px 0">{escape(report.description)}</div>')
    model = model_text(report)
    if model is not None:
        parts.append(f'<div style="margin:2px 0"><b>Model:</b> {escape(model)}</div>')
    parts.append(styled_table(SUMMARY_HEAD, summary_rows(report), {3, 5, 6}))
    chart = overview_chart(
        overview_rows(report),
        style="margin:6px 0|color:#5b6270;font-size:12px;max-width:640px",
    )
    if chart:
        parts.append(chart)
    top = top_findings(report)
    if top:
        rows = []
        for scan, finding in top:
            rows.append(
                [
                    scan.id,
                    readable_label(finding, report.attributes),
                    finding.size,
                    effect_text(finding),
                    effect_size(finding),
                    f"{statistic_words(finding.statistic.name)} "
                    f"{fmt_value(finding.statistic.value)}",
                    fmt_p(headline_p(finding)),
                    finding_significance(finding),
                ]
            )
        parts += [
            '<div style="font-weight:600;margin:8px 0 0">Top findings</div>',
            styled_table(TOP_HEAD, rows, {2, 4, 5, 6}),
        ]
    for scan in report.scans:
        if scan.error:
            first = scan.error.splitlines()[0] if scan.error.strip() else "error"
            parts.append(
                f'<div style="margin:4px 0">Scan {escape(scan.id)} failed: {escape(first)}</div>'
            )
    total = sum(len(scan.findings) for scan in report.scans)
    noun = "finding" if total == 1 else "findings"
    parts.append(
        f'<div style="{_MUTED}">{total} {noun} in <code>report.findings</code>; '
        "<code>report.to_html()</code> or <code>report.write(dir)</code> for the full report "
        "with every chart.</div></div>"
    )
    return "".join(parts)
