"""SARIF 2.1.0 (issue 28): the ``sarif`` format validates against the official OASIS schema
(vendored in tests/report/data: no network at test time) and says what a dashboard needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_builders import finding, report, scan

from fairscan.report.formats import render, write_reports
from fairscan.report.models import AuditReport
from fairscan.report.sarif import FINGERPRINT, sarif_log

SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _valid(validator: jsonschema.protocols.Validator, rep: AuditReport) -> dict[str, Any]:
    text = render(rep, "sarif")
    log = json.loads(text)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    return log


def test_a_report_with_findings_validates(validator: jsonschema.protocols.Validator) -> None:
    rep = report(
        scan(
            [
                finding({"race": ["African-American"], "sex": ["Male"]}),
                finding({"priors": ["None"]}, p_value=0.4),  # not significant: no alert
            ]
        ),
        scan([finding(group="young <script>", subgroup=None)], id="flag", type="flag"),
    )
    log = _valid(validator, rep)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "fairscan"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["fpr", "flag"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["fpr", "flag"]
    assert [r["ruleIndex"] for r in results] == [0, 1]
    assert {r["level"] for r in results} == {"error"}  # the gate fails on them (exit 1)
    first = results[0]
    assert first["message"]["text"].startswith("race = African-American and sex = Male: ")
    physical = first["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "s.audit.yaml", "uriBaseId": "SRCROOT"}
    assert first["properties"]["subgroup"] == {"race": ["African-American"], "sex": ["Male"]}
    assert first["properties"]["pValue"] == pytest.approx(0.001)
    # one finding, one fingerprint, the same in the next run
    assert (
        first["partialFingerprints"][FINGERPRINT]
        == (sarif_log(rep)["runs"][0]["results"][0]["partialFingerprints"][FINGERPRINT])
    )
    assert results[1]["partialFingerprints"] != first["partialFingerprints"]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["invocations"][0]["exitCode"] == 1


def test_clean_gated_failed_and_spec_less_reports_validate(
    validator: jsonschema.protocols.Validator,
) -> None:
    clean = report(scan([finding(p_value=0.5)]))
    assert _valid(validator, clean)["runs"][0]["results"] == []
    # the gate lets findings pass: warnings, not errors
    passed = report(scan([finding()]))
    passed = passed.model_copy(
        update={"verdict": passed.verdict.model_copy(update={"exit_code": 0})}
    )
    assert {r["level"] for r in _valid(validator, passed)["runs"][0]["results"]} == {"warning"}
    # a scan that failed: a tool notification, and the run did not succeed
    failed = report(scan([finding()]), scan([], id="calib", type="bias_scan", error="boom\nline"))
    invocation = _valid(validator, failed)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith(
        "scan calib failed: boom"
    )
    # fairscan.audit keywords: no spec file to point at; an absolute path: a file URI
    for spec_path, uri in (("<fairscan.audit arguments>", None), ("/a b/s.audit.yaml", "file")):
        rep = report(scan([finding()]))
        rep = rep.model_copy(
            update={"provenance": rep.provenance.model_copy(update={"spec_path": spec_path})}
        )
        (result,) = _valid(validator, rep)["runs"][0]["results"]
        if uri is None:
            assert "physicalLocation" not in result["locations"][0]
        else:
            location = result["locations"][0]["physicalLocation"]["artifactLocation"]
            assert location == {"uri": "file:///a%20b/s.audit.yaml"}


def test_sarif_is_a_file_format(tmp_path: Path) -> None:
    rep = report(scan([finding()]))
    (path,) = write_reports(rep, tmp_path, ["sarif"])
    assert path.name == "compas-fpr.sarif"
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == "2.1.0"
