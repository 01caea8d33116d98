"""The ``audit`` command line: a thin adapter over :mod:`fairscan.api`.

This package is the only place that reads the environment, prints, or exits. Results go to
files (and a summary to stderr); logs and progress go to stderr: a bar on a TTY, a plain line
at most every 10 s otherwise.

Exit codes: 0 no significant finding, 1 significant finding, 2 spec/data/usage/internal
error (the worst code wins across specs), 130 interrupted (Ctrl-C), 143 stopped (SIGTERM).

Layout: this module holds the typer ``app``, the entry point and the helpers every command
shares; the commands live in :mod:`.run` (``run``, ``validate``), :mod:`.scan` (``scan``) and
:mod:`.tools` (``diff``, ``explain``, ``schema``, ``init``, ``lambda``, ``power``).
"""

from __future__ import annotations

# ruff: noqa: E402 - the imports follow the start-up signal handlers on purpose
# first of all: a signal while the libraries below load exits 130/143 without a traceback
from fairscan.interrupts import exit_on_signal_during_start_up

exit_on_signal_during_start_up()

import _thread
import contextlib
import errno
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer import _click as click  # typer 0.29 carries its own copy of click
from typer.core import TyperGroup

from fairscan import __version__
from fairscan.errors import ExitCode, FairscanError
from fairscan.interrupts import interrupt_of

if TYPE_CHECKING:
    from fairscan.progress import Progress
    from fairscan.report.models import AuditReport

# metavars shown in --help instead of typer's type hints (`<str>`, `<int range>`)
_METAVARS = {
    "out_dir": "DIR",
    "out_text": "DIR",
    "baseline": "REPORT",
    "scan_type": "TYPE",
    "filter_": "SQL",
    "save_spec": "FILE",
    "threshold": "NUMBER",
    "alpha": "NUMBER",
    "seed": "N",
    "replicates": "N",
    "workers": "N",
    "outcome": "COLUMN",
    "prediction": "COLUMN",
    "recommendation": "COLUMN",
    "positive": "LABEL",
    "output": "FILE",
    "cfn_over_cfp": "RATIO",
    "answers": "Z1,Z2,Z3",
    "more_answers": "Z1,Z2,Z3",
    "where": "ATTRIBUTE=VALUE",
    "side": "negatives|positives",
}


def plain_help(command: click.Command) -> None:
    """Help without type hints or cut sentences: every option that takes a value shows a
    metavar (DIR, N, ...), and the command list shows each command's whole first paragraph."""
    command.context_class = _HelpContext
    if command.short_help is None and command.help:
        first = command.help.split("\n\n", 1)[0]
        command.short_help = " ".join(first.split())
    for param in command.params:
        if param.metavar is not None or getattr(param, "is_flag", False):
            continue
        if getattr(param, "count", False) or param.name is None:
            continue
        param.metavar = _METAVARS.get(param.name, param.name.upper().strip("_"))
        if param.param_type_name == "argument":
            # typer lists an argument's type (`<list[Path]>`) even when it has a metavar
            setattr(param, "display_type_rich", lambda ctx: None)  # noqa: B010


@contextlib.contextmanager
def _whole_words() -> Iterator[None]:
    """While help is formatted, click wraps lines between words only, never at a hyphen
    ("race=African-" / "American")."""
    import typer._click._textwrap as textwrap_module

    original = textwrap_module.TextWrapper

    class NoHyphenBreaks(original):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["break_on_hyphens"] = False
            super().__init__(*args, **kwargs)

    textwrap_module.TextWrapper = NoHyphenBreaks  # type: ignore[misc]
    try:
        yield
    finally:
        textwrap_module.TextWrapper = original  # type: ignore[misc]


class _HelpContext(click.Context):
    def get_help(self) -> str:
        with _whole_words():
            return super().get_help()


class _HelpGroup(TyperGroup):
    context_class = _HelpContext

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            plain_help(command)
        return command


# Options several commands share (one declaration, one help text).
DebugOption = Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")]
ProgressOption = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress",
        help="Show progress: a bar on a terminal, a line every 10 s in logs.",
    ),
]
ExitZeroOption = Annotated[
    bool,
    typer.Option(
        "--exit-zero", help="Exit 0 even with significant findings (errors still exit 2)."
    ),
]

app = typer.Typer(
    name="audit",
    help="fairscan: audit classifiers for intersectional bias with statistical guarantees.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    # plain click help: rich panels truncate with "…" at 80 columns and show `<bool>` types
    rich_markup_mode=None,
    cls=_HelpGroup,
    epilog="Exit codes: 0 = no significant finding, 1 = significant finding, 2 = error, "
    "130 = interrupted (Ctrl-C), 143 = stopped (SIGTERM).",
)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class RichProgress:
    """Progress observer drawing a transient rich bar on stderr (one bar per task)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress: Any = None
        self._task: Any = None

    def start(self, task: str, total: int | None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        self.done()
        # a fresh Progress per task: transient bars vanish when their task is done
        self._progress = Progress(
            "{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self._console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(Text(task).plain, total=total)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def done(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._progress = None
        self._task = None


def show_progress(enabled: bool) -> bool:
    """Whether to draw the rich bar: on a terminal, outside CI."""
    return enabled and err.is_terminal and not os.environ.get("CI")


PLAIN_PROGRESS_SECONDS = 10.0


def make_progress(enabled: bool) -> Progress:
    """The progress observer of a run: the rich bar (with ETA and "scan 2 of 3") on a terminal;
    in logs (no terminal, or CI) a plain line at most every 10 s; nothing when not ``enabled``."""
    from fairscan.progress import NullProgress, PlainProgress

    if not enabled:
        return NullProgress()
    if show_progress(enabled):
        return RichProgress(err)
    return PlainProgress(
        lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True),
        interval=PLAIN_PROGRESS_SECONDS,
    )


def print_error(error: FairscanError) -> None:
    # soft_wrap: never hard-wrap a message at the console width, so that `file:line:col: ...`
    # stays on one line in CI logs and editors (the console is 80 columns when not a TTY).
    label = {"spec": "spec error", "data": "data error", "usage": "usage error"}.get(
        error.kind, "error"
    )
    from fairscan.report.sink_escape import console_text

    for issue in error.issues:
        err.print(f"[bold red]{label}[/]: {escape(console_text(issue.render()))}", soft_wrap=True)


def internal_error(exc: BaseException, debug: bool) -> int:
    # An interrupt is never a bug: a library may hand Ctrl-C back wrapped in another exception
    # (a SystemError whose cause is the KeyboardInterrupt), and a SIGTERM to the process group
    # breaks the worker pool.
    if interrupt_of(exc) is not None or _SIGNALS:
        raise interrupted()
    from fairscan.memory_budget import resource_failure

    if (memory := resource_failure(exc)) is not None:  # not a bug: the limit and the way out
        err.print(f"[bold red]error[/]: {escape(memory)}", soft_wrap=True)
        return int(ExitCode.ERROR)
    if isinstance(exc, OSError) and exc.errno is not None:
        # the environment, not a bug: a path too long, a folder that cannot be created ...
        from fairscan.errors import truncate

        where = f" {truncate(str(exc.filename), 120)!r}" if exc.filename else ""
        err.print(
            f"[bold red]error[/]: cannot use{escape(where)}: {escape(exc.strerror or str(exc))}\n"
            "  help: check the paths given (--out, --save-spec, output.dir) and the disk",
            soft_wrap=True,
        )
        return int(ExitCode.ERROR)
    # The exception text is printed without markup: a message such as "bad [/x]" must not
    # turn into a rich MarkupError (and a traceback) while reporting the original error.
    err.print(
        f"[bold red]internal error[/]: {escape(f'{type(exc).__name__}: {exc}')}\n"
        "This is a bug in fairscan; please report it with the command you ran. "
        "Re-run with --debug for the traceback.",
        soft_wrap=True,
    )
    if debug:
        err.print("".join(traceback.format_exception(exc)), markup=False, soft_wrap=True)
    return int(ExitCode.ERROR)


# Signals received (SIGINT, SIGTERM), in order; the first one sets the exit code 128 + signum.
_SIGNALS: list[int] = []
_ANNOUNCED: list[bool] = []


def interrupted_code() -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal number, the shell convention)."""
    return 128 + _SIGNALS[0] if _SIGNALS else int(ExitCode.INTERRUPTED)


def interrupted() -> typer.Exit:
    _ANNOUNCED.append(True)
    err.print("interrupted", markup=False)
    return typer.Exit(interrupted_code())


def _exit_interrupted() -> None:
    """main(): say "interrupted" unless the command did, and exit 130/143 at once."""
    if not _ANNOUNCED:
        err.print("interrupted", markup=False)
    _exit_now(interrupted_code())


def _on_signal(signum: int, frame: object) -> None:
    """SIGINT and SIGTERM stop the run the same way: a KeyboardInterrupt in the main thread,
    which tears the worker pool down and exits 130/143 without writing a report. A second
    signal while that cleanup runs exits at once."""
    if _SIGNALS:
        os._exit(interrupted_code())
    _SIGNALS.append(signum)
    raise KeyboardInterrupt


def _unraisable(args: Any) -> None:
    """An interrupt raised where it cannot propagate (a weakref callback during an import, a
    ``__del__``) is not lost, nor printed as a traceback: it is raised again in the main thread."""
    if isinstance(args.exc_value, KeyboardInterrupt) and _SIGNALS:
        _thread.interrupt_main(signal.Signals(_SIGNALS.pop()))
        return
    sys.__unraisablehook__(args)


def install_signal_handlers() -> None:
    sys.unraisablehook = _unraisable
    for signum in (signal.SIGINT, signal.SIGTERM):
        # not in the main thread, or no such signal here: keep the default behaviour
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, _on_signal)


def append_step_summary(report: AuditReport) -> None:
    """Output format `github`: append the Markdown report to $GITHUB_STEP_SUMMARY if set."""
    from fairscan.report.markdown import render_markdown
    from fairscan.scans import render_hooks

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(render_markdown(report, render_hooks()) + "\n")
    except OSError as exc:
        err.print(
            f"[yellow]warning[/]: cannot append to GITHUB_STEP_SUMMARY: "
            f"{escape(str(exc.strerror or exc))}",
            soft_wrap=True,
        )


WARNING_CHARS = 300


def _short(text: str, limit: int = WARNING_CHARS) -> str:
    """A warning on one line: whitespace runs collapsed, cut at ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def print_warnings(report: AuditReport) -> None:
    """The data warnings and each scan's warnings (the reports carry them in full), each once:
    a warning several scans share names them all."""
    seen: dict[str, list[str]] = {}
    for text in report.data_warnings:
        seen.setdefault(_short(text), [])
    for result in report.scans:
        for text in result.warnings:
            scans = seen.setdefault(_short(text), [])
            if result.id not in scans:
                scans.append(result.id)
    from fairscan.report.sink_escape import console_text

    for text, scans in seen.items():
        where = f" ({', '.join(scans)})" if scans else ""
        err.print(
            f"[yellow]warning[/]{escape(where)}: {escape(console_text(text))}", soft_wrap=True
        )


def print_summary(
    report: AuditReport, written: list[str], formats: tuple[str, ...], quiet: bool
) -> None:
    """The console summary of one audit (``audit run`` per spec, ``audit scan``): the table
    and the significant findings (unless ``quiet``), scan errors, the verdict line."""
    from fairscan.report.console import findings_text, summary_lines, summary_table, verdict_text
    from fairscan.report.sink_escape import console_text

    if not quiet:
        if err.is_terminal:
            # markup=False reaches the table cells: data values such as "[/x]" are shown
            # verbatim instead of being parsed as rich markup (a MarkupError crash).
            err.print(summary_table(report), markup=False)
        else:
            # logs (CI): a table would be drawn 80 columns wide with labels folded mid-word;
            # one unwrapped line per scan instead
            for text in summary_lines(report):
                err.print(text, markup=False, soft_wrap=True)
        for line in findings_text(report):
            err.print(line, soft_wrap=not err.is_terminal)
    if not quiet:
        print_warnings(report)
    for result in report.scans:
        if result.error:  # the other scans' results are kept; say why this one failed
            text = console_text(f"scan error: {result.id}: {result.error}")
            err.print(text, markup=False, soft_wrap=True)
    if "github" in formats:
        append_step_summary(report)
    err.print(verdict_text(report, written), soft_wrap=True)
    if report.baseline is not None:
        b = report.baseline
        counts = ", ".join(f"{n} {label}" for label, n in b.counts.items())
        err.print(
            f"baseline {b.baseline_path}: {counts}; gate fail_on {b.fail_on}: "
            f"exit {report.verdict.exit_code}",
            markup=False,
            soft_wrap=True,
        )


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"fairscan {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
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
        if type(sys.stdout).__name__ == "PacifyFlushWrapper" or type(sys.stderr).__name__ == (
            "PacifyFlushWrapper"
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
    from fairscan.memory_budget import fit_thread_pools, startup_problem

    problem = startup_problem()
    if problem is not None:
        err.print(f"[bold red]error[/]: {escape(problem)}", soft_wrap=True)
        _exit_now(int(ExitCode.ERROR))
    fit_thread_pools()


def _exit_status(code: object) -> int:
    """The process exit status of ``SystemExit(code)``, as the interpreter would make it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # a message: printed, status 1
    return 1


# The commands register themselves on `app` when imported (in `audit --help` order).
from fairscan.cli import run, scan, tools  # noqa: F401
