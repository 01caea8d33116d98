"""Classic Bias Scan (methods.md §2): subgroups whose predicted probabilities are miscalibrated."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairscan.scans.base import ScanContext, ScanType
from fairscan.spec.base import MdssScanSpecBase


class BiasScanSpec(MdssScanSpecBase):
    type: Literal["bias_scan"] = Field(description="Calibration scan: observed outcome vs predicted probability.")
    direction: Literal["negative", "positive"] = Field(
        default="negative",
        description=(
            "negative = predictions too high (observed outcomes below predicted, q < 1); "
            "positive = predictions too low (observed above predicted, q > 1)."
        ),
    )


def run_bias_scan(spec: BiasScanSpec, ctx: ScanContext):  # type: ignore[no-untyped-def]
    from fairscan.scans._calibration import run_calibration_scan

    return run_calibration_scan(spec, ctx)


BIAS_SCAN = ScanType(
    type="bias_scan",
    spec_model=BiasScanSpec,
    runner=run_bias_scan,
    needs=("outcome", "prediction"),
    title="Bias Scan",
    summary=(
        "Finds the subgroup whose predicted probabilities deviate most from the observed outcomes "
        "(over-estimated risk for direction negative, under-estimated for positive). "
        "Null hypothesis: the predicted probabilities are correct for every row."
    ),
)
