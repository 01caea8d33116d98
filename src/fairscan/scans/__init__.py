"""Scan registry: the only list of scan types. Adding a scan = one new module + one entry here.

The registry also assembles what depends on the list: the audit spec model whose ``scans``
accept exactly the registered spec models (:data:`AUDIT_SPEC`), and the render hooks the
report writers receive (:func:`render_hooks`; the run layer passes them to the renderers).
"""

from __future__ import annotations

from fairscan.report.hooks import RenderHooks
from fairscan.scans import bias, cbs, certification, fpr_scan, ijdi_scan, shift, subroc
from fairscan.scans.base import Role, ScanContext, ScanType
from fairscan.spec.models import AuditSpec, audit_spec_model

SCAN_TYPES: dict[str, ScanType] = {
    entry.type: entry
    for entry in (
        fpr_scan.FPR_SCAN,
        fpr_scan.TPR_SCAN,
        bias.BIAS_SCAN,
        subroc.SUBROC,
        ijdi_scan.IJDI_SCAN,
        certification.CERTIFY,
        certification.FLAG,
        cbs.CBS,
        shift.SHIFT,
    )
}

# The audit spec model of this registry (spec/ itself knows only the scan base model).
AUDIT_SPEC: type[AuditSpec] = audit_spec_model([entry.spec_model for entry in SCAN_TYPES.values()])


def render_hooks() -> dict[str, RenderHooks]:
    """Scan type -> its render hooks, for the Markdown and HTML writers."""
    return {name: entry.render for name, entry in SCAN_TYPES.items()}


__all__ = ["AUDIT_SPEC", "SCAN_TYPES", "Role", "ScanContext", "ScanType", "render_hooks"]
