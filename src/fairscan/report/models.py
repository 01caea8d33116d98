"""Result models: what scans return and what the JSON report contains (schema_version 1).

Numbers are kept at full precision here; only the Markdown and console renderers round.
Undefined statistics are ``None`` (serialised as ``null``, never NaN).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 1

ScanStatus = Literal[
    "significant", "not_significant", "untested", "no_finding", "not_auditable", "error"
]


class ReportModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class Finding(ReportModel):
    """One detected subgroup of an MDSS scan."""

    subgroup: dict[str, list[str]] = Field(
        description="Attribute -> selected values; unconstrained attributes are omitted ({} = everyone)."
    )
    score: float = Field(
        description="Penalised objective J(S) = F(S) - penalty * c(S) that the search maximises."
    )
    llr: float = Field(description="Unpenalised log-likelihood ratio score F(S).")
    penalty_cost: float = Field(
        description="penalty * c(S), with c(S) the number of selected values in constrained attributes."
    )
    size: int = Field(description="Rows of the scanned population inside the subgroup.")
    observed_count: float = Field(description="Sum of the observed indicator inside the subgroup.")
    expected_count: float = Field(description="Sum of the expectations inside the subgroup.")
    observed_rate: float | None = Field(description="Observed rate inside the subgroup.")
    expected_rate: float | None = Field(
        description="Expected rate inside the subgroup under the null."
    )
    outside_rate: float | None = Field(
        description="Observed rate in the scanned population outside the subgroup (null if empty)."
    )
    q: float = Field(
        description="MLE of the odds multiplier q in the subgroup (direction-constrained)."
    )
    p_value: float | None = Field(
        description="Randomization-test p-value (1 + #null >= observed) / (1 + R); null when untested."
    )
    significant: bool | None = Field(description="p_value <= alpha; null when untested.")
    null_quantile: float | None = Field(
        description="Empirical (1 - alpha) quantile of the null maxima; null when untested."
    )
    description: str = Field(description="The finding in words.")
    ijdi: IjdiCriterion | None = Field(
        default=None, description="IJDI-Scan only: the criterion values."
    )
    cbs: CbsFindingDetail | None = Field(
        default=None, description="CBS only: the detected subgroup's metric, protected vs not."
    )


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
    observed_label: str = Field(
        description="What the observed indicator means, e.g. 'flagged high-risk'."
    )


class NullDistribution(ReportModel):
    replicates: int
    alpha: float
    quantile: float | None = Field(description="Empirical (1 - alpha) quantile of the null maxima.")
    mean: float | None
    max: float | None
    exceed_count: int = Field(
        description="Null replicates whose maximum score >= the observed score."
    )
    scores: list[float] = Field(
        description="Maximum penalised score of each null replicate, in replicate order."
    )


class CriticalValue(ReportModel):
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


class IjdiCorrectionInfo(ReportModel):
    edge_case: int = Field(
        description="1 = base rate inside below outside; 2 = censoring lowered the expectation."
    )
    scan_pass: int
    size: float = Field(description="Records in the detected subgroup at that pass.")
    factor: float = Field(description="alpha_1 (edge case 1) or beta_2 (edge case 2).")


class MitigationStep(ReportModel):
    subgroup: dict[str, list[str]]
    threshold: float = Field(
        description="New threshold eta(S*) applied to every record of the subgroup."
    )
    rate_before: float = Field(description="Error rate of the subgroup before the correction.")
    rate_after: float = Field(description="Error rate of the subgroup after the correction.")
    score_before: float
    p_value_before: float | None


class IjdiScanInfo(ReportModel):
    side: str
    lam: float
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
        description="resolved (no significant finding left), cap (max_corrections reached while still significant), not_needed, or null without mitigation.",
    )


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
    subroc: SubrocResult | None = None
    ijdi: IjdiScanInfo | None = None
    certification: CertificationResult | None = None
    cbs: CbsScanInfo | None = None
    warnings: list[str] = Field(default_factory=list)
    error: str | None = None

    def significant_count(self) -> int:
        """Significant results of this scan (findings, or reported SubROC patterns)."""
        count = sum(1 for f in self.findings if f.significant)
        subroc = getattr(self, "subroc", None)
        if subroc is not None:
            count += sum(1 for pat in subroc.patterns if pat.reported and pat.significant)
        cert = getattr(self, "certification", None)
        if cert is not None:
            count += cert.hits if cert.mode == "flag" or cert.claim == "disparity" else cert.failed
        return count

    def headline(self) -> tuple[dict[str, list[str]], float, float | None] | None:
        """(subgroup, score, p-value) of the top result, for summary tables."""
        if self.findings:
            top = self.findings[0]
            return top.subgroup, top.score, top.p_value
        subroc = getattr(self, "subroc", None)
        if subroc is not None:
            for pat in subroc.patterns:
                if pat.reported:
                    return pat.subgroup, pat.score, pat.adjusted_p_value
        cert = getattr(self, "certification", None)
        if cert is not None:
            for grp in cert.groups:
                if cert.mode == "flag":
                    hit = grp.flagged
                elif cert.claim == "disparity":
                    hit = grp.certified is True
                else:
                    hit = grp.certified is False
                if hit and grp.status in ("ok", "constant"):
                    return (
                        grp.subgroup or {"group": [grp.name]},
                        grp.gap or 0.0,
                        grp.adjusted_p_value,
                    )
        return None


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
    seed_entropy: str = Field(
        description="Entropy of the root SeedSequence (decimal); replays an unseeded run."
    )
    utc_time: str = Field(description="UTC start time, ISO 8601 with Z.")
    finished_utc_time: str
    total_seconds: float
    workers: int
    parameters: dict[str, Any] = Field(
        description="The resolved spec (defaults filled in, CLI overrides applied)."
    )
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
    attributes: dict[str, list[str]] = Field(
        description="Each scan attribute with its values (labels) as scanned."
    )
    scans: list[ScanResult]
    baseline: BaselineComparison | None = Field(
        default=None,
        description="Comparison with a baseline report (audit run --baseline); omitted without one.",
    )


# --- SubROC (scan type `subroc`, methods.md §6) -----------------------------------------------


class SubrocCover(ReportModel):
    """A pattern's rows on one split."""

    size: int
    positives: int
    negatives: int
    negative_ratio: float | None = Field(description="Share of rows with outcome 0.")
    measure: float | None = Field(
        description="The performance measure in the cover (null if undefined)."
    )


class SubrocRoc(ReportModel):
    """ROC curve points (false/true positive rates), down-sampled to at most 200 points."""

    fpr: list[float]
    tpr: list[float]


class SubrocPattern(ReportModel):
    """One of the top-k' patterns of a SubROC search, in search-score order."""

    rank: int
    subgroup: dict[str, list[str]] = Field(description="Attribute -> the one selected value.")
    description: str
    score: float = Field(description="Ranking score (generalisation-aware when enabled).")
    weighted_score: float = Field(description="|sg|^alpha_s * cb^beta * relative score.")
    relative_score: float = Field(
        description="Overall minus subgroup measure (subgroup minus overall for ranking_loss)."
    )
    optimistic_estimate: float
    search: SubrocCover
    validation: SubrocCover | None
    validation_statistic: float | None = Field(
        description="Relative score on the validation set (the test statistic)."
    )
    p_value: float | None
    adjusted_p_value: float | None
    significant: bool | None = Field(description="adjusted_p_value <= alpha; null when untested.")
    reported: bool = Field(description="Among the top-k reported patterns.")
    roc: SubrocRoc | None = Field(
        default=None,
        description="Reported patterns: ROC curve of the pattern's search rows (for plots).",
    )


class SubrocResult(ReportModel):
    measure: str
    overall_search: float
    overall_validation: float | None
    search_rows: int
    search_positives: int
    validation_rows: int
    validation_positives: int
    candidates_evaluated: int = Field(description="Patterns whose cover was evaluated.")
    candidates_valid: int = Field(description="Of which met min_cover and the class constraint.")
    pruned: int = Field(description="Patterns not expanded because of their optimistic estimate.")
    skipped: int = Field(
        description="Candidates not evaluated: a generalisation was pruned, too small or invalid."
    )
    per_level: list[dict[str, int]]
    subsets: int
    correction: str
    alpha: float
    null_distributions: int = Field(description="Distinct (positives, negatives) null draws.")
    reported: int
    patterns: list[SubrocPattern]
    roc: SubrocRoc | None = Field(
        default=None, description="ROC curve of the whole search set (for plots)."
    )


class CbsFindingDetail(ReportModel):
    """A CBS finding as in the paper's tables: the metric in S* for protected vs other rows."""

    protected: str = Field(description="The protected class, e.g. 'race = African-American'.")
    metric: str = Field(description="The named metric of Table 1 (event applied).")
    parameter: Literal["q", "mu"] = Field(
        description="q: odds multiplier (Bernoulli); mu: mean shift of Delta in log-odds (Gaussian; q = exp(mu))."
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
    sigma: float | None = Field(default=None, description="Gaussian: SD of Delta (ddof 1).")
    mean_delta: float | None = Field(default=None, description="Gaussian: mean Delta (§3.5).")
    max_weight_ratio: float | None = Field(
        default=None, description="Largest ATT weight / median weight."
    )
    null: NullDistribution | None = None
    propensity_calibration: CbsCalibration | None = None
    outcome_calibration: CbsCalibration | None = None


class CbsScanInfo(ReportModel):
    cell: str = Field(description="The Table 1 cell in words.")
    family: str
    on: str
    condition: int | None
    event: int
    direction: str
    likelihood: Literal["bernoulli", "gaussian"]
    expectations: str = Field(description="How I-hat was obtained.")
    runs: list[CbsRun]


# --- Certification and flagging (scan types `certify`, `flag`, methods.md §5) -----------------


class AuditGroup(ReportModel):
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
    status: str = Field(
        description="ok, empty (no rows), too_small (< min_size), degenerate (L constant), "
        "constant (L constant in the group), unstable (group absent from over half the resamples)."
    )


class AuditPlotData(ReportModel):
    """Column-oriented, plot-ready copy of the per-group estimates and bounds."""

    group: list[str]
    gap: list[float | None]
    lower: list[float | None]
    upper: list[float | None]


class CertificationResult(ReportModel):
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


# --- Baseline comparison (audit run --baseline, audit diff) ------------------------------------

BaselineLabel = Literal["new", "persisting", "resolved", "changed"]


class BaselineSide(ReportModel):
    """A matched result in one of the two runs."""

    subgroup: dict[str, list[str]] = Field(
        description="Attribute -> values; for certify/flag groups without one, {'group': [name]}."
    )
    score: float | None = Field(description="Score (MDSS/SubROC) or gap (certify/flag).")
    p_value: float | None = Field(description="p-value (adjusted for SubROC and flag).")
    rate: float | None = Field(
        description="Observed rate (MDSS), validation measure (SubROC) or group estimate."
    )
    expected_rate: float | None = Field(default=None, description="MDSS: expected rate.")
    significant: bool = Field(description="Counted as a significant finding in its run.")


class BaselineEntry(ReportModel):
    """One result labelled against the baseline."""

    scan_id: str
    scan_type: str
    label: BaselineLabel = Field(
        description="new: significant now, not significant or absent before; resolved: "
        "significant before, not significant or absent now; persisting: significant in both "
        "with the same subgroup; changed: significant in both, matched by overlap."
    )
    match: Literal["exact", "overlap", "none"] = Field(
        description="exact subgroup (or group name), overlap above the threshold, or unmatched."
    )
    similarity: float | None = Field(
        description="Jaccard similarity of the covered attribute cells (1 = same subgroup)."
    )
    before: BaselineSide | None = Field(description="The baseline result (null if unmatched).")
    after: BaselineSide | None = Field(description="The current result (null if unmatched).")


class BaselineComparison(ReportModel):
    baseline_path: str | None = Field(description="The baseline report file.")
    baseline_name: str
    baseline_utc_time: str
    overlap_threshold: float = Field(
        description="Minimum Jaccard similarity of covered cells for an overlap match."
    )
    fail_on: str = Field(description="The gate applied to the exit code (gate.fail_on).")
    counts: dict[str, int] = Field(description="Entries per label.")
    new_significant: int = Field(description="Significant findings labelled new.")
    scans_added: list[str] = Field(description="Scan ids only in the current run.")
    scans_removed: list[str] = Field(description="Scan ids only in the baseline.")
    entries: list[BaselineEntry]


ScanResult.model_rebuild()
AuditReport.model_rebuild()
