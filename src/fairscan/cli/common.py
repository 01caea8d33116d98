"""What every ``audit`` command shares: the typer ``app``, the options several commands take,
the consoles, progress, error and signal handling, and the console summary of a run. The
commands (:mod:`.run`, :mod:`.scan`, :mod:`.tools`) import it; :mod:`fairscan.cli` imports
them, so the package has no import circle."""

from __future__ import annotations

import _thread
import contextlib
import inspect
import os
import signal
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from fairscan.errors import FairscanError, Issue
from fairscan.interrupts import interrupt_of
from fairscan.report.sink_escape import console_text
from fairscan.report.verdict import ExitCode, gate_line, interrupted_exit_code

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


def plain_help(command: Any) -> None:
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
            # and writes a required one in braces in the usage line (`{SPECS}...`): click's
            # and POSIX's convention is the bare name, optional ones in brackets
            setattr(param, "_usage_display_name", _usage_name(param))  # noqa: B010


def _usage_name(param: Any) -> Any:
    """The usage-line form of an argument: ``SPECS...``, ``[DATA]``."""

    def name() -> str:
        text = str(param.metavar or param.name).upper()
        text = text if param.required else f"[{text}]"
        return text + ("..." if param.nargs != 1 else "")

    return name


# the position of `break_on_hyphens` among textwrap.TextWrapper's positional defaults
_HYPHENS = list(inspect.signature(textwrap.TextWrapper).parameters).index("break_on_hyphens")


@contextlib.contextmanager
def _whole_words() -> Iterator[None]:
    """While help is formatted, click wraps lines between words only, never at a hyphen
    ("race=African-" / "American").

    click's wrapper (typer >= 0.26 carries its own copy of click) is a subclass of the standard
    library's ``textwrap.TextWrapper`` that never passes ``break_on_hyphens``, so the standard
    default is switched for the duration; no private module of typer or click is touched.
    """
    init = textwrap.TextWrapper.__init__
    original = init.__defaults__
    assert original is not None
    first = init.__code__.co_argcount - len(original)  # index of the first defaulted argument
    init.__defaults__ = tuple(
        False if first + i == _HYPHENS + 1 else value for i, value in enumerate(original)
    )
    try:
        yield
    finally:
        init.__defaults__ = original


class _HelpContext(typer.Context):
    def get_help(self) -> str:
        with _whole_words():
            return super().get_help()


class _HelpGroup(TyperGroup):
    context_class = _HelpContext

    def get_command(self, ctx: Any, cmd_name: str) -> Any:  # click's types: typer's copy or click's
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
    # `audit --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell)
    add_completion=True,
    # plain click help: rich panels truncate with "…" at 80 columns and show `<bool>` types
    rich_markup_mode=None,
    cls=_HelpGroup,
    epilog="Exit codes: 0 = no significant finding, 1 = significant finding, 2 = error, "
    "130 = interrupted (Ctrl-C), 143 = stopped (SIGTERM).",
)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class RichProgress:
    """Progress observer drawing a transient rich bar on stderr (one bar per task): the
    phase's words, a bar, the steps, the time elapsed and a smoothed time left."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        from fairscan.progress import EtaEstimate

        self._console = console
        self._clock = clock
        self._progress: Any = None
        self._task: Any = None
        self._eta = EtaEstimate(None, clock())

    def start(self, task: str, total: int | None) -> None:
        from rich.progress import BarColumn, Progress, TimeElapsedColumn
        from rich.text import Text

        from fairscan.cli.progress_bar import EtaColumn, StepsColumn
        from fairscan.progress import EtaEstimate

        self.done()
        self._eta = EtaEstimate(total, self._clock())
        # a fresh Progress per task: transient bars vanish when their task is done
        self._progress = Progress(
            "{task.description}",
            BarColumn(),
            StepsColumn(),
            TimeElapsedColumn(),
            EtaColumn(lambda: self._eta, self._clock),
            console=self._console,
            transient=True,
            get_time=self._clock,
        )
        self._progress.start()
        self._task = self._progress.add_task(Text(console_text(task)).plain, total=total)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._eta.advance(n, self._clock())
            self._progress.advance(self._task, n)

    def estimate(self, text: str) -> None:
        """The replicates' cost estimate: a line above the bar (stays when the bar goes)."""
        from rich.text import Text

        self._console.print(Text(console_text(text)))

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
        lambda line: err.print(console_text(line), markup=False, highlight=False, soft_wrap=True),
        interval=PLAIN_PROGRESS_SECONDS,
        background=True,  # a line during a long read or search too
    )


def print_error(error: FairscanError) -> None:
    # soft_wrap: never hard-wrap a message at the console width, so that `file:line:col: ...`
    # stays on one line in CI logs and editors (the console is 80 columns when not a TTY).
    label = {"spec": "spec error", "data": "data error", "usage": "usage error"}.get(
        error.kind, "error"
    )
    for issue in error.issues:
        err.print(f"[bold red]{label}[/]: {escape(_issue_text(issue))}", soft_wrap=True)
    from fairscan.cli.github import annotate_error

    annotate_error(error)  # under GITHUB_ACTIONS=true: at the spec's line on the diff


def _issue_text(issue: Issue) -> str:
    """``issue.render()`` with each part on one line (its own help line kept): a value quoted
    in a message cannot start a console line of its own."""

    def line(text: str | None) -> str | None:
        return None if text is None else console_text(text)

    # the column is rendered with repr(), which escapes line breaks itself
    return replace(
        issue,
        message=console_text(issue.message),
        hint=line(issue.hint),
        field=line(issue.field),
        file=line(issue.file),
    ).render()


def internal_error(exc: BaseException, debug: bool) -> int:
    # An interrupt is never a bug: a library may hand Ctrl-C back wrapped in another exception
    # (a SystemError whose cause is the KeyboardInterrupt), and a SIGTERM to the process group
    # breaks the worker pool.
    if interrupt_of(exc) is not None or _SIGNALS:
        raise interrupted()
    from fairscan.memory_budget import resource_failure

    if (memory := resource_failure(exc)) is not None:  # not a bug: the limit and the way out
        err.print(f"[bold red]error[/]: {escape(console_text(memory))}", soft_wrap=True)
        return int(ExitCode.ERROR)
    if isinstance(exc, OSError) and exc.errno is not None:
        # the environment, not a bug: a path too long, a folder that cannot be created ...
        from fairscan.errors import truncate

        where = f" {truncate(str(exc.filename), 120)!r}" if exc.filename else ""
        err.print(
            f"[bold red]error[/]: cannot use{escape(console_text(where))}: "
            f"{escape(console_text(exc.strerror or str(exc)))}\n"
            "  help: check the paths given (--out, --save-spec, output.dir) and the disk",
            soft_wrap=True,
        )
        return int(ExitCode.ERROR)
    # The exception text is printed without markup: a message such as "bad [/x]" must not
    # turn into a rich MarkupError (and a traceback) while reporting the original error.
    err.print(
        f"[bold red]internal error[/]: {escape(console_text(f'{type(exc).__name__}: {exc}'))}\n"
        "This is a bug in fairscan; please report it with the command you ran. "
        "Re-run with --debug for the traceback.",
        soft_wrap=True,
    )
    if debug:
        err.print("".join(traceback.format_exception(exc)), markup=False, soft_wrap=True)
    return int(ExitCode.ERROR)


class CommandFailed(typer.Exit):
    """The exit of a command whose work failed (exit code 2): ``internal`` when the failure was
    a bug rather than a spec, data, usage or environment error. A command running several
    specs catches it to go on with the next one."""

    def __init__(self, code: int, *, internal: bool) -> None:
        super().__init__(code)
        self.internal = internal


@contextlib.contextmanager
def cli_errors(debug: bool = False) -> Iterator[None]:
    """The one way a command turns a failure into its message and exit code: a
    :class:`~fairscan.errors.FairscanError` is printed (file:line:col, help line, GitHub
    annotation) and exits 2, an interrupt exits 130/143, anything else is an internal error
    (exit 2, the traceback with ``--debug``). Both failures leave as :class:`CommandFailed`;
    an exit the body raises itself passes through untouched."""
    try:
        yield
    except typer.Exit:
        raise
    except FairscanError as error:
        print_error(error)
        raise CommandFailed(int(ExitCode.ERROR), internal=False) from None
    except KeyboardInterrupt:
        raise interrupted() from None
    except Exception as exc:  # internal error: a bug, reported as such
        raise CommandFailed(internal_error(exc, debug), internal=True) from None


# Signals received (SIGINT, SIGTERM), in order; the first one sets the exit code 128 + signum.
_SIGNALS: list[int] = []
_ANNOUNCED: list[bool] = []


def interrupted_code() -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal number, the shell convention)."""
    return interrupted_exit_code(_SIGNALS[0] if _SIGNALS else None)


def interrupted() -> typer.Exit:
    _ANNOUNCED.append(True)
    err.print("interrupted", markup=False)
    return typer.Exit(interrupted_code())


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


def deliver_sinks(report: AuditReport, formats: tuple[str, ...]) -> tuple[FairscanError, ...]:
    """The report formats that are not files (``github``): each one's text appended to the
    file its environment variable names ($GITHUB_STEP_SUMMARY), when that variable is set,
    under the run's one failure policy (:mod:`fairscan.run.delivery`): a failure is printed as
    an error and returned (the command exits 2), the other deliveries still happen."""
    from pathlib import Path

    from fairscan.report.formats import sink_formats
    from fairscan.run.delivery import SinkDelivery, deliver
    from fairscan.scans import render_hooks

    sinks = [
        SinkDelivery(fmt, Path(target), render_hooks())
        for fmt in sink_formats(formats)
        if (target := os.environ.get(fmt.sink or ""))
    ]
    errors = deliver(report, sinks).errors
    for error in errors:
        print_error(error)
    return errors


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
    for text, scans in seen.items():
        where = f" ({', '.join(scans)})" if scans else ""
        err.print(
            f"[yellow]warning[/]{escape(where)}: {escape(console_text(text))}", soft_wrap=True
        )


def print_summary(
    report: AuditReport, written: list[str], formats: tuple[str, ...], quiet: bool
) -> tuple[FairscanError, ...]:
    """The console summary of one audit (``audit run`` per spec, ``audit scan``): the table
    and the significant findings (unless ``quiet``), scan errors, the verdict line. The sinks
    (``github``) are delivered on the way; their errors are returned (printed already)."""
    from fairscan.cli.console import findings_text, summary_lines, summary_table, verdict_text

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
    sink_errors = deliver_sinks(report, formats)
    err.print(verdict_text(report, written), soft_wrap=True)
    if report.baseline is not None:
        b = report.baseline
        counts = ", ".join(f"{n} {label}" for label, n in b.counts.items())
        err.print(
            f"baseline {console_text(str(b.baseline_path))}: {counts}; "
            f"{gate_line(b.fail_on, report.verdict.exit_code)}",
            markup=False,
            soft_wrap=True,
        )
    if report.monitor is not None:  # alarms always; every monitored subgroup unless quiet
        from fairscan.cli.console import monitor_text

        for line in monitor_text(report.monitor, quiet=quiet):
            err.print(line, markup=False, soft_wrap=True)
    return sink_errors
