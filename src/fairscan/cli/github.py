"""GitHub Actions: annotations and step outputs.

Under ``GITHUB_ACTIONS=true`` a spec, data or usage error located in a file and each
significant finding become workflow-command annotations (``::error file=F,line=L,col=C,
title=T::message``), shown on the pull request's diff at the spec's line. They are written to
stderr (the runner reads workflow commands from both streams), so that ``--out -`` keeps stdout
for the report alone. Property values and the message are escaped by the rules of GitHub's own
toolkit (``@actions/core``: ``%``, CR and LF in both; ``:`` and ``,`` in properties too), so data
and spec text cannot end an annotation or start another command.

Everything else the CLI prints (the summary, messages, warnings, progress, a report on stdout)
goes through :class:`CommandGuard` under Actions (:func:`guard_streams`), so that no data or spec
text can start a workflow command of its own (``::stop-commands::`` would hide the annotations
that follow; ``::add-mask::`` would hide text from the log); the annotations are written past it.

When ``GITHUB_OUTPUT`` names a file, ``audit run`` appends the step outputs
``significant-findings``, ``verdict``, ``exit-code`` and ``report-paths`` (one path a line) to
it, in the delimiter form GitHub documents for values that may hold newlines.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from fairscan.report.sink_escape import workflow_command_free

if TYPE_CHECKING:
    from fairscan.errors import FairscanError
    from fairscan.report.models import AuditReport
    from fairscan.spec.places import ScanPlace

# workflow commands longer than this are cut (GitHub shows at most a few KB of an annotation)
MESSAGE_CHARS = 4000


def in_github_actions() -> bool:
    """Running as a GitHub Actions step (the runner sets ``GITHUB_ACTIONS=true``)."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as ``@actions/core``'s ``escapeData``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value, escaped as ``@actions/core``'s ``escapeProperty``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    col: int | None = None,
    title: str | None = None,
) -> str:
    """One annotation command: ``::error file=F,line=L,col=C,title=T::message``."""
    where = workspace_path(file) if file is not None else None
    props = [
        f"{key}={escape_property(str(value))}"
        for key, value in (("file", where), ("line", line), ("col", col), ("title", title))
        if value is not None
    ]
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "…"
    return f"{head}::{escape_data(message)}"


def workspace_path(path: str) -> str:
    """``path`` as GitHub places annotations: relative to the checkout (``GITHUB_WORKSPACE``)
    when it lies inside it, with forward slashes; otherwise as it is."""
    from pathlib import Path

    workspace = os.environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return path.replace(os.sep, "/")
    try:
        relative = Path(path).resolve().relative_to(Path(workspace).resolve())
    except (ValueError, OSError):
        return path.replace(os.sep, "/")
    return relative.as_posix()


class CommandGuard:
    """A text stream that writes to ``stream`` what it is given, workflow commands made inert
    (:func:`fairscan.report.sink_escape.workflow_command_free`).

    Each write is taken to start a line: a write that starts mid-line with ``::`` is escaped
    too (harmless), and no ``::`` command slips through between two writes. A ``##[`` cut
    between two writes would: rich, ``print`` and click write each value whole."""

    def __init__(self, stream: TextIO) -> None:
        self.unguarded = stream

    def write(self, text: str) -> int:
        self.unguarded.write(workflow_command_free(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer ...
        return getattr(self.unguarded, name)


def guard_streams() -> None:
    """Under GitHub Actions, put :class:`CommandGuard` in front of ``sys.stdout`` and
    ``sys.stderr`` (once): every console writer (rich, ``print``, click, ``warnings``) writes
    through them."""
    if not in_github_actions():
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, CommandGuard):
            setattr(sys, name, CommandGuard(stream))


def unguarded(stream: TextIO) -> TextIO:
    """The stream under a :class:`CommandGuard` (the stream itself when there is none)."""
    return stream.unguarded if isinstance(stream, CommandGuard) else stream


def _write(lines: Iterable[str], stream: TextIO | None = None) -> None:
    # fairscan's own annotations are the only workflow commands: written past the guard, and
    # the guarded stream flushed first so that they keep their place among the other lines
    sys.stderr.flush()
    target = stream if stream is not None else unguarded(sys.stderr)
    for line in lines:
        target.write(line + "\n")
    target.flush()


def error_annotations(error: FairscanError) -> list[str]:
    """An ``::error`` per issue of a spec, data or usage error (at its file:line:col)."""
    title = {"spec": "spec error", "data": "data error", "usage": "usage error"}.get(
        error.kind, "error"
    )
    lines = []
    for issue in error.issues:
        text = issue.message if issue.field is None else f"{issue.field}: {issue.message}"
        if issue.hint:
            text += f"\nhelp: {issue.hint}"
        lines.append(
            annotation(
                "error",
                text,
                file=issue.file,
                line=issue.line if issue.file is not None else None,
                col=issue.col if issue.file is not None else None,
                title=f"fairscan {title}",
            )
        )
    return lines


def annotate_error(error: FairscanError) -> None:
    """Print :func:`error_annotations` when running in GitHub Actions."""
    if in_github_actions():
        _write(error_annotations(error))


def finding_annotations(report: AuditReport, places: Sequence[ScanPlace | None]) -> list[str]:
    """An annotation per significant finding (and per group certify could not certify, titled
    so): ``error`` when the gate fails on the run, ``warning`` when it lets the findings pass;
    at the scan's line in the spec."""
    from fairscan.report.text import p_equals
    from fairscan.report.verdict import ExitCode

    level = "error" if report.verdict.exit_code == ExitCode.FINDINGS else "warning"
    lines = []
    for index, scan in enumerate(report.scans):
        place = places[index] if index < len(places) else None
        for finding in scan.findings:
            if not finding.significant and finding.certified is not False:
                continue  # certify's not-certified groups are annotated, never as significant
            what = "group not certified" if finding.certified is False else "significant finding"
            p = (
                f", {p_equals(finding.p_value, precise=True)}"
                if finding.p_value is not None
                else ""
            )
            lines.append(
                annotation(
                    level,
                    f"{finding.label}: {finding.description}",
                    file=place.file if place is not None else None,
                    line=place.line if place is not None else None,
                    col=place.col if place is not None else None,
                    title=f"fairscan {report.name}: {what} of scan {scan.id}{p}",
                )
            )
    untested_level = "error" if report.verdict.exit_code == ExitCode.ERROR else "warning"
    for status, level, words, title in (
        ("error", "error", "failed", "scan error"),
        ("untested", untested_level, "is untested", "UNTESTED"),  # never a silent pass
    ):
        for index, scan in enumerate(report.scans):
            if scan.status != status:
                continue
            why = scan.error if status == "error" else scan.untested_reason or "no test ran"
            place = places[index] if index < len(places) else None
            lines.append(
                annotation(
                    level,
                    f"scan {scan.id} {words}: {why}",
                    file=place.file if place is not None else None,
                    line=place.line if place is not None else None,
                    title=f"fairscan {report.name}: {title}",
                )
            )
    return lines


def annotate_report(report: AuditReport, places: Sequence[ScanPlace | None]) -> None:
    """Print :func:`finding_annotations` when running in GitHub Actions."""
    if in_github_actions():
        _write(finding_annotations(report, places))


def step_outputs(values: dict[str, str]) -> str:
    """``name<<DELIMITER`` blocks for ``$GITHUB_OUTPUT`` (safe for values with newlines)."""
    blocks = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
        while delimiter in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
        blocks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(blocks)


def write_step_outputs(
    significant: int, verdict: str, exit_code: int, report_paths: Sequence[str]
) -> str | None:
    """Append the run's outputs to ``$GITHUB_OUTPUT`` when it is set; a problem writing it is
    returned as a warning (the audit's result stands)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return None
    text = step_outputs(
        {
            "significant-findings": str(significant),
            "verdict": verdict,
            "exit-code": str(exit_code),
            "report-paths": "\n".join(report_paths),
        }
    )
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        return f"cannot append to GITHUB_OUTPUT: {exc.strerror or exc}"
    return None
