"""What a user sees on the console: override checks of `audit scan`, the plain summary without
a terminal, warnings on stderr, progress lines, and the `--help` texts (issue 16)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from cli_support import FAST, Invoke, Project, spec_text, strict_json, synthetic_frame

SCAN = (
    "--type",
    "fpr_scan",
    "--outcome",
    "y",
    "--recommendation",
    "rec",
    "--attributes",
    "sex,region,age_group",
    "--set",
    "penalty=0.5",
    "--set",
    "restarts=5",
)


@pytest.fixture
def data(project: Project) -> Path:
    return project.data(n=600)


# --------------------------------------------------------------------------------------------
# `audit scan` checks its overrides as `audit run` does
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--out", ""), "--out: must not be empty"),
        (("--replicates", "1000000000"), "--replicates: must be between 0 and 1,000,000"),
        (("--workers", "100000"), "--workers: must be between 1 and 256"),
    ],
)
def test_scan_checks_its_overrides_like_run(
    cli: Invoke, data: Path, args: tuple[str, ...], expected: str
) -> None:
    outcome = cli("scan", data, *SCAN, *args, code=2)
    assert expected in outcome.stderr
    assert "internal error" not in outcome.stderr


def test_scan_rejects_an_empty_environment_override(
    cli: Invoke, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRSCAN_REPLICATES", "")
    outcome = cli("scan", data, *SCAN, code=2)
    assert "FAIRSCAN_REPLICATES" in outcome.stderr
    assert "set but empty" in outcome.stderr


# --------------------------------------------------------------------------------------------
# Without a terminal the summary is plain lines, never folded mid-label
# --------------------------------------------------------------------------------------------


def test_summary_without_a_terminal_is_one_unwrapped_line_per_scan(
    cli: Invoke, project: Project
) -> None:
    # long category values make a long subgroup label: a table 80 columns wide folded it
    frame = synthetic_frame(n=1500, bias=True).with_columns(
        pl.col("region") + "_a_very_long_region_name_that_a_table_would_fold",
        pl.col("age_group") + "_an_equally_long_age_group_label_for_the_test",
    )
    data = project.data("long.csv", frame=frame)
    outcome = cli("scan", data, *SCAN, *FAST, code=1)
    lines = outcome.stderr.splitlines()
    assert "fairscan: long-fpr" in lines
    [scan_line] = [line for line in lines if line.startswith("scan fpr (fpr_scan): ")]
    assert "significant, 1 of 1 significant; top: " in scan_line
    assert "region_a_very_long_region_name_that_a_table_would_fold" not in scan_line
    assert "S_a_very_long_region_name_that_a_table_would_fold" in scan_line
    assert "a_an_equally_long_age_group_label_for_the_test" in scan_line
    assert "; score " in scan_line and "; p 0.0500" in scan_line
    assert "│" not in outcome.stderr and "┃" not in outcome.stderr  # no table drawn
    # the finding's sentence is one line too
    assert any(
        "S_a_very_long_region_name_that_a_table_would_fold" in line and "recommended" in line
        for line in lines
    )


def test_summary_on_a_terminal_keeps_the_table(
    cli: Invoke, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fairscan.cli import err

    monkeypatch.setattr(err, "_force_terminal", True)
    outcome = cli("scan", data, *SCAN, *FAST, "--no-progress")
    assert "┏" in outcome.stderr  # the rich table
    assert not any(line.startswith("scan fpr (") for line in outcome.stderr.splitlines())


def test_multi_spec_closing_summary_is_plain_lines(cli: Invoke, project: Project) -> None:
    project.data()
    first = project.spec(spec_text("first"), "first.audit.yaml")
    second = project.spec(spec_text("second"), "second.audit.yaml")
    outcome = cli("run", first, second, *FAST, "-q", "--out", project.root / "out")
    lines = outcome.stderr.splitlines()
    assert "fairscan: all specs" in lines
    assert any(line.startswith(f"spec {first}: ") and ", exit " in line for line in lines)
    assert any(line.startswith("worst exit code: ") for line in lines)


# --------------------------------------------------------------------------------------------
# Warnings reach stderr, not only the reports
# --------------------------------------------------------------------------------------------


def test_run_prints_data_and_scan_warnings_once_each(
    cli: Invoke, project: Project, tmp_path: Path
) -> None:
    # a constant attribute (a data warning) and a recommendation that is 0 everywhere (a
    # warning of each of the two scans, the same text: printed once, naming both)
    frame = synthetic_frame(n=600).with_columns(pl.lit("x").alias("site"), pl.lit(0).alias("rec"))
    project.data(frame=frame)
    text = spec_text().replace("attributes: [sex, region, age_group]", "attributes: [sex, site]")
    text = text.replace(
        "  - {id: calibration, type: bias_scan, direction: negative, penalty: 0.5, restarts: 5}",
        "  - {id: fpr2, type: fpr_scan, penalty: 0.5, restarts: 5}",
    )
    spec = project.spec(text)
    outcome = cli("run", spec, *FAST, "--out", tmp_path / "out")
    warnings = [line for line in outcome.stderr.splitlines() if line.startswith("warning")]
    assert any("attribute 'site' has a single value" in line for line in warnings), warnings
    [scan_warning] = [line for line in warnings if "cannot differ between subgroups" in line]
    assert scan_warning.startswith("warning (fpr, fpr2): ")
    assert len(warnings) == len(set(warnings))
    report = strict_json((tmp_path / "out" / "synthetic.json").read_text(encoding="utf-8"))
    assert isinstance(report, dict) and report["data_warnings"]  # the report keeps them too
    # --quiet: only the verdict line
    quiet = cli("run", spec, *FAST, "-q", "--out", tmp_path / "out")
    assert "warning" not in quiet.stderr


def test_long_warnings_are_cut_to_one_short_line() -> None:
    from fairscan.cli import WARNING_CHARS, _short

    text = "first line\n  " + "x" * 5000
    short = _short(text)
    assert "\n" not in short and len(short) == WARNING_CHARS and short.endswith("…")
    assert _short("a  b\nc") == "a b c"


# --------------------------------------------------------------------------------------------
# Progress: a plain line every 10 s in logs; "scan 2 of 3" and an ETA
# --------------------------------------------------------------------------------------------


def test_plain_progress_writes_at_most_every_interval_with_eta() -> None:
    from fairscan.progress import PlainProgress

    now = [0.0]
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=10.0, clock=lambda: now[0])
    progress.start("scan 2 of 3: fpr: null replicates", 1000)
    for _ in range(100):  # 100 replicates in 5 s: nothing yet
        now[0] += 0.05
        progress.advance()
    assert lines == []
    for _ in range(300):  # 1 replicate per 0.05 s: a line at 10 s and 20 s, not more often
        now[0] += 0.05
        progress.advance()
    assert len(lines) == 2
    assert lines[0] == (
        "progress: scan 2 of 3: fpr: null replicates 200/1000 (20%), 10s elapsed, ETA 40s"
    )
    assert lines[1].startswith("progress: scan 2 of 3: fpr: null replicates 400/1000 (40%)")
    progress.done()


def test_scan_progress_numbers_the_scans_and_keeps_the_interface() -> None:
    from fairscan.progress import ScanProgress

    seen: list[tuple[str, object]] = []

    class Recorder:  # a runner-side observer with the original three methods only
        def start(self, task: str, total: int | None) -> None:
            seen.append((task, total))

        def advance(self, n: int = 1) -> None:
            seen.append(("advance", n))

        def done(self) -> None:
            seen.append(("done", None))

    wrapped = ScanProgress(Recorder(), 2, 3)
    wrapped.start("fpr: null replicates", 19)
    wrapped.advance(5)
    wrapped.done()
    ScanProgress(Recorder(), 1, 1).start("only: null replicates", 9)
    assert seen == [
        ("scan 2 of 3: fpr: null replicates", 19),
        ("advance", 5),
        ("done", None),
        ("only: null replicates", 9),
    ]


def test_run_reports_scan_numbers_to_the_observer(project: Project) -> None:
    from fairscan.api import RunOptions, run_audit

    project.data(n=600)
    spec = project.spec(spec_text())
    tasks: list[str] = []

    class Recorder:
        def start(self, task: str, total: int | None) -> None:
            tasks.append(task)

        def advance(self, n: int = 1) -> None:
            pass

        def done(self) -> None:
            pass

    run_audit(spec, RunOptions(replicates=19, workers=1, write=False, progress=Recorder()))
    assert any(t.startswith("scan 1 of 2: fpr") for t in tasks), tasks
    assert any(t.startswith("scan 2 of 2: calibration") for t in tasks), tasks


def test_logs_get_plain_progress_lines(
    cli: Invoke, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fairscan.cli.common

    monkeypatch.setattr(fairscan.cli.common, "PLAIN_PROGRESS_SECONDS", 0.0)  # every step
    outcome = cli("scan", data, *SCAN, *FAST, code=None)
    assert "progress: fpr: null replicates " in outcome.stderr
    assert "/19 (" in outcome.stderr and "elapsed" in outcome.stderr
    quiet = cli("scan", data, *SCAN, *FAST, "--no-progress")
    assert "progress:" not in quiet.stderr


def test_run_shows_every_phase_in_order(
    cli: Invoke, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress from the first second (issue 36): reading, preparing, each scan's search and
    replicates, writing; on stderr only, stdout holds the report."""
    import fairscan.cli.common
    from fairscan.data.load import bytes_text

    monkeypatch.setattr(fairscan.cli.common, "PLAIN_PROGRESS_SECONDS", 0.0)  # every step
    size = bytes_text(project.data(n=600).stat().st_size)
    spec = project.spec(spec_text())
    outcome = cli("run", spec, *FAST, code=None)
    assert "progress:" not in outcome.stdout
    begun: list[str] = []  # each task's words, in the order they first appear
    for line in outcome.stderr.splitlines():
        if line.startswith("progress: "):
            words = line.removeprefix("progress: ").split(",")[0].rstrip(" 0123456789/()%")
            if words not in begun:
                begun.append(words)
    assert begun == [
        f"reading data.csv ({size}",
        "preparing 600 rows",
        "scan 1 of 2: fpr: search (5 restarts",
        "scan 1 of 2: fpr: null replicates",
        "scan 2 of 2: calibration: search (5 restarts",
        "scan 2 of 2: calibration: null replicates",
        "writing the reports",
    ], outcome.stderr


def test_terminal_bar_shows_the_scan_number_and_an_eta() -> None:
    import io

    from rich.console import Console

    from fairscan.cli import RichProgress
    from fairscan.cli.progress_bar import EtaColumn

    stream = io.StringIO()
    bar = RichProgress(Console(file=stream, force_terminal=True, width=120))
    bar.start("scan 2 of 3: fpr: null replicates", 10)
    bar.advance(4)
    progress = bar._progress
    assert any(isinstance(c, EtaColumn) for c in progress.columns)
    progress.refresh()
    bar.done()
    assert "scan 2 of 3: fpr: null replicates" in stream.getvalue()
    assert "ETA" in stream.getvalue()


# --------------------------------------------------------------------------------------------
# --help: whole sentences, no type hints, nothing cut at 80 columns, every exit code
# --------------------------------------------------------------------------------------------

COMMANDS = ["run", "validate", "scan", "diff", "explain", "schema", "init", "lambda", "power"]


@pytest.mark.parametrize("columns", [None, "80"])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_whole_sentences_without_type_hints(command: str, columns: str | None) -> None:
    import typer
    from typer.testing import CliRunner

    from fairscan.cli import app

    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    text = result.output
    for hint in ("<bool>", "<str>", "<int", "<float>", "<path>", "<list", "…"):
        assert hint not in text, (hint, text)
    if columns == "80":
        assert max(len(line) for line in text.splitlines()) <= 80, text
    # every help text is shown whole (words wrapped only between words, none cut off)
    flat = " ".join(text.split())
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    for param in click_command.params:
        help_text = getattr(param, "help", None)
        if help_text:
            assert " ".join(help_text.split()) in flat, (param.name, text)
    first = (click_command.help or "").split("\n\n", 1)[0]
    assert " ".join(first.split()) in flat


@pytest.mark.parametrize("columns", [None, "80"])
def test_top_level_help_lists_every_exit_code_and_whole_summaries(columns: str | None) -> None:
    from typer.testing import CliRunner

    from fairscan.cli import app

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    assert "130 = interrupted (Ctrl-C), 143 = stopped (SIGTERM)." in flat
    assert "..." not in flat.replace("COMMAND [ARGS]...", "")  # no cut summary
    assert "scan Run one scan of DATA from flags, without a spec file; exit 0/1/2 like" in flat


def test_readme_lists_exit_code_143() -> None:
    from cli_support import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| 130 | interrupted (Ctrl-C)" in readme
    assert "| 143 | stopped by SIGTERM" in readme
