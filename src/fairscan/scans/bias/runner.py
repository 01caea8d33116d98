"""The Bias Scan's runner: the binary Bernoulli calibration scan, else the scored or nominal scan."""

from __future__ import annotations

import numpy as np

from fairscan.engine.cells import count_profiles
from fairscan.engine.critical import critical_value
from fairscan.engine.expectation_cells import ProfileSums
from fairscan.engine.mdss import SubgroupScore, direction_code
from fairscan.report.models import ScanResult
from fairscan.report.text import compared, percent
from fairscan.scans.base import ScanContext
from fairscan.scans.bias.nominal import run_nominal_scan
from fairscan.scans.bias.scores import expectations, run_scored_bias_scan
from fairscan.scans.bias.spec import BiasScanSpec, CriticalValue
from fairscan.scans.mdss_runner import MdssInputs, run_mdss
from fairscan.scans.roles import outcome_text


def run_bias_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    if spec.outcome_type == "nominal":
        return run_nominal_scan(spec, ctx)
    if spec.outcome_type != "binary" or spec.score != "bernoulli":
        result = run_scored_bias_scan(spec, ctx)
    else:
        result = run_calibration_scan(spec, ctx)
    if ctx.roles.prediction is None:
        result.warnings.append(
            NO_PREDICTION_WARNING.format(ctx.role_names.get("outcome", "outcome"))
        )
    return result


NO_PREDICTION_WARNING = (
    "no prediction column: each subgroup's {0} is compared with its overall rate (mean) in the "
    "scanned rows, not with the model's probabilities, so the findings say where {0} is unusual, "
    "not where the model is miscalibrated; name the model's probabilities in columns.prediction "
    "(or the scan's prediction) to audit calibration."
)


def _profile_sums(ctx: ScanContext) -> tuple[np.ndarray, ProfileSums] | None:
    """The prediction's per-profile sums taken by the database (fairscan.data.pushdown)."""
    column = ctx.role_names.get("prediction")
    if column is None or ctx.roles.prediction is None:
        return None
    return ctx.data.profile_sums.get(column)


def run_calibration_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    """The classic Bias Scan: binary outcome, Bernoulli score on the predicted probabilities."""
    data = ctx.data
    outcome = ctx.role_names.get("outcome", "outcome")
    event = outcome_text(ctx.role_names, 1)
    # no prediction: every row is expected at the outcome's overall rate (AIF360's default)
    expected, expectation_note = expectations(spec, ctx)
    prediction = ctx.role_names.get("prediction", f"the overall rate of {event}")
    rows = np.ones(data.n_rows, dtype=bool)

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        # the words say what the data show (observed vs expected), whatever the scan's direction
        shown = compared(observed_rate, expected_rate)
        if ctx.roles.prediction is None:  # no model: the comparison is with the overall rate
            side = {1: "more often than", -1: "less often than", 0: "as often as"}[shown]
            return (
                f"The {round(best.size)} rows with {who} have {event} in "
                f"{percent(observed_rate)} of cases, {side} the overall rate of "
                f"{percent(expected_rate)} (odds multiplier q = {best.q:.2f}; outside the "
                f"subgroup: {percent(outside_rate)}). No prediction was given, so this compares "
                "with the overall rate, not with the model's probabilities."
            )
        verdict = {
            1: "are under-estimated there",
            -1: "are over-estimated there",
            0: "match the observed rate there",
        }[shown]
        return (
            f"The {round(best.size)} rows with {who} have {event} in "
            f"{percent(observed_rate)} of cases but a mean predicted probability ({prediction}) "
            f"of {percent(expected_rate)}: the model's probabilities {verdict} "
            f"(odds multiplier q = {best.q:.2f}; outside the subgroup: {percent(outside_rate)} observed)."
        )

    result = run_mdss(
        spec,
        ctx,
        MdssInputs(
            rows=rows,
            observed=ctx.outcome.astype(np.float64),
            expected=expected,
            direction=direction_code(spec.direction),
            population=(
                f"all rows ({outcome} vs predicted probability {prediction})"
                if ctx.roles.prediction is not None
                else f"all rows ({outcome} vs its overall rate; no prediction)"
            ),
            observed_label=event,
            metric=f"rate of {event}",
            reference="expected",
            reference_name=(
                f"mean predicted probability ({prediction}) in the subgroup"
                if ctx.roles.prediction is not None
                else f"the overall rate of {event} (no prediction)"
            ),
            describe=describe,
            # continuous probabilities: search and null replicates over profile summaries
            summarise_expectations=True,
            multiplicity=data.row_weight,
            profile_sums=_profile_sums(ctx),
        ),
        parameters={} if expectation_note is None else {"expectation": expectation_note},
    )
    if spec.subgroups:  # the critical value screens a search; given subgroups have none
        return result
    # Screening figure of Theorem 2; M = distinct covariate profiles in the scanned data.
    profiles = count_profiles(data.codes)
    h = critical_value(ctx.alpha, profiles)
    top = (result.findings[0].statistic.value or 0.0) if result.findings else 0.0
    critical = CriticalValue(
        alpha=ctx.alpha,
        profiles=profiles,
        h=h,
        exceeded=top > h,
        applicable=spec.penalty == 0 and spec.direction == "negative",
    )
    result.detail["critical_value"] = critical.model_dump(mode="json")
    return result
