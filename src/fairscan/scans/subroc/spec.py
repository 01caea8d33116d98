"""The spec of the ``subroc`` scan (methods.md §6)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fairscan.spec.base import FixedSubgroups, ScanSpecBase, StrictModel, rule_error


class SubrocSplitSpec(StrictModel):
    column: str | None = Field(
        default=None, description="Column holding the split label of each row."
    )
    search: str | int | None = Field(
        default=None, description="Value of `column` marking search rows (subgroup discovery)."
    )
    validation: str | int | None = Field(
        default=None, description="Value of `column` marking validation rows (significance)."
    )
    fraction: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Instead of a column: share of rows for the search set, stratified by outcome.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> SubrocSplitSpec:
        if self.column is not None and self.fraction is not None:
            raise rule_error(
                "give either `column` (with search/validation) or `fraction`", "fraction"
            )
        if self.column is None and self.fraction is None:
            raise rule_error("give `column` (with `search` and `validation`) or `fraction`")
        if self.column is not None:
            for key in ("search", "validation"):
                if getattr(self, key) is None:
                    raise rule_error(
                        f"`split.column` needs `{key}` (the value marking those rows)", key
                    )
            if self.search == self.validation:
                raise rule_error("`search` and `validation` must be different values", "validation")
        elif self.search is not None or self.validation is not None:
            raise rule_error("`search`/`validation` values need `column`", "search")
        return self


class SubrocSignificanceSpec(StrictModel):
    subsets: int = Field(
        default=1000,
        ge=0,
        le=1_000_000,
        description="Random subsets per null distribution; 0 = no test.",
    )
    correction: Literal["by", "bh", "bonferroni"] = Field(
        default="by", description="Multiple-testing correction over the k' candidates."
    )
    alpha: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Threshold on adjusted p-values (default: the top-level significance.alpha).",
    )
    paper_pvalue: bool = Field(
        default=False,
        description="Use the paper's #{null >= observed} / R instead of (1 + #) / (1 + R).",
    )


class SubrocSpec(FixedSubgroups, ScanSpecBase):
    type: Literal["subroc"] = Field(
        description="SubROC: subgroups where a soft classifier's ranking performance is worst."
    )
    measure: Literal["roc_auc", "pr_auc", "ranking_loss"] = Field(
        default="roc_auc", description="Performance measure (ranking_loss = average ranking loss)."
    )
    size_weight: float = Field(default=1.0, ge=0, le=10, description="Size weight alpha_s.")
    balance_weight: float = Field(
        default=1.0, ge=0, le=10, description="Class-balance weight beta."
    )
    generalization_aware: bool = Field(
        default=True, description="Subtract the best score of any generalisation (incl. everyone)."
    )
    max_length: int = Field(default=4, ge=1, le=6, description="Maximum selectors per pattern.")
    min_cover: int = Field(
        default=20, ge=1, description="Minimum rows of a pattern on the search set."
    )
    top_k: int = Field(default=5, ge=1, le=10_000, description="Patterns to report (k).")
    candidates: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="At most this many top patterns with a positive score are kept by the "
        "search and tested (k'); patterns scoring <= 0 are never candidates.",
    )
    split: SubrocSplitSpec = Field(
        default_factory=lambda: SubrocSplitSpec(fraction=0.5),
        description="Search/validation split; default: stratified random halves.",
    )
    significance: SubrocSignificanceSpec = Field(
        default_factory=SubrocSignificanceSpec, description="Holdout random-subset test."
    )
    prune: bool = Field(
        default=True, description="Prune with optimistic estimates (same result, faster)."
    )

    @model_validator(mode="after")
    def _k_le_k_prime(self) -> SubrocSpec:
        if self.top_k > self.candidates:
            raise rule_error("`top_k` cannot exceed `candidates` (k <= k')", "top_k")
        return self


def extra_columns(spec: SubrocSpec) -> dict[str, str]:
    if spec.split.column is not None:
        return {spec.split.column: "split.column"}
    return {}
