"""The ``detail`` of the ``subroc`` scan.

``scans[].detail["subroc"]`` holds :class:`SubrocResult` (every tested candidate, reported or
not, and the search figures); each finding's ``detail`` holds its :class:`SubrocFindingDetail`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DETAIL_KEY = "subroc"
MEASURE_TEXT = {"roc_auc": "ROC AUC", "pr_auc": "PR AUC", "ranking_loss": "average ranking loss"}


class DetailModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SubrocCover(DetailModel):
    """A pattern's rows on one split."""

    size: int
    positives: int
    negatives: int
    negative_ratio: float | None = Field(description="Share of rows with outcome 0.")
    measure: float | None = Field(
        description="The performance measure in the cover (null if undefined)."
    )


class SubrocRoc(DetailModel):
    """ROC curve points (false/true positive rates), down-sampled to at most 200 points."""

    fpr: list[float]
    tpr: list[float]


class SubrocFindingDetail(DetailModel):
    """``findings[].detail`` of a SubROC pattern: its covers, scores and ROC curve."""

    rank: int = Field(description="Rank among the tested candidates (search-score order).")
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
    roc: SubrocRoc | None = Field(
        default=None,
        description="Reported patterns: ROC curve of the pattern's search rows (for plots).",
    )


class SubrocPattern(SubrocFindingDetail):
    """One of the top-k' positive-score patterns of a SubROC search, in search-score order."""

    subgroup: dict[str, list[str]] = Field(description="Attribute -> the one selected value.")
    label: str = Field(description="Readable subgroup.")
    description: str
    score: float = Field(description="Ranking score (generalisation-aware when enabled).")
    p_value: float | None
    adjusted_p_value: float | None
    significant: bool | None = Field(description="adjusted_p_value <= alpha; null when untested.")
    reported: bool = Field(description="Among the top-k reported patterns (the findings).")


class SubrocResult(DetailModel):
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
    candidates_tested: int | None = Field(
        default=None,
        description=(
            "Candidates tested: the top-k' patterns with a positive score (fewer than k' when "
            "fewer score > 0); only they enter the multiple-testing correction. Null in reports "
            "written before it was recorded."
        ),
    )
    subsets: int
    correction: str
    alpha: float
    null_distributions: int = Field(description="Distinct (positives, negatives) null draws.")
    reported: int
    patterns: list[SubrocPattern]
    roc: SubrocRoc | None = Field(
        default=None, description="ROC curve of the whole search set (for plots)."
    )
