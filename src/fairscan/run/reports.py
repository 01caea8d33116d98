"""Reports on disk: read a JSON report (a baseline, either side of ``audit diff``) as a
:class:`~fairscan.report.view.ReportView`, compare two, and write a run's report files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from fairscan.errors import FairscanError, ServiceError, SpecError, UsageError
from fairscan.report.baseline import retest_comparison
from fairscan.report.formats import write_reports
from fairscan.report.mlflow_log import MlflowRun, log_report
from fairscan.report.models import AuditReport, BaselineComparison
from fairscan.report.read import read_report
from fairscan.report.verdict import report_fail_on
from fairscan.report.view import ReportView
from fairscan.run.options import RunOptions
from fairscan.run.specs import locate
from fairscan.scans import render_hooks

if TYPE_CHECKING:
    from fairscan.run.prepare import PreparedAudit


def load_report(path: Path | str) -> ReportView:
    """Read a JSON report written by ``audit run`` (a baseline, or either side of a diff).

    The report object renders itself (``report.findings``, ``report.to_html()``,
    ``report.write(dir)``) with the registered scan types' render hooks.
    """
    # the spec's file rules (regular file, size cap) and a located message for any bad shape
    report = read_report(path)
    return ReportView.of(report, render_hooks())


def diff_reports(
    old_path: Path | str, new_path: Path | str
) -> tuple[ReportView, BaselineComparison]:
    """Compare two JSON reports (``audit diff``): the new report and the labelled comparison.

    When NEW was run with ``--baseline OLD`` its re-test is the comparison (the same labels
    and exit code as that run); otherwise the two reports' findings are matched, with the
    re-test's label words (a baseline finding the new search no longer reports is
    ``inconclusive``, never ``resolved``, without a re-test)."""
    from fairscan.run.retest import check_comparable

    old = load_report(old_path)
    new = load_report(new_path)
    check_comparable(old, new, str(old_path), field="OLD")  # as --baseline checks it
    stored = new.baseline
    if (
        stored is not None
        and stored.method == "retest"
        and stored.baseline_name == old.name
        and stored.baseline_utc_time == old.provenance.utc_time
    ):
        return new, stored.model_copy(update={"baseline_path": str(old_path)})
    comparison = retest_comparison(
        old, new, baseline_path=str(old_path), fail_on=report_fail_on(new)
    )
    return new, comparison


def write_outcome(prepared: PreparedAudit, report: AuditReport, options: RunOptions) -> list[Path]:
    """Write the spec's report formats, then append the run to ``output.history``."""
    written = write_report_files(prepared, report, options)
    if prepared.spec.output.history is not None:  # after the reports: a history problem loses none
        from fairscan.run.history import append_run

        append_run(history_path(prepared), report)
    return written


def history_path(prepared: PreparedAudit) -> Path:
    """The spec's ``output.history`` file (relative to the spec file that sets it)."""
    assert prepared.spec.output.history is not None
    history_dir = Path(prepared.loaded.file_of("output.history")).parent
    return history_dir / prepared.spec.output.history


def write_report_files(
    prepared: PreparedAudit, report: AuditReport, options: RunOptions
) -> list[Path]:
    """Write the spec's report formats; an unwritable folder is the user's to fix."""
    spec = prepared.spec
    spec_dir = Path(prepared.loaded.file_of("output.dir")).parent
    out_dir = options.out_dir or (spec_dir / spec.output.dir)
    try:
        formats = options.report_formats(spec.output.formats)
        written = write_reports(report, Path(out_dir), formats, render_hooks())
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if Path(out_dir).exists() and not Path(out_dir).is_dir():
            reason = "it is a file, not a folder"
        message = f"cannot write the reports to {str(out_dir)!r}: {reason}"
        if options.out_dir is not None:
            raise UsageError(message, hint="pass --out a folder you can write to") from exc
        raise locate(
            prepared.loaded,
            SpecError(
                message,
                field="output.dir",
                hint="set output.dir (relative to the spec file) to a writable folder, or pass --out",
            ),
            prepared.located,
        ) from exc
    return written


def log_outcome(
    prepared: PreparedAudit, report: AuditReport
) -> tuple[MlflowRun | None, tuple[FairscanError, ...]]:
    """``output.mlflow``: log the written run to MLflow; where it went, or why it failed (the
    reports are already on disk: a failing tracking server loses nothing, the run exits 2)."""
    settings = prepared.spec.output.mlflow
    if settings is None:
        return None, ()
    try:
        logged = log_report(
            report,
            render_hooks(),
            experiment=settings.experiment,
            run_name=settings.run_name,
            tags=settings.tags,
            field="output.mlflow",
        )
    except ServiceError as error:
        kept = "the reports are written"
        issues = [replace(i, hint=f"{i.hint}; {kept}" if i.hint else kept) for i in error.issues]
        return None, (locate(prepared.loaded, ServiceError(issues=issues), prepared.located),)
    return logged, ()
