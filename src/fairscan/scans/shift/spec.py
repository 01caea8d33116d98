"""The spec of the ``shift`` scan (methods.md §5.8): metric, target, kernel features, tilts.

* ``metric`` / ``loss`` / ``column``: as ``certify`` (the same metrics and roles); the audit runs
  on the metric's population (e.g. the rows with outcome = 0 for fpr): ``eps(h)`` is the metric's
  gap on that population reweighted by ``h`` of the features.
* ``target: overall``: theta = mean of L over the population, estimated (Algorithm 8, with the
  influence function psi = L - theta); a number: known theta (Algorithm 5).
* ``features``: numeric columns of the Gaussian kernel, standardized by the population's mean and
  sd when ``kernel.standardize`` (tilt centers are given in the raw units).
* ``tilts``: named shifts ``h = sum_j w_j k(., z_j)`` (``centers`` + non-negative ``weights``) or
  the kernel mean of another data file's rows (``sample``; a relative path is relative to the
  spec file, as ``data.path``).
* ``bootstrap`` is B; alpha and the seed come from the top-level ``significance`` block.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fairscan.metric_table import CATALOGUE, MetricInput, MetricName
from fairscan.spec.base import (
    DecisionOverrides,
    FixedSubgroups,
    ScanSpecBase,
    StrictModel,
    rule_error,
)
from fairscan.spec.constraints import BOOTSTRAP


class KernelSpec(StrictModel):
    type: Literal["gaussian"] = Field(
        default="gaussian", description="k(x, x') = exp(-|x - x'|^2 / (2 bandwidth^2))."
    )
    bandwidth: float = Field(
        default=1.0, gt=0, allow_inf_nan=False, description="Kernel bandwidth (> 0)."
    )
    standardize: bool = Field(
        default=True, description="Standardize each feature (population mean and sd) first."
    )


class CenterTilt(StrictModel):
    name: str = Field(min_length=1, description="Tilt name in the report.")
    centers: list[dict[str, float]] = Field(
        min_length=1, description="Kernel centers z_j: feature -> value (raw units)."
    )
    weights: list[float] | None = Field(
        default=None, description="Non-negative weights w_j (default: equal)."
    )

    @model_validator(mode="after")
    def _weights(self) -> CenterTilt:
        for k, c in enumerate(self.centers):
            if not all(math.isfinite(v) for v in c.values()):
                raise rule_error("center values must be finite", "centers", k)
        if self.weights is not None:
            if len(self.weights) != len(self.centers):
                raise rule_error(
                    f"{len(self.weights)} weights for {len(self.centers)} centers", "weights"
                )
            if any(not (math.isfinite(w) and w >= 0) for w in self.weights) or not any(
                w > 0 for w in self.weights
            ):
                raise rule_error(
                    "weights must be finite and >= 0 (a non-negative tilt), not all 0", "weights"
                )
        return self


class SampleTilt(StrictModel):
    name: str = Field(min_length=1, description="Tilt name in the report.")
    sample: str = Field(
        min_length=1,
        description="Data file whose rows are the centers (equal weights: its kernel mean); "
        "a relative path is relative to the spec file.",
    )


Tilt = CenterTilt | SampleTilt


class ShiftSpec(FixedSubgroups, ScanSpecBase, DecisionOverrides):
    type: Literal["shift"] = Field(
        description="Bounds under covariate shift: RKHS tilts (Algorithms 5 and 8)."
    )
    metric: MetricName | None = Field(default=None, description="Per-record metric L.")
    loss: str | None = Field(default=None, description="Instead of `metric`: a numeric column L.")
    column: str | None = Field(
        default=None, description="metric coverage: the 0/1 column saying whether Y is covered."
    )
    target: Literal["overall"] | float = Field(
        default="overall",
        description="theta: overall (estimated, Algorithm 8) | a known number (Algorithm 5).",
    )
    features: list[str] = Field(min_length=1, description="Numeric covariates of the kernel.")
    kernel: KernelSpec = Field(default_factory=KernelSpec, description="The Gaussian kernel.")
    bootstrap: int = Field(
        ge=BOOTSTRAP.ge, le=BOOTSTRAP.le, default=500, description="Bootstrap resamples B."
    )
    side: Literal["lower", "upper", "both"] = Field(
        default="lower",
        description="lower bounds (a higher metric is harmful), upper bounds (lower is "
        "harmful) or two-sided intervals.",
    )
    rank: int = Field(
        default=500, ge=1, le=20_000, description="Nystroem rank above exact_max_rows."
    )
    exact_max_rows: int = Field(
        default=5000, ge=1, description="Exact kernel up to this many population rows."
    )
    tilts: list[Tilt] = Field(default_factory=list, description="Named shifts to bound.")

    @field_validator("features")
    @classmethod
    def _distinct(cls, features: list[str]) -> list[str]:
        if len(set(features)) != len(features):
            raise ValueError("features must be distinct")
        return features

    @model_validator(mode="after")
    def _rules(self) -> ShiftSpec:
        if (self.metric is None) == (self.loss is None):
            raise rule_error("give exactly one of `metric` and `loss`", "metric")
        if self.metric == "coverage" and self.column is None:
            raise rule_error("metric coverage needs `column` (0/1 coverage indicator)", "column")
        if self.column is not None and self.metric != "coverage":
            raise rule_error("`column` is only used by metric coverage", "column")
        if isinstance(self.target, float) and not math.isfinite(self.target):
            raise rule_error("target must be finite", "target")
        names = [t.name for t in self.tilts]
        if len(set(names)) != len(names):
            raise rule_error("tilts need distinct names", "tilts")
        wanted = set(self.features)
        for j, tilt in enumerate(self.tilts):
            if not isinstance(tilt, CenterTilt):
                continue
            for k, center in enumerate(tilt.centers):
                missing = [f for f in self.features if f not in center]
                extra = sorted(set(center) - wanted)
                if missing:
                    raise rule_error(
                        f"tilt {tilt.name!r}: center {k} has no value for feature(s) "
                        + ", ".join(missing),
                        "tilts",
                        j,
                        "centers",
                        k,
                    )
                if extra:
                    raise rule_error(
                        f"tilt {tilt.name!r}: center {k} names {', '.join(extra)}, which "
                        "is not in `features`",
                        "tilts",
                        j,
                        "centers",
                        k,
                    )
        if (self.threshold is not None or self.threshold_rule is not None) and (
            "recommendation" not in self.inputs()
        ):
            raise rule_error(
                "`threshold` derives a recommendation, which this metric does not use",
                "threshold" if self.threshold is not None else "threshold_rule",
            )
        return self

    def inputs(self) -> tuple[MetricInput, ...]:
        """What L is computed from (``fairscan.metric_table.CATALOGUE``); () for a loss column."""
        return () if self.metric is None else CATALOGUE[self.metric].inputs


def extra_columns(spec: ShiftSpec) -> dict[str, str]:
    cols: dict[str, str] = {}
    if spec.loss is not None:
        cols[spec.loss] = "loss"
    if spec.column is not None:
        cols[spec.column] = "column"
    for j, f in enumerate(spec.features):
        cols.setdefault(f, f"features[{j}]")
    return cols
