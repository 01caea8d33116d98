"""Bad specs and bad data: ``audit run`` and ``audit validate`` exit 2 with a located message.

Every case checks the exit code, the error label (spec error / data error), the spec field or
data column the message names, the hint, and — where the spec names the field — the
``file:line`` of that field's line in the spec. No case may print a Python traceback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
from cli_support import FAST, Invoke, Project, line_of, spec_text, synthetic_frame

Frame = Callable[[pl.DataFrame], pl.DataFrame]
Edit = Callable[[str], str]


def _same(x: object) -> object:
    return x


def _row(i: int) -> pl.Expr:
    return pl.int_range(pl.len()) == i


@dataclass(frozen=True)
class Case:
    label: str  # "spec error" / "data error"
    expected: tuple[str, ...]  # substrings of the message (field, column, hint ...)
    line_prefix: str | None = None  # the spec line the message must point at
    edit: Edit = field(default=_same)  # type: ignore[assignment]
    frame: Frame = field(default=_same)  # type: ignore[assignment]
    data_name: str = "data.csv"


def _replace(old: str, new: str) -> Edit:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def _with_filter(expression: str) -> Edit:
    return _replace("  path: data.csv\n", f'  path: data.csv\n  filter: "{expression}"\n')


CASES: dict[str, Case] = {
    "unknown key (scalar), did you mean": Case(
        "spec error",
        ("max_categorie", "unknown key", "did you mean 'max_categories'?"),
        "max_categorie:",
        edit=lambda t: t + "max_categorie: 20\n",
    ),
    "unknown nested key, did you mean": Case(
        "spec error",
        ("columns.recomendation", "unknown key", "did you mean 'recommendation'?"),
        "  recomendation:",
        edit=_replace("  recommendation: rec", "  recommendation: rec\n  recomendation: rec"),
    ),
    "YAML syntax error": Case(
        "spec error",
        ("invalid YAML", "line 9"),  # the unclosed flow sequence opens on line 9
        edit=_replace("[sex, region, age_group]", "[sex, region, age_group"),
    ),
    "wrong type: restarts: many": Case(
        "spec error",
        ("scans[0].restarts", "whole number", "'many'"),
        "  - {id: fpr",
        edit=_replace("penalty: 0.5, restarts: 5", "penalty: 0.5, restarts: many"),
    ),
    "unknown scan type": Case(
        "spec error",
        ("scans[0].type", "unknown scan type 'fpx_scan'", "did you mean 'fpr_scan'?"),
        "  - {id: fpr",
        edit=_replace("type: fpr_scan", "type: fpx_scan"),
    ),
    "missing outcome column, did you mean": Case(
        "data error",
        ("columns.outcome", "column 'yy' is not in the data", "did you mean 'y'?"),
        "  outcome:",
        edit=_replace("outcome: y", "outcome: yy"),
    ),
    "prediction outside [0, 1]": Case(
        "data error",
        ("columns.prediction", "'p'", "[0, 1]", "max 1.5"),
        "  prediction:",
        frame=lambda f: f.with_columns(
            pl.when(_row(3)).then(1.5).otherwise(pl.col("p")).alias("p")
        ),
    ),
    "non-binary outcome": Case(
        "data error",
        ("columns.outcome", "'y'", "must be binary", "other values: 2"),
        "  outcome:",
        frame=lambda f: f.with_columns(pl.when(_row(3)).then(2).otherwise(pl.col("y")).alias("y")),
    ),
    "nulls in the outcome": Case(
        "data error",
        ("columns.outcome", "'y'", "1 missing value", "data row 5", "y IS NOT NULL"),
        "  outcome:",
        frame=lambda f: f.with_columns(
            pl.when(_row(4)).then(None).otherwise(pl.col("y")).alias("y")
        ),
    ),
    "filter keeps 0 rows": Case(
        "data error",
        ("data.filter", "keeps 0 of 600 rows"),
        "  filter:",
        edit=_with_filter("sex = 'X'"),
    ),
    "filter syntax error": Case(
        "spec error",
        ("data.filter", "unexpected token"),
        "  filter:",
        edit=_with_filter("sex = = 'F'"),
    ),
    "filter with unknown column": Case(
        "spec error",
        ("data.filter", "unknown column 'sexx'", "did you mean 'sex'?"),
        "  filter:",
        edit=_with_filter("sexx = 'F'"),
    ),
    "single-class outcome": Case(
        "data error",
        ("columns.outcome", "'y' is 0 in all 600 rows", "both classes"),
        "  outcome:",
        frame=lambda f: f.with_columns(pl.lit(0).alias("y")),
    ),
    "single class after the filter": Case(
        "data error",
        ("columns.outcome", "is 0 in all", "data.filter keeps"),
        "  outcome:",
        edit=_with_filter("y = 0"),
    ),
    "continuous float attribute": Case(
        "data error",
        ("attributes", "'region'", "500 distinct values", "discretize", "quantiles"),
        "attributes:",
        frame=lambda f: f.with_columns((pl.int_range(pl.len()) % 500 * 0.37).alias("region")),
    ),
    "id-like integer attribute": Case(
        "data error",
        ("attributes", "'region'", "500 distinct values", "max_categories", "discretize"),
        "attributes:",
        frame=lambda f: f.with_columns((pl.int_range(pl.len()) % 500).alias("region")),
    ),
    "id-like string attribute": Case(
        # Strings cannot be binned, so the hint is to group values or raise max_categories.
        "data error",
        ("attributes", "'region'", "500 distinct values", "max_categories (50)"),
        "attributes:",
        frame=lambda f: f.with_columns(
            pl.format("id-{}", pl.int_range(pl.len()) % 500).alias("region")
        ),
    ),
    # (a bias_scan without columns.prediction is valid: it expects the outcome's overall mean)
    "threshold without a prediction to apply it to": Case(
        "spec error",
        ("columns.threshold", "derives the recommendation from `prediction`"),
        "  threshold:",
        edit=_replace("  prediction: p\n  recommendation: rec\n", "  threshold: 0.5\n"),
    ),
    "fpr_scan without recommendation or threshold": Case(
        "spec error",
        ("scans[0]", "'fpr' (fpr_scan)", "columns.recommendation", "columns.threshold"),
        "  - {id: fpr",
        edit=_replace("  recommendation: rec\n", ""),
    ),
    "unreadable data format (.xlsx)": Case(
        "data error",
        ("data.path", "cannot tell the format", "'.xlsx'", ".csv, .parquet"),
        "  path:",
        edit=_replace("path: data.csv", "path: data.xlsx"),
        data_name="data.xlsx",
    ),
    "data path that does not exist": Case(
        "data error",
        ("data.path", "does not exist", "missing.csv", "relative path"),
        "  path:",
        edit=_replace("path: data.csv", "path: missing.csv"),
    ),
}


def _write(project: Project, case: Case) -> tuple[Path, str]:
    frame = case.frame(synthetic_frame(600, seed=1, bias=True))
    if case.data_name.endswith(".csv"):
        frame.write_csv(project.root / case.data_name)
    else:  # any bytes: the extension alone decides
        (project.root / case.data_name).write_bytes(b"PK\x03\x04 not a spreadsheet")
    text = case.edit(spec_text())
    return project.spec(text), text


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("command", ["run", "validate"])
def test_bad_input_exits_2_with_a_located_message(
    cli: Invoke, project: Project, case: Case, command: str, tmp_path: Path
) -> None:
    spec, text = _write(project, case)
    args = [command, spec] + ([*FAST, "--out", tmp_path / "out"] if command == "run" else [])
    outcome = cli(*args, code=2)
    message = outcome.stderr
    assert f"{case.label}: {spec}:" in message
    for expected in case.expected:
        assert expected in message, f"{expected!r} not in:\n{message}"
    if case.line_prefix is not None:
        line = line_of(text, case.line_prefix)
        assert re.search(rf"{re.escape(str(spec))}:{line}(:\d+)?: ", message), (
            f"expected {spec}:{line} (the {case.line_prefix.strip()!r} line) in:\n{message}"
        )
    # Every issue is one line of `file:line:col: field: message` (no wrapping at 80 columns),
    # after the `setting ... from --flag` lines that say which settings the command line gave.
    lines = message.splitlines()
    settings = [line for line in lines if line.startswith("setting ")]
    assert all(" from --" in line for line in settings)
    first = lines[len(settings)]
    assert first.startswith(f"{case.label}: {spec}:")
    assert case.expected[0] in first
    assert not (tmp_path / "out").exists()  # nothing is written for a spec that fails


def test_several_problems_are_reported_at_once(cli: Invoke, project: Project) -> None:
    project.data(n=600, seed=1)
    text = (
        spec_text().replace("outcome: y", "outcome: yy").replace("[sex, region,", "[sexx, region,")
    )
    spec = project.spec(text)
    outcome = cli("validate", spec, code=2)
    assert "column 'yy' is not in the data" in outcome.stderr
    assert "column 'sexx' is not in the data" in outcome.stderr
    assert "did you mean 'sex'?" in outcome.stderr


@pytest.mark.parametrize(
    ("old", "new", "typo", "meant"),
    [
        ("attributes: [", "atributes: [", "atributes", "attributes"),  # a list value
        ("significance: {", "signifcance: {", "signifcance", "significance"),  # a mapping value
    ],
    ids=["list value", "mapping value"],
)
def test_unknown_key_with_a_collection_value(
    cli: Invoke, project: Project, old: str, new: str, typo: str, meant: str
) -> None:
    # Regression: an unhashable value made the spec loader crash with an internal error.
    text = spec_text().replace(old, new)
    spec = project.spec(text)
    outcome = cli("validate", spec, "--no-data", code=2)
    assert f"spec error: {spec}:{line_of(text, typo + ':')}:" in outcome.stderr
    assert f"unknown key '{typo}'" in outcome.stderr
    assert f"did you mean '{meant}'?" in outcome.stderr
    assert "internal error" not in outcome.stderr


def test_missing_spec_file(cli: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "nope.audit.yaml"
    for args in (
        ["run", missing, *FAST],
        ["validate", missing],
        ["validate", missing, "--no-data"],
    ):
        outcome = cli(*args, code=2)
        assert f"spec error: {missing}: spec file not found" in outcome.stderr
        assert "help: check the path" in outcome.stderr


def test_missing_spec_file_does_not_stop_the_others(
    cli: Invoke, project: Project, tmp_path: Path
) -> None:
    project.data(n=600, seed=1, bias=True)
    spec = project.spec(spec_text())
    outcome = cli(
        "run", tmp_path / "nope.audit.yaml", spec, *FAST, "--out", tmp_path / "out", code=2
    )
    assert "spec file not found" in outcome.stderr
    assert (tmp_path / "out" / "synthetic.json").is_file()


def test_usage_errors_exit_2(cli: Invoke, project: Project) -> None:
    project.data(n=600, seed=1)
    spec = project.spec(spec_text())
    assert "Missing argument" in cli("run", code=2).output
    assert "--workers" in cli("run", spec, "--workers", "0", code=2).output
    assert "--seed" in cli("run", spec, "--seed", "-1", code=2).output
    assert "No such option" in cli("run", spec, "--bogus", code=2).output


def test_an_internal_error_in_one_scan_keeps_the_other_scans(
    cli: Invoke, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 item 4: a bug inside one scan marks that scan `error`; the others run and are
    written; the run exits 2 (a scan error, not an internal crash of the whole run)."""
    import dataclasses
    import json

    from fairscan.scans import SCAN_TYPES

    def broken(spec: object, ctx: object) -> object:
        raise ValueError("n_splits=3 cannot be greater than the number of members in each class")

    monkeypatch.setitem(
        SCAN_TYPES, "bias_scan", dataclasses.replace(SCAN_TYPES["bias_scan"], runner=broken)
    )
    project.data(bias=True)
    spec = project.spec(spec_text(data="data.csv"))
    outcome = cli(
        "run", spec, "--out", project.root / "out", "--replicates", "19", "--workers", "1", code=2
    )
    assert "Traceback" not in outcome.stderr
    assert (
        "scan error: calibration: internal error in this scan: ValueError: n_splits=3"
        in outcome.stderr
    )
    report = json.loads((project.root / "out" / "synthetic.json").read_text())
    by_id = {s["id"]: s for s in report["scans"]}
    assert by_id["calibration"]["status"] == "error"
    assert "ValueError" in by_id["calibration"]["error"]
    assert by_id["fpr"]["status"] == "significant" and by_id["fpr"]["findings"]
    assert report["verdict"]["status"] == "error" and report["verdict"]["exit_code"] == 2
    assert report["verdict"]["scans_with_errors"] == 1
    # --debug carries the traceback into the report (and onto stderr)
    from typer.testing import CliRunner

    from fairscan.cli import app

    args = ["run", str(spec), "--out", str(project.root / "dbg"), "--replicates", "0", "--debug"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    report = json.loads((project.root / "dbg" / "synthetic.json").read_text())
    error = {s["id"]: s for s in report["scans"]}["calibration"]["error"]
    assert "Traceback (most recent call last)" in error and "in broken" in error


def test_spec_and_data_problems_are_reported_in_one_run(cli: Invoke, project: Project) -> None:
    """Issue 16: a scan lacking its recommendation (a spec check) and a misspelt attribute (a
    data check) are both reported by one run, spec issues first."""
    project.data()
    text = (
        spec_text()
        .replace("  recommendation: rec\n", "")
        .replace("[sex, region,", "[sexx, region,")
    )
    spec = project.spec(text)
    outcome = cli("validate", spec, code=2)
    assert "needs binary recommendations" in outcome.stderr
    assert "column 'sexx' is not in the data" in outcome.stderr
    assert outcome.stderr.index("needs binary recommendations") < outcome.stderr.index("'sexx'")
