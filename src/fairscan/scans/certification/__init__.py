"""Scan types ``certify`` and ``flag`` (methods.md §5.1-§5.7): simultaneous bounds / Boolean
certificates (FWER) or FDR-controlled flags over a fixed, user-given collection of groups.

* :mod:`.spec`: the spec models and the data roles a spec needs (by its metric);
* :mod:`.runner`: validate -> inputs -> engine -> result, with the one "is this a finding" rule;
* :mod:`.models`: the ``detail`` models (every group, hit or not);
* :mod:`.render`: the Markdown and HTML render hooks (group table, forest plot).

Findings: every flagged group (flag); for certify, every certified group when the certificate
proves a disparity (significant), every tested group that cannot be certified when it would
prove fairness (``not certified``: its own status, never significant).
"""

from __future__ import annotations

from fairscan.metric_table import NEEDS_DOC
from fairscan.scans.base import Retest, ScanDocs, ScanType, lazy_exports_of, lazy_hooks, lazy_runner
from fairscan.scans.certification.retest import retest_flag
from fairscan.scans.certification.spec import (
    CertifySpec,
    FlagSpec,
    certificate_claim,
    extra_columns,
)
from fairscan.scans.metric_inputs import needs

FLAG = ScanType(
    type="flag",
    spec_model=FlagSpec,
    runner=lazy_runner("fairscan.scans.certification.runner", "run_audit"),
    needs=needs,
    docs=ScanDocs(
        title="Flag groups (FDR)",
        summary=(
            "Flags the groups of a fixed collection whose metric exceeds (or falls short of) a "
            "target by more than a tolerance, with bootstrap MAD scales and Benjamini-Hochberg "
            "FDR control (Cherian & Candès, Algorithm 4)."
        ),
        reading=(
            "Each group has a gap, a bootstrap scale and an adjusted p-value; flagged groups "
            "(rejected by BH/BY at alpha) are findings, with the false discovery rate controlled."
        ),
        null_hypothesis="the group's metric does not exceed the target by more than the tolerance.",
        needs=NEEDS_DOC,
    ),
    retest=Retest(named=retest_flag),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.certification.render", "CERTIFICATION_HOOKS"),
    weights="fractional",
)

CERTIFY = ScanType(
    type="certify",
    spec_model=CertifySpec,
    runner=lazy_runner("fairscan.scans.certification.runner", "run_audit"),
    needs=needs,
    docs=ScanDocs(
        title="Certify groups (FWER)",
        summary=(
            "Simultaneously valid lower/upper bounds, intervals or Boolean certificates for the "
            "metric gap of every group of a fixed collection (Cherian & Candès, Algorithms 1-3, 6, 7)."
        ),
        reading=(
            "Each group has a bound or interval for its gap eps(G) = group metric - target, valid "
            "for all groups at once (family-wise error alpha), cut to the range the gap can take "
            "(a gap of two rates lies in [-1, 1]; to a known target t, in [-t, 1 - t]). With claim "
            "disparity, certified groups are significant findings; with claim fairness, tested "
            "groups that cannot be certified are findings with the status `not certified`: never "
            "counted as significant (their interval may contain 0), so the run exits 1 on them only "
            "under gate.fail_on: not_certified."
        ),
        null_hypothesis="the group's metric gap is within the tolerance of the target (per group).",
        needs=NEEDS_DOC,
    ),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.certification.render", "CERTIFICATION_HOOKS"),
    weights="fractional",
)

__all__ = [
    "CERTIFY",
    "FLAG",
    "AuditGroup",
    "AuditPlotData",
    "CertificationResult",
    "CertifySpec",
    "FlagSpec",
    "certificate_claim",
    "finding_mask",
    "run_audit",
]


# detail models, renderers and the runner load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.certification.runner": ("finding_mask", "run_audit"),
        "fairscan.scans.certification.models": (
            "AuditGroup",
            "AuditPlotData",
            "CertificationResult",
        ),
        "fairscan.scans.certification.render": ("CERTIFICATION_HOOKS",),
    }
)
