"""The ``detail`` of the ``ijdi_scan`` scan.

``scans[].detail["ijdi"]`` holds :class:`IjdiScanDetail` (settings, the edge-case loop,
corrections, mitigation); each finding's ``detail["ijdi"]`` holds its :class:`IjdiCriterion`.
"""

from __future__ import annotations

from pydantic import Field

from fairscan.report.models import ReportModel


class IjdiCriterion(ReportModel):
    """The IJDI criterion for a finding (methods.md §4.3), negatives (FPR) or positives (TPR)."""

    rate_name: str = Field(description="'false positive rate' or 'true positive rate'.")
    rate_inside: float = Field(
        description="Error rate (share recommended positive) inside the subgroup."
    )
    rate_outside: float | None = Field(description="The same among the other scanned records.")
    base_rate_inside: float = Field(description="Mean base rate Pr(y = 1 | x) inside the subgroup.")
    base_rate_outside: float | None = Field(
        description="Mean base rate among the other scanned records."
    )
    lam: float = Field(
        description="lambda: how much error-rate gap one unit of base-rate gap justifies."
    )
    observed_gap: float | None = Field(description="rate_inside - rate_outside.")
    allowed_gap: float | None = Field(
        description="lambda * (base_rate_inside - base_rate_outside) when positive, else 0."
    )
    violated: bool | None = Field(description="observed_gap > allowed_gap.")


class IjdiCorrectionInfo(ReportModel):
    edge_case: int = Field(
        description="1 = base rate inside below outside; 2 = censoring lowered the expectation."
    )
    scan_pass: int
    size: float = Field(description="Records in the detected subgroup at that pass.")
    factor: float = Field(description="alpha_1 (edge case 1) or beta_2 (edge case 2).")


class MitigationStep(ReportModel):
    subgroup: dict[str, list[str]]
    label: str = Field(description="The subgroup, readable.")
    threshold: float = Field(
        description="New threshold eta(S*) applied to every record of the subgroup."
    )
    rate_before: float = Field(description="Error rate of the subgroup before the correction.")
    rate_after: float = Field(description="Error rate of the subgroup after the correction.")
    score_before: float
    p_value_before: float | None


class IjdiScanDetail(ReportModel):
    """``scans[].detail["ijdi"]``: settings, the edge-case loop, corrections, mitigation."""

    side: str
    lam: float
    recommendation: str | None = Field(
        default=None, description="Where the recommendation came from (column or rule)."
    )
    base_rate_source: str = Field(
        description="Column name, or 'logistic regression on <attributes>'."
    )
    passes: int = Field(description="Scan passes of the edge-case loop.")
    converged: bool = Field(description="False when the pass cap stopped the loop.")
    corrections: list[IjdiCorrectionInfo]
    mitigation: list[MitigationStep] | None = Field(
        default=None, description="Iterative threshold corrections, when mitigation was requested."
    )
    mitigation_status: str | None = Field(
        default=None,
        description="resolved (no significant finding left), cap (max_corrections reached while "
        "still significant), not_needed, or null without mitigation.",
    )
