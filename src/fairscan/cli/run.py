"""``audit run`` and ``audit validate``: the commands that take spec files."""

from __future__ import annotations

import glob
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from fairscan.cli.common import (
    CommandFailed,
    DebugOption,
    ExitZeroOption,
    ProgressOption,
    app,
    cli_errors,
    err,
    interrupted,
    make_progress,
    print_error,
    print_summary,
)
from fairscan.cli.github import annotate_report
from fairscan.errors import UsageError
from fairscan.report.formats import FORMATS, format_list
from fairscan.report.sink_escape import console_text
from fairscan.report.verdict import ExitCode, process_exit_code
from fairscan.spec.constraints import REPLICATES, SEED, WORKERS

if TYPE_CHECKING:
    from fairscan.run.options import AuditOutcome


def _stat_ok(path: Path, test: str) -> bool:
    """``path.is_dir()`` / ``path.exists()``, False for a name too long, a symlink loop or a
    NUL byte (the spec loader then says what is wrong with the path)."""
    try:
        return bool(getattr(path, test)())
    except (OSError, ValueError):
        return False


def expand_specs(paths: list[Path]) -> list[Path]:
    specs: list[Path] = []
    for path in paths:
        if _stat_ok(path, "is_dir"):
            found = sorted([*path.rglob("*.audit.yaml"), *path.rglob("*.audit.yml")])
            if not found:
                raise UsageError(
                    f"no *.audit.yaml files in directory {str(path)!r}",
                    hint="pass spec files, or a directory containing *.audit.yaml specs",
                )
            specs.extend(found)
        elif not _stat_ok(path, "exists") and glob.has_magic(str(path)):
            # a quoted glob (CI YAML, Windows shells): expanded here, sorted
            found = sorted(Path(p) for p in glob.glob(str(path), recursive=True))
            if not found:
                raise UsageError(
                    f"no files match {str(path)!r}",
                    hint="check the pattern, e.g. 'audits/**/*.audit.yaml'",
                )
            specs.extend(found)
        else:
            specs.append(path)
    return specs


def check_overrides(
    *,
    out_dir: str | None = None,
    replicates: int | None = None,
    workers: int | None = None,
    executor: str | None = None,
) -> None:
    """Usage errors for override values the spec would reject or that mean nothing: an empty
    ``FAIRSCAN_*`` variable (click would silently ignore it), ``--out ''``, replicates or
    workers beyond the spec's limits, and an executor that is neither local nor dask://HOST:PORT."""
    import os

    from fairscan.spec.models import SignificanceSpec

    for name, (_, flag, env) in OVERRIDES.items():
        value = os.environ.get(env)
        if value is not None and not value.strip():
            what = "local or dask://HOST:PORT" if name == "executor" else "a whole number"
            raise UsageError(
                "the environment variable is set but empty",
                hint=f"unset it (`unset {env}`) or give {what}, as for {flag}",
                field=env,
            )
    if out_dir is not None and not out_dir.strip():
        raise UsageError(
            "must not be empty", hint="give a report directory, e.g. --out reports", field="--out"
        )
    if out_dir is not None and "\0" in out_dir:
        raise UsageError("contains a NUL byte", hint="give a report directory path", field="--out")

    def named(name: str, value: int | str) -> str:
        _, flag, env = OVERRIDES[name]
        return env if os.environ.get(env, "").strip() == str(value) else flag

    if replicates is not None and (why := REPLICATES.violation(replicates)):
        raise UsageError(
            why,
            hint="999 replicates resolve p-values to 0.001; 0 skips the test (UNTESTED)",
            field=named("replicates", replicates),
        )
    if workers is not None and (why := WORKERS.violation(workers)):
        raise UsageError(
            why,
            hint="omit --workers to use one worker per CPU",
            field=named("workers", workers),
        )
    if executor is not None:
        from pydantic import ValidationError

        try:
            SignificanceSpec(executor=executor)
        except ValidationError as exc:
            _, flag, env = OVERRIDES["executor"]
            issue = exc.errors()[0]
            raise UsageError(
                issue["msg"],
                hint=(issue.get("ctx") or {}).get("spec_hint"),
                field=env if os.environ.get(env) == executor else flag,
            ) from None


# Overrides of the spec; precedence: flag > FAIRSCAN_* environment variable > [tool.fairscan]
# in pyproject.toml (cli/config.py) > spec > defaults.
SeedOption = Annotated[
    int | None,
    typer.Option(
        help="Seed (overrides significance.seed).", min=SEED.minimum, envvar="FAIRSCAN_SEED"
    ),
]
ReplicatesOption = Annotated[
    int | None,
    typer.Option(
        help="Null replicates (overrides significance.replicates; 0 = no test).",
        min=REPLICATES.minimum,
        envvar="FAIRSCAN_REPLICATES",
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        help="Worker processes for null replicates.",
        min=WORKERS.minimum,
        envvar="FAIRSCAN_WORKERS",
    ),
]
ExecutorOption = Annotated[
    str | None,
    typer.Option(
        help="Where null replicates run: local (default) or dask://HOST:PORT, a Dask scheduler "
        "(overrides significance.executor; needs fairscan[dask]; results do not depend on it). "
        "SubROC, certify, flag and shift scans always run here.",
        envvar="FAIRSCAN_EXECUTOR",
    ),
]
OVERRIDES = {
    "seed": ("significance.seed", "--seed", "FAIRSCAN_SEED"),
    "replicates": ("significance.replicates", "--replicates", "FAIRSCAN_REPLICATES"),
    "workers": ("significance.workers", "--workers", "FAIRSCAN_WORKERS"),
    "executor": ("significance.executor", "--executor", "FAIRSCAN_EXECUTOR"),
}


def _override_sources(ctx: typer.Context, values: dict[str, int | str | None]) -> list[str]:
    """``significance.seed = 5  (from --seed)`` for each override given by a flag or env."""
    from fairscan.cli.config import outside_settings

    fields = {key: field for key, (field, _, _) in OVERRIDES.items()}
    return [
        f"{fields[o.key]} = {o.value}  (from {o.source})" for o in outside_settings(ctx, values)
    ]


def print_settings(overrides: tuple[Any, ...]) -> None:
    """``setting replicates = 1 from /x/pyproject.toml [tool.fairscan]`` (or ``from
    FAIRSCAN_REPLICATES``, ``from --replicates``) on stderr for each setting of the run or the
    gate that the spec does not hold, as the report's provenance.overrides records it: none is
    applied silently, and a CI log shows where each one came from."""
    from fairscan.report.sink_escape import console_text

    for override in overrides:
        err.print(f"setting {console_text(override.text())}", markup=False, soft_wrap=True)


def _untested_warnings(loaded: Any, options: Any, sources: list[str]) -> list[str]:
    """``audit validate``'s word on scans that cannot reach alpha (issue 34), located at
    significance.replicates in the spec, or naming the override that set it."""
    from fairscan.api import apply_overrides
    from fairscan.run.specs import untested_issues

    warnings = []
    for issue in untested_issues(apply_overrides(loaded.spec, options)):
        origin = next((s for s in sources if s.startswith("significance.replicates ")), None)
        if origin is not None:
            issue = replace(issue, field=origin.replace("  ", " "))
        else:
            field = issue.field or ""
            issue = issue.located(loaded.file_of(field), *loaded.locate_field(field))
        warnings.append(issue.render())
    return warnings


def _resolved_yaml(loaded: Any, spec: Any, sources: list[str]) -> str:
    import yaml

    header = [f"# resolved spec of {' <- '.join(loaded.chain or (str(loaded.path),))}"]
    header += [f"# {line}" for line in sources]
    header.append(
        "# precedence: flag > FAIRSCAN_* env > [tool.fairscan] in pyproject.toml > spec "
        "(child over parent) > defaults"
    )
    from fairscan.redact import shown_spec

    body = shown_spec(spec.model_dump(mode="json", exclude={"extends", "defaults"}))
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(header) + "\n" + text


@app.command()
def run(
    ctx: typer.Context,
    specs: Annotated[
        list[Path], typer.Argument(help="Spec files (*.audit.yaml) or directories of them.")
    ],
    out_dir: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Report directory (overrides output.dir); - writes the one report to stdout "
            "(logs and progress stay on stderr).",
        ),
    ] = None,
    formats: FormatOption = None,
    seed: SeedOption = None,
    replicates: ReplicatesOption = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = None,
    exit_zero: ExitZeroOption = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only the verdict line per spec.")
    ] = False,
    progress: ProgressOption = True,
    debug: DebugOption = False,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Previous JSON report: label findings new/persisting/resolved/changed "
            "(gate.fail_on: new_significant fails only on new ones).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Also say where the data came from and how long each phase took (stderr).",
        ),
    ] = False,
    job_summary: Annotated[
        bool,
        typer.Option(
            "--job-summary",
            help="Append the Markdown report to $GITHUB_STEP_SUMMARY when it is set, as the "
            "github format does, whatever the formats (the GitHub Action's summary input).",
        ),
    ] = False,
) -> None:
    """Run the audits in SPECS, write their reports and exit 0/1/2."""
    from fairscan.api import RunOptions
    from fairscan.cli.verbose import run_audit_verbosely

    worst = int(ExitCode.OK)
    to_stdout = out_dir == STDOUT
    with cli_errors(debug):
        check_overrides(out_dir=out_dir, replicates=replicates, workers=workers, executor=executor)
        chosen = check_formats(formats, to_stdout)
        spec_paths = expand_specs(specs)
        if to_stdout and len(spec_paths) > 1:
            raise UsageError(
                f"--out - writes one report to stdout, but {len(spec_paths)} specs are given",
                field="--out",
                hint="run one spec per command, or give --out DIR for several",
            )
    from fairscan.cli.config import outside_settings

    given = {"seed": seed, "replicates": replicates, "workers": workers, "executor": executor}
    overrides = outside_settings(ctx, {**given, "exit_zero": exit_zero, "baseline": baseline})
    print_settings(overrides)
    observer = make_progress(progress and not quiet)
    options = RunOptions(
        overrides=overrides,
        out_dir=Path(out_dir) if out_dir is not None and not to_stdout else None,
        seed=seed,
        replicates=replicates,
        workers=workers,
        executor=executor,
        progress=observer,
        baseline=baseline,
        debug=debug,
        write=not to_stdout,
        formats=chosen,
    )
    github = GithubOutputs()
    # one row per spec for the closing summary of a multi-spec run: (spec, verdict, findings, code)
    rows: list[tuple[str, str, str, int]] = []
    try:
        for spec_path in spec_paths:
            try:
                with cli_errors(debug):
                    outcome = run_audit_verbosely(spec_path, options, verbose)
            except CommandFailed as failed:  # printed: the next spec runs
                github.failed()
                worst = max(worst, failed.exit_code)
                status = "internal error" if failed.internal else "error"
                rows.append((str(spec_path), status, "-", int(ExitCode.ERROR)))
                continue
            # sinks (github: the job summary) are delivered unless the report went to stdout
            sinks = () if to_stdout else outcome.formats
            if job_summary and "github" not in sinks:
                sinks = (*sinks, "github")
            code = _show_outcome(
                outcome,
                spec_path,
                chosen[0] if to_stdout and chosen else None,
                sinks,
                github,
                quiet=quiet,
                exit_zero=exit_zero,
            )
            worst = max(worst, code)
            verdict = outcome.report.verdict
            rows.append((str(spec_path), verdict.status, str(verdict.significant_findings), code))
    except KeyboardInterrupt:
        raise interrupted() from None
    github.write(worst)
    if len(spec_paths) > 1:
        _print_specs(rows, worst)
    raise typer.Exit(worst)


def _show_outcome(
    outcome: AuditOutcome,
    spec_path: Path,
    stdout_format: str | None,
    sinks: tuple[str, ...],
    github: GithubOutputs,
    *,
    quiet: bool,
    exit_zero: bool,
) -> int:
    """One spec's run shown: the report on stdout (``stdout_format``: ``--out -``), the console
    summary with the ``sinks`` delivered, MLflow's line or
    error, the GitHub annotations and outputs; its exit code."""
    report = outcome.report
    written = [str(p) for p in outcome.written]
    if stdout_format is not None:
        write_stdout(report, stdout_format)
        written = ["stdout"]
    sink_errors = print_summary(report, written, sinks, quiet)
    _print_delivery(outcome, quiet)
    annotate_report(report, scan_places(spec_path, report))
    github.add(report, written if stdout_format is None else [])
    code = int(process_exit_code(outcome.exit_code, exit_zero))
    if sink_errors:  # a delivery failed: exit 2 (run/delivery.py)
        code = max(code, int(ExitCode.ERROR))
    return code


def _print_specs(rows: list[tuple[str, str, str, int]], worst: int) -> None:
    """The closing summary of a multi-spec run: a table on a terminal, plain lines in logs."""
    if err.is_terminal:
        err.print(_specs_table(rows, worst), markup=False)
        return
    err.print("fairscan: all specs", markup=False)  # logs: plain lines, never folded
    for spec, verdict, significant, code in rows:
        err.print(
            f"spec {console_text(spec)}: {verdict}, {significant} significant, exit {code}",
            markup=False,
            soft_wrap=True,
        )
    err.print(f"worst exit code: {worst}", markup=False)


STDOUT = "-"  # --out -: the report goes to stdout


def format_names(incomplete: str) -> list[str]:
    """Shell completion of --format: the registered formats."""
    return [name for name in FORMATS if name.startswith(incomplete)]


FormatOption = Annotated[
    list[str] | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help=f"Report format (overrides output.formats): {format_list()}; repeat for more. "
        "With --out - one format (default json).",
        autocompletion=format_names,
    ),
]


def check_formats(formats: list[str] | None, to_stdout: bool) -> tuple[str, ...] | None:
    """The formats ``--format`` chose (None: the spec's); a :class:`UsageError` for an unknown
    one, or for several when the report goes to stdout (default there: json)."""
    import difflib

    chosen = tuple(dict.fromkeys(formats or ()))
    for name in chosen:
        if name not in FORMATS:
            close = difflib.get_close_matches(name, list(FORMATS), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(
                f"unknown report format {name!r}",
                field="--format",
                hint=f"{hint}the formats are: {', '.join(FORMATS)}",
            )
    if to_stdout and len(chosen) > 1:
        raise UsageError(
            f"--out - writes one report to stdout, but {len(chosen)} formats are given",
            field="--format",
            hint="give one --format with --out -, or --out DIR for several",
        )
    if to_stdout and not chosen:
        return ("json",)
    return chosen or None


def write_stdout(report: Any, fmt: str) -> None:
    """The report in one format on stdout, nothing else (logs and progress go to stderr)."""
    from fairscan.report.formats import render
    from fairscan.scans import render_hooks

    sys.stdout.write(render(report, fmt, render_hooks()))
    sys.stdout.flush()


def scan_places(spec_path: Path, report: Any) -> list[Any]:
    """Where each scan is written in its spec (file, line, col), for GitHub annotations; only
    looked up when running in GitHub Actions."""
    from fairscan.cli.github import in_github_actions

    if not in_github_actions():
        return []
    from fairscan.spec.places import scan_places as places_in_spec

    return places_in_spec(spec_path)[: len(report.scans)]


class GithubOutputs:
    """The step outputs of a run over several specs: summed, written once at the end."""

    def __init__(self) -> None:
        self.significant = 0
        self.paths: list[str] = []
        # each spec's (code before --exit-zero, verdict word)
        self.verdicts: list[tuple[int, str]] = []

    def add(self, report: Any, written: list[str]) -> None:
        from fairscan.report.verdict import verdict_word

        self.significant += report.verdict.significant_findings
        self.paths += written
        self.verdicts.append((report.verdict.exit_code, verdict_word(report.verdict)))

    def failed(self) -> None:
        from fairscan.report.verdict import ERROR

        self.verdicts.append((int(ExitCode.ERROR), ERROR))

    def write(self, exit_code: int) -> None:
        """``verdict`` is the worst spec's (before ``--exit-zero``); ``exit-code`` the
        process's."""
        from fairscan.cli.github import write_step_outputs
        from fairscan.report.verdict import worst_verdict_word

        verdict = worst_verdict_word(self.verdicts)
        problem = write_step_outputs(self.significant, verdict, exit_code, self.paths)
        if problem is not None:
            err.print(f"[yellow]warning[/]: {escape(console_text(problem))}", soft_wrap=True)


def _specs_table(rows: list[tuple[str, str, str, int]], worst: int) -> Any:
    """Closing summary of a multi-spec run: one row per spec, the worst exit code last."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="fairscan: all specs", title_justify="left")
    for name, justify in (
        ("spec", "left"),
        ("verdict", "left"),
        ("significant", "right"),
        ("exit", "right"),
    ):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for spec, verdict, significant, code in rows:
        table.add_row(Text(console_text(spec)), Text(verdict), Text(significant), Text(str(code)))
    table.add_row(Text("worst"), Text(""), Text(""), Text(str(worst)), style="bold")
    return table


@app.command()
def validate(
    ctx: typer.Context,
    specs: Annotated[
        list[Path], typer.Argument(help="Spec files (*.audit.yaml) or directories of them.")
    ],
    no_data: Annotated[
        bool, typer.Option("--no-data", help="Check the spec only, not its data.")
    ] = False,
    debug: DebugOption = False,
    show_resolved: Annotated[
        bool,
        typer.Option(
            "--show-resolved",
            help="Print the resolved spec (extends, defaults and overrides applied) as YAML.",
        ),
    ] = False,
    seed: SeedOption = None,
    replicates: ReplicatesOption = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = None,
) -> None:
    """Check specs (and their data) without scanning. Exit 0 if valid, 2 if not."""
    from fairscan.api import RunOptions, apply_overrides, check_spec, load_spec, prepare_audit
    from fairscan.errors import SpecError

    worst = 0
    with cli_errors(debug):
        check_overrides(replicates=replicates, workers=workers, executor=executor)
        spec_paths = expand_specs(specs)
    options = RunOptions(seed=seed, replicates=replicates, workers=workers, executor=executor)
    from fairscan.cli.config import outside_settings

    given = {"seed": seed, "replicates": replicates, "workers": workers, "executor": executor}
    print_settings(outside_settings(ctx, given))
    sources = _override_sources(ctx, given)
    for spec_path in spec_paths:
        try:
            with cli_errors(debug):
                if no_data:
                    loaded = load_spec(spec_path)
                    issues = check_spec(loaded.spec)
                    if issues:
                        raise SpecError(
                            issues=[
                                i.located(
                                    loaded.file_of(i.field or ""),
                                    *loaded.locate_field(i.field or ""),
                                )
                                for i in issues
                            ]
                        )
                    shown = escape(console_text(str(spec_path)))
                    err.print(f"[green]ok[/] {shown} (spec only)", soft_wrap=True)
                else:
                    prepared = prepare_audit(spec_path)
                    data = prepared.data
                    err.print(
                        f"[green]ok[/] {escape(console_text(str(spec_path)))}: "
                        f"{len(prepared.spec.scans)} scan(s), "
                        f"{data.n_data_rows} rows after filter, "
                        f"{len(data.attributes)} attributes",
                        soft_wrap=True,
                    )
                    for warning in data.warnings:
                        err.print(
                            f"[yellow]warning[/]: {escape(console_text(warning))}", soft_wrap=True
                        )
                    loaded = prepared.loaded
                for warning in _untested_warnings(loaded, options, sources):
                    err.print(f"[yellow]warning[/]: {escape(warning)}", soft_wrap=True)
                if show_resolved:
                    resolved = apply_overrides(loaded.spec, options)
                    sys.stdout.write(_resolved_yaml(loaded, resolved, sources))
        except CommandFailed as failed:  # printed: the next spec is checked
            worst = failed.exit_code
    raise typer.Exit(worst)


def _print_delivery(outcome: AuditOutcome, quiet: bool) -> None:
    """Where ``output.mlflow`` logged the run, or why it could not (after the reports were
    written: they are kept, and the run exits 2)."""
    logged = outcome.mlflow_run
    if logged is not None and not quiet:
        err.print(
            console_text(
                f"MLflow: run {logged.run_id} (experiment {logged.experiment_id}) at "
                f"{logged.tracking_uri}"
            ),
            markup=False,
            soft_wrap=True,
        )
    for error in outcome.delivery_errors:
        print_error(error)
