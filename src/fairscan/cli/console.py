"""Rich renderables for the terminal summary (the CLI prints them; this module never prints)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fairscan.report.models import AuditReport, MonitorSummary
from fairscan.report.monitor_view import alarm_text, fmt_evidence, process_text, summary_sentence
from fairscan.report.sink_escape import console_text
from fairscan.report.text import fmt_p, fmt_value, headline_p, statistic_words
from fairscan.report.verdict import (
    gate_passed_findings,
    not_certified_note,
    untested_words,
    verdict_word,
)

STATUS_STYLE = {
    "significant": "bold red",
    "not_significant": "green",
    "untested": "yellow",
    "no_finding": "green",
    "not_auditable": "yellow",
    "error": "bold red",
    "not_certified": "yellow",
}


def summary_table(report: AuditReport) -> Table:
    """One row per scan. Cells are ``Text`` objects: data values never go through rich markup."""
    table = Table(
        title=f"fairscan: {console_text(report.name)}", title_justify="left", expand=False
    )
    for name, justify in (
        ("scan", "left"),
        ("type", "left"),
        ("status", "left"),
        ("significant", "right"),
        ("top finding", "left"),
        ("size", "right"),
        ("inside / reference", "right"),
        ("statistic", "right"),
        ("p", "right"),
    ):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for scan in report.scans:
        status = Text(scan.status.replace("_", " "), style=STATUS_STYLE.get(scan.status, ""))
        counts = f"{scan.significant_count()} of {len(scan.findings)}"
        cells = [Text(scan.id), Text(scan.type), status, Text(counts)]
        top = scan.headline()
        if top is None:
            table.add_row(*cells, *(Text("-") for _ in range(5)))
            continue
        effect = top.effect
        table.add_row(
            *cells,
            Text(console_text(top.label)),
            Text(str(top.size)),
            Text(f"{fmt_value(effect.inside)} / {fmt_value(effect.reference)}"),
            Text(f"{statistic_words(top.statistic.name)} {fmt_value(top.statistic.value)}"),
            Text(fmt_p(headline_p(top), missing="-")),
        )
    return table


def summary_lines(report: AuditReport) -> list[str]:
    """The summary table as plain lines, one per scan, for logs (stderr not a terminal): no
    column widths, so a long subgroup label is never folded mid-word."""
    lines = [console_text(f"fairscan: {report.name}")]
    for scan in report.scans:
        line = (
            f"scan {scan.id} ({scan.type}): {scan.status.replace('_', ' ')}, "
            f"{scan.significant_count()} of {len(scan.findings)} significant"
        )
        top = scan.headline()
        if top is not None:
            effect = top.effect
            line += (
                f"; top: {top.label} (size {top.size}, "
                f"inside / reference {fmt_value(effect.inside)} / {fmt_value(effect.reference)})"
                f"; {statistic_words(top.statistic.name)} {fmt_value(top.statistic.value)}"
                f"; p {fmt_p(headline_p(top), missing='-')}"
            )
        lines.append(console_text(line))
    return lines


def findings_text(report: AuditReport) -> list[Text]:
    """One sentence per finding that is significant (or untested), for the terminal."""
    out = []
    for scan in report.scans:
        for finding in scan.findings:
            if finding.significant is False and finding.certified is not False:
                continue  # not-certified groups are shown: they are what certify reports
            out.append(Text(console_text(f"{scan.id}: {finding.description}")))
    return out


def monitor_text(monitor: MonitorSummary, *, quiet: bool = False) -> list[Text]:
    """The monitor: its headline, each alarm (red), then each monitored subgroup's evidence
    (left out when ``quiet``)."""
    lines = [Text(console_text(summary_sentence(monitor)))]
    lines += [
        Text(console_text(f"ALARM {alarm_text(a)}"), style="bold red") for a in monitor.alarms
    ]
    if not quiet:
        lines += [
            Text(
                console_text(
                    f"  {s.scan}: {process_text(s)}: {s.label}, evidence "
                    f"{fmt_evidence(s.e_value)}, anytime p-value {fmt_p(s.p_value_anytime)}"
                )
            )
            for s in monitor.subgroups
        ]
    return lines


def verdict_text(report: AuditReport, written: list[str]) -> Text:
    """The verdict line, then the groups certify could not certify, then where the reports are."""
    line = _verdict_text(report, [])
    where = f" Reports: {', '.join(written)}" if written else ""
    return Text(line.plain + not_certified_note(report.verdict) + where, style=line.style)


def _verdict_text(report: AuditReport, written: list[str]) -> Text:
    v = report.verdict
    word = verdict_word(v)
    where = f" Reports: {console_text(', '.join(written))}" if written else ""
    if v.status == "error":
        return Text(f"{word}: {v.scans_with_errors} scan(s) failed.{where}", style="bold red")
    if v.status == "untested":  # never PASS: a test that cannot reach alpha found nothing
        return Text(f"{word}: {untested_words(v)}{where}", style="bold yellow")
    if gate_passed_findings(v):
        # the spec's gate (e.g. fail_on: new_significant) let these findings pass
        new = f", {report.baseline.new_significant} new" if report.baseline is not None else ""
        return Text(
            f"{word} (gate): {v.significant_findings} significant finding(s){new} in "
            f"{v.scans} scan(s).{where}",
            style="bold yellow",
        )
    if v.status == "findings":
        return Text(
            f"{word}: {v.significant_findings} significant finding(s) in {v.scans} scan(s).{where}",
            style="bold red",
        )
    return Text(f"{word}: no significant finding in {v.scans} scan(s).{where}", style="bold green")
