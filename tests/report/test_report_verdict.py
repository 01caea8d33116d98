"""report/verdict.py: the one home of exit codes, the gate and the verdict words."""

from __future__ import annotations

import pytest
from report_builders import finding, report, scan

from fairscan.report.baseline import compare_reports
from fairscan.report.verdict import (
    FAIL_ON,
    ExitCode,
    build_verdict,
    diff_exit_code,
    gate_verdict,
    gated_exit_code,
    interrupted_exit_code,
    process_exit_code,
    still_significant,
    verdict_word,
    worst_exit_code,
)


def test_exit_codes_are_the_documented_numbers() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 130]
    assert interrupted_exit_code(2) == 130 and interrupted_exit_code(15) == 143
    assert interrupted_exit_code(None) == ExitCode.INTERRUPTED
    assert worst_exit_code([0, 1, 2]) is ExitCode.ERROR and worst_exit_code([]) is ExitCode.OK


@pytest.mark.parametrize("exit_zero", [False, True])
def test_exit_zero_only_turns_findings_into_ok(exit_zero: bool) -> None:
    assert process_exit_code(ExitCode.FINDINGS, exit_zero) is (
        ExitCode.OK if exit_zero else ExitCode.FINDINGS
    )
    assert process_exit_code(ExitCode.ERROR, exit_zero) is ExitCode.ERROR
    assert process_exit_code(ExitCode.OK, exit_zero) is ExitCode.OK


@pytest.mark.parametrize("fail_on", FAIL_ON)
def test_diff_applies_the_gate_run_applies(fail_on: str) -> None:
    old = report(scan([finding({"race": ["A"]})]))
    new = report(scan([finding({"race": ["A"]}), finding({"race": ["B"]})]))
    for baseline, current in ((old, new), (new, new), (new, old)):
        comparison = compare_reports(baseline, current, fail_on=fail_on)
        still = still_significant(comparison)
        gated = gate_verdict(current.verdict, fail_on, comparison.new_significant, still)
        assert diff_exit_code(current, comparison) == gated.exit_code
        expected = gated_exit_code(
            current.verdict.significant_findings, comparison.new_significant, fail_on, still
        )
        assert gated.exit_code == expected


def test_error_verdicts_stay_errors_and_words_follow_codes() -> None:
    failed = scan([], error="boom")
    verdict = build_verdict([failed], fail_on="never")
    assert verdict.exit_code == ExitCode.ERROR and verdict_word(verdict) == "ERROR"
    assert gate_verdict(verdict, "never", 0).exit_code == ExitCode.ERROR
    found = build_verdict([scan([finding({"race": ["A"]})])])
    assert verdict_word(found) == "FAIL"
    assert verdict_word(gate_verdict(found, "never", None)) == "PASS"
