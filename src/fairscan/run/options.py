"""What a run is given and what it gives back: :class:`RunOptions` (the CLI's flags, or
``fairscan.audit``'s settings) and :class:`AuditOutcome` (the report, the files written)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairscan.errors import FairscanError
from fairscan.progress import NullProgress, Progress
from fairscan.report.models import AuditReport, Override
from fairscan.report.verdict import ExitCode

if TYPE_CHECKING:
    from fairscan.report.mlflow_log import MlflowRun


@dataclass(frozen=True)
class RunOptions:
    """Overrides and settings of one run (the CLI fills these from flags)."""

    out_dir: Path | None = None  # overrides output.dir (relative to the working directory)
    seed: int | None = None
    replicates: int | None = None
    workers: int | None = None
    # overrides significance.executor: local, dask://HOST:PORT, tls://HOST:PORT, or a connected
    # distributed.Client (fairscan.audit(executor=client); left open after the run)
    executor: Any = None
    write: bool = True
    progress: Progress = field(default_factory=NullProgress)
    baseline: Path | None = None  # a previous JSON report to label findings against
    debug: bool = False  # a scan's internal error carries its traceback into the report
    # overrides output.formats (`audit run --format`); None: the spec's
    formats: tuple[str, ...] | None = None
    # the settings above that came from outside the spec (recorded in provenance.overrides)
    overrides: tuple[Override, ...] = ()

    def report_formats(self, spec_formats: Sequence[str]) -> tuple[str, ...]:
        """The formats this run delivers: ``--format``'s, else the spec's ``output.formats``."""
        return tuple(self.formats) if self.formats else tuple(spec_formats)


@dataclass(frozen=True)
class AuditOutcome:
    """A finished run: its report and the report files written."""

    report: AuditReport
    written: list[Path]

    formats: tuple[str, ...] = ()  # output.formats of the spec (the CLI delivers sinks: github)
    mlflow_run: MlflowRun | None = None  # where output.mlflow logged the report
    # what failed after the reports were written (an MLflow tracking server): the run exits 2
    delivery_errors: tuple[FairscanError, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        if self.delivery_errors:
            return ExitCode.ERROR
        return ExitCode(self.report.verdict.exit_code)
