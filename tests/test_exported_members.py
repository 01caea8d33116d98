"""The public API, pinned both ways (in the spirit of httpx's tests/test_exported_members.py):
every name ``fairscan`` and ``fairscan.api`` export exists and is listed here, and every name
listed here is exported. Adding or removing a public name is a deliberate change of this file.
"""

from __future__ import annotations

import inspect

import fairscan
import fairscan.api

PACKAGE = [  # in the order of fairscan.__all__
    "__version__",
    "audit",
    "RunOptions",
    "AuditOutcome",
    "PreparedAudit",
    "load_spec",
    "load_spec_from_text",
    "prepare_audit",
    "run_prepared",
    "run_audit",
    "load_report",
    "diff_reports",
    "AuditReport",
    "ScanResult",
    "Finding",
    "Statistic",
    "Effect",
    "Verdict",
    "SCAN_TYPES",
    "ScanType",
    "FairscanError",
    "SpecError",
    "DataError",
    "UsageError",
    "ScanError",
    "ServiceError",
]

API = {
    "AuditOutcome",
    "PowerAnalysis",
    "PreparedAudit",
    "RunOptions",
    "apply_overrides",
    "append_run",
    "check_spec",
    "diff_reports",
    "diff_reports_on_data",
    "extra_columns",
    "load_report",
    "load_spec",
    "load_spec_from_text",
    "loaded_from_mapping",
    "power_analysis",
    "prepare_audit",
    "prepare_frame",
    "prepare_lazy",
    "prepare_loaded",
    "read_history",
    "read_monitor",
    "resolved_spec",
    "run_audit",
    "run_prepared",
    "run_scan",
    "scan_roles",
    "scan_seed",
    "spec_from_mapping",
    "spec_json",
    "spec_mapping",
}


def test_package_exports_exactly_the_pinned_names() -> None:
    assert fairscan.__all__ == PACKAGE
    assert set(dir(fairscan)) >= set(PACKAGE)
    for name in PACKAGE:
        assert getattr(fairscan, name) is not None, name


def test_api_exports_exactly_the_pinned_names() -> None:
    assert set(fairscan.api.__all__) == API
    public = {
        name
        for name, value in vars(fairscan.api).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public == API  # nothing public beyond __all__ (a facade: imports are its exports)


def test_api_names_are_defined_in_the_run_layer() -> None:
    for name in API:
        module = getattr(fairscan.api, name).__module__
        assert module.startswith("fairscan.run."), (name, module)


def test_package_names_resolve_to_their_homes() -> None:
    # the package's calls raise only fairscan errors (issue 24): a wrapper around the API's own
    assert fairscan.run_audit.__wrapped__ is fairscan.api.run_audit  # type: ignore[attr-defined]
    assert fairscan.load_report.__wrapped__ is fairscan.api.load_report  # type: ignore[attr-defined]
    assert fairscan.AuditReport.__module__ == "fairscan.report.models"
