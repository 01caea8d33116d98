"""The report's ``monitor`` object in every renderer (issue 35), from hand-built objects: shown
only when present, in plain words, escaped like the rest of each sink."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from report_builders import finding, report, scan

from fairscan.cli.console import monitor_text
from fairscan.report.formats import render, report_json
from fairscan.report.mlflow_log import report_metrics, report_tags
from fairscan.report.models import (
    AuditReport,
    MonitorAlarm,
    MonitorSubgroup,
    MonitorSummary,
)
from fairscan.report.monitor_view import mapping_text
from fairscan.report.sarif import MONITOR_RULE

HOSTILE = {"x<b>": ["|*a*|", "<script>alert(1)</script>", "line\nbreak"]}
MALE = {"sex": ["male"]}
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def _monitor() -> MonitorSummary:
    return MonitorSummary(
        alpha=0.05,
        run_index=5,
        alarms=[
            MonitorAlarm(
                scan="fpr",
                scan_type="fpr_scan",
                subgroup=MALE,
                alarm="evidence",
                e_value=3100.0,
                threshold=840.0,
                run_index=5,
            )
        ],
        subgroups=[
            MonitorSubgroup(
                scan="fpr",
                scan_type="fpr_scan",
                subgroup=MALE,
                label="persists",
                e_value=3100.0,
                p_value_anytime=1 / 3100,
                first_alarm_run=5,
            ),
            MonitorSubgroup(
                scan="fpr",
                scan_type="fpr_scan",
                kind="scan",
                subgroup={"age": ["<25"]},
                label="inconclusive",
                e_value=0.93,
                p_value_anytime=1.0,
            ),
            MonitorSubgroup(
                scan="fpr",
                scan_type="fpr_scan",
                subgroup=HOSTILE,
                label="resolved",
                e_value=0.02,
                p_value_anytime=0.5,
            ),
        ],
    )


def _report(monitor: MonitorSummary | None = None) -> AuditReport:
    r = report(scan([finding(MALE, significant=True)]))
    return r.model_copy(update={"monitor": monitor})


def test_absent_monitor_changes_no_output() -> None:
    """Without a monitor every format is what it was (the JSON wrote "monitor": null)."""
    plain = report(scan([finding(MALE, significant=True)]))
    assert "monitor" not in json.loads(report_json(plain))
    for fmt in ("markdown", "html", "junit", "sarif"):
        text = render(plain, fmt)
        assert "onitor" not in text and "evidence" not in text, fmt
    assert not any("monitor" in k for k in report_metrics(plain))
    assert not any("monitor" in k for k in report_tags(plain))


def test_json_keeps_the_monitor() -> None:
    loaded = json.loads(report_json(_report(_monitor())))
    assert loaded["monitor"]["run_index"] == 5 and len(loaded["monitor"]["subgroups"]) == 3


def test_markdown_shows_alarms_and_every_subgroup_escaped() -> None:
    text = render(_report(_monitor()), "markdown")
    assert "## Monitoring over the runs" in text
    assert "Alarm: fpr: sex = male: evidence crossed the alarm threshold" in text
    assert "(evidence 3,100, alarm threshold 840, run 5)" in text
    assert "| fpr | sex = male | persists | 3,100 | 0.0003 | 5 |" in text
    assert "any subgroup the scan finds (this run: age = &#60;25)" in text
    assert "<script" not in text and "&#60;script&#62;" in text
    assert "| resolved |" in text and "\\*a\\*" in text  # the pipes and stars as text
    assert "anytime p-value" in text


def test_html_shows_the_monitor_escaped() -> None:
    text = render(_report(_monitor()), "html")
    section = text[text.index('<section class="box monitor">') :]
    section = section[: section.index("</section>")]
    assert section.count('<li class="alarm">') == 1 and section.count("<tr>") == 1 + 3
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "alarm threshold 840" in section and "anytime p-value" in section


def test_console_lines_alarms_in_red_and_quiet_keeps_only_alarms() -> None:
    lines = monitor_text(_monitor())
    assert lines[0].plain.startswith("Monitoring run 5: 3 monitored process(es), 1 alarm(s).")
    assert lines[1].plain.startswith("ALARM fpr: sex = male") and str(lines[1].style) == "bold red"
    assert len(lines) == 2 + 3
    hostile = lines[-1].plain
    assert "line\\nbreak" in hostile and "\n" not in hostile  # one line, control shown
    assert [t.plain for t in monitor_text(_monitor(), quiet=True)] == [t.plain for t in lines[:2]]


def test_junit_alarms_fail_and_the_other_subgroups_pass() -> None:
    root = ET.fromstring(render(_report(_monitor()), "junit").split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None
    cases = [c for c in suite.iter("testcase") if c.get("classname", "").endswith(".monitor")]
    assert len(cases) == 3
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1 and failed[0].get("name") == "monitor fpr: sex = male"
    failure = failed[0].find("failure")
    assert failure is not None and failure.get("type") == "monitor_evidence"
    assert all(c.find("system-out") is not None for c in cases if c not in failed)
    # the scan's own case fails too (a significant finding): 2 of 4
    assert suite.get("tests") == "4" and suite.get("failures") == "2"
    assert root.get("tests") == "4" and root.get("failures") == "2"


def test_junit_an_alarm_of_no_listed_subgroup_is_its_own_case() -> None:
    monitor = _monitor().model_copy(update={"subgroups": []})
    root = ET.fromstring(render(_report(monitor), "junit").split("\n", 1)[1])
    names = [c.get("name") for c in root.iter("testcase")]
    assert names[-1] == "monitor fpr: sex = male" and root.get("failures") == "2"


def test_sarif_an_alarm_is_a_result_and_validates() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    log = json.loads(render(_report(_monitor()), "sarif"))
    assert not list(validator.iter_errors(log))
    run = log["runs"][0]
    alarms = [r for r in run["results"] if r["ruleId"] == MONITOR_RULE]
    assert len(alarms) == 1
    rule = run["tool"]["driver"]["rules"][alarms[0]["ruleIndex"]]
    assert rule["id"] == MONITOR_RULE
    assert alarms[0]["properties"]["eValue"] == 3100.0
    assert alarms[0]["properties"]["subgroup"] == MALE
    assert alarms[0]["message"]["text"].startswith("fpr: sex = male: evidence crossed")
    assert alarms[0]["level"] == "error"  # exit 1: the gate fails on it


def test_mlflow_metrics_and_tags() -> None:
    metrics = report_metrics(_report(_monitor()))
    assert metrics["monitor.alarms"] == 1.0 and metrics["monitor.run_index"] == 5.0
    assert metrics["fpr.monitor.scan.e_value"] == pytest.approx(0.93)
    evidence = {k: v for k, v in metrics.items() if k.endswith(".e_value")}
    assert sorted(evidence.values()) == pytest.approx([0.02, 0.93, 3100.0])
    tags = report_tags(_report(_monitor()))
    male = next(k for k, v in tags.items() if v == "sex = male")
    assert metrics[f"{male}.p_value_anytime"] == pytest.approx(1 / 3100)
    # the same subgroup gets the same key in another run, whatever its order or values' order
    again = _monitor().model_copy(
        update={"subgroups": [_monitor().subgroups[2], _monitor().subgroups[0]]}
    )
    assert f"{male}.e_value" in report_metrics(_report(again))


def test_mapping_text() -> None:
    assert mapping_text({}) == "everyone"
    assert mapping_text({"a": ["x"], "b": ["y", "z"]}) == "a = x and b in {y, z}"


def test_the_run_summary_prints_alarms_even_when_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    from fairscan.cli.common import print_summary

    print_summary(_report(_monitor()), [], (), quiet=True)
    quiet = " ".join(capsys.readouterr().err.split())
    assert "ALARM fpr: sex = male: evidence crossed the alarm threshold" in quiet
    assert "any subgroup the scan finds" not in quiet
    print_summary(_report(_monitor()), [], (), quiet=False)
    full = " ".join(capsys.readouterr().err.split())
    assert "fpr: any subgroup the scan finds (this run: age = <25): inconclusive" in full
    print_summary(_report(), [], (), quiet=False)
    assert "onitor" not in capsys.readouterr().err
