"""The ``audit`` command line: a thin adapter over :mod:`fairscan.api`.

This is the only module that reads the environment, prints, or exits. Results go to files
(and a summary to stderr); logs and progress go to stderr; progress only on a TTY.

Exit codes: 0 no significant finding, 1 significant finding, 2 spec/data/usage/internal
error (the worst code wins across specs), 130 interrupted.
"""

from __future__ import annotations

import glob
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

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
    """Progress observer drawing a transient rich bar on stderr (one bar per task)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress: Any = None
        self._task: Any = None

    def start(self, task: str, total: int | None) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
        from rich.text import Text

        self.done()
        # a fresh Progress per task: transient bars vanish when their task is done
        self._progress = Progress(
            "{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
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


def _show_progress(enabled: bool) -> bool:
    return enabled and err.is_terminal and not os.environ.get("CI")


def _print_error(error: FairscanError) -> None:
    # soft_wrap: never hard-wrap a message at the console width, so that `file:line:col: ...`
    # stays on one line in CI logs and editors (the console is 80 columns when not a TTY).
    label = {"spec": "spec error", "data": "data error", "usage": "usage error"}.get(
        error.kind, "error"
    )
    for issue in error.issues:
        err.print(f"[bold red]{label}[/]: {escape(issue.render())}", soft_wrap=True)


def _internal_error(exc: BaseException, debug: bool) -> int:
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


def _interrupted() -> typer.Exit:
    err.print("interrupted", markup=False)
    return typer.Exit(int(ExitCode.INTERRUPTED))


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
        elif not path.exists() and glob.has_magic(str(path)):
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


def _append_step_summary(report: Any) -> None:
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


# Overrides of the spec; precedence: flag > FAIRSCAN_* environment variable > spec > defaults.
SeedOption = Annotated[
    int | None,
    typer.Option(help="Seed (overrides significance.seed).", min=0, envvar="FAIRSCAN_SEED"),
]
ReplicatesOption = Annotated[
    int | None,
    typer.Option(
        help="Null replicates (overrides significance.replicates; 0 = no test).",
        min=0,
        envvar="FAIRSCAN_REPLICATES",
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(help="Worker processes for null replicates.", min=1, envvar="FAIRSCAN_WORKERS"),
]
OVERRIDES = {
    "seed": ("significance.seed", "--seed", "FAIRSCAN_SEED"),
    "replicates": ("significance.replicates", "--replicates", "FAIRSCAN_REPLICATES"),
    "workers": ("significance.workers", "--workers", "FAIRSCAN_WORKERS"),
}


def _override_sources(ctx: typer.Context, values: dict[str, int | None]) -> list[str]:
    """``significance.seed = 5  (from --seed)`` for each override given by a flag or env."""
    lines = []
    for name, value in values.items():
        if value is None:
            continue
        field, flag, env = OVERRIDES[name]
        source = ctx.get_parameter_source(name)
        origin = env if getattr(source, "name", "") == "ENVIRONMENT" else flag
        lines.append(f"{field} = {value}  (from {origin})")
    return lines


def _resolved_yaml(loaded: Any, spec: Any, sources: list[str]) -> str:
    import yaml

    header = [f"# resolved spec of {' <- '.join(loaded.chain or (str(loaded.path),))}"]
    header += [f"# {line}" for line in sources]
    header.append("# precedence: flag > FAIRSCAN_* env > spec (child over parent) > defaults")
    body = spec.model_dump(mode="json", exclude={"extends", "defaults"})
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return "\n".join(header) + "\n" + text


@app.command()
def run(
    specs: Annotated[
        list[Path], typer.Argument(help="Spec files (*.audit.yaml) or directories of them.")
    ],
    out_dir: Annotated[
        Path | None, typer.Option("--out", "-o", help="Report directory (overrides output.dir).")
    ] = None,
    seed: SeedOption = None,
    replicates: ReplicatesOption = None,
    workers: WorkersOption = None,
    exit_zero: Annotated[
        bool,
        typer.Option(
            "--exit-zero", help="Exit 0 even with significant findings (errors still exit 2)."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only the verdict line per spec.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bar on a terminal.")
    ] = True,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of internal errors.")
    ] = False,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Previous JSON report: label findings new/persisting/resolved/changed "
            "(gate.fail_on: new_significant fails only on new ones).",
        ),
    ] = None,
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
    options = RunOptions(
        out_dir=out_dir,
        seed=seed,
        replicates=replicates,
        workers=workers,
        progress=observer,
        baseline=baseline,
        debug=debug,
    )
    # one row per spec for the closing summary of a multi-spec run: (spec, verdict, findings, code)
    rows: list[tuple[str, str, str, int]] = []
    try:
        for spec_path in spec_paths:
            try:
                outcome = run_audit(spec_path, options)
            except FairscanError as error:
                _print_error(error)
                worst = max(worst, int(ExitCode.ERROR))
                rows.append((str(spec_path), "error", "-", int(ExitCode.ERROR)))
                continue
            except Exception as exc:  # internal error: a bug, reported as such
                worst = max(worst, _internal_error(exc, debug))
                rows.append((str(spec_path), "internal error", "-", int(ExitCode.ERROR)))
                continue
            report = outcome.report
            written = [str(p) for p in outcome.written]
            if not quiet:
                # markup=False reaches the table cells: data values such as "[/x]" are shown
                # verbatim instead of being parsed as rich markup (a MarkupError crash).
                err.print(summary_table(report), markup=False)
                for line in findings_text(report):
                    err.print(line)
            for scan in report.scans:
                if scan.error:  # the other scans' results are kept; say why this one failed
                    err.print(f"scan error: {scan.id}: {scan.error}", markup=False, soft_wrap=True)
            if "github" in outcome.formats:
                _append_step_summary(report)
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
            code = int(outcome.exit_code)
            if exit_zero and code == int(ExitCode.FINDINGS):
                code = int(ExitCode.OK)
            worst = max(worst, code)
            rows.append(
                (
                    str(spec_path),
                    report.verdict.status,
                    str(report.verdict.significant_findings),
                    code,
                )
            )
    except KeyboardInterrupt:
        raise _interrupted() from None
    if len(spec_paths) > 1:
        err.print(_specs_table(rows, worst), markup=False)
    raise typer.Exit(worst)


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
        table.add_row(Text(spec), Text(verdict), Text(significant), Text(str(code)))
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
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of internal errors.")
    ] = False,
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
) -> None:
    """Check specs (and their data) without scanning. Exit 0 if valid, 2 if not."""
    from fairscan.api import RunOptions, apply_overrides, check_spec, load_spec, prepare_audit
    from fairscan.errors import SpecError

    worst = 0
    try:
        spec_paths = _expand_specs(specs)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    options = RunOptions(seed=seed, replicates=replicates, workers=workers)
    sources = _override_sources(ctx, {"seed": seed, "replicates": replicates, "workers": workers})
    for spec_path in spec_paths:
        try:
            if no_data:
                loaded = load_spec(spec_path)
                issues = check_spec(loaded.spec)
                if issues:
                    raise SpecError(
                        issues=[
                            i.located(
                                loaded.file_of(i.field or ""), *loaded.locate_field(i.field or "")
                            )
                            for i in issues
                        ]
                    )
                err.print(f"[green]ok[/] {escape(str(spec_path))} (spec only)", soft_wrap=True)
            else:
                prepared = prepare_audit(spec_path)
                data = prepared.data
                err.print(
                    f"[green]ok[/] {escape(str(spec_path))}: {len(prepared.spec.scans)} scan(s), "
                    f"{data.n_rows} rows after filter, "
                    f"{len(data.attributes)} attributes",
                    soft_wrap=True,
                )
                for warning in data.warnings:
                    err.print(f"[yellow]warning[/]: {escape(warning)}", soft_wrap=True)
                loaded = prepared.loaded
            if show_resolved:
                resolved = apply_overrides(loaded.spec, options)
                sys.stdout.write(_resolved_yaml(loaded, resolved, sources))
        except FairscanError as error:
            _print_error(error)
            worst = int(ExitCode.ERROR)
        except KeyboardInterrupt:
            raise _interrupted() from None
        except Exception as exc:
            worst = _internal_error(exc, debug)
    raise typer.Exit(worst)


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    new: Annotated[Path, typer.Argument(help="The current JSON report.")],
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of internal errors.")
    ] = False,
) -> None:
    """Compare two JSON reports: print what changed (Markdown) and exit 1 on new significant
    findings, else 0."""
    from fairscan.api import diff_reports
    from fairscan.report.baseline import render_diff

    try:
        current, comparison = diff_reports(old, new)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    except KeyboardInterrupt:
        raise _interrupted() from None
    except Exception as exc:
        raise typer.Exit(_internal_error(exc, debug)) from None
    sys.stdout.write(render_diff(comparison, current))
    code = ExitCode.FINDINGS if comparison.new_significant else ExitCode.OK
    raise typer.Exit(int(code))


@app.command()
def explain(
    scan_type: Annotated[str, typer.Argument(help="A scan type, e.g. fpr_scan.")],
) -> None:
    """Explain a scan type: what it tests, its null hypothesis, parameters and how to read it."""
    from fairscan.explain import explain as explain_text
    from fairscan.scans import SCAN_TYPES

    if scan_type not in SCAN_TYPES:
        _print_error(
            UsageError(
                f"unknown scan type {scan_type!r}",
                hint=f"valid types: {', '.join(SCAN_TYPES)}",
            )
        )
        raise typer.Exit(int(ExitCode.ERROR))
    sys.stdout.write(explain_text(scan_type))


@app.command()
def schema(
    report: Annotated[
        bool, typer.Option("--report", help="Print the report schema instead of the spec schema.")
    ] = False,
) -> None:
    """Print the JSON Schema of the audit spec (or of the JSON report)."""
    from fairscan.schemas import render_schema, report_json_schema, spec_json_schema

    sys.stdout.write(render_schema(report_json_schema() if report else spec_json_schema()))


@app.command()
def init(
    data: Annotated[Path, typer.Argument(help="Data file to base the starter spec on.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Spec file to write (default: stdout).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing spec file.")
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of internal errors.")
    ] = False,
) -> None:
    """Write a starter *.audit.yaml for DATA, guessing roles from its columns."""
    from fairscan.report.write import atomic_write_text
    from fairscan.starter import starter_spec

    try:
        if output is not None and output.is_dir():
            raise UsageError(
                f"{output} is a directory",
                hint="give the spec file to write, e.g. -o audits/NAME.audit.yaml",
            )
        if output is not None and output.exists() and not force:
            raise UsageError(f"{output} exists", hint="pass --force to overwrite it")
        spec_dir = output.parent if output is not None else Path.cwd()
        text = starter_spec(data, spec_dir=spec_dir)
        if output is None:
            sys.stdout.write(text)
            return
        try:
            atomic_write_text(output, text)
        except OSError as exc:
            raise UsageError(
                f"cannot write {output}: {exc.strerror or exc}",
                hint="check that the folder of --output is writable",
            ) from exc
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    except KeyboardInterrupt:
        raise _interrupted() from None
    except Exception as exc:  # internal error: a bug, reported as such
        raise typer.Exit(_internal_error(exc, debug)) from None
    err.print(
        f"wrote {escape(str(output))}; next: audit validate {escape(str(output))} "
        f"&& audit run {escape(str(output))}",
        soft_wrap=True,
    )


@app.command("lambda")
def lambda_command(
    cfn_over_cfp: Annotated[
        float,
        typer.Option(
            "--cfn-over-cfp", help="Cost of a false negative relative to a false positive."
        ),
    ],
    answers: Annotated[
        list[str],
        typer.Option(
            "--answers", help="One elicitation answer z1,z2,z3 (percentages); repeat for more."
        ),
    ],
    side: Annotated[
        str, typer.Option(help="negatives (lambda_N, FPR) or positives (lambda_P, TPR).")
    ] = "negatives",
    more_answers: Annotated[
        list[str] | None,
        typer.Argument(
            help="Further answers z1,z2,z3 after --answers (e.g. --answers 40,60,55 20,30,27).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Elicit lambda for ijdi_scan from cost answers (IJDI paper, App. C).

    Each answer compares an unequal system with false positive rates z1 and z2 (z1 + z2 even)
    against an equal one: z3 is the equal rate at which you would rather have the unequal one.
    """
    from fairscan.engine.elicitation import ElicitationError, elicit_lambda

    try:
        if side not in ("negatives", "positives"):
            raise UsageError(f"--side must be negatives or positives, not {side!r}")
        parsed = []
        for text in [*answers, *(more_answers or [])]:
            parts = [x.strip() for x in text.split(",")]
            if len(parts) != 3 or not all(x.lstrip("-").isdigit() for x in parts):
                raise UsageError(
                    f"answer {text!r} is not three whole numbers z1,z2,z3",
                    hint="e.g. --answers 40,60,55",
                )
            parsed.append((int(parts[0]), int(parts[1]), int(parts[2])))
        estimate = elicit_lambda(cfn_over_cfp, parsed, side)
    except ElicitationError as error:
        _print_error(UsageError(str(error)))
        raise typer.Exit(int(ExitCode.ERROR)) from None
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    cost = "c_dFPR / c_FP" if side == "negatives" else "c_dTPR / c_FN"
    err.print(
        f"{cost} = {estimate.disparity_cost_ratio:.6g} from {len(parsed)} answer(s)", markup=False
    )
    sys.stdout.write(f"lambda: {estimate.lam:.6g}\n")


@app.command()
def power(
    spec: Annotated[Path, typer.Argument(help="Spec whose data, outcome and prediction to use.")],
    where: Annotated[
        list[str],
        typer.Option(
            "--where", help="Subgroup condition attribute=value[|value...]; repeat to intersect."
        ),
    ],
    alpha: Annotated[
        float | None,
        typer.Option(help="Significance level (default: the spec's alpha).", min=0.0, max=1.0),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of internal errors.")
    ] = False,
) -> None:
    """How strong a miscalibration in a subgroup must be for the Bias Scan to detect it.

    Reports the analytic critical value h(alpha) and Delta_thresh (methods.md §2.5): the factor by
    which the predicted odds in the subgroup must be inflated for its score to exceed h(alpha).
    """
    from fairscan.api import power_analysis

    try:
        subgroup: dict[str, list[str]] = {}
        for cond in where:
            name, sep, values = cond.partition("=")
            if not sep or not name.strip() or not values.strip():
                raise UsageError(f"--where {cond!r} is not attribute=value[|value...]")
            subgroup.setdefault(name.strip(), []).extend(v.strip() for v in values.split("|"))
        result = power_analysis(spec, subgroup, alpha)
    except FairscanError as error:
        _print_error(error)
        raise typer.Exit(int(ExitCode.ERROR)) from None
    except KeyboardInterrupt:
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except Exception as exc:
        raise typer.Exit(_internal_error(exc, debug)) from None
    from fairscan.report.text import describe_subgroup

    d = result.detectability
    example = 0.3 * d.delta_thresh / (0.3 * d.delta_thresh + 0.7)
    lines = [
        f"subgroup: {describe_subgroup(result.subgroup)} ({result.size} rows; observed rate "
        f"{100 * result.observed_rate:.1f}%, mean prediction {100 * result.predicted_rate:.1f}%)",
        f"h({d.alpha:g}) = {d.h:.4f} for M = {d.profiles} covariate profiles",
        f"F_old = {d.f_old:.4f} (unconstrained score with the current predictions; q_MLE = {d.q_mle:.4f})",
        f"Delta_thresh = {d.delta_thresh:.4f}: predicted odds inflated by this factor in the subgroup "
        f"(a 30% prediction becoming {100 * example:.1f}%) would be detected at alpha = {d.alpha:g}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        sys.exit(int(ExitCode.INTERRUPTED))


if __name__ == "__main__":
    main()
