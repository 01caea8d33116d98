"""Render hooks of the ``subroc`` scan: the tested candidates, search figures and ROC curves."""

from __future__ import annotations

from collections.abc import Callable

from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import cell
from fairscan.report.models import Finding, ScanResult
from fairscan.report.sink_escape import md_text
from fairscan.report.text import fmt_number, fmt_p, p_equals
from fairscan.scans.subroc.models import (
    DETAIL_KEY,
    MEASURE_TEXT,
    SubrocFindingDetail,
    SubrocResult,
)

_f = fmt_number
_p = fmt_p

TABLE_ROWS = 15  # candidates shown in the Markdown/HTML table (all are in the JSON)


def _detail(scan: ScanResult) -> SubrocResult | None:
    if DETAIL_KEY not in scan.detail:
        return None
    return SubrocResult.model_validate(scan.detail[DETAIL_KEY])


def _search_summary(result: SubrocResult) -> str:
    tested = (
        f"{result.subsets} random subsets per (positives, negatives) pair "
        f"({result.null_distributions} distinct pairs), {result.correction.upper()} correction, "
        f"alpha = {result.alpha:g}"
        if result.subsets
        else "no significance test"
    )
    return (
        f"Search: {result.candidates_evaluated} candidate patterns evaluated "
        f"({result.candidates_valid} met the cover and class constraints), {result.pruned} pruned "
        f"by optimistic estimates, {result.skipped} skipped as specialisations of pruned or too "
        f"small patterns; {_tested(result)} top candidates with a positive score tested "
        f"({tested}); {result.reported} reported."
    )


def _tested(result: SubrocResult) -> int:
    """Candidates tested (reports written before ``candidates_tested``: the patterns listed)."""
    if result.candidates_tested is not None:
        return result.candidates_tested
    return len(result.patterns)


def best_candidate(result: SubrocResult, shown: Callable[[str], str] = str) -> str:
    """The closest call when nothing is reported: the tested pattern with the smallest
    adjusted p (ties: the better search rank), named with its figures; its label (data values)
    as ``shown`` writes it (Markdown: :func:`md_text`)."""
    tested = [p for p in result.patterns if p.adjusted_p_value is not None]
    if not tested:
        if result.patterns:
            top = result.patterns[0]
            return f"Best candidate: {shown(top.label)} (score {top.score:.4g}; not tested)."
        return "No candidate pattern had a positive score."
    best = min(tested, key=lambda p: (p.adjusted_p_value or 1.0, p.rank))
    name = MEASURE_TEXT.get(result.measure, result.measure)
    above = (
        f" > alpha = {result.alpha:g}"
        if best.adjusted_p_value is not None and best.adjusted_p_value > result.alpha
        else ""
    )
    return (
        f"Best candidate: {shown(best.label)} ({name} {_f(best.search.measure)} on "
        f"{best.search.size} search rows, {p_equals(best.adjusted_p_value, name='adjusted p')}{above})."
    )


def subroc_markdown(scan: ScanResult) -> list[str]:
    """The overall measure, the top tested candidates and the search figures."""
    result = _detail(scan)
    if result is None:
        return []
    name = MEASURE_TEXT.get(result.measure, result.measure)
    lines = [
        f"{name} overall: {_f(result.overall_search)} on the search set "
        f"({result.search_rows} rows), {_f(result.overall_validation)} on the validation set "
        f"({result.validation_rows} rows).",
        "",
    ]
    if result.patterns:
        lines += [
            f"| # | pattern | {name} (search) | cover | share outcome 0 | score "
            f"| {name} (validation) | p | adjusted p | reported |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
        ]
        for p in result.patterns[:TABLE_ROWS]:
            val = p.validation
            lines.append(
                f"| {p.rank} | {cell(p.label)} | {_f(p.search.measure)} | {p.search.size} "
                f"| {_f(p.search.negative_ratio, 2)} | {p.score:.4g} "
                f"| {_f(val.measure if val else None)} | {_p(p.p_value)} "
                f"| {_p(p.adjusted_p_value)} | {'yes' if p.reported else 'no'} |"
            )
        if len(result.patterns) > TABLE_ROWS:
            lines.append(
                f"\nTop {TABLE_ROWS} of {len(result.patterns)} candidates (all are in the JSON "
                "report)."
            )
        lines.append("")
    if not result.reported:
        best = best_candidate(result, md_text)
        lines += [f"No pattern survives the significance filter. {best}", ""]
    return [*lines, _search_summary(result), ""]


def subroc_finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The validation figures of a reported pattern, under its common table."""
    if "search" not in finding.detail:
        return []
    d = SubrocFindingDetail.model_validate(finding.detail)
    if d.validation is None:
        return []
    return [
        f"Validation set: {finding.effect.metric} {_f(d.validation.measure)} over "
        f"{d.validation.size} rows ({d.validation.positives} positives); relative score "
        f"{_f(d.validation_statistic)} (search: {_f(d.relative_score)}); rank {d.rank} of the "
        "search.",
        "",
    ]


def subroc_html(scan: ScanResult) -> str:
    """The overall measure, search figures and the top tested candidates as a table."""
    from fairscan.report.html import escape, html_table

    result = _detail(scan)
    if result is None:
        return ""
    name = MEASURE_TEXT.get(result.measure, result.measure)
    over_val = (
        f"; {_f(result.overall_validation)} on the validation set ({result.validation_rows} rows)"
        if result.overall_validation is not None
        else ""
    )
    parts = [
        f"<p>{escape(name)} overall: {escape(_f(result.overall_search))} on the search set "
        f"({result.search_rows} rows){escape(over_val)}. {result.reported} pattern(s) reported "
        f"of {_tested(result)} candidates tested ({escape(result.correction.upper())}, "
        f"alpha {result.alpha:g}).</p>",
    ]
    if not result.reported:
        parts.append(
            f"<p>No pattern survives the significance filter. {escape(best_candidate(result))}</p>"
        )
    parts.append(f'<p class="muted">{escape(_search_summary(result))}</p>')
    rows: list[list[object]] = [
        [
            p.rank,
            p.label,
            p.search.size,
            _f(p.search.measure),
            _f(p.validation.measure) if p.validation else "n/a",
            f"{p.score:.4f}",
            _p(p.adjusted_p_value),
            "yes" if p.reported else "no",
        ]
        for p in result.patterns[:TABLE_ROWS]
    ]
    head = ["rank", "pattern", "search rows", "search", "validation", "score", "adj. p"]
    parts.append(html_table([*head, "reported"], rows, {0, 2, 3, 4, 5, 6}))
    if len(result.patterns) > TABLE_ROWS:
        parts.append(
            f'<p class="muted">Top {TABLE_ROWS} of {len(result.patterns)} candidates (all are in '
            "the JSON report).</p>"
        )
    return "".join(parts)


def subroc_finding_html(scan: ScanResult, finding: Finding) -> str:
    """The ROC curve of a reported pattern against the whole search set."""
    from fairscan.report.html import roc_chart

    result = _detail(scan)
    if result is None or result.roc is None or "search" not in finding.detail:
        return ""
    d = SubrocFindingDetail.model_validate(finding.detail)
    sub = (d.roc.fpr, d.roc.tpr) if d.roc is not None else None
    return roc_chart((result.roc.fpr, result.roc.tpr), sub, finding.label)


SUBROC_HOOKS = RenderHooks(
    markdown=subroc_markdown,
    html=subroc_html,
    finding_markdown=subroc_finding_markdown,
    finding_html=subroc_finding_html,
)
