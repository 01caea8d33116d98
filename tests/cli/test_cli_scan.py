"""End-to-end tests of ``audit scan``: one scan from one terminal line, without a spec file.

The command builds the spec ``audit run`` would read, so it is checked against ``audit run``:
``--save-spec`` round trip, the same exit codes, reports only with ``--out``, and errors that
name the flag (``--set penalty: ...``) instead of a line of a spec file the user never wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from cli_support import FAST, SAMPLE_DATA, TRACEBACK, Invoke, Project, synthetic_frame

import fairscan.api

# the synthetic data of cli_support: attributes sex/region/age_group, outcome y, prediction p,
# recommendation rec; with bias=True rows with region S and age group a are flagged more often
SYNTHETIC = (
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


def flat(text: str) -> str:
    """Console text with the terminal's line wrapping undone (the runner's console is 80 wide)."""
    return " ".join(text.split())


def files_under(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")}


def findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (s["id"], f["label"], f["size"], f["statistic"]["value"], f["p_value"], f["significant"])
        for s in report["scans"]
        for f in s["findings"]
    ]


@pytest.fixture
def biased(project: Project) -> Path:
    return project.data(bias=True)


@pytest.fixture
def quiet_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary files of the command go here, so a test can check none is left behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# --------------------------------------------------------------------------------------------
# The COMPAS line of issue 13 (needs ../shared/data)
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compas_one_line_exits_1_with_priors_over_5(compas_csv: Path, tmp_path: Path) -> None:
    """The issue's terminal line, through the real entry point, in a folder of its own."""
    work = tmp_path / "work"
    work.mkdir()
    args = [
        "scan",
        str(compas_csv),
        *("--type", "fpr_scan", "--outcome", "two_year_recid", "--recommendation", "high_risk"),
        *("--attributes", "sex,race,age_group,c_charge_degree,priors"),
        *("--set", "penalty=1", "--set", "restarts=100", "--replicates", "99"),
    ]
    before = files_under(compas_csv.parent)
    result = subprocess.run(
        [sys.executable, "-m", "fairscan.cli", *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("FAIRSCAN_")},
            "COLUMNS": "200",
        },
    )
    assert result.returncode == 1, result.stderr
    assert TRACEBACK not in result.stderr
    assert "priors = Over 5" in result.stderr
    assert "score 95.82" in flat(result.stderr)  # as audits/compas-fpr.audit.yaml gives
    assert "FAIL: 1 significant finding(s) in 1 scan(s)." in result.stderr
    assert "no reports written" in result.stderr
    # nothing written: no report, no spec, next to the data or in the working folder
    assert files_under(work) == set()
    assert files_under(compas_csv.parent) == before


# --------------------------------------------------------------------------------------------
# Results, reports and the saved spec
# --------------------------------------------------------------------------------------------


def test_prints_the_summary_and_writes_nothing_without_out(
    cli: Invoke,
    project: Project,
    biased: Path,
    quiet_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(project.root)
    before = files_under(project.root)
    outcome = cli("scan", biased.name, *SYNTHETIC, *FAST, code=1)
    assert "fairscan: data-fpr" in outcome.stderr  # the summary table of `audit run`
    assert re.search(
        r"the \d+ rows with region = S and age_group = a are recommended", flat(outcome.stderr)
    )
    assert "FAIL: 1 significant finding(s) in 1 scan(s)." in outcome.stderr
    assert "no reports written (pass --out DIR to write them)" in outcome.stderr
    assert files_under(project.root) == before
    assert files_under(quiet_tmp) == set()  # the temporary spec is gone


def test_clean_data_exits_0_and_exit_zero(cli: Invoke, project: Project) -> None:
    clean = project.data(seed=3)
    cli("scan", clean, *SYNTHETIC, *FAST, code=0)
    biased = project.data("biased.csv", bias=True)
    cli("scan", biased, *SYNTHETIC, *FAST, "--exit-zero", code=0)


def test_out_writes_json_and_markdown(cli: Invoke, project: Project, biased: Path) -> None:
    out = project.root / "reports"
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, "--out", out, "--name", "mine", code=1)
    assert sorted(p.name for p in out.iterdir()) == ["mine.json", "mine.md"]
    assert f"Reports: {out / 'mine.json'}, {out / 'mine.md'}" in outcome.stderr
    report = json.loads((out / "mine.json").read_text())
    assert report["name"] == "mine"
    assert report["verdict"]["exit_code"] == 1
    assert report["provenance"]["seed"] == 0  # the default seed: the same line, the same result
    assert report["provenance"]["spec_path"] == "<audit scan>"
    # relative to the spec folder (here the working directory), unless they share only the
    # root: no absolute path in a committed baseline (issue 16)
    recorded = report["provenance"]["data_path"]
    assert (Path.cwd() / recorded).resolve() == biased.resolve()
    parameters = report["provenance"]["parameters"]
    assert parameters["scans"][0]["penalty"] == 0.5
    assert parameters["significance"]["replicates"] == 19
    assert "# " in (out / "mine.md").read_text()


def test_format_chooses_the_reports(cli: Invoke, project: Project, biased: Path) -> None:
    out = project.root / "reports"
    cli("scan", biased, *SYNTHETIC, *FAST, "--out", out, "--format", "html", "--format", "junit")
    assert sorted(p.name for p in out.iterdir()) == ["data-fpr.html", "data-fpr.junit.xml"]
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, "--format", "json", code=2)
    assert "--format" in outcome.stderr and "--out" in outcome.stderr
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, "--out", out, "--format", "pdf", code=2)
    assert "--format: expected 'json', 'markdown'" in outcome.stderr


def test_same_line_same_result(cli: Invoke, project: Project, biased: Path) -> None:
    for name in ("a", "b"):
        cli("scan", biased, *SYNTHETIC, *FAST, "--out", project.root / name, code=1)
    a = json.loads((project.root / "a" / "data-fpr.json").read_text())
    b = json.loads((project.root / "b" / "data-fpr.json").read_text())
    assert findings(a) == findings(b)
    assert a["scans"][0]["null_distribution"] == b["scans"][0]["null_distribution"]


def test_save_spec_round_trip_gives_the_same_findings_via_run(
    cli: Invoke, project: Project, biased: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root)
    spec = Path("audits") / "biased.audit.yaml"  # the folder is created
    outcome = cli(
        "scan", biased.name, *SYNTHETIC, *FAST, "--out", "scan-out", "--save-spec", spec, code=1
    )
    assert f"wrote {spec}; `audit run {spec}` reproduces this scan" in outcome.stderr
    saved = yaml.safe_load(spec.read_text())
    assert saved["data"]["path"] == "../data.csv"  # relative to the spec file
    assert saved["output"] == {"dir": "../scan-out"}
    assert saved["scans"] == [{"id": "fpr", "type": "fpr_scan", "penalty": 0.5, "restarts": 5}]
    assert saved["significance"] == {"seed": 0, "replicates": 19, "workers": 1}
    fairscan.api.load_spec(spec)  # a valid spec as it stands

    cli("run", spec, "--out", "run-out", code=1)
    by_scan = json.loads(Path("scan-out/data-fpr.json").read_text())
    by_run = json.loads(Path("run-out/data-fpr.json").read_text())
    assert findings(by_scan) == findings(by_run)
    assert findings(by_scan)[0][1] == "region = S and age_group = a"
    assert by_scan["scans"][0]["null_distribution"] == by_run["scans"][0]["null_distribution"]
    assert by_scan["verdict"] == by_run["verdict"]
    # the report of the scan names the spec it saved, with that file's hash
    for key in ("spec_path", "spec_sha256", "seed", "seed_entropy", "data_sha256"):
        assert by_scan["provenance"][key] == by_run["provenance"][key], key


def test_save_spec_keeps_an_existing_file_unless_force(
    cli: Invoke, project: Project, biased: Path
) -> None:
    spec = project.spec("keep: me\n", "x.audit.yaml")
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, "--save-spec", spec, code=2)
    assert "--save-spec" in outcome.stderr and "--force" in outcome.stderr
    assert spec.read_text() == "keep: me\n"
    cli("scan", biased, *SYNTHETIC, *FAST, "--save-spec", spec, "--force", code=1)
    assert yaml.safe_load(spec.read_text())["name"] == "data-fpr"


def test_save_spec_is_not_written_when_the_flags_are_wrong(
    cli: Invoke, project: Project, biased: Path
) -> None:
    spec = project.root / "x.audit.yaml"
    cli("scan", biased, *SYNTHETIC, "--outcome", "nope", "--save-spec", spec, code=2)
    assert not spec.exists()


def test_threshold_and_discretize(cli: Invoke, project: Project) -> None:
    frame = synthetic_frame(bias=True)
    ages = np.random.default_rng(0).integers(18, 80, size=frame.height)
    data = project.data(frame=frame.with_columns(pl.Series("age", ages)))
    out = project.root / "out"
    cli(
        "scan",
        data,
        *("--type", "fpr_scan", "--outcome", "y", "--prediction", "p", "--threshold", "0.5"),
        *("--attributes", "sex,region", "--attributes", "age_group,age"),
        *("--discretize", "age=30,50", "--set", "restarts=5", *FAST, "--out", out),
        code=1,
    )
    report = json.loads((out / "data-fpr.json").read_text())
    parameters = report["provenance"]["parameters"]
    assert parameters["columns"]["threshold"] == 0.5
    assert parameters["attributes"] == ["sex", "region", "age_group", "age"]
    assert parameters["discretize"]["age"]["edges"] == [30, 50]
    assert report["attributes"]["age"] == ["< 30", "[30, 50)", ">= 50"]
    # a numeric attribute without --discretize: the hint says how to bin it with a flag
    outcome = cli("scan", data, *SYNTHETIC, "--attributes", "age", "--replicates", "0", code=2)
    assert_names_the_flag(outcome.stderr, "--attributes:", "--discretize age=5")
    outcome = cli("scan", data, *SYNTHETIC, "--attributes", "age", "--discretize", "age=x", code=2)
    assert_names_the_flag(outcome.stderr, "--discretize age: 'x' is not a number of bins")


def test_cbs_with_protected_on_the_sample_data(cli: Invoke, tmp_path: Path) -> None:
    """The sample's injected bias (ethnicity C aged 18-24) found by CBS for ethnicity C."""
    out = tmp_path / "out"
    outcome = cli(
        "scan",
        SAMPLE_DATA,
        *("--type", "cbs", "--protected", "ethnicity=C", "--set", "metric=fpr"),
        *("--outcome", "default", "--recommendation", "high_risk"),
        *("--attributes", "sex,ethnicity,age_group,region", *FAST, "--out", out),
        code=1,
    )
    assert "Among ethnicity = C rows with the filter applied, the 200 with age_group = 18-24" in (
        flat(outcome.stderr)
    )
    report = json.loads((out / "credit-cbs.json").read_text())
    scan = report["scans"][0]
    assert scan["parameters"]["protected"]["column"] == "ethnicity"
    assert scan["parameters"]["protected"]["value"] == "C"
    assert scan["findings"][0]["label"] == "age_group = 18-24"
    assert scan["findings"][0]["significant"] is True


# --------------------------------------------------------------------------------------------
# Errors: exit 2, the flag named, no traceback, no location in a spec file
# --------------------------------------------------------------------------------------------


def assert_names_the_flag(stderr: str, *texts: str) -> None:
    for text in texts:
        assert text in stderr, stderr
    assert ".audit.yaml" not in stderr, stderr  # no file:line of the temporary spec
    assert "fairscan-scan-" not in stderr, stderr
    assert TRACEBACK not in stderr


def test_unknown_type_says_did_you_mean(cli: Invoke, biased: Path) -> None:
    args = [a if a != "fpr_scan" else "fpr_scn" for a in SYNTHETIC]
    outcome = cli("scan", biased, *args, code=2)
    assert_names_the_flag(
        outcome.stderr,
        "usage error: --type: unknown scan type 'fpr_scn'",
        "did you mean 'fpr_scan'?",
    )


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("penalty=abc", "--set penalty: expected a number, got 'abc'"),
        ("penalty=-1", "--set penalty: must be >= 0"),
        ("restarts=yes", "--set restarts:"),
        ("penaltyy=1", "--set penaltyy: unknown key 'penaltyy'"),
        ("penalty", "--set 'penalty' is not KEY=VALUE"),
        ("penalty=[1", "--set penalty: cannot read '[1' as a value"),
        ("type=cbs", "--set type: the scan type is given by --type"),
        ("models.propensity=logistic", "--set models.propensity: unknown key 'models'"),
    ],
)
def test_bad_set_names_the_flag(cli: Invoke, biased: Path, setting: str, expected: str) -> None:
    outcome = cli("scan", biased, *SYNTHETIC, "--set", setting, code=2)
    assert_names_the_flag(outcome.stderr, expected)


def test_did_you_mean_for_a_misspelt_setting(cli: Invoke, biased: Path) -> None:
    outcome = cli("scan", biased, *SYNTHETIC, "--set", "restart=5", code=2)
    assert_names_the_flag(outcome.stderr, "--set restart:", "did you mean 'restarts'?")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--outcome", "yy"), ["data error: --outcome: column 'yy' is not in the data", "'y'"]),
        (("--recommendation", "recc"), ["--recommendation: column 'recc'", "'rec'"]),
        (("--attributes", "regionn"), ["--attributes: column 'regionn'", "'region'"]),
        (("--filter", "agee = 'a'"), ["--filter: unknown column 'agee'"]),
        (("--name", "bad name"), ["--name: must start with a letter or digit"]),
        (("--alpha", "2"), ["--alpha: must be < 1"]),
        (("--protected", "sex=F"), ["--protected: scan type fpr_scan has no protected class"]),
        (("--threshold", "0.5"), ["--threshold: give either --recommendation or --threshold"]),
        (("--set", "threshold=zz"), ["--set threshold:"]),
    ],
)
def test_bad_flags_name_the_flag(
    cli: Invoke, biased: Path, flags: tuple[str, ...], expected: list[str]
) -> None:
    outcome = cli("scan", biased, *SYNTHETIC, *flags, code=2)
    assert_names_the_flag(outcome.stderr, *expected)


def test_missing_data_file(cli: Invoke, project: Project) -> None:
    outcome = cli("scan", project.root / "nope.csv", *SYNTHETIC, code=2)
    assert_names_the_flag(outcome.stderr, "DATA: data file", "does not exist")


def test_a_role_the_scan_needs_is_missing(cli: Invoke, biased: Path) -> None:
    args = ["--type", "fpr_scan", "--outcome", "y", "--attributes", "sex,region"]
    outcome = cli("scan", biased, *args, code=2)
    assert_names_the_flag(outcome.stderr, "--type fpr_scan: scan 'fpr' (fpr_scan) needs")


def test_bias_scan_without_a_prediction_expects_the_overall_rate(
    cli: Invoke, project: Project, biased: Path
) -> None:
    """AIF360's default: no prediction column means every row is expected at the mean."""
    out = project.root / "reports"
    args = ["--type", "bias_scan", "--outcome", "y", "--attributes", "sex,region", *FAST]
    cli("scan", biased, *args, "--out", out, "--name", "mean", "--exit-zero", code=0)
    report = json.loads((out / "mean.json").read_text())
    (scan,) = report["scans"]
    assert scan["status"] != "error", scan
    assert scan["parameters"]["expectation"].startswith("overall mean of y (")


def test_cbs_errors_name_the_flags(cli: Invoke) -> None:
    base = ["scan", SAMPLE_DATA, "--type", "cbs", "--outcome", "default"]
    base += ["--recommendation", "high_risk", "--attributes", "sex,ethnicity,age_group"]
    outcome = cli(*base, "--set", "metric=fpr", code=2)
    assert_names_the_flag(outcome.stderr, "--protected: missing", "--protected COLUMN=VALUE")
    outcome = cli(*base, "--protected", "ethnicity=C", code=2)
    assert_names_the_flag(outcome.stderr, "--set fairness: give `metric`", "--set KEY=VALUE")
    outcome = cli(*base, "--protected", "ethnicity", code=2)
    assert_names_the_flag(outcome.stderr, "--protected 'ethnicity' is not COLUMN=VALUE")
    outcome = cli(*base, "--protected", "ethnicityy=C", "--set", "metric=fpr", code=2)
    assert_names_the_flag(outcome.stderr, "--protected: column 'ethnicityy' is not in the data")


def test_a_scan_error_in_the_report_names_the_flag(cli: Invoke, tmp_path: Path) -> None:
    """A value only the scan itself can check (a protected value absent from the data) is a
    scan error (exit 2), reported without the temporary spec file."""
    outcome = cli(
        "scan",
        SAMPLE_DATA,
        *("--type", "cbs", "--protected", "ethnicity=Z", "--set", "metric=fpr"),
        *("--outcome", "default", "--recommendation", "high_risk"),
        *("--attributes", "sex,ethnicity,age_group", "--replicates", "0"),
        *("--out", tmp_path),
        code=2,
    )
    assert_names_the_flag(
        outcome.stderr, "scan error: cbs: --protected: protected value 'Z' does not occur"
    )
    report = json.loads((tmp_path / "credit-cbs.json").read_text())
    assert report["scans"][0]["error"].startswith("--protected: protected value 'Z'")


def test_usage_errors_of_the_flags_themselves(cli: Invoke, biased: Path) -> None:
    assert "Missing option '--type'" in cli("scan", biased, code=2).output
    assert "--seed" in cli("scan", biased, *SYNTHETIC, "--seed", "-1", code=2).output
    assert "--replicates" in cli("scan", biased, *SYNTHETIC, "--replicates", "-1", code=2).output


def test_ctrl_c_exits_130(cli: Invoke, biased: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fairscan.api, "run_prepared", interrupted)
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, code=130)
    assert "interrupted" in outcome.stderr


def test_internal_error_is_reported_as_a_bug(
    cli: Invoke, biased: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom [/bold]")

    monkeypatch.setattr(fairscan.api, "run_prepared", boom)
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, code=2)
    assert "internal error: RuntimeError: boom [/bold]" in outcome.stderr
    assert "bug" in outcome.stderr


def test_help_lists_scan(cli: Invoke) -> None:
    assert "scan" in cli("--help", code=0).stdout
    text = cli("scan", "--help", code=0).stdout
    for flag in ("--type", "--set", "--protected", "--save-spec", "--out", "--seed"):
        assert flag in text


# --------------------------------------------------------------------------------------------
# --subgroup: given subgroups instead of the search (issue 26)
# --------------------------------------------------------------------------------------------


def test_subgroup_flag_tests_the_given_subgroups(
    cli: Invoke, project: Project, biased: Path
) -> None:
    out = project.root / "given"
    cli(
        "scan",
        biased,
        *SYNTHETIC,
        *FAST,
        "--subgroup",
        "region = 'S' and age_group = 'a'",
        "--subgroup",
        "sex = 'F'",
        "--out",
        out,
        "--save-spec",
        project.root / "given.audit.yaml",
        code=1,
    )
    report = json.loads(next(out.glob("*.json")).read_text())
    scan = report["scans"][0]
    assert scan["parameters"]["mode"] == "given subgroups"
    injected, female = scan["findings"]
    assert injected["subgroup"] == {"region": ["S"], "age_group": ["a"]}
    assert injected["significant"] is True
    assert injected["detail"]["given_subgroup"]["test"] == "exact binomial"
    assert female["subgroup"] == {"sex": ["F"]}
    saved = yaml.safe_load((project.root / "given.audit.yaml").read_text())
    assert saved["scans"][0]["subgroups"] == ["region = 'S' and age_group = 'a'", "sex = 'F'"]


@pytest.mark.parametrize(
    ("subgroup", "message"),
    [
        ("colour = 'red'", "'colour' is not a scan attribute"),
        ("region = 'Q'", "'Q' is not a value of region"),
        ("region = ", "at position"),
    ],
)
def test_subgroup_flag_errors_name_the_flag(
    cli: Invoke, project: Project, biased: Path, subgroup: str, message: str
) -> None:
    outcome = cli("scan", biased, *SYNTHETIC, *FAST, "--subgroup", subgroup, code=2)
    assert "--subgroup" in outcome.stderr and message in flat(outcome.stderr)
    assert TRACEBACK not in outcome.stderr


def test_subgroup_flag_on_an_ijdi_scan(cli: Invoke, project: Project, biased: Path) -> None:
    """--subgroup is not limited to the FPR/TPR/bias scans: the IJDI-Scan tests it under its
    own null redraw."""
    out = project.root / "given-ijdi"
    cli(
        "scan",
        biased,
        *("--type", "ijdi_scan", "--outcome", "y", "--recommendation", "rec"),
        *("--attributes", "sex,region,age_group", "--set", "lambda=0", "--set", "restarts=5"),
        *FAST,
        *("--subgroup", "region = 'S' and age_group = 'a'", "--out", out),
        code=1,
    )
    scan = json.loads(next(out.glob("*.json")).read_text())["scans"][0]
    assert scan["parameters"]["mode"] == "given subgroups"
    (injected,) = scan["findings"]
    assert injected["significant"] is True
    assert "null redraw" in injected["detail"]["given_subgroup"]["test"]
