"""Classic Bias Scan (methods.md §2): subgroups whose predicted probabilities are miscalibrated."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from fairscan.report.hooks import RenderHooks
from fairscan.scans.base import ScanContext, ScanType
from fairscan.scans.mdss_render import finding_markdown
from fairscan.spec.base import MdssScanSpecBase, StrictModel

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult


class CriticalValue(StrictModel):
    """Analytic critical value h(alpha) of the Bias Scan (methods.md §2.4b), a screening figure."""

    alpha: float
    profiles: int = Field(
        description="M, the number of distinct covariate profiles in the scanned data."
    )
    h: float
    exceeded: bool
    applicable: bool = Field(
        description="False when the theorem's conditions (penalty 0, negative direction) do not hold."
    )


class BiasScanSpec(MdssScanSpecBase):
    type: Literal["bias_scan"] = Field(
        description="Calibration scan: observed outcome vs predicted probability."
    )
    direction: Literal["negative", "positive"] = Field(
        default="negative",
        description=(
            "negative = predictions too high (observed outcomes below predicted, q < 1); "
            "positive = predictions too low (observed above predicted, q > 1)."
        ),
    )


def run_bias_scan(spec: BiasScanSpec, ctx: ScanContext) -> ScanResult:
    from fairscan.engine.critical import critical_value
    from fairscan.engine.mdss import SubgroupScore, direction_code
    from fairscan.report.text import percent
    from fairscan.scans.mdss_runner import MdssInputs, run_mdss
    from fairscan.scans.roles import outcome_text

    data = ctx.data
    outcome = ctx.role_names.get("outcome", "outcome")
    event = outcome_text(ctx.role_names, 1)
    prediction = ctx.role_names.get("prediction", "prediction")
    rows = np.ones(data.n_rows, dtype=bool)
    verdict = "over-estimated" if spec.direction == "negative" else "under-estimated"

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        return (
            f"The {round(best.size)} rows with {who} have {event} in "
            f"{percent(observed_rate)} of cases but a mean predicted probability ({prediction}) "
            f"of {percent(expected_rate)}: the model's probabilities are {verdict} there "
            f"(odds multiplier q = {best.q:.2f}; outside the subgroup: {percent(outside_rate)} observed)."
        )

    result = run_mdss(
        spec,
        ctx,
        MdssInputs(
            rows=rows,
            observed=ctx.outcome.astype(np.float64),
            expected=ctx.prediction,
            direction=direction_code(spec.direction),
            population=f"all rows ({outcome} vs predicted probability {prediction})",
            observed_label=event,
            metric=f"rate of {event}",
            reference="expected",
            reference_name=f"mean predicted probability ({prediction}) in the subgroup",
            describe=describe,
        ),
        parameters={},
    )
    # Screening figure of Theorem 2; M = distinct covariate profiles in the scanned data.
    profiles = int(np.unique(data.codes, axis=0).shape[0]) if data.n_rows else 0
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


def critical_value_markdown(scan: ScanResult) -> list[str]:
    """The analytic critical value, a screening figure next to the randomization test."""
    if "critical_value" not in scan.detail:
        return []
    cv = CriticalValue.model_validate(scan.detail["critical_value"])
    note = (
        ""
        if cv.applicable
        else " (the theorem assumes penalty 0 and direction negative; indicative only)"
    )
    return [
        f"Analytic critical value h({cv.alpha:g}) = {cv.h:.2f} for M = {cv.profiles} covariate "
        f"profiles: the score {'exceeds' if cv.exceeded else 'does not exceed'} it{note}.",
        "",
    ]


BIAS_SCAN = ScanType(
    type="bias_scan",
    spec_model=BiasScanSpec,
    runner=run_bias_scan,
    needs=("outcome", "probability"),
    title="Bias Scan",
    render=RenderHooks(markdown=critical_value_markdown, finding_markdown=finding_markdown),
    summary=(
        "Finds the subgroup whose predicted probabilities deviate most from the observed outcomes "
        "(over-estimated risk for direction negative, under-estimated for positive). "
        "Null hypothesis: the predicted probabilities are correct for every row."
    ),
)
