"""The ``audit`` command line: a thin adapter over :mod:`fairscan.api`.

This package is the only place that reads the environment, prints, or exits. Results go to
files (and a summary to stderr); logs and progress go to stderr: a bar on a TTY, a plain line
at most every 10 s otherwise.

Exit codes: 0 no significant finding, 1 significant finding, 2 spec/data/usage/internal
error (the worst code wins across specs), 130 interrupted (Ctrl-C), 143 stopped (SIGTERM).

Layout: :mod:`.common` holds the typer ``app`` and the helpers every command shares; this module
the entry point; the commands live in :mod:`.run` (``run``, ``validate``), :mod:`.scan` (``scan``) and
:mod:`.tools` (``diff``, ``explain``, ``schema``, ``init``, ``lambda``, ``power``).
"""

from __future__ import annotations

# ruff: noqa: E402 - the imports follow the start-up signal handlers on purpose
# first of all: a signal while the libraries below load exits 130/143 without a traceback
from fairscan.interrupts import exit_on_signal_during_start_up

exit_on_signal_during_start_up()

import contextlib
import errno
import os
import sys
from typing import Annotated

import typer

from fairscan import __version__
from fairscan.cli import run, scan, tools  # the commands register themselves on `app`
from fairscan.cli.common import (
    _ANNOUNCED,
    _SIGNALS,
    WARNING_CHARS,
    DebugOption,
    ExitZeroOption,
    ProgressOption,
    RichProgress,
    _short,
    app,
    cli_errors,
    deliver_sinks,
    err,
    install_signal_handlers,
    internal_error,
    interrupted,
    interrupted_code,
    make_progress,
    out,
    print_error,
    print_summary,
    print_warnings,
)
from fairscan.report.verdict import ExitCode, system_exit_status

__all__ = [
    "WARNING_CHARS",
    "DebugOption",
    "ExitZeroOption",
    "ProgressOption",
    "RichProgress",
    "_short",
    "app",
    "deliver_sinks",
    "err",
    "internal_error",
    "interrupted",
    "main",
    "make_progress",
    "print_error",
    "print_summary",
    "print_warnings",
    "run",
    "scan",
    "tools",
]


def _exit_interrupted() -> None:
    """main(): say "interrupted" unless the command did, and exit 130/143 at once."""
    if not _ANNOUNCED:
        err.print("interrupted", markup=False)
    _exit_now(interrupted_code())


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"fairscan {__version__}")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Show the version and exit.",
        ),
    ] = False,
) -> None:
    """fairscan: audit classifiers for intersectional bias with statistical guarantees."""
    if ctx.resilient_parsing:  # shell completion: no file is read
        return
    from fairscan.cli.github import guard_streams

    guard_streams()  # main() did when run as `audit`; `app` may be called without it (tests)
    from fairscan.cli.config import CONFIG_META, load_config

    with cli_errors():
        config = load_config()
    if config is not None:
        # defaults of the options: below flags and FAIRSCAN_* variables, above the spec
        ctx.default_map = {**(ctx.default_map or {}), **config.default_map()}
        ctx.meta[CONFIG_META] = config  # the commands name the file of each setting it gives


def _exit_now(code: int) -> None:
    """Leave: run the exit handlers and flush, then skip the interpreter's teardown (garbage
    collection of every loaded module). After an interrupt that ends the process promptly; after
    a normal run it saves 50-100 ms of CPU, a fifth of a small audit's whole process."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def main() -> None:
    """Console-script entry point."""
    # numpy's OpenBLAS starts one thread per core, which busy-wait at start-up: about 60 ms of
    # CPU per run on 2 cores, a tenth of a small audit. The subset scans do no BLAS work, so the
    # CLI starts BLAS single-threaded unless the user chose otherwise (numpy is not loaded yet:
    # tests/cli/test_startup_imports.py); the shift scan, which multiplies dense kernel
    # matrices, raises the limit to the run's workers while it runs. Workers inherit it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _open_missing_streams()
    from fairscan.cli.github import guard_streams

    guard_streams()  # under GitHub Actions no output line is a workflow command but ours
    _fit_memory_limit()
    install_signal_handlers()
    try:
        app()
    except KeyboardInterrupt:
        _exit_interrupted()
    except (OSError, ValueError) as exc:
        # stdout or stderr cannot be written (a closed pipe, a full disk): an environment
        # error, exit 2, never 1 (which a CI gate reads as "significant finding")
        if not _stream_failure(exc):
            raise
        _exit_now(int(ExitCode.ERROR))
    except SystemExit as done:
        # typer turns a KeyboardInterrupt escaping a command into a silent exit 130
        if _SIGNALS:
            _exit_interrupted()
        # click swaps the streams for its PacifyFlushWrapper (`_PacifyFlushWrapper` in click
        # 8.2-8.5; without the underscore in typer's own copy of click)
        if any(
            type(s).__name__.lstrip("_") == "PacifyFlushWrapper" for s in (sys.stdout, sys.stderr)
        ):
            # click turned a write to a closed pipe (EPIPE) into exit 1: an environment error
            _exit_now(int(ExitCode.ERROR))
        _exit_now(_exit_status(done.code))


_STREAM_ERRNOS = frozenset(
    {errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EFBIG, errno.EDQUOT}
)


def _stream_failure(exc: BaseException) -> bool:
    """``exc`` is a failed write to stdout or stderr."""
    if isinstance(exc, OSError):
        return exc.errno in _STREAM_ERRNOS
    return isinstance(exc, ValueError) and "closed file" in str(exc)


def _open_missing_streams() -> None:
    """A process started with stdout or stderr closed (``2>&-``) writes them to /dev/null."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def _fit_memory_limit() -> None:
    """Under a low address-space limit: refuse at once, or keep the thread pools small."""
    from rich.markup import escape

    from fairscan.memory_budget import fit_thread_pools, startup_problem

    problem = startup_problem()
    if problem is not None:
        err.print(f"[bold red]error[/]: {escape(problem)}", soft_wrap=True)
        _exit_now(int(ExitCode.ERROR))
    fit_thread_pools()


def _exit_status(code: object) -> int:
    """The process exit status of ``SystemExit(code)``, as the interpreter would make it."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # a message: printed, then its status
    return system_exit_status(code)
