"""The report as SARIF 2.1.0 (Static Analysis Results Interchange Format), for code-scanning
dashboards (GitHub code scanning, Azure DevOps, IDE viewers).

One run of the tool ``fairscan``; one rule per scan of the audit (its ``id``, a name for people
and ``help`` in text and Markdown, as GitHub code scanning requires; the scan type in the
rule's properties); one result per significant finding, located at the scan's line and column
in the spec file (where the GitHub annotations put it: ``fairscan.spec.places``) and,
logically, at the scan. A finding the gate fails on is an ``error``, one it
lets pass (``gate.fail_on: never`` or ``new_significant`` on a persisting finding) a
``warning``. Findings that are not significant are not alerts and are left out (the JSON report
has them). A scan that failed is a tool execution notification of level ``error``. Each result
carries a partial fingerprint of its audit, scan and subgroup, so a dashboard tracks one finding
across runs. With a ``monitor`` object, each monitor alarm is a result too (rule
``fairscan/monitor``, after the scans' rules), fingerprinted by audit, scan and subgroup.
Validated against the official schema in tests/report/test_report_sarif.py.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Final

from fairscan import __version__
from fairscan.report.hooks import NO_HOOKS, HookMap, RenderHooks
from fairscan.report.models import AuditReport, Finding, MonitorAlarm, ScanResult
from fairscan.report.monitor_view import alarm_text
from fairscan.report.verdict import ExitCode, verdict_word

if TYPE_CHECKING:
    from fairscan.spec.places import ScanPlace

SARIF_VERSION: Final = "2.1.0"
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI: Final = "https://pypi.org/project/fairscan/"
# the partial fingerprint's name: versioned, so a change of what it hashes starts anew
FINGERPRINT: Final = "fairscanFinding/v1"
MONITOR_FINGERPRINT: Final = "fairscanMonitorAlarm/v1"
# the monitor alarms' rule: a scan id cannot hold "/" (spec SCAN_ID_PATTERN), so no scan's rule
# has this id
MONITOR_RULE: Final = "fairscan/monitor"


def render_sarif(report: AuditReport, hooks: HookMap = NO_HOOKS) -> str:
    """The SARIF log of ``report`` (strict JSON, 2-space indent); ``hooks``: the scan types'
    render hooks (a type's own rule description)."""
    log = sarif_log(report, hooks)
    return json.dumps(log, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def sarif_log(report: AuditReport, hooks: HookMap = NO_HOOKS) -> dict[str, Any]:
    """The SARIF log as a mapping: one run with its rules, results and invocation."""
    rules = [_rule(scan, hooks.get(scan.type)) for scan in report.scans]
    gated = report.verdict.exit_code == ExitCode.FINDINGS
    places = _scan_places(report)
    results = [
        _result(report, index, scan, finding, gated, places[index] if index < len(places) else None)
        for index, scan in enumerate(report.scans)
        for finding in scan.findings
        if finding.significant or finding.certified is False  # certify: not certified
    ]
    if report.monitor is not None:
        rules.append(_monitor_rule())
        results += [
            _alarm_result(report, len(report.scans), alarm, gated)
            for alarm in report.monitor.alarms
        ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "fairscan",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "automationDetails": {"id": f"fairscan/{report.name}/"},
        "invocations": [_invocation(report)],
        "results": results,
        "properties": {
            "verdict": report.verdict.status,
            "verdictWord": verdict_word(report.verdict),
            "untestedScans": [u.model_dump() for u in report.verdict.untested_scans],
            "exitCode": report.verdict.exit_code,
            "significantFindings": report.verdict.significant_findings,
            "notCertified": report.verdict.not_certified,
            "specSha256": report.provenance.spec_sha256,
            "dataPath": report.provenance.data_path,
            "dataSha256": report.provenance.data_sha256,
            "seed": report.provenance.seed,
        },
    }
    artifact = _artifact_uri(report.provenance.spec_path)
    if artifact is not None:
        run["originalUriBaseIds"] = {"SRCROOT": {"description": {"text": "The repository root"}}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _rule(scan: ScanResult, hooks: RenderHooks | None) -> dict[str, Any]:
    own = hooks.sarif_rule(scan, _metric(scan)) if hooks and hooks.sarif_rule else None
    text = (
        own
        or f"{scan.type} scan `{scan.id}`: subgroups whose {_metric(scan)} differs significantly"
    )
    return {
        "id": scan.id,
        "name": _rule_name(scan),
        "shortDescription": {"text": text},
        "fullDescription": {"text": f"{text} (fairscan scan type {scan.type})."},
        "help": _rule_help(scan, text),
        "defaultConfiguration": {"level": "error"},
        "properties": {"scanType": scan.type, "tags": ["fairness", "bias", scan.type]},
    }


def _monitor_rule() -> dict[str, Any]:
    text = (
        "monitored subgroups whose evidence of bias over the series of audits reached the "
        "alarm threshold (spec monitor:, anytime-valid)"
    )
    return {
        "id": MONITOR_RULE,
        "name": "MonitorAlarm",
        "shortDescription": {"text": text},
        "fullDescription": {"text": f"{text}."},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["fairness", "bias", "monitor"]},
    }


def _alarm_result(
    report: AuditReport, rule_index: int, alarm: MonitorAlarm, gated: bool
) -> dict[str, Any]:
    location: dict[str, Any] = {
        "logicalLocations": [
            {
                "name": alarm.scan,
                "fullyQualifiedName": f"{report.name}/monitor/{alarm.scan}",
                "kind": "module",
            }
        ]
    }
    artifact = _artifact_uri(report.provenance.spec_path)
    if artifact is not None:
        location["physicalLocation"] = {"artifactLocation": artifact, "region": {"startLine": 1}}
    key = json.dumps(
        [report.name, alarm.scan, alarm.kind, alarm.subgroup], sort_keys=True, ensure_ascii=False
    )
    properties = {
        "scanType": alarm.scan_type,
        "kind": alarm.kind,
        "subgroup": alarm.subgroup,
        "alarm": alarm.alarm,
        "eValue": _finite(alarm.e_value),
        "threshold": _finite(alarm.threshold),
        "runIndex": alarm.run_index,
    }
    return {
        "ruleId": MONITOR_RULE,
        "ruleIndex": rule_index,
        "kind": "fail",
        "level": "error" if gated else "warning",
        "message": {"text": alarm_text(alarm)},
        "locations": [location],
        "partialFingerprints": {
            MONITOR_FINGERPRINT: hashlib.sha256(key.encode("utf-8")).hexdigest()
        },
        "properties": properties,
    }


def _metric(scan: ScanResult) -> str:
    for finding in scan.findings:
        return finding.effect.metric
    return "outcome"


def _rule_name(scan: ScanResult) -> str:
    """A rule name for people, in PascalCase as SARIF suggests: the scan type's words, then the
    id's (``fpr_scan`` scan ``fpr`` -> ``FprScanFpr``), so never the id itself (SARIF1001)."""
    return _pascal(scan.type) + _pascal(scan.id)


def _pascal(text: str) -> str:
    words = [w for w in text.replace("-", "_").replace(".", "_").split("_") if w]
    return "".join(w[:1].upper() + w[1:] for w in words) or "Scan"


def _rule_help(scan: ScanResult, text: str) -> dict[str, str]:
    """What a result of the rule means and what to do about it (GitHub shows it beside each
    alert; GH2012 requires it): plain text and Markdown."""
    what = (
        "Each result is one group, with its size and rates in the message and its p-value "
        "and effect in the result's properties."
    )
    act = (
        "Open the audit's Markdown or HTML report for the group's rows and rates, check the "
        "data and the model for that group, and run the audit again after a change."
    )
    explain = f"audit explain {scan.type}"
    return {
        "text": f"{text.replace('`', '')}. {what} {act} {explain} says how to read this scan.",
        "markdown": (f"**{text}.**\n\n{what}\n\n{act}\n\n`{explain}` says how to read this scan."),
    }


def _result(
    report: AuditReport,
    index: int,
    scan: ScanResult,
    finding: Finding,
    gated: bool,
    place: ScanPlace | None,
) -> dict[str, Any]:
    location: dict[str, Any] = {
        "logicalLocations": [
            {
                "name": scan.id,
                "fullyQualifiedName": f"{report.name}/scans[{index}]/{scan.id}",
                "kind": "module",
            }
        ]
    }
    physical = _physical_location(report.provenance.spec_path, place)
    if physical is not None:
        location["physicalLocation"] = physical
    properties: dict[str, Any] = {
        "subgroup": finding.subgroup,
        "group": finding.group,
        "size": finding.size,
        "metric": finding.effect.metric,
        "inside": finding.effect.inside,
        "reference": finding.effect.reference,
        "pValue": finding.p_value,
        "adjustedPValue": finding.adjusted_p_value,
        "statistic": finding.statistic.value,
        "statisticName": finding.statistic.name,
        "certified": finding.certified,  # false: not certified (never "significant")
    }
    return {
        "ruleId": scan.id,
        "ruleIndex": index,
        "kind": "fail",
        "level": "error" if gated else "warning",
        "message": {"text": f"{finding.label}: {finding.description}"},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT: _fingerprint(report.name, scan.id, finding)},
        "properties": {k: _finite(v) for k, v in properties.items() if v is not None},
    }


def _finite(value: Any) -> Any:
    """NaN and infinities are not JSON: written as null."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


def _fingerprint(name: str, scan_id: str, finding: Finding) -> str:
    key = json.dumps(
        [name, scan_id, finding.subgroup, finding.group], sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _invocation(report: AuditReport) -> dict[str, Any]:
    notifications = [
        {
            "level": "error",
            "message": {"text": f"scan {scan.id} failed: {scan.error}"},
            "descriptor": {"id": scan.id},
        }
        for scan in report.scans
        if scan.status == "error"
    ]
    invocation: dict[str, Any] = {
        "executionSuccessful": report.verdict.status != "error",
        "exitCode": report.verdict.exit_code,
        "startTimeUtc": report.provenance.utc_time,
        "endTimeUtc": report.provenance.finished_utc_time,
    }
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return invocation


def _scan_places(report: AuditReport) -> list[ScanPlace]:
    """Where each scan is written in the spec, as the GitHub annotations place it; none for a
    spec that is not a file here, or that changed since the run (another hash)."""
    spec_path = report.provenance.spec_path
    if _artifact_uri(spec_path) is None:
        return []
    from fairscan.spec.places import scan_places

    return scan_places(spec_path, report.provenance.spec_sha256)


def _physical_location(spec_path: str, place: ScanPlace | None) -> dict[str, Any] | None:
    """The scan's line and column in its spec file (a parent's, for a scan that `extends`
    brings); the spec's first line when the scan cannot be located."""
    if place is None or place.line is None:
        artifact = _artifact_uri(spec_path)
        region: dict[str, int] = {"startLine": 1}
    else:
        artifact = _artifact_uri(posixpath.normpath(place.file.replace("\\", "/")))
        region = {"startLine": place.line}
        if place.col is not None:
            region["startColumn"] = place.col
    if artifact is None:
        return None
    return {"artifactLocation": artifact, "region": region}


def _artifact_uri(spec_path: str) -> dict[str, Any] | None:
    """The spec file as a SARIF artifact location: a relative path against the repository
    root (``SRCROOT``), an absolute one as a file URI; None for a spec that is not a file
    (``fairscan.audit`` keywords, ``audit scan`` flags)."""
    if not spec_path or spec_path.startswith("<"):
        return None
    path = PurePosixPath(spec_path.replace("\\", "/"))
    if path.is_absolute():
        return {"uri": path.as_uri()}
    return {"uri": _uri_path(str(path)), "uriBaseId": "SRCROOT"}


def _uri_path(path: str) -> str:
    """A relative path as a URI reference (percent-encoding what a URI cannot hold)."""
    from urllib.parse import quote

    return quote(path, safe="/-._~")
