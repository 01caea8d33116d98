"""Library API: load and check a spec, prepare its data, run its scans, build and write reports.

A thin facade: the code lives in :mod:`fairscan.run` (``options``, ``specs``, ``prepare``,
``execute``, ``reports``, ``power``); this module names what callers may rely on
(``tests/test_exported_members.py`` pins the list). Nothing here prints, reads environment
variables or exits; the CLI does that.

``audit run`` reads a spec file and its data file (:func:`prepare_audit`); ``fairscan.audit``
(:mod:`fairscan.inmemory`) and ``audit scan`` validate a mapping with the same models
(:func:`loaded_from_mapping`) and audit a table (:func:`prepare_frame`, :func:`prepare_lazy`).
All run through :func:`run_prepared`: same statistics, same seeds.
"""

from __future__ import annotations

from fairscan.run.execute import (
    diff_reports_on_data,
    run_audit,
    run_prepared,
    run_scan,
    scan_seed,
)
from fairscan.run.history import append_run, read_history, read_monitor
from fairscan.run.options import AuditOutcome, RunOptions
from fairscan.run.power import PowerAnalysis, power_analysis
from fairscan.run.prepare import (
    PreparedAudit,
    prepare_audit,
    prepare_frame,
    prepare_lazy,
    prepare_loaded,
)
from fairscan.run.reports import diff_reports, load_report
from fairscan.run.specs import (
    apply_overrides,
    check_spec,
    extra_columns,
    load_spec,
    load_spec_from_text,
    loaded_from_mapping,
    resolved_spec,
    scan_roles,
    spec_from_mapping,
    spec_json,
    spec_mapping,
)

__all__ = [
    "AuditOutcome",
    "PowerAnalysis",
    "PreparedAudit",
    "RunOptions",
    "append_run",
    "apply_overrides",
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
]
