"""fairscan: audit classifiers for intersectional bias with statistical guarantees.

The public API is :data:`__all__`; names are imported on first use, so ``import fairscan``
stays fast (the CLI's start-up pays only for what a command uses).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_PUBLIC = {
    # auditing from Python: a DataFrame (or a data file) and the spec's fields as keywords
    "audit": "fairscan.inmemory",
    # running audits
    "RunOptions": "fairscan.api",
    "AuditOutcome": "fairscan.api",
    "PreparedAudit": "fairscan.api",
    "load_spec": "fairscan.api",
    "load_spec_from_text": "fairscan.api",
    "prepare_audit": "fairscan.api",
    "run_prepared": "fairscan.api",
    "run_audit": "fairscan.api",
    "load_report": "fairscan.api",
    "diff_reports": "fairscan.api",
    # the result contract
    "AuditReport": "fairscan.report.models",
    "ScanResult": "fairscan.report.models",
    "Finding": "fairscan.report.models",
    "Statistic": "fairscan.report.models",
    "Effect": "fairscan.report.models",
    "Verdict": "fairscan.report.models",
    # the scan registry
    "SCAN_TYPES": "fairscan.scans",
    "ScanType": "fairscan.scans.base",
    # errors
    "FairscanError": "fairscan.errors",
    "SpecError": "fairscan.errors",
    "DataError": "fairscan.errors",
    "UsageError": "fairscan.errors",
    "ScanError": "fairscan.errors",
    "ServiceError": "fairscan.errors",
}

__all__ = ["__version__", *_PUBLIC]

# the API's functions raise only fairscan errors (a foreign exception becomes the cause of one)
_CALLS = frozenset(
    {
        "audit",
        "load_spec",
        "load_spec_from_text",
        "prepare_audit",
        "run_prepared",
        "run_audit",
        "load_report",
        "diff_reports",
    }
)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'fairscan' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name in _CALLS:
        from fairscan.errors import fairscan_errors_only

        value = fairscan_errors_only(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
