"""The Bias Scan's spec model: outcome types, their scores, and the roles the scan reads."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fairscan.scans.base import Role
from fairscan.spec.base import (
    ALPHA_DOC,
    FixedSubgroups,
    MdssScanSpecBase,
    StrictModel,
    rule_error,
    score_rule_errors,
)


class CriticalValue(StrictModel):
    """Analytic critical value h(alpha) of the Bias Scan (methods.md §2.4b), a screening figure."""

    alpha: float
    profiles: int = Field(
        description="M, the number of distinct covariate profiles in the scanned data."
    )
    h: float
    exceeded: bool
    applicable: bool = Field(
        description="False when the theorem's conditions (penalty 0, negative direction) do not hold."
    )


OutcomeType = Literal["binary", "continuous", "count", "ordinal", "nominal"]
BiasScore = Literal["bernoulli", "berk_jones", "gaussian", "poisson"]

# The scores each outcome type admits (the first is the one a mismatch error suggests).
SCORES_FOR: dict[str, tuple[str, ...]] = {
    "binary": ("bernoulli", "berk_jones"),
    "nominal": ("bernoulli",),
    "continuous": ("gaussian", "berk_jones"),
    "count": ("poisson",),
    "ordinal": ("poisson",),
}


class BiasScanSpec(FixedSubgroups, MdssScanSpecBase):
    type: Literal["bias_scan"] = Field(
        description="Calibration scan: observed outcome vs predicted probability (or mean)."
    )
    direction: Literal["negative", "positive"] = Field(
        default="negative",
        description=(
            "negative = predictions too high (observed outcomes below predicted, q < 1 or "
            "mean shift < 0); positive = predictions too low (observed above predicted)."
        ),
    )
    outcome_type: OutcomeType = Field(
        default="binary",
        description=(
            "What the outcome column holds: binary (0/1, the default), continuous (any real "
            "number; score gaussian), count (non-negative integers; score poisson), ordinal "
            "(ordered codes 0, 1, 2, ... or the labels of `levels`; score poisson on the codes), "
            "nominal (class labels; one scan per class against class_probabilities, or with "
            "`positive: <class>` that class alone, one-vs-rest)."
        ),
    )
    score: BiasScore = Field(
        default="bernoulli",
        description=(
            "bernoulli (binary and nominal outcomes, the default), berk_jones (binary: the "
            "outcome rate against the level `alpha`; continuous: binarised as AIF360 does, "
            "1{outcome > its alpha-quantile}, against alpha), gaussian (continuous: mean shift of the "
            "residuals outcome - prediction), poisson (count, ordinal: rate multiplier of the "
            "expected counts)."
        ),
    )
    alpha: float | list[float] | None = Field(default=None, description=ALPHA_DOC)
    variance_column: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "score gaussian: a column of per-row residual variances sigma_i^2 (> 0). Default: "
            "one pooled variance, the sample variance (ddof 1) of the residuals outcome - "
            "prediction (an error when they are all equal)."
        ),
    )
    class_probabilities: dict[str | int, str] | None = Field(
        default=None,
        min_length=2,
        description=(
            "outcome_type nominal: class label -> column of its predicted probability (the "
            "columns of a row sum to 1). Default: each class's base rate in the data."
        ),
    )
    levels: list[str | int] | None = Field(
        default=None,
        min_length=2,
        description=(
            "outcome_type ordinal: the outcome's labels from lowest to highest (coded 0, 1, "
            "...). Default: the outcome holds the codes themselves (non-negative integers)."
        ),
    )

    @model_validator(mode="after")
    def _type_rules(self) -> BiasScanSpec:
        allowed = SCORES_FOR[self.outcome_type]
        if self.score not in allowed:
            raise rule_error(
                f"score {self.score} does not fit outcome_type {self.outcome_type} "
                f"(it takes {' or '.join(allowed)})",
                "score",
                hint=f"use score: {allowed[0]}, or set outcome_type to what the outcome holds",
            )
        score_rule_errors(self.score, self.alpha)
        continuous_bj = self.score == "berk_jones" and self.outcome_type == "continuous"
        if continuous_bj and isinstance(self.alpha, list) and len(self.alpha) != 1:
            raise rule_error(
                "a continuous outcome is binarised at its alpha-quantile, so Berk-Jones "
                "takes one level here, not a grid",
                "alpha",
                hint="give one alpha, e.g. alpha: 0.3",
            )
        for key, needed, what in (
            ("variance_column", self.score == "gaussian", "score gaussian"),
            ("class_probabilities", self.outcome_type == "nominal", "outcome_type nominal"),
            ("levels", self.outcome_type == "ordinal", "outcome_type ordinal"),
            (
                "positive",
                self.outcome_type in ("binary", "nominal"),
                "outcome_type binary or nominal",
            ),
        ):
            if getattr(self, key) is not None and not needed:
                raise rule_error(f"`{key}` is only used with {what}", key)
        if self.outcome_type == "nominal" and self.prediction is not None:
            if self.positive is None:
                raise rule_error(
                    "a nominal outcome has one predicted probability per class, not one prediction",
                    "prediction",
                    hint="name the columns in class_probabilities: {A: p_A, B: p_B, ...}, or "
                    "scan one class with `positive: <class>` and its probability as prediction",
                )
            if self.class_probabilities is not None:
                raise rule_error(
                    "give the chosen class's probability once: `prediction` or its entry in "
                    "class_probabilities",
                    "prediction",
                )
        if self.levels is not None and len(set(map(str, self.levels))) != len(self.levels):
            raise rule_error("`levels` repeats a label", "levels")
        return self

    def alpha_grid(self) -> tuple[float, ...]:
        if self.alpha is None:
            return ()
        return tuple(self.alpha) if isinstance(self.alpha, list) else (self.alpha,)


def needs(spec: BiasScanSpec) -> tuple[Role, ...]:
    """The outcome and its expectation: the prediction (a probability for a binary outcome),
    or, when no prediction is given, the outcome's overall mean (AIF360's default); nominal
    outcomes read their class probability columns instead."""
    if spec.outcome_type == "nominal":
        # one chosen class (positive) may read its probability from `prediction`
        return ("outcome", "expectation") if spec.prediction is not None else ("outcome",)
    return ("outcome", "expectation")


def extra_columns(spec: BiasScanSpec) -> dict[str, str]:
    return {spec.variance_column: "variance_column"} if spec.variance_column else {}
