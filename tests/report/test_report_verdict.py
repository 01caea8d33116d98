"""report/verdict.py: the one home of exit codes, the gate and the verdict words."""

from __future__ import annotations

import pytest
from report_builders import finding, report, scan

from fairscan.report.baseline import compare_reports
from fairscan.report.verdict import (
    DEFAULT_FAIL_ON,
    FAIL_ON,
    ExitCode,
    build_verdict,
    diff_verdict_of,
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
        assert diff_verdict_of(current, comparison).exit_code == gated.exit_code
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


# --- Issue 34: untested is never PASS ------------------------------------------------------------


def _floored(floor: float | None, *findings_: object, id: str = "fpr") -> object:
    """A scan whose randomization test cannot go below ``floor`` (None: no such test)."""
    found = list(findings_) or [finding({"race": ["A"]}, p_value=0.1, significant=False)]
    return scan(found, id=id).model_copy(update={"p_value_floor": floor})  # type: ignore[arg-type]


def test_untested_scans_make_the_verdict_untested_and_exit_2() -> None:
    from fairscan.run.gate_correction import mark_untested

    scans = mark_untested([_floored(0.1), _floored(None, id="flag")], "none", 0.05)  # type: ignore[list-item]
    assert [s.status for s in scans] == ["untested", "not_significant"]
    assert "9 replicates" in (scans[0].untested_reason or "")
    assert "at least 19" in (scans[0].untested_reason or "")
    verdict = build_verdict(scans)
    assert verdict.status == "untested" and verdict.exit_code == ExitCode.ERROR
    assert verdict_word(verdict) == "UNTESTED"
    assert [u.scan for u in verdict.untested_scans] == ["fpr"]
    # --exit-zero turns findings into 0, never an untested run
    assert process_exit_code(verdict.exit_code, exit_zero=True) is ExitCode.ERROR
    # every gate keeps it at 2; gate.allow_untested lets it pass, still worded UNTESTED
    for fail_on in FAIL_ON:
        assert gate_verdict(verdict, fail_on, 0).exit_code == ExitCode.ERROR
    allowed = build_verdict(scans, allow_untested=True)
    assert allowed.exit_code == ExitCode.OK and verdict_word(allowed) == "UNTESTED"


def test_allowed_untested_with_findings_elsewhere_fails_on_them() -> None:
    found = scan([finding({"race": ["B"]})], id="flag")
    untested = _floored(1.0, finding({"race": ["A"]}, p_value=None, significant=None))
    from fairscan.run.gate_correction import mark_untested

    scans = mark_untested([untested, found], "none", 0.05)  # type: ignore[list-item]
    assert build_verdict(scans).exit_code == ExitCode.ERROR
    allowed = build_verdict(scans, allow_untested=True)
    assert allowed.status == "findings" and allowed.exit_code == ExitCode.FINDINGS
    assert [u.scan for u in allowed.untested_scans] == ["fpr"]


@pytest.mark.parametrize(
    ("correction", "floor", "untested"),
    [
        ("none", 1 / 20, False),
        ("bh", 1 / 20, False),  # BH's best case: every scan at its floor, 1/20
        ("holm", 1 / 20, True),  # 3 / 20 > 0.05
        ("bonferroni", 1 / 60, False),  # 3 / 60 = 0.05
        ("holm", 1 / 40, True),
        ("none", 1.0, True),  # replicates 0
    ],
)
def test_floors_are_corrected_together(correction: str, floor: float, untested: bool) -> None:
    from fairscan.report.verdict import untested_bound
    from fairscan.run.gate_correction import mark_untested

    scans = [_floored(floor, id=i) for i in ("a", "b", "c")]
    marked = mark_untested(scans, correction, 0.05)  # type: ignore[arg-type]
    assert all((s.status == "untested") is untested for s in marked)
    # audit validate's bound (no engine) agrees when all scans share a floor
    assert all((b > 0.05 + 1e-12) is untested for b in untested_bound([floor] * 3, correction))


def test_scans_without_randomization_or_findings_are_never_untested() -> None:
    from fairscan.run.gate_correction import mark_untested

    nothing = scan([], id="empty").model_copy(update={"p_value_floor": 1.0})
    certify = scan([finding({"race": ["A"]}, p_value=None)], id="certify", type="certify")
    marked = mark_untested([nothing, certify], "none", 0.05)
    assert [s.status for s in marked] == ["no_finding", certify.status]
    assert build_verdict(marked).status != "untested"


def test_given_subgroups_floor_follows_their_own_tests() -> None:
    from fairscan.run.gate_correction import result_floor

    exact = finding(
        {"race": ["A"]},
        p_value=1e-6,
        detail={"given_subgroup": {"test": "exact binomial", "replicates": 0}},
    )
    drawn = finding(
        {"race": ["B"]}, p_value=0.1, detail={"given_subgroup": {"test": "draws", "replicates": 9}}
    )
    skipped = finding(
        {"race": ["C"]}, p_value=None, detail={"given_subgroup": {"test": "draws", "replicates": 0}}
    )
    assert result_floor(scan([exact, drawn]), 1.0) == 0.0  # the exact test reaches alpha
    assert result_floor(scan([drawn]), 1.0) == pytest.approx(0.1)
    assert result_floor(scan([skipped]), 0.5) == 1.0
    assert result_floor(scan([finding({"race": ["A"]})]), 0.25) == 0.25  # a search: declared
    assert result_floor(scan([exact]), None) is None  # no randomization test (shift)


def test_several_specs_word_the_worst() -> None:
    from fairscan.report.verdict import worst_verdict_word

    assert worst_verdict_word([(0, "PASS"), (2, "UNTESTED")]) == "UNTESTED"
    assert worst_verdict_word([(2, "ERROR"), (2, "UNTESTED")]) == "ERROR"
    assert worst_verdict_word([(1, "FAIL"), (0, "UNTESTED")]) == "FAIL"
    assert worst_verdict_word([(0, "PASS"), (0, "UNTESTED")]) == "UNTESTED"  # allowed
    assert worst_verdict_word([(0, "PASS")]) == "PASS"


def test_diff_words_its_verdict_from_the_gated_code() -> None:
    """Issue 34: under fail_on never a new finding is no FAIL with exit 0."""
    from fairscan.report.verdict import diff_verdict, diff_verdict_of

    old = report(scan([finding({"race": ["A"]})]))
    new = report(scan([finding({"race": ["A"]}), finding({"race": ["B"]})]))
    never = compare_reports(old, new, fail_on="never")
    verdict = diff_verdict_of(new, never)
    assert verdict.exit_code == ExitCode.OK
    line = diff_verdict(never, verdict)
    assert "FAIL" not in line and line.startswith("PASS (gate fail_on never): 1 new")
    significant = compare_reports(old, new, fail_on="significant")
    assert diff_verdict(significant, diff_verdict_of(new, significant)).startswith("FAIL: 1 new")


def test_diff_never_trusts_the_stored_verdict() -> None:
    new = report(scan([finding({"race": ["A"]})]))
    edited = new.model_copy(
        update={
            "verdict": new.verdict.model_copy(
                update={"status": "clean", "exit_code": 0, "significant_findings": 0}
            )
        }
    )
    comparison = compare_reports(new, edited, fail_on="significant")
    assert diff_verdict_of(edited, comparison).exit_code == ExitCode.FINDINGS


def test_the_spec_accepts_exactly_the_gate_values_in_order() -> None:
    """The spec layer cannot import the report layer: its schema's copy is pinned here."""
    import typing

    from fairscan.spec.models import GateSpec

    assert typing.get_args(GateSpec.model_fields["fail_on"].annotation) == FAIL_ON
    assert GateSpec().fail_on == DEFAULT_FAIL_ON
