"""The spec of the ``cbs`` scan (methods.md §3): the protected class, the Table 1 cell, the
models, and the spec-level helpers (harm direction, metric wording, columns, data roles)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from fairscan.errors import Issue
from fairscan.scans.base import Role
from fairscan.scans.roles import outcome_text
from fairscan.spec.base import (
    DecisionOverrides,
    FixedSubgroups,
    MdssScanSpecBase,
    StrictModel,
    rule_error,
)

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
        description="Run one CBS per value of the column (Bonferroni over the runs).",
    )

    @model_validator(mode="after")
    def _one_choice(self) -> ProtectedSpec:
        given = (self.value is not None) + (self.values is not None) + bool(self.each_value)
        if given != 1:
            raise rule_error("give exactly one of `value`, `values` or `each_value: true`")
        return self


MODELS_DOC = (
    "Models of I-hat (the expected metric of comparable non-protected rows), keys below. Default: logistic regression for both, "
    "unregularised (the paper's fits), with a tiny ridge refitted only when separation makes "
    "the unregularised fit diverge (said in the scan's warnings). gradient_boosting (+ Platt "
    "scaling, cv = 3): a training set with fewer than 3 rows of a class makes the run not "
    "auditable with the reason (the paper's '–'). The same rules apply in every permutation "
    "replicate; a replicate whose models cannot be fitted scores 0."
)

SIGMA_DOC = (
    "Gaussian score only (separation for predictions, metrics bpc / bnc / fpe): sigma of "
    "F(S) = (sum of Delta)^2 / (2 sigma^2 |S|), Delta = logit P - logit I-hat. Default 1: the "
    "paper's reported scores. `sd`: the sample SD (ddof 1) of Delta over the "
    "scanned protected rows, recomputed in every permutation replicate and floored at 1e-6; "
    "when all Delta are equal the run is not auditable (degenerate, F = 0). Or a positive "
    "number. F scales as 1/sigma^2 and the penalty does not, so the same penalty weighs more "
    "under a larger sigma (and penalty 1 is not comparable between Gaussian and Bernoulli "
    "scans); with `sd` and a P taking few values Delta is nearly constant and F explodes."
)


class CbsModels(StrictModel):
    propensity: Literal["logistic", "gradient_boosting"] = Field(
        default="logistic",
        description="Model of Pr(A = 1 | X) on all rows (gradient_boosting: gradient boosting + "
        "Platt scaling, CalibratedClassifierCV with cv = 3).",
    )
    outcome: Literal["logistic", "gradient_boosting"] = Field(
        default="logistic",
        description="Model of E[I | C, X] on the ATT-weighted non-protected rows.",
    )
    regularization: Literal["none", "l2"] = Field(
        default="none",
        description="Logistic models: none = unregularised (the paper's fits; a tiny ridge, "
        "C = 1e4, only when separation makes the fit diverge, said in the warnings); l2 = "
        "scikit-learn's L2 penalty with `C`.",
    )
    C: float | None = Field(
        default=None,
        gt=0,
        description="Inverse L2 strength of the logistic models (scikit-learn's C); only with "
        "`regularization: l2` (default 1 there).",
    )

    @model_validator(mode="after")
    def _c_only_with_l2(self) -> CbsModels:
        if self.C is not None and self.regularization != "l2":
            raise rule_error("`C` applies to `regularization: l2` only", "C")
        return self

    @property
    def l2_c(self) -> float:
        return 1.0 if self.C is None else self.C


class CbsSpec(FixedSubgroups, MdssScanSpecBase, DecisionOverrides):
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
        "lower; harm: the metric's harmful direction when outcome 1 and a positive "
        "recommendation are the adverse ones (see the Methods section of the docs: CBS).",
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
    models: CbsModels | None = Field(default=None, description=MODELS_DOC)
    sigma: Literal["sd"] | Annotated[float, Field(gt=0)] = Field(default=1.0, description=SIGMA_DOC)
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
                value = getattr(self, key)
                # a resolved spec (a report's provenance, `audit diff --data`) dumps the
                # defaults beside `metric`: only a value other than the default conflicts
                default = type(self).model_fields[key].default
                if key in self.model_fields_set and value not in (implied, default):
                    raise rule_error(
                        f"metric {self.metric} implies {key}: {implied}, not {value}", key
                    )
        elif self.fairness is None or self.on is None:
            raise rule_error("give `metric`, or both `fairness` and `on`", "fairness")
        fairness, on, condition, _ = self.cell
        sigma_given = "sigma" in self.model_fields_set and self.sigma != 1.0  # 1: the default
        if sigma_given and not (fairness == "separation" and on == "predictions"):
            raise rule_error(
                "`sigma` applies to the Gaussian score only (separation for predictions)", "sigma"
            )
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
    r = names.get("recommendation", "recommendation")
    if " " in r:  # a derived recommendation reads as its rule, e.g. (prob_decile >= 0.5)
        r = f"({r})"
    if fairness == "separation":
        what = (
            f"mean prediction{' (event 0: 1 - P)' if event == 0 else ''}"
            if on == "predictions"
            else f"rate of {r} = {event}"
        )
        given = f" given {outcome_text(names, condition)}" if condition is not None else ""
        return what + given
    what = f"rate of {outcome_text(names, event)}"
    if on == "predictions":
        return what + " at equal prediction"
    return what + (f" given {r} = {condition}" if condition is not None else "")


def extra_columns(spec: CbsSpec) -> dict[str, str]:
    columns = {spec.protected.column: "protected.column"}
    if spec.expectations is not None:
        columns[spec.expectations] = "expectations"
    for i, name in enumerate(spec.model_attributes or []):
        columns.setdefault(name, f"model_attributes[{i}]")
    return columns


def needs(spec: CbsSpec) -> tuple[Role, ...]:
    """The outcome, plus the recommendation or the prediction (as a probability) by ``on``."""
    on = spec.cell[1]
    return ("outcome", "recommendation" if on == "recommendations" else "probability")


def check(spec: CbsSpec, audit: Any) -> list[Issue]:
    """Spec-level checks (``audit validate --no-data``): the protected column defines A, so it
    cannot also be the only scan attribute or a model attribute."""
    column = spec.protected.column
    issues = []
    if all(name == column for name in audit.attributes):
        issues.append(
            Issue(
                "no scan attribute is left once the protected column is removed",
                hint="add attributes other than the protected column",
                field="protected.column",
            )
        )
    for i, name in enumerate(spec.model_attributes or []):
        if name == column:
            issues.append(
                Issue(
                    "model_attributes must not include the protected column (it defines A)",
                    hint=f"remove {column!r} from model_attributes",
                    field=f"model_attributes[{i}]",
                )
            )
    return issues
