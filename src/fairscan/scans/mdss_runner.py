"""Shared runner for the Bernoulli MDSS scans: search, re-score, randomization test, finding.

The scan modules only decide which rows are scanned, what is observed and what is expected
(and how to phrase it); everything else is here so all MDSS scans behave the same. The finding
helpers (:func:`subgroup_labels`, :func:`mdss_finding`, :func:`null_distribution`) are shared
with the IJDI-Scan and the CBS; the finding detail and its render hook live in
:mod:`fairscan.scans.mdss_render` (no kernel import: the registry loads it at start-up).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.data.table import EncodedAttribute
from fairscan.engine import kernels
from fairscan.engine.cells import Cells, compress, fractional
from fairscan.engine.expectation_cells import (
    ExpectationCells,
    ExpectationReplicate,
    ProfileSums,
    from_profile_sums,
    profiles_of,
    search_selection,
    summarise,
    worth_summarising,
)
from fairscan.engine.expectation_cells import score_subgroup as summary_score
from fairscan.engine.fixed import FixedTest
from fairscan.engine.mdss import ScanProblem, SubgroupScore, is_material, score_subgroup
from fairscan.engine.randomization import (
    MdssReplicate,
    NullResult,
    NullSettings,
)
from fairscan.engine.scores import (
    BERNOULLI,
    Draw,
    Score,
    ScoredSubgroup,
    best_subgroup,
    pooled_means,
)
from fairscan.engine.seeds import MdssStream, child_seed, search_seed
from fairscan.report.models import (
    Effect,
    Finding,
    NullDistribution,
    Population,
    ScanResult,
    ScanTiming,
    Statistic,
    scan_status,
)
from fairscan.report.text import p_equals
from fairscan.scans.base import ScanContext
from fairscan.scans.mdss_render import MDSS_HOOKS, MdssFindingDetail, finding_markdown
from fairscan.spec.base import MdssScanSpecBase

Describe = Callable[[str, SubgroupScore, float | None, float | None, float | None], str]


@dataclass(frozen=True)
class MdssInputs:
    """What a scan adapter hands to the shared runner."""

    rows: np.ndarray  # boolean mask of the scanned rows
    observed: np.ndarray  # observed indicator on the scanned rows
    expected: np.ndarray  # expectation on the scanned rows
    direction: int
    population: str  # e.g. "true negatives (two_year_recid = 0)"
    observed_label: str  # e.g. "recommended positive (high_risk = 1)"
    metric: str  # what the observed rate is, e.g. "false positive rate"
    # the effect's reference: the rate outside the subgroup, or the expectation inside it
    reference: Literal["outside", "expected"]
    reference_name: str  # e.g. "the other true negatives"
    # (subgroup label, best, observed rate, expected rate, outside rate) -> one sentence
    describe: Describe
    score: Score = BERNOULLI  # the scoring function (engine.scores)
    draw: Draw = "binomial"  # how null replicates redraw the cells' observed sums
    score_name: str = "bernoulli"  # the spec's name of the score, for the report
    clip: bool = True  # clip expectations to [1e-6, 1 - 1e-6] (probabilities only)
    # per-row cell weights (Gaussian with per-row variances: 1 / sigma_i^2); default 1
    weight: np.ndarray | None = None
    # the outcome and its expectation per scanned row, when ``observed``/``expected`` are
    # transformed for the score (Gaussian residuals): the effect reports their means
    raw: tuple[np.ndarray, np.ndarray] | None = None
    # aggregated data (a streamed dataset): the data rows each scanned row stands for
    multiplicity: np.ndarray | None = None
    # Bernoulli with per-row probabilities (bias_scan): search over attribute profiles with
    # each profile's probabilities summarised (engine.expectation_cells), and draw the null
    # replicates that way, when the rows do not compress into (profile, expectation) cells
    summarise_expectations: bool = False
    # the expectations' per-profile sums taken by the database (the rows' expectations are
    # then probability-bin means): (summed profile of each scanned row, the sums)
    profile_sums: tuple[np.ndarray, ProfileSums] | None = None

    def rows_weight(self) -> np.ndarray | None:
        """Cell weight of each scanned row: its multiplicity times its precision."""
        if self.multiplicity is None:
            return self.weight
        if self.weight is None:
            return self.multiplicity.astype(np.float64)
        return self.multiplicity * self.weight

    def total(self, values: np.ndarray, inside: np.ndarray | None = None) -> float:
        """Sum of ``values`` over the scanned (``inside``) rows, counting multiplicities."""
        if inside is not None:
            values = values[inside]
        if self.multiplicity is None:
            return exact_total(values)
        m = self.multiplicity if inside is None else self.multiplicity[inside]
        return exact_total(values, m)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: x = high + low, each with at most 26 significant bits (their
    products with another split number are exact)."""
    c = x * 134217729.0  # 2**27 + 1
    high = c - (c - x)
    return high, x - high


def exact_total(values: np.ndarray, multiplicity: np.ndarray | None = None) -> float:
    """The sum of ``values`` (each counted ``multiplicity`` times), correctly rounded: the same
    float whether the rows come one by one or aggregated with their counts (a push-down
    source), which a plain floating-point sum is not (its rounding depends on the order and the
    grouping)."""
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        return float(v.sum() if multiplicity is None else (v * multiplicity).sum())
    if multiplicity is None:
        return math.fsum(v.tolist())
    vh, vl = _split(v)
    mh, ml = _split(np.asarray(multiplicity, dtype=np.float64))  # counts: exact below 2**53
    return math.fsum(np.concatenate([vh * mh, vh * ml, vl * mh, vl * ml]).tolist())


def subgroup_labels(
    attributes: Sequence[EncodedAttribute], problem: ScanProblem, selection: np.ndarray
) -> dict[str, list[str]]:
    """Map a local-code selection back to attribute -> value labels, omitting unconstrained ones.

    ``attributes`` are the scanned attributes in the order of the problem's columns.
    """
    out: dict[str, list[str]] = {}
    for j, attribute in enumerate(attributes):
        k = int(problem.cardinality[j])
        chosen = np.flatnonzero(selection[j, :k])
        if len(chosen) == k:
            continue
        out[attribute.name] = [attribute.labels[int(problem.value_index[j][c])] for c in chosen]
    return out


def null_distribution(null: NullResult | None, alpha: float) -> NullDistribution | None:
    """The report block of a randomization test (None when untested)."""
    if null is None:
        return None
    return NullDistribution(
        replicates=len(null.scores),
        alpha=alpha,
        quantile=null.quantile,
        mean=float(np.mean(null.scores)),
        max=float(np.max(null.scores)),
        exceed_count=null.exceed_count,
        scores=[float(s) for s in null.scores],
        **sequential_keys(null),
    )


def sequential_keys(null: NullResult) -> dict[str, Any]:
    """The stopping rule's keys of the report's null distribution (none for a fixed count)."""
    if null.rule is None:
        return {}
    return {
        "max_replicates": null.rule.max_replicates,
        "stopping_rule": null.rule.describe(),
        "stopped_early": len(null.scores) < null.rule.max_replicates,
    }


def stopping_words(null: NullResult | None) -> str:
    """The finding's sentence on where the replicates stopped ("" for a fixed count)."""
    if null is None or null.rule is None:
        return ""
    ran = len(null.scores)
    return (
        f" Significance from {ran} of at most {null.rule.max_replicates} null replicates: "
        f"{null.rule.describe()}; the p-value is valid where they stopped."
    )


def mdss_finding(
    *,
    penalty: float,
    best: SubgroupScore,
    subgroup: dict[str, list[str]],
    attributes: Sequence[EncodedAttribute],
    effect: Effect,
    null: NullResult | None,
    description: str,
    size: int | None = None,
    adjusted_p_value: float | None = None,
    significant: bool | None = None,
    extra: dict[str, Any] | None = None,
) -> Finding:
    """A subset-scan finding: the penalised score as statistic, the search figures as detail."""
    figures: dict[str, Any] = {
        "score": best.score,
        "llr": best.llr,
        "penalty_cost": penalty * best.penalty_units,
        "q": best.q,
        "observed_count": best.observed,
        "expected_count": best.expected,
        "null_quantile": null.quantile if null else None,
    }
    detail = MdssFindingDetail(**{**figures, **(extra or {})})
    return Finding(
        subgroup=subgroup,
        label=subgroup_label(subgroup, attributes),
        size=round(best.size) if size is None else size,
        statistic=Statistic(name="penalised_score", value=best.score),
        effect=effect,
        p_value=null.p_value if null else None,
        adjusted_p_value=adjusted_p_value,
        significant=significant if significant is not None or null is None else null.significant,
        description=description + stopping_words(null),
        detail=detail.model_dump(mode="json"),
    )


def scan_cells(problem: ScanProblem, inputs: MdssInputs) -> Cells:
    """The problem's cells: weighted by per-row ``inputs.weight`` (Gaussian precisions) times
    the rows' multiplicities, and for the Poisson score pooled by profile (exact, and as fast as
    a constant expectation) unless fractional sample weights need the rows for the null draws."""
    weight = inputs.rows_weight()
    if weight is not None:
        observed = problem.observed
        if inputs.multiplicity is not None:  # cell sums count every data row
            observed = observed * inputs.multiplicity
        cells = compress(problem.codes, observed, problem.expected, problem.cardinality, weight)
        multiplicity = inputs.multiplicity
        # permuted residuals are per row, whatever the weights: each times its row's weight
        per_row = inputs.draw == "permutation" or fractional(multiplicity)
        if multiplicity is None or not per_row:
            if inputs.score.likelihood == kernels.POISSON and inputs.weight is None:
                return pooled_means(cells)
            return cells
        # fractional sample weights: the null draws are per row, times the row's weight (so
        # the cells keep their rows: a weighted sum of Poisson counts is not Poisson)
        row_weight = multiplicity.astype(np.float64)
        if inputs.weight is None:
            return replace(cells, row_weight=row_weight)
        # Gaussian precisions 1 / sigma_i^2: the cell's null sum of w_i Delta_i / sigma_i^2 is
        # N(0, sum_i w_i^2 / sigma_i^2), drawn per cell (the law of the per-row draws' sum)
        variance = np.bincount(
            cells.row_cell, weights=row_weight**2 * inputs.weight, minlength=cells.n_cells
        )
        return replace(cells, draw_variance=variance)
    if inputs.score.likelihood == kernels.POISSON:
        return pooled_means(problem.cells())
    return problem.cells()


@dataclass(frozen=True)
class MdssSearch:
    """One scan's search: its problem, cells and best subgroup (and any clipping warning)."""

    problem: ScanProblem
    cells: Cells
    found: ScoredSubgroup
    warnings: tuple[str, ...] = ()
    # per-row Bernoulli expectations summarised by profile (null replicates use it)
    expectation: ExpectationCells | None = None


def search_mdss(
    spec: MdssScanSpecBase,
    inputs: MdssInputs,
    codes: np.ndarray,
    seed: np.random.SeedSequence,
    replicates: int = 0,
) -> MdssSearch:
    """Build the scanned problem from ``inputs`` and run the search under its score
    (``replicates``: the null replicates that will search the same representation)."""
    problem = ScanProblem.build(codes, inputs.observed, inputs.expected, clip=inputs.clip)
    cells = scan_cells(problem, inputs)
    warnings: tuple[str, ...] = ()
    # the database clipped the probabilities it summed (the rows hold bin means)
    clipped = problem.clipped if inputs.profile_sums is None else inputs.profile_sums[1].clipped
    if clipped:
        warnings = (f"{clipped} expectations outside [1e-6, 1 - 1e-6] were clipped to that range",)
    expectation = expectation_summary(inputs, cells, spec.restarts, replicates)
    if expectation is not None and inputs.profile_sums is not None:
        # the rows' expectations are bin means: the subgroup is scored from the database's
        # exact sums (the expansion at the optimal q: within ~1e-14 of the row-level score)
        best = search_summary(spec, expectation, seed)
        return MdssSearch(problem, cells, ScoredSubgroup(best), warnings, expectation)
    if expectation is not None:
        # the search over profiles finds the row-level search's subgroup (same restarts, same
        # candidate sets; tests/engine/test_expectation_cells.py); the score reported is the
        # subgroup's row-level score
        selection = search_selection(
            expectation, penalty=spec.penalty, restarts=spec.restarts, seed=search_seed(seed)
        )
        best = score_subgroup(cells, selection, inputs.direction, spec.penalty)
        return MdssSearch(problem, cells, ScoredSubgroup(best), warnings, expectation)
    found = best_subgroup(
        cells,
        inputs.score,
        direction=inputs.direction,
        penalty=spec.penalty,
        restarts=spec.restarts,
        seed=search_seed(seed),
    )
    return MdssSearch(problem, cells, found, warnings)


def search_summary(
    spec: MdssScanSpecBase, expectation: ExpectationCells, seed: np.random.SeedSequence
) -> SubgroupScore:
    """The search over a profile summary, its subgroup scored from the summary."""
    selection = search_selection(
        expectation, penalty=spec.penalty, restarts=spec.restarts, seed=search_seed(seed)
    )
    return summary_score(expectation, selection, spec.penalty)


def expectation_summary(
    inputs: MdssInputs, cells: Cells, restarts: int, replicates: int
) -> ExpectationCells | None:
    """The profile summary of per-row Bernoulli expectations, where it pays off over the
    search and ``replicates`` null replicates (else None); from the database's sums where it
    took them (always: the rows hold bin means)."""
    if inputs.profile_sums is not None and inputs.score == BERNOULLI and inputs.clip:
        row_profile, sums = inputs.profile_sums
        cell_profile = np.zeros(cells.n_cells, np.int64)
        cell_profile[cells.row_cell] = row_profile
        if (cell_profile[cells.row_cell] != row_profile).any():
            raise ValueError("a cell holds rows of two summed profiles")
        return from_profile_sums(cells, profiles_of(cells), cell_profile, sums, inputs.direction)
    if not (
        cells.row_weight is None
        and inputs.summarise_expectations
        and inputs.score == BERNOULLI
        and inputs.draw == "binomial"
        and inputs.clip
        and not cells.constant_expectation
    ):
        return None
    profiles = profiles_of(cells)
    if not worth_summarising(cells, profiles, restarts=restarts, replicates=replicates):
        return None
    return summarise(cells, inputs.direction, profiles)


def run_mdss(
    spec: MdssScanSpecBase, ctx: ScanContext, inputs: MdssInputs, parameters: dict[str, object]
) -> ScanResult:
    if getattr(spec, "subgroups", None):
        return run_given_subgroups(spec, ctx, inputs, parameters)
    started = time.perf_counter()
    scanned = search_mdss(
        spec,
        inputs,
        ctx.data.codes[inputs.rows],
        child_seed(ctx.seed, MdssStream.SEARCH),
        replicates=ctx.replicates,
    )
    search_done = time.perf_counter()
    null = _significance(
        spec, ctx, inputs, scanned.cells, scanned.found.best.score, scanned.expectation
    )
    done = time.perf_counter()
    timing = ScanTiming(
        search_seconds=search_done - started,
        significance_seconds=done - search_done,
        total_seconds=done - started,
    )
    return mdss_result(spec, ctx, inputs, scanned, null, parameters, timing)


def mdss_result(
    spec: MdssScanSpecBase,
    ctx: ScanContext,
    inputs: MdssInputs,
    scanned: MdssSearch,
    null: NullResult | None,
    parameters: dict[str, object],
    timing: ScanTiming,
    extra: dict[str, Any] | None = None,
) -> ScanResult:
    """The scan result of a search (one finding at most) and its randomization test."""
    problem, cells, found = scanned.problem, scanned.cells, scanned.found
    findings = []
    if is_material(found.best):
        findings.append(_finding(spec, ctx, inputs, problem, found, null, extra))
    total = inputs.total(np.ones(problem.observed.shape[0]))
    n = round(total)
    observed_total, expected_total = _population_totals(problem, inputs)
    if total != n:  # fractional weights: the rates over their exact total
        observed_total, expected_total = observed_total * n / total, expected_total * n / total
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(findings, tested=null is not None),
        parameters={
            **spec.model_dump(mode="json"),
            **parameters,
            # `alpha` is the significance level here; a Berk-Jones level keeps its own key
            "alpha": ctx.alpha,
            **_berk_jones_levels(spec),
            **({} if inputs.draw == "binomial" else {"null_draws": inputs.draw}),
            "replicates": ctx.replicates,
            "cells": cells.n_cells,
        },
        timing=timing,
        population=_population(inputs, n, observed_total, expected_total),
        findings=findings,
        null_distribution=null_distribution(null, ctx.alpha),
        warnings=list(scanned.warnings),
    )


GIVEN_NOTE = (
    "given subgroup tested alone under the scan's null model: no search, so no search "
    "correction applies"
)


def run_given_subgroups(
    spec: MdssScanSpecBase, ctx: ScanContext, inputs: MdssInputs, parameters: dict[str, object]
) -> ScanResult:
    """Score and test each of ``spec.subgroups`` (no search): one finding per subgroup, in the
    order given, with its exact or parametric p-value (:mod:`fairscan.engine.fixed`)."""
    from fairscan.data.subgroups import resolve_subgroups
    from fairscan.engine.scores import score_given

    started = time.perf_counter()
    given = resolve_subgroups(getattr(spec, "subgroups", None) or [], ctx.data.attributes)
    problem = ScanProblem.build(
        ctx.data.codes[inputs.rows], inputs.observed, inputs.expected, clip=inputs.clip
    )
    cells = scan_cells(problem, inputs)
    scored = [
        score_given(
            cells,
            inputs.score,
            given_selection(ctx.data.attributes, problem, subgroup),
            direction=inputs.direction,
            penalty=spec.penalty,
        )
        for subgroup in given
    ]
    tested = [
        _given_finding(spec, ctx, inputs, problem, cells, subgroup, found, k)
        for k, (subgroup, found) in enumerate(zip(given, scored, strict=True))
    ]
    findings = [finding for finding, _ in tested]
    done = time.perf_counter()
    timing = ScanTiming(
        search_seconds=0.0, significance_seconds=done - started, total_seconds=done - started
    )
    # the scan's population, parameters and warnings as a search reports them
    result = mdss_result(
        spec, ctx, inputs, MdssSearch(problem, cells, scored[0]), None, parameters, timing
    )
    return result.model_copy(
        update={
            "findings": findings,
            "status": scan_status(
                findings, tested=all(t.p_value is not None for _, t in tested), found=True
            ),
            "parameters": {
                **result.parameters,
                "mode": "given subgroups",
                "given_subgroup_tests": sorted({t.method for _, t in tested}),
            },
            "warnings": [*result.warnings, *_empty_warnings(findings)],
        }
    )


def _given_finding(
    spec: MdssScanSpecBase,
    ctx: ScanContext,
    inputs: MdssInputs,
    problem: ScanProblem,
    cells: Cells,
    subgroup: dict[str, list[str]],
    found: ScoredSubgroup,
    k: int,
) -> tuple[Finding, FixedTest]:
    """Given subgroup ``k``'s finding: its test, and its power where a re-test asks for it."""
    from fairscan.engine.fixed import fixed_power, fixed_test

    seed = child_seed(ctx.seed, MdssStream.FIXED, k)
    selection = found.best.selection
    test = fixed_test(
        cells,
        selection,
        direction=inputs.direction,
        llr=found.best.llr,
        draw=inputs.draw,
        seed=seed,
        replicates=ctx.replicates,
        residuals=inputs.observed - inputs.expected if inputs.draw == "permutation" else None,
        material=is_material(found.best),
    )
    figures: dict[str, Any] = {
        "index": k,
        "test": test.method,
        "replicates": test.replicates,
        "exceed_count": test.exceed_count,
        "note": GIVEN_NOTE,
    }
    if test.log10_p_value is not None:  # exact even below the smallest float
        figures["log10_p_value"] = test.log10_p_value
    q = ctx.detect[k] if k < len(ctx.detect) else None
    if q is not None:
        figures["power_at_q"] = q
        figures["power"] = fixed_power(
            cells,
            selection,
            direction=inputs.direction,
            q=q,
            alpha=ctx.alpha,
            draw=inputs.draw,
            seed=seed,
            replicates=ctx.replicates,
        )
    finding = _finding(spec, ctx, inputs, problem, found, None)
    p_text = p_equals(test.p_value, "untested", precise=True)
    finding = finding.model_copy(
        update={
            "subgroup": subgroup,
            "label": subgroup_label(subgroup, ctx.data.attributes),
            "p_value": test.p_value,
            "significant": None if test.p_value is None else test.p_value <= ctx.alpha,
            "description": f"{finding.description} Given subgroup ({test.method}, {p_text}; "
            "no search, so no search correction).",
            "detail": {**finding.detail, "given_subgroup": figures},
        }
    )
    return finding, test


def _empty_warnings(findings: Sequence[Finding]) -> list[str]:
    return [
        f"the given subgroup {f.label} has no rows among the scanned ones"
        for f in findings
        if f.size == 0
    ]


def given_selection(
    attributes: Sequence[EncodedAttribute], problem: ScanProblem, subgroup: dict[str, list[str]]
) -> np.ndarray:
    """A given subgroup (attribute -> labels) as a selection over the problem's local codes;
    a value absent from the scanned rows selects nothing there."""
    kmax = int(problem.cardinality.max()) if problem.cardinality.size else 0
    selection = np.zeros((len(attributes), max(kmax, 1)), dtype=bool)
    for j, attribute in enumerate(attributes):
        k = int(problem.cardinality[j])
        if attribute.name not in subgroup:
            selection[j, :k] = True
            continue
        wanted = [attribute.labels.index(v) for v in subgroup[attribute.name]]
        selection[j, :k] = np.isin(problem.value_index[j], wanted)
    return selection


def _population(inputs: MdssInputs, n: int, observed: float, expected: float) -> Population:
    """The scanned rows; a mean outcome (Gaussian, Poisson) is told in the description, not as
    a rate."""
    if inputs.score_name not in ("gaussian", "poisson") or not n:
        return Population(
            description=inputs.population,
            size=n,
            observed_rate=observed / n if n else None,
            expected_rate=expected / n if n else None,
            observed_label=inputs.observed_label,
        )
    means = f"{inputs.observed_label} {observed / n:.6g} observed vs {expected / n:.6g} expected"
    return Population(
        description=f"{inputs.population}; {means}",
        size=n,
        observed_rate=None,
        expected_rate=None,
        observed_label=inputs.observed_label,
    )


def _berk_jones_levels(spec: MdssScanSpecBase) -> dict[str, object]:
    levels = getattr(spec, "alpha", None)
    return {} if levels is None else {"berk_jones_alpha": levels}


def _population_totals(problem: ScanProblem, inputs: MdssInputs) -> tuple[float, float]:
    """Sums of the outcome and its expectation over the scanned rows (raw values if given)."""
    if inputs.raw is not None:
        return inputs.total(inputs.raw[0]), inputs.total(inputs.raw[1])
    return inputs.total(problem.observed), inputs.total(problem.expected)


def _significance(
    spec: MdssScanSpecBase,
    ctx: ScanContext,
    inputs: MdssInputs,
    cells: Cells,
    observed: float,
    expectation: ExpectationCells | None = None,
) -> NullResult | None:
    """The parametric randomization test of the maximum score (None with replicates 0).

    With an ``expectation`` summary a replicate draws Bernoulli(p) per row, sums the draws per
    profile and searches the profiles (:class:`ExpectationReplicate`)."""
    if ctx.replicates <= 0:
        return None
    settings = NullSettings(inputs.direction, spec.penalty, spec.restarts)
    seed = child_seed(ctx.seed, MdssStream.NULL)
    job: ExpectationReplicate | MdssReplicate
    if expectation is not None:
        job = ExpectationReplicate(expectation, settings, seed)
    else:
        residuals = inputs.observed - inputs.expected if inputs.draw == "permutation" else None
        job = MdssReplicate(cells, settings, seed, inputs.draw, inputs.score, residuals)
    return ctx.null_test(job, f"{spec.id}: null replicates", observed)


def reported_figures(
    problem: ScanProblem, inputs: MdssInputs, best: SubgroupScore
) -> SubgroupScore:
    """The best subgroup with its size, observed and expected sums in the outcome's own units.

    The cells of the Gaussian score hold transformed values (Delta / sigma^2 over weights
    1 / sigma^2); the report needs rows, outcome and prediction totals instead.
    """
    if inputs.raw is None:
        return best
    inside = problem.members(best.selection)
    outcome, expectation = inputs.raw
    return replace(
        best,
        size=inputs.total(np.ones(inside.shape[0]), inside),
        observed=inputs.total(outcome, inside),
        expected=inputs.total(expectation, inside),
    )


def score_extra(inputs: MdssInputs, found: ScoredSubgroup) -> dict[str, Any]:
    """Finding detail of a non-default score: its name and its fitted parameter."""
    if inputs.score_name == "bernoulli":
        return {}
    extra: dict[str, Any] = {"score_function": inputs.score_name}
    if inputs.score_name == "gaussian":
        extra["mean_shift"] = found.best.log_q
        extra["q"] = None
    if found.alpha is not None:
        extra["alpha"] = found.alpha
    return extra


def _finding(
    spec: MdssScanSpecBase,
    ctx: ScanContext,
    inputs: MdssInputs,
    problem: ScanProblem,
    found: ScoredSubgroup,
    null: NullResult | None,
    extra: dict[str, Any] | None = None,
) -> Finding:
    best = reported_figures(problem, inputs, found.best)
    subgroup = subgroup_labels(ctx.data.attributes, problem, best.selection)
    n = inputs.total(np.ones(problem.observed.shape[0]))
    outside_n = n - best.size
    total_observed, _ = _population_totals(problem, inputs)
    outside_rate = (total_observed - best.observed) / outside_n if outside_n > 0 else None
    observed_rate = best.observed / best.size if best.size else None
    expected_rate = best.expected / best.size if best.size else None
    if inputs.reference == "outside":
        reference, reference_count = outside_rate, round(outside_n)
    else:
        reference, reference_count = expected_rate, round(best.size)
    label = subgroup_label(subgroup, ctx.data.attributes)
    effect = Effect(
        metric=inputs.metric,
        inside=observed_rate,
        reference=reference,
        reference_name=inputs.reference_name,
        inside_count=round(best.size),
        reference_count=reference_count,
        expected=expected_rate,
    )
    description = inputs.describe(label, best, observed_rate, expected_rate, outside_rate)
    return mdss_finding(
        penalty=spec.penalty,
        best=best,
        subgroup=subgroup,
        attributes=ctx.data.attributes,
        effect=effect,
        null=null,
        description=description,
        extra={**score_extra(inputs, found), **(extra or {})},
    )


__all__ = [
    "MDSS_HOOKS",
    "MdssFindingDetail",
    "MdssInputs",
    "finding_markdown",
    "mdss_finding",
    "null_distribution",
    "run_mdss",
    "subgroup_labels",
]
