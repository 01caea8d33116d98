"""Result models: what scans return and what the JSON report contains (schema_version 1).

Numbers are kept at full precision here; only the Markdown and console renderers round.
Undefined statistics are ``None`` (serialised as ``null``, never NaN).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 1

ScanStatus = Literal["significant", "not_significant", "untested", "no_finding", "error"]


class ReportModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Finding(ReportModel):
    """One detected subgroup of an MDSS scan."""

    subgroup: dict[str, list[str]] = Field(
        description="Attribute -> selected values; unconstrained attributes are omitted ({} = everyone)."
    )
    score: float = Field(description="Penalised objective J(S) = F(S) - penalty * c(S) that the search maximises.")
    llr: float = Field(description="Unpenalised log-likelihood ratio score F(S).")
    penalty_cost: float = Field(description="penalty * c(S), with c(S) the number of selected values in constrained attributes.")
    size: int = Field(description="Rows of the scanned population inside the subgroup.")
    observed_count: float = Field(description="Sum of the observed indicator inside the subgroup.")
    expected_count: float = Field(description="Sum of the expectations inside the subgroup.")
    observed_rate: float | None = Field(description="Observed rate inside the subgroup.")
    expected_rate: float | None = Field(description="Expected rate inside the subgroup under the null.")
    outside_rate: float | None = Field(description="Observed rate in the scanned population outside the subgroup (null if empty).")
    q: float = Field(description="MLE of the odds multiplier q in the subgroup (direction-constrained).")
    p_value: float | None = Field(description="Randomization-test p-value (1 + #null >= observed) / (1 + R); null when untested.")
    significant: bool | None = Field(description="p_value <= alpha; null when untested.")
    null_quantile: float | None = Field(description="Empirical (1 - alpha) quantile of the null maxima; null when untested.")
    description: str = Field(description="The finding in words.")


class ScanTiming(ReportModel):
    search_seconds: float
    significance_seconds: float
    total_seconds: float


class Population(ReportModel):
    """The rows a scan looks at (e.g. true negatives for an FPR-Scan)."""

    description: str
    size: int
    observed_rate: float | None
    expected_rate: float | None
    observed_label: str = Field(description="What the observed indicator means, e.g. 'flagged high-risk'.")


class NullDistribution(ReportModel):
    replicates: int
    alpha: float
    quantile: float | None = Field(description="Empirical (1 - alpha) quantile of the null maxima.")
    mean: float | None
    max: float | None
    exceed_count: int = Field(description="Null replicates whose maximum score >= the observed score.")
    scores: list[float] = Field(description="Maximum penalised score of each null replicate, in replicate order.")


class CriticalValue(ReportModel):
    """Analytic critical value h(alpha) of the Bias Scan (methods.md §2.4b), a screening figure."""

    alpha: float
    profiles: int = Field(description="M, the number of distinct covariate profiles in the scanned data.")
    h: float
    exceeded: bool
    applicable: bool = Field(description="False when the theorem's conditions (penalty 0, negative direction) do not hold.")


class ScanResult(ReportModel):
    id: str
    type: str
    status: ScanStatus
    parameters: dict[str, Any]
    timing: ScanTiming
    population: Population | None = None
    findings: list[Finding] = Field(default_factory=list)
    null_distribution: NullDistribution | None = None
    critical_value: CriticalValue | None = None
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None


class Environment(ReportModel):
    python: str
    platform: str
    packages: dict[str, str]


class Provenance(ReportModel):
    tool: str = "fairscan"
    tool_version: str
    spec_path: str
    spec_sha256: str
    data_path: str
    data_sha256: str
    data_rows: int = Field(description="Rows in the data file.")
    rows_after_filter: int
    filter: str | None
    seed: int | None
    seed_entropy: str = Field(description="Entropy of the root SeedSequence (decimal); replays an unseeded run.")
    utc_time: str = Field(description="UTC start time, ISO 8601 with Z.")
    finished_utc_time: str
    total_seconds: float
    workers: int
    parameters: dict[str, Any] = Field(description="The resolved spec (defaults filled in, CLI overrides applied).")
    environment: Environment


class Verdict(ReportModel):
    status: Literal["clean", "findings", "error"]
    exit_code: int
    significant_findings: int
    scans: int
    scans_with_errors: int


class AuditReport(ReportModel):
    schema_version: int = REPORT_SCHEMA_VERSION
    name: str
    description: str | None = None
    verdict: Verdict
    provenance: Provenance
    data_warnings: list[str] = Field(default_factory=list)
    attributes: dict[str, list[str]] = Field(description="Each scan attribute with its values (labels) as scanned.")
    scans: list[ScanResult]
