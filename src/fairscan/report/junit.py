"""JUnit XML report for CI test panels: one testsuite per spec, one testcase per scan.

A scan with a significant finding is a ``<failure>`` whose message names its top finding (label,
statistic, p-value); a scan that could not run is an ``<error>``; a scan that was not tested
(replicates 0) or not auditable is ``<skipped>``. With a ``monitor`` object, each monitored
subgroup is one more testcase: a ``<failure>`` when it raised an alarm this run, passed
otherwise. Reads only the result contract.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fairscan.report.models import (
    AuditReport,
    Finding,
    MonitorAlarm,
    MonitorSubgroup,
    MonitorSummary,
)
from fairscan.report.monitor_view import alarm_text, fmt_evidence, process_text
from fairscan.report.sink_escape import xml_text
from fairscan.report.text import fmt_value, headline_p, p_equals, statistic_words
from fairscan.report.verdict import verdict_word


def headline_text(top: Finding | None) -> str:
    """``sex = F and region = N (score 12.30, p = 0.01)``, or "no finding"."""
    if top is None:
        return "no finding"
    stat = f"{statistic_words(top.statistic.name)} {fmt_value(top.statistic.value)}"
    return f"{top.label} ({stat}, {p_equals(headline_p(top), 'p not tested', precise=True)})"


def _identity(entry: MonitorSubgroup | MonitorAlarm) -> tuple[str, str, str]:
    subgroup = sorted((k, tuple(sorted(v))) for k, v in entry.subgroup.items())
    return entry.scan, entry.kind, repr(subgroup)


def monitor_cases(
    monitor: MonitorSummary | None,
) -> list[tuple[MonitorSubgroup | MonitorAlarm, list[MonitorAlarm]]]:
    """One case per monitored subgroup with its alarms of this run (an alarm of no listed
    subgroup is a case of its own)."""
    if monitor is None:
        return []
    alarms: dict[tuple[str, str, str], list[MonitorAlarm]] = {}
    for a in monitor.alarms:
        alarms.setdefault(_identity(a), []).append(a)
    cases: list[tuple[MonitorSubgroup | MonitorAlarm, list[MonitorAlarm]]] = [
        (s, alarms.pop(_identity(s), [])) for s in monitor.subgroups
    ]
    cases += [(found[0], found) for found in alarms.values()]
    return cases


def _monitor_case(
    suite: ET.Element,
    name: str,
    entry: MonitorSubgroup | MonitorAlarm,
    alarms: list[MonitorAlarm],
) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"fairscan.{name}.monitor",
        name=f"monitor {entry.scan}: {process_text(entry)}",
        time="0.000",
    )
    if alarms:
        failure = ET.SubElement(
            case, "failure", message=alarm_text(alarms[0]), type=f"monitor_{alarms[0].alarm}"
        )
        failure.text = "\n".join(alarm_text(a) for a in alarms)
    elif isinstance(entry, MonitorSubgroup):
        out = ET.SubElement(case, "system-out")
        out.text = (
            f"{entry.label}: evidence {fmt_evidence(entry.e_value)}, anytime p-value "
            f"{entry.p_value_anytime:.4g}"
        )


def render_junit(report: AuditReport) -> str:
    scans = report.scans
    cases = monitor_cases(report.monitor)
    # a scan fails its test case on a significant finding or a group certify cannot certify;
    # a monitored subgroup on an alarm
    failures = sum(
        1
        for s in scans
        if s.status != "error" and (s.significant_count() or s.not_certified_count())
    ) + sum(1 for _, alarms in cases if alarms)
    tests = str(len(scans) + len(cases))
    errors = sum(1 for s in scans if s.status == "error")
    skipped = sum(1 for s in scans if s.status in ("untested", "not_auditable"))
    seconds = f"{sum(s.timing.total_seconds for s in scans):.3f}"
    suites = ET.Element(
        "testsuites",
        name="fairscan",
        tests=tests,
        failures=str(failures),
        errors=str(errors),
        time=seconds,
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=report.name,
        tests=tests,
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
        time=seconds,
        timestamp=report.provenance.utc_time,
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("spec", report.provenance.spec_path),
        ("data_sha256", report.provenance.data_sha256),
        ("seed", str(report.provenance.seed)),
        ("fairscan", report.provenance.tool_version),
        ("verdict", verdict_word(report.verdict)),
    ):
        ET.SubElement(props, "property", name=name, value=value)
    model = report.model
    if model is not None:  # the spec's model: block, one property per given field
        for key, value in model.model_dump().items():
            if value is not None:
                ET.SubElement(props, "property", name=f"model.{key}", value=str(value))
    for scan in scans:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"fairscan.{report.name}",
            name=f"{scan.id} ({scan.type})",
            time=f"{scan.timing.total_seconds:.3f}",
        )
        where = headline_text(scan.headline())
        if scan.status == "error":
            error = ET.SubElement(case, "error", message=f"scan {scan.id} could not run")
            error.text = scan.error or ""
        elif scan.significant_count():
            n = scan.significant_count()
            failure = ET.SubElement(
                case,
                "failure",
                message=f"{n} significant finding(s); top finding: {where}",
                type="significant_finding",
            )
            failure.text = (
                "\n".join(f.description for f in scan.findings if f.significant is True) or where
            )
        elif scan.not_certified_count():  # never called significant: they are not
            failure = ET.SubElement(
                case,
                "failure",
                message=f"{scan.not_certified_count()} group(s) not certified; top: {where}",
                type="not_certified",
            )
            failure.text = "\n".join(f.description for f in scan.findings if f.certified is False)
        elif scan.status == "untested":  # a test that cannot reach alpha is no pass
            why = scan.untested_reason or "no significance test ran"
            ET.SubElement(case, "skipped", message=f"UNTESTED: {why}; top finding {where}")
        elif scan.status == "not_auditable":
            ET.SubElement(case, "skipped", message=f"{scan.status}: top finding {where}")
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{scan.status}: top finding {where}"
    for entry, alarms in cases:
        _monitor_case(suite, report.name, entry, alarms)
    ET.indent(suites)
    # data values may hold control characters, which XML 1.0 cannot carry: shown as escapes
    text = xml_text(ET.tostring(suites, "unicode"))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n"
