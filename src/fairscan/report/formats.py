"""The report formats: one protocol and one registry.

A format has a name (as ``output.formats`` and ``--format`` spell it), a file extension or,
for a format that is not a file, the sink it goes to, and ``render(report, hooks)``: the text.
``json``, ``markdown``, ``html``, ``junit`` and ``sarif`` are files written atomically next to
each other;
``github`` is a sink (the CLI appends its text to ``$GITHUB_STEP_SUMMARY``: only the CLI reads
the environment). A new format is one :class:`ReportFormat` entry in :data:`FORMATS`.

The scan types' render hooks are passed in explicitly (the run layer hands over the registry's
``fairscan.scans.render_hooks()``); :data:`~fairscan.report.hooks.NO_HOOKS` renders the common
contract alone.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

from fairscan.report.hooks import NO_HOOKS, HookMap
from fairscan.report.html import render_html
from fairscan.report.junit import render_junit
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditReport
from fairscan.report.sarif import render_sarif


@runtime_checkable
class ReportFormat(Protocol):
    """What every report format provides."""

    @property
    def name(self) -> str: ...

    @property
    def extension(self) -> str | None:
        """The file name's ending (``.md``); None for a format that is not a file."""

    @property
    def sink(self) -> str | None:
        """Where a format that is not a file goes (the environment variable naming it)."""

    def render(self, report: AuditReport, hooks: HookMap) -> str: ...


@dataclass(frozen=True)
class Format:
    """A registry entry: a renderer with its name and its file extension or sink."""

    name: str
    renderer: Callable[[AuditReport, HookMap], str]
    extension: str | None = None
    sink: str | None = None

    def render(self, report: AuditReport, hooks: HookMap) -> str:
        return self.renderer(report, hooks)


def report_json(report: AuditReport) -> str:
    """Strict JSON (no NaN/Infinity: pydantic writes them as null), 2-space indent."""
    # The optional blocks are omitted when there are none: the report keeps its keys.
    exclude = {
        key for key in ("baseline", "bins", "model", "monitor") if getattr(report, key) is None
    } or None
    text = report.model_dump_json(indent=2, exclude=exclude)
    json.loads(text, parse_constant=_reject_constant)  # guard: must be strict JSON
    return text + "\n"


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name} in report")


def _json(report: AuditReport, hooks: HookMap) -> str:
    return report_json(report)


def _junit(report: AuditReport, hooks: HookMap) -> str:
    return render_junit(report)


def _sarif(report: AuditReport, hooks: HookMap) -> str:
    return render_sarif(report)


def _step_summary(report: AuditReport, hooks: HookMap) -> str:
    return render_markdown(report, hooks) + "\n"


# name -> format, in the order the documentation lists them
FORMATS: Final[dict[str, ReportFormat]] = {
    "json": Format("json", _json, extension=".json"),
    "markdown": Format("markdown", render_markdown, extension=".md"),
    "junit": Format("junit", _junit, extension=".junit.xml"),
    "html": Format("html", render_html, extension=".html"),
    "github": Format("github", _step_summary, sink="GITHUB_STEP_SUMMARY"),
    "sarif": Format("sarif", _sarif, extension=".sarif"),
}


def file_formats() -> dict[str, str]:
    """Format name -> file extension, for the formats that are files."""
    return {name: fmt.extension for name, fmt in FORMATS.items() if fmt.extension is not None}


def get_format(name: str) -> ReportFormat:
    """The registered format ``name``; ``ValueError`` listing the formats otherwise."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise ValueError(f"unknown report format {name!r}; the formats are: {', '.join(FORMATS)}")
    return fmt


def render(report: AuditReport, fmt: str, hooks: HookMap = NO_HOOKS) -> str:
    """One report format as text, with the scan types' render ``hooks`` (none: the common
    contract alone)."""
    return get_format(fmt).render(report, hooks)


def check_formats(formats: Sequence[str]) -> None:
    """``ValueError`` naming the first format that is not registered."""
    for name in formats:
        get_format(name)


def sink_formats(formats: Sequence[str]) -> list[ReportFormat]:
    """The formats of ``formats`` that go to a sink rather than a file, in order."""
    return [fmt for fmt in map(get_format, formats) if fmt.extension is None]


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and
    ``os.replace``: a reader never sees a half-written report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; reports should get the usual permissions (umask applies)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_reports(
    report: AuditReport, out_dir: Path, formats: Sequence[str], hooks: HookMap = NO_HOOKS
) -> list[Path]:
    """Write each file format to ``out_dir/<name><extension>``, all of them or none (the previous
    set stays intact on failure); the paths written (sinks are the caller's to deliver:
    :func:`sink_formats`)."""
    from fairscan.report.atomic_write import write_all

    check_formats(formats)
    # rendered first, then written all together or not at all (report/atomic_write.py)
    texts = {
        out_dir / f"{report.name}{FORMATS[name].extension}": FORMATS[name].render(report, hooks)
        for name in formats
        if FORMATS[name].extension is not None
    }
    return write_all(texts)
