"""Rich renderables for the terminal summary (the CLI prints them; this module never prints)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from fairscan.report.models import AuditReport
from fairscan.report.text import describe_subgroup

STATUS_STYLE = {
    "significant": "bold red",
    "not_significant": "green",
    "untested": "yellow",
    "no_finding": "green",
    "error": "bold red",
}


def summary_table(report: AuditReport) -> Table:
    table = Table(title=f"fairscan: {report.name}", title_justify="left", expand=False)
    table.add_column("scan")
    table.add_column("type")
    table.add_column("status")
    table.add_column("subgroup", overflow="fold")
    table.add_column("size", justify="right")
    table.add_column("rate in / out", justify="right")
    table.add_column("score", justify="right")
    table.add_column("p", justify="right")
    for scan in report.scans:
        top = scan.findings[0] if scan.findings else None
        status = Text(scan.status.replace("_", " "), style=STATUS_STYLE[scan.status])
        if top is None:
            table.add_row(scan.id, scan.type, status, "-", "-", "-", "-", "-")
            continue
        rates = (
            f"{100 * (top.observed_rate or 0):.0f}% / "
            + ("-" if top.outside_rate is None else f"{100 * top.outside_rate:.0f}%")
        )
        table.add_row(
            scan.id,
            scan.type,
            status,
            describe_subgroup(top.subgroup),
            str(top.size),
            rates,
            f"{top.score:.2f}",
            "-" if top.p_value is None else f"{top.p_value:.4f}",
        )
    return table


def findings_text(report: AuditReport) -> list[Text]:
    """One sentence per finding that is significant (or untested), for the terminal."""
    out = []
    for scan in report.scans:
        for finding in scan.findings:
            if finding.significant is False:
                continue
            out.append(Text(f"{scan.id}: {finding.description}"))
    return out


def verdict_text(report: AuditReport, written: list[str]) -> Text:
    v = report.verdict
    where = f" Reports: {', '.join(written)}" if written else ""
    if v.status == "error":
        return Text(f"ERROR: {v.scans_with_errors} scan(s) failed.{where}", style="bold red")
    if v.status == "findings":
        return Text(
            f"FAIL: {v.significant_findings} significant finding(s) in {v.scans} scan(s).{where}",
            style="bold red",
        )
    return Text(f"PASS: no significant finding in {v.scans} scan(s).{where}", style="bold green")
