"""The spec of the ``ijdi_scan`` scan (methods.md §4): side, lambda (or costs), base rate,
recommendation threshold, loop cap and mitigation; the data roles and columns a spec needs."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from fairscan.scans.base import Role
from fairscan.spec.base import FixedSubgroups, MdssScanSpecBase, StrictModel, rule_error


class IjdiCosts(StrictModel):
    """Relative costs from which lambda is derived (the IJDI paper, App. B)."""

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
        "significant finding is left (the IJDI paper, Section 6)."
    )
    max_corrections: int = Field(
        default=20, ge=1, le=1000, description="Cap on the number of corrections."
    )


class IjdiScanSpec(FixedSubgroups, MdssScanSpecBase):
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


def needs(spec: IjdiScanSpec) -> tuple[Role, ...]:
    """Outcome and recommendation; mitigation also needs the prediction (as a score)."""
    if spec.mitigation is not None:
        return ("outcome", "recommendation", "score")
    return ("outcome", "recommendation")


def extra_columns(spec: IjdiScanSpec) -> dict[str, str]:
    # a per-record threshold column is loaded by the roles (ScanRoles.threshold_columns)
    columns: dict[str, str] = {}
    if spec.base_rate is not None:
        columns[spec.base_rate] = "base_rate"
    for i, name in enumerate(spec.model_attributes or []):
        columns.setdefault(name, f"model_attributes[{i}]")
    return columns
