"""Shared runner for the Bernoulli MDSS scans: search, re-score, randomization test, finding.

The scan modules only decide which rows are scanned, what is observed and what is expected
(and how to phrase it); everything else is here so all MDSS scans behave the same. The finding
helpers (:func:`subgroup_labels`, :func:`mdss_finding`, :func:`null_distribution`) are shared
with the IJDI-Scan and the CBS; the finding detail and its render hook live in
:mod:`fairscan.scans.mdss_render` (no numba import: the registry loads it at start-up).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fairscan.data.table import EncodedAttribute
from fairscan.engine.mdss import ScanProblem, SubgroupScore, is_material, search
from fairscan.engine.randomization import (
    NullResult,
    NullSettings,
    child_seed,
    randomization_test,
    search_seed,
)
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
from fairscan.scans.base import ScanContext
from fairscan.scans.labels import subgroup_label
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
    detail = MdssFindingDetail(
        score=best.score,
        llr=best.llr,
        penalty_cost=penalty * best.penalty_units,
        q=best.q,
        observed_count=best.observed,
        expected_count=best.expected,
        null_quantile=null.quantile if null else None,
        **(extra or {}),
    )
    return Finding(
        subgroup=subgroup,
        label=subgroup_label(subgroup, attributes),
        size=round(best.size) if size is None else size,
        statistic=Statistic(name="penalised_score", value=best.score),
        effect=effect,
        p_value=null.p_value if null else None,
        adjusted_p_value=adjusted_p_value,
        significant=significant if significant is not None or null is None else null.significant,
        description=description,
        detail=detail.model_dump(mode="json"),
    )


def run_mdss(
    spec: MdssScanSpecBase, ctx: ScanContext, inputs: MdssInputs, parameters: dict[str, object]
) -> ScanResult:
    started = time.perf_counter()
    problem = ScanProblem.build(ctx.data.codes[inputs.rows], inputs.observed, inputs.expected)
    cells = problem.cells()
    warnings: list[str] = []
    if problem.clipped:
        warnings.append(
            f"{problem.clipped} expectations outside [1e-6, 1 - 1e-6] were clipped to that range"
        )
    best = search(
        cells,
        direction=inputs.direction,
        penalty=spec.penalty,
        restarts=spec.restarts,
        seed=search_seed(child_seed(ctx.seed, 0)),
    )
    search_done = time.perf_counter()
    null = _significance(spec, ctx, inputs.direction, cells, best.score)
    significance_done = time.perf_counter()

    findings = []
    if is_material(best):
        findings.append(_finding(spec, ctx, inputs, problem, best, null))
    n = int(problem.observed.shape[0])
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(findings, tested=null is not None),
        parameters={
            **spec.model_dump(mode="json"),
            **parameters,
            "alpha": ctx.alpha,
            "replicates": ctx.replicates,
            "cells": cells.n_cells,
        },
        timing=ScanTiming(
            search_seconds=search_done - started,
            significance_seconds=significance_done - search_done,
            total_seconds=significance_done - started,
        ),
        population=Population(
            description=inputs.population,
            size=n,
            observed_rate=float(problem.observed.sum()) / n if n else None,
            expected_rate=float(problem.expected.sum()) / n if n else None,
            observed_label=inputs.observed_label,
        ),
        findings=findings,
        null_distribution=null_distribution(null, ctx.alpha),
        warnings=warnings,
    )


def _significance(
    spec: MdssScanSpecBase, ctx: ScanContext, direction: int, cells: Any, observed: float
) -> NullResult | None:
    """The parametric randomization test of the maximum score (None with replicates 0)."""
    if ctx.replicates <= 0:
        return None
    ctx.progress.start(f"{spec.id}: null replicates", ctx.replicates)
    try:
        return randomization_test(
            cells,
            NullSettings(direction, spec.penalty, spec.restarts),
            observed,
            child_seed(ctx.seed, 1),
            ctx.replicates,
            ctx.alpha,
            workers=ctx.workers,
            on_progress=ctx.progress.advance,
        )
    finally:
        ctx.progress.done()


def _finding(
    spec: MdssScanSpecBase,
    ctx: ScanContext,
    inputs: MdssInputs,
    problem: ScanProblem,
    best: SubgroupScore,
    null: NullResult | None,
) -> Finding:
    subgroup = subgroup_labels(ctx.data.attributes, problem, best.selection)
    n = float(problem.observed.shape[0])
    outside_n = n - best.size
    total_observed = float(problem.observed.sum())
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
