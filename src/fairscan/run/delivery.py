"""Where a report goes once its files are written: the deliveries, and the one failure policy
they share.

A delivery takes a finished report somewhere beyond the report folder: the run appended to
``output.history`` (:class:`HistoryDelivery`), logged to ``output.mlflow``
(:class:`MlflowDelivery`), or a format's text appended to a sink such as the GitHub job summary
(:class:`SinkDelivery`; the CLI names the file, since only the CLI reads the environment).

The failure policy, applied by :func:`deliver` alone:

* deliveries start after the report files are on disk, and never remove one;
* each runs on its own: one that fails never stops the ones after it;
* a failure is an error (its message located at the spec field that asked for the delivery,
  with "the reports are written" in its help line), not a warning: the run exits 2
  (:data:`fairscan.report.verdict.ExitCode.ERROR`) whatever its findings, even with
  ``--exit-zero``, because a CI job must not pass when a report it asked for did not arrive;
* an interrupt (Ctrl-C, SIGTERM) is not a failure: it stops the run.

A monitored spec's history (``monitor:``) is not a delivery: its ledger and the report files are
committed together (:mod:`fairscan.run.monitor`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fairscan.errors import FairscanError, ServiceError

if TYPE_CHECKING:
    from fairscan.report.formats import ReportFormat
    from fairscan.report.hooks import HookMap
    from fairscan.report.mlflow_log import MlflowRun
    from fairscan.report.models import AuditReport

KEPT = "the reports are written"


class Delivery(Protocol):
    """One place a finished report goes, beyond the report files."""

    @property
    def field(self) -> str:
        """The setting that asked for it (``output.history``), named by its errors."""

    def deliver(self, report: AuditReport) -> object:
        """Take ``report`` there; what came of it (e.g. the MLflow run), or None."""


@dataclass(frozen=True)
class HistoryDelivery:
    """``output.history``: the run appended to the SQLite history file."""

    path: Path
    field: str = "output.history"

    def deliver(self, report: AuditReport) -> object:
        from fairscan.run.history import append_run

        append_run(self.path, report)
        return None


@dataclass(frozen=True)
class MlflowDelivery:
    """``output.mlflow``: the report logged to MLflow (its metrics, tags and report files)."""

    hooks: HookMap
    experiment: str | None = None
    run_name: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    field: str = "output.mlflow"

    def deliver(self, report: AuditReport) -> MlflowRun:
        from fairscan.report.mlflow_log import log_report

        return log_report(
            report,
            self.hooks,
            experiment=self.experiment,
            run_name=self.run_name,
            tags=self.tags,
            field=self.field,
        )


@dataclass(frozen=True)
class SinkDelivery:
    """A format that is not a file (``github``): its text appended to ``target``."""

    format: ReportFormat
    target: Path
    hooks: HookMap

    @property
    def field(self) -> str:
        return self.format.sink or self.format.name

    def deliver(self, report: AuditReport) -> object:
        text = self.format.render(report, self.hooks)
        try:
            with open(self.target, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise ServiceError(
                f"cannot append to {self.field}: {exc.strerror or exc}",
                field=self.field,
                hint=f"check that {self.field} names a file this job can write",
            ) from None
        return None


@dataclass(frozen=True)
class Delivered:
    """What the deliveries gave: each one's result by its field, and the errors of those that
    failed (the run exits 2 when there is one)."""

    results: Mapping[str, object] = field(default_factory=dict)
    errors: tuple[FairscanError, ...] = ()


def deliver(
    report: AuditReport,
    deliveries: Sequence[Delivery],
    locate: Callable[[FairscanError], FairscanError] = lambda error: error,
) -> Delivered:
    """Run every delivery of ``report`` in order under the module's failure policy; ``locate``
    places an error at its spec field (file:line:col)."""
    results: dict[str, object] = {}
    errors: list[FairscanError] = []
    for target in deliveries:
        try:
            results[target.field] = target.deliver(report)
        except FairscanError as error:
            errors.append(locate(_kept(error)))
        except OSError as exc:  # the environment: a full disk, a folder that vanished
            failure = ServiceError(f"cannot deliver: {exc.strerror or exc}", field=target.field)
            errors.append(locate(_kept(failure)))
    return Delivered(results, tuple(errors))


def _kept(error: FairscanError) -> FairscanError:
    """``error`` with "the reports are written" in each issue's help line."""
    issues = [replace(i, hint=f"{i.hint}; {KEPT}" if i.hint else KEPT) for i in error.issues]
    return error.with_issues(issues)
