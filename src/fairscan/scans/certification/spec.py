"""The spec of the ``certify`` and ``flag`` scans (methods.md §5.1-§5.7), and the roles it needs.

* ``n`` is every row after the spec filter; the metric's population (e.g. outcome = 0 for FPR)
  enters through the group membership ``G x {population}`` and the target's reference set, as in
  the paper's conditional groups.
* ``target: overall`` = mean of L over the metric's population (influence function of a reference
  mean, §5.2); ``{reference: {column, value}}`` = mean over the population rows with that value;
  a number = known theta (psi = 0).
* ``bootstrap`` is B; alpha and the seed come from the top-level ``significance`` block.
* The recommendation (metrics fpr ... error) follows the one rule of :mod:`fairscan.scans.roles`;
  the scan's own ``threshold`` / ``threshold_rule`` override ``columns`` for this scan.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fairscan.metric_table import CATALOGUE, MetricInput, MetricName
from fairscan.spec.base import DecisionOverrides, ScanSpecBase, StrictModel, rule_error
from fairscan.spec.constraints import BOOTSTRAP


class ReferenceValue(StrictModel):
    column: str = Field(description="Column identifying the reference rows.")
    value: str | int | float = Field(description="Value of `column` marking the reference rows.")


class ReferenceTarget(StrictModel):
    reference: ReferenceValue = Field(
        description="theta = mean of L over the metric's rows with column = value."
    )


class AttributeGroups(StrictModel):
    attributes: list[str] = Field(
        min_length=1, description="Attributes whose intersections form the groups."
    )
    max_order: int | None = Field(
        default=None, ge=1, description="Most attributes fixed at once (default: all)."
    )
    min_size: int = Field(
        default=1,
        ge=1,
        description="Groups with fewer rows of the metric's population are not tested.",
    )
    include_all: bool = Field(default=False, description="Also audit the everyone group.")


class IntervalSpec(StrictModel):
    attribute: str = Field(description="Numeric column.")
    grid: list[float] = Field(min_length=2, description="Strictly increasing interval endpoints.")

    @field_validator("grid")
    @classmethod
    def _increasing(cls, grid: list[float]) -> list[float]:
        if any(b <= a for a, b in itertools.pairwise(grid)) or not all(
            math.isfinite(g) for g in grid
        ):
            raise ValueError("grid must be finite and strictly increasing")
        return grid


class IntervalGroups(StrictModel):
    intervals: IntervalSpec = Field(description="All sub-intervals with endpoints on the grid.")
    min_size: int = Field(default=1, ge=1, description="Minimum rows per tested group.")


class NamedFilter(StrictModel):
    name: str = Field(min_length=1, description="Group name in the report.")
    filter: str = Field(min_length=1, description="SQL WHERE expression selecting the group.")

    @field_validator("filter")
    @classmethod
    def _parses(cls, text: str) -> str:
        from fairscan.data.filters import parse_filter
        from fairscan.errors import SpecError

        try:
            parse_filter(text)
        except SpecError as exc:
            raise ValueError(f"invalid filter: {exc.issues[0].message}") from exc
        return text


class RescaleSpec(StrictModel):
    p_star: float = Field(default=0.01, gt=0, le=1, description="p_*: small-group floor.")
    w0: float | Literal["inf"] = Field(
        default="inf", description="w_0 >= 0 (inf = scale by sd(L) only; 0 = studentize)."
    )

    @field_validator("w0")
    @classmethod
    def _nonneg(cls, w0: float | str) -> float | str:
        if not isinstance(w0, str) and not w0 >= 0:
            raise ValueError("w0 must be >= 0 or inf")
        return w0

    @property
    def w0_value(self) -> float:
        return math.inf if self.w0 == "inf" else float(self.w0)


class _AuditSpecBase(ScanSpecBase, DecisionOverrides):
    metric: MetricName | None = Field(default=None, description="Per-record metric L.")
    loss: str | None = Field(default=None, description="Instead of `metric`: a numeric column L.")
    column: str | None = Field(
        default=None, description="metric coverage: the 0/1 column saying whether Y is covered."
    )
    target: Literal["overall"] | ReferenceTarget | float = Field(
        default="overall", description="theta: overall | {reference: {column, value}} | number."
    )
    groups: AttributeGroups | IntervalGroups | list[NamedFilter] = Field(
        description="Group collection: attribute intersections, intervals or named SQL filters."
    )
    tolerance: float | None = Field(default=None, description="epsilon_0.")
    side: Literal["above", "below", "both"] = Field(
        default="above", description="Alternative: eps > tol, eps < tol, or two-sided."
    )
    bootstrap: int = Field(
        ge=BOOTSTRAP.ge, le=BOOTSTRAP.le, default=500, description="Bootstrap resamples B."
    )

    @model_validator(mode="after")
    def _metric_or_loss(self) -> _AuditSpecBase:
        if (self.metric is None) == (self.loss is None):
            raise rule_error("give exactly one of `metric` and `loss`", "metric")
        if self.metric == "coverage" and self.column is None:
            raise rule_error("metric coverage needs `column` (0/1 coverage indicator)", "column")
        if self.column is not None and self.metric != "coverage":
            raise rule_error("`column` is only used by metric coverage", "column")
        if isinstance(self.groups, list):
            if not self.groups:
                raise rule_error("the list of named filters is empty", "groups")
            names = [g.name for g in self.groups]
            if len(set(names)) != len(names):
                raise rule_error("named filter groups need distinct names", "groups")
        if (self.threshold is not None or self.threshold_rule is not None) and (
            "recommendation" not in self.inputs()
        ):
            what = f"metric {self.metric}" if self.metric is not None else "a `loss` column"
            raise rule_error(
                f"`threshold` derives a recommendation, which {what} does not use",
                "threshold" if self.threshold is not None else "threshold_rule",
            )
        return self

    def inputs(self) -> tuple[MetricInput, ...]:
        """What L is computed from (``fairscan.metric_table.CATALOGUE``); () for a loss column."""
        return () if self.metric is None else CATALOGUE[self.metric].inputs


class FlagSpec(_AuditSpecBase):
    type: Literal["flag"] = Field(description="Flag groups with FDR control (Algorithm 4 + BH).")
    correction: Literal["bh", "by"] = Field(default="bh", description="FDR procedure.")

    @model_validator(mode="after")
    def _needs_tolerance(self) -> FlagSpec:
        if self.tolerance is None:
            raise rule_error("flag needs `tolerance` (epsilon_0)", "tolerance")
        return self


class CertifySpec(_AuditSpecBase):
    type: Literal["certify"] = Field(description="Simultaneous bounds / certificates (FWER).")
    bound: Literal["lower", "upper", "two_sided", "boolean"] = Field(
        default="lower", description="Bound type, or a Boolean certificate about `tolerance`."
    )
    rescale: RescaleSpec | Literal[False] = Field(
        default_factory=RescaleSpec,
        description="Algorithm 2/7 scaling; false = Algorithms 1/3 (s = 1).",
    )

    @model_validator(mode="after")
    def _needs_tolerance(self) -> CertifySpec:
        if self.bound == "boolean" and self.tolerance is None:
            raise rule_error("a Boolean certificate needs `tolerance` (epsilon_0)", "tolerance")
        return self


AuditSpec = FlagSpec | CertifySpec


def extra_columns(spec: AuditSpec) -> dict[str, str]:
    from fairscan.data.filters import filter_columns, parse_filter

    cols: dict[str, str] = {}
    if spec.loss is not None:
        cols[spec.loss] = "loss"
    if spec.column is not None:
        cols[spec.column] = "column"
    if isinstance(spec.target, ReferenceTarget):
        cols.setdefault(spec.target.reference.column, "target.reference.column")
    g = spec.groups
    if isinstance(g, AttributeGroups):
        for j, a in enumerate(g.attributes):
            cols.setdefault(a, f"groups.attributes[{j}]")
    elif isinstance(g, IntervalGroups):
        cols.setdefault(g.intervals.attribute, "groups.intervals.attribute")
    else:
        for j, nf in enumerate(g):
            for c in sorted(filter_columns(parse_filter(nf.filter))):
                cols.setdefault(c, f"groups[{j}].filter")
    return cols


Claim = Literal["disparity", "fairness"]


def certificate_claim(bound: str, side: str) -> Claim:
    """What a certificate asserts, given the harmful ``side`` (above, below or both).

    "disparity": the certificate proves a gap beyond the tolerance in the harmful direction
    (a lower bound above it when higher is harmful, an upper bound below it when lower is, the
    one-sided two_sided/boolean certificates); certified groups are findings.
    "fairness": the certificate proves the gap stays within the tolerance (|eps| < tol, or a
    bound on the harmless side); groups that cannot be certified are findings.
    """
    if bound == "lower":
        return "fairness" if side == "below" else "disparity"
    if bound == "upper":
        return "disparity" if side == "below" else "fairness"
    return "fairness" if side == "both" else "disparity"
