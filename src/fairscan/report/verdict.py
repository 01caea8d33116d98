"""The one home of the verdict: scan status words, the run's verdict, PASS/FAIL/ERROR and every
exit code (``audit run``, ``audit diff``, the baseline gate, ``--exit-zero``).

The renderers (Markdown, HTML, the notebook display, the CLI's console) and the CLI's exit all
read their words and numbers here, so ``audit run --baseline B.json`` and
``audit diff B.json NEW.json`` cannot drift apart: both apply :func:`gated_exit_code` to the
same counts under the same ``gate.fail_on``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Final, Literal, get_args

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


# gate.fail_on values, in the order the spec documents them (the spec's schema, which cannot
# import this layer, carries a copy that tests/report/test_report_verdict.py pins to this one)
FailOn = Literal["significant", "new_significant", "persisting_or_new", "never", "not_certified"]
FAIL_ON: Final[tuple[FailOn, ...]] = get_args(FailOn)
DEFAULT_FAIL_ON: Final[FailOn] = "significant"

VerdictStatus = Literal["clean", "findings", "untested", "error"]

# How each scan status reads in the reports (Markdown, HTML, notebook summary)
STATUS_TEXT: Final[dict[str, str]] = {
    "significant": "significant",
    "not_significant": "not significant",
    "untested": "not tested (cannot reach alpha)",
    "no_finding": "no finding",
    "not_auditable": "not auditable",
    "error": "error",
    "not_certified": "not certified",
}

PASS: Final = "PASS"
FAIL: Final = "FAIL"
ERROR: Final = "ERROR"
# a scan could not reach alpha (issue 34): never PASS, exit 2 unless gate.allow_untested
UNTESTED: Final = "UNTESTED"
# exit code -> the verdict word a report leads with
_WORDS: Final[dict[int, str]] = {ExitCode.OK: PASS, ExitCode.FINDINGS: FAIL}


def status_text(status: str) -> str:
    """A scan status in words (unknown statuses as they are)."""
    return STATUS_TEXT.get(status, status)


# relative slack of "corrected p-value > alpha": k * p / k is not always p in floating point
# (BH over 3 scans at 0.05 gives 0.05000000000000001), and a rounding error must not decide
_RELATIVE_SLACK: Final = 1e-9


def exceeds(p: float, alpha: float) -> bool:
    """``p > alpha`` beyond the floating-point rounding of the corrections."""
    return p > alpha * (1.0 + _RELATIVE_SLACK)


UNTESTED_HINT: Final = "or set gate.allow_untested: true to let such a run pass as UNTESTED"


def replicates_needed(alpha: float, correction: str, k: int) -> int:
    """The fewest replicates R with 1 / (R + 1) within ``alpha`` after ``correction`` over
    ``k`` scans at the floor: ceil(k / alpha) - 1 for Holm and Bonferroni, else ceil(1/alpha) - 1."""
    m = k if correction in ("holm", "bonferroni") else 1
    return max(math.ceil(m / alpha - 1e-9) - 1, 1)


def untested_reason(floor: float, best: float, alpha: float, correction: str, k: int) -> str:
    """Why a scan with smallest p-value ``floor`` (``best`` after correction) is untested."""
    need = replicates_needed(alpha, correction, k)
    todo = (
        f"raise significance.replicates to at least {need} (SubROC: its subsets), {UNTESTED_HINT}"
    )
    if floor >= 1.0:
        return f"no randomization test ran (replicates 0); {todo}"
    draws = round(1.0 / floor) - 1
    after = (
        f", {best:.4g} after gate.correction {correction} over {k} scans"
        if correction != "none"
        else ""
    )
    return (
        f"{draws} replicates: its smallest possible p-value 1/{draws + 1} = {floor:.4g}"
        f"{after} exceeds alpha {alpha:g}; {todo}"
    )


def untested_bound(floors: Sequence[float], correction: str) -> list[float]:
    """For scans whose tests' smallest p-values are ``floors``, a lower bound of each one's
    p-value after ``correction`` (exact where these are all the spec's scans with p-values;
    others can only raise it): none and bh the floor itself, bonferroni k times it, holm at
    least k times the smallest (its first step-down term). ``audit validate``'s check, without
    the engine's corrections."""
    k = len(floors)
    low = min(floors, default=1.0)
    if correction == "bonferroni":
        return [min(1.0, k * f) for f in floors]
    if correction == "holm":
        return [min(1.0, max(f, k * low)) for f in floors]
    return list(floors)


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


# the reason an untested scan gives when its result names none (a report of an older run)
UNTESTED_REASON: Final = "no significance test ran (replicates 0)"


def build_verdict(
    scans: Sequence[ScanResult],
    fail_on: str = DEFAULT_FAIL_ON,
    new_significant: int | None = None,
    allow_untested: bool = False,
) -> Verdict:
    """The verdict of a run and its exit code: ERROR when a scan failed; UNTESTED when a scan
    could not reach alpha (status ``untested``; exit 2 unless ``allow_untested``, and findings
    of other scans the gate lets through fail it as FINDINGS); else the gate's code
    (``new_significant``: findings labelled new against a baseline, None without one)."""
    from fairscan.report.models import UntestedScan, Verdict

    significant = sum(scan.significant_count() for scan in scans)
    not_certified = sum(scan.not_certified_count() for scan in scans)
    errors = sum(1 for scan in scans if scan.status == "error")
    untested = [
        UntestedScan(scan=scan.id, reason=scan.untested_reason or UNTESTED_REASON)
        for scan in scans
        if scan.status == "untested"
    ]
    status: VerdictStatus
    if errors:
        status = "error"
    elif untested and not (allow_untested and significant):
        status = "untested"
    else:
        status = "findings" if significant else "clean"
    verdict = Verdict(
        status=status,
        exit_code=int(ExitCode.ERROR),
        significant_findings=significant,
        scans=len(scans),
        scans_with_errors=errors,
        untested_scans=untested,
        not_certified=not_certified,
    )
    return gate_verdict(verdict, fail_on, new_significant, allow_untested=allow_untested)


def gate_verdict(
    verdict: Verdict,
    fail_on: str,
    new_significant: int | None,
    still_significant: int | None = None,
    allow_untested: bool = False,
) -> Verdict:
    """``verdict`` with its exit code set by the gate (an error verdict stays ERROR, an
    untested one too unless ``allow_untested``)."""
    if verdict.status == "error" or (verdict.status == "untested" and not allow_untested):
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


def monitored_exit_code(
    fail_on: str, alarms: int, new_alarms: int, not_certified: int = 0
) -> ExitCode:
    """OK/FINDINGS for a monitored run (spec ``monitor:``) without errors: the monitor's alarms
    decide, never the per-run p-values (a fresh test at alpha every run fails a fair model
    sooner or later). ``significant`` (the default) and ``persisting_or_new``: any alarm;
    ``new_significant``: an alarm first raised in this run (``new_alarms``); ``never``: none;
    ``not_certified``: any alarm, or a group a certify scan could not certify."""
    if fail_on == "never":
        return ExitCode.OK
    if fail_on == "new_significant":
        count = new_alarms
    elif fail_on == "not_certified":
        count = alarms + not_certified
    else:
        count = alarms
    return ExitCode.FINDINGS if count else ExitCode.OK


def monitored_verdict(
    verdict: Verdict, fail_on: str, alarms: int, new_alarms: int, allow_untested: bool = False
) -> Verdict:
    """``verdict`` with the exit code of a monitored run (:func:`monitored_exit_code`); an
    error verdict stays ERROR, an untested one too unless ``allow_untested`` (the scans then
    cannot register the subgroups they find)."""
    if verdict.status == "error" or (verdict.status == "untested" and not allow_untested):
        code = ExitCode.ERROR
    else:
        code = monitored_exit_code(fail_on, alarms, new_alarms, verdict.not_certified)
    status = verdict.status
    if status == "clean" and code == ExitCode.FINDINGS:  # an alarm without a per-run finding
        status = "findings"
    return verdict.model_copy(update={"exit_code": int(code), "status": status})


def report_fail_on(report: AuditReport) -> str:
    """The ``gate.fail_on`` a report was run under (reports before gates: the default)."""
    gate = report.provenance.parameters.get("gate")
    value = gate.get("fail_on") if isinstance(gate, dict) else None
    return str(value) if value is not None else DEFAULT_FAIL_ON


def report_allows_untested(report: AuditReport) -> bool:
    """The ``gate.allow_untested`` a report was run under (older reports: false)."""
    gate = report.provenance.parameters.get("gate")
    return isinstance(gate, dict) and gate.get("allow_untested") is True


def diff_verdict_of(current: AuditReport, comparison: BaselineComparison) -> Verdict:
    """``audit diff``'s verdict of the current report, recomputed from its scans' findings and
    statuses under its gate and the comparison's new findings (the verdict stored in the file
    is never read: an edited one cannot pass the gate)."""
    allow = report_allows_untested(current)
    verdict = build_verdict(current.scans, comparison.fail_on, allow_untested=allow)
    return gate_verdict(
        verdict,
        comparison.fail_on,
        comparison.new_significant,
        still_significant(comparison),
        allow,
    )


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
    """PASS / FAIL / ERROR as the exit code reads (a gated run with findings passes), and
    UNTESTED for a run with a scan that could not reach alpha, whatever its code."""
    if verdict.status == "untested":
        return UNTESTED
    return exit_code_word(verdict.exit_code)


def worst_verdict_word(verdicts: Sequence[tuple[int, str]]) -> str:
    """The word of several audits' (exit code, verdict word): the worst code's, ERROR before
    UNTESTED where both exit 2."""
    code = worst_exit_code([c for c, _ in verdicts])
    words = {w for c, w in verdicts if c == code}
    if UNTESTED in words and (code != ExitCode.ERROR or words == {UNTESTED}):
        return UNTESTED  # an allowed untested run exits 0 but never reads PASS
    return exit_code_word(code)


def exit_code_word(code: int) -> str:
    """PASS / FAIL / ERROR for an exit code (e.g. the worst of several specs)."""
    return _WORDS.get(int(code), ERROR)


def untested_words(verdict: Verdict) -> str:
    """What an UNTESTED verdict says after its word: which scans could not reach alpha, why
    (the first scan's reason; they share one in the usual case), and whether the gate let it
    pass (``gate.allow_untested``)."""
    untested = verdict.untested_scans
    ids = ", ".join(u.scan for u in untested)
    found = verdict.significant_findings
    others = f"; {found} significant finding(s) in the other scans" if found else ""
    allowed = (
        " The gate lets it pass (gate.allow_untested)." if verdict.exit_code == ExitCode.OK else ""
    )
    first = untested[0].reason if untested else UNTESTED_REASON
    return (
        f"{len(untested)} of {verdict.scans} scan(s) could not reach significance ({ids}): "
        f"{first}{others}.{allowed}"
    )


def gate_passed_findings(verdict: Verdict) -> bool:
    """Significant findings the gate let pass (``fail_on: new_significant`` or ``never``)."""
    return verdict.status == "findings" and verdict.exit_code == ExitCode.OK


def diff_verdict(comparison: BaselineComparison, verdict: Verdict) -> str:
    """One line for ``audit diff``, its word from ``verdict`` (:func:`diff_verdict_of`: the
    gated exit code): FAIL, ERROR or UNTESTED first; findings the gate lets pass never read
    FAIL, and findings still significant never read as a bare PASS."""
    new = comparison.new_significant
    counts = f"{new} new significant finding(s)" if new else "no new significant finding"
    still = still_significant(comparison)
    if still:
        changed = comparison.counts.get("changed", 0) + comparison.counts.get("shifted", 0)
        extra = f", {changed} of them with a shifted subgroup" if changed else ""
        counts += f"; {still} persisting finding(s) from the baseline are still significant{extra}"
    word = verdict_word(verdict)
    if word == UNTESTED:
        return f"{word}: {len(verdict.untested_scans)} scan(s) could not reach alpha; {counts}"
    if word != PASS:
        return f"{word}: {counts}"
    if new:
        return f"{PASS} (gate fail_on {comparison.fail_on}): {counts}"
    return counts if still else f"{PASS}: {counts}"


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
