"""``audit run -v/--verbose``: where the data came from and how long each phase took, on stderr.

Per spec: the data source (the file, or the database table or query with its engine and the
connection without user or password) with its rows, as soon as the data is read and
prepared; then the time of each phase: reading and preparing the data, each scan's subset
search and significance test (the report's own timings), and the rest of the run (workers,
the gate, the reports and their delivery).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairscan.cli.common import err
from fairscan.report.sink_escape import console_text

if TYPE_CHECKING:
    from fairscan.api import AuditOutcome, PreparedAudit, RunOptions


def run_audit_verbosely(spec_path: Path, options: RunOptions, verbose: bool) -> AuditOutcome:
    """``run_audit``; when ``verbose``, its two halves (prepare, then run) with what and how
    long in between."""
    from fairscan.api import prepare_audit, run_audit, run_prepared

    if not verbose:
        return run_audit(spec_path, options)
    started = time.perf_counter()
    _say(f"spec {spec_path}")
    prepared = prepare_audit(spec_path, options)
    prepared_at = time.perf_counter()
    _say(f"data: {source_text(prepared)}")
    _say(f"phase read and prepare the data: {_seconds(prepared_at - started)}")
    outcome = run_prepared(prepared, options)
    scans_total = 0.0
    for scan in outcome.report.scans:
        timing = scan.timing
        scans_total += timing.total_seconds
        _say(
            f"phase scan {scan.id} ({scan.type}): {_seconds(timing.total_seconds)} "
            f"(search {_seconds(timing.search_seconds)}, significance "
            f"{_seconds(timing.significance_seconds)})"
        )
    rest = max(0.0, time.perf_counter() - prepared_at - scans_total)
    _say(f"phase the rest (workers, gate, reports, delivery): {_seconds(rest)}")
    _say(f"total: {_seconds(time.perf_counter() - started)}")
    return outcome


def source_text(prepared: PreparedAudit) -> str:
    """The data source in one line: a file (read whole, or streamed through an engine), or a
    database table or query with its engine and connection (never a password)."""
    rows = f"{prepared.data.n_data_rows} rows after the filter"
    source: dict[str, Any] = prepared.data_source or {}
    if "connection" in source:
        what = f"table {source['table']}" if source.get("table") else "the rows of data.sql"
        return f"{what}, {source.get('engine')} at {source['connection']}: {rows}"
    through = f", streamed through {source['engine']}" if source.get("engine") else ""
    return f"{prepared.data_path}{through}: {rows}"


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def _say(text: str) -> None:
    err.print(f"verbose: {console_text(text)}", markup=False, soft_wrap=True)
