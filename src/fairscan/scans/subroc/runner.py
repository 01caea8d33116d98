"""The SubROC runner: validate -> inputs (split) -> engine (search, test) -> result.

The candidates are the search's top-k' patterns with a positive score (methods.md §6.6 step 1:
a pattern with score <= 0 is not a candidate, and is neither tested nor counted in the
multiple-testing correction). Which patterns are reported has one home, :func:`reported_mask`:
the top-k of the tested candidates (search-score order) not rejected by the significance test.
They are the scan's findings; the status follows from them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.engine.seeds import SubrocStream, child_seed
from fairscan.engine.subroc import (
    Pattern,
    PatternTest,
    SearchConfig,
    SearchResult,
    SignificanceResult,
    covers,
    search,
    significance,
)
from fairscan.errors import ScanError
from fairscan.report.models import (
    Effect,
    Finding,
    Population,
    ScanResult,
    ScanTiming,
    Statistic,
    finite_or_none,
    scan_status,
)
from fairscan.scans.base import ScanContext
from fairscan.scans.roles import outcome_text
from fairscan.scans.subroc.models import (
    DETAIL_KEY,
    MEASURE_TEXT,
    SubrocCover,
    SubrocPattern,
    SubrocResult,
    SubrocRoc,
)
from fairscan.scans.subroc.spec import SubrocSpec

ROC_POINTS = 200


@dataclass(frozen=True)
class SubrocInputs:
    """The scan's data, split into search and validation rows."""

    y: np.ndarray  # (n,) int8 outcome
    score: np.ndarray  # (n,) float64 prediction (any real, higher = positive)
    codes: np.ndarray  # (n, m) attribute codes
    cardinality: np.ndarray  # (m,) int32
    in_search: np.ndarray  # (n,) bool
    in_validation: np.ndarray  # (n,) bool
    warnings: list[str] = field(default_factory=list)
    # fractional sample weights (columns.weight) of the rows; None: 1 each
    weight: np.ndarray | None = None

    def search_part(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.in_search
        return self.codes[m], self.y[m], self.score[m]

    def weight_of(self, rows: np.ndarray) -> np.ndarray | None:
        """The sample weights of ``rows`` (a mask), None without weights."""
        return None if self.weight is None else self.weight[rows]

    def count(self, rows: np.ndarray) -> float:
        """Rows (an int), or the sum of their sample weights."""
        return int(rows.sum()) if self.weight is None else float(self.weight[rows].sum())

    def validation_part(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.in_validation
        return self.codes[m], self.y[m], self.score[m]


@dataclass(frozen=True)
class Tested:
    """The significance test's figures, aligned with the candidates (None when untested)."""

    subsets: int  # random subsets used (0 = no test)
    alpha: float
    result: SignificanceResult | None

    def test(self, rank: int) -> PatternTest | None:
        return self.result.tests[rank] if self.result is not None else None

    def p_value(self, rank: int) -> float | None:
        t = self.test(rank)
        return t.p_value if t is not None and self.subsets > 0 else None

    def adjusted(self, rank: int) -> float | None:
        if self.result is None or self.subsets <= 0:
            return None
        return float(self.result.adjusted[rank])

    def significant(self, rank: int) -> bool | None:
        adj = self.adjusted(rank)
        return adj <= self.alpha if adj is not None else None


# --- validate and inputs ----------------------------------------------------------------------


def _stratified_split(
    spec: SubrocSpec, ctx: ScanContext, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    assert spec.split.fraction is not None
    rng = np.random.Generator(np.random.PCG64(child_seed(ctx.seed, SubrocStream.SPLIT)))
    search_rows = np.zeros(len(y), dtype=bool)
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        take = round(float(spec.split.fraction) * len(idx))
        search_rows[rng.permutation(idx)[:take]] = True
    return search_rows, ~search_rows


def _column_split(
    spec: SubrocSpec, ctx: ScanContext, warnings: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    split = spec.split
    assert split.column is not None
    values = ctx.data.extra.get(split.column)
    if values is None:
        raise ScanError(f"the split column {split.column!r} was not loaded", field="split.column")
    masks = []
    for key in ("search", "validation"):
        wanted = getattr(split, key)
        if values.dtype == object:
            mask = values == str(wanted)
        else:
            try:
                mask = values == float(wanted)
            except ValueError:
                mask = np.zeros(len(values), dtype=bool)
        if not mask.any():
            present = sorted({str(v) for v in np.unique(values)[:20]})
            raise ScanError(
                f"no row has {split.column} = {wanted!r}",
                field=f"split.{key}",
                column=split.column,
                hint=f"values present: {', '.join(present)}",
            )
        masks.append(np.asarray(mask, dtype=bool))
    other = int((~(masks[0] | masks[1])).sum())
    if other:
        warnings.append(
            f"{other} rows have another {split.column!r} value than "
            f"{split.search!r}/{split.validation!r} and are not used"
        )
    return masks[0], masks[1]


def _check_classes(spec: SubrocSpec, y: np.ndarray, masks: dict[str, np.ndarray]) -> None:
    need_neg = spec.measure == "roc_auc"
    for name, mask in masks.items():
        p = int(y[mask].sum())
        nneg = int(mask.sum()) - p
        if p == 0 or (need_neg and nneg == 0):
            raise ScanError(
                f"the {name} set ({int(mask.sum())} rows) has {p} positives and {nneg} negatives: "
                f"{spec.measure} is undefined on it",
                field="split",
                hint="check the split and the outcome column",
            )


def subroc_inputs(spec: SubrocSpec, ctx: ScanContext) -> SubrocInputs:
    """The outcome, score and codes, split into search and validation rows, checked."""
    y, score = ctx.outcome, ctx.prediction
    warnings: list[str] = []
    if spec.split.column is None:
        in_search, in_val = _stratified_split(spec, ctx, y)
    else:
        in_search, in_val = _column_split(spec, ctx, warnings)
    _check_classes(spec, y, {"search": in_search, "validation": in_val})
    data = ctx.data
    card = np.array([a.cardinality for a in data.attributes], dtype=np.int32)
    if len(card) == 0:
        raise ScanError("subroc needs at least one attribute", field="attributes")
    n_search = int(in_search.sum())
    if spec.min_cover > n_search:
        warnings.append(
            f"min_cover {spec.min_cover} exceeds the {n_search} search rows: no pattern can qualify"
        )
    return SubrocInputs(y, score, data.codes, card, in_search, in_val, warnings, data.row_weight)


# --- engine -----------------------------------------------------------------------------------


def run_search(spec: SubrocSpec, ctx: ScanContext, inputs: SubrocInputs) -> SearchResult:
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
    codes, y, score = inputs.search_part()
    try:
        return search(
            codes, y, score, inputs.cardinality, config, inputs.weight_of(inputs.in_search)
        )
    except ValueError as exc:
        raise ScanError(str(exc), field="max_length") from exc


def run_test(
    spec: SubrocSpec, ctx: ScanContext, inputs: SubrocInputs, patterns: list[Pattern]
) -> Tested:
    """The holdout random-subset test of the candidates (``--replicates 0`` switches it off);
    the correction runs over exactly these (positive-score) candidates."""
    subsets = spec.significance.subsets if ctx.replicates > 0 else 0
    alpha = spec.significance.alpha if spec.significance.alpha is not None else ctx.alpha
    if not patterns:
        return Tested(subsets, alpha, None)
    codes, y, score = inputs.validation_part()
    ctx.progress.start(f"{spec.id}: significance", len(patterns))
    try:
        result = significance(
            codes,
            y,
            score,
            [p.selectors for p in patterns],
            spec.measure,
            subsets,
            child_seed(ctx.seed, SubrocStream.NULL),
            spec.significance.correction,
            paper_pvalue=spec.significance.paper_pvalue,
            workers=ctx.workers,
            sample_weight=inputs.weight_of(inputs.in_validation),
        )
        ctx.progress.advance(len(patterns))
    finally:
        ctx.progress.done()
    return Tested(subsets, alpha, result)


# --- result -----------------------------------------------------------------------------------


def reported_mask(patterns: list[Pattern], tested: Tested, top_k: int) -> list[bool]:
    """The one home of "is this pattern a finding": positive score, not rejected by the test
    (significant, or untested), among the first ``top_k`` such in search-score order."""
    out, reported = [], 0
    for rank, p in enumerate(patterns):
        hit = p.score > 0 and tested.significant(rank) is not False and reported < top_k
        reported += hit
        out.append(hit)
    return out


def roc_points(
    y: np.ndarray, score: np.ndarray, limit: int = ROC_POINTS, weight: np.ndarray | None = None
) -> dict | None:
    """ROC curve (one point per distinct score threshold, from (0, 0) to (1, 1)), evenly
    down-sampled to at most ``limit`` points; None without both classes. ``weight``: the
    rows' sample weights (rates of weighted counts)."""
    y = np.asarray(y)
    # unit weights: whole-number sums, exact, so the same rates as counts to the bit
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    pos, neg = float(w[y == 1].sum()), float(w[y == 0].sum())
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(-np.asarray(score, dtype=np.float64), kind="stable")
    s = np.asarray(score, dtype=np.float64)[order]
    ys = y[order]
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]  # last row of each tie group
    ws = w[order]
    tp = np.cumsum(ws * ys)[last]
    fp = np.cumsum(ws * (1 - ys))[last]
    fpr = np.r_[0.0, fp / neg]
    tpr = np.r_[0.0, tp / pos]
    if len(fpr) > limit:
        keep = np.unique(np.round(np.linspace(0, len(fpr) - 1, limit)).astype(np.int64))
        fpr, tpr = fpr[keep], tpr[keep]
    return {"fpr": [round(float(x), 5) for x in fpr], "tpr": [round(float(x), 5) for x in tpr]}


def _roc(y: np.ndarray, score: np.ndarray, weight: np.ndarray | None = None) -> SubrocRoc | None:
    pts = roc_points(y, score, weight=weight)
    return SubrocRoc(**pts) if pts is not None else None


def _cover(size: float, pos: float, neg: float, value: float) -> SubrocCover:
    """A cover's rows (sums of sample weights, rounded, when weighted)."""
    return SubrocCover(
        size=round(size),
        positives=round(pos),
        negatives=round(neg),
        negative_ratio=neg / size if size else None,
        measure=finite_or_none(value),
    )


def _pattern(
    spec: SubrocSpec,
    ctx: ScanContext,
    inputs: SubrocInputs,
    found: SearchResult,
    tested: Tested,
    rank: int,
    reported: bool,
) -> SubrocPattern:
    """Candidate ``rank`` (0-based) in report form; ROC points for reported ones."""
    p = found.patterns[rank]
    attrs = ctx.data.attributes
    subgroup = {attrs[a].name: [attrs[a].labels[v]] for a, v in p.selectors}
    label = subgroup_label(subgroup, attrs)
    t = tested.test(rank)
    measure = MEASURE_TEXT[spec.measure]
    val_text = ""
    if t is not None and np.isfinite(t.value):
        val_text = f"; on the validation set {measure} = {t.value:.3f} over {round(t.size)} rows"
    roc = None
    if reported:
        codes, y, score = inputs.search_part()
        rows = covers(codes, [p.selectors])[0]
        w = inputs.weight_of(inputs.in_search)
        roc = _roc(y[rows], score[rows], None if w is None else w[rows])
    return SubrocPattern(
        rank=rank + 1,
        subgroup=subgroup,
        label=label,
        description=(
            f"{label}: {measure} = {p.value:.3f} vs {found.overall:.3f} overall on the "
            f"search set ({round(p.size)} rows, {p.negatives / p.size:.0%} with "
            f"{outcome_text(ctx.role_names, 0)})"
            f"{val_text}."
        ),
        score=p.score,
        weighted_score=p.weighted,
        relative_score=p.relative,
        optimistic_estimate=p.optimistic,
        search=_cover(p.size, p.positives, p.negatives, p.value),
        validation=_cover(t.size, t.positives, t.negatives, t.value) if t else None,
        validation_statistic=finite_or_none(t.statistic) if t else None,
        p_value=tested.p_value(rank),
        adjusted_p_value=tested.adjusted(rank),
        significant=tested.significant(rank),
        reported=reported,
        roc=roc,
    )


def _finding(spec: SubrocSpec, pattern: SubrocPattern, result: SubrocResult) -> Finding:
    return Finding(
        subgroup=pattern.subgroup,
        label=pattern.label,
        size=pattern.search.size,
        statistic=Statistic(name="interestingness", value=pattern.score),
        effect=Effect(
            metric=MEASURE_TEXT[spec.measure],
            inside=pattern.search.measure,
            reference=result.overall_search,
            reference_name="everyone in the search set",
            inside_count=pattern.search.size,
            reference_count=result.search_rows,
        ),
        p_value=pattern.p_value,
        adjusted_p_value=pattern.adjusted_p_value,
        significant=pattern.significant,
        description=pattern.description,
        detail=pattern.model_dump(
            mode="json", include=set(SubrocPattern.model_fields) - _FINDING_KEYS
        ),
    )


# pattern fields the finding carries in its core keys, not in its detail
_FINDING_KEYS = {
    "subgroup",
    "label",
    "description",
    "score",
    "p_value",
    "adjusted_p_value",
    "significant",
    "reported",
}


def _summary(
    spec: SubrocSpec,
    inputs: SubrocInputs,
    found: SearchResult,
    tested: Tested,
    patterns: list[SubrocPattern],
) -> SubrocResult:
    _, y, score = inputs.search_part()
    sig = tested.result
    return SubrocResult(
        measure=spec.measure,
        overall_search=found.overall,
        overall_validation=sig.overall if sig is not None else None,
        search_rows=round(inputs.count(inputs.in_search)),
        search_positives=round(found.positives),
        validation_rows=round(inputs.count(inputs.in_validation)),
        validation_positives=round(inputs.count(inputs.in_validation & (inputs.y == 1))),
        candidates_evaluated=found.evaluated,
        candidates_valid=found.valid,
        pruned=found.pruned,
        skipped=found.skipped,
        per_level=found.per_level,
        candidates_tested=len(found.patterns),
        subsets=tested.subsets,
        correction=spec.significance.correction,
        alpha=tested.alpha,
        null_distributions=sig.null_pairs if sig is not None else 0,
        reported=sum(p.reported for p in patterns),
        patterns=patterns,
        roc=_roc(y, score, inputs.weight_of(inputs.in_search)),
    )


def build_result(
    spec: SubrocSpec, ctx: ScanContext, inputs: SubrocInputs, found: SearchResult, tested: Tested
) -> tuple[list[Finding], SubrocResult]:
    """The findings (the reported patterns, best first) and the scan detail."""
    reported = reported_mask(found.patterns, tested, spec.top_k)
    patterns = [
        _pattern(spec, ctx, inputs, found, tested, rank, hit) for rank, hit in enumerate(reported)
    ]
    result = _summary(spec, inputs, found, tested, patterns)
    findings = [_finding(spec, p, result) for p in patterns if p.reported]
    return findings, result


def run_subroc(spec: SubrocSpec, ctx: ScanContext) -> ScanResult:
    started = time.perf_counter()
    inputs = subroc_inputs(spec, ctx)
    if spec.subgroups:
        return _run_given(spec, ctx, inputs, started)
    found = run_search(spec, ctx, inputs)
    search_done = time.perf_counter()
    tested = run_test(spec, ctx, inputs, found.patterns)
    significance_done = time.perf_counter()
    findings, result = build_result(spec, ctx, inputs, found, tested)
    n = result.search_rows
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(
            findings,
            tested=tested.subsets > 0,
            found=bool(found.patterns),  # every candidate has a positive score
        ),
        parameters={
            **spec.model_dump(mode="json"),
            "alpha": tested.alpha,
            "subsets_used": tested.subsets,
        },
        timing=ScanTiming(
            search_seconds=search_done - started,
            significance_seconds=significance_done - search_done,
            total_seconds=significance_done - started,
        ),
        population=Population(
            description=f"search set ({n} rows; validation set {result.validation_rows} rows)",
            size=n,
            observed_rate=found.positives / (found.positives + found.negatives) if n else None,
            expected_rate=None,
            observed_label=outcome_text(ctx.role_names, 1),
        ),
        findings=findings,
        detail={DETAIL_KEY: result.model_dump(mode="json")},
        warnings=inputs.warnings,
    )


# --- given subgroups (issue 26) ---------------------------------------------------------------

GIVEN_TEST = "random subsets of equal class counts (SubROC's significance test, one subgroup)"


def _run_given(
    spec: SubrocSpec, ctx: ScanContext, inputs: SubrocInputs, started: float
) -> ScanResult:
    """Each given subgroup's raw relative score (the measure overall minus inside; ranking loss
    inside minus overall) on every audited row (no search: nothing to hold out), tested against
    random subsets with its numbers of positives and negatives (methods.md §6.6 steps 2-4)."""
    from fairscan.data.subgroups import resolve_subgroups, subgroup_rows
    from fairscan.engine.subroc import alternative_statistics, fixed_subset_tests
    from fairscan.scans.given import given_finding, given_result, simulated_power

    given = resolve_subgroups(spec.subgroups or [], ctx.data.attributes)
    rows = inputs.in_search | inputs.in_validation
    y, score, codes = inputs.y[rows], inputs.score[rows], inputs.codes[rows]
    subsets = spec.significance.subsets if ctx.replicates > 0 else 0
    masks = [subgroup_rows(s, ctx.data.attributes, codes) for s in given]
    weight = inputs.weight_of(rows)
    overall, tests = fixed_subset_tests(
        y,
        score,
        masks,
        spec.measure,
        subsets,
        child_seed(ctx.seed, SubrocStream.FIXED),
        workers=ctx.workers,
        sample_weight=weight,
    )
    measure = MEASURE_TEXT[spec.measure]
    n = int(rows.sum())
    alpha = spec.significance.alpha if spec.significance.alpha is not None else ctx.alpha
    findings = []
    for k, (subgroup, fixed) in enumerate(zip(given, tests, strict=True)):
        t = fixed.test
        # rows and classes (sums of sample weights, rounded, when weighted)
        size, positives, negatives = round(t.size), round(t.positives), round(t.negatives)
        # the simulated alternative draws rows: the subgroup's row counts, not weight sums
        pos_rows = int(y[masks[k]].sum())
        neg_rows = int(masks[k].sum()) - pos_rows
        label = subgroup_label(subgroup, ctx.data.attributes)
        stat = finite_or_none(t.statistic)
        if stat is None:
            test = f"undefined: {measure} needs " + (
                "both classes" if spec.measure == "roc_auc" else "a positive"
            )
            p_value: float | None = 1.0
            text = f"{label}: {measure} is undefined on its {size} rows ({positives} positives)."
        else:
            test, p_value = GIVEN_TEST, (t.p_value if fixed.null is not None else None)
            text = (
                f"{label}: {measure} = {t.value:.3f} vs {overall:.3f} on all {n} audited rows "
                f"({size} rows, {positives} positives, {negatives} negatives)."
            )
        finding = Finding(
            subgroup=subgroup,
            label=label,
            size=size,
            statistic=Statistic(name="gap", value=stat),
            effect=Effect(
                metric=measure,
                inside=finite_or_none(t.value),
                reference=overall,
                reference_name="everyone audited",
                inside_count=size,
                reference_count=n,
            ),
            p_value=p_value,
            adjusted_p_value=None,
            significant=None,
            description=text,
            detail={"positives": positives, "negatives": negatives},
        )
        delta = ctx.detect[k] if k < len(ctx.detect) else None
        power = None
        if delta is not None and np.isfinite(delta) and fixed.null is not None:
            alt = alternative_statistics(
                y,
                score,
                pos_rows,
                neg_rows,
                spec.measure,
                float(delta),
                subsets,
                child_seed(ctx.seed, SubrocStream.POWER, k),
            )
            power = (simulated_power(fixed.null, alt, alpha), float(delta), float(delta))
        findings.append(
            given_finding(
                finding,
                subgroup=subgroup,
                attributes=ctx.data.attributes,
                index=k,
                p_value=p_value,
                alpha=alpha,
                test=test,
                effect_size=stat,
                replicates=subsets if fixed.null is not None else 0,
                exceed_count=t.exceed if fixed.null is not None else None,
                power=power,
                power_method="random subsets whose positives are, each with a probability set to give the baseline gap in expectation, scored like a random negative",
            )
        )
    done = time.perf_counter()
    result = ScanResult(
        id=spec.id,
        type=spec.type,
        status="no_finding",
        parameters={**spec.model_dump(mode="json"), "alpha": alpha, "subsets_used": subsets},
        timing=ScanTiming(
            search_seconds=0.0, significance_seconds=done - started, total_seconds=done - started
        ),
        population=Population(
            description=f"every audited row ({n}; no search, so no search/validation split)",
            size=n,
            observed_rate=float(y.mean()) if n else None,
            expected_rate=None,
            observed_label=outcome_text(ctx.role_names, 1),
        ),
        findings=[],
        warnings=[w for w in inputs.warnings if "min_cover" not in w],
    )
    return given_result(result, findings, [f.detail["given_subgroup"]["test"] for f in findings])
