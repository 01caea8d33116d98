"""``audit scan DATA --type T ...``: one scan from flags, without a spec file.

The flags become a spec (:mod:`.scan_spec`) that goes through exactly the validation, data
checks, statistics and reports of ``audit run``: the mapping is validated by
:func:`fairscan.api.loaded_from_mapping` (no temporary file) and run with
:func:`fairscan.api.prepare_loaded` / :func:`fairscan.api.run_prepared`. Errors name
the flag that set the offending value; ``--save-spec`` keeps the spec for ``audit run``.
Reports are written only with ``--out``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from fairscan.cli.common import (
    DebugOption,
    ExitZeroOption,
    ProgressOption,
    app,
    cli_errors,
    err,
    make_progress,
    print_summary,
)
from fairscan.cli.config import outside_settings
from fairscan.cli.run import (
    STDOUT,
    ExecutorOption,
    check_formats,
    check_overrides,
    format_names,
    print_settings,
    write_stdout,
)
from fairscan.cli.scan_spec import (
    FlagMap,
    ScanFlags,
    build_spec,
    saved_spec_text,
    scan_type_names,
    spec_text,
)
from fairscan.errors import FairscanError, UsageError
from fairscan.report.formats import format_list
from fairscan.report.sink_escape import console_text
from fairscan.report.verdict import ExitCode, process_exit_code
from fairscan.spec.constraints import REPLICATES, SEED, WORKERS

if TYPE_CHECKING:
    from fairscan.api import PreparedAudit
    from fairscan.report.models import AuditReport

# provenance.spec_path of a scan run without --save-spec (as "<spec>" for load_spec_from_text)
NO_SPEC_FILE = "<audit scan>"


def _save(target: Path, text: str) -> None:
    from fairscan.report.atomic_write import atomic_write_text

    try:
        atomic_write_text(target, text)
    except OSError as exc:
        raise UsageError(
            f"cannot write {target}: {exc.strerror or exc}",
            field="--save-spec",
            hint="check that its folder is writable",
        ) from exc


def _check_save_target(target: Path, force: bool) -> None:
    """Fail before scanning (and before any data is read) if the spec cannot be saved."""
    if target.is_dir():
        raise UsageError(
            f"{target} is a directory",
            field="--save-spec",
            hint="give the spec file to write, e.g. --save-spec audits/NAME.audit.yaml",
        )
    if target.exists() and not force:
        raise UsageError(
            f"{target} exists", field="--save-spec", hint="pass --force to overwrite it"
        )


def _finish(report: AuditReport, flags: FlagMap, spec_path: str, spec_sha256: str) -> AuditReport:
    """Provenance names the saved spec (or none); scan errors name flags, not spec lines."""
    provenance = report.provenance.model_copy(
        update={"spec_path": spec_path, "spec_sha256": spec_sha256}
    )
    scans = [
        s.model_copy(update={"error": flags.text(s.error)}) if s.error else s for s in report.scans
    ]
    return report.model_copy(update={"provenance": provenance, "scans": scans})


def _write(report: AuditReport, out_dir: Path, formats: list[str]) -> list[Path]:
    from fairscan.report.formats import write_reports
    from fairscan.scans import render_hooks

    try:
        return write_reports(report, out_dir, formats, render_hooks())
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if out_dir.exists() and not out_dir.is_dir():
            reason = "it is a file, not a folder"
        raise UsageError(
            f"cannot write the reports to {str(out_dir)!r}: {reason}",
            field="--out",
            hint="pass --out a folder you can write to",
        ) from exc


@app.command(
    epilog="Example: audit scan compas.csv --type fpr_scan --outcome two_year_recid "
    "--recommendation high_risk --attributes sex,race,age_group,priors --set penalty=1"
)
def scan(
    ctx: typer.Context,
    data: Annotated[
        Path,
        typer.Argument(
            help="Data file (.csv, .parquet, .ndjson/.jsonl, .arrow/.ipc/.feather).",
            show_default=False,
        ),
    ],
    scan_type: Annotated[
        str,
        typer.Option(
            "--type",
            help="Scan type, e.g. fpr_scan (`audit explain TYPE` describes it).",
            autocompletion=scan_type_names,
        ),
    ],
    attributes: Annotated[
        list[str],
        typer.Option(
            "--attributes",
            metavar="A,B,C",
            help="Comma-separated columns whose value combinations form the subgroups "
            "(repeat to add more); for certify and flag also the groups' attributes.",
        ),
    ],
    outcome: Annotated[str | None, typer.Option("--outcome", help="Binary outcome column.")] = None,
    prediction: Annotated[
        str | None, typer.Option("--prediction", help="Prediction (probability or score) column.")
    ] = None,
    recommendation: Annotated[
        str | None,
        typer.Option("--recommendation", help="Binary recommendation (decision) column."),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Derive the recommendation as prediction >= THRESHOLD (instead of "
            "--recommendation).",
        ),
    ] = None,
    positive: Annotated[
        str | None,
        typer.Option("--positive", help="The outcome's positive label when it is not 1/true."),
    ] = None,
    protected: Annotated[
        str | None,
        typer.Option(
            "--protected",
            metavar="COLUMN=VALUE",
            help="The protected class of cbs, e.g. race=African-American.",
        ),
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="A scan setting, e.g. penalty=1 (read as a YAML value; nested keys with dots, "
            "e.g. models.propensity=gradient_boosting); repeat for more.",
        ),
    ] = None,
    discretize: Annotated[
        list[str] | None,
        typer.Option(
            "--discretize",
            metavar="COLUMN=BINS",
            help="Bin a numeric attribute: COLUMN=5 (5 equal-frequency bins) or "
            "COLUMN=25,45 (inner bin edges; one edge: COLUMN=25,); repeat for more.",
        ),
    ] = None,
    subgroups: Annotated[
        list[str] | None,
        typer.Option(
            "--subgroup",
            metavar="FILTER",
            help='Test this given subgroup instead of searching, e.g. "race = '
            "'African-American' and sex = 'Male'\" (an AND of conditions on --attributes); "
            "repeat for more. Each gets its own p-value, with no search correction.",
        ),
    ] = None,
    filter_: Annotated[
        str | None,
        typer.Option("--filter", help='Row filter in SQL WHERE syntax, e.g. "age >= 18".'),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", help="Audit name for reports (default: DATA's file name and the scan)."
        ),
    ] = None,
    alpha: Annotated[
        float | None, typer.Option("--alpha", help="Significance level (default 0.05).")
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Seed of every random choice. Default 0, so that the same command gives "
            "the same result.",
            min=SEED.minimum,
            envvar="FAIRSCAN_SEED",
        ),
    ] = 0,
    replicates: Annotated[
        int | None,
        typer.Option(
            help="Null replicates of the randomization test (default 999; 0 = no test).",
            min=REPLICATES.minimum,
            envvar="FAIRSCAN_REPLICATES",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Worker processes for null replicates (results do not depend on it).",
            min=WORKERS.minimum,
            envvar="FAIRSCAN_WORKERS",
        ),
    ] = None,
    executor: ExecutorOption = None,
    out_text: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the reports to this folder (default: none are written); - writes "
            "one report to stdout.",
        ),
    ] = None,
    formats: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help=f"Report format for --out: {format_list()}; repeat for more (default: json "
            "and markdown).",
            autocompletion=format_names,
        ),
    ] = None,
    save_spec: Annotated[
        Path | None,
        typer.Option(
            "--save-spec",
            help="Also write the equivalent spec file (e.g. NAME.audit.yaml) for `audit run`.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --save-spec file.")
    ] = False,
    exit_zero: ExitZeroOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the verdict line.")] = False,
    progress: ProgressOption = True,
    debug: DebugOption = False,
) -> None:
    """Run one scan of DATA from flags, without a spec file; exit 0/1/2 like `audit run`.

    Prints the summary of `audit run`; writes reports only with --out.

    --save-spec FILE writes the equivalent spec: `audit run FILE` reproduces the scan.
    """
    from fairscan.api import RunOptions, run_prepared

    to_stdout = out_text == STDOUT
    out_dir = Path(out_text) if out_text is not None and not to_stdout else None
    flags = ScanFlags(
        data=data,
        scan_type=scan_type,
        attributes=attributes,
        outcome=outcome,
        prediction=prediction,
        recommendation=recommendation,
        threshold=threshold,
        positive=positive,
        protected=protected,
        settings=settings or [],
        discretize=discretize or [],
        subgroups=subgroups or [],
        filter=filter_,
        name=name,
        alpha=alpha,
        seed=seed,
        replicates=replicates,
        workers=workers,
        formats=formats or [],
    )
    with cli_errors(debug):
        # the checks of `audit run`: `--out ''`, an empty FAIRSCAN_* variable, huge values
        check_overrides(out_dir=out_text, replicates=replicates, workers=workers, executor=executor)
        chosen = check_formats(formats, True) if to_stdout else None
        if formats and out_dir is None and save_spec is None and not to_stdout:
            raise UsageError(
                "--format chooses the reports written to --out",
                field="--format",
                hint="add --out DIR (without it no report is written)",
            )
        if save_spec is not None:
            _check_save_target(save_spec, force)
        plan = build_spec(flags)
        prepared = _prepare(plan.spec, plan.flags)
        spec_path, spec_sha = NO_SPEC_FILE, prepared.loaded.sha256
        if save_spec is not None:
            saved = saved_spec_text(plan, save_spec, out_dir)
            _save(save_spec, saved)
            spec_path = str(save_spec)
            spec_sha = hashlib.sha256(saved.encode("utf-8")).hexdigest()
            err.print(
                f"wrote {escape(console_text(str(save_spec)))}; "
                f"`audit run {escape(console_text(str(save_spec)))}` "
                "reproduces this scan",
                soft_wrap=True,
            )
        observer = make_progress(progress and not quiet)
        # what pyproject.toml or a FAIRSCAN_* variable set (the flags are this scan's spec)
        given: dict[str, object] = {"seed": seed, "replicates": replicates, "workers": workers}
        given |= {"executor": executor, "exit_zero": exit_zero}
        overrides = outside_settings(ctx, given, flags=False)
        print_settings(overrides)
        options = RunOptions(
            write=False, progress=observer, debug=debug, executor=executor, overrides=overrides
        )
        result = run_prepared(prepared, options)
        report = _finish(result.report, plan.flags, spec_path, spec_sha)
        written: list[Path] = []
        report_formats: tuple[str, ...] = ()
        if out_dir is not None:
            report_formats = tuple(prepared.spec.output.formats)
            written = _write(report, out_dir, list(report_formats))
        elif to_stdout and chosen is not None:
            write_stdout(report, chosen[0])
            written = [Path("stdout")]
    sink_errors = print_summary(report, [str(p) for p in written], report_formats, quiet)
    if out_dir is None and not to_stdout and not quiet:
        err.print("no reports written (pass --out DIR to write them)", markup=False)
    if sink_errors:  # a delivery failed: exit 2 (run/delivery.py)
        raise typer.Exit(int(ExitCode.ERROR))
    raise typer.Exit(int(process_exit_code(report.verdict.exit_code, exit_zero)))


def _prepare(spec: dict[str, object], flags: FlagMap) -> PreparedAudit:
    """Validate the spec mapping and load its data as `audit run` does (its data path is
    absolute), through the library's one path for specs that are not files; errors are
    reworded to name the flags. The spec's hash is that of the YAML `--save-spec` writes
    without its header (its canonical text)."""
    from fairscan.api import loaded_from_mapping, prepare_loaded

    try:
        loaded = loaded_from_mapping(spec, NO_SPEC_FILE, text=spec_text(dict(spec)))
        return prepare_loaded(loaded, located=False)
    except FairscanError as error:
        raise flags.error(error) from None
