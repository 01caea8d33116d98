"""The report as a Python object: :class:`ReportView` is an :class:`AuditReport` (same fields,
same JSON) that renders itself, for notebooks and scripts (``fairscan.audit``,
``fairscan.load_report``).

The result contract (:mod:`fairscan.report.models`) imports no renderer; this view sits above
it and the format registry, and carries the scan types' render hooks it was given (the run
layer passes the registry's), so nothing depends on which module was imported first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import PrivateAttr

from fairscan.report.display import findings_frame, repr_line, summary_html, summary_text
from fairscan.report.formats import check_formats, render, write_reports
from fairscan.report.hooks import NO_HOOKS, HookMap
from fairscan.report.models import AuditReport

if TYPE_CHECKING:
    import polars as pl


class ReportView(AuditReport):
    """An audit report with its renderings (``to_html()``, ``write(dir)``, Jupyter display)."""

    _hooks: HookMap = PrivateAttr(default=NO_HOOKS)

    @classmethod
    def of(cls, report: AuditReport, hooks: HookMap = NO_HOOKS) -> ReportView:
        """``report`` as a view rendering with ``hooks`` (the fields are shared, not copied)."""
        view = cls.model_construct(
            _fields_set=set(report.model_fields_set),
            **{name: getattr(report, name) for name in AuditReport.model_fields},
        )
        view._hooks = hooks
        return view

    def __eq__(self, other: object) -> bool:
        """Equal to an :class:`AuditReport` (or view) with the same fields: the hooks a view
        renders with are not part of the report."""
        if not isinstance(other, AuditReport):
            return NotImplemented
        return self.__dict__ == other.__dict__ and (
            self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as BaseModel: not hashable

    @property
    def hooks(self) -> HookMap:
        """The scan types' render hooks this report renders its ``detail`` with."""
        return self._hooks

    @property
    def findings(self) -> pl.DataFrame:
        """A polars DataFrame with one row per finding over all scans: ``scan_id``, ``type``,
        ``rank`` (1 = the scan's most important), ``label``, ``subgroup`` (JSON text),
        ``group``, ``size``, ``statistic``, ``statistic_value``, ``effect_metric``,
        ``effect_inside``, ``effect_reference``, ``p_value``, ``adjusted_p_value``,
        ``significant``, ``description``. ``.to_pandas()`` converts it where pandas is installed.
        """
        return findings_frame(self)

    def to_json(self) -> str:
        """The JSON report, exactly as ``audit run`` writes it."""
        return render(self, "json", self._hooks)

    def to_markdown(self, hooks: HookMap | None = None) -> str:
        """The Markdown report (``hooks``: the scan types' render hooks, by default this
        report's)."""
        return render(self, "markdown", self._hooks if hooks is None else hooks)

    def to_html(self, hooks: HookMap | None = None) -> str:
        """The self-contained HTML report with its charts."""
        return render(self, "html", self._hooks if hooks is None else hooks)

    def write(
        self,
        out_dir: str | Path,
        formats: str | Sequence[str] | None = None,
        hooks: HookMap | None = None,
    ) -> list[Path]:
        """Write ``<out_dir>/<name>.<ext>`` for each format (json, markdown, html, junit),
        atomically, as ``audit run`` does; the paths written. ``formats`` default to the spec's
        ``output.formats``."""
        if formats is None:
            output = self.provenance.parameters.get("output")
            spec_formats = output.get("formats") if isinstance(output, dict) else None
            formats = spec_formats if isinstance(spec_formats, list) else ["json", "markdown"]
        elif isinstance(formats, str):
            formats = [formats]
        names = [str(f) for f in formats]
        check_formats(names)
        return write_reports(self, Path(out_dir), names, self._hooks if hooks is None else hooks)

    def to_mlflow(
        self,
        run_id: str | None = None,
        *,
        experiment: str | None = None,
        run_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        tracking_uri: str | None = None,
    ) -> str:
        """Log this report to MLflow (``pip install 'fairscan[mlflow]'``); the run's id.

        Into run ``run_id`` if given, else the active run (``with mlflow.start_run():``) or
        ``MLFLOW_RUN_ID``'s, else a new run in ``experiment`` (default: the spec's
        ``output.mlflow.experiment``, else MLflow's default experiment). The tracking server:
        ``tracking_uri``, else MLflow's (``MLFLOW_TRACKING_URI``). Logs params (spec name and
        hash, data hash, settings), metrics per scan (``<scan>.p_value``,
        ``<scan>.statistic``, ``<scan>.significant``, counts by baseline label), tags
        (fairscan version, verdict) and the JSON, Markdown and HTML reports as artifacts
        (:mod:`fairscan.report.mlflow_log`). ``fairscan.ServiceError`` when it fails.
        """
        from fairscan.report.mlflow_log import log_report

        logged = log_report(
            self,
            self._hooks,
            run_id=run_id,
            experiment=experiment,
            run_name=run_name,
            tags=tags,
            tracking_uri=tracking_uri,
        )
        return logged.run_id

    def summary(self) -> str:
        """A few plain lines: the verdict, then each scan's status and top finding."""
        return summary_text(self)

    def __repr__(self) -> str:
        return repr_line(self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        """Jupyter's display: the verdict, one row per scan and the top findings."""
        return summary_html(self)
