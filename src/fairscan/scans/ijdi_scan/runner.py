"""The IJDI-Scan runner: validate -> inputs -> engine (edge-case loop, randomization test,
optional mitigation) -> result.

:func:`_inputs` validates and prepares the arrays, :func:`_scan_pass` runs the edge-case loop
and its randomization test, :func:`_mitigate` the optional iterative thresholds and
:func:`_result` builds the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.engine.ijdi import IjdiCells, IjdiOutcome, ijdi_loop
from fairscan.engine.mdss import ScanProblem, is_material, members
from fairscan.engine.randomization import (
    NullResult,
)
from fairscan.engine.seeds import IjdiStream, child_seed, search_seed
from fairscan.errors import ScanError
from fairscan.metric_table import CATALOGUE
from fairscan.report.models import (
    Effect,
    Finding,
    Population,
    ScanResult,
    scan_status,
)
from fairscan.report.text import percent
from fairscan.scans.base import ScanContext, ScanTimer
from fairscan.scans.features import design_matrix, require_scikit_learn
from fairscan.scans.ijdi_replicate import IjdiReplicate
from fairscan.scans.ijdi_scan.models import (
    IjdiCorrectionInfo,
    IjdiCriterion,
    IjdiScanDetail,
    MitigationStep,
)
from fairscan.scans.ijdi_scan.spec import IjdiScanSpec
from fairscan.scans.mdss_runner import mdss_finding, null_distribution, subgroup_labels
from fairscan.scans.roles import compare, outcome_text

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
    # fractional sample weights (columns.weight), per row of the table; None: one per row
    weight: np.ndarray | None = None

    def weight_of(self, rows: np.ndarray) -> np.ndarray | None:
        """The sample weights of ``rows``, None without weights."""
        return None if self.weight is None else self.weight[rows]

    def mean(self, values: np.ndarray, rows: np.ndarray) -> float:
        """The (weighted) mean of ``values`` over ``rows``."""
        return float(np.average(values[rows], weights=self.weight_of(rows)))

    def count(self, rows: np.ndarray) -> float:
        """The (weighted) number of ``rows``."""
        return int(rows.sum()) if self.weight is None else float(self.weight[rows].sum())


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


def estimate_base_rate(ctx: ScanContext, names: list[str]) -> np.ndarray:
    """Pr(y = 1 | x) by logistic regression of the outcome on ``names`` over all rows (§4.1)."""
    outcome = ctx.outcome
    weight = ctx.data.row_weight  # fractional sample weights: a weighted fit
    features = design_matrix(ctx, names)
    if features.shape[1] == 0:
        return np.full(ctx.data.n_rows, float(np.average(outcome, weights=weight)))
    require_scikit_learn("an ijdi_scan without a base_rate column")
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=2000)
    model.fit(features, outcome, sample_weight=weight)
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
        rate_name=CATALOGUE["fpr" if outcome_class == 0 else "tpr"].words,
        population=f"{kind} ({outcome_text(ctx.role_names, outcome_class)})",
        weight=ctx.data.row_weight,
    )


# --- engine ----------------------------------------------------------------------------------


def _scan_pass(
    spec: IjdiScanSpec,
    ctx: ScanContext,
    inputs: IjdiInputs,
    recommendation: np.ndarray,
    test_seed: np.random.SeedSequence,
    timer: ScanTimer,
) -> IjdiPass:
    """The edge-case loop on ``recommendation`` and (with replicates) its randomization test."""
    mark = time.perf_counter()
    rows = inputs.side_rows
    problem = inputs.problem
    cells = IjdiCells.from_records(
        problem.codes,
        recommendation[rows],
        inputs.base_rate[rows],
        problem.cardinality,
        inputs.weight_of(rows),
    )
    outcome = ijdi_loop(
        cells,
        lam=inputs.lam,
        penalty=spec.penalty,
        restarts=spec.restarts,
        seed=search_seed(child_seed(ctx.seed, IjdiStream.SEARCH)),
        max_passes=spec.max_passes,
    )
    timer.search += time.perf_counter() - mark
    degenerate = outcome.pbar_b in (0.0, 1.0)
    mark = time.perf_counter()
    null = None
    if ctx.replicates > 0 and not degenerate:
        job = IjdiReplicate(
            cells, inputs.lam, spec.penalty, spec.restarts, spec.max_passes, test_seed
        )
        null = ctx.null_test(job, f"{spec.id}: null replicates", outcome.best.score)
    timer.significance += time.perf_counter() - mark
    return IjdiPass(cells, outcome, null, degenerate)


def _criterion(
    inputs: IjdiInputs, selection: np.ndarray, recommendation: np.ndarray
) -> tuple[IjdiCriterion, np.ndarray]:
    """The criterion of a subgroup of the scanned side, and its rows (whole-table mask)."""
    inside_rows = np.zeros(inputs.side_rows.shape[0], dtype=bool)
    inside_rows[inputs.side_rows] = inputs.problem.members(selection)
    out_rows = inputs.side_rows & ~inside_rows
    rate_in = inputs.mean(recommendation, inside_rows)
    rate_out = inputs.mean(recommendation, out_rows) if out_rows.any() else None
    p_in = inputs.mean(inputs.base_rate, inside_rows)
    p_out = inputs.mean(inputs.base_rate, out_rows) if out_rows.any() else None
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
    spec: IjdiScanSpec, ctx: ScanContext, inputs: IjdiInputs, first: IjdiPass, timer: ScanTimer
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
        eta = float(
            np.quantile(
                prediction[inside_rows],
                level,
                method="inverted_cdf",
                weights=inputs.weight_of(inside_rows),
            )
        )
        everyone = inputs.problem.rows_in(ctx.data.codes, best.selection)
        new_rec = np.where(everyone, compare(prediction, eta, rule).astype(np.float64), rec)
        subgroup = subgroup_labels(ctx.data.attributes, inputs.problem, best.selection)
        steps.append(
            MitigationStep(
                subgroup=subgroup,
                label=subgroup_label(subgroup, ctx.data.attributes),
                threshold=eta,
                rate_before=inputs.mean(rec, inside_rows),
                rate_after=inputs.mean(new_rec, inside_rows),
                score_before=best.score,
                p_value_before=current.null.p_value if current.null is not None else None,
            )
        )
        rec = new_rec
        current = _scan_pass(
            spec, ctx, inputs, rec, child_seed(ctx.seed, IjdiStream.MITIGATION, k), timer
        )
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
    n_outside = round(inputs.count(inputs.side_rows & ~inside_rows))
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
    timer: ScanTimer,
) -> ScanResult:
    outcome = first.outcome
    n_side = round(inputs.count(inputs.side_rows))
    side_rate = inputs.mean(inputs.recommendation, inputs.side_rows) if n_side else None
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
    return ScanResult(
        id=spec.id,
        type=spec.type,
        # every row on the side has the same recommendation (e.g. a threshold column that the
        # prediction never crosses): nothing can be found, and the status says so
        status="not_auditable"
        if first.degenerate
        else scan_status(findings, tested=first.null is not None),
        parameters=parameters,
        timing=timer.timing(),
        population=Population(
            description=inputs.population,
            size=n_side,
            observed_rate=side_rate,
            expected_rate=side_rate,
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
    timer = ScanTimer()
    inputs = _inputs(spec, ctx)
    if spec.subgroups:
        return _run_given(spec, ctx, inputs, timer)
    first = _scan_pass(
        spec, ctx, inputs, inputs.recommendation, child_seed(ctx.seed, IjdiStream.NULL), timer
    )
    findings = [_finding(ctx, spec, inputs, first)] if is_material(first.outcome.best) else []
    mitigation = None
    if spec.mitigation is not None and findings and first.null is not None:
        mitigation = _mitigate(spec, ctx, inputs, first, timer)
    return _result(spec, ctx, inputs, first, findings, mitigation, timer)


# --- given subgroups (issue 26) ---------------------------------------------------------------

GIVEN_TEST = "IJDI score under the scan's null redraw (parametric draws)"


def _run_given(
    spec: IjdiScanSpec, ctx: ScanContext, inputs: IjdiInputs, timer: ScanTimer
) -> ScanResult:
    """Each given subgroup scored at its own IJDI expectations (the edge-case loop with S* held
    at it) and tested against the same score in redraws of the recommendations from the
    scan's null (methods.md §4.6), with pbar_b and the edge cases recomputed in each."""
    from fairscan.data.subgroups import resolve_subgroups
    from fairscan.engine.ijdi import fixed_score
    from fairscan.engine.seeds import IjdiStream
    from fairscan.scans.given import given_finding, given_result
    from fairscan.scans.mdss_runner import given_selection

    given = resolve_subgroups(spec.subgroups or [], ctx.data.attributes)
    rows, problem = inputs.side_rows, inputs.problem
    cells = IjdiCells.from_records(
        problem.codes, inputs.recommendation[rows], inputs.base_rate[rows], problem.cardinality
    )
    mark = time.perf_counter()
    degenerate = float(cells.observed.sum()) in (0.0, float(cells.weight.sum()))
    findings = []
    for k, subgroup in enumerate(given):
        selection = given_selection(ctx.data.attributes, problem, subgroup)
        best = fixed_score(cells, selection, inputs.lam, spec.penalty)
        seed = child_seed(ctx.seed, IjdiStream.FIXED, k)
        p_value, exceed, null, stopped = None, None, None, None
        if not is_material(best) or degenerate:
            p_value, test = 1.0, "no deviation in the scan's direction"
        elif ctx.replicates > 0:
            null, p_value, exceed, stopped = _given_null(
                ctx, k, cells, selection, inputs, best, seed
            )
            test = GIVEN_TEST
        else:
            test = GIVEN_TEST
        outcome = IjdiOutcome(best, members(cells.codes, selection), 1, True)
        finding = _finding(ctx, spec, inputs, IjdiPass(cells, outcome, None, degenerate))
        power = _given_power(ctx, k, cells, selection, inputs.lam, seed, null)
        findings.append(
            given_finding(
                finding,
                subgroup=subgroup,
                attributes=ctx.data.attributes,
                index=k,
                p_value=p_value,
                alpha=ctx.alpha,
                test=test,
                effect_size=best.log_q,
                replicates=0 if null is None else len(null),
                exceed_count=exceed,
                power=power,
                max_replicates=stopped,
                power_method="redraws with the subgroup's null odds multiplied by the baseline q",
            )
        )
    timer.significance += time.perf_counter() - mark
    first = IjdiPass(cells, IjdiOutcome(best, outcome.inside, 1, True), None, degenerate)
    result = _result(spec, ctx, inputs, first, findings, None, timer)
    if spec.mitigation is not None:
        note = "mitigation is not run on given subgroups: it corrects what a search finds"
        result = result.model_copy(update={"warnings": [*result.warnings, note]})
    return given_result(result, findings, [f.detail["given_subgroup"]["test"] for f in findings])


def _given_null(
    ctx: ScanContext,
    k: int,
    cells: IjdiCells,
    selection: np.ndarray,
    inputs: IjdiInputs,
    best: Any,
    seed: np.random.SeedSequence,
) -> tuple[np.ndarray, float, int, int | None]:
    """(null scores, p-value, exceed count, the maximum where the sequential rule stopped the
    redraws, else None) of given subgroup ``k``. The redraws stop once the decision at alpha is
    settled, as every randomization test's (issue 36), unless a re-test asks for the power,
    which reads the whole null."""
    from fairscan.engine.ijdi import FixedReplicate, fixed_draws
    from fairscan.scans.given import monte_carlo_p

    if k < len(ctx.detect) and ctx.detect[k] is not None:
        null = fixed_draws(cells, selection, lam=inputs.lam, seed=seed, replicates=ctx.replicates)
        p_value, exceed = monte_carlo_p(best.llr, null)
        return null, p_value, exceed, None
    job = FixedReplicate(cells, selection, inputs.lam, seed)
    tested = ctx.null_test(job, f"given subgroup {k}: redraws", best.llr)
    stopped = None if tested.rule is None else ctx.replicates
    return tested.scores, tested.p_value, tested.exceed_count, stopped


def _given_power(
    ctx: ScanContext,
    k: int,
    cells: IjdiCells,
    selection: np.ndarray,
    lam: float,
    seed: np.random.SeedSequence,
    null: np.ndarray | None,
) -> tuple[float | None, float, float] | None:
    """Power against the baseline odds multiplier q a re-test asks for (``ctx.detect[k]``):
    the same redraws with the subgroup's null odds multiplied by q."""
    from fairscan.engine.ijdi import fixed_draws
    from fairscan.scans.given import simulated_power

    q = ctx.detect[k] if k < len(ctx.detect) else None
    if q is None or not (np.isfinite(q) and q > 0):
        return None
    if ctx.replicates <= 0:
        return (None, q, float(np.log(q)))
    if null is None:
        null = fixed_draws(cells, selection, lam=lam, seed=seed, replicates=ctx.replicates)
    alt = fixed_draws(
        cells, selection, lam=lam, seed=child_seed(seed, 1), replicates=ctx.replicates, q=q
    )
    return (simulated_power(null, alt, ctx.alpha), q, float(np.log(q)))
