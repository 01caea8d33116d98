"""IJDI-Scan (methods.md §4): error-rate imbalance not justified by base-rate differences.

Scans one side of the outcome (negatives: false positive rate, positives: true positive rate)
for the subgroup whose share of positive recommendations exceeds what its base rate
Pr(y = 1 | x) justifies: the expectation is ``pbar_b + lambda (p_i - pbar)``, so lambda = 0 is
exactly the FPR-Scan (TPR-Scan) and larger lambda tolerates more base-rate-driven imbalance.

The recommendation follows the one rule of every scan (:mod:`fairscan.scans.roles`): the scan's
own ``threshold`` (a number or a column of per-record thresholds), else
``columns.recommendation``, else ``columns.threshold``.

Modules: :mod:`.spec` (spec models), :mod:`.runner` (validate -> inputs -> edge-case loop and
randomization test -> optional mitigation -> result), :mod:`.models` (``detail`` models),
:mod:`.render` (Markdown hooks). The null replicate lives in :mod:`fairscan.scans.ijdi_replicate`
(a stable, tiny module: worker processes unpickle it).
"""

from __future__ import annotations

from fairscan.scans.base import (
    ScanDocs,
    ScanType,
    lazy_exports_of,
    lazy_hooks,
    lazy_runner,
    replicate_floor,
)
from fairscan.scans.ijdi_scan.spec import (
    IjdiCosts,
    IjdiScanSpec,
    MitigationSpec,
    extra_columns,
    needs,
)
from fairscan.scans.mdss_render import MDSS_READING

IJDI_SCAN = ScanType(
    type="ijdi_scan",
    spec_model=IjdiScanSpec,
    runner=lazy_runner("fairscan.scans.ijdi_scan.runner", "run_ijdi_scan"),
    p_value_floor=replicate_floor,
    needs=needs,
    docs=ScanDocs(
        title="IJDI-Scan",
        summary=(
            "Among true negatives (side negatives) or true positives (side positives), finds the subgroup "
            "whose share of positive recommendations exceeds what its base rate justifies: expected "
            "rate = overall rate + lambda x (base rate - mean base rate). lambda = 0 is the FPR/TPR-Scan. "
            "Null hypothesis: recommendations follow those base-rate-adjusted expectations."
        ),
        reading=MDSS_READING
        + " The IJDI criterion compares the observed rate gap with the gap lambda x base-rate gap "
        "would justify.",
        needs="outcome and the recommendation (a 0/1 column, or the prediction against a "
        "threshold); with mitigation also the prediction (any real-valued score)",
    ),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.ijdi_scan.render", "IJDI_HOOKS"),
    weights="fractional",
)

__all__ = [
    "IJDI_HOOKS",
    "IJDI_SCAN",
    "IjdiCorrectionInfo",
    "IjdiCosts",
    "IjdiCriterion",
    "IjdiInputs",
    "IjdiPass",
    "IjdiReplicate",
    "IjdiScanDetail",
    "IjdiScanSpec",
    "MitigationSpec",
    "MitigationStep",
    "estimate_base_rate",
    "extra_columns",
    "needs",
    "render_finding_markdown",
    "render_markdown",
    "run_ijdi_scan",
]


# detail models, renderers and the runner load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.ijdi_scan.runner": (
            "IjdiInputs",
            "IjdiPass",
            "IjdiReplicate",
            "estimate_base_rate",
            "run_ijdi_scan",
        ),
        "fairscan.scans.ijdi_scan.models": (
            "IjdiCorrectionInfo",
            "IjdiCriterion",
            "IjdiScanDetail",
            "MitigationStep",
        ),
        "fairscan.scans.ijdi_scan.render": (
            "IJDI_HOOKS",
            "render_finding_markdown",
            "render_markdown",
        ),
    }
)
