"""``audit validate``, ``audit schema``, ``audit init``, ``--version`` and the bare ``audit``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import SAMPLE_DATA, SAMPLE_SPEC, SCHEMAS, Invoke, Project, spec_text

import fairscan

SCHEMA_COMMENT = "# yaml-language-server: $schema="

# --------------------------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------------------------


def test_validate_sample(cli: Invoke) -> None:
    outcome = cli("validate", SAMPLE_SPEC, code=0)
    assert f"ok {SAMPLE_SPEC}: 3 scan(s), 12000 rows after filter, 4 attributes" in outcome.stderr
    assert outcome.stdout == ""


def test_validate_broken_spec(cli: Invoke, project: Project) -> None:
    project.data(n=600, seed=1)
    good = project.spec(spec_text(), "good.audit.yaml")
    bad = project.spec(spec_text().replace("restarts: 5", "restarts: many", 1), "bad.audit.yaml")
    outcome = cli("validate", good, bad, code=2)
    assert f"ok {good}" in outcome.stderr
    assert f"spec error: {bad}:" in outcome.stderr
    assert "scans[0].restarts" in outcome.stderr
    outcome = cli("validate", bad, "--no-data", code=2)
    assert "scans[0].restarts" in outcome.stderr
    # a directory validates every spec in it (worst wins)
    outcome = cli("validate", project.root, code=2)
    assert f"ok {good}" in outcome.stderr
    assert f"{bad}:" in outcome.stderr


def test_validate_no_data_skips_the_data(cli: Invoke, project: Project) -> None:
    spec = project.spec(spec_text(data="not-there.csv"))  # the data file does not exist
    outcome = cli("validate", spec, "--no-data", code=0)
    assert f"ok {spec} (spec only)" in outcome.stderr
    outcome = cli("validate", spec, code=2)
    assert "data.path" in outcome.stderr
    assert "does not exist" in outcome.stderr


def test_validate_no_data_still_checks_the_roles(cli: Invoke, project: Project) -> None:
    spec = project.spec(spec_text(data="not-there.csv").replace("  recommendation: rec\n", ""))
    outcome = cli("validate", spec, "--no-data", code=2)
    assert f"spec error: {spec}:10:" in outcome.stderr  # the fpr_scan's line
    assert "scan 'fpr' (fpr_scan) needs" in outcome.stderr


def test_validate_shows_data_warnings(cli: Invoke, project: Project) -> None:
    frame = project.data(n=600, seed=1)
    text = frame.read_text().splitlines()
    # blank the sex of one row: scanned as a "missing" value, with a warning
    header, first, *rest = text
    first = "," + first.split(",", 1)[1]
    frame.write_text("\n".join([header, first, *rest]) + "\n")
    spec = project.spec(spec_text())
    outcome = cli("validate", spec, code=0)
    assert "warning: attribute 'sex': 1 null value" in outcome.stderr


# --------------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "schema_file"),
    [((), "audit-spec.schema.json"), (("--report",), "report.schema.json")],
    ids=["spec", "report"],
)
def test_schema_matches_the_committed_file(
    cli: Invoke, args: tuple[str, ...], schema_file: str
) -> None:
    outcome = cli("schema", *args, code=0)
    committed = (SCHEMAS / schema_file).read_text(encoding="utf-8")
    assert json.loads(outcome.stdout) == json.loads(committed)
    assert outcome.stdout == committed  # byte for byte: regenerate the file when it drifts
    assert outcome.stderr == ""


# --------------------------------------------------------------------------------------------
# init
# --------------------------------------------------------------------------------------------


def test_init_writes_a_spec_that_validates_and_runs(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "specs" / "x.audit.yaml"  # the folder does not exist yet
    outcome = cli("init", SAMPLE_DATA, "-o", spec, code=0)
    assert f"wrote {spec}" in outcome.stderr
    text = spec.read_text(encoding="utf-8")
    assert text.startswith(SCHEMA_COMMENT)
    assert "outcome: default" in text
    # The data path is relative to the spec file: validate from another working directory.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    outcome = cli("validate", spec, code=0)
    assert "12000 rows" in outcome.stderr
    # 19 replicates: the fewest that reach alpha 0.05 (9 would be UNTESTED, exit 2: issue 34)
    outcome = cli(
        "run", spec, "--replicates", "19", "--workers", "1", "-q", "--out", tmp_path / "out"
    )
    assert outcome.code in (0, 1), outcome.output
    assert (tmp_path / "out" / "credit.json").is_file()


def test_init_refuses_to_overwrite(cli: Invoke, tmp_path: Path) -> None:
    spec = tmp_path / "x.audit.yaml"
    spec.write_text("# mine\n")
    outcome = cli("init", SAMPLE_DATA, "-o", spec, code=2)
    assert f"{spec} exists" in outcome.stderr
    assert "--force" in outcome.stderr
    assert spec.read_text() == "# mine\n"
    cli("init", SAMPLE_DATA, "-o", spec, "--force", code=0)
    assert spec.read_text().startswith(SCHEMA_COMMENT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.audit.yaml"]  # no temp files left


def test_init_to_stdout(cli: Invoke, project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.data(n=600, seed=1)
    monkeypatch.chdir(project.root)
    outcome = cli("init", "data.csv", code=0)
    assert outcome.stdout.startswith(SCHEMA_COMMENT)
    assert "  path: data.csv\n" in outcome.stdout
    assert "  outcome: y\n" in outcome.stdout
    # and what it prints is a valid spec for that data
    spec = project.spec(outcome.stdout, "printed.audit.yaml")
    cli("validate", spec, code=0)


def test_init_errors(cli: Invoke, tmp_path: Path) -> None:
    outcome = cli("init", tmp_path / "missing.csv", "-o", tmp_path / "x.audit.yaml", code=2)
    assert "does not exist" in outcome.stderr
    assert not (tmp_path / "x.audit.yaml").exists()
    outcome = cli("init", SAMPLE_DATA, "-o", tmp_path, code=2)  # a directory
    assert "is a directory" in outcome.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    outcome = cli("init", SAMPLE_DATA, "-o", blocker / "x.audit.yaml", code=2)
    assert "cannot write" in outcome.stderr


# --------------------------------------------------------------------------------------------
# --version, bare `audit`
# --------------------------------------------------------------------------------------------


def test_version(cli: Invoke) -> None:
    outcome = cli("--version", code=0)
    assert outcome.stdout.strip() == f"fairscan {fairscan.__version__}"


def test_no_arguments_shows_help(cli: Invoke) -> None:
    outcome = cli()
    # click exits 2 for a group invoked without a command (no_args_is_help), 0 in older versions
    assert outcome.code in (0, 2)
    for word in ("Usage", "run", "validate", "schema", "init", "Exit codes"):
        assert word in outcome.output


@pytest.mark.parametrize("command", ["run", "validate", "schema", "init"])
def test_command_help(cli: Invoke, command: str) -> None:
    outcome = cli(command, "--help", code=0)
    assert "Usage" in outcome.output


def test_paths_that_look_like_markup_are_printed_verbatim(cli: Invoke, tmp_path: Path) -> None:
    folder = tmp_path / "[bold]specs"
    folder.mkdir()
    spec = folder / "x.audit.yaml"
    spec.write_text(spec_text(data="not-there.csv"))
    assert f"ok {spec} (spec only)" in cli("validate", spec, "--no-data", code=0).stderr
    assert f"data error: {spec}:4:" in cli("validate", spec, code=2).stderr


def test_help_wraps_between_words_only_and_restores_textwrap() -> None:
    import textwrap

    from fairscan.cli.common import _whole_words

    text = "aaaa bbbbb race=African-American"
    assert textwrap.fill(text, 25).splitlines()[-1] == "American"  # the standard behaviour
    with _whole_words():
        assert textwrap.fill(text, 25).splitlines() == ["aaaa bbbbb", "race=African-American"]
    assert textwrap.TextWrapper().break_on_hyphens


def test_the_cli_uses_no_private_module_of_typer_or_click() -> None:
    # typer 0.12-0.25 have no `typer._click`: importing it crashed `audit` there (issue 23)
    import fairscan.cli as cli

    source = Path(cli.__file__).read_text(encoding="utf-8")
    assert "typer._" not in source and "click._" not in source
