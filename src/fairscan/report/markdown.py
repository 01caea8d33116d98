"""GitHub-flavoured Markdown report: verdict first, findings in words, provenance last.

Reads only the result contract (:mod:`fairscan.report.models`): every scan's findings get the
same table; what a scan type reports beyond it (``detail``) comes from its render hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairscan.data.labels import subgroup_label
from fairscan.report.baseline import LABELS, RETEST_LABELS
from fairscan.report.hooks import NO_HOOKS, HookMap, RenderHooks
from fairscan.report.models import (
    AuditReport,
    BaselineComparison,
    BaselineSide,
    Effect,
    Finding,
    MonitorSummary,
    ScanResult,
)
from fairscan.report.monitor_view import SUBGROUP_HEAD, alarm_text, subgroup_row, summary_sentence
from fairscan.report.overview import (
    ConstrainedAttribute,
    audited_items,
    constrained_attributes,
    containers,
    effect_size,
    model_text,
    nested_note,
    readable_label,
)
from fairscan.report.sink_escape import Markup, markdown_document, md_block, md_code, md_text
from fairscan.report.text import (
    finding_significance,
    findings_tally,
    fmt_p,
    fmt_p_floor,
    fmt_value,
    headline_p,
    is_rate,
    percent,
    rate_with_count,
    statistic_words,
)
from fairscan.report.verdict import (
    ERROR,
    FAIL,
    PASS,
    UNTESTED,
    diff_verdict,
    diff_verdict_of,
    gate_passed_findings,
    not_certified_note,
    status_text,
    untested_words,
    verdict_word,
)

# Findings shown per scan (most important first); all of them are in the JSON report.
MAX_FINDINGS = 50
# Findings shown in full (text, table, charts); the scan's further ones share one compact table.
FULL_FINDINGS = 3


def verdict_line(report: AuditReport) -> str:
    """The verdict in one Markdown line (bold PASS/FAIL/ERROR first), then the groups certify
    could not certify."""
    return _verdict_words(report) + not_certified_note(report.verdict)


def _verdict_words(report: AuditReport) -> str:
    v = report.verdict
    word = f"**{verdict_word(v)}**"
    noun = "finding" if v.significant_findings == 1 else "findings"
    scans = f"{v.scans} scan" if v.scans == 1 else f"{v.scans} scans"
    if v.status == "error":
        return f"{word}: {v.scans_with_errors} of {v.scans} scans could not be completed."
    if v.status == "untested":
        return f"{word}: {untested_words(v)}"
    if gate_passed_findings(v) and report.baseline is not None:
        return (
            f"{word} (gate: fail on {report.baseline.fail_on}): {v.significant_findings} "
            f"significant {noun} in {scans}, {report.baseline.new_significant} new."
        )
    if gate_passed_findings(v):
        return f"{word} (gate): {v.significant_findings} significant {noun} in {scans}."
    if v.status == "findings":
        return f"{word}: {v.significant_findings} significant {noun} in {scans}."
    return f"{word}: no significant finding in {scans}."


def cell(value: object) -> str:
    """Text safe inside a Markdown table cell: :func:`md_text` (one line, ``|`` as a reference);
    the report's own :class:`Markup` as it is."""
    return md_text(value if isinstance(value, Markup) else str(value), line_start=False)


def table(head: list[str], rows: list[list[object]], numeric: set[int] | None = None) -> list[str]:
    """A Markdown table; columns in ``numeric`` are right-aligned."""
    numeric = numeric or set()
    rule = ["---:" if i in numeric else "---" for i in range(len(head))]
    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def with_count(value: float | None, count: int | None) -> str:
    """``0.6648 (n = 349)``; the count is left out when there is none."""
    return fmt_value(value) + ("" if count is None else f" (n = {count})")


def effect_cell(metric: str, value: float | None, count: int | None, rate: bool) -> str:
    """An effect figure as a table shows it: a rate as ``71.0% (142 of 200)``, other metrics
    as ``0.6648 (n = 349)``."""
    return rate_with_count(value, count) if rate else with_count(value, count)


def expected_shown(e: Effect) -> bool:
    """Whether "expected inside" says something the reference does not: a calibration scan's
    reference is the expectation inside the subgroup itself (the same number)."""
    if e.expected is None:
        return False
    return e.reference is None or abs(e.expected - e.reference) > 1e-12 * max(1.0, abs(e.expected))


def finding_columns(
    finding: Finding, label: str | None = None
) -> tuple[list[str], list[object], set[int]]:
    """The common table of one finding: header, row, right-aligned columns. Rates read as
    percentages with their counts; ``label``: the label to show (default the finding's)."""
    e = finding.effect
    rate = is_rate(e.metric, e.inside, e.reference, e.expected)
    head = ["finding", "size", f"{e.metric} inside", f"reference ({e.reference_name})"]
    row: list[object] = [
        finding.label if label is None else label,
        finding.size,
        effect_cell(e.metric, e.inside, e.inside_count, rate),
        effect_cell(e.metric, e.reference, e.reference_count, rate),
    ]
    if expected_shown(e):
        head.append("expected inside")
        row.append(percent(e.expected, 1) if rate else fmt_value(e.expected))
    head += [statistic_words(finding.statistic.name), "p-value", "adjusted p-value", "significant"]
    row += [
        fmt_value(finding.statistic.value),
        fmt_p(finding.p_value),
        fmt_p(finding.adjusted_p_value, missing="-"),
        finding_significance(finding),
    ]
    numeric = {1, 2, 3} | set(range(4, len(head) - 1))
    return head, row, numeric


COMPACT_HEAD = [
    "#",
    "finding",
    "size",
    "inside",
    "reference",
    "difference",
    "statistic",
    "p-value",
    "significant",
]


def compact_row(index: int, finding: Finding, label: str) -> list[object]:
    """A finding as one row of the table of further findings."""
    e = finding.effect
    rate = is_rate(e.metric, e.inside, e.reference)
    return [
        index,
        label,
        finding.size,
        effect_cell(e.metric, e.inside, e.inside_count, rate),
        effect_cell(e.metric, e.reference, e.reference_count, rate),
        effect_size(finding),
        f"{statistic_words(finding.statistic.name)} {fmt_value(finding.statistic.value)}",
        fmt_p(headline_p(finding)),
        finding_significance(finding),
    ]


def null_sentence(scan: ScanResult, finding: Finding) -> str | None:
    """The randomization test of a finding, in words (None without a null distribution); a
    p-value at the replicate floor says so."""
    nd = scan.null_distribution
    if nd is None or finding.p_value is None:
        return None
    judged = "significant" if finding.significant else "not significant"
    stopped = ""
    if nd.stopping_rule is not None and nd.stopped_early:
        stopped = f" (of at most {nd.max_replicates}: they stopped once the answer was settled)"
    return (
        f"Randomization test: {nd.exceed_count} of {nd.replicates} null replicates{stopped} reached a "
        f"{statistic_words(finding.statistic.name)} of at least "
        f"{fmt_value(finding.statistic.value)} ({fmt_p_floor(finding.p_value, nd.replicates)}; "
        f"{judged} at alpha = {nd.alpha:g}); the null {100 * (1 - nd.alpha):g}% quantile is "
        f"{fmt_value(nd.quantile)}."
    )


def scan_labels(report: AuditReport, scan: ScanResult) -> list[str]:
    """The readable labels of a scan's findings (complements as ``name ≠ value``)."""
    return [readable_label(f, report.attributes) for f in scan.findings]


def _finding_lines(
    scan: ScanResult,
    finding: Finding,
    hooks: RenderHooks | None,
    label: str,
    nested: str | None,
) -> list[str]:
    head, row, numeric = finding_columns(finding, label)
    lines = [f"### {md_text(label)}", "", md_text(finding.description), ""]
    lines += [*table(head, [row], numeric), ""]
    if nested is not None:
        lines += [f"> {md_text(nested)}", ""]
    if hooks is not None and hooks.finding_markdown is not None:
        lines += hooks.finding_markdown(scan, finding)
    sentence = null_sentence(scan, finding)
    if sentence is not None:
        lines += [sentence, ""]
    return lines


def _further_lines(scan: ScanResult, labels: list[str]) -> list[str]:
    """The findings after the first :data:`FULL_FINDINGS`, one row each."""
    shown = scan.findings[FULL_FINDINGS:MAX_FINDINGS]
    if not shown:
        return []
    nested = containers(scan.findings)
    rows = []
    notes = []
    for i, finding in enumerate(shown, start=FULL_FINDINGS):
        label = labels[i] + (f" (inside #{nested[i] + 1})" if i in nested else "")
        rows.append(compact_row(i + 1, finding, label))
        notes.append(f"{i + 1}. {md_text(finding.description)}")
    return [
        f"Further findings ({len(shown)}), one row each:",
        "",
        *table(COMPACT_HEAD, rows, {0, 2, 3, 4, 5, 6, 7}),
        "",
        *notes,
        "",
    ]


def _scan_section(
    scan: ScanResult,
    hooks: RenderHooks | None,
    attributes: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    lines = [f"## {md_code(scan.id)} ({md_text(scan.type)}): {status_text(scan.status)}", ""]
    if scan.error:  # line by line (hard breaks), no code block: see markdown_document
        return [*lines, "  \n".join(md_text(line) for line in scan.error.splitlines()), ""]
    if scan.population is not None:
        pop = scan.population
        # a rate (binary outcomes); scans of means (continuous, counts) leave it None
        rate = (
            ""
            if pop.observed_rate is None
            else f"; {pop.observed_label}: {rate_with_count(pop.observed_rate, pop.size)}"
        )
        lines += [f"Scanned population: {md_text(pop.description)}, {pop.size} rows{rate}.", ""]
    if hooks is not None and hooks.lead_markdown is not None:
        lines += hooks.lead_markdown(scan)
    if scan.findings:
        lines += [f"{findings_tally(scan)}.", ""]
    labels = [readable_label(f, attributes or {}) for f in scan.findings]
    for i, finding in enumerate(scan.findings[:FULL_FINDINGS]):
        note = nested_note(scan.findings, i, labels)
        lines += _finding_lines(scan, finding, hooks, labels[i], note)
    lines += _further_lines(scan, labels)
    if len(scan.findings) > MAX_FINDINGS:
        lines += [f"{len(scan.findings) - MAX_FINDINGS} more findings in the JSON report.", ""]
    if hooks is not None and hooks.markdown is not None:
        lines += hooks.markdown(scan)
    for warning in scan.warnings:
        lines += [f"> Warning: {md_text(warning)}", ""]
    t = scan.timing
    lines += [
        f"<sub>search {t.search_seconds:.2f} s, significance {t.significance_seconds:.2f} s</sub>",
        "",
    ]
    return lines


def overview_lines(report: AuditReport) -> list[str]:
    """The overview: the top findings' effects, then the attributes they constrain."""
    rows: list[list[object]] = []
    for scan in report.scans:
        labels = scan_labels(report, scan)
        for i, finding in enumerate(scan.findings[:OVERVIEW_PER_SCAN]):
            e = finding.effect
            rate = is_rate(e.metric, e.inside, e.reference)
            rows.append(
                [
                    md_code(scan.id),
                    labels[i],
                    e.metric,
                    effect_cell(e.metric, e.inside, e.inside_count, rate),
                    effect_cell(e.metric, e.reference, e.reference_count, rate),
                    effect_size(finding),
                    finding_significance(finding),
                ]
            )
    if not rows:
        return []
    head = ["scan", "finding", "metric", "inside", "reference", "difference", "significant"]
    lines = ["## Overview", "", *table(head, rows, {3, 4, 5}), ""]
    attrs = constrained_attributes(report, OVERVIEW_PER_SCAN)
    if attrs:
        lines += [
            "Attributes the top findings constrain:",
            "",
            *table(CONSTRAINED_HEAD, [constrained_row(a) for a in attrs], {2}),
            "",
        ]
    return lines


OVERVIEW_PER_SCAN = 5
CONSTRAINED_HEAD = ["attribute", "values selected", "top findings", "largest difference"]


def constrained_row(a: ConstrainedAttribute) -> list[object]:
    return [a.name, ", ".join(a.values), a.findings, a.largest]


def audited_lines(report: AuditReport) -> list[str]:
    """The "What was audited" section: data, rows, filter, attributes and bins, settings."""
    rows: list[list[object]] = [[item, value] for item, value in audited_items(report)]
    return ["## What was audited", "", *table(["item", "value"], rows), ""]


def summary_rows(report: AuditReport) -> list[list[object]]:
    """One row per scan: id, type, status, significant/all findings, top finding, statistic, p."""
    rows: list[list[object]] = []
    for scan in report.scans:
        top = scan.headline()
        counts = f"{scan.significant_count()} of {len(scan.findings)}"
        if top is None:
            rows.append([scan.id, scan.type, status_text(scan.status), counts])
            rows[-1] += ["-", "-", "-"]
            continue
        rows.append(
            [
                scan.id,
                scan.type,
                status_text(scan.status),
                counts,
                top.label,
                f"{statistic_words(top.statistic.name)} {fmt_value(top.statistic.value)}",
                fmt_p(headline_p(top)),
            ]
        )
    return rows


SUMMARY_HEAD = ["scan", "type", "status", "significant", "top finding", "statistic", "p-value"]


def render_markdown(report: AuditReport, hooks: HookMap = NO_HOOKS) -> str:
    prov = report.provenance
    lines = [f"# Fairness audit: {md_text(report.name)}", "", verdict_line(report), ""]
    if report.baseline is not None:
        lines += render_comparison(report.baseline)
    if report.monitor is not None:
        lines += render_monitor(report.monitor)
    if report.description:
        lines += [md_block(report.description), ""]
    model = model_text(report)
    if model is not None:
        lines += [f"Model: {md_block(model)}", ""]
    rows = [[md_code(str(r[0])), *r[1:]] for r in summary_rows(report)]
    lines += [*table(SUMMARY_HEAD, rows, {3, 5, 6}), ""]
    lines += overview_lines(report)
    lines += audited_lines(report)
    for scan in report.scans:
        lines += _scan_section(scan, hooks.get(scan.type), report.attributes)
    if report.data_warnings:
        lines += ["## Data warnings", ""]
        lines += [f"- {md_text(w)}" for w in report.data_warnings]
        lines.append("")
    lines += [
        "## Provenance",
        "",
        f"- fairscan {prov.tool_version}; started {prov.utc_time}, {prov.total_seconds:.2f} s, "
        f"{prov.workers} worker(s)",
        f"- spec {md_text(prov.spec_path)} (sha256 `{prov.spec_sha256[:16]}…`)",
        f"- data {md_text(prov.data_path)} (sha256 `{prov.data_sha256[:16]}…`): {prov.data_rows} "
        f"rows, {prov.rows_after_filter} after filter"
        + (f" {md_text(prov.filter)}" if prov.filter else ""),
        f"- seed {prov.seed if prov.seed is not None else 'none (entropy ' + prov.seed_entropy + ')'}"
        + (f" ({prov.seed_origin})" if prov.seed_origin not in (None, "significance.seed") else ""),
        # settings not written in the spec ([tool.fairscan], FAIRSCAN_*, flags)
        *(f"- setting {md_text(o.text())}" for o in prov.overrides),
        "",
    ]
    # data values and names may hold HTML: disarmed for every renderer (report/sink_escape.py)
    return markdown_document("\n".join(lines))


# --- the monitor over the series of audits (spec `monitor:`) --------------------------------


def render_monitor(monitor: MonitorSummary) -> list[str]:
    """Markdown lines: the alarms, then every monitored subgroup's evidence after this run."""
    lines = ["## Monitoring over the runs", "", md_text(summary_sentence(monitor)), ""]
    lines += [f"- Alarm: {md_text(alarm_text(a))}" for a in monitor.alarms]
    if monitor.alarms:
        lines.append("")
    if monitor.subgroups:
        rows: list[list[object]] = [list(subgroup_row(s)) for s in monitor.subgroups]
        lines += [*table(SUBGROUP_HEAD, rows, {3, 4, 5}), ""]
    lines += [
        "Evidence starts at 1 and grows while this run's and earlier runs' data show bias; an "
        "alarm is raised when it reaches the alarm threshold. The anytime p-value (1 / the "
        "highest evidence so far) stays valid whenever the series of audits stops.",
        "",
    ]
    return lines


# --- the comparison with a baseline (audit run --baseline, audit diff) -----------------------


def render_comparison(comparison: BaselineComparison) -> list[str]:
    """Markdown lines: what changed since the baseline, new findings first."""

    def num(x: float | None) -> str:
        return fmt_value(x, missing="-")

    def p(x: float | None) -> str:
        return fmt_p(x, missing="-")

    def name_of(side: BaselineSide) -> str:
        return cell(side.label or subgroup_label(side.subgroup))

    c = comparison
    source = md_text(c.baseline_path or c.baseline_name)
    words = LABELS if any(k in c.counts for k in ("persisting", "changed")) else RETEST_LABELS
    summary = ", ".join(f"{c.counts.get(label, 0)} {label}" for label in words)
    lines = [
        "## What changed since the baseline",
        "",
        f"Baseline {source} ({md_text(c.baseline_utc_time)}): {summary}. Gate: fail on "
        f"{c.fail_on}.",
        "",
    ]
    if c.scans_added or c.scans_removed:
        if c.scans_added:
            lines.append(f"Scans not in the baseline: {md_text(', '.join(c.scans_added))}.")
        if c.scans_removed:
            lines.append(f"Scans no longer run: {md_text(', '.join(c.scans_removed))}.")
        lines.append("")
    if not c.entries:
        lines += ["No significant finding in either run.", ""]
        return lines
    lines += [
        "| label | scan | finding | statistic before → after | p before → after "
        "| inside before → after | power | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in c.entries:
        shown = e.after or e.before
        assert shown is not None
        subgroup = name_of(shown)
        if e.label in ("changed", "shifted") and e.before is not None:
            subgroup = f"{name_of(e.before)} → {subgroup}"
        b, a = e.before, e.after
        lines.append(
            f"| **{e.label}** | {md_code(e.scan_id)} | {subgroup} "
            f"| {num(b.score if b else None)} → {num(a.score if a else None)} "
            f"| {p(b.p_value if b else None)} → {p(a.p_value if a else None)} "
            f"| {num(b.rate if b else None)} → {num(a.rate if a else None)} "
            f"| {num(e.power)} | {cell(e.reason or '')} |"
        )
    lines.append("")
    if c.method == "retest":
        lines += [
            "Each significant baseline finding was re-tested on this run's data as a fixed "
            "subgroup (its own values and bin edges; no search, so no search correction): "
            "persists = still significant; resolved = not significant with power >= 0.8 to "
            "detect the baseline effect, which moved toward zero; inconclusive = not "
            "significant but underpowered, or not re-testable. new / shifted: significant "
            "findings of this run whose rows overlap no / a baseline finding's (Jaccard 0.5).",
            "",
        ]
    return lines


def render_diff(comparison: BaselineComparison, current: AuditReport) -> str:
    """Markdown of ``audit diff``: the comparison, then the current verdict per scan."""
    lines = [f"# Fairness audit diff: {md_text(current.name)}", ""]
    text = diff_verdict(comparison, diff_verdict_of(current, comparison))
    head, sep, rest = text.partition(": ")
    if sep and head.split(" ")[0] in (FAIL, PASS, ERROR, UNTESTED):
        verdict = f"**{head}**: {rest}."
    else:
        first, _, rest = text.partition("; ")
        verdict = f"**{first[0].upper()}{first[1:]}**; {rest}."
    lines += [verdict, ""]
    lines += render_comparison(comparison)
    return markdown_document("\n".join(lines))
