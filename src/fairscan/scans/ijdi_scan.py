"""IJDI-Scan (methods.md §4): error-rate imbalance not justified by base-rate differences.

Scans one side of the outcome (negatives: false positive rate, positives: true positive rate)
for the subgroup whose share of positive recommendations exceeds what its base rate
Pr(y = 1 | x) justifies: the expectation is ``pbar_b + lambda (p_i - pbar)``, so lambda = 0 is
exactly the FPR-Scan (TPR-Scan) and larger lambda tolerates more base-rate-driven imbalance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from fairscan.scans.base import ScanContext, ScanType
from fairscan.scans.features import design_matrix
from fairscan.spec.base import MdssScanSpecBase, StrictModel, rule_error

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult


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
        description="Per-subgroup thresholds eta(S*) applied until no significant finding is left (methods.md §4.8)."
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
    threshold: float | str = Field(
        default=0.5,
        description="Decision threshold on columns.prediction: a number, or a column of per-record thresholds.",
    )
    threshold_rule: Literal["gt", "ge"] = Field(
        default="gt", description="gt: recommend when prediction > threshold (default); ge: >=."
    )
    max_passes: int = Field(
        default=100, ge=1, le=10_000, description="Cap on the passes of the edge-case loop."
    )
    mitigation: MitigationSpec | None = Field(
        default=None, description="Optional iterative threshold mitigation."
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
        if isinstance(self.threshold, float | int) and not 0.0 <= float(self.threshold) <= 1.0:
            raise rule_error("a numeric threshold must lie in [0, 1]", "threshold")
        return self

    @property
    def effective_lambda(self) -> float:
        if self.lam is not None:
            return float(self.lam)
        assert self.costs is not None
        disparity = self.costs.delta_fpr if self.side == "negatives" else self.costs.delta_tpr
        assert disparity is not None
        return (self.costs.fp + self.costs.fn) / disparity


def _extra_columns(spec: IjdiScanSpec) -> dict[str, str]:
    columns: dict[str, str] = {}
    if spec.base_rate is not None:
        columns[spec.base_rate] = "base_rate"
    if isinstance(spec.threshold, str):
        columns[spec.threshold] = "threshold"
    for i, name in enumerate(spec.model_attributes or []):
        columns.setdefault(name, f"model_attributes[{i}]")
    return columns


def estimate_base_rate(ctx: ScanContext, names: list[str]) -> np.ndarray:
    """Pr(y = 1 | x) by logistic regression of the outcome on ``names`` over all rows (§4.1)."""
    from sklearn.linear_model import LogisticRegression

    features = design_matrix(ctx, names)
    if features.shape[1] == 0:
        return np.full(ctx.data.n_rows, float(ctx.data.outcome.mean()))
    model = LogisticRegression(max_iter=2000)
    model.fit(features, ctx.data.outcome)
    return model.predict_proba(features)[:, 1]


def _recommendations(prediction: np.ndarray, thresholds: np.ndarray, rule: str) -> np.ndarray:
    return (prediction >= thresholds if rule == "ge" else prediction > thresholds).astype(
        np.float64
    )


def run_ijdi_scan(spec: IjdiScanSpec, ctx: ScanContext) -> ScanResult:
    import time

    from fairscan.engine.ijdi import IjdiCells, ijdi_loop, members
    from fairscan.engine.mdss import ScanProblem, is_material
    from fairscan.engine.randomization import child_seed, run_replicates, search_seed, summarize
    from fairscan.errors import ScanError
    from fairscan.report.models import (
        Finding,
        IjdiCorrectionInfo,
        IjdiCriterion,
        IjdiScanInfo,
        MitigationStep,
        Population,
        ScanResult,
        ScanTiming,
    )
    from fairscan.report.text import describe_subgroup, percent
    from fairscan.scans.ijdi_replicate import IjdiReplicate
    from fairscan.scans.mdss_runner import (
        make_finding,
        null_distribution,
        scan_status,
        subgroup_labels,
    )

    started = time.perf_counter()
    data = ctx.data
    assert data.prediction is not None  # guaranteed by `needs`
    lam = spec.effective_lambda
    outcome_name = ctx.role_names.get("outcome", "outcome")
    outcome_class = 0 if spec.side == "negatives" else 1
    kind = "true negatives" if outcome_class == 0 else "true positives"
    rate_name = "false positive rate" if outcome_class == 0 else "true positive rate"

    if isinstance(spec.threshold, str):
        if data.extra[spec.threshold].dtype == object:
            raise ScanError(
                f"threshold column {spec.threshold!r} must hold numbers",
                hint="point threshold at a numeric column of per-record thresholds, or give a number",
            )
        thresholds = data.extra[spec.threshold].astype(np.float64).copy()
    else:
        thresholds = np.full(data.n_rows, float(spec.threshold))
    if spec.base_rate is not None:
        base_rate = data.extra[spec.base_rate]
        if base_rate.dtype == object or np.any((base_rate < 0) | (base_rate > 1)):
            raise ScanError(
                f"base-rate column {spec.base_rate!r} must hold probabilities in [0, 1]",
                hint="point base_rate at a column of Pr(y = 1 | x), or omit it to estimate it",
            )
        source = spec.base_rate
    else:
        names = list(spec.model_attributes or data.attribute_names)
        base_rate = estimate_base_rate(ctx, names)
        source = f"logistic regression on {', '.join(names)}"

    side_rows = data.outcome == outcome_class
    problem = ScanProblem.build(
        data.codes[side_rows], np.zeros(int(side_rows.sum())), np.full(int(side_rows.sum()), 0.5)
    )
    seed = search_seed(child_seed(ctx.seed, 0))
    warnings: list[str] = []

    timings = {"search": 0.0, "significance": 0.0}

    def scan_once(recommendation: np.ndarray, test_seed: np.random.SeedSequence):  # type: ignore[no-untyped-def]
        mark = time.perf_counter()
        rec_side = recommendation[side_rows]
        cells = IjdiCells.from_records(
            problem.codes, rec_side, base_rate[side_rows], problem.cardinality
        )
        outcome = ijdi_loop(
            cells,
            lam=lam,
            penalty=spec.penalty,
            restarts=spec.restarts,
            seed=seed,
            max_passes=spec.max_passes,
        )
        timings["search"] += time.perf_counter() - mark
        null = None
        degenerate = outcome.pbar_b in (0.0, 1.0)
        mark = time.perf_counter()
        if ctx.replicates > 0 and not degenerate:
            ctx.progress.start(f"{spec.id}: null replicates", ctx.replicates)
            try:
                job = IjdiReplicate(
                    cells, lam, spec.penalty, spec.restarts, spec.max_passes, test_seed
                )
                scores = run_replicates(
                    job, ctx.replicates, workers=ctx.workers, on_progress=ctx.progress.advance
                )
            finally:
                ctx.progress.done()
            null = summarize(outcome.best.score, scores, ctx.alpha)
        timings["significance"] += time.perf_counter() - mark
        return cells, outcome, null, degenerate

    recommendation = _recommendations(data.prediction, thresholds, spec.threshold_rule)
    cells, outcome, null, degenerate = scan_once(recommendation, child_seed(ctx.seed, 1))
    if degenerate:
        warnings.append(
            f"every one of the {kind} has the same recommendation: the {rate_name} cannot differ between subgroups"
        )

    def criterion(selection: np.ndarray, rec: np.ndarray) -> tuple[IjdiCriterion, np.ndarray]:
        inside_rows = np.zeros(data.n_rows, dtype=bool)
        inside_rows[side_rows] = members(problem.codes, selection)
        out_rows = side_rows & ~inside_rows
        rate_in = float(rec[inside_rows].mean())
        rate_out = float(rec[out_rows].mean()) if out_rows.any() else None
        p_in = float(base_rate[inside_rows].mean())
        p_out = float(base_rate[out_rows].mean()) if out_rows.any() else None
        observed_gap = None if rate_out is None else rate_in - rate_out
        allowed = None if p_out is None else max(lam * (p_in - p_out), 0.0)
        return (
            IjdiCriterion(
                rate_name=rate_name,
                rate_inside=rate_in,
                rate_outside=rate_out,
                base_rate_inside=p_in,
                base_rate_outside=p_out,
                lam=lam,
                observed_gap=observed_gap,
                allowed_gap=allowed,
                violated=None
                if observed_gap is None or allowed is None
                else observed_gap > allowed,
            ),
            inside_rows,
        )

    findings: list[Finding] = []
    best = outcome.best
    if is_material(best):
        subgroup = subgroup_labels(data.attributes, problem, best.selection)
        crit, _ = criterion(best.selection, recommendation)
        who = describe_subgroup(subgroup)
        allowed_text = (
            f"their base rate ({percent(crit.base_rate_inside)} vs {percent(crit.base_rate_outside)}) justifies at most "
            f"{100 * crit.allowed_gap:.1f} points at lambda = {lam:g}"
            if crit.allowed_gap is not None
            else "there are no other records to compare with"
        )
        gap_text = (
            f"{100 * crit.observed_gap:.1f} points" if crit.observed_gap is not None else "n/a"
        )
        description = (
            f"Among {kind} ({outcome_name} = {outcome_class}), the {round(best.size)} rows with {who} have a "
            f"{rate_name} of {percent(crit.rate_inside)} vs {percent(crit.rate_outside)} for the others: a gap of "
            f"{gap_text}, while {allowed_text}."
        )
        findings.append(
            make_finding(spec, best, subgroup, crit.rate_outside, null, description, ijdi=crit)
        )

    # Mitigation (methods.md §4.8, approach 2): per-subgroup thresholds until nothing significant.
    steps: list[MitigationStep] | None = None
    mitigation_status = None
    if spec.mitigation is not None and findings and null is not None:
        steps = []
        cur_outcome, cur_null = outcome, null
        rec = recommendation

        def still_significant() -> bool:
            return cur_null is not None and cur_null.significant and is_material(cur_outcome.best)

        for k in range(spec.mitigation.max_corrections):
            if not still_significant():
                break
            sel = cur_outcome.best.selection
            crit, inside_rows = criterion(sel, rec)
            target = (crit.rate_outside or 0.0) + lam * (
                crit.base_rate_inside - (crit.base_rate_outside or 0.0)
            )
            level = float(np.clip(1.0 - target, 0.0, 1.0))
            # inverted-CDF quantile with the strict rule p > eta: at most the target share passes
            eta = float(np.quantile(data.prediction[inside_rows], level, method="inverted_cdf"))
            # thresholds apply to everyone in the subgroup, on both sides of the outcome
            everyone = members(data.codes, global_selection(problem, sel, data))
            thresholds = np.where(everyone, eta, thresholds)
            new_rec = _recommendations(data.prediction, thresholds, spec.threshold_rule)
            steps.append(
                MitigationStep(
                    subgroup=subgroup_labels(data.attributes, problem, sel),
                    threshold=eta,
                    rate_before=float(rec[inside_rows].mean()),
                    rate_after=float(new_rec[inside_rows].mean()),
                    score_before=cur_outcome.best.score,
                    p_value_before=cur_null.p_value if cur_null is not None else None,
                )
            )
            rec = new_rec
            _, cur_outcome, cur_null, _ = scan_once(rec, child_seed(ctx.seed, 2, k))
        if not steps:
            mitigation_status = "not_needed"
        else:
            mitigation_status = "cap" if still_significant() else "resolved"
    done = time.perf_counter()

    status = scan_status(bool(findings), null)
    n_side = int(side_rows.sum())
    parameters: dict[str, Any] = {
        **spec.model_dump(mode="json", by_alias=True),
        "lambda_effective": lam,
        "alpha": ctx.alpha,
        "replicates": ctx.replicates,
        "cells": int(cells.weight.shape[0]),
    }
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=status,
        parameters=parameters,
        timing=ScanTiming(
            search_seconds=timings["search"],
            significance_seconds=timings["significance"],
            total_seconds=done - started,
        ),
        population=Population(
            description=f"{kind} ({outcome_name} = {outcome_class})",
            size=n_side,
            observed_rate=float(recommendation[side_rows].mean()) if n_side else None,
            expected_rate=float(recommendation[side_rows].mean()) if n_side else None,
            observed_label="recommended positive",
        ),
        findings=findings,
        null_distribution=null_distribution(null, ctx.alpha),
        ijdi=IjdiScanInfo(
            side=spec.side,
            lam=lam,
            base_rate_source=source,
            passes=outcome.passes,
            converged=outcome.converged,
            corrections=[
                IjdiCorrectionInfo(
                    edge_case=c.edge_case, scan_pass=c.scan_pass, size=c.size, factor=c.factor
                )
                for c in outcome.corrections
            ],
            mitigation=steps,
            mitigation_status=mitigation_status,
        ),
        warnings=warnings
        + (
            []
            if outcome.converged
            else [f"the edge-case loop hit the pass cap ({spec.max_passes})"]
        ),
    )


def global_selection(problem: Any, selection: np.ndarray, data: Any) -> np.ndarray:
    """Translate a selection over the scanned side's codes to the codes of the whole table.

    Unconstrained attributes stay unconstrained (values absent from the scanned side included).
    """
    m = data.codes.shape[1]
    kmax = max((a.cardinality for a in data.attributes), default=1)
    out = np.zeros((m, kmax), dtype=bool)
    for j, attribute in enumerate(data.attributes):
        k = int(problem.cardinality[j])
        chosen = selection[j, :k]
        if chosen.all():
            out[j, : attribute.cardinality] = True
        else:
            out[j, problem.value_index[j][chosen]] = True
    return out


IJDI_SCAN = ScanType(
    type="ijdi_scan",
    spec_model=IjdiScanSpec,
    runner=run_ijdi_scan,
    needs=("outcome", "prediction"),
    title="IJDI-Scan",
    summary=(
        "Among true negatives (side negatives) or true positives (side positives), finds the subgroup "
        "whose share of positive recommendations exceeds what its base rate justifies: expected "
        "rate = overall rate + lambda x (base rate - mean base rate). lambda = 0 is the FPR/TPR-Scan. "
        "Null hypothesis: recommendations follow those base-rate-adjusted expectations."
    ),
    extra_columns=_extra_columns,
)
