"""Shared runner for the Bernoulli MDSS scans: search, re-score, randomization test, finding.

The scan modules only decide which rows are scanned, what is observed and what is expected
(and how to phrase it); everything else is here so all MDSS scans behave the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    Finding,
    NullDistribution,
    Population,
    ScanResult,
    ScanTiming,
)
from fairscan.scans.base import ScanContext
from fairscan.spec.base import MdssScanSpecBase


@dataclass(frozen=True)
class MdssInputs:
    """What a scan adapter hands to the shared runner."""

    rows: np.ndarray  # boolean mask of the scanned rows
    observed: np.ndarray  # observed indicator on the scanned rows
    expected: np.ndarray  # expectation on the scanned rows
    direction: int
    population: str  # e.g. "true negatives (two_year_recid = 0)"
    observed_label: str  # e.g. "recommended positive (high_risk = 1)"
    # Finding -> sentence; gets (subgroup text, finding fields) and returns the description
    describe: Callable[[str, SubgroupScore, float | None, float | None, float | None], str]


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


def make_finding(
    spec: MdssScanSpecBase,
    best: SubgroupScore,
    subgroup: dict[str, list[str]],
    outside_rate: float | None,
    null: NullResult | None,
    description: str,
    **extra: object,
) -> Finding:
    """A Finding from a re-scored subgroup and its (optional) randomization test."""
    return Finding(
        subgroup=subgroup,
        score=best.score,
        llr=best.llr,
        penalty_cost=spec.penalty * best.penalty_units,
        size=round(best.size),
        observed_count=best.observed,
        expected_count=best.expected,
        observed_rate=best.observed / best.size if best.size else None,
        expected_rate=best.expected / best.size if best.size else None,
        outside_rate=outside_rate,
        q=best.q,
        p_value=null.p_value if null else None,
        significant=null.significant if null else None,
        null_quantile=null.quantile if null else None,
        description=description,
        **extra,  # type: ignore[arg-type]
    )


def scan_status(has_finding: bool, null: NullResult | None) -> str:
    if not has_finding:
        return "no_finding"
    if null is None:
        return "untested"
    return "significant" if null.significant else "not_significant"


def run_mdss(
    spec: MdssScanSpecBase, ctx: ScanContext, inputs: MdssInputs, parameters: dict[str, object]
) -> ScanResult:
    from fairscan.report.text import describe_subgroup

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

    null = None
    if ctx.replicates > 0:
        ctx.progress.start(f"{spec.id}: null replicates", ctx.replicates)
        try:
            null = randomization_test(
                cells,
                NullSettings(inputs.direction, spec.penalty, spec.restarts),
                best.score,
                child_seed(ctx.seed, 1),
                ctx.replicates,
                ctx.alpha,
                workers=ctx.workers,
                on_progress=ctx.progress.advance,
            )
        finally:
            ctx.progress.done()
    significance_done = time.perf_counter()

    n = float(problem.observed.shape[0])
    total_observed = float(problem.observed.sum())
    total_expected = float(problem.expected.sum())
    population = Population(
        description=inputs.population,
        size=int(n),
        observed_rate=total_observed / n if n else None,
        expected_rate=total_expected / n if n else None,
        observed_label=inputs.observed_label,
    )

    findings: list[Finding] = []
    if is_material(best):
        subgroup = subgroup_labels(ctx.data.attributes, problem, best.selection)
        outside_n = n - best.size
        outside_rate = (total_observed - best.observed) / outside_n if outside_n > 0 else None
        observed_rate = best.observed / best.size if best.size else None
        expected_rate = best.expected / best.size if best.size else None
        description = inputs.describe(
            describe_subgroup(subgroup), best, observed_rate, expected_rate, outside_rate
        )
        findings.append(make_finding(spec, best, subgroup, outside_rate, null, description))

    return ScanResult(
        id=spec.id,
        type=spec.type,  # type: ignore[attr-defined]
        status=scan_status(bool(findings), null),
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
        population=population,
        findings=findings,
        null_distribution=null_distribution(null, ctx.alpha),
        warnings=warnings,
    )
