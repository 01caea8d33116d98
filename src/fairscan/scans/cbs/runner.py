"""The CBS runner: validate -> inputs -> engine (one protected class at a time) -> result.

:func:`_inputs` validates and prepares the arrays, :func:`_run_class` handles one protected
class (models, scan, permutation test, finding) and :func:`_result` builds the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.data.table import EncodedAttribute
from fairscan.engine import cbs as engine
from fairscan.engine.randomization import (
    NullResult,
    run_replicates,
)
from fairscan.engine.seeds import MdssStream, child_seed, search_seed
from fairscan.errors import ScanError
from fairscan.report.models import (
    Effect,
    Finding,
    ScanResult,
    ScanStatus,
    scan_status,
)
from fairscan.report.text import percent
from fairscan.report.verdict import UNTESTED_HINT, exceeds, replicates_needed
from fairscan.scans.base import ScanContext, ScanTimer
from fairscan.scans.cbs.models import (
    CbsCalibration,
    CbsFindingDetail,
    CbsReliabilityBin,
    CbsRun,
    CbsScanDetail,
)
from fairscan.scans.cbs.spec import CbsModels, CbsSpec, Scalar, metric_name
from fairscan.scans.features import design_matrix, require_scikit_learn
from fairscan.scans.given import given_result
from fairscan.scans.mdss_runner import mdss_finding, null_distribution, subgroup_labels

# --- inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CbsInputs:
    """The prepared arrays and wording of one CBS (shared by its runs)."""

    settings: engine.CbsSettings
    data: engine.CbsData
    attributes: list[EncodedAttribute]  # the scan attributes: all but the protected column
    model_names: list[str]  # columns of both models
    classes: list[tuple[str, np.ndarray]]  # (label, protected indicator) per run
    metric: str  # the Table 1 metric in words
    alpha_run: float  # alpha / runs (Bonferroni over the runs)


def _settings(spec: CbsSpec) -> engine.CbsSettings:
    fairness, on, condition, event = spec.cell
    models = spec.models or CbsModels()
    return engine.CbsSettings(
        family=fairness,
        on=on,
        condition=condition,
        event=event,
        direction=spec.direction_code,
        penalty=spec.penalty,
        restarts=spec.restarts,
        propensity_model=models.propensity,
        outcome_model=models.outcome,
        sigma=spec.sigma,
        regularization=models.regularization,
        l2_c=models.l2_c,
    )


def _scan_attributes(spec: CbsSpec, ctx: ScanContext) -> tuple[list[int], list[str]]:
    """Indices of the scan attributes (every attribute except the protected column, §3.1) and
    the model columns; errors name the spec field."""
    column = spec.protected.column
    if column not in ctx.data.extra:
        raise ScanError(f"protected column {column!r} was not loaded", field="protected.column")
    keep = [j for j, a in enumerate(ctx.data.attributes) if a.name != column]
    if not keep:
        raise ScanError(
            "no scan attribute is left once the protected column is removed",
            field="protected.column",
            hint="add attributes other than the protected column",
        )
    names = list(spec.model_attributes or [ctx.data.attributes[j].name for j in keep])
    if column in names:
        raise ScanError(
            "model_attributes must not include the protected column (it defines A)",
            field="model_attributes",
        )
    return keep, names


def _expectations(spec: CbsSpec, ctx: ScanContext) -> np.ndarray | None:
    """A supplied I-hat column (checked to be probabilities), or None to fit the models."""
    if spec.expectations is None:
        return None
    values = ctx.data.extra.get(spec.expectations)
    if values is None or values.dtype == object or np.any((values < 0) | (values > 1)):
        raise ScanError(
            f"expectations column {spec.expectations!r} must hold probabilities in [0, 1]",
            field="expectations",
        )
    return values.astype(np.float64)


def _protected_classes(spec: CbsSpec, raw: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(label, indicator) per run; errors name the spec field."""
    column = spec.protected.column
    numeric = raw.dtype != object

    def match(value: Scalar, field: str) -> np.ndarray:
        if numeric:
            try:
                target = float(value)
            except (TypeError, ValueError):
                raise ScanError(
                    f"protected value {value!r} is not a number but column {column!r} is numeric",
                    field=field,
                ) from None
            hit = raw == target
        else:
            hit = raw == str(value)
        if not hit.any():
            present = ", ".join(repr(v) for v in np.unique(raw)[:10].tolist())
            raise ScanError(
                f"protected value {value!r} does not occur in column {column!r}",
                field=field,
                hint=f"values present include {present}",
            )
        return hit

    if spec.protected.value is not None:
        return [
            (f"{column} = {spec.protected.value}", match(spec.protected.value, "protected.value"))
        ]
    if spec.protected.values is not None:
        hit = np.zeros(len(raw), bool)
        for i, v in enumerate(spec.protected.values):
            hit |= match(v, f"protected.values[{i}]")
        label = ", ".join(str(v) for v in spec.protected.values)
        return [(f"{column} in {{{label}}}", hit)]
    out = []
    for v in np.unique(raw).tolist():
        shown = f"{v:g}" if numeric else str(v)
        out.append((f"{column} = {shown}", raw == v))
    return out


def _inputs(spec: CbsSpec, ctx: ScanContext) -> CbsInputs:
    settings = _settings(spec)
    keep, names = _scan_attributes(spec, ctx)
    expectations = _expectations(spec, ctx)
    on_predictions = settings.on == "predictions"
    data = engine.CbsData(
        codes=np.ascontiguousarray(ctx.data.codes[:, keep]),
        features=design_matrix(ctx, names)
        if expectations is None
        else np.zeros((ctx.data.n_rows, 0)),
        outcome=ctx.outcome.astype(np.float64),
        prediction=ctx.prediction.astype(np.float64) if on_predictions else None,
        recommendation=None if on_predictions else ctx.recommendation.astype(np.float64),
        expectations=expectations,
        weight=ctx.data.row_weight,  # fractional sample weights (whole ones: rows repeated)
    )
    classes = _protected_classes(spec, ctx.data.extra[spec.protected.column])
    fairness, on, condition, event = spec.cell
    return CbsInputs(
        settings=settings,
        data=data,
        attributes=[ctx.data.attributes[j] for j in keep],
        model_names=names,
        classes=classes,
        metric=metric_name(fairness, on, condition, event, ctx.role_names),
        alpha_run=ctx.alpha / len(classes),
    )


# --- engine: one protected class -------------------------------------------------------------


def _permutation_test(
    spec: CbsSpec,
    ctx: ScanContext,
    inputs: CbsInputs,
    index: int,
    label: str,
    a: np.ndarray,
    observed: float,
) -> NullResult | None:
    """Permute the protected class and refit everything (methods.md §3.7); None untested."""
    if ctx.replicates <= 0:
        return None
    # prepared: the pattern fits' starts are built before replicate 0, whose time decides
    # whether worker processes pay off
    job = engine.CbsPermutation(
        inputs.data, a, inputs.settings, child_seed(ctx.seed, MdssStream.NULL, index)
    ).prepared()
    return ctx.null_test(job, f"{spec.id}: permutations ({label})", observed, inputs.alpha_run)


def _calibration(
    model: str,
    fitted_on: str,
    predicted: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None,
) -> CbsCalibration:
    brier, table = engine.reliability(predicted, label, weight)
    return CbsCalibration(
        model=model,
        fitted_on=fitted_on,
        rows=len(predicted),
        brier=brier,
        bins=[
            CbsReliabilityBin(
                low=b[0], high=b[1], rows=b[2], weight=b[3], mean_predicted=b[4], mean_observed=b[5]
            )
            for b in table
        ],
    )


def _calibrations(
    settings: engine.CbsSettings,
    est: engine.CbsEstimate,
    a: np.ndarray,
    weight: np.ndarray | None = None,
) -> tuple[CbsCalibration | None, CbsCalibration | None]:
    """Calibration of the propensity and the outcome model (None when not fitted); ``weight``:
    the sample weights of all rows (the outcome model's weights include them already)."""
    propensity = outcome = None
    if est.propensity is not None:
        propensity = _calibration(
            settings.propensity_model,
            "all rows (label: protected)",
            est.propensity,
            a.astype(np.float64),
            weight,
        )
    if est.fitted is not None:
        assert est.training_label is not None
        outcome = _calibration(
            settings.outcome_model,
            "non-protected rows after the filter, ATT-weighted"
            + (" (label: mean prediction, Case B)" if settings.gaussian else ""),
            est.fitted,
            est.training_label,
            est.weights,
        )
    return propensity, outcome


def _run_status(has_finding: bool, null: NullResult | None) -> ScanStatus:
    if not has_finding:
        return "no_finding"
    if null is None:
        return "untested"
    return "significant" if null.significant else "not_significant"


def _run_record(
    inputs: CbsInputs,
    base: dict[str, Any],
    outcome: engine.CbsOutcome,
    null: NullResult | None,
    a: np.ndarray,
) -> CbsRun:
    est, best = outcome.estimate, outcome.best
    assert best is not None
    propensity, fitted = _calibrations(inputs.settings, est, a, inputs.data.weight)
    return CbsRun(
        status=_run_status(best.llr > 0.0, null),
        score=best.score,
        llr=best.llr,
        p_value=null.p_value if null else None,
        significant=null.significant if null else None,
        sigma=est.sigma,
        mean_delta=float(np.average(est.observed, weights=inputs.data.row_weight(est.protected)))
        if inputs.settings.gaussian and est.observed is not None
        else None,
        max_weight_ratio=est.max_weight_ratio,
        null=null_distribution(null, inputs.alpha_run),
        propensity_calibration=propensity,
        outcome_calibration=fitted,
        **base,
    )


def _finding(
    spec: CbsSpec,
    inputs: CbsInputs,
    label: str,
    outcome: engine.CbsOutcome,
    null: NullResult | None,
) -> Finding:
    """The paper's report columns: the metric in S* for protected vs non-protected rows."""
    est, best, problem = outcome.estimate, outcome.best, outcome.problem
    assert best is not None and problem is not None and est.expected is not None
    settings = inputs.settings
    local_in = problem.members(best.selection)  # scanned (protected) rows inside S*
    inside_all = problem.rows_in(inputs.data.codes, best.selection)
    ev = np.asarray(inputs.data.event(settings), dtype=np.float64)
    if settings.event == 0:
        ev = 1.0 - ev
    prot_rows = est.protected & inside_all
    comp_rows = est.comparison & inside_all
    data = inputs.data
    w_prot, w_comp = data.row_weight(prot_rows), data.row_weight(comp_rows)
    n_prot, n_comp = round(float(w_prot.sum())), round(float(w_comp.sum()))
    p_metric = float(np.average(ev[prot_rows], weights=w_prot))
    w_in = data.row_weight(est.protected)[local_in]
    p_expected = float(np.average(est.expected[local_in], weights=w_in))
    c_metric = float(np.average(ev[comp_rows], weights=w_comp)) if comp_rows.any() else None
    subgroup = subgroup_labels(inputs.attributes, problem, best.selection)
    value = best.log_q if settings.gaussian else best.q
    param: Literal["q", "mu"] = "mu" if settings.gaussian else "q"
    filtered = "" if settings.condition is None else " with the filter applied"
    description = (
        f"Among {label} rows{filtered}, the {n_prot} with "
        f"{subgroup_label(subgroup, inputs.attributes)} have a {inputs.metric} of "
        f"{percent(p_metric)} where comparable non-protected records imply "
        f"{percent(p_expected)}; the same subgroup among non-protected rows has "
        f"{percent(c_metric)} ({n_comp} rows). {param} = {value:.3f}."
    )
    supplied = spec.expectations is not None
    effect = Effect(
        metric=inputs.metric,
        inside=p_metric,
        reference=p_expected,
        reference_name=f"the expectations column {spec.expectations}"
        if supplied
        else "comparable non-protected records (model)",
        inside_count=n_prot,
        reference_count=None if supplied else round(float(data.row_weight(est.comparison).sum())),
        expected=p_expected,
    )
    runs = len(inputs.classes)
    adjusted = None if runs == 1 or null is None else min(1.0, null.p_value * runs)
    detail = CbsFindingDetail(
        protected=label,
        metric=inputs.metric,
        parameter=param,
        value=float(value),
        protected_rows=n_prot,
        protected_metric=p_metric,
        protected_expected=p_expected,
        comparison_rows=n_comp,
        comparison_metric=c_metric,
    )
    finding = mdss_finding(
        penalty=spec.penalty,
        best=best,
        subgroup=subgroup,
        attributes=inputs.attributes,
        effect=effect,
        null=null,
        description=description,
        size=n_prot,
        adjusted_p_value=adjusted,
        extra={"cbs": detail.model_dump(mode="json")},
    )
    # the event counts of the protected rows in S* (for the Gaussian score the search's own
    # observed/expected are Delta and a filler)
    finding.detail["observed_count"] = float((w_prot * ev[prot_rows]).sum())
    finding.detail["expected_count"] = float((w_in * est.expected[local_in]).sum())
    return finding


@dataclass
class CbsRunOutput:
    run: CbsRun
    finding: Finding | None
    warnings: list[str]


def _run_class(
    spec: CbsSpec,
    ctx: ScanContext,
    inputs: CbsInputs,
    index: int,
    label: str,
    a: np.ndarray,
    timer: ScanTimer,
) -> CbsRunOutput:
    """One protected class: models and scan, permutation test, run record and finding."""
    mark = time.perf_counter()
    seed = search_seed(child_seed(ctx.seed, MdssStream.SEARCH, index))
    outcome = engine.run(inputs.data, inputs.settings, a, seed)
    timer.search += time.perf_counter() - mark
    est = outcome.estimate
    base: dict[str, Any] = {
        "protected": label,
        "scanned_rows": round(float(inputs.data.row_weight(est.protected).sum())),
        "comparison_rows": round(float(inputs.data.row_weight(est.comparison).sum())),
        "alpha": inputs.alpha_run,
    }
    if not est.auditable:
        run = CbsRun(status="not_auditable", reason=est.reason, **base)
        return CbsRunOutput(run, None, [f"{label}: not auditable: {est.reason}"])
    assert outcome.best is not None
    mark = time.perf_counter()
    null = _permutation_test(spec, ctx, inputs, index, label, a, outcome.best.score)
    timer.significance += time.perf_counter() - mark
    warnings = [
        f"{label}: {note} (every permutation replicate applies the same rule)" for note in est.notes
    ]
    if est.max_weight_ratio is not None and est.max_weight_ratio > 100:
        warnings.append(
            f"{label}: the largest propensity weight is {est.max_weight_ratio:.0f}x the median"
        )
    run = _run_record(inputs, base, outcome, null, a)
    finding = _finding(spec, inputs, label, outcome, null) if outcome.best.llr > 0.0 else None
    return CbsRunOutput(run, finding, warnings)


# --- result ----------------------------------------------------------------------------------


def _unreachable(replicates: int, alpha: float, classes: int) -> str | None:
    """Why no class can be significant when each run is tested at alpha / classes (Bonferroni
    over the protected classes) and its smallest p-value 1 / (replicates + 1) exceeds that, or
    None. One class is the gate's own check (the declared ``replicate_floor``)."""
    floor = 1.0 / (replicates + 1)
    if classes < 2 or replicates < 1 or not exceeds(floor, alpha / classes):
        return None
    need = replicates_needed(alpha, "bonferroni", classes)
    return (
        f"{replicates} replicates: its smallest possible p-value 1/{replicates + 1} = "
        f"{floor:.4g} exceeds alpha {alpha:g} / {classes} protected classes (Bonferroni over "
        f"the classes); raise significance.replicates to at least {need}, {UNTESTED_HINT}"
    )


def _status(runs: list[CbsRun], findings: list[Finding], tested: bool) -> ScanStatus:
    if all(run.status == "not_auditable" for run in runs):
        return "not_auditable"
    return scan_status(findings, tested=tested)


def _order(finding: Finding) -> tuple[bool, float, float]:
    """Most important first: significant, then by p-value, then by score."""
    p = finding.p_value if finding.p_value is not None else 1.0
    return (finding.significant is not True, p, -(finding.statistic.value or 0.0))


def _sigma_rule(settings: engine.CbsSettings) -> str:
    """The sigma rule of the Gaussian score in words (methods.md §3.5)."""
    if settings.sigma == engine.SIGMA_SD:
        return (
            "sd (the sample SD, ddof 1, of Delta over the scanned rows, recomputed in every "
            "permutation replicate)"
        )
    if float(settings.sigma) == 1.0:
        return "fixed at 1 (the default: the paper's reported scores)"
    return f"fixed at {float(settings.sigma):g}"


def _scan_detail(spec: CbsSpec, inputs: CbsInputs, runs: list[CbsRun]) -> CbsScanDetail:
    settings = inputs.settings
    direction = "positive" if settings.direction > 0 else "negative"
    cond_text = "all values" if settings.condition is None else f"condition {settings.condition}"
    if spec.expectations is not None:
        expectations = f"column {spec.expectations}"
    else:
        expectations = (
            f"an outcome model ({engine.model_name(settings.outcome_model, settings)}) "
            f"weighted by a propensity model "
            f"({engine.model_name(settings.propensity_model, settings)}) on "
            f"{', '.join(inputs.model_names) or '(none)'}"
        )
    return CbsScanDetail(
        cell=f"{settings.family} for {settings.on}, {cond_text}, event {settings.event}: "
        f"{inputs.metric}",
        family=settings.family,
        on=settings.on,
        condition=settings.condition,
        event=settings.event,
        direction=direction,
        likelihood="gaussian" if settings.gaussian else "bernoulli",
        expectations=expectations,
        sigma_rule=_sigma_rule(settings) if settings.gaussian else None,
        regularization=None
        if spec.expectations is not None
        else ("l2" if settings.regularization == "l2" else "none"),
        runs=runs,
    )


def _result(
    spec: CbsSpec,
    ctx: ScanContext,
    inputs: CbsInputs,
    outputs: list[CbsRunOutput],
    timer: ScanTimer,
) -> ScanResult:
    runs = [o.run for o in outputs]
    findings = sorted((o.finding for o in outputs if o.finding is not None), key=_order)
    detail = _scan_detail(spec, inputs, runs)
    unreachable = _unreachable(ctx.replicates, ctx.alpha, len(inputs.classes))
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=_status(runs, findings, tested=ctx.replicates > 0 and unreachable is None),
        untested_reason=unreachable,
        parameters={
            **spec.model_dump(mode="json"),
            "direction_effective": detail.direction,
            "alpha": ctx.alpha,
            "replicates": ctx.replicates,
        },
        timing=timer.timing(),
        findings=findings,
        null_distribution=runs[0].null if len(runs) == 1 else None,
        detail={"cbs": detail.model_dump(mode="json")},
        warnings=[w for o in outputs for w in o.warnings],
    )


def run_cbs(spec: CbsSpec, ctx: ScanContext) -> ScanResult:
    require_scikit_learn("a cbs scan")
    timer = ScanTimer()
    inputs = _inputs(spec, ctx)
    if spec.subgroups:
        return _run_given(spec, ctx, inputs, timer)
    outputs = [
        _run_class(spec, ctx, inputs, index, label, a, timer)
        for index, (label, a) in enumerate(inputs.classes)
    ]
    return _result(spec, ctx, inputs, outputs, timer)


# --- given subgroups (issue 26) ---------------------------------------------------------------

GIVEN_TEST = "permutation of the protected class, models refitted (CBS's null, one subgroup)"


def _run_given(spec: CbsSpec, ctx: ScanContext, inputs: CbsInputs, timer: ScanTimer) -> ScanResult:
    """Each given subgroup (over the scan attributes) scored on each protected class's rows
    against the expectations of comparable non-protected records, and tested by permuting the
    class and refitting both models (methods.md §3.7) with the subgroup held fixed: one finding
    per class and subgroup, at the run's alpha / classes (Bonferroni over the runs)."""
    from fairscan.data.subgroups import resolve_subgroups, subgroup_rows

    given = resolve_subgroups(spec.subgroups or [], inputs.attributes)
    rows = [subgroup_rows(s, inputs.attributes, inputs.data.codes) for s in given]
    outputs, findings = [], []
    for index, (label, a) in enumerate(inputs.classes):
        mark = time.perf_counter()
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            est = engine.estimate(inputs.data, inputs.settings, a)
        timer.search += time.perf_counter() - mark
        base: dict[str, Any] = {
            "protected": label,
            "scanned_rows": int(est.protected.sum()),
            "comparison_rows": int(est.comparison.sum()),
            "alpha": inputs.alpha_run,
        }
        if not est.auditable:
            run = CbsRun(status="not_auditable", reason=est.reason, **base)
            outputs.append(CbsRunOutput(run, None, [f"{label}: not auditable: {est.reason}"]))
            continue
        warnings = [f"{label}: {note}" for note in est.notes]
        problem = est.problem(inputs.data.codes, inputs.settings)
        cells = problem.cells()
        for k, (subgroup, inside) in enumerate(zip(given, rows, strict=True)):
            if not (inside & est.protected).any():
                warnings.append(
                    f"{label}: the given subgroup {subgroup_label(subgroup, inputs.attributes)} "
                    "has no scanned protected row"
                )
                continue
            mark = time.perf_counter()
            findings.append(
                _given_finding(spec, ctx, inputs, index, label, a, est, problem, cells, k, subgroup)
            )
            timer.significance += time.perf_counter() - mark
        run = CbsRun(
            status="significant"
            if any(f.significant and f.detail["cbs"]["protected"] == label for f in findings)
            else "not_significant",
            **base,
        )
        outputs.append(CbsRunOutput(run, None, warnings))
    result = _result(spec, ctx, inputs, outputs, timer)
    if all(o.run.status == "not_auditable" for o in outputs):
        return result
    return given_result(result, findings, [f.detail["given_subgroup"]["test"] for f in findings])


def _given_finding(
    spec: CbsSpec,
    ctx: ScanContext,
    inputs: CbsInputs,
    index: int,
    label: str,
    a: np.ndarray,
    est: engine.CbsEstimate,
    problem: Any,
    cells: Any,
    k: int,
    subgroup: dict[str, list[str]],
) -> Finding:
    from fairscan.scans.given import given_finding, monte_carlo_p, simulated_power
    from fairscan.scans.mdss_runner import given_selection

    settings = inputs.settings
    selection = given_selection(inputs.attributes, problem, subgroup)
    best = engine.score_cells(cells, selection, settings, est.sigma)
    outcome = engine.CbsOutcome(est, problem, cells, best)
    inside = subgroup_rows_of(inputs, subgroup)
    seed = child_seed(ctx.seed, MdssStream.FIXED, index, k)
    null, stopped = None, None
    wanted = ctx.detect[k] if k < len(ctx.detect) else None
    if best.llr <= 0.0:
        p_value, test, exceed = 1.0, "no deviation in the scan's direction", None
    elif ctx.replicates > 0:
        job = engine.CbsFixedPermutation(inputs.data, a, settings, inside, seed).prepared()
        title = f"{spec.id}: permutations ({label}, subgroup {k})"
        if wanted is None:  # the permutations stop once the decision is settled
            tested = ctx.null_test(job, title, best.llr, inputs.alpha_run)
            null, p_value, exceed = tested.scores, tested.p_value, tested.exceed_count
            stopped = None if tested.rule is None else ctx.replicates
        else:  # the power reads the whole null: every permutation runs
            null = ctx.replicate_scores(job, title)
            p_value, exceed = monte_carlo_p(best.llr, null)
        test = GIVEN_TEST
    else:
        p_value, test, exceed = None, GIVEN_TEST, None
    finding = _finding(spec, inputs, label, outcome, None)
    effect_size = best.log_q  # log q, or mu-hat for the Gaussian score
    power = None
    if wanted is not None and np.isfinite(wanted) and (settings.gaussian or wanted > 0):
        size = wanted if settings.gaussian else float(np.log(wanted))
        if null is None and ctx.replicates > 0:  # no deviation now: the null for the power
            job = engine.CbsFixedPermutation(inputs.data, a, settings, inside, seed).prepared()
            null = run_replicates(job, ctx.replicates, workers=ctx.workers, executor=ctx.executor)
        alt = engine.fixed_alternative(
            est, inside, settings, wanted, child_seed(seed, 1), max(ctx.replicates, 0)
        )
        power = (
            None if null is None else simulated_power(null, alt, inputs.alpha_run),
            wanted,
            size,
        )
    return given_finding(
        finding,
        subgroup=subgroup,
        attributes=inputs.attributes,
        index=k,
        p_value=p_value,
        alpha=inputs.alpha_run,
        test=test,
        effect_size=effect_size,
        replicates=0 if exceed is None or null is None else len(null),
        exceed_count=exceed,
        power=power,
        max_replicates=stopped,
        power_method="the subgroup's events drawn at the baseline effect with the fitted expectations held fixed (models not refitted: an approximation)",
    )


def subgroup_rows_of(inputs: CbsInputs, subgroup: dict[str, list[str]]) -> np.ndarray:
    from fairscan.data.subgroups import subgroup_rows

    return subgroup_rows(subgroup, inputs.attributes, inputs.data.codes)
