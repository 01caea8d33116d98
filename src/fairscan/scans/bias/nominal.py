"""Bias Scan of a nominal outcome: one Bernoulli scan per class (one-vs-all), the best reported.

Class k's scan observes 1{y = k} against the predicted probability of k (a column of
``class_probabilities``, or the class's base rate). The statistic is the best score over the
classes; every null replicate draws one class per row from its class probabilities (jointly for
all classes) and takes the same maximum, so the p-value is corrected for the number of classes.

With ``positive: <class>`` one chosen class is scanned one-vs-rest (AIF360's ``mode='nominal',
favorable_value=<class>``): the binary Bernoulli scan of 1{y = class} against that class's
probability column (its class_probabilities entry or `prediction`; default its base rate), with
binary null replicates and no correction over classes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairscan.engine.mdss import SubgroupScore, direction_code
from fairscan.engine.randomization import (
    NominalReplicate,
    NullResult,
    NullSettings,
)
from fairscan.engine.seeds import MdssStream, child_seed
from fairscan.errors import ScanError
from fairscan.report.models import ScanTiming
from fairscan.report.text import compared, percent
from fairscan.scans.base import ScanContext
from fairscan.scans.mdss_runner import Describe, MdssInputs, MdssSearch, mdss_result, search_mdss

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult
    from fairscan.scans.bias.spec import BiasScanSpec

# Class probabilities of a row may miss 1 by this much (rounding in the file), no more.
SUM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class ClassModel:
    """The classes scanned and each row's predicted probability of each (n, K)."""

    labels: tuple[str, ...]
    probabilities: np.ndarray
    source: str  # "class_probabilities" or "base rates"


def class_model(spec: BiasScanSpec, ctx: ScanContext) -> ClassModel:
    """The class probabilities: the spec's columns (checked), or the classes' base rates."""
    outcome = np.asarray(ctx.outcome, dtype=object)
    present = sorted(set(outcome.tolist()))
    if not ctx.roles.classes:
        w = ctx.data.row_weight  # fractional sample weights: weighted base rates
        rates = np.array([np.average(outcome == label, weights=w) for label in present])
        return ClassModel(tuple(present), np.tile(rates, (outcome.shape[0], 1)), "base rates")
    labels = tuple(ctx.roles.classes)
    missing = [label for label in present if label not in labels]
    if missing:
        name = ctx.role_names.get("outcome", "outcome")
        counts = ", ".join(f"{m!r} ({int(np.sum(outcome == m))} rows)" for m in missing[:5])
        raise ScanError(
            f"outcome {name!r} holds classes with no column in class_probabilities: {counts}",
            field="class_probabilities",
            hint="add a probability column for each class, e.g. "
            + ", ".join(f"{m}: p_{m}" for m in missing[:3]),
        )
    probabilities = np.column_stack([ctx.roles.classes[label] for label in labels])
    _check_sums(probabilities)
    return ClassModel(labels, probabilities, "class_probabilities")


def _check_sums(probabilities: np.ndarray) -> None:
    sums = probabilities.sum(axis=1)
    bad = np.abs(sums - 1.0) > SUM_TOLERANCE
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ScanError(
            f"the class probabilities of {int(bad.sum())} rows do not sum to 1 (within "
            f"{SUM_TOLERANCE:g}); e.g. scanned row {first + 1} sums to {sums[first]:.6g}",
            field="class_probabilities",
            hint="name one column per class (all classes of the model), each row summing to 1",
        )


def _describer(label: str, outcome: str, column: str, which: str) -> Describe:
    """The finding's sentence for one class (``which``: how the class was chosen)."""

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        return (
            f"Class {label}: the {round(best.size)} rows with {who} have {outcome} = {label} in "
            f"{percent(observed_rate)} of cases but a mean predicted probability ({column}) of "
            f"{percent(expected_rate)}: class {label} is {_predicted(observed_rate, expected_rate)} "
            f"there (odds multiplier "
            f"q = {best.q:.2f}; {which})."
        )

    return describe


def _predicted(observed: float | None, expected: float | None) -> str:
    """How the class is predicted in a subgroup, as the data show it (not the scan's direction)."""
    words = {1: "under-predicted", -1: "over-predicted", 0: "predicted at its observed rate"}
    return words[compared(observed, expected)]


def _class_inputs(spec: BiasScanSpec, ctx: ScanContext, model: ClassModel, k: int) -> MdssInputs:
    label = model.labels[k]
    outcome = ctx.role_names.get("outcome", "outcome")
    column = ctx.role_names.get(f"class {label}", f"the base rate of {label}")
    describe = _describer(
        label,
        outcome,
        column,
        f"best of {len(model.labels)} classes, p-value corrected for them",
    )

    return MdssInputs(
        rows=np.ones(ctx.data.n_rows, dtype=bool),
        observed=(np.asarray(ctx.outcome, dtype=object) == label).astype(np.float64),
        expected=model.probabilities[:, k],
        direction=direction_code(spec.direction),
        population=f"all rows ({outcome}, one-vs-all per class; best class {label})",
        observed_label=f"{outcome} = {label}",
        metric=f"rate of {outcome} = {label}",
        reference="expected",
        reference_name=f"mean predicted probability of {label} ({column}) in the subgroup",
        describe=describe,
        multiplicity=ctx.data.row_weight,  # fractional sample weights: weighted counts
    )


def _null(
    spec: BiasScanSpec,
    ctx: ScanContext,
    model: ClassModel,
    searches: list[MdssSearch],
    observed: float,
) -> NullResult | None:
    """The randomization test of the best class's score: categorical draws, max over classes."""
    if ctx.replicates <= 0:
        return None
    job = NominalReplicate(
        tuple(s.cells for s in searches),
        model.probabilities,
        NullSettings(direction_code(spec.direction), spec.penalty, spec.restarts),
        child_seed(ctx.seed, MdssStream.NULL),
    )
    return ctx.null_test(job, f"{spec.id}: null replicates", observed)


def _chosen_class(spec: BiasScanSpec, ctx: ScanContext) -> tuple[str, np.ndarray, str]:
    """(the positive class, its probability per row, where it came from); a clear error when the
    class does not occur or has no probability column."""
    outcome = np.asarray(ctx.outcome, dtype=object)
    name = ctx.role_names.get("outcome", "outcome")
    label = str(spec.positive).lower() if isinstance(spec.positive, bool) else str(spec.positive)
    present = sorted(set(outcome.tolist()))
    if label not in present:
        raise ScanError(
            f"positive class {label!r} does not occur in outcome {name!r}; its classes are: "
            + ", ".join(repr(p) for p in present[:10]),
            field="positive",
            hint="set positive to one of the outcome's classes (check spelling and data.filter)",
        )
    if ctx.roles.prediction is not None:
        return (
            label,
            ctx.prediction.astype(np.float64),
            ctx.role_names.get("prediction", "prediction"),
        )
    if ctx.roles.classes:
        if label not in ctx.roles.classes:
            raise ScanError(
                f"class_probabilities has no column for the positive class {label!r}",
                field="class_probabilities",
                hint=f"add {label}: <its probability column>, or give it as `prediction`",
            )
        return (
            label,
            np.asarray(ctx.roles.classes[label], dtype=np.float64),
            ctx.role_names.get(f"class {label}", label),
        )
    rate = float(np.average(outcome == label, weights=ctx.data.row_weight))
    return label, np.full(outcome.shape[0], rate), f"the base rate of {label}"


def run_one_class_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    """One chosen class, one-vs-rest: the binary Bernoulli Bias Scan of 1{y = class}."""
    from fairscan.scans.mdss_runner import run_mdss

    label, expected, column = _chosen_class(spec, ctx)
    outcome = ctx.role_names.get("outcome", "outcome")
    describe = _describer(label, outcome, column, "the chosen class, one-vs-rest")

    inputs = MdssInputs(
        rows=np.ones(ctx.data.n_rows, dtype=bool),
        observed=(np.asarray(ctx.outcome, dtype=object) == label).astype(np.float64),
        expected=expected,
        direction=direction_code(spec.direction),
        population=f"all rows ({outcome} = {label} vs the rest)",
        observed_label=f"{outcome} = {label}",
        metric=f"rate of {outcome} = {label}",
        reference="expected",
        reference_name=f"mean predicted probability of {label} ({column}) in the subgroup",
        describe=describe,
        summarise_expectations=True,
        multiplicity=ctx.data.row_weight,  # fractional sample weights: weighted counts
    )
    parameters: dict[str, object] = {
        "score": spec.score,
        "outcome_type": "nominal",
        "class": label,
        "mode": "one class vs the rest (positive)",
        "class_probability": column,
    }
    result = run_mdss(spec, ctx, inputs, parameters)
    result.detail["class"] = label
    return result


def run_nominal_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    if spec.positive is not None:
        return run_one_class_scan(spec, ctx)
    if spec.subgroups:
        raise ScanError(
            "given subgroups are tested for one class of a nominal outcome",
            field="subgroups",
            hint="set `positive:` to the class whose rate the subgroups are tested on",
        )
    started = time.perf_counter()
    model = class_model(spec, ctx)
    inputs = [_class_inputs(spec, ctx, model, k) for k in range(len(model.labels))]
    searches = [
        search_mdss(spec, inputs[k], ctx.data.codes, child_seed(ctx.seed, MdssStream.SEARCH, k))
        for k in range(len(model.labels))
    ]
    scores = [s.found.best.score for s in searches]
    top = int(np.argmax(scores))  # ties: the first class in the written order
    search_done = time.perf_counter()
    null = _null(spec, ctx, model, searches, scores[top])
    done = time.perf_counter()
    timing = ScanTiming(
        search_seconds=search_done - started,
        significance_seconds=done - search_done,
        total_seconds=done - started,
    )
    parameters: dict[str, object] = {
        "score": spec.score,
        "outcome_type": "nominal",
        "classes": list(model.labels),
        "class_probabilities_source": model.source,
    }
    result = mdss_result(
        spec,
        ctx,
        inputs[top],
        searches[top],
        null,
        parameters,
        timing,
        extra={"class": model.labels[top], "classes_scanned": len(model.labels)},
    )
    result.detail["classes"] = [
        {
            "class": label,
            "score": s.found.best.score,
            "size": s.found.best.size,
            "q": s.found.best.q,
        }
        for label, s in zip(model.labels, searches, strict=True)
    ]
    return result
