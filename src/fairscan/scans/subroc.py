"""SubROC (methods.md §6): top-k interpretable subgroups where a soft classifier under-performs
by ROC AUC, PR AUC or average ranking loss, found on a search split and filtered by a
random-subset significance test on a validation split.

Choices (documented in the scan's parameters and the report):

* ``split`` — ``{column, search, validation}`` reads a split column (rows with other values are
  ignored, with a warning); ``{fraction: f}`` draws a stratified (by outcome) random search set
  of share ``f`` from the scan's seed. No ``split`` = ``{fraction: 0.5}`` (methods.md §6.1 [REC]).
* Numeric attributes are binned by the shared data layer on all filtered rows (search and
  validation together). The paper bins on the search set; the bins depend on the attribute
  values only (never on outcomes or scores), so pooling leaks nothing the test relies on, and
  the same selector definitions apply to both splits as §6.6 requires.
* Patterns are reported only if their (GA) score is > 0: a pattern with score <= 0 does not
  under-perform (or is explained by a generalisation).
* ``--replicates 0`` (top-level ``significance.replicates: 0``) also switches this scan's test off.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, model_validator

from fairscan.scans.base import ScanContext, ScanType
from fairscan.spec.base import ScanSpecBase, StrictModel, rule_error

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult


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


class SubrocSpec(ScanSpecBase):
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
        description="Top patterns kept by the search and tested (k').",
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


def _extra_columns(spec: SubrocSpec) -> dict[str, str]:
    if spec.split.column is not None:
        return {spec.split.column: "split.column"}
    return {}


def _split(
    spec: SubrocSpec, ctx: ScanContext, warnings: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    from fairscan.engine.randomization import child_seed
    from fairscan.errors import ScanError

    data = ctx.data
    n = data.n_rows
    split = spec.split
    if split.column is None:
        rng = np.random.Generator(np.random.PCG64(child_seed(ctx.seed, 0)))
        search = np.zeros(n, dtype=bool)
        for cls in (0, 1):
            idx = np.flatnonzero(data.outcome == cls)
            take = round(float(split.fraction) * len(idx))
            search[rng.permutation(idx)[:take]] = True
        return search, ~search
    values = data.extra.get(split.column)
    if values is None:
        raise ScanError(
            f"the split column {split.column!r} was not loaded",
            field="split.column",
            hint="this fairscan build does not pass scan columns to the data layer; use split.fraction",
        )
    masks = []
    for key in ("search", "validation"):
        wanted = getattr(split, key)
        if values.dtype == object:
            mask = values == str(wanted)
        else:
            try:
                mask = values == float(wanted)
            except ValueError:
                mask = np.zeros(n, dtype=bool)
        if not mask.any():
            present = sorted({str(v) for v in np.unique(values)[:20]})
            raise ScanError(
                f"no row has {split.column} = {wanted!r}",
                field=f"split.{key}",
                column=split.column,
                hint=f"values present: {', '.join(present)}",
            )
        masks.append(mask)
    other = int((~(masks[0] | masks[1])).sum())
    if other:
        warnings.append(
            f"{other} rows have another {split.column!r} value than "
            f"{split.search!r}/{split.validation!r} and are not used"
        )
    return masks[0], masks[1]


def _nan_to_none(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


ROC_POINTS = 200


def roc_points(y: np.ndarray, score: np.ndarray, limit: int = ROC_POINTS) -> dict | None:
    """ROC curve (one point per distinct score threshold, from (0, 0) to (1, 1)), evenly
    down-sampled to at most ``limit`` points; None without both classes."""
    y = np.asarray(y)
    pos = int(y.sum())
    neg = len(y) - pos
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(-np.asarray(score, dtype=np.float64), kind="stable")
    s = np.asarray(score, dtype=np.float64)[order]
    ys = y[order]
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]  # last row of each tie group
    tp = np.cumsum(ys)[last]
    fp = (last + 1) - tp
    fpr = np.r_[0.0, fp / neg]
    tpr = np.r_[0.0, tp / pos]
    if len(fpr) > limit:
        keep = np.unique(np.round(np.linspace(0, len(fpr) - 1, limit)).astype(np.int64))
        fpr, tpr = fpr[keep], tpr[keep]
    return {"fpr": [round(float(x), 5) for x in fpr], "tpr": [round(float(x), 5) for x in tpr]}


def run_subroc(spec: SubrocSpec, ctx: ScanContext) -> ScanResult:
    from fairscan.engine.randomization import child_seed
    from fairscan.engine.subroc import SearchConfig, covers, search, significance
    from fairscan.errors import ScanError
    from fairscan.report.models import (
        Population,
        ScanResult,
        ScanTiming,
        SubrocCover,
        SubrocPattern,
        SubrocResult,
        SubrocRoc,
    )
    from fairscan.report.text import describe_subgroup

    started = time.perf_counter()
    data = ctx.data
    if data.prediction is None:
        raise ScanError(
            "subroc needs a score column",
            field="columns.prediction",
            hint="set columns.prediction to the classifier's score (any real number, higher = positive)",
        )
    warnings: list[str] = []
    in_search, in_val = _split(spec, ctx, warnings)
    y, score, codes = data.outcome, data.prediction, data.codes
    need_neg = spec.measure == "roc_auc"
    for name, mask in (("search", in_search), ("validation", in_val)):
        p = int(y[mask].sum())
        nneg = int(mask.sum()) - p
        if p == 0 or (need_neg and nneg == 0):
            raise ScanError(
                f"the {name} set ({int(mask.sum())} rows) has {p} positives and {nneg} negatives: "
                f"{spec.measure} is undefined on it",
                field="split",
                hint="check the split and the outcome column",
            )
    card = np.array([a.cardinality for a in data.attributes], dtype=np.int32)
    if len(card) == 0:
        raise ScanError("subroc needs at least one attribute", field="attributes")
    outcome_name = ctx.role_names.get("outcome", "outcome")
    n_search = int(in_search.sum())
    if spec.min_cover > n_search:
        warnings.append(
            f"min_cover {spec.min_cover} exceeds the {n_search} search rows: no pattern can qualify"
        )
    config = SearchConfig(
        measure=spec.measure,
        size_weight=spec.size_weight,
        balance_weight=spec.balance_weight,
        generalization_aware=spec.generalization_aware,
        max_length=spec.max_length,
        min_cover=spec.min_cover,
        candidates=spec.candidates,
        prune=spec.prune,
        workers=ctx.workers,
    )
    try:
        found = search(codes[in_search], y[in_search], score[in_search], card, config)
    except ValueError as exc:
        raise ScanError(str(exc), field="max_length") from exc
    search_done = time.perf_counter()

    subsets = spec.significance.subsets if ctx.replicates > 0 else 0
    alpha = spec.significance.alpha if spec.significance.alpha is not None else ctx.alpha
    patterns = found.patterns
    tested = None
    if patterns:
        ctx.progress.start(f"{spec.id}: significance", len(patterns))
        try:
            tested = significance(
                codes[in_val],
                y[in_val],
                score[in_val],
                [p.selectors for p in patterns],
                spec.measure,
                subsets,
                child_seed(ctx.seed, 1),
                spec.significance.correction,
                paper_pvalue=spec.significance.paper_pvalue,
                workers=ctx.workers,
            )
            ctx.progress.advance(len(patterns))
        finally:
            ctx.progress.done()
    significance_done = time.perf_counter()

    def cover(size: int, pos: int, neg: int, value: float) -> SubrocCover:
        return SubrocCover(
            size=size,
            positives=pos,
            negatives=neg,
            negative_ratio=neg / size if size else None,
            measure=_nan_to_none(value),
        )

    rows: list[SubrocPattern] = []
    reported = 0
    y_search, score_search, codes_search = y[in_search], score[in_search], codes[in_search]

    def roc_of(mask: np.ndarray | None) -> SubrocRoc | None:
        if mask is None:
            pts = roc_points(y_search, score_search)
        else:
            pts = roc_points(y_search[mask], score_search[mask])
        return SubrocRoc(**pts) if pts is not None else None

    for rank, p in enumerate(patterns, start=1):
        subgroup = {data.attributes[a].name: [data.attributes[a].labels[v]] for a, v in p.selectors}
        t = tested.tests[rank - 1] if tested is not None else None
        adj = float(tested.adjusted[rank - 1]) if tested is not None and subsets > 0 else None
        p_raw = t.p_value if t is not None and subsets > 0 else None
        sig = (adj <= alpha) if adj is not None else None
        report_it = p.score > 0 and sig is not False and reported < spec.top_k
        if report_it:
            reported += 1
        val_text = ""
        if t is not None and np.isfinite(t.value):
            val_text = f"; on the validation set {spec.measure} = {t.value:.3f} over {t.size} rows"
        rows.append(
            SubrocPattern(
                rank=rank,
                subgroup=subgroup,
                description=(
                    f"{describe_subgroup(subgroup)}: {spec.measure} = {p.value:.3f} vs "
                    f"{found.overall:.3f} overall on the search set ({p.size} rows, "
                    f"{p.negatives / p.size:.0%} with {outcome_name} = 0){val_text}."
                ),
                score=p.score,
                weighted_score=p.weighted,
                relative_score=p.relative,
                optimistic_estimate=p.optimistic,
                search=cover(p.size, p.positives, p.negatives, p.value),
                validation=cover(t.size, t.positives, t.negatives, t.value) if t else None,
                validation_statistic=_nan_to_none(t.statistic) if t else None,
                p_value=p_raw,
                adjusted_p_value=adj,
                significant=sig,
                reported=report_it,
                roc=roc_of(covers(codes_search, [p.selectors])[0]) if report_it else None,
            )
        )
    if not any(p.score > 0 for p in patterns):
        status = "no_finding"
    elif subsets == 0:
        status = "untested"
    elif reported:
        status = "significant"
    else:
        status = "not_significant"

    n_val = int(in_val.sum())
    result = SubrocResult(
        measure=spec.measure,
        overall_search=found.overall,
        overall_validation=tested.overall if tested is not None else None,
        search_rows=n_search,
        search_positives=found.positives,
        validation_rows=n_val,
        validation_positives=int(y[in_val].sum()),
        candidates_evaluated=found.evaluated,
        candidates_valid=found.valid,
        pruned=found.pruned,
        skipped=found.skipped,
        per_level=found.per_level,
        subsets=subsets,
        correction=spec.significance.correction,
        alpha=alpha,
        null_distributions=tested.null_pairs if tested is not None else 0,
        reported=reported,
        patterns=rows,
        roc=roc_of(None),
    )
    n = int(in_search.sum())
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=status,
        parameters={**spec.model_dump(mode="json"), "alpha": alpha, "subsets_used": subsets},
        timing=ScanTiming(
            search_seconds=search_done - started,
            significance_seconds=significance_done - search_done,
            total_seconds=significance_done - started,
        ),
        population=Population(
            description=f"search set ({n} rows; validation set {n_val} rows)",
            size=n,
            observed_rate=found.positives / n if n else None,
            expected_rate=None,
            observed_label=f"{outcome_name} = 1",
        ),
        subroc=result,
        warnings=warnings,
    )


SUBROC = ScanType(
    type="subroc",
    spec_model=SubrocSpec,
    runner=run_subroc,
    needs=("outcome", "score"),
    title="SubROC",
    summary=(
        "Finds the top-k subgroups (conjunctions of attribute = value) where a soft classifier "
        "ranks worst by ROC AUC, PR AUC or average ranking loss, weighted by size and class "
        "balance and net of generalisations; keeps those whose performance on a validation "
        "split is significantly worse than random subsets with the same class counts."
    ),
    extra_columns=_extra_columns,
)
