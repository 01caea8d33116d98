"""Conditional Bias Scan (methods.md §3): separation/sufficiency violations of a protected class.

Compares each protected record's event I with I-hat = E[I | C, X] estimated from comparable
non-protected records (propensity-weighted outcome model) and scans the protected records for
the subgroup deviating most (Bernoulli score; Gaussian on Delta for separation-for-predictions).
Significance: permutation of the protected indicator, refitting everything per replicate.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from fairscan.scans.base import ScanContext, ScanType
from fairscan.scans.features import design_matrix
from fairscan.spec.base import MdssScanSpecBase, StrictModel, rule_error

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult

# metric shorthand -> (fairness, on, condition, event), methods.md §3.2 Table 1
METRICS: dict[str, tuple[str, str, int | None, int]] = {
    "fpr": ("separation", "recommendations", 0, 1),
    "tnr": ("separation", "recommendations", 0, 0),
    "tpr": ("separation", "recommendations", 1, 1),
    "fnr": ("separation", "recommendations", 1, 0),
    "bnc": ("separation", "predictions", 0, 1),
    "fpe": ("separation", "predictions", 0, 1),
    "bpc": ("separation", "predictions", 1, 1),
    "ppv": ("sufficiency", "recommendations", 1, 1),
    "fdr": ("sufficiency", "recommendations", 1, 0),
    "for": ("sufficiency", "recommendations", 0, 1),
    "npv": ("sufficiency", "recommendations", 0, 0),
    "cal": ("sufficiency", "predictions", None, 1),
}
MetricName = Literal[
    "fpr", "tnr", "tpr", "fnr", "bnc", "fpe", "bpc", "ppv", "fdr", "for", "npv", "cal"
]
Scalar = str | int | float


class ProtectedSpec(StrictModel):
    """The protected class A: rows whose ``column`` takes ``value`` (or one of ``values``)."""

    column: str = Field(description="Column defining the protected class.")
    value: Scalar | None = Field(default=None, description="The protected value.")
    values: list[Scalar] | None = Field(
        default=None, min_length=1, description="Several values forming one protected class."
    )
    each_value: bool = Field(
        default=False,
        description="Run one CBS per value of the column (Bonferroni over runs, methods.md §3.7).",
    )

    @model_validator(mode="after")
    def _one_choice(self) -> ProtectedSpec:
        given = (self.value is not None) + (self.values is not None) + bool(self.each_value)
        if given != 1:
            raise rule_error("give exactly one of `value`, `values` or `each_value: true`")
        return self


class CbsModels(StrictModel):
    propensity: Literal["logistic", "gradient_boosting"] = Field(
        default="logistic", description="Model of Pr(A = 1 | X) (gradient boosting + Platt)."
    )
    outcome: Literal["logistic", "gradient_boosting"] = Field(
        default="logistic", description="Model of E[I | C, X] on weighted non-protected rows."
    )


class CbsSpec(MdssScanSpecBase):
    type: Literal["cbs"] = Field(description="Conditional Bias Scan (separation / sufficiency).")
    protected: ProtectedSpec = Field(description="The protected class.")
    fairness: Literal["separation", "sufficiency"] | None = Field(
        default=None, description="Fairness definition (or give `metric`)."
    )
    on: Literal["recommendations", "predictions"] | None = Field(
        default=None, description="Audit the binary recommendations or the probabilities."
    )
    condition: Literal[0, 1] | None = Field(
        default=None,
        description="Value-conditional filter C = 0/1 (C = outcome for separation, recommendation "
        "for sufficiency); null = all values (C is a model feature).",
    )
    event: Literal[0, 1] = Field(
        default=1, description="1: the metric of I; 0: of 1 - I (e.g. FNR, TNR, FDR, NPV)."
    )
    metric: MetricName | None = Field(
        default=None,
        description="Shorthand for fairness/on/condition/event: fpr tpr fnr tnr ppv for fdr npv "
        "bpc bnc (= fpe) cal.",
    )
    direction: Literal["positive", "negative", "harm"] = Field(
        default="harm",
        description="positive: protected metric higher than comparable non-protected; negative: "
        "lower; harm: the harmful direction of methods.md §3.2.",
    )
    adverse: Literal[0, 1] = Field(
        default=1,
        description="Value of outcome/recommendation that is adverse (1: re-offence, high risk). "
        "0 flips every harm direction.",
    )
    penalty: float = Field(default=1.0, ge=0, description="Complexity penalty (paper default 1).")
    model_attributes: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Columns of both models (numeric standardised, others one-hot); default: all "
        "attributes except the protected column.",
    )
    models: CbsModels | None = Field(default=None, description="Model types.")
    expectations: str | None = Field(
        default=None, description="Column supplying I-hat directly (skips both models)."
    )
    threshold: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="P_bin = prediction >= threshold when columns.recommendation is not set.",
    )

    @model_validator(mode="before")
    @classmethod
    def _yaml_on_key(cls, data: Any) -> Any:
        """YAML 1.1 reads the bare key ``on`` as boolean true; accept it as written."""
        if isinstance(data, dict) and True in data and "on" not in data:
            data = {("on" if key is True else key): value for key, value in data.items()}
        return data

    @model_validator(mode="after")
    def _cell(self) -> CbsSpec:
        if self.metric is not None:
            fairness, on, condition, event = METRICS[self.metric]
            for key, implied in (
                ("fairness", fairness),
                ("on", on),
                ("condition", condition),
                ("event", event),
            ):
                if key in self.model_fields_set and getattr(self, key) != implied:
                    raise rule_error(
                        f"metric {self.metric} implies {key}: {implied}, not {getattr(self, key)}",
                        key,
                    )
        elif self.fairness is None or self.on is None:
            raise rule_error("give `metric`, or both `fairness` and `on`", "fairness")
        fairness, on, condition, _ = self.cell
        if fairness == "sufficiency" and on == "predictions" and condition is not None:
            raise rule_error(
                "sufficiency for predictions is never value-conditional (C = P is continuous); "
                "set condition: null",
                "condition",
            )
        return self

    @property
    def cell(self) -> tuple[str, str, int | None, int]:
        if self.metric is not None:
            return METRICS[self.metric]
        assert self.fairness is not None and self.on is not None
        return self.fairness, self.on, self.condition, self.event

    @property
    def direction_code(self) -> int:
        if self.direction == "positive":
            return 1
        if self.direction == "negative":
            return -1
        return harm_direction(self.cell[0], self.cell[3], self.adverse)


def harm_direction(fairness: str, event: int, adverse: int = 1) -> int:
    """methods.md §3.2: separation harm = more adverse predictions (positive for event 1);
    sufficiency harm = lower adverse-outcome rate at equal prediction (negative for event 1)."""
    d = 1 if fairness == "separation" else -1
    if event == 0:
        d = -d
    return d if adverse == 1 else -d


def metric_name(fairness: str, on: str, condition: int | None, event: int, names: dict) -> str:
    y = names.get("outcome", "outcome")
    r = names.get("recommendation", "recommendation")
    if fairness == "separation":
        what = (
            f"mean prediction{' (event 0: 1 - P)' if event == 0 else ''}"
            if on == "predictions"
            else f"rate of {r} = {event}"
        )
        given = f" given {y} = {condition}" if condition is not None else ""
        return what + given
    what = f"rate of {y} = {event}"
    if on == "predictions":
        return what + " at equal prediction"
    return what + (f" given {r} = {condition}" if condition is not None else "")


def _extra_columns(spec: CbsSpec) -> dict[str, str]:
    columns = {spec.protected.column: "protected.column"}
    if spec.expectations is not None:
        columns[spec.expectations] = "expectations"
    for i, name in enumerate(spec.model_attributes or []):
        columns.setdefault(name, f"model_attributes[{i}]")
    return columns


def _protected_classes(spec: CbsSpec, raw: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(label, indicator) per run; errors name the spec field."""
    from fairscan.errors import ScanError

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


def run_cbs(spec: CbsSpec, ctx: ScanContext) -> ScanResult:
    from fairscan.engine import cbs as engine
    from fairscan.engine.randomization import child_seed, run_replicates, search_seed, summarize
    from fairscan.errors import ScanError
    from fairscan.report.models import (
        CbsCalibration,
        CbsFindingDetail,
        CbsReliabilityBin,
        CbsRun,
        CbsScanInfo,
        Finding,
        ScanResult,
        ScanTiming,
    )
    from fairscan.report.text import describe_subgroup, percent
    from fairscan.scans.mdss_runner import null_distribution, subgroup_labels

    started = time.perf_counter()
    data = ctx.data
    fairness, on, condition, event = spec.cell
    settings = engine.CbsSettings(
        family=fairness,
        on=on,
        condition=condition,
        event=event,
        direction=spec.direction_code,
        penalty=spec.penalty,
        restarts=spec.restarts,
        propensity_model=spec.models.propensity if spec.models else "logistic",
        outcome_model=spec.models.outcome if spec.models else "logistic",
    )
    column = spec.protected.column
    if column not in data.extra:
        raise ScanError(f"protected column {column!r} was not loaded", field="protected.column")
    raw = data.extra[column]

    # scan attributes: every attribute except the protected column (methods.md §3.1)
    keep = [j for j, a in enumerate(data.attributes) if a.name != column]
    if not keep:
        raise ScanError(
            "no scan attribute is left once the protected column is removed",
            field="protected.column",
            hint="add attributes other than the protected column",
        )
    attributes = [data.attributes[j] for j in keep]
    codes = np.ascontiguousarray(data.codes[:, keep])
    names = list(spec.model_attributes or [a.name for a in attributes])
    if column in names:
        raise ScanError(
            "model_attributes must not include the protected column (it defines A)",
            field="model_attributes",
        )

    prediction = data.prediction
    recommendation = (
        data.recommendation.astype(np.float64) if data.recommendation is not None else None
    )
    needs_prediction = on == "predictions" or (recommendation is None)
    if needs_prediction and prediction is None:
        raise ScanError(
            f"cbs on {on} needs a prediction column"
            + ("" if on == "predictions" else " (or columns.recommendation)"),
            field="columns.prediction",
        )
    if recommendation is None and prediction is not None:
        recommendation = (prediction >= spec.threshold).astype(np.float64)
    expectations = None
    if spec.expectations is not None:
        values = data.extra.get(spec.expectations)
        if values is None or values.dtype == object or np.any((values < 0) | (values > 1)):
            raise ScanError(
                f"expectations column {spec.expectations!r} must hold probabilities in [0, 1]",
                field="expectations",
            )
        expectations = values.astype(np.float64)
    cbs_data = engine.CbsData(
        codes=codes,
        features=design_matrix(ctx, names) if expectations is None else np.zeros((data.n_rows, 0)),
        outcome=data.outcome.astype(np.float64),
        prediction=None if prediction is None else prediction.astype(np.float64),
        recommendation=recommendation,
        expectations=expectations,
    )
    classes = _protected_classes(spec, raw)
    alpha_run = ctx.alpha / len(classes)
    metric = metric_name(fairness, on, condition, event, ctx.role_names)
    direction = "positive" if settings.direction > 0 else "negative"
    warnings: list[str] = []
    runs: list[CbsRun] = []
    findings: list[Finding] = []
    t_search = 0.0
    t_sig = 0.0

    def calibration(model: str, fitted_on: str, pred, label, weight) -> CbsCalibration:  # type: ignore[no-untyped-def]
        brier, table = engine.reliability(pred, label, weight)
        return CbsCalibration(
            model=model,
            fitted_on=fitted_on,
            rows=len(pred),
            brier=brier,
            bins=[
                CbsReliabilityBin(
                    low=b[0],
                    high=b[1],
                    rows=b[2],
                    weight=b[3],
                    mean_predicted=b[4],
                    mean_observed=b[5],
                )
                for b in table
            ],
        )

    for index, (label, a) in enumerate(classes):
        mark = time.perf_counter()
        outcome = engine.run(cbs_data, settings, a, search_seed(child_seed(ctx.seed, 0, index)))
        t_search += time.perf_counter() - mark
        est = outcome.estimate
        base = {
            "protected": label,
            "scanned_rows": int(est.protected.sum()),
            "comparison_rows": int(est.comparison.sum()),
            "alpha": alpha_run,
        }
        if not est.auditable:
            runs.append(CbsRun(status="not_auditable", reason=est.reason, **base))
            warnings.append(f"{label}: not auditable: {est.reason}")
            continue
        best = outcome.best
        assert best is not None and outcome.problem is not None
        null = None
        mark = time.perf_counter()
        if ctx.replicates > 0:
            ctx.progress.start(f"{spec.id}: permutations ({label})", ctx.replicates)
            try:
                job = engine.CbsPermutation(cbs_data, a, settings, child_seed(ctx.seed, 1, index))
                scores = run_replicates(
                    job, ctx.replicates, workers=ctx.workers, on_progress=ctx.progress.advance
                )
            finally:
                ctx.progress.done()
            null = summarize(best.score, scores, alpha_run)
        t_sig += time.perf_counter() - mark

        pa_cal = out_cal = None
        if est.propensity is not None:
            pa_cal = calibration(
                settings.propensity_model,
                "all rows (label: protected)",
                est.propensity,
                a.astype(np.float64),
                None,
            )
        if est.fitted is not None:
            assert est.training_label is not None
            out_cal = calibration(
                settings.outcome_model,
                "non-protected rows after the filter, ATT-weighted"
                + (" (label: mean prediction, Case B)" if settings.gaussian else ""),
                est.fitted,
                est.training_label,
                est.weights,
            )
        if est.max_weight_ratio is not None and est.max_weight_ratio > 100:
            warnings.append(
                f"{label}: the largest propensity weight is {est.max_weight_ratio:.0f}x the median"
            )
        has = best.llr > 0.0
        status = "no_finding" if not has else ("untested" if null is None else None)
        if status is None:
            assert null is not None
            status = "significant" if null.significant else "not_significant"
        runs.append(
            CbsRun(
                status=status,
                score=best.score,
                llr=best.llr,
                p_value=null.p_value if null else None,
                significant=null.significant if null else None,
                sigma=est.sigma,
                mean_delta=float(np.mean(est.observed)) if settings.gaussian else None,
                max_weight_ratio=est.max_weight_ratio,
                null=null_distribution(null, alpha_run),
                propensity_calibration=pa_cal,
                outcome_calibration=out_cal,
                **base,
            )
        )
        if not has:
            continue
        # the paper's report columns: metric in S* for protected vs non-protected rows
        pcodes = outcome.problem.codes
        local_in = np.ones(pcodes.shape[0], bool)
        for j in range(pcodes.shape[1]):
            local_in &= best.selection[j, pcodes[:, j]]
        inside_all = engine.members(codes, outcome.problem, best.selection)
        ev = np.asarray(cbs_data.event(settings), dtype=np.float64)
        if event == 0:
            ev = 1.0 - ev
        prot_rows = est.protected & inside_all
        comp_rows = est.comparison & inside_all
        assert est.expected is not None
        p_metric = float(ev[prot_rows].mean())
        p_expected = float(est.expected[local_in].mean())
        c_metric = float(ev[comp_rows].mean()) if comp_rows.any() else None
        subgroup = subgroup_labels(attributes, outcome.problem, best.selection)
        value = best.log_q if settings.gaussian else best.q
        param = "mu" if settings.gaussian else "q"
        description = (
            f"Among {label} rows{'' if condition is None else ' with the filter applied'}, the "
            f"{int(prot_rows.sum())} with {describe_subgroup(subgroup)} have a {metric} of "
            f"{percent(p_metric)} where comparable non-protected records imply "
            f"{percent(p_expected)}; the same subgroup among non-protected rows has "
            f"{percent(c_metric)} ({int(comp_rows.sum())} rows). {param} = {value:.3f}."
        )
        findings.append(
            Finding(
                subgroup=subgroup,
                score=best.score,
                llr=best.llr,
                penalty_cost=spec.penalty * best.penalty_units,
                size=int(prot_rows.sum()),
                observed_count=float(ev[prot_rows].sum()),
                expected_count=float(est.expected[local_in].sum()),
                observed_rate=p_metric,
                expected_rate=p_expected,
                outside_rate=c_metric,
                q=float(np.exp(best.log_q)),
                p_value=null.p_value if null else None,
                significant=null.significant if null else None,
                null_quantile=null.quantile if null else None,
                description=description,
                cbs=CbsFindingDetail(
                    protected=label,
                    metric=metric,
                    parameter=param,
                    value=float(value),
                    protected_rows=int(prot_rows.sum()),
                    protected_metric=p_metric,
                    protected_expected=p_expected,
                    comparison_rows=int(comp_rows.sum()),
                    comparison_metric=c_metric,
                ),
            )
        )

    statuses = [r.status for r in runs]
    if all(s == "not_auditable" for s in statuses):
        status = "not_auditable"
    elif "significant" in statuses:
        status = "significant"
    elif "not_significant" in statuses:
        status = "not_significant"
    elif "untested" in statuses:
        status = "untested"
    else:
        status = "no_finding"
    findings.sort(key=lambda f: (not f.significant, f.p_value or 1.0, -f.score))
    single = runs[0] if len(runs) == 1 else None
    done = time.perf_counter()
    cond_text = "all values" if condition is None else f"condition {condition}"
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=status,
        parameters={
            **spec.model_dump(mode="json"),
            "direction_effective": direction,
            "alpha": ctx.alpha,
            "replicates": ctx.replicates,
        },
        timing=ScanTiming(
            search_seconds=t_search, significance_seconds=t_sig, total_seconds=done - started
        ),
        findings=findings,
        null_distribution=single.null if single is not None else None,
        cbs=CbsScanInfo(
            cell=f"{fairness} for {on}, {cond_text}, event {event}: {metric}",
            family=fairness,
            on=on,
            condition=condition,
            event=event,
            direction=direction,
            likelihood="gaussian" if settings.gaussian else "bernoulli",
            expectations=(
                f"column {spec.expectations}"
                if spec.expectations is not None
                else f"{settings.outcome_model} outcome model weighted by a "
                f"{settings.propensity_model} propensity model on {', '.join(names) or '(none)'}"
            ),
            runs=runs,
        ),
        warnings=warnings,
    )


CBS = ScanType(
    type="cbs",
    spec_model=CbsSpec,
    runner=run_cbs,
    needs=("outcome",),
    title="Conditional Bias Scan",
    summary=(
        "Scans the records of a protected class for the subgroup whose event (recommendation, "
        "prediction or outcome) deviates most from what comparable non-protected records imply "
        "(separation: given the outcome; sufficiency: given the prediction). Null hypothesis: "
        "the event is independent of the protected class given the conditioning value and the "
        "model attributes; tested by permuting the protected class and refitting everything. "
        "Note: the harm direction of the false omission rate / NPV cells concerns people who "
        "already received the favourable recommendation."
    ),
    extra_columns=_extra_columns,
)
