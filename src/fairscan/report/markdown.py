"""GitHub-flavoured Markdown report: verdict first, findings in words, provenance last.

Reads only the result contract (:mod:`fairscan.report.models`): every scan's findings get the
same table; what a scan type reports beyond it (``detail``) comes from its render hooks.
"""

from __future__ import annotations

from fairscan.data.labels import subgroup_label
from fairscan.report.baseline import LABELS, RETEST_LABELS
from fairscan.report.hooks import NO_HOOKS, HookMap, RenderHooks
from fairscan.report.models import (
    AuditReport,
    BaselineComparison,
    BaselineSide,
    Finding,
    ScanResult,
)
from fairscan.report.sink_escape import code_fence, markdown_document
from fairscan.report.text import (
    fmt_p,
    fmt_value,
    headline_p,
    percent,
    significance_words,
    statistic_words,
)
from fairscan.report.verdict import (
    FAIL,
    PASS,
    diff_verdict,
    gate_passed_findings,
    status_text,
    verdict_word,
)

# Findings shown per scan (most important first); all of them are in the JSON report.
MAX_FINDINGS = 50


def verdict_line(report: AuditReport) -> str:
    """The verdict in one Markdown line (bold PASS/FAIL/ERROR first)."""
    v = report.verdict
    word = f"**{verdict_word(v)}**"
    noun = "finding" if v.significant_findings == 1 else "findings"
    scans = f"{v.scans} scan" if v.scans == 1 else f"{v.scans} scans"
    if v.status == "error":
        return f"{word}: {v.scans_with_errors} of {v.scans} scans could not be completed."
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
    """Text safe inside a Markdown table cell (pipes escaped, one line)."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


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


def finding_columns(finding: Finding) -> tuple[list[str], list[object], set[int]]:
    """The common table of one finding: header, row, right-aligned columns."""
    e = finding.effect
    head = ["finding", "size", f"{e.metric} inside", f"reference ({e.reference_name})"]
    row: list[object] = [
        finding.label,
        finding.size,
        with_count(e.inside, e.inside_count),
        with_count(e.reference, e.reference_count),
    ]
    if e.expected is not None:
        head.append("expected inside")
        row.append(fmt_value(e.expected))
    head += [statistic_words(finding.statistic.name), "p-value", "adjusted p-value", "significant"]
    row += [
        fmt_value(finding.statistic.value),
        fmt_p(finding.p_value),
        fmt_p(finding.adjusted_p_value, missing="-"),
        significance_words(finding.significant),
    ]
    numeric = {1, 2, 3} | set(range(4, len(head) - 1))
    return head, row, numeric


def null_sentence(scan: ScanResult, finding: Finding) -> str | None:
    """The randomization test of a finding, in words (None without a null distribution)."""
    nd = scan.null_distribution
    if nd is None or finding.p_value is None:
        return None
    judged = "significant" if finding.significant else "not significant"
    return (
        f"Randomization test: {nd.exceed_count} of {nd.replicates} null replicates reached a "
        f"{statistic_words(finding.statistic.name)} of at least "
        f"{fmt_value(finding.statistic.value)} (p = {fmt_p(finding.p_value)}, {judged} at "
        f"alpha = {nd.alpha:g}); the null {100 * (1 - nd.alpha):g}% quantile is "
        f"{fmt_value(nd.quantile)}."
    )


def _finding_lines(scan: ScanResult, finding: Finding, hooks: RenderHooks | None) -> list[str]:
    head, row, numeric = finding_columns(finding)
    lines = [finding.description, "", *table(head, [row], numeric), ""]
    if hooks is not None and hooks.finding_markdown is not None:
        lines += hooks.finding_markdown(scan, finding)
    sentence = null_sentence(scan, finding)
    if sentence is not None:
        lines += [sentence, ""]
    return lines


def _scan_section(scan: ScanResult, hooks: RenderHooks | None) -> list[str]:
    lines = [f"## `{scan.id}` ({scan.type}): {status_text(scan.status)}", ""]
    if scan.error:
        fence = code_fence(scan.error)
        return [*lines, fence, scan.error, fence, ""]
    if scan.population is not None:
        pop = scan.population
        # a rate (binary outcomes); scans of means (continuous, counts) leave it None
        rate = (
            ""
            if pop.observed_rate is None
            else f"; {pop.observed_label}: {percent(pop.observed_rate, 1)}"
        )
        lines += [f"Scanned population: {pop.description}, {pop.size} rows{rate}.", ""]
    if scan.findings:
        noun = "finding" if len(scan.findings) == 1 else "findings"
        lines += [f"{len(scan.findings)} {noun}, {scan.significant_count()} significant.", ""]
    for finding in scan.findings[:MAX_FINDINGS]:
        lines += _finding_lines(scan, finding, hooks)
    if len(scan.findings) > MAX_FINDINGS:
        lines += [f"{len(scan.findings) - MAX_FINDINGS} more findings in the JSON report.", ""]
    if hooks is not None and hooks.markdown is not None:
        lines += hooks.markdown(scan)
    for warning in scan.warnings:
        lines += [f"> Warning: {warning}", ""]
    t = scan.timing
    lines += [
        f"<sub>search {t.search_seconds:.2f} s, significance {t.significance_seconds:.2f} s</sub>",
        "",
    ]
    return lines


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
    lines = [f"# Fairness audit: {report.name}", "", verdict_line(report), ""]
    if report.baseline is not None:
        lines += render_comparison(report.baseline)
    if report.description:
        lines += [report.description, ""]
    rows = [[f"`{r[0]}`", *r[1:]] for r in summary_rows(report)]
    lines += [*table(SUMMARY_HEAD, rows, {3, 5, 6}), ""]
    for scan in report.scans:
        lines += _scan_section(scan, hooks.get(scan.type))
    if report.data_warnings:
        lines += ["## Data warnings", ""]
        lines += [f"- {w}" for w in report.data_warnings]
        lines.append("")
    lines += [
        "## Provenance",
        "",
        f"- fairscan {prov.tool_version}; started {prov.utc_time}, {prov.total_seconds:.2f} s, "
        f"{prov.workers} worker(s)",
        f"- spec `{prov.spec_path}` (sha256 `{prov.spec_sha256[:16]}…`)",
        f"- data `{prov.data_path}` (sha256 `{prov.data_sha256[:16]}…`): {prov.data_rows} rows, "
        f"{prov.rows_after_filter} after filter" + (f" `{prov.filter}`" if prov.filter else ""),
        f"- seed {prov.seed if prov.seed is not None else 'none (entropy ' + prov.seed_entropy + ')'}"
        + (f" ({prov.seed_origin})" if prov.seed_origin not in (None, "significance.seed") else ""),
        "",
    ]
    # data values and names may hold HTML: disarmed for every renderer (report/sink_escape.py)
    return markdown_document("\n".join(lines))


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
    source = f"`{c.baseline_path}`" if c.baseline_path else f"`{c.baseline_name}`"
    words = LABELS if any(k in c.counts for k in ("persisting", "changed")) else RETEST_LABELS
    summary = ", ".join(f"{c.counts.get(label, 0)} {label}" for label in words)
    lines = [
        "## What changed since the baseline",
        "",
        f"Baseline {source} ({c.baseline_utc_time}): {summary}. Gate: fail on {c.fail_on}.",
        "",
    ]
    if c.scans_added or c.scans_removed:
        if c.scans_added:
            lines.append(f"Scans not in the baseline: {', '.join(c.scans_added)}.")
        if c.scans_removed:
            lines.append(f"Scans no longer run: {', '.join(c.scans_removed)}.")
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
            f"| **{e.label}** | `{e.scan_id}` | {subgroup} "
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
    lines = [f"# Fairness audit diff: {current.name}", ""]
    text = diff_verdict(comparison)
    head, sep, rest = text.partition(": ")
    if sep and head in (FAIL, PASS):
        verdict = f"**{head}**: {rest}."
    else:
        first, _, rest = text.partition("; ")
        verdict = f"**{first[0].upper()}{first[1:]}**; {rest}."
    lines += [verdict, ""]
    lines += render_comparison(comparison)
    return markdown_document("\n".join(lines))
