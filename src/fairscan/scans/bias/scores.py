"""Bias Scan beyond the binary Bernoulli calibration scan: Berk-Jones, Gaussian and Poisson scores
over binary, continuous, count and ordinal outcomes (nominal outcomes: :mod:`.nominal`).

Each outcome type decides what the cells observe and expect, how the null redraws them, and how
a finding reads; the search, the randomization test and the report are the shared MDSS runner's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fairscan.engine.mdss import SubgroupScore, direction_code
from fairscan.engine.scores import POISSON, berk_jones, gaussian
from fairscan.errors import ScanError
from fairscan.report.text import compared, percent
from fairscan.scans.base import ScanContext
from fairscan.scans.mdss_runner import Describe, MdssInputs, run_mdss
from fairscan.scans.roles import outcome_text

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult
    from fairscan.scans.bias.spec import BiasScanSpec


def run_scored_bias_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    if spec.score == "berk_jones" and spec.outcome_type == "continuous":
        inputs, binarised = continuous_berk_jones_inputs(spec, ctx)
        result = run_mdss(
            spec,
            ctx,
            inputs,
            {"score": spec.score, "outcome_type": "continuous", "binarised": binarised},
        )
        observed, weight = inputs.observed, ctx.data.row_weight
        rate = float(np.average(observed, weights=weight)) if observed.size else 0.0
        (alpha,) = spec.alpha_grid()
        if (rate > alpha) if spec.direction == "positive" else (rate < alpha):
            side = "above" if spec.direction == "positive" else "below"
            result.warnings.append(
                f"{binarised}, {side} alpha = {alpha:g} for the whole population: AIF360's rule "
                f"compares the share above the alpha-quantile (1 - alpha overall) with alpha, "
                "so away from alpha = 0.5 the whole population is the finding in this direction"
            )
        return result
    expectation, expectation_note = expectations(spec, ctx)
    build = _BUILDERS[spec.score]
    inputs = build(spec, ctx, expectation)
    parameters: dict[str, object] = {"score": spec.score, "outcome_type": spec.outcome_type}
    if expectation_note:
        parameters["expectation"] = expectation_note
    result = run_mdss(spec, ctx, inputs, parameters)
    if inputs.score.sigma != 1.0 or spec.score == "gaussian":
        result.parameters.update(_variance_parameters(spec, ctx, expectation))
    return result


def expectations(spec: BiasScanSpec, ctx: ScanContext) -> tuple[np.ndarray, str | None]:
    """The prediction, or (no prediction given) the outcome's overall mean, AIF360's default."""
    if ctx.roles.prediction is not None:
        return ctx.roles.prediction, None
    outcome = np.asarray(ctx.outcome, dtype=np.float64)
    # aggregated data (a streamed dataset): each row stands for row_weight data rows
    mean = float(np.average(outcome, weights=ctx.data.row_weight)) if outcome.size else 0.0
    name = ctx.role_names.get("outcome", "outcome")
    return np.full(outcome.shape[0], mean), f"overall mean of {name} ({mean:.6g}): no prediction"


def _names(ctx: ScanContext) -> tuple[str, str]:
    outcome = ctx.role_names.get("outcome", "outcome")
    prediction = ctx.role_names.get("prediction", f"the overall mean of {outcome}")
    return outcome, prediction


def _verdict(observed: float | None, expected: float | None) -> str:
    """What the model does in a subgroup, as the data show it (not the scan's direction)."""
    return {1: "under-predicts", -1: "over-predicts", 0: "matches"}[compared(observed, expected)]


def _level_side(observed: float | None, level: float | None) -> str:
    """Where a subgroup's rate lies against the Berk-Jones level, as the data show it."""
    return {1: "above", -1: "below", 0: "at"}[compared(observed, level)]


# --------------------------------------------------------------------------------------------
# Binary outcome, Berk-Jones score
# --------------------------------------------------------------------------------------------


def berk_jones_inputs(spec: BiasScanSpec, ctx: ScanContext, expected: np.ndarray) -> MdssInputs:
    """Binary outcome against the Berk-Jones level(s); the null keeps the expectations."""
    grid = spec.alpha_grid()
    event = outcome_text(ctx.role_names, 1)

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        return (
            f"The {round(best.size)} rows with {who} have {event} in {percent(observed_rate)} "
            f"of cases, {_level_side(observed_rate, expected_rate)} the Berk-Jones level "
            f"alpha = {expected_rate:g} (odds multiplier "
            f"q = {best.q:.2f}; outside the subgroup: {percent(outside_rate)})."
        )

    return MdssInputs(
        rows=np.ones(ctx.data.n_rows, dtype=bool),
        observed=ctx.outcome.astype(np.float64),
        expected=expected,
        direction=direction_code(spec.direction),
        population=f"all rows ({ctx.role_names.get('outcome', 'outcome')}, Berk-Jones score)",
        observed_label=event,
        metric=f"rate of {event}",
        reference="expected",
        reference_name="the Berk-Jones level alpha",
        describe=describe,
        score=berk_jones(grid),
        score_name="berk_jones",
        multiplicity=ctx.data.row_weight,  # weighted counts (sample weights, streamed counts)
    )


def weighted_linear_quantile(y: np.ndarray, weight: np.ndarray, alpha: float) -> float:
    """numpy's linear-interpolation ``alpha``-quantile of the rows repeated ``weight`` times:
    position h = (N - 1) alpha among N = sum(weight) "rows", between the values at floor(h) and
    floor(h) + 1. Exactly that for whole-number weights; for fractional ones the same rule on
    the weighted empirical distribution (the value at position k is the first row, in order,
    whose cumulative weight exceeds k)."""
    order = np.argsort(y, kind="stable")
    values, cumulative = y[order], np.cumsum(weight[order])
    h = max(float(cumulative[-1]) - 1.0, 0.0) * alpha
    low = np.floor(h)

    def at(position: float) -> float:
        k = int(np.searchsorted(cumulative, position, side="right"))
        return float(values[min(k, len(values) - 1)])

    return at(low) + (h - low) * (at(low + 1.0) - at(low))


def continuous_berk_jones_inputs(spec: BiasScanSpec, ctx: ScanContext) -> tuple[MdssInputs, str]:
    """A continuous outcome binarised as AIF360 does for Berk-Jones: 1{y > Q(alpha)}, Q the
    alpha-quantile of the outcome (linear interpolation, pandas' and numpy's default; with
    fractional sample weights :func:`weighted_linear_quantile`), scored against the level
    alpha; the null draws the indicator at its overall (weighted) rate (autostrat)."""
    from dataclasses import replace

    (alpha,) = spec.alpha_grid()
    y = np.asarray(ctx.outcome, dtype=np.float64)
    weight = ctx.data.row_weight  # fractional sample weights (rescaled to sum to the rows)
    if not y.size:
        cut = 0.0
    elif weight is None:
        cut = float(np.quantile(y, alpha))
    else:
        cut = weighted_linear_quantile(y, np.asarray(weight, dtype=np.float64), alpha)
    indicator = (y > cut).astype(np.float64)
    rate = float(np.average(indicator, weights=weight)) if y.size else 0.0
    outcome = ctx.role_names.get("outcome", "outcome")
    event = f"{outcome} > {cut:.6g}"
    rule = (
        f"1{{{outcome} > {cut:.6g}}}: the outcome above its alpha = {alpha:g} quantile "
        f"({cut:.6g}, linear interpolation), as AIF360 binarises a continuous outcome for "
        f"Berk-Jones; overall rate {rate:.4g}"
    )

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        return (
            f"The {round(best.size)} rows with {who} have {event} (the outcome's {alpha:g}-"
            f"quantile) in {percent(observed_rate)} of cases, "
            f"{_level_side(observed_rate, alpha)} the Berk-Jones level "
            f"alpha = {alpha:g} (q = {best.q:.2f}; outside the subgroup: "
            f"{percent(outside_rate)})."
        )

    base = berk_jones_inputs(spec, ctx, np.full(y.shape[0], rate))
    inputs = replace(
        base,
        observed=indicator,
        population=f"all rows ({outcome} binarised at its {alpha:g}-quantile, Berk-Jones score)",
        observed_label=event,
        metric=f"rate of {event}",
        describe=describe,
    )
    return inputs, rule


# --------------------------------------------------------------------------------------------
# Continuous outcome, Gaussian mean-shift score
# --------------------------------------------------------------------------------------------


def residual_variances(spec: BiasScanSpec, ctx: ScanContext, residual: np.ndarray) -> np.ndarray:
    """Per-row variances sigma_i^2: the variance column, or one pooled sample variance."""
    if spec.variance_column is not None:
        values = ctx.data.extra.get(spec.variance_column)
        if values is None or values.dtype == object:
            raise ScanError(
                f"variance column {spec.variance_column!r} must hold numbers",
                field="variance_column",
                column=spec.variance_column,
                hint="point variance_column at a column of residual variances (> 0)",
            )
        bad = ~(np.isfinite(values) & (values > 0))
        if bad.any():
            raise ScanError(
                f"variance column {spec.variance_column!r} must hold variances > 0; "
                f"{int(bad.sum())} rows do not (min {float(np.min(values)):.6g})",
                field="variance_column",
                column=spec.variance_column,
                hint="a zero variance would divide by zero; drop or fix those rows",
            )
        return np.asarray(values, dtype=np.float64)
    pooled = pooled_variance(residual, ctx.data.row_weight)
    return np.full(residual.shape[0], pooled)


def pooled_variance(residual: np.ndarray, weight: np.ndarray | None = None) -> float:
    """The sample variance (ddof 1) of the residuals; an error where it is 0 (or undefined).

    With sample weights (fractional ones are rescaled to mean 1, so they sum to n) the
    weighted one, ``sum w (r - rbar_w)^2 / (sum w - 1)``: that of the rows repeated w times
    for whole-number weights."""
    if weight is None:
        variance = float(np.var(residual, ddof=1)) if residual.size > 1 else 0.0
    else:
        total = float(weight.sum())
        mean = float(weight @ residual) / total if total > 0 else 0.0
        spread = float(weight @ (residual - mean) ** 2)
        variance = spread / (total - 1.0) if total > 1.0 else 0.0
    if not (np.isfinite(variance) and variance > 0.0):
        raise ScanError(
            "the residuals (outcome - prediction) are all equal, so their pooled variance is 0 "
            "and the Gaussian score would divide by zero",
            field="score",
            hint="give per-row variances with variance_column, or check the outcome and "
            "prediction columns",
        )
    return variance


def _variance_parameters(
    spec: BiasScanSpec, ctx: ScanContext, expected: np.ndarray
) -> dict[str, object]:
    if spec.variance_column is not None:
        return {"variance": f"per-row variances from column {spec.variance_column!r}"}
    residual = np.asarray(ctx.outcome, dtype=np.float64) - expected
    return {"variance": "pooled", "pooled_variance": pooled_variance(residual, ctx.data.row_weight)}


def gaussian_inputs(spec: BiasScanSpec, ctx: ScanContext, expected: np.ndarray) -> MdssInputs:
    """Residuals Delta = outcome - expectation, weighted by 1 / sigma_i^2 (sigma 1 in the kernel)."""
    outcome_values = np.asarray(ctx.outcome, dtype=np.float64)
    residual = outcome_values - expected
    variance = residual_variances(spec, ctx, residual)
    outcome, prediction = _names(ctx)

    def describe(
        who: str,
        best: SubgroupScore,
        observed_mean: float | None,
        expected_mean: float | None,
        outside_mean: float | None,
    ) -> str:
        shift = (observed_mean or 0.0) - (expected_mean or 0.0)
        return (
            f"The {round(best.size)} rows with {who} have mean {outcome} {observed_mean:.6g} "
            f"observed vs {expected_mean:.6g} predicted ({prediction}; mean shift "
            f"{shift:+.4g}): the model {_verdict(observed_mean, expected_mean)} {outcome} there."
        )

    return MdssInputs(
        rows=np.ones(ctx.data.n_rows, dtype=bool),
        observed=residual / variance,
        expected=np.zeros(residual.shape[0]),
        direction=direction_code(spec.direction),
        population=f"all rows ({outcome} vs prediction {prediction}, Gaussian mean shift)",
        observed_label=f"mean {outcome}",
        metric=f"mean {outcome}",
        reference="expected",
        reference_name=f"mean predicted {outcome} ({prediction}) in the subgroup",
        describe=describe,
        score=gaussian(),
        draw="gaussian",
        score_name="gaussian",
        clip=False,
        weight=1.0 / variance,
        raw=(outcome_values, expected),
        # fractional sample weights: the weighted likelihood, sum_S w_i (mu Delta_i - mu^2 / 2)
        # / sigma_i^2, and each row's N(0, sigma_i^2) null draw times its weight
        multiplicity=ctx.data.row_weight,
    )


# --------------------------------------------------------------------------------------------
# Count and ordinal outcomes, Poisson score
# --------------------------------------------------------------------------------------------


# Poisson null draws (numpy) take means up to about 1e18; a count model never predicts more
MAX_POISSON_MEAN = 1e15


def _check_poisson_means(expected: np.ndarray, prediction: str) -> None:
    """A :class:`ScanError` naming the prediction column when an expected count is too large
    to draw Poisson replicates from (or to be a count at all)."""
    largest = float(np.max(expected)) if expected.size else 0.0
    if largest > MAX_POISSON_MEAN:
        raise ScanError(
            f"the expected count {largest:.3g} (column {prediction!r}) is too large for the "
            f"Poisson score (at most {MAX_POISSON_MEAN:g})",
            field="prediction",
            hint="the prediction must be the expected count of each row; check its scale and "
            "units, or drop the outlying rows with data.filter",
        )


def poisson_inputs(spec: BiasScanSpec, ctx: ScanContext, expected: np.ndarray) -> MdssInputs:
    """Counts (or ordinal codes, as AIF360 scores them) against their expected means."""
    outcome, prediction = _names(ctx)
    per_row = f"{outcome} per row" if spec.outcome_type == "count" else f"mean {outcome} code"
    _check_poisson_means(expected, prediction)

    def describe(
        who: str,
        best: SubgroupScore,
        observed_mean: float | None,
        expected_mean: float | None,
        outside_mean: float | None,
    ) -> str:
        ratio = best.observed / best.expected if best.expected > 0 else float("inf")
        return (
            f"The {round(best.size)} rows with {who} have {observed_mean:.4g} {per_row} observed "
            f"vs {expected_mean:.4g} expected ({prediction}; rate ratio {ratio:.2f}): the "
            f"model {_verdict(observed_mean, expected_mean)} {outcome} there (outside the subgroup: "
            f"{'n/a' if outside_mean is None else f'{outside_mean:.4g}'} observed)."
        )

    return MdssInputs(
        rows=np.ones(ctx.data.n_rows, dtype=bool),
        observed=np.asarray(ctx.outcome, dtype=np.float64),
        expected=expected,
        direction=direction_code(spec.direction),
        population=f"all rows ({outcome} vs expectation {prediction}, Poisson rate)",
        observed_label=per_row,
        metric=per_row,
        reference="expected",
        reference_name=f"expected {per_row} ({prediction}) in the subgroup",
        describe=describe,
        score=POISSON,
        # counts: Poisson draws; ordinal codes: their residuals permuted (their own spread)
        draw="poisson" if spec.outcome_type == "count" else "permutation",
        score_name="poisson",
        clip=False,
        # fractional sample weights: the weighted likelihood, sum_S w_i (y_i log q - mu_i (q-1)),
        # and each row's null draw (Poisson, or its permuted residual) times its weight
        multiplicity=ctx.data.row_weight,
    )


Builder = Callable[["BiasScanSpec", ScanContext, np.ndarray], MdssInputs]
_BUILDERS: dict[str, Builder] = {
    "berk_jones": berk_jones_inputs,
    "gaussian": gaussian_inputs,
    "poisson": poisson_inputs,
}

__all__ = [
    "Describe",
    "berk_jones_inputs",
    "expectations",
    "gaussian_inputs",
    "poisson_inputs",
    "pooled_variance",
    "residual_variances",
    "run_scored_bias_scan",
]
