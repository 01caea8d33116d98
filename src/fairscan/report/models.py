"""The result contract: what every scan returns and what the JSON report holds (schema_version 2).

Every scan type reports through the same :class:`Finding` model: one entry per reported
subgroup, group or pattern, most important first, with the same core keys whatever the type.
Type-specific figures live under ``findings[].detail`` and ``scans[].detail`` (plain JSON
objects whose shape the scan type owns); renderers read the core keys, plus the render hooks a
scan type supplies for its detail. Nothing a user needs lives only in ``detail``.

Numbers are kept at full precision here; only the Markdown and console renderers round.
Undefined statistics are ``None`` (serialised as ``null``, never NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 2

ScanStatus = Literal[
    "significant",
    "not_significant",
    "untested",
    "no_finding",
    "not_auditable",
    "error",
    "not_certified",  # certify: a fairness certificate failed for a group, no significant one
]


class ReportModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Statistic(ReportModel):
    """The number a scan ranks its results by."""

    name: str = Field(
        description="penalised_score (subset scans), interestingness (SubROC), gap (flag), "
        "lower_bound / upper_bound / gap (certify)."
    )
    value: float | None = Field(description="Its value (null when undefined).")


class Effect(ReportModel):
    """The metric inside the subgroup against its reference, in plain words, with counts."""

    metric: str = Field(description="What is measured, e.g. 'false positive rate' or 'ROC AUC'.")
    inside: float | None = Field(description="The metric inside the subgroup / group / pattern.")
    reference: float | None = Field(description="The metric it is compared with.")
    reference_name: str = Field(
        description="What the reference is, e.g. 'the other true negatives' or 'overall target'."
    )
    inside_count: int = Field(description="Rows the inside figure is computed on.")
    reference_count: int | None = Field(
        description="Rows the reference is computed on (null when it is a given number)."
    )
    expected: float | None = Field(
        default=None,
        description="What the null hypothesis expects inside (subset scans); null otherwise.",
    )


class Finding(ReportModel):
    """One reported subgroup, group or pattern: the one unit of result for every scan type."""

    subgroup: dict[str, list[str]] | None = Field(
        description="Attribute -> selected values; unconstrained attributes are omitted "
        "({} = everyone). Null for a named filter or interval group (see `group`)."
    )
    group: str | None = Field(
        default=None, description="Name of a named group (certify/flag); null for subgroups."
    )
    label: str = Field(
        description="Readable subgroup; contiguous values of an ordered or discretised "
        "attribute are merged into a range (e.g. 'duration >= 12')."
    )
    size: int = Field(description="Rows of the scanned population inside the subgroup.")
    statistic: Statistic
    effect: Effect
    p_value: float | None = Field(description="p-value of the test; null when untested.")
    adjusted_p_value: float | None = Field(
        description="Multiplicity-adjusted p-value (BH/BY/Bonferroni); null where none applies."
    )
    significant: bool | None = Field(
        description="Counted as a significant finding; null when untested."
    )
    description: str = Field(description="The finding in one plain sentence.")
    detail: dict[str, Any] = Field(
        default_factory=dict, description="Scan-type-specific figures (shape owned by the type)."
    )
    certified: bool | None = Field(
        default=None,
        description="certify only: true for a certified disparity (also significant), false "
        "for a group whose fairness could not be certified: `not certified`, never counted as "
        "significant (its interval may contain 0); null for every other scan.",
    )


def finite_or_none(x: float | None) -> float | None:
    """A figure for the report: ``None`` for undefined values (NaN, inf), else a float."""
    return None if x is None or not math.isfinite(x) else float(x)


def count_significant(findings: Iterable[Finding]) -> int:
    """The one definition of a significant result: ``significant is True``."""
    return sum(1 for f in findings if f.significant is True)


def count_not_certified(findings: Iterable[Finding]) -> int:
    """Groups a certify scan could not certify (``certified is False``): their own count, never
    significant ones (gate.fail_on: not_certified fails on them)."""
    return sum(1 for f in findings if f.certified is False)


def scan_status(
    findings: Sequence[Finding], *, tested: bool, found: bool | None = None
) -> ScanStatus:
    """The one home of a completed scan's status.

    ``found``: the search had something to report (default: there are findings; SubROC and
    certify/flag say it themselves: a positive-score pattern, a tested group). ``tested``: a
    significance test ran (False with ``replicates: 0``).
    """
    if not (bool(findings) if found is None else found):
        return "no_finding"
    if not tested:
        return "untested"
    if count_significant(findings):
        return "significant"
    return "not_certified" if count_not_certified(findings) else "not_significant"


class ScanTiming(ReportModel):
    search_seconds: float
    significance_seconds: float
    total_seconds: float


class Population(ReportModel):
    """The rows a scan looks at (e.g. true negatives for an FPR-Scan)."""

    description: str
    size: int
    observed_rate: float | None
    expected_rate: float | None
    observed_label: str = Field(
        description="What the observed indicator means, e.g. 'flagged high-risk'."
    )


def _absent(value: object) -> bool:
    return value is None


class NullDistribution(ReportModel):
    replicates: int
    alpha: float
    quantile: float | None = Field(description="Empirical (1 - alpha) quantile of the null maxima.")
    mean: float | None
    max: float | None
    exceed_count: int = Field(
        description="Null replicates whose maximum score >= the observed score."
    )
    scores: list[float] = Field(
        description="Maximum penalised score of each null replicate, in replicate order."
    )
    max_replicates: int | None = Field(
        default=None,
        exclude_if=_absent,  # a fixed count: the block as before the rule existed
        description=(
            "significance.replicates, the most the test could run; `replicates` is how many "
            "ran (fewer when the stopping rule settled the decision early)."
        ),
    )
    stopping_rule: str | None = Field(
        default=None,
        exclude_if=_absent,  # a fixed count: the block as before the rule existed
        description=(
            "The sequential rule that stopped the replicates (significance.sequential), in "
            "words; absent: the fixed count ran and the p-value is (1 + exceed_count) / "
            "(1 + replicates)."
        ),
    )
    stopped_early: bool | None = Field(
        default=None,
        exclude_if=_absent,  # a fixed count: the block as before the rule existed
        description="Whether the stopping rule settled the decision before max_replicates.",
    )


class ScanResult(ReportModel):
    id: str
    type: str
    status: ScanStatus
    parameters: dict[str, Any]
    timing: ScanTiming
    population: Population | None = None
    findings: list[Finding] = Field(default_factory=list)
    null_distribution: NullDistribution | None = None
    detail: dict[str, Any] = Field(
        default_factory=dict,
        description="Scan-type-specific results (shape owned by the scan type's module).",
    )
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    p_value: float | None = Field(
        default=None,
        description=(
            "The scan's own p-value under gate.correction (its smallest finding p-value, "
            "adjusted within the scan where it adjusts); null with correction none."
        ),
    )
    corrected_p_value: float | None = Field(
        default=None,
        description="`p_value` corrected across the spec's scans (gate.correction).",
    )
    p_value_floor: float | None = Field(
        default=None,
        description=(
            "The smallest p-value the scan's test can give: 1 / (R + 1) for a randomization "
            "test of R replicates (1 without replicates), 0 for exact tests; null for scans "
            "without a randomization test (certify, flag, shift)."
        ),
    )
    untested_reason: str | None = Field(
        default=None,
        description=(
            "Why the scan is `untested`: no replicates, or too few for its smallest p-value "
            "(after gate.correction) to reach significance.alpha; null when tested."
        ),
    )

    def significant_count(self) -> int:
        """Significant findings of this scan."""
        return count_significant(self.findings)

    def not_certified_count(self) -> int:
        """Groups this (certify) scan could not certify."""
        return count_not_certified(self.findings)

    def headline(self) -> Finding | None:
        """The top finding (findings are ordered most important first), for summary tables."""
        return self.findings[0] if self.findings else None


class Environment(ReportModel):
    python: str
    platform: str
    packages: dict[str, str]


class Override(ReportModel):
    """A setting of the run that its spec does not hold: from ``[tool.fairscan]`` in a
    ``pyproject.toml``, a ``FAIRSCAN_*`` variable or a command-line flag."""

    key: str = Field(
        description="The setting as [tool.fairscan] names it: seed, replicates, workers, "
        "executor, exit-zero, baseline."
    )
    value: bool | int | str = Field(description="Its value (no secret: URLs are redacted).")
    source: str = Field(
        description="Where it came from: `PATH [tool.fairscan]`, the FAIRSCAN_* variable's "
        "name or the --flag."
    )

    def text(self) -> str:
        """``replicates = 1 from /x/pyproject.toml [tool.fairscan]``."""
        value = str(self.value).lower() if isinstance(self.value, bool) else str(self.value)
        return f"{self.key} = {value} from {self.source}"


class Provenance(ReportModel):
    tool: str = "fairscan"
    tool_version: str
    spec_path: str
    spec_sha256: str
    data_path: str
    data_sha256: str
    data_rows: int = Field(description="Rows in the data file.")
    rows_after_filter: int
    filter: str | None
    seed: int | None
    seed_origin: str | None = Field(
        default=None,
        description=(
            "How the seed was chosen: `significance.seed` (given), derived from the spec's and "
            "the data's SHA-256 (the default; the rule is stated), or random (fresh entropy)."
        ),
    )
    seed_entropy: str = Field(
        description="Entropy of the root SeedSequence (decimal); replays an unseeded run."
    )
    utc_time: str = Field(description="UTC start time, ISO 8601 with Z.")
    finished_utc_time: str
    total_seconds: float
    workers: int
    executor: str = Field(
        default="local",
        description=(
            "Where the null replicates ran: `local` (this machine) or the `dask://HOST:PORT` "
            "address of a Dask scheduler (significance.executor)."
        ),
    )
    data_source: dict[str, Any] | None = Field(
        default=None,
        description=(
            "A database table's provenance: kind, engine, connection (URL without user or "
            "password), table or sql with sql_sha256, rows, engine_version, the steps that ran "
            "in the engine (pushdown) and the rows of the aggregate that came back. data_sha256 "
            "is then the hash of that aggregated table."
        ),
    )
    parameters: dict[str, Any] = Field(
        description="The resolved spec (defaults filled in, CLI overrides applied)."
    )
    overrides: list[Override] = Field(
        default_factory=list,
        description="Every setting of the run or the gate not written in the spec (from "
        "[tool.fairscan], FAIRSCAN_* or a flag), with its source; empty when none.",
    )
    environment: Environment


class UntestedScan(ReportModel):
    """A scan whose test could not reach significance.alpha, and why."""

    scan: str = Field(description="The scan's id.")
    reason: str = Field(description="Why it is untested, and what to do.")


class Verdict(ReportModel):
    status: Literal["clean", "findings", "untested", "error"] = Field(
        description=(
            "error: a scan failed; untested: a scan could not reach significance.alpha "
            "(exit 2 unless gate.allow_untested); findings: significant findings; clean: none."
        )
    )
    exit_code: int
    significant_findings: int = Field(
        description="Findings with significant: true, over all scans."
    )
    scans: int
    scans_with_errors: int
    untested_scans: list[UntestedScan] = Field(
        default_factory=list,
        description="The scans that could not reach significance.alpha, with the reason.",
    )
    not_certified: int = Field(
        default=0,
        description="Groups certify scans could not certify, over all scans (not significant "
        "findings; gate.fail_on: not_certified fails on them).",
    )


class AuditedModel(ReportModel):
    """The model under audit, as the spec's optional ``model:`` block names it."""

    name: str = Field(description="The model's name.")
    version: str | None = Field(default=None, description="Its version.")
    owner: str | None = Field(default=None, description="Who owns it (team or person).")
    description: str | None = Field(default=None, description="What it does, in a sentence.")


class AuditReport(ReportModel):
    schema_version: int = REPORT_SCHEMA_VERSION
    name: str
    description: str | None = None
    model: AuditedModel | None = Field(
        default=None,
        description="The model under audit (the spec's `model:` block); omitted without one.",
    )
    verdict: Verdict
    provenance: Provenance
    data_warnings: list[str] = Field(default_factory=list)
    attributes: dict[str, list[str]] = Field(
        description="Each scan attribute with its values (labels) as scanned."
    )
    bins: dict[str, list[float]] | None = Field(
        default=None,
        description="The bin edges of each discretised attribute as this run used them (a "
        "re-test against this report as a baseline cuts the new data at the same edges); "
        "omitted when no attribute was discretised.",
    )
    scans: list[ScanResult]
    baseline: BaselineComparison | None = Field(
        default=None,
        description="Comparison with a baseline report (audit run --baseline); omitted without one.",
    )
    monitor: MonitorSummary | None = Field(
        default=None,
        description="Evidence over the series of audits of this spec `name` (the spec's "
        "`monitor:` block, anytime-valid); omitted without one.",
    )


# --- Monitoring over a series of audits (spec `monitor:`, anytime-valid evidence) -------------

MonitorLabel = Literal["new", "persists", "resolved", "inconclusive"]
# subgroup: one subgroup's own evidence over the runs since it was first monitored; scan: the
# scan's open process (each run bets on the subgroup the scan chose on earlier runs only)
MonitorProcessKind = Literal["subgroup", "scan"]
MonitorAlarmKind = Literal["evidence", "onset"]


class MonitorSubgroup(ReportModel):
    """One monitored process: a subgroup's (or a scan's open) evidence after this run."""

    scan: str = Field(description="The scan's id.")
    scan_type: str
    kind: MonitorProcessKind = "subgroup"
    subgroup: dict[str, list[str]] = Field(
        description="The subgroup as in the findings' mapping (for a scan process: the "
        "subgroup bet on in this run; empty when nothing was bet on yet)."
    )
    label: MonitorLabel
    e_value: float = Field(description="The evidence (e-process) after this run; 1 at the start.")
    p_value_anytime: float = Field(
        description="min(1, 1 / running maximum of e_value): valid at any run, any stopping rule."
    )
    first_alarm_run: int | None = Field(
        default=None, description="The run_index of the first alarm; null if none."
    )
    p_value_adjusted: float | None = Field(
        default=None,
        description="min(1, 2 x processes / running maximum of e_value): the anytime p-value "
        "adjusted for every monitored process (e-Bonferroni, with half of alpha kept for the "
        "onset detector); at most alpha exactly when the evidence crossed its threshold.",
    )
    effect_low: float | None = Field(
        default=None,
        description="Lower end of the effects (odds ratios) still consistent with the "
        "evidence at alpha (a confidence sequence, valid at every run); null when unbounded.",
    )
    effect_high: float | None = Field(
        default=None, description="Upper end of that range; null when unbounded."
    )
    runs: int | None = Field(
        default=None, description="Runs whose data this process has counted (0 when new)."
    )


class MonitorAlarm(ReportModel):
    """A monitored process whose evidence crossed its threshold (exit 1 under the default gate)."""

    scan: str
    scan_type: str
    kind: MonitorProcessKind = "subgroup"
    subgroup: dict[str, list[str]]
    alarm: MonitorAlarmKind = Field(
        description="evidence: the e-process crossed its threshold; onset: the onset detector "
        "(evidence restarted at every run) did."
    )
    e_value: float = Field(
        description="What crossed the threshold: the largest e-value so far (evidence), or "
        "the onset detector's statistic (onset)."
    )
    threshold: float = Field(
        description="The monitor's threshold or onset_threshold, whichever this alarm crossed."
    )
    run_index: int = Field(description="The run that raised it (this run).")


class MonitorUnsupported(ReportModel):
    """A scan the monitor does not cover in this run, and why."""

    scan: str
    scan_type: str
    reason: str


class MonitorSummary(ReportModel):
    """The report's ``monitor`` object."""

    alpha: float = Field(description="The family-wise error rate over every run and subgroup.")
    run_index: int = Field(description="1 = the first monitored run of this spec name.")
    alarms: list[MonitorAlarm] = Field(default_factory=list)
    subgroups: list[MonitorSubgroup] = Field(default_factory=list)
    threshold: float | None = Field(
        default=None,
        description="The evidence alarm's threshold: 2 x processes / alpha (e-Bonferroni; "
        "the other half of alpha goes to the onset detector).",
    )
    onset_threshold: float | None = Field(
        default=None,
        description="The onset detector's threshold: 2 x processes x horizon / alpha.",
    )
    processes: int | None = Field(
        default=None,
        description="Monitored processes the thresholds divide alpha over: (monitored scans) "
        "x (1 + max_subgroups).",
    )
    seconds: float | None = Field(
        default=None,
        description="Time the monitor took in this run beyond the audit itself (reading the "
        "evidence, this run's evidence for every process, labels and alarms), in seconds.",
    )
    unsupported: list[MonitorUnsupported] = Field(
        default_factory=list,
        description="Scans the monitor does not cover, each with the reason (no anytime-valid "
        "evidence is computed for them; nothing is approximated).",
    )


# --- Baseline comparison (audit run --baseline, audit diff) ------------------------------------

# re-testing labels (issue 26): new, shifted, persists, inconclusive, resolved; reports made
# before re-tests hold the matching's labels: new, persisting, resolved, changed
BaselineLabel = Literal[
    "new", "shifted", "persists", "inconclusive", "resolved", "persisting", "changed"
]


class BaselineSide(ReportModel):
    """A matched result in one of the two runs."""

    subgroup: dict[str, list[str]] = Field(
        description="Attribute -> values; for certify/flag groups without one, {'group': [name]}."
    )
    label: str | None = Field(default=None, description="The finding's readable label.")
    score: float | None = Field(description="The finding's statistic value.")
    p_value: float | None = Field(description="Adjusted p-value where there is one, else p-value.")
    rate: float | None = Field(description="The effect's metric inside the subgroup.")
    expected_rate: float | None = Field(
        default=None, description="The effect's reference (or null expectation)."
    )
    significant: bool = Field(description="Counted as a significant finding in its run.")


class BaselineEntry(ReportModel):
    """One result labelled against the baseline."""

    scan_id: str
    scan_type: str
    label: BaselineLabel = Field(
        description="persists: the baseline finding re-tested on the new data (its own values "
        "and bin edges, as a fixed subgroup) is still significant; resolved: not significant "
        "now, the re-test had power >= 0.8 to detect the baseline effect and the effect moved "
        "toward zero; inconclusive: not significant now but underpowered, or not re-testable "
        "(see reason); new: significant now, its rows overlap no baseline finding's (Jaccard "
        "< 0.5 on the new data); shifted: significant now, overlapping a baseline finding's "
        "rows. Reports made before re-tests: new/persisting/resolved/changed by matching."
    )
    match: Literal["exact", "overlap", "none"] = Field(
        description="exact subgroup (or group name), overlap above the threshold, or unmatched."
    )
    similarity: float | None = Field(
        description="Jaccard similarity of the covered attribute cells (1 = same subgroup)."
    )
    before: BaselineSide | None = Field(description="The baseline result (null if unmatched).")
    after: BaselineSide | None = Field(
        description="The current result: the re-test for persists/resolved/inconclusive "
        "(null if unmatched or not re-testable)."
    )
    reason: str | None = Field(
        default=None, description="Why an entry is inconclusive (underpowered, not re-testable)."
    )
    power: float | None = Field(
        default=None,
        description="Power of the re-test to detect the baseline effect size at the run's "
        "alpha (resolved and underpowered entries).",
    )


class BaselineComparison(ReportModel):
    baseline_path: str | None = Field(description="The baseline report file.")
    baseline_name: str
    baseline_utc_time: str
    overlap_threshold: float = Field(
        description="Minimum Jaccard similarity of covered cells for an overlap match."
    )
    fail_on: str = Field(description="The gate applied to the exit code (gate.fail_on).")
    counts: dict[str, int] = Field(description="Entries per label.")
    new_significant: int = Field(description="Significant findings labelled new.")
    method: Literal["match", "retest"] = Field(
        default="match",
        description="retest: baseline findings re-evaluated on the new data (audit run "
        "--baseline, audit diff --data); match: top-subgroup matching of two reports.",
    )
    scans_added: list[str] = Field(description="Scan ids only in the current run.")
    scans_removed: list[str] = Field(description="Scan ids only in the baseline.")
    entries: list[BaselineEntry]


ScanResult.model_rebuild()
AuditReport.model_rebuild()
