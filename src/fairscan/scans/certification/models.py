"""The ``detail`` of the certify/flag scans: every group of the collection, hit or not.

``scans[].detail["certification"]`` holds :class:`CertificationResult` (all groups, for tables
and the forest plot); each finding's ``detail`` holds its :class:`AuditGroup`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DETAIL_KEY = "certification"


class DetailModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class AuditGroup(DetailModel):
    """One group of a certify/flag audit."""

    name: str
    subgroup: dict[str, list[str]] | None = Field(
        description="Attribute -> value for intersection groups; null for intervals and filters."
    )
    filter: str | None = Field(default=None, description="SQL filter of a named-filter group.")
    size: int = Field(description="Rows of the group in the metric's population (|G|).")
    share: float = Field(description="P_n(G) = |G| / n (n = all rows after the spec filter).")
    estimate: float | None = Field(description="Mean of L in the group.")
    gap: float | None = Field(description="eps_hat(G) = estimate - theta_hat.")
    lower: float | None = Field(description="Lower bound / interval end of eps(G) (null if none).")
    upper: float | None = Field(description="Upper bound / interval end of eps(G) (null if none).")
    scale: float | None = Field(description="s_hat(G) (certify) or MAD scale s*(G) (flag).")
    p_value: float | None = Field(default=None, description="flag: App. C p-value.")
    adjusted_p_value: float | None = Field(default=None, description="flag: BH/BY adjusted.")
    flagged: bool | None = Field(default=None, description="flag: rejected by BH/BY at alpha.")
    certified: bool | None = Field(default=None, description="certify: the certificate holds.")
    finding: bool = Field(
        default=False, description="Reported as a finding (see CertificationResult.claim)."
    )
    status: str = Field(
        description="ok, empty (no rows), too_small (< min_size), degenerate (L constant), "
        "constant (L constant in the group), unstable (group absent from over half the resamples)."
    )


class AuditPlotData(DetailModel):
    """Column-oriented, plot-ready copy of the per-group estimates and bounds."""

    group: list[str]
    gap: list[float | None]
    lower: list[float | None]
    upper: list[float | None]


class CertificationResult(DetailModel):
    mode: Literal["certify", "flag"]
    metric: str
    metric_description: str
    rows: int = Field(description="n: rows resampled (all rows after the spec filter).")
    population_rows: int = Field(description="Rows in the metric's population.")
    target: str
    theta: float = Field(description="theta_hat (the target).")
    tolerance: float
    side: str
    bound: str | None = None
    alpha: float
    bootstrap: int
    correction: str | None = None
    p_star: float | None = None
    w0: float | str | None = None
    critical_values: dict[str, float] = Field(default_factory=dict)
    redraws: int = Field(description="Resamples redrawn for lacking reference rows.")
    sampling: str = Field(description="cells (exchangeable-cell multinomial) or rows.")
    groups_total: int
    groups_tested: int
    hits: int = Field(description="Groups flagged (flag) or certified (certify).")
    failed: int = Field(description="certify: tested groups whose certificate does not hold.")
    claim: Literal["disparity", "fairness"] | None = Field(
        default=None,
        description=(
            "certify: what a certificate asserts. disparity: certified groups are findings; "
            "fairness: tested groups that cannot be certified are findings."
        ),
    )
    groups: list[AuditGroup]
    plot: AuditPlotData


def flag_region(side: str, tolerance: float) -> str:
    """What a flagged gap does, in words: 'exceeds the tolerance of 0.05'."""
    if side == "above":
        return f"exceeds the tolerance of {tolerance:g}"
    if side == "below":
        return f"falls below the tolerance of {tolerance:g}"
    return f"differs by more than the tolerance of {abs(tolerance):g}"
