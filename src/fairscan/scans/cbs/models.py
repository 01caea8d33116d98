"""The ``detail`` of the ``cbs`` scan.

``scans[].detail["cbs"]`` holds :class:`CbsScanDetail` (the Table 1 cell and one
:class:`CbsRun` per protected class); each finding's ``detail["cbs"]`` holds its
:class:`CbsFindingDetail`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairscan.report.models import NullDistribution, ReportModel, ScanStatus


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
    sigma: float | None = Field(
        default=None,
        description="Gaussian: the sigma of the score (fixed, or the SD of Delta with `sd`).",
    )
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
    sigma_rule: str | None = Field(
        default=None, description="Gaussian: the sigma rule (fixed at a number, or sd), in words."
    )
    regularization: Literal["none", "l2"] | None = Field(
        default=None,
        description="Logistic models: none (unregularised, ridge fallback under separation, "
        "see the warnings) or l2; null when I-hat is supplied.",
    )
    runs: list[CbsRun]
