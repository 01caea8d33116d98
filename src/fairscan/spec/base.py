"""Base classes shared by the audit spec and the per-scan spec models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from fairscan.spec.constraints import PENALTY, RESTARTS

RULE_ERROR_TYPE = "spec_rule"


class StrictModel(BaseModel):
    """Unknown keys are errors: a misspelt key must never silently fall back to a default.

    ``strict=True`` stops YAML 1.1 booleans from turning into numbers (``restarts: yes``
    would otherwise be read as 1 and ``penalty: on`` as 1.0) and floats from being
    truncated into integer fields. Integers are still accepted where a float is expected.
    ``allow_inf_nan=False`` rejects ``.nan``, ``.inf`` and ``-.inf`` in every float field: a
    non-finite tolerance, target or penalty would otherwise pass a CI gate silently.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True
    )


def rule_error(message: str, *loc: str | int, hint: str | None = None) -> PydanticCustomError:
    """Error for a cross-field rule, to raise from a validator.

    ``loc`` is relative to the model being validated (e.g. ``("scans", 2, "id")`` in
    ``AuditSpec``); the spec loader appends it to the error's ``loc`` to point at the exact
    key, since an error raised in a model validator is otherwise located at the model itself.
    Avoid ``{name}`` placeholders in ``message``: pydantic formats them from the context.
    ``hint`` becomes the issue's ``help:`` line.
    """
    context: dict[str, object] = {"spec_loc": tuple(loc)}
    if hint is not None:
        context["spec_hint"] = hint
    return PydanticCustomError(RULE_ERROR_TYPE, message, context)


SCAN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


# A label value as written in YAML: the positive class of an outcome, a protected value, ...
Scalar = str | int | float | bool


class ScanSpecBase(StrictModel):
    """Fields every scan has. Each scan module subclasses this with a ``type`` literal."""

    id: str = Field(
        pattern=SCAN_ID_PATTERN,
        description="Identifier of the scan, unique within the spec; used in reports.",
        examples=["fpr"],
    )
    type: str = Field(description="The scan type (one of the registered types).")
    outcome: str | None = Field(
        default=None,
        min_length=1,
        description="This scan's outcome column, instead of columns.outcome.",
    )
    positive: Scalar | None = Field(
        default=None,
        description="The positive label of this scan's outcome column (default: columns.positive, "
        "else 1/true). bias_scan with outcome_type nominal: the one class scanned one-vs-rest "
        "(against its class_probabilities column or `prediction`).",
    )
    prediction: str | None = Field(
        default=None,
        min_length=1,
        description="This scan's prediction (score) column, instead of columns.prediction.",
    )


class DecisionOverrides(StrictModel):
    """Scan-level override of the recommendation rule (``columns.threshold``)."""

    threshold: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Derive this scan's recommendation as prediction >= threshold (see "
        "threshold_rule), overriding columns.recommendation / columns.threshold. Any real "
        "number: the prediction may be a score, e.g. a decile 1-10 with threshold 5.",
    )
    threshold_rule: Literal["ge", "gt"] | None = Field(
        default=None,
        description="ge = prediction >= threshold, gt = prediction > threshold (default: "
        "columns.threshold_rule, which defaults to ge).",
    )


class MdssScanSpecBase(ScanSpecBase):
    """Settings shared by the multidimensional subset scans (methods.md §1.4)."""

    penalty: float = Field(
        ge=PENALTY.ge,
        default=0.0,
        description=(
            "Complexity penalty per attribute value in a constrained attribute "
            "(J(S) = F(S) - penalty * c(S)); 0 = no penalty."
        ),
    )
    restarts: int = Field(
        ge=RESTARTS.ge,
        le=RESTARTS.le,
        default=500,
        description="Random restarts of the coordinate ascent (restart 1 starts from all values).",
    )


# a given subgroup: attribute -> value(s), or a filter string (``race = 'A' and sex = 'Male'``)
SubgroupEntry = dict[str, Scalar | list[Scalar]] | str

SUBGROUPS_DOC = (
    "Given subgroups to test instead of searching: each an attribute -> value(s) mapping "
    "(e.g. {race: African-American, sex: Male}) or a filter string in the filter grammar "
    "(e.g. \"race = 'African-American' and sex = 'Male'\"; AND of =, !=, IN, NOT IN, IS NULL, "
    "and <, <=, >, >=, BETWEEN on ordered or discretised attributes, at bin edges). Each is "
    "scored and tested alone under the scan's null model, with no search and so no search "
    "correction."
)


class FixedSubgroups(StrictModel):
    """``subgroups:``: test given subgroups instead of searching (issue 26)."""

    subgroups: list[SubgroupEntry] | None = Field(
        default=None, min_length=1, description=SUBGROUPS_DOC
    )

    @field_validator("subgroups")
    @classmethod
    def _entries_not_empty(cls, value: list[SubgroupEntry] | None) -> list[SubgroupEntry] | None:
        for k, entry in enumerate(value or []):
            if not entry or (isinstance(entry, str) and not entry.strip()):
                raise rule_error(
                    "a subgroup is empty: it would be everyone",
                    k,
                    hint="write e.g. {sex: Male} or \"sex = 'Male'\"",
                )
            if isinstance(entry, dict):
                for name, values in entry.items():
                    if isinstance(values, list) and not values:
                        raise rule_error(
                            f"no value given for {name!r}", k, name, hint="list one value or more"
                        )
        return value

    @model_serializer(mode="wrap")
    def _omit_absent_subgroups(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A scan that searches dumps as it did before ``subgroups`` existed (reports, the
        resolved spec in provenance): the key appears only where subgroups are given."""
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("subgroups", ...) is None:
            del dumped["subgroups"]
        return dumped


ALPHA_DOC = (
    "Berk-Jones level(s) (score: berk_jones only): a number in (0, 1), or a grid such as "
    "[0.01, 0.05, 0.1]; with a grid the statistic is the maximum over it and the randomization "
    "test takes the same maximum in every replicate."
)


def score_rule_errors(score: str, alpha: float | list[float] | None) -> None:
    """The rules of `alpha` (Berk-Jones levels): needed by berk_jones, meaningless otherwise."""
    if score != "berk_jones":
        if alpha is not None:
            raise rule_error(
                f"`alpha` in a scan is the Berk-Jones level; it has no meaning with score {score}",
                "alpha",
                hint="the significance level belongs under `significance.alpha`; for a "
                "Berk-Jones scan set score: berk_jones",
            )
        return
    if alpha is None:
        raise rule_error(
            "score berk_jones needs `alpha`, the level the rates are compared with",
            "score",
            hint="add e.g. alpha: 0.05, or a grid alpha: [0.01, 0.05, 0.1]",
        )
    grid = alpha if isinstance(alpha, list) else [alpha]
    if not grid:
        raise rule_error("the `alpha` grid is empty", "alpha", hint="give at least one level")
    for i, level in enumerate(grid):
        if not 0.0 < level < 1.0:
            where: tuple[str | int, ...] = ("alpha", i) if isinstance(alpha, list) else ("alpha",)
            raise rule_error(
                f"a Berk-Jones level must lie strictly between 0 and 1, got {level:g}",
                *where,
                hint="e.g. alpha: 0.05",
            )
    if len(set(grid)) != len(grid):
        raise rule_error("the `alpha` grid repeats a level", "alpha")
