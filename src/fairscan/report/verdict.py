"""The one home of the verdict: scan status words, the run's verdict, PASS/FAIL/ERROR and every
exit code (``audit run``, ``audit diff``, the baseline gate, ``--exit-zero``).

The renderers (Markdown, HTML, the notebook display, the CLI's console) and the CLI's exit all
read their words and numbers here, so ``audit run --baseline B.json`` and
``audit diff B.json NEW.json`` cannot drift apart: both apply :func:`gated_exit_code` to the
same counts under the same ``gate.fail_on``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:  # the CLI imports this module at start-up: pydantic models only when used
    from fairscan.report.models import AuditReport, BaselineComparison, ScanResult, Verdict


class ExitCode(IntEnum):
    """Process exit codes of every command (the only place they are numbered)."""

    OK = 0  # no significant finding (or the gate let them pass)
    FINDINGS = 1  # at least one significant finding the gate fails on (CI gate)
    ERROR = 2  # spec, data, usage or internal error
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); SIGTERM gives 128 + 15


# the shell convention: a process stopped by signal N exits 128 + N
_SIGNAL_BASE: Final = 128


FailOn = Literal["significant", "new_significant", "persisting_or_new", "never", "not_certified"]
# gate.fail_on values, in the order the spec documents them
FAIL_ON: Final[tuple[FailOn, ...]] = (
    "significant",
    "new_significant",
    "persisting_or_new",
    "never",
    "not_certified",
)
DEFAULT_FAIL_ON: Final[FailOn] = "significant"

VerdictStatus = Literal["clean", "findings", "error"]

# How each scan status reads in the reports (Markdown, HTML, notebook summary)
STATUS_TEXT: Final[dict[str, str]] = {
    "significant": "significant",
    "not_significant": "not significant",
    "untested": "not tested (replicates: 0)",
    "no_finding": "no finding",
    "not_auditable": "not auditable",
    "error": "error",
    "not_certified": "not certified",
}

PASS: Final = "PASS"
FAIL: Final = "FAIL"
ERROR: Final = "ERROR"
# exit code -> the verdict word a report leads with
_WORDS: Final[dict[int, str]] = {ExitCode.OK: PASS, ExitCode.FINDINGS: FAIL}


def status_text(status: str) -> str:
    """A scan status in words (unknown statuses as they are)."""
    return STATUS_TEXT.get(status, status)


def gated_exit_code(
    significant: int,
    new_significant: int | None,
    fail_on: str,
    still_significant: int | None = None,
    not_certified: int = 0,
) -> ExitCode:
    """OK/FINDINGS for a run without errors under ``gate.fail_on`` (no baseline: every finding
    is new). ``still_significant``: baseline findings labelled persists or shifted.
    ``not_certified``: groups certify scans could not certify, which only ``not_certified``
    fails on (as well as on any significant finding)."""
    if fail_on == "never":
        return ExitCode.OK
    if fail_on == "not_certified":
        return ExitCode.FINDINGS if significant or not_certified else ExitCode.OK
    if fail_on == "new_significant":
        count = significant if new_significant is None else new_significant
        return ExitCode.FINDINGS if count else ExitCode.OK
    if fail_on == "persisting_or_new":
        if new_significant is None:
            count = significant
        else:
            count = new_significant + (still_significant or 0)
        return ExitCode.FINDINGS if count else ExitCode.OK
    return ExitCode.FINDINGS if significant else ExitCode.OK


def build_verdict(
    scans: Sequence[ScanResult],
    fail_on: str = DEFAULT_FAIL_ON,
    new_significant: int | None = None,
) -> Verdict:
    """The verdict of a run and its exit code: ERROR when a scan failed, else the gate's code
    (``new_significant``: findings labelled new against a baseline, None without one)."""
    from fairscan.report.models import Verdict

    significant = sum(scan.significant_count() for scan in scans)
    not_certified = sum(scan.not_certified_count() for scan in scans)
    errors = sum(1 for scan in scans if scan.status == "error")
    status: VerdictStatus
    if errors:
        status, code = "error", ExitCode.ERROR
    else:
        code = gated_exit_code(significant, new_significant, fail_on, None, not_certified)
        # findings: what the gate counts (significant ones; not-certified groups under
        # fail_on: not_certified)
        status = "findings" if significant or code == ExitCode.FINDINGS else "clean"
    return Verdict(
        status=status,
        exit_code=int(code),
        significant_findings=significant,
        scans=len(scans),
        scans_with_errors=errors,
        not_certified=not_certified,
    )


def gate_verdict(
    verdict: Verdict,
    fail_on: str,
    new_significant: int | None,
    still_significant: int | None = None,
) -> Verdict:
    """``verdict`` with its exit code set by the gate (an error verdict stays ERROR)."""
    if verdict.status == "error":
        code = ExitCode.ERROR
    else:
        code = gated_exit_code(
            verdict.significant_findings,
            new_significant,
            fail_on,
            still_significant,
            verdict.not_certified,
        )
    status = verdict.status
    if status == "clean" and code == ExitCode.FINDINGS:  # fail_on not_certified failed it
        status = "findings"
    return verdict.model_copy(update={"exit_code": int(code), "status": status})


def report_fail_on(report: AuditReport) -> str:
    """The ``gate.fail_on`` a report was run under (reports before gates: the default)."""
    gate = report.provenance.parameters.get("gate")
    value = gate.get("fail_on") if isinstance(gate, dict) else None
    return str(value) if value is not None else DEFAULT_FAIL_ON


def diff_exit_code(current: AuditReport, comparison: BaselineComparison) -> ExitCode:
    """``audit diff``'s code: what ``audit run --baseline`` gave the current report, i.e. the
    gate ``comparison.fail_on`` applied to the current verdict and the new findings."""
    verdict = gate_verdict(
        current.verdict,
        comparison.fail_on,
        comparison.new_significant,
        still_significant(comparison),
    )
    return ExitCode(verdict.exit_code)


def still_significant(comparison: BaselineComparison) -> int:
    """Baseline findings still significant: persists and shifted (the matching's persisting and
    changed in reports made before re-tests)."""
    return sum(
        comparison.counts.get(k, 0) for k in ("persists", "shifted", "persisting", "changed")
    )


def process_exit_code(code: int, exit_zero: bool = False) -> ExitCode:
    """The exit status of a command: ``--exit-zero`` turns FINDINGS into OK (errors stay 2)."""
    exit_code = ExitCode(code)
    if exit_zero and exit_code is ExitCode.FINDINGS:
        return ExitCode.OK
    return exit_code


def interrupted_exit_code(signum: int | None) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal number); 130 when none is known."""
    return _SIGNAL_BASE + signum if signum is not None else int(ExitCode.INTERRUPTED)


# Python's exit status for SystemExit("a message"): the interpreter prints it and exits 1
_MESSAGE_STATUS: Final = 1


def system_exit_status(code: object) -> int:
    """The process exit status of ``SystemExit(code)``, by the interpreter's rule: None is
    OK, an int is itself, anything else is a message (the caller prints it) and exits 1."""
    if code is None:
        return int(ExitCode.OK)
    if isinstance(code, int):
        return code
    return _MESSAGE_STATUS


def worst_exit_code(codes: Sequence[int]) -> ExitCode:
    """The exit status of several audits (``audit run a b``): the highest code."""
    return ExitCode(max((int(c) for c in codes), default=int(ExitCode.OK)))


def verdict_word(verdict: Verdict) -> str:
    """PASS / FAIL / ERROR, as the exit code reads (a gated run with findings passes)."""
    return exit_code_word(verdict.exit_code)


def exit_code_word(code: int) -> str:
    """PASS / FAIL / ERROR for an exit code (e.g. the worst of several specs)."""
    return _WORDS.get(int(code), ERROR)


def gate_passed_findings(verdict: Verdict) -> bool:
    """Significant findings the gate let pass (``fail_on: new_significant`` or ``never``)."""
    return verdict.status == "findings" and verdict.exit_code == ExitCode.OK


def diff_verdict(comparison: BaselineComparison) -> str:
    """One line for ``audit diff``: FAIL on new findings; otherwise "no new significant
    finding", with the findings still significant counted (PASS only when there are none)."""
    if comparison.new_significant:
        return f"{FAIL}: {comparison.new_significant} new significant finding(s)"
    still = still_significant(comparison)
    if still:
        changed = comparison.counts.get("changed", 0) + comparison.counts.get("shifted", 0)
        extra = f", {changed} of them with a shifted subgroup" if changed else ""
        return (
            f"no new significant finding; {still} persisting finding(s) from the baseline are "
            f"still significant{extra}"
        )
    return f"{PASS}: no new significant finding"


def not_certified_note(verdict: Verdict) -> str:
    """`` 2 group(s) not certified.``, the sentence that follows a verdict line, or "" when
    certify left no group uncertified. Not-certified groups are not significant findings, so
    they are counted apart; the gate fails on them only under ``fail_on: not_certified``."""
    n = verdict.not_certified
    if not n or verdict.status == "error":
        return ""
    gated = verdict.exit_code == ExitCode.FINDINGS and not verdict.significant_findings
    return f" {n} group(s) not certified{' (gate: fail on not_certified)' if gated else ''}."


def gate_line(fail_on: str, code: int) -> str:
    """How the gate decided: ``gate fail_on new_significant: exit 1``."""
    return f"gate fail_on {fail_on}: exit {int(code)}"
