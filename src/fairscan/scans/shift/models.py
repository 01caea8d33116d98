"""The ``detail`` of the ``shift`` scan: t*, the kernel, every named tilt and the worst case.

``scans[].detail`` is :class:`ShiftResult` (``t_star``, ``rank``, ``exact``, ``bandwidth``,
``features`` and ``worst_case`` at its top level); each finding's ``detail`` holds the tilt's
``estimate``, its bound(s) for the side asked and its ``effective_sample_size``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DetailModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class TiltResult(DetailModel):
    """One named tilt."""

    name: str
    kind: str = Field(description="centers or sample.")
    centers: int = Field(description="Kernel centers of h.")
    estimate: float | None = Field(description="eps_hat(h): the metric gap under the tilt.")
    metric_under_tilt: float | None = Field(description="theta_hat + eps_hat(h).")
    lower: float | None = Field(
        description="Simultaneous lower bound of eps(h) (sides lower/both)."
    )
    upper: float | None = Field(
        description="Simultaneous upper bound of eps(h) (sides upper/both)."
    )
    norm2: float = Field(description="||h||^2 = a' K_zz a (standardized features).")
    mean_h: float = Field(description="E_n h over the population rows.")
    effective_sample_size: float = Field(description="(sum h)^2 / sum h^2.")
    certified: bool = Field(description="The bound excludes 0 on the harmful side.")
    status: str = Field(description="ok, degenerate (L constant) or no_mass (h ~ 0 on the data).")


class FeatureRange(DetailModel):
    feature: str
    low: float = Field(description="10th percentile of the feature under the tilt's weights.")
    median: float
    high: float = Field(description="90th percentile under the tilt's weights.")
    data_low: float = Field(description="10th percentile over the population rows.")
    data_median: float
    data_high: float


class TiltProfile(DetailModel):
    """The worst-case tilt over one feature: mean h per bin relative to mean h overall."""

    feature: str
    x: list[float]
    ratio: list[float | None]


class ValidTilt(DetailModel):
    """The non-negative tilt closest to the worst-case direction, with its own estimate and
    simultaneous bound (the bound holds for every tilt of the unit ball at once)."""

    estimate: float | None = Field(description="eps_hat(h) of the valid tilt.")
    metric_under_tilt: float | None = Field(description="theta_hat + eps_hat(h).")
    lower: float | None = Field(description="Simultaneous lower bound (sides lower/both).")
    upper: float | None = Field(description="Simultaneous upper bound (sides upper/both).")
    norm2: float = Field(description="||h||^2 = a' K_zz a.")
    effective_sample_size: float = Field(description="(sum h)^2 / sum h^2.")
    centers: int = Field(description="Kernel centers with a positive coefficient.")
    distance: float = Field(
        description="RKHS distance to the direction relative to the direction's norm."
    )
    projection: str = Field(description="How the non-negative coefficients were found.")


class WorstCase(DetailModel):
    description: str
    eigenvalue: float = Field(description="Extreme eigenvalue of the median replicate.")
    replicate: int
    estimate: float | None = Field(description="eps_hat of the direction's positive part.")
    effective_sample_size: float
    ranges: list[FeatureRange] = Field(
        description="Where the valid tilt puts its weight (the direction's positive part when "
        "there is none)."
    )
    profile: TiltProfile | None = Field(
        description="Density ratio of the valid tilt over the first feature (never negative)."
    )
    is_distribution: bool = Field(
        default=True,
        description="The direction attaining the bound is itself a non-negative reweighting.",
    )
    negative_share: float = Field(
        default=0.0, description="Share of the rows where the direction is negative."
    )
    min_ratio: float | None = Field(
        default=None, description="Lowest density ratio h / mean(h) of the direction."
    )
    valid_tilt: ValidTilt | None = Field(
        default=None,
        description="The closest valid non-negative tilt, its estimate and bound; null when "
        "the direction has no non-negative part.",
    )


class ShiftResult(DetailModel):
    metric: str
    metric_words: str
    metric_description: str
    rows: int = Field(description="n: population rows the kernel and the bootstrap use.")
    target: str
    theta: float
    algorithm: int = Field(description="8 (theta estimated) or 5 (theta known).")
    side: str
    alpha: float
    bootstrap: int
    t_star: float = Field(description="(1 - alpha) quantile of the bootstrap suprema.")
    exact: bool = Field(description="Exact kernel (true) or Nystroem (false).")
    rank: int = Field(description="Kernel rank used: n when exact, the Nystroem rank otherwise.")
    bandwidth: float
    standardize: bool
    features: list[str]
    degenerate: bool = Field(description="L constant: every process is 0, t* = 0.")
    worst_case: WorstCase | None
    tilts: list[TiltResult]
