"""Scan registry: one entry per scan ``type``. Adding a scan = one new module + one line here."""

from __future__ import annotations

from typing import Any, Union

from fairscan.scans import bias_scan, cbs, certification, fpr_scan, ijdi_scan, subroc
from fairscan.scans.base import ScanContext, ScanType

SCAN_TYPES: dict[str, ScanType] = {
    entry.type: entry
    for entry in (
        fpr_scan.FPR_SCAN,
        fpr_scan.TPR_SCAN,
        bias_scan.BIAS_SCAN,
        subroc.SUBROC,
        ijdi_scan.IJDI_SCAN,
        certification.CERTIFY,
        certification.FLAG,
        cbs.CBS,
    )
}


def scan_spec_union() -> Any:
    """The discriminated union of every registered scan spec model (discriminator: ``type``)."""
    models = tuple(entry.spec_model for entry in SCAN_TYPES.values())
    return Union[models]  # noqa: UP007 - a runtime-built union needs typing.Union


__all__ = ["SCAN_TYPES", "ScanContext", "ScanType", "scan_spec_union"]
