"""Conditional Bias Scan (methods.md §3): separation/sufficiency violations of a protected class.

Compares each protected record's event I with I-hat = E[I | C, X] estimated from comparable
non-protected records (propensity-weighted outcome model) and scans the protected records for
the subgroup deviating most (Bernoulli score; Gaussian on Delta for separation-for-predictions).
Significance: permutation of the protected indicator, refitting everything per replicate.

The recommendation (cells on recommendations) follows the one rule of every scan
(:mod:`fairscan.scans.roles`): the scan's ``threshold``, else ``columns.recommendation``, else
``columns.threshold``. The runner is split into :func:`_inputs` (validate and prepare),
:func:`_run_class` (one protected class: models, scan, permutation test, finding) and
:func:`_result` (the report).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from fairscan.data.table import EncodedAttribute
from fairscan.engine import cbs as engine
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
    NullDistribution,
    ReportModel,
    ScanResult,
    ScanStatus,
    ScanTiming,
    scan_status,
)
from fairscan.report.text import fmt_number, fmt_p, percent
from fairscan.scans.base import Role, ScanContext, ScanType
from fairscan.scans.features import design_matrix
from fairscan.scans.labels import subgroup_label
from fairscan.scans.mdss_runner import (
    finding_markdown,
    mdss_finding,
    null_distribution,
    subgroup_labels,
)
from fairscan.spec.base import DecisionOverrides, MdssScanSpecBase, StrictModel, rule_error

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


class CbsSpec(MdssScanSpecBase, DecisionOverrides):
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


def metric_name(
    fairness: str, on: str, condition: int | None, event: int, names: Mapping[str, str]
) -> str:
    """The Table 1 metric in words, with the scan's column names."""
    y = names.get("outcome", "outcome")
    r = names.get("recommendation", "recommendation")
    if " " in r:  # a derived recommendation reads as its rule, e.g. (prob_decile >= 0.5)
        r = f"({r})"
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


def _needs(spec: CbsSpec) -> tuple[Role, ...]:
    """The outcome, plus the recommendation or the prediction (as a probability) by ``on``."""
    on = spec.cell[1]
    return ("outcome", "recommendation" if on == "recommendations" else "probability")


# --- detail models (findings[].detail["cbs"], scans[].detail["cbs"]) ---------------------------


class CbsFindingDetail(ReportModel):
    """A CBS finding as in the paper's tables: the metric in S* for protected vs other rows."""

    protected: str = Field(description="The protected class, e.g. 'race = African-American'.")
    metric: str = Field(description="The named metric of Table 1 (event applied).")
    parameter: Literal["q", "mu"] = Field(
        description="q: odds multiplier (Bernoulli); mu: mean shift of Delta in log-odds "
        "(Gaussian; q = exp(mu))."
    )
    value: float = Field(description="The direction-constrained MLE of the parameter in S*.")
    protected_rows: int = Field(description="Scanned protected rows inside S*.")
    protected_metric: float | None = Field(description="Mean of I among them.")
    protected_expected: float | None = Field(description="Mean of I-hat among them.")
    comparison_rows: int = Field(description="Non-protected rows in the same subgroup and filter.")
    comparison_metric: float | None = Field(description="Mean of I among them.")


class CbsReliabilityBin(ReportModel):
    low: float
    high: float
    rows: int
    weight: float
    mean_predicted: float
    mean_observed: float


class CbsCalibration(ReportModel):
    """Calibration summary of one fitted model (weighted Brier score, reliability bins)."""

    model: str
    fitted_on: str
    rows: int
    brier: float
    bins: list[CbsReliabilityBin]


class CbsRun(ReportModel):
    """One CBS run for one protected class (several with each_value, Bonferroni over runs)."""

    protected: str
    status: ScanStatus
    reason: str | None = Field(default=None, description="Why the run is not auditable.")
    scanned_rows: int = Field(description="Protected rows after the value filter.")
    comparison_rows: int = Field(description="Non-protected rows after the value filter.")
    alpha: float = Field(description="Significance level of this run (alpha / runs).")
    score: float | None = None
    llr: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    sigma: float | None = Field(default=None, description="Gaussian: SD of Delta (ddof 1).")
    mean_delta: float | None = Field(default=None, description="Gaussian: mean Delta (§3.5).")
    max_weight_ratio: float | None = Field(
        default=None, description="Largest ATT weight / median weight."
    )
    null: NullDistribution | None = None
    propensity_calibration: CbsCalibration | None = None
    outcome_calibration: CbsCalibration | None = None


class CbsScanDetail(ReportModel):
    """``scans[].detail["cbs"]``: the Table 1 cell, how I-hat was obtained, one entry per run."""

    cell: str = Field(description="The Table 1 cell in words.")
    family: str
    on: str
    condition: int | None
    event: int
    direction: str
    likelihood: Literal["bernoulli", "gaussian"]
    expectations: str = Field(description="How I-hat was obtained.")
    runs: list[CbsRun]


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


@dataclass
class Timer:
    search: float = 0.0
    significance: float = 0.0
    started: float = field(default_factory=time.perf_counter)


def _settings(spec: CbsSpec) -> engine.CbsSettings:
    fairness, on, condition, event = spec.cell
    return engine.CbsSettings(
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
    ctx.progress.start(f"{spec.id}: permutations ({label})", ctx.replicates)
    try:
        job = engine.CbsPermutation(inputs.data, a, inputs.settings, child_seed(ctx.seed, 1, index))
        scores = run_replicates(
            job, ctx.replicates, workers=ctx.workers, on_progress=ctx.progress.advance
        )
    finally:
        ctx.progress.done()
    return summarize(observed, scores, inputs.alpha_run)


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
    settings: engine.CbsSettings, est: engine.CbsEstimate, a: np.ndarray
) -> tuple[CbsCalibration | None, CbsCalibration | None]:
    """Calibration of the propensity and the outcome model (None when not fitted)."""
    propensity = outcome = None
    if est.propensity is not None:
        propensity = _calibration(
            settings.propensity_model,
            "all rows (label: protected)",
            est.propensity,
            a.astype(np.float64),
            None,
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
    propensity, fitted = _calibrations(inputs.settings, est, a)
    return CbsRun(
        status=_run_status(best.llr > 0.0, null),
        score=best.score,
        llr=best.llr,
        p_value=null.p_value if null else None,
        significant=null.significant if null else None,
        sigma=est.sigma,
        mean_delta=float(np.mean(est.observed))
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
    n_prot, n_comp = int(prot_rows.sum()), int(comp_rows.sum())
    p_metric = float(ev[prot_rows].mean())
    p_expected = float(est.expected[local_in].mean())
    c_metric = float(ev[comp_rows].mean()) if comp_rows.any() else None
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
        reference_count=None if supplied else int(est.comparison.sum()),
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
    finding.detail["observed_count"] = float(ev[prot_rows].sum())
    finding.detail["expected_count"] = float(est.expected[local_in].sum())
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
    timer: Timer,
) -> CbsRunOutput:
    """One protected class: models and scan, permutation test, run record and finding."""
    mark = time.perf_counter()
    seed = search_seed(child_seed(ctx.seed, 0, index))
    outcome = engine.run(inputs.data, inputs.settings, a, seed)
    timer.search += time.perf_counter() - mark
    est = outcome.estimate
    base: dict[str, Any] = {
        "protected": label,
        "scanned_rows": int(est.protected.sum()),
        "comparison_rows": int(est.comparison.sum()),
        "alpha": inputs.alpha_run,
    }
    if not est.auditable:
        run = CbsRun(status="not_auditable", reason=est.reason, **base)
        return CbsRunOutput(run, None, [f"{label}: not auditable: {est.reason}"])
    assert outcome.best is not None
    mark = time.perf_counter()
    null = _permutation_test(spec, ctx, inputs, index, label, a, outcome.best.score)
    timer.significance += time.perf_counter() - mark
    warnings = []
    if est.max_weight_ratio is not None and est.max_weight_ratio > 100:
        warnings.append(
            f"{label}: the largest propensity weight is {est.max_weight_ratio:.0f}x the median"
        )
    run = _run_record(inputs, base, outcome, null, a)
    finding = _finding(spec, inputs, label, outcome, null) if outcome.best.llr > 0.0 else None
    return CbsRunOutput(run, finding, warnings)


# --- result ----------------------------------------------------------------------------------


def _status(runs: list[CbsRun], findings: list[Finding], tested: bool) -> ScanStatus:
    if all(run.status == "not_auditable" for run in runs):
        return "not_auditable"
    return scan_status(findings, tested=tested)


def _order(finding: Finding) -> tuple[bool, float, float]:
    """Most important first: significant, then by p-value, then by score."""
    p = finding.p_value if finding.p_value is not None else 1.0
    return (finding.significant is not True, p, -(finding.statistic.value or 0.0))


def _scan_detail(spec: CbsSpec, inputs: CbsInputs, runs: list[CbsRun]) -> CbsScanDetail:
    settings = inputs.settings
    direction = "positive" if settings.direction > 0 else "negative"
    cond_text = "all values" if settings.condition is None else f"condition {settings.condition}"
    if spec.expectations is not None:
        expectations = f"column {spec.expectations}"
    else:
        expectations = (
            f"{settings.outcome_model} outcome model weighted by a {settings.propensity_model} "
            f"propensity model on {', '.join(inputs.model_names) or '(none)'}"
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
        runs=runs,
    )


def _result(
    spec: CbsSpec,
    ctx: ScanContext,
    inputs: CbsInputs,
    outputs: list[CbsRunOutput],
    timer: Timer,
) -> ScanResult:
    runs = [o.run for o in outputs]
    findings = sorted((o.finding for o in outputs if o.finding is not None), key=_order)
    detail = _scan_detail(spec, inputs, runs)
    done = time.perf_counter()
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=_status(runs, findings, tested=ctx.replicates > 0),
        parameters={
            **spec.model_dump(mode="json"),
            "direction_effective": detail.direction,
            "alpha": ctx.alpha,
            "replicates": ctx.replicates,
        },
        timing=ScanTiming(
            search_seconds=timer.search,
            significance_seconds=timer.significance,
            total_seconds=done - timer.started,
        ),
        findings=findings,
        null_distribution=runs[0].null if len(runs) == 1 else None,
        detail={"cbs": detail.model_dump(mode="json")},
        warnings=[w for o in outputs for w in o.warnings],
    )


def run_cbs(spec: CbsSpec, ctx: ScanContext) -> ScanResult:
    timer = Timer()
    inputs = _inputs(spec, ctx)
    outputs = [
        _run_class(spec, ctx, inputs, index, label, a, timer)
        for index, (label, a) in enumerate(inputs.classes)
    ]
    return _result(spec, ctx, inputs, outputs, timer)


# --- render hooks ----------------------------------------------------------------------------


def _calibration_lines(title: str, cal: CbsCalibration) -> list[str]:
    lines = [
        f"{title}: {cal.model}, fitted on {cal.fitted_on} ({cal.rows} rows); "
        f"Brier score {cal.brier:.4f}.",
        "",
        "| predicted in | rows | weight | mean predicted | mean observed |",
        "|---|---:|---:|---:|---:|",
    ]
    for b in cal.bins:
        lines.append(
            f"| [{b.low:.1f}, {b.high:.1f}) | {b.rows} | {b.weight:.1f} | {b.mean_predicted:.3f} "
            f"| {b.mean_observed:.3f} |"
        )
    lines.append("")
    return lines


def _detail(scan: ScanResult) -> CbsScanDetail | None:
    raw = scan.detail.get("cbs")
    return None if raw is None else CbsScanDetail.model_validate(raw)


def render_markdown(scan: ScanResult) -> list[str]:
    """The cell, the runs table, sigma notes and the calibration of both models per run."""
    info = _detail(scan)
    if info is None:
        return []
    lines = [
        f"CBS cell: {info.cell}; direction {info.direction}; {info.likelihood} score; "
        f"I-hat from {info.expectations}.",
        "",
        "| protected class | status | scanned | comparison | J(S*) | F(S*) | p-value | alpha |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in info.runs:
        lines.append(
            f"| {run.protected} | {run.status.replace('_', ' ')} | {run.scanned_rows} "
            f"| {run.comparison_rows} | {fmt_number(run.score)} | {fmt_number(run.llr)} "
            f"| {fmt_p(run.p_value)} | {run.alpha:.4g} |"
        )
    lines.append("")
    for run in info.runs:
        if run.reason:
            lines += [f"{run.protected}: not auditable: {run.reason}.", ""]
        if run.sigma is not None:
            lines += [
                f"{run.protected}: sigma = {run.sigma:.4f}, mean Delta = "
                f"{fmt_number(run.mean_delta, 4)} (a non-zero mean can be a Jensen gap, not "
                "bias; the permutation test calibrates it).",
                "",
            ]
        if run.propensity_calibration is not None:
            lines += _calibration_lines(
                f"{run.protected}: propensity model", run.propensity_calibration
            )
        if run.outcome_calibration is not None:
            lines += _calibration_lines(f"{run.protected}: outcome model", run.outcome_calibration)
    return lines


def render_finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures, then the same subgroup among the non-protected rows."""
    lines = finding_markdown(scan, finding)
    raw = finding.detail.get("cbs")
    if raw is None:
        return lines
    d = CbsFindingDetail.model_validate(raw)
    return [
        *lines,
        f"{d.protected}: {d.metric} {percent(d.protected_metric, 1)} in S* "
        f"({d.protected_rows} rows) vs {percent(d.protected_expected, 1)} expected; the same "
        f"subgroup among non-protected rows: {percent(d.comparison_metric, 1)} "
        f"({d.comparison_rows} rows); {d.parameter} = {d.value:.3f}.",
        "",
    ]


def render_html(scan: ScanResult) -> str:
    """The cell and the runs table."""
    from fairscan.report.html import escape, html_table

    info = _detail(scan)
    if info is None:
        return ""
    rows = [
        [
            r.protected,
            r.status.replace("_", " "),
            fmt_number(r.score, 2),
            fmt_p(r.p_value),
            f"{r.alpha:.4g}",
            r.reason or "",
        ]
        for r in info.runs
    ]
    table = html_table(
        ["protected", "status", "score", "p-value", "alpha", "note"], rows, {2, 3, 4}
    )
    return f"<p>{escape(info.cell)}</p>{table}"


def render_finding_html(scan: ScanResult, finding: Finding) -> str:
    """A finding's null histogram from its own run, when the scan has several runs (the
    common renderer draws ``scan.null_distribution``, set for a single run)."""
    info = _detail(scan)
    raw = finding.detail.get("cbs")
    observed = finding.statistic.value
    if info is None or raw is None or observed is None or scan.null_distribution is not None:
        return ""
    protected = CbsFindingDetail.model_validate(raw).protected
    run = next((r for r in info.runs if r.protected == protected), None)
    if run is None or run.null is None or not run.null.scores:
        return ""
    from fairscan.report.html import null_histogram

    chart = null_histogram(
        run.null,
        observed,
        caption=f"Permutation null of the run for {protected} (alpha {run.alpha:.4g}).",
    )
    return f'<div class="charts">{chart}</div>'


CBS = ScanType(
    type="cbs",
    spec_model=CbsSpec,
    runner=run_cbs,
    needs=_needs,
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
    render=RenderHooks(
        markdown=render_markdown,
        html=render_html,
        finding_markdown=render_finding_markdown,
        finding_html=render_finding_html,
    ),
)
