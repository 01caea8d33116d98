"""Reports on disk: read a JSON report (a baseline, either side of ``audit diff``) as a
:class:`~fairscan.report.view.ReportView`, compare two, and write a run's report files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fairscan.errors import SpecError, UsageError
from fairscan.report.baseline import retest_comparison
from fairscan.report.formats import write_reports
from fairscan.report.models import AuditReport, BaselineComparison
from fairscan.report.read import read_report
from fairscan.report.verdict import report_fail_on
from fairscan.report.view import ReportView
from fairscan.run.delivery import Delivered, Delivery, HistoryDelivery, MlflowDelivery, deliver
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


def spec_deliveries(prepared: PreparedAudit, *, monitored: bool = False) -> list[Delivery]:
    """The deliveries the spec asks for, in the order they run: ``output.history`` (unless the
    monitor recorded the run with its ledger already), then ``output.mlflow``."""
    spec = prepared.spec
    deliveries: list[Delivery] = []
    if spec.output.history is not None and not monitored:
        deliveries.append(HistoryDelivery(history_path(prepared)))
    if (settings := spec.output.mlflow) is not None:
        deliveries.append(
            MlflowDelivery(
                render_hooks(),
                experiment=settings.experiment,
                run_name=settings.run_name,
                tags=settings.tags or {},
            )
        )
    return deliveries


def deliver_outcome(
    prepared: PreparedAudit, report: AuditReport, *, monitored: bool = False
) -> Delivered:
    """Deliver the written run where the spec asks (:func:`spec_deliveries`) under the one
    failure policy of :mod:`fairscan.run.delivery`; errors located in the spec file."""
    return deliver(
        report,
        spec_deliveries(prepared, monitored=monitored),
        lambda error: locate(prepared.loaded, error, prepared.located),
    )


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
