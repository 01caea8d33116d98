"""FPR-Scan and TPR-Scan (methods.md §4.2): Bias Scan on the recommendations of one outcome class.

FPR-Scan keeps the true negatives (y = 0) and asks whether some subgroup is recommended
positive (flagged) more often than the overall false positive rate; TPR-Scan does the same
among the true positives. The expectation is constant (the overall rate), so the score has the
KL closed form and the search runs on cell counts alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairscan.scans.base import ScanContext, ScanType
from fairscan.spec.base import MdssScanSpecBase


class FprScanSpec(MdssScanSpecBase):
    type: Literal["fpr_scan"] = Field(description="False-positive-rate scan among true negatives (y = 0).")


class TprScanSpec(MdssScanSpecBase):
    type: Literal["tpr_scan"] = Field(description="True-positive-rate scan among true positives (y = 1).")


def run_fpr_scan(spec: FprScanSpec, ctx: ScanContext):  # type: ignore[no-untyped-def]
    from fairscan.scans._error_rate import run_error_rate_scan

    return run_error_rate_scan(spec, ctx, outcome_class=0)


def run_tpr_scan(spec: TprScanSpec, ctx: ScanContext):  # type: ignore[no-untyped-def]
    from fairscan.scans._error_rate import run_error_rate_scan

    return run_error_rate_scan(spec, ctx, outcome_class=1)


FPR_SCAN = ScanType(
    type="fpr_scan",
    spec_model=FprScanSpec,
    runner=run_fpr_scan,
    needs=("outcome", "recommendation"),
    title="FPR-Scan",
    summary=(
        "Among true negatives (outcome = 0), finds the subgroup whose false positive rate "
        "(share recommended positive) most exceeds the overall false positive rate. "
        "Null hypothesis: every true negative is flagged with the overall FPR."
    ),
)

TPR_SCAN = ScanType(
    type="tpr_scan",
    spec_model=TprScanSpec,
    runner=run_tpr_scan,
    needs=("outcome", "recommendation"),
    title="TPR-Scan",
    summary=(
        "Among true positives (outcome = 1), finds the subgroup whose true positive rate "
        "(share recommended positive) most exceeds the overall true positive rate. "
        "Null hypothesis: every true positive is flagged with the overall TPR."
    ),
)
