"""The smaller commands: ``diff``, ``explain``, ``schema``, ``init``, ``lambda``, ``power``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from fairscan.cli.common import (
    DebugOption,
    ExitZeroOption,
    app,
    cli_errors,
    err,
    print_error,
)
from fairscan.errors import UsageError
from fairscan.report.sink_escape import console_text
from fairscan.report.verdict import ExitCode, process_exit_code
from fairscan.spec.constraints import ALPHA

if TYPE_CHECKING:
    from fairscan.run.history import MonitorSeries


def check_alpha(alpha: float | None) -> None:
    """A usage error for an ``--alpha`` outside (0, 1), the bounds of significance.alpha (0
    would be a level no test reaches, and its logarithm a math domain error)."""
    if alpha is not None and (why := ALPHA.violation(alpha)):
        raise UsageError(why, field="--alpha", hint="give a level such as 0.05")


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    new: Annotated[Path, typer.Argument(help="The current JSON report.")],
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="The data NEW audited: re-test OLD's significant findings on it (persists / "
            "resolved / inconclusive with power) instead of matching the two reports.",
        ),
    ] = None,
    exit_zero: ExitZeroOption = False,
    debug: DebugOption = False,
) -> None:
    """Compare two JSON reports: print what changed (Markdown) and exit as `audit run
    --baseline OLD` did for NEW under NEW's gate.fail_on (1 on findings the gate fails on)."""
    from fairscan.api import diff_reports, diff_reports_on_data
    from fairscan.report.markdown import render_diff
    from fairscan.report.verdict import diff_verdict, diff_verdict_of, gate_line

    with cli_errors(debug):
        if data is not None:
            current, comparison = diff_reports_on_data(old, new, data)
        else:
            current, comparison = diff_reports(old, new)
    verdict = diff_verdict_of(current, comparison)  # recomputed: the stored one is not read
    code = verdict.exit_code
    sys.stdout.write(render_diff(comparison, current))
    sys.stderr.write(console_text(diff_verdict(comparison, verdict)) + "\n")
    sys.stderr.write(gate_line(comparison.fail_on, code) + "\n")
    raise typer.Exit(int(process_exit_code(code, exit_zero)))


@app.command()
def history(
    path: Annotated[Path, typer.Argument(help="The history file (output.history).")],
    spec: Annotated[
        str | None, typer.Option("--spec", help="Only the audits of this spec (its name).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write a self-contained page with an SVG trend per "
            "finding (p-value and effect over the runs).",
        ),
    ] = None,
    alpha: Annotated[float, typer.Option(help="The level marked on the p-value trends.")] = 0.05,
    debug: DebugOption = False,
) -> None:
    """Print the trend of every finding, and each monitored subgroup's evidence, over the runs
    kept in a history file."""
    from fairscan.api import read_history
    from fairscan.report.history_html import history_html
    from fairscan.report.text import fmt_p
    from fairscan.run.history import read_monitor, read_runs

    with cli_errors(debug):
        try:
            check_alpha(alpha)
            if html is not None:
                _check_page_path(html, path)
            trends = read_history(path, spec)
            monitor = read_monitor(path, spec)
            if html is not None:
                runs = read_runs(path, spec)
                page = history_html(trends, alpha, runs=runs, monitor=monitor)
                html.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"cannot write {html}: {exc.strerror or exc}", field="--html"
            ) from None
    if not trends:
        where = f" for {console_text(spec)}" if spec else ""
        sys.stderr.write(f"no finding in the history{where}\n")  # a message, not output
    _print_monitor(monitor)
    for t in trends:
        sys.stdout.write(console_text(f"{t.name} / {t.scan_id}: {t.label}") + "\n")
        for p in t.points:
            mark = "significant" if p.significant else "not significant"
            effect = "-" if p.inside is None else f"{p.inside:.4g}"
            reference = "-" if p.reference is None else f"{p.reference:.4g}"
            label = f" [{console_text(p.baseline_label)}]" if p.baseline_label else ""
            sys.stdout.write(
                f"  {console_text(p.utc_time[:19])}  p {fmt_p(p.p_value)}  "
                f"effect {effect} vs {reference}"
                f"  {mark}{label}\n"
            )


def _print_monitor(series: Sequence[MonitorSeries]) -> None:
    """Each monitored process's evidence over the runs (the history's monitor tables)."""
    from fairscan.report.monitor_view import fmt_evidence, mapping_text
    from fairscan.report.text import fmt_p

    for s in series:
        what = mapping_text(s.subgroup)
        if s.kind == "scan":
            what = "the open scan (each run bets on the subgroup the scan reported the run before)"
        sys.stdout.write(
            console_text(f"monitor {s.name} / {s.scan_id}: evidence for {what}") + "\n"
        )
        for p in s.points:
            alarm = f"  ALARM ({p.alarm})" if p.alarm else ""
            bet = f"  on {mapping_text(p.subgroup)}" if s.kind == "scan" and p.subgroup else ""
            sys.stdout.write(
                console_text(
                    f"  run {p.run_index}  {p.utc_time[:19]}  evidence {fmt_evidence(p.e_value)}"
                    f" (alarm threshold {fmt_evidence(p.threshold)})  anytime p-value "
                    f"{fmt_p(p.p_value_anytime)}  [{p.label}]{alarm}{bet}"
                )
                + "\n"
            )


def _check_page_path(page: Path, history: Path) -> None:
    """A :class:`UsageError` before the page would be written over the history it reads, or
    over any SQLite file (``--html`` takes the page's own path as its value)."""
    same = page.exists() and history.exists() and page.samefile(history)
    try:
        with page.open("rb") as fh:
            sqlite = fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        sqlite = False
    if same or sqlite:
        what = "the history file itself" if same else "an SQLite file"
        raise UsageError(
            f"--html {page} is {what}: the page would be written over it",
            field="--html",
            hint="give --html the path of the page to write, e.g. "
            f"audit history {history} --html history.html",
        )


def _scan_type_names(incomplete: str) -> list[str]:
    from fairscan.cli.scan_spec import scan_type_names

    return scan_type_names(incomplete)


@app.command()
def explain(
    scan_type: Annotated[
        str,
        typer.Argument(
            help="A scan type, e.g. fpr_scan.",
            autocompletion=_scan_type_names,
        ),
    ],
) -> None:
    """Explain a scan type: what it tests, its null hypothesis, parameters and how to read it."""
    from fairscan.explain import explain as explain_text
    from fairscan.scans import SCAN_TYPES

    if scan_type not in SCAN_TYPES:
        from fairscan.cli.scan_spec import closest_type

        close = closest_type(scan_type)
        print_error(
            UsageError(
                f"unknown scan type {scan_type!r}",
                hint=(f"did you mean {close!r}? " if close else "")
                + f"valid types: {', '.join(SCAN_TYPES)}",
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
    debug: DebugOption = False,
) -> None:
    """Write a starter *.audit.yaml for DATA, guessing roles from its columns."""
    from fairscan.report.atomic_write import atomic_write_text
    from fairscan.starter import starter_spec

    with cli_errors(debug):
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
    err.print(
        f"wrote {escape(console_text(str(output)))}; next: audit validate "
        f"{escape(console_text(str(output)))} && audit run {escape(console_text(str(output)))}",
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

    with cli_errors():
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
            raise UsageError(str(error)) from None
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
        typer.Option(help="Significance level (default: the spec's alpha)."),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """How strong a miscalibration in a subgroup must be for the Bias Scan to detect it.

    Reports the analytic critical value h(alpha) and Delta_thresh (the Bias Scan paper, Theorems 1
    and 4): the factor by which the predicted odds in the subgroup must be inflated for its score
    to exceed h(alpha).
    """
    from fairscan.api import power_analysis

    with cli_errors(debug):
        check_alpha(alpha)
        subgroup: dict[str, list[str]] = {}
        for cond in where:
            name, sep, values = cond.partition("=")
            if not sep or not name.strip() or not values.strip():
                raise UsageError(f"--where {cond!r} is not attribute=value[|value...]")
            subgroup.setdefault(name.strip(), []).extend(v.strip() for v in values.split("|"))
        result = power_analysis(spec, subgroup, alpha)
    from fairscan.data.labels import subgroup_label

    d = result.detectability
    example = 0.3 * d.delta_thresh / (0.3 * d.delta_thresh + 0.7)
    lines = [
        f"subgroup: {subgroup_label(result.subgroup)} ({result.size} rows; observed rate "
        f"{100 * result.observed_rate:.1f}%, mean prediction {100 * result.predicted_rate:.1f}%)",
        f"h({d.alpha:g}) = {d.h:.4f} for M = {d.profiles} covariate profiles",
        f"F_old = {d.f_old:.4f} (unconstrained score with the current predictions; q_MLE = {d.q_mle:.4f})",
        f"Delta_thresh = {d.delta_thresh:.4f}: predicted odds inflated by this factor in the subgroup "
        f"(a 30% prediction becoming {100 * example:.1f}%) would be detected at alpha = {d.alpha:g}",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
