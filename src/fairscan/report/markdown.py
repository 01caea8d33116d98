"""GitHub-flavoured Markdown report: verdict first, findings in words, provenance last."""

from __future__ import annotations

from functools import partial

from fairscan.report.markdown_cbs import render_cbs
from fairscan.report.markdown_certification import render_certification
from fairscan.report.markdown_subroc import render_subroc
from fairscan.report.models import AuditReport, Finding, IjdiScanInfo, ScanResult
from fairscan.report.text import describe_subgroup, fmt_number, fmt_p, percent

_num = partial(fmt_number, digits=2)
_p = fmt_p


def _verdict_line(report: AuditReport) -> str:
    v = report.verdict
    if v.status == "error":
        return f"**ERROR**: {v.scans_with_errors} of {v.scans} scans could not be completed."
    if v.status == "findings" and v.exit_code == 0 and report.baseline is not None:
        noun = "finding" if v.significant_findings == 1 else "findings"
        return (
            f"**PASS** (gate: fail on {report.baseline.fail_on}): {v.significant_findings} "
            f"significant {noun} in {v.scans} scans, {report.baseline.new_significant} new."
        )
    if v.status == "findings" and v.exit_code == 0:
        noun = "finding" if v.significant_findings == 1 else "findings"
        return f"**PASS** (gate): {v.significant_findings} significant {noun} in {v.scans} scans."
    if v.status == "findings":
        noun = "finding" if v.significant_findings == 1 else "findings"
        return f"**FAIL**: {v.significant_findings} significant {noun} in {v.scans} scans."
    return f"**PASS**: no significant finding in {v.scans} scans."


STATUS_TEXT = {
    "significant": "significant",
    "not_significant": "not significant",
    "untested": "not tested (replicates: 0)",
    "no_finding": "no subgroup deviates in the scanned direction",
    "not_auditable": "not auditable",
    "error": "error",
}


def _finding_table(finding: Finding) -> list[str]:
    return [
        "| subgroup | size | observed rate | expected rate | outside rate | q | score | LLR | p-value |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {describe_subgroup(finding.subgroup)} | {finding.size} | {percent(finding.observed_rate, 1)} "
        f"| {percent(finding.expected_rate, 1)} | {percent(finding.outside_rate, 1)} | {finding.q:.3f} "
        f"| {finding.score:.2f} | {finding.llr:.2f} | {_p(finding.p_value)} |",
    ]


def _ijdi_lines(info: IjdiScanInfo) -> list[str]:
    passes = "pass" if info.passes == 1 else "passes"
    lines = [
        f"IJDI settings: side {info.side}, lambda = {info.lam:g}, base rate from {info.base_rate_source}; "
        f"edge-case loop: {info.passes} scan {passes}, {len(info.corrections)} correction(s)"
        + ("" if info.converged else " (stopped at the pass cap)")
        + ".",
        "",
    ]
    if info.mitigation is not None:
        lines += [
            f"Mitigation (iterative thresholds): {len(info.mitigation)} correction(s), "
            f"status {info.mitigation_status or 'not needed'}.",
            "",
        ]
        if info.mitigation:
            lines += [
                "| subgroup | new threshold | rate before | rate after | score before | p before |",
                "|---|---:|---:|---:|---:|---:|",
            ]
            for step in info.mitigation:
                lines.append(
                    f"| {describe_subgroup(step.subgroup)} | {step.threshold:.4f} | {percent(step.rate_before, 1)} "
                    f"| {percent(step.rate_after, 1)} | {step.score_before:.2f} | {_p(step.p_value_before)} |"
                )
            lines.append("")
    return lines


def _scan_section(scan: ScanResult) -> list[str]:
    lines = [f"## `{scan.id}` ({scan.type}): {STATUS_TEXT[scan.status]}", ""]
    if scan.error:
        lines += ["```", scan.error, "```", ""]
        return lines
    if scan.population is not None:
        pop = scan.population
        lines.append(
            f"Scanned population: {pop.description}, {pop.size} rows; "
            f"{pop.observed_label}: {percent(pop.observed_rate, 1)}."
        )
        lines.append("")
    for finding in scan.findings:
        lines.append(finding.description)
        lines.append("")
        lines += _finding_table(finding)
        lines.append("")
        if finding.p_value is not None and scan.null_distribution is not None:
            nd = scan.null_distribution
            judged = "significant" if finding.significant else "not significant"
            lines.append(
                f"Randomization test: {nd.exceed_count} of {nd.replicates} null replicates reached a "
                f"score of at least {finding.score:.2f} (p = {_p(finding.p_value)}, {judged} at "
                f"alpha = {nd.alpha:g}); the null {100 * (1 - nd.alpha):g}% quantile is "
                f"{_num(nd.quantile)}."
            )
            lines.append("")
    if scan.subroc is not None:
        lines += render_subroc(scan.subroc)
    if scan.certification is not None:
        lines += render_certification(scan.certification)
    if scan.critical_value is not None:
        cv = scan.critical_value
        note = (
            ""
            if cv.applicable
            else " (the theorem assumes penalty 0 and direction negative; indicative only)"
        )
        lines.append(
            f"Analytic critical value h({cv.alpha:g}) = {cv.h:.2f} for M = {cv.profiles} covariate "
            f"profiles: the score {'exceeds' if cv.exceeded else 'does not exceed'} it{note}."
        )
        lines.append("")
    if scan.ijdi is not None:
        lines += _ijdi_lines(scan.ijdi)
    if scan.cbs is not None:
        lines += render_cbs(scan.cbs)
    for warning in scan.warnings:
        lines.append(f"> Warning: {warning}")
        lines.append("")
    t = scan.timing
    settings = "".join(
        f"; {key} {scan.parameters[key]}"
        for key in ("penalty", "restarts")
        if scan.parameters.get(key) is not None
    )
    lines.append(
        f"<sub>search {t.search_seconds:.2f} s, significance {t.significance_seconds:.2f} s{settings}</sub>"
    )
    lines.append("")
    return lines


def render_markdown(report: AuditReport) -> str:
    prov = report.provenance
    lines = [f"# Fairness audit: {report.name}", "", _verdict_line(report), ""]
    if report.baseline is not None:
        from fairscan.report.baseline import render_comparison

        lines += render_comparison(report.baseline)
    if report.description:
        lines += [report.description, ""]
    lines += [
        "| scan | type | status | top subgroup | score | p-value |",
        "|---|---|---|---|---:|---:|",
    ]
    for scan in report.scans:
        top = scan.headline()
        lines.append(
            f"| `{scan.id}` | {scan.type} | {STATUS_TEXT[scan.status]} | "
            f"{describe_subgroup(top[0]) if top else '-'} | "
            f"{_num(top[1]) if top else '-'} | {_p(top[2]) if top else '-'} |"
        )
    lines.append("")
    for scan in report.scans:
        lines += _scan_section(scan)
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
        f"- seed {prov.seed if prov.seed is not None else 'none (entropy ' + prov.seed_entropy + ')'}",
        "",
    ]
    return "\n".join(lines)
