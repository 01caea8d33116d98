"""Atomic report writing: a temp file in the target directory, then ``os.replace``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fairscan.report.atomic_write import write_all
from fairscan.report.hooks import HookMap, resolve_hooks
from fairscan.report.models import AuditReport

EXTENSIONS = {"json": ".json", "markdown": ".md", "junit": ".junit.xml", "html": ".html"}
# Formats that are not files: `github` appends the Markdown report to the job summary (CLI).
NOT_FILES = frozenset({"github"})


def report_json(report: AuditReport) -> str:
    """Strict JSON (no NaN/Infinity: pydantic writes them as null), 2-space indent."""
    # The optional baseline block is omitted when there is none: the report keeps its keys.
    exclude = {"baseline"} if report.baseline is None else None
    text = report.model_dump_json(indent=2, exclude=exclude)
    json.loads(text, parse_constant=_reject_constant)  # guard: must be strict JSON
    return text + "\n"


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name} in report")


def atomic_write_text(path: Path, text: str) -> None:
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


def render(report: AuditReport, fmt: str, hooks: HookMap | None = None) -> str:
    """One report format as text; ``hooks`` are the scan types' render hooks (Markdown, HTML),
    by default those of the registered scan types (:func:`fairscan.report.hooks.default_hooks`)."""
    hooks = resolve_hooks(hooks)
    if fmt == "json":
        return report_json(report)
    if fmt == "markdown":
        from fairscan.report.markdown import render_markdown

        return render_markdown(report, hooks)
    if fmt == "junit":
        from fairscan.report.junit import render_junit

        return render_junit(report)
    if fmt == "html":
        from fairscan.report.html import render_html

        return render_html(report, hooks)
    raise ValueError(f"unknown report format {fmt!r}")


def check_formats(formats: Sequence[str]) -> None:
    """``ValueError`` naming the first format that is neither a file format nor ``github``."""
    for fmt in formats:
        if fmt not in EXTENSIONS and fmt not in NOT_FILES:
            known = ", ".join([*EXTENSIONS, *sorted(NOT_FILES)])
            raise ValueError(f"unknown report format {fmt!r}; the formats are: {known}")


def write_reports(
    report: AuditReport, out_dir: Path, formats: Sequence[str], hooks: HookMap | None = None
) -> list[Path]:
    """Write each file format to ``out_dir/<name><extension>``, all of them or none (the previous
    set stays intact on failure); the paths written.

    ``hooks`` default to the registered scan types' (:func:`fairscan.report.hooks.default_hooks`).
    """
    check_formats(formats)
    hooks = resolve_hooks(hooks)
    # rendered first, then written all together or not at all (report/atomic_write.py)
    texts = {
        out_dir / f"{report.name}{EXTENSIONS[fmt]}": render(report, fmt, hooks)
        for fmt in formats
        if fmt not in NOT_FILES
    }
    return write_all(texts)
