"""The ``audit`` command line: a thin adapter over :mod:`fairscan.api`.

This is the only module that reads the environment, prints, or exits. Results go to files
(and a summary to stderr); logs and progress go to stderr; progress only on a TTY.

Exit codes: 0 no significant finding, 1 significant finding, 2 spec/data/usage/internal
error (the worst code wins across specs), 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fairscan import __version__
from fairscan.errors import ExitCode, FairscanError, UsageError

app = typer.Typer(
    name="audit",
    help="fairscan: audit classifiers for intersectional bias with statistical guarantees.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    epilog="Exit codes: 0 = no significant finding, 1 = significant finding, 2 = error, 130 = interrupted.",
)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


class RichProgress:
    """Progress observer drawing a transient rich bar on stderr."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: int | None = None

    def start(self, task: str, total: int | None) -> None:
        self._progress.start()
        self._task = self._progress.add_task(task, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)  # type: ignore[arg-type]

    def done(self) -> None:
        self._progress.stop()
        self._task = None


def _show_progress(enabled: bool) -> bool:
    return enabled and err.is_terminal and not os.environ.get("CI")


def _print_error(error: FairscanError) -> None:
    label = {"spec": "spec error", "data": "data error", "usage": "usage error"}.get(error.kind, "error")
    for issue in error.issues:
        err.print(f"[bold red]{label}[/]: ", end="")
        err.print(issue.render(), markup=False)


def _internal_error(exc: BaseException, debug: bool) -> int:
    err.print(
        f"[bold red]internal error[/]: {type(exc).__name__}: {exc}\n"
        "This is a bug in fairscan; please report it with the command you ran. "
        "Re-run with --debug for the traceback.",
        markup=True,
    )
    if debug:
        err.print("".join(traceback.format_exception(exc)), markup=False)
    return int(ExitCode.ERROR)


def _expand_specs(paths: list[Path]) -> list[Path]:
    specs: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted([*path.rglob("*.audit.yaml"), *path.rglob("*.audit.yml")])
            if not found:
                raise UsageError(
                    f"no *.audit.yaml files in directory {str(path)!r}",
                    hint="pass spec files, or a directory containing *.audit.yaml specs",
                )
            specs.extend(found)
        else:
            specs.append(path)
    return specs


def _version_callback(value: bool) -> None:
    if value:
        out.print(f"fairscan {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """fairscan: audit classifiers for intersectional bias with statistical guarantees."""


@app.command()
def run(
    specs: Annotated[list[Path], typer.Argument(help="Spec files (*.audit.yaml) or directories of them.")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory (overrides output.dir).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (overrides significance.seed).", min=0)] = None,
    replicates: Annotated[
        int | None, typer.Option(help="Null replicates (overrides significance.replicates; 0 = no test).", min=0)
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Worker processes for null replicates.", min=1, envvar="FAIRSCAN_WORKERS"),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even with significant findings (errors still exit 2).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict line per spec.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on a terminal.")] = True,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
) -> None:
    """Run the audits in SPECS, write their reports and exit 0/1/2."""
    from fairscan.api import RunOptions, run_audit
    from fairscan.progress import NullProgress
    from fairscan.report.console import findings_text, summary_table, verdict_text

    worst = int(ExitCode.OK)
    try:
        spec_paths = _expand_specs(specs)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    observer = RichProgress(err) if _show_progress(progress and not quiet) else NullProgress()
    options = RunOptions(out_dir=out_dir, seed=seed, replicates=replicates, workers=workers, progress=observer)
    for spec_path in spec_paths:
        try:
            outcome = run_audit(spec_path, options)
        except FairscanError as error:
            _print_error(error)
            worst = max(worst, int(ExitCode.ERROR))
            continue
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except Exception as exc:  # internal error: a bug, reported as such
            worst = max(worst, _internal_error(exc, debug))
            continue
        report = outcome.report
        written = [str(p) for p in outcome.written]
        if not quiet:
            err.print(summary_table(report))
            for line in findings_text(report):
                err.print(line)
        err.print(verdict_text(report, written))
        code = int(outcome.exit_code)
        if exit_zero and code == int(ExitCode.FINDINGS):
            code = int(ExitCode.OK)
        worst = max(worst, code)
    raise typer.Exit(worst)


@app.command()
def validate(
    specs: Annotated[list[Path], typer.Argument(help="Spec files (*.audit.yaml) or directories of them.")],
    no_data: Annotated[bool, typer.Option("--no-data", help="Check the spec only, not its data.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
) -> None:
    """Check specs (and their data) without scanning. Exit 0 if valid, 2 if not."""
    from fairscan.api import check_roles, prepare_audit
    from fairscan.errors import SpecError
    from fairscan.spec.load import load_spec

    worst = 0
    try:
        spec_paths = _expand_specs(specs)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    for spec_path in spec_paths:
        try:
            if no_data:
                loaded = load_spec(spec_path)
                issues = check_roles(loaded.spec)
                if issues:
                    raise SpecError(issues=[i.located(str(spec_path), *loaded.locate_field(i.field or "")) for i in issues])
                err.print(f"[green]ok[/] {spec_path} (spec only)")
            else:
                prepared = prepare_audit(spec_path)
                data = prepared.data
                err.print(
                    f"[green]ok[/] {spec_path}: {len(prepared.spec.scans)} scan(s), "
                    f"{data.n_rows} rows after filter, "  # type: ignore[attr-defined]
                    f"{len(data.attributes)} attributes"  # type: ignore[attr-defined]
                )
                for warning in data.warnings:  # type: ignore[attr-defined]
                    err.print(f"[yellow]warning[/]: {warning}", markup=True)
        except FairscanError as error:
            _print_error(error)
            worst = int(ExitCode.ERROR)
        except Exception as exc:
            worst = _internal_error(exc, debug)
    raise typer.Exit(worst)


@app.command()
def schema(
    report: Annotated[bool, typer.Option("--report", help="Print the report schema instead of the spec schema.")] = False,
) -> None:
    """Print the JSON Schema of the audit spec (or of the JSON report)."""
    from fairscan.spec.schema import render_schema, report_json_schema, spec_json_schema

    sys.stdout.write(render_schema(report_json_schema() if report else spec_json_schema()))


@app.command()
def init(
    data: Annotated[Path, typer.Argument(help="Data file to base the starter spec on.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Spec file to write (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec file.")] = False,
) -> None:
    """Write a starter *.audit.yaml for DATA, guessing roles from its columns."""
    from fairscan.starter import starter_spec

    try:
        if output is not None and output.exists() and not force:
            raise UsageError(f"{output} exists", hint="pass --force to overwrite it")
        spec_dir = output.parent if output is not None else Path.cwd()
        text = starter_spec(data, spec_dir=spec_dir)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    if output is None:
        sys.stdout.write(text)
        return
    from fairscan.report.write import atomic_write_text

    atomic_write_text(output, text)
    err.print(f"wrote {output}; next: audit validate {output} && audit run {output}")


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))


if __name__ == "__main__":
    main()
