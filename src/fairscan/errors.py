"""Errors.

Exception tree::

    FairscanError
    ├── SpecError      the spec file is unreadable or invalid            (exit 2)
    ├── DataError      the data file is unreadable or unfit for a scan   (exit 2)
    ├── UsageError     bad command-line usage                            (exit 2)
    ├── ScanError      a scan could not be carried out                   (exit 2)
    └── ServiceError   a service the reports go to failed (MLflow)       (exit 2)

Every error carries one or more :class:`Issue` objects that name the spec field (and, once
the spec loader has attached it, the file/line/column) or the data column, plus a hint that
says what to do. Only the CLI turns them into text and exit codes (the codes are numbered in
:mod:`fairscan.report.verdict`, their one home).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

ECHO_LIMIT = 80  # characters of user input echoed in a message


def truncate(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut.

    For echoing user input (a value, a key, a path) in a message: a CSV file given as a spec
    must not be printed whole.
    """
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


@dataclass(frozen=True)
class Issue:
    """One problem, located as precisely as we can."""

    message: str
    hint: str | None = None
    field: str | None = None  # spec path, e.g. "columns.outcome" or "scans[0].penalty"
    column: str | None = None  # data column, when the problem is in the data
    file: str | None = None
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based

    def located(self, file: str | None, line: int | None, col: int | None) -> Issue:
        return replace(self, file=file, line=line, col=col)

    def render(self) -> str:
        """Plain-text rendering: ``file:line:col: field: message`` plus a help line."""
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        what = f"{self.field}: " if self.field else ""
        if self.column and not self.field:
            what = f"column {self.column!r}: "
        text = f"{where}{what}{self.message}"
        if self.hint:
            text += f"\n  help: {self.hint}"
        return text


class FairscanError(Exception):
    """Base class of every error the library raises on purpose."""

    kind = "internal"

    def __init__(
        self,
        message: str | None = None,
        *,
        hint: str | None = None,
        field: str | None = None,
        column: str | None = None,
        issues: list[Issue] | None = None,
    ) -> None:
        if issues is None:
            issues = [Issue(message or "error", hint=hint, field=field, column=column)]
        self.issues: list[Issue] = list(issues)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(issue.render() for issue in self.issues)

    def with_issues(self, issues: list[Issue]) -> FairscanError:
        err = type(self)(issues=issues)
        err.__cause__ = self.__cause__
        return err


class SpecError(FairscanError):
    kind = "spec"


class DataError(FairscanError):
    kind = "data"


class UsageError(FairscanError):
    kind = "usage"


class ScanError(FairscanError):
    kind = "scan"


class ServiceError(FairscanError):
    """A service a run reports to (an MLflow tracking server) failed after the reports were
    written."""

    kind = "service"


def as_fairscan_error(exc: Exception, where: str) -> FairscanError:
    """A foreign exception raised inside the API call ``where`` as a fairscan error: running out
    of memory with the way out; a ``TypeError``/``ValueError`` (arguments of the wrong kind) as
    a :class:`UsageError`; anything else as an internal error (a bug) naming the original."""
    from fairscan.memory_budget import resource_failure

    memory = resource_failure(exc)
    if memory is not None:
        message, _, hint = memory.partition("\n  help: ")
        return FairscanError(message, hint=hint or None)
    text = truncate(f"{type(exc).__name__}: {exc}", 300)
    if isinstance(exc, TypeError | ValueError):
        return UsageError(f"{where}: {text}", hint="check the arguments' types and values")
    return FairscanError(
        f"internal error in {where}: {text}",
        hint="this is a bug in fairscan; please report it (the original is the __cause__)",
    )


def fairscan_errors_only(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` raising only :class:`FairscanError` (interrupts pass through)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except FairscanError:
            raise
        except Exception as exc:
            from fairscan.interrupts import interrupt_of

            interrupt = interrupt_of(exc)
            if interrupt is not None:
                raise interrupt from None
            raise as_fairscan_error(exc, f"fairscan.{function.__name__}()") from exc

    return call
