"""IJDI-Scan (methods.md §4): error-rate imbalance not justified by base-rate differences.

Scans one side of the outcome (negatives: false positive rate, positives: true positive rate)
for the subgroup whose share of positive recommendations exceeds what its base rate
Pr(y = 1 | x) justifies: the expectation is ``pbar_b + lambda (p_i - pbar)``, so lambda = 0 is
exactly the FPR-Scan (TPR-Scan) and larger lambda tolerates more base-rate-driven imbalance.

The recommendation follows the one rule of every scan (:mod:`fairscan.scans.roles`): the scan's
own ``threshold`` (a number or a column of per-record thresholds), else
``columns.recommendation``, else ``columns.threshold``.

The runner is split into steps: :func:`_inputs` (validate and prepare the arrays),
:func:`_scan_pass` (the edge-case loop and its randomization test), :func:`_mitigate` (the
optional iterative thresholds) and :func:`_result` (the report).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from fairscan.engine.ijdi import IjdiCells, IjdiOutcome, ijdi_loop
from fairscan.engine.mdss import ScanProblem, is_material
from fairscan.engine.randomization import (
    NullResult,
    child_seed,
    run_replicates,
    search_seed,
    summarize,
)
from fairscan.errors import ScanError
from fairscan.report.hooks import RenderHooks
from fairscan.report.models import (
    Effect,
    Finding,
    Population,
    ReportModel,
    ScanResult,
    ScanTiming,
    scan_status,
)
from fairscan.report.text import fmt_p, percent
from fairscan.scans.base import Role, ScanContext, ScanType
from fairscan.scans.features import design_matrix
from fairscan.scans.ijdi_replicate import IjdiReplicate
from fairscan.scans.labels import subgroup_label
from fairscan.scans.mdss_runner import (
    finding_markdown,
    mdss_finding,
    null_distribution,
    subgroup_labels,
)
from fairscan.scans.roles import compare
from fairscan.spec.base import MdssScanSpecBase, StrictModel, rule_error

# --- spec ------------------------------------------------------------------------------------


class IjdiCosts(StrictModel):
    """Relative costs from which lambda is derived (methods.md §4.3, App. B)."""

    fp: float = Field(gt=0, description="Cost of a false positive.")
    fn: float = Field(gt=0, description="Cost of a false negative.")
    delta_fpr: float | None = Field(
        default=None, gt=0, description="Cost of one unit of FPR disparity (side: negatives)."
    )
    delta_tpr: float | None = Field(
        default=None, gt=0, description="Cost of one unit of TPR disparity (side: positives)."
    )


class MitigationSpec(StrictModel):
    method: Literal["iterative_thresholds"] = Field(
        description="Per-subgroup thresholds eta(S*) on the prediction, applied until no "
        "significant finding is left (methods.md §4.8)."
    )
    max_corrections: int = Field(
        default=20, ge=1, le=1000, description="Cap on the number of corrections."
    )


class IjdiScanSpec(MdssScanSpecBase):
    type: Literal["ijdi_scan"] = Field(
        description="Base-rate-adjusted error-rate imbalance (Insufficiently Justified Disparate Impact)."
    )
    side: Literal["negatives", "positives"] = Field(
        default="negatives",
        description="negatives = false positive rate among y = 0 (lambda_N); positives = true positive rate among y = 1 (lambda_P).",
    )
    lam: float | None = Field(
        default=None,
        alias="lambda",
        ge=0,
        description="lambda >= 0: error-rate gap justified per unit of base-rate gap (0 = FPR/TPR-Scan).",
    )
    costs: IjdiCosts | None = Field(
        default=None,
        description="Alternative to lambda: {fp, fn, delta_fpr} (negatives) or {fp, fn, delta_tpr} (positives).",
    )
    base_rate: str | None = Field(
        default=None,
        description="Column with the base rate Pr(y = 1 | x) in [0, 1]; omit to estimate it by logistic regression.",
    )
    model_attributes: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Columns of the base-rate model when base_rate is omitted (default: the scan attributes).",
    )
    threshold: float | str | None = Field(
        default=None,
        description="Derive this scan's recommendation from the prediction with this threshold: "
        "a number (any real), or a column of per-record thresholds. Overrides "
        "columns.recommendation / columns.threshold (the default source).",
    )
    threshold_rule: Literal["ge", "gt"] | None = Field(
        default=None,
        description="ge: recommend when prediction >= threshold; gt: when prediction > threshold "
        "(default: columns.threshold_rule, which defaults to ge). Also the rule of the "
        "mitigation thresholds.",
    )
    max_passes: int = Field(
        default=100, ge=1, le=10_000, description="Cap on the passes of the edge-case loop."
    )
    mitigation: MitigationSpec | None = Field(
        default=None,
        description="Optional iterative threshold mitigation (needs columns.prediction).",
    )

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def _lambda_source(self) -> IjdiScanSpec:
        if (self.lam is None) == (self.costs is None):
            raise rule_error("give exactly one of `lambda` or `costs`", "lambda")
        if self.costs is not None:
            needed = "delta_fpr" if self.side == "negatives" else "delta_tpr"
            if getattr(self.costs, needed) is None:
                raise rule_error(f"side {self.side} needs costs.{needed}", "costs")
        if isinstance(self.threshold, float | int) and not math.isfinite(self.threshold):
            raise rule_error("a numeric threshold must be a finite number", "threshold")
        if isinstance(self.threshold, str) and not self.threshold:
            raise rule_error("a threshold column name must not be empty", "threshold")
        return self

    @property
    def effective_lambda(self) -> float:
        if self.lam is not None:
            return float(self.lam)
        assert self.costs is not None
        disparity = self.costs.delta_fpr if self.side == "negatives" else self.costs.delta_tpr
        assert disparity is not None
        return (self.costs.fp + self.costs.fn) / disparity


def _needs(spec: IjdiScanSpec) -> tuple[Role, ...]:
    """Outcome and recommendation; mitigation also needs the prediction (as a score)."""
    if spec.mitigation is not None:
        return ("outcome", "recommendation", "score")
    return ("outcome", "recommendation")


def _extra_columns(spec: IjdiScanSpec) -> dict[str, str]:
    # a per-record threshold column is loaded by the roles (ScanRoles.threshold_columns)
    columns: dict[str, str] = {}
    if spec.base_rate is not None:
        columns[spec.base_rate] = "base_rate"
    for i, name in enumerate(spec.model_attributes or []):
        columns.setdefault(name, f"model_attributes[{i}]")
    return columns


# --- detail models (findings[].detail["ijdi"], scans[].detail["ijdi"]) -------------------------


class IjdiCriterion(ReportModel):
    """The IJDI criterion for a finding (methods.md §4.3), negatives (FPR) or positives (TPR)."""

    rate_name: str = Field(description="'false positive rate' or 'true positive rate'.")
    rate_inside: float = Field(
        description="Error rate (share recommended positive) inside the subgroup."
    )
    rate_outside: float | None = Field(description="The same among the other scanned records.")
    base_rate_inside: float = Field(description="Mean base rate Pr(y = 1 | x) inside the subgroup.")
    base_rate_outside: float | None = Field(
        description="Mean base rate among the other scanned records."
    )
    lam: float = Field(
        description="lambda: how much error-rate gap one unit of base-rate gap justifies."
    )
    observed_gap: float | None = Field(description="rate_inside - rate_outside.")
    allowed_gap: float | None = Field(
        description="lambda * (base_rate_inside - base_rate_outside) when positive, else 0."
    )
    violated: bool | None = Field(description="observed_gap > allowed_gap.")


class IjdiCorrectionInfo(ReportModel):
    edge_case: int = Field(
        description="1 = base rate inside below outside; 2 = censoring lowered the expectation."
    )
    scan_pass: int
    size: float = Field(description="Records in the detected subgroup at that pass.")
    factor: float = Field(description="alpha_1 (edge case 1) or beta_2 (edge case 2).")


class MitigationStep(ReportModel):
    subgroup: dict[str, list[str]]
    label: str = Field(description="The subgroup, readable.")
    threshold: float = Field(
        description="New threshold eta(S*) applied to every record of the subgroup."
    )
    rate_before: float = Field(description="Error rate of the subgroup before the correction.")
    rate_after: float = Field(description="Error rate of the subgroup after the correction.")
    score_before: float
    p_value_before: float | None


class IjdiScanDetail(ReportModel):
    """``scans[].detail["ijdi"]``: settings, the edge-case loop, corrections, mitigation."""

    side: str
    lam: float
    recommendation: str | None = Field(
        default=None, description="Where the recommendation came from (column or rule)."
    )
    base_rate_source: str = Field(
        description="Column name, or 'logistic regression on <attributes>'."
    )
    passes: int = Field(description="Scan passes of the edge-case loop.")
    converged: bool = Field(description="False when the pass cap stopped the loop.")
    corrections: list[IjdiCorrectionInfo]
    mitigation: list[MitigationStep] | None = Field(
        default=None, description="Iterative threshold corrections, when mitigation was requested."
    )
    mitigation_status: str | None = Field(
        default=None,
        description="resolved (no significant finding left), cap (max_corrections reached while "
        "still significant), not_needed, or null without mitigation.",
    )


# --- inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IjdiInputs:
    """The prepared arrays and wording of one IJDI-Scan."""

    lam: float
    side_rows: np.ndarray  # (n,) bool: the scanned side of the outcome
    problem: ScanProblem  # the scanned side's local codes (observed/expected are unused)
    recommendation: np.ndarray  # (n,) float64 0/1
    base_rate: np.ndarray  # (n,) float64 in [0, 1]
    base_rate_source: str
    outcome_class: int
    kind: str  # "true negatives" / "true positives"
    rate_name: str  # "false positive rate" / "true positive rate"
    population: str  # e.g. "true negatives (two_year_recid = 0)"


@dataclass
class IjdiPass:
    """One scan of the recommendations: the loop's outcome and its randomization test."""

    cells: IjdiCells
    outcome: IjdiOutcome
    null: NullResult | None
    degenerate: bool  # every scanned record has the same recommendation

    @property
    def significant(self) -> bool:
        return self.null is not None and self.null.significant and is_material(self.outcome.best)


@dataclass
class Timer:
    search: float = 0.0
    significance: float = 0.0
    started: float = field(default_factory=time.perf_counter)


def estimate_base_rate(ctx: ScanContext, names: list[str]) -> np.ndarray:
    """Pr(y = 1 | x) by logistic regression of the outcome on ``names`` over all rows (§4.1)."""
    from sklearn.linear_model import LogisticRegression

    outcome = ctx.outcome
    features = design_matrix(ctx, names)
    if features.shape[1] == 0:
        return np.full(ctx.data.n_rows, float(outcome.mean()))
    model = LogisticRegression(max_iter=2000)
    model.fit(features, outcome)
    return np.asarray(model.predict_proba(features)[:, 1], dtype=np.float64)


def _base_rate(spec: IjdiScanSpec, ctx: ScanContext) -> tuple[np.ndarray, str]:
    """The base rate column (checked to be probabilities), or its logistic estimate."""
    if spec.base_rate is None:
        names = list(spec.model_attributes or ctx.data.attribute_names)
        return estimate_base_rate(ctx, names), f"logistic regression on {', '.join(names)}"
    values = ctx.data.extra[spec.base_rate]
    if values.dtype == object or np.any((values < 0) | (values > 1)):
        raise ScanError(
            f"base-rate column {spec.base_rate!r} must hold probabilities in [0, 1]",
            field="base_rate",
            column=spec.base_rate,
            hint="point base_rate at a column of Pr(y = 1 | x), or omit it to estimate it",
        )
    return values.astype(np.float64), spec.base_rate


def _inputs(spec: IjdiScanSpec, ctx: ScanContext) -> IjdiInputs:
    base_rate, source = _base_rate(spec, ctx)
    outcome_class = 0 if spec.side == "negatives" else 1
    side_rows = ctx.outcome == outcome_class
    n_side = int(side_rows.sum())
    kind = "true negatives" if outcome_class == 0 else "true positives"
    outcome_name = ctx.role_names.get("outcome", "outcome")
    return IjdiInputs(
        lam=spec.effective_lambda,
        side_rows=side_rows,
        problem=ScanProblem.build(
            ctx.data.codes[side_rows], np.zeros(n_side), np.full(n_side, 0.5)
        ),
        recommendation=np.asarray(ctx.recommendation, dtype=np.float64),
        base_rate=base_rate,
        base_rate_source=source,
        outcome_class=outcome_class,
        kind=kind,
        rate_name="false positive rate" if outcome_class == 0 else "true positive rate",
        population=f"{kind} ({outcome_name} = {outcome_class})",
    )


# --- engine ----------------------------------------------------------------------------------


def _scan_pass(
    spec: IjdiScanSpec,
    ctx: ScanContext,
    inputs: IjdiInputs,
    recommendation: np.ndarray,
    test_seed: np.random.SeedSequence,
    timer: Timer,
) -> IjdiPass:
    """The edge-case loop on ``recommendation`` and (with replicates) its randomization test."""
    mark = time.perf_counter()
    rows = inputs.side_rows
    problem = inputs.problem
    cells = IjdiCells.from_records(
        problem.codes, recommendation[rows], inputs.base_rate[rows], problem.cardinality
    )
    outcome = ijdi_loop(
        cells,
        lam=inputs.lam,
        penalty=spec.penalty,
        restarts=spec.restarts,
        seed=search_seed(child_seed(ctx.seed, 0)),
        max_passes=spec.max_passes,
    )
    timer.search += time.perf_counter() - mark
    degenerate = outcome.pbar_b in (0.0, 1.0)
    mark = time.perf_counter()
    null = None
    if ctx.replicates > 0 and not degenerate:
        ctx.progress.start(f"{spec.id}: null replicates", ctx.replicates)
        try:
            job = IjdiReplicate(
                cells, inputs.lam, spec.penalty, spec.restarts, spec.max_passes, test_seed
            )
            scores = run_replicates(
                job, ctx.replicates, workers=ctx.workers, on_progress=ctx.progress.advance
            )
        finally:
            ctx.progress.done()
        null = summarize(outcome.best.score, scores, ctx.alpha)
    timer.significance += time.perf_counter() - mark
    return IjdiPass(cells, outcome, null, degenerate)


def _criterion(
    inputs: IjdiInputs, selection: np.ndarray, recommendation: np.ndarray
) -> tuple[IjdiCriterion, np.ndarray]:
    """The criterion of a subgroup of the scanned side, and its rows (whole-table mask)."""
    inside_rows = np.zeros(inputs.side_rows.shape[0], dtype=bool)
    inside_rows[inputs.side_rows] = inputs.problem.members(selection)
    out_rows = inputs.side_rows & ~inside_rows
    rate_in = float(recommendation[inside_rows].mean())
    rate_out = float(recommendation[out_rows].mean()) if out_rows.any() else None
    p_in = float(inputs.base_rate[inside_rows].mean())
    p_out = float(inputs.base_rate[out_rows].mean()) if out_rows.any() else None
    observed_gap = None if rate_out is None else rate_in - rate_out
    allowed = None if p_out is None else max(inputs.lam * (p_in - p_out), 0.0)
    criterion = IjdiCriterion(
        rate_name=inputs.rate_name,
        rate_inside=rate_in,
        rate_outside=rate_out,
        base_rate_inside=p_in,
        base_rate_outside=p_out,
        lam=inputs.lam,
        observed_gap=observed_gap,
        allowed_gap=allowed,
        violated=None if observed_gap is None or allowed is None else observed_gap > allowed,
    )
    return criterion, inside_rows


def _mitigate(
    spec: IjdiScanSpec, ctx: ScanContext, inputs: IjdiInputs, first: IjdiPass, timer: Timer
) -> tuple[list[MitigationStep], str]:
    """Per-subgroup thresholds until nothing significant is left (methods.md §4.8, approach 2).

    Inside each corrected subgroup (both sides of the outcome) the recommendation becomes
    prediction (rule) eta(S*); everything else is unchanged.
    """
    assert spec.mitigation is not None
    prediction = ctx.prediction
    rule = ctx.threshold_rule
    steps: list[MitigationStep] = []
    current, rec = first, inputs.recommendation
    for k in range(spec.mitigation.max_corrections):
        if not current.significant:
            break
        best = current.outcome.best
        criterion, inside_rows = _criterion(inputs, best.selection, rec)
        target = (criterion.rate_outside or 0.0) + inputs.lam * (
            criterion.base_rate_inside - (criterion.base_rate_outside or 0.0)
        )
        level = float(np.clip(1.0 - target, 0.0, 1.0))
        # inverted-CDF quantile with the strict rule p > eta: at most the target share passes
        eta = float(np.quantile(prediction[inside_rows], level, method="inverted_cdf"))
        everyone = inputs.problem.rows_in(ctx.data.codes, best.selection)
        new_rec = np.where(everyone, compare(prediction, eta, rule).astype(np.float64), rec)
        subgroup = subgroup_labels(ctx.data.attributes, inputs.problem, best.selection)
        steps.append(
            MitigationStep(
                subgroup=subgroup,
                label=subgroup_label(subgroup, ctx.data.attributes),
                threshold=eta,
                rate_before=float(rec[inside_rows].mean()),
                rate_after=float(new_rec[inside_rows].mean()),
                score_before=best.score,
                p_value_before=current.null.p_value if current.null is not None else None,
            )
        )
        rec = new_rec
        current = _scan_pass(spec, ctx, inputs, rec, child_seed(ctx.seed, 2, k), timer)
    if not steps:
        return steps, "not_needed"
    return steps, "cap" if current.significant else "resolved"


# --- result ----------------------------------------------------------------------------------


def _finding(ctx: ScanContext, spec: IjdiScanSpec, inputs: IjdiInputs, scan: IjdiPass) -> Finding:
    best = scan.outcome.best
    subgroup = subgroup_labels(ctx.data.attributes, inputs.problem, best.selection)
    label = subgroup_label(subgroup, ctx.data.attributes)
    crit, inside_rows = _criterion(inputs, best.selection, inputs.recommendation)
    lam = inputs.lam
    if crit.allowed_gap is not None:
        allowed_text = (
            f"their base rate ({percent(crit.base_rate_inside)} vs "
            f"{percent(crit.base_rate_outside)}) justifies at most "
            f"{100 * crit.allowed_gap:.1f} points at lambda = {lam:g}"
        )
    else:
        allowed_text = "there are no other records to compare with"
    gap_text = f"{100 * crit.observed_gap:.1f} points" if crit.observed_gap is not None else "n/a"
    description = (
        f"Among {inputs.population}, the {round(best.size)} rows with {label} have a "
        f"{inputs.rate_name} of {percent(crit.rate_inside)} vs {percent(crit.rate_outside)} "
        f"for the others: a gap of {gap_text}, while {allowed_text}."
    )
    n_outside = int((inputs.side_rows & ~inside_rows).sum())
    effect = Effect(
        metric=inputs.rate_name,
        inside=crit.rate_inside,
        reference=crit.rate_outside,
        reference_name=f"the other {inputs.kind}",
        inside_count=round(best.size),
        reference_count=n_outside,
        expected=best.expected / best.size if best.size else None,
    )
    return mdss_finding(
        penalty=spec.penalty,
        best=best,
        subgroup=subgroup,
        attributes=ctx.data.attributes,
        effect=effect,
        null=scan.null,
        description=description,
        extra={"ijdi": crit.model_dump(mode="json")},
    )


def _warnings(spec: IjdiScanSpec, inputs: IjdiInputs, first: IjdiPass) -> list[str]:
    warnings = []
    if first.degenerate:
        warnings.append(
            f"every one of the {inputs.kind} has the same recommendation: the "
            f"{inputs.rate_name} cannot differ between subgroups"
        )
    if not first.outcome.converged:
        warnings.append(f"the edge-case loop hit the pass cap ({spec.max_passes})")
    return warnings


def _result(
    spec: IjdiScanSpec,
    ctx: ScanContext,
    inputs: IjdiInputs,
    first: IjdiPass,
    findings: list[Finding],
    mitigation: tuple[list[MitigationStep], str] | None,
    timer: Timer,
) -> ScanResult:
    outcome = first.outcome
    side_rate = inputs.recommendation[inputs.side_rows]
    n_side = int(side_rate.shape[0])
    recommendation = ctx.role_names.get("recommendation")
    detail = IjdiScanDetail(
        side=spec.side,
        lam=inputs.lam,
        recommendation=recommendation,
        base_rate_source=inputs.base_rate_source,
        passes=outcome.passes,
        converged=outcome.converged,
        corrections=[
            IjdiCorrectionInfo(
                edge_case=c.edge_case, scan_pass=c.scan_pass, size=c.size, factor=c.factor
            )
            for c in outcome.corrections
        ],
        mitigation=mitigation[0] if mitigation is not None else None,
        mitigation_status=mitigation[1] if mitigation is not None else None,
    )
    parameters: dict[str, Any] = {
        **spec.model_dump(mode="json", by_alias=True),
        "lambda_effective": inputs.lam,
        "alpha": ctx.alpha,
        "replicates": ctx.replicates,
        "cells": int(first.cells.weight.shape[0]),
    }
    done = time.perf_counter()
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(findings, tested=first.null is not None),
        parameters=parameters,
        timing=ScanTiming(
            search_seconds=timer.search,
            significance_seconds=timer.significance,
            total_seconds=done - timer.started,
        ),
        population=Population(
            description=inputs.population,
            size=n_side,
            observed_rate=float(side_rate.mean()) if n_side else None,
            expected_rate=float(side_rate.mean()) if n_side else None,
            observed_label=f"recommended positive ({recommendation})"
            if recommendation
            else "recommended positive",
        ),
        findings=findings,
        null_distribution=null_distribution(first.null, ctx.alpha),
        detail={"ijdi": detail.model_dump(mode="json")},
        warnings=_warnings(spec, inputs, first),
    )


def run_ijdi_scan(spec: IjdiScanSpec, ctx: ScanContext) -> ScanResult:
    timer = Timer()
    inputs = _inputs(spec, ctx)
    first = _scan_pass(spec, ctx, inputs, inputs.recommendation, child_seed(ctx.seed, 1), timer)
    findings = [_finding(ctx, spec, inputs, first)] if is_material(first.outcome.best) else []
    mitigation = None
    if spec.mitigation is not None and findings and first.null is not None:
        mitigation = _mitigate(spec, ctx, inputs, first, timer)
    return _result(spec, ctx, inputs, first, findings, mitigation, timer)


# --- render hooks ----------------------------------------------------------------------------


def render_markdown(scan: ScanResult) -> list[str]:
    """IJDI settings, the edge-case loop and the mitigation table."""
    if "ijdi" not in scan.detail:
        return []
    info = IjdiScanDetail.model_validate(scan.detail["ijdi"])
    passes = "pass" if info.passes == 1 else "passes"
    source = f"; recommendation: {info.recommendation}" if info.recommendation else ""
    lines = [
        f"IJDI settings: side {info.side}, lambda = {info.lam:g}, base rate from "
        f"{info.base_rate_source}{source}; edge-case loop: {info.passes} scan {passes}, "
        f"{len(info.corrections)} correction(s)"
        + ("" if info.converged else " (stopped at the pass cap)")
        + ".",
        "",
    ]
    if info.mitigation is None:
        return lines
    lines += [
        f"Mitigation (iterative thresholds): {len(info.mitigation)} correction(s), "
        f"status {(info.mitigation_status or 'not needed').replace('_', ' ')}.",
        "",
    ]
    if info.mitigation:
        lines += [
            "| subgroup | new threshold | rate before | rate after | score before | p before |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for step in info.mitigation:
            lines.append(
                f"| {step.label} | {step.threshold:.4f} | {percent(step.rate_before, 1)} "
                f"| {percent(step.rate_after, 1)} | {step.score_before:.2f} "
                f"| {fmt_p(step.p_value_before)} |"
            )
        lines.append("")
    return lines


def render_finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures, then the IJDI criterion (allowed vs observed gap)."""
    lines = finding_markdown(scan, finding)
    if "ijdi" not in finding.detail:
        return lines
    crit = IjdiCriterion.model_validate(finding.detail["ijdi"])
    if crit.observed_gap is None or crit.allowed_gap is None:
        return lines
    verdict = "exceeds" if crit.violated else "does not exceed"
    return [
        *lines,
        f"IJDI criterion: the {crit.rate_name} gap of {100 * crit.observed_gap:.1f} points "
        f"{verdict} the {100 * crit.allowed_gap:.1f} points that the base-rate gap "
        f"({percent(crit.base_rate_inside, 1)} vs {percent(crit.base_rate_outside, 1)}) "
        f"justifies at lambda = {crit.lam:g}.",
        "",
    ]


IJDI_SCAN = ScanType(
    type="ijdi_scan",
    spec_model=IjdiScanSpec,
    runner=run_ijdi_scan,
    needs=_needs,
    title="IJDI-Scan",
    summary=(
        "Among true negatives (side negatives) or true positives (side positives), finds the subgroup "
        "whose share of positive recommendations exceeds what its base rate justifies: expected "
        "rate = overall rate + lambda x (base rate - mean base rate). lambda = 0 is the FPR/TPR-Scan. "
        "Null hypothesis: recommendations follow those base-rate-adjusted expectations."
    ),
    extra_columns=_extra_columns,
    render=RenderHooks(markdown=render_markdown, finding_markdown=render_finding_markdown),
)
