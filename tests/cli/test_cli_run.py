"""End-to-end tests of ``audit run``: reports, exit codes, overrides, determinism, robustness."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from cli_support import (
    FAST,
    ROOT,
    SAMPLE_DATA,
    SAMPLE_SPEC,
    SCHEMAS,
    TRACEBACK,
    Invoke,
    Outcome,
    Project,
    spec_text,
    strict_json,
    synthetic_frame,
)
from typer.testing import CliRunner

import fairscan.api
from fairscan.cli import app

FINDING_KEYS = {
    "subgroup",
    "group",
    "label",
    "size",
    "statistic",
    "effect",
    "p_value",
    "adjusted_p_value",
    "significant",
    "description",
    "detail",
}
PROVENANCE_KEYS = {
    "tool_version",
    "spec_sha256",
    "data_sha256",
    "data_rows",
    "seed",
    "utc_time",
    "parameters",
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_report(path: Path) -> dict[str, Any]:
    report = strict_json(path.read_text(encoding="utf-8"))
    assert isinstance(report, dict)
    return report


def stable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the fields that legitimately change from run to run."""
    report = copy.deepcopy(report)
    provenance = report["provenance"]
    for key in ("utc_time", "finished_utc_time", "total_seconds", "workers", "environment"):
        provenance.pop(key)
    provenance["parameters"]["significance"].pop("workers")
    provenance["overrides"] = [o for o in provenance["overrides"] if o["key"] != "workers"]
    for scan in report["scans"]:
        scan.pop("timing")
    return report


# --------------------------------------------------------------------------------------------
# 1. The sample audit
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Outcome, Path]]:
    """``audit run audits/sample.audit.yaml --out TMP --replicates 19 --workers 1``, run once
    from the repository root."""
    out = tmp_path_factory.mktemp("sample-reports")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        result = CliRunner().invoke(
            app, ["run", "audits/sample.audit.yaml", "--out", str(out), *FAST]
        )
    yield Outcome(result), out


def test_sample_exits_1_and_writes_both_reports(sample_run: tuple[Outcome, Path]) -> None:
    outcome, out = sample_run
    assert outcome.code == 1, outcome.output
    assert outcome.result.exception is None or isinstance(outcome.result.exception, SystemExit)
    assert TRACEBACK not in outcome.output
    assert sorted(p.name for p in out.iterdir()) == ["sample-credit.json", "sample-credit.md"]
    # Results go to files, the summary to stderr: stdout stays empty (pipe-friendly).
    assert outcome.stdout == ""
    assert "FAIL" in outcome.stderr
    assert str(out / "sample-credit.json") in outcome.stderr
    assert "ethnicity = C" in outcome.stderr
    markdown = (out / "sample-credit.md").read_text(encoding="utf-8")
    assert "sample-credit" in markdown
    assert "ethnicity" in markdown


def test_sample_json_report_content(sample_run: tuple[Outcome, Path]) -> None:
    _, out = sample_run
    report = read_report(out / "sample-credit.json")
    provenance = report["provenance"]
    assert provenance.keys() >= PROVENANCE_KEYS
    assert provenance["tool_version"] == fairscan.__version__
    assert provenance["spec_sha256"] == hashlib.sha256(SAMPLE_SPEC.read_bytes()).hexdigest()
    assert provenance["data_sha256"] == sha256(SAMPLE_DATA)
    assert provenance["data_rows"] == 12000
    assert provenance["seed"] == 0
    assert provenance["utc_time"].endswith("Z")
    assert provenance["parameters"]["significance"]["replicates"] == 19
    assert provenance["parameters"]["significance"]["workers"] == 1

    assert report["verdict"]["status"] == "findings"
    assert report["verdict"]["exit_code"] == 1
    scans = {scan["id"]: scan for scan in report["scans"]}
    assert list(scans) == ["fpr", "tpr", "calibration"]
    for scan in report["scans"]:
        assert {"id", "type", "status", "timing", "findings"} <= scan.keys()
        assert set(scan["timing"]) == {"search_seconds", "significance_seconds", "total_seconds"}
        for finding in scan["findings"]:
            assert finding.keys() >= FINDING_KEYS
    assert scans["fpr"]["type"] == "fpr_scan"
    assert scans["fpr"]["status"] == "significant"
    top = scans["fpr"]["findings"][0]
    assert top["subgroup"] == {"ethnicity": ["C"], "age_group": ["18-24"]}
    assert top["significant"] is True
    assert top["p_value"] == pytest.approx(1 / 20)
    assert top["effect"]["inside"] > top["effect"]["reference"]
    assert top["statistic"]["name"] == "penalised_score"
    assert report["schema_version"] == 2
    assert len(scans["fpr"]["null_distribution"]["scores"]) == 19


def test_sample_json_report_matches_schema(sample_run: tuple[Outcome, Path]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _, out = sample_run
    schema = json.loads((SCHEMAS / "report.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    validator(schema).validate(read_report(out / "sample-credit.json"))


def test_sample_exit_zero(cli: Invoke, tmp_path: Path) -> None:
    outcome = cli("run", SAMPLE_SPEC, "--out", tmp_path, *FAST, "--exit-zero", "-q", code=0)
    assert "FAIL" in outcome.stderr  # the verdict is still reported ...
    report = read_report(tmp_path / "sample-credit.json")
    assert report["verdict"]["exit_code"] == 1  # ... and recorded; only the exit code changes


# --------------------------------------------------------------------------------------------
# 2. Exit codes
# --------------------------------------------------------------------------------------------


@pytest.fixture
def clean_spec(project: Project) -> Path:
    """No bias anywhere; with data seed 3 and spec seed 7 every p-value is >= 0.4 (R = 19)."""
    project.data("clean.csv", n=3000, seed=3, bias=False)
    return project.spec(spec_text("clean", "clean.csv"), "clean.audit.yaml")


@pytest.fixture
def biased_spec(project: Project) -> Path:
    project.data("biased.csv", n=3000, seed=0, bias=True)
    return project.spec(spec_text("biased", "biased.csv"), "biased.audit.yaml")


@pytest.fixture
def broken_spec(project: Project) -> Path:
    text = spec_text("broken", "clean.csv").replace(
        "penalty: 0.5, restarts: 5", "restarts: many", 1
    )
    return project.spec(text, "broken.audit.yaml")


def test_clean_data_exits_0(cli: Invoke, clean_spec: Path, tmp_path: Path) -> None:
    outcome = cli("run", clean_spec, "--out", tmp_path / "out", *FAST, code=0)
    assert "PASS" in outcome.stderr
    report = read_report(tmp_path / "out" / "clean.json")
    assert report["verdict"] == {
        "status": "clean",
        "exit_code": 0,
        "significant_findings": 0,
        "scans": 2,
        "scans_with_errors": 0,
        "untested_scans": [],
        "not_certified": 0,
    }
    for scan in report["scans"]:
        assert scan["status"] in ("not_significant", "no_finding")
        for finding in scan["findings"]:
            assert finding["significant"] is False


def test_biased_data_exits_1(cli: Invoke, biased_spec: Path, tmp_path: Path) -> None:
    cli("run", biased_spec, "--out", tmp_path, *FAST, code=1)
    report = read_report(tmp_path / "biased.json")
    fpr = report["scans"][0]
    assert fpr["status"] == "significant"
    assert fpr["findings"][0]["subgroup"] == {"region": ["S"], "age_group": ["a"]}


def test_exit_zero_does_not_hide_errors(cli: Invoke, broken_spec: Path) -> None:
    outcome = cli("run", broken_spec, *FAST, "--exit-zero", code=2)
    assert "scans[0].restarts" in outcome.stderr


def test_worst_exit_code_wins(
    cli: Invoke, clean_spec: Path, biased_spec: Path, broken_spec: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cli("run", clean_spec, biased_spec, "--out", out, *FAST, "-q", code=1)
    cli("run", biased_spec, clean_spec, "--out", out, *FAST, "-q", code=1)
    # A broken spec first does not stop the others from running, and 2 beats 1.
    for path in out.iterdir():
        path.unlink()
    outcome = cli("run", broken_spec, clean_spec, biased_spec, "--out", out, *FAST, "-q", code=2)
    assert "scans[0].restarts" in outcome.stderr
    # one closing table over all specs, with the worst exit code
    assert "fairscan: all specs" in outcome.stderr
    table = outcome.stderr.split("fairscan: all specs", 1)[1]
    assert "error" in table and "clean" in table and "findings" in table and "worst" in table
    assert sorted(p.name for p in out.iterdir()) == [
        "biased.json",
        "biased.md",
        "clean.json",
        "clean.md",
    ]


def test_directory_runs_every_spec_inside(
    cli: Invoke, project: Project, clean_spec: Path, biased_spec: Path, tmp_path: Path
) -> None:
    (project.root / "notes.yaml").write_text("not: a spec\n")  # ignored: not *.audit.yaml
    out = tmp_path / "out"
    outcome = cli("run", project.root, "--out", out, *FAST, "-q", code=1)
    assert sorted(p.name for p in out.iterdir()) == [
        "biased.json",
        "biased.md",
        "clean.json",
        "clean.md",
    ]
    assert "PASS" in outcome.stderr
    assert "FAIL" in outcome.stderr


def test_directory_without_specs_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    outcome = cli("run", tmp_path, *FAST, code=2)
    assert "no *.audit.yaml files" in outcome.stderr


def test_reports_default_to_output_dir_next_to_the_spec(
    cli: Invoke, project: Project, clean_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cli("run", clean_spec, *FAST, "-q", code=0)
    assert (project.root / "reports" / "clean.json").is_file()
    assert list(elsewhere.iterdir()) == []


# --------------------------------------------------------------------------------------------
# 3. Overrides and determinism
# --------------------------------------------------------------------------------------------


def test_seed_and_replicates_overrides_are_recorded(
    cli: Invoke, biased_spec: Path, tmp_path: Path
) -> None:
    cli(
        "run",
        biased_spec,
        "--out",
        tmp_path,
        "--seed",
        "123",
        "--replicates",
        "29",
        "--workers",
        "1",
        "-q",
    )
    report = read_report(tmp_path / "biased.json")
    provenance = report["provenance"]
    assert provenance["seed"] == 123
    assert provenance["parameters"]["significance"]["seed"] == 123
    assert provenance["parameters"]["significance"]["replicates"] == 29
    for scan in report["scans"]:
        assert scan["null_distribution"]["replicates"] == 29
        assert len(scan["null_distribution"]["scores"]) == 29


def test_same_seed_same_results(cli: Invoke, biased_spec: Path, tmp_path: Path) -> None:
    reports = []
    for name, seed in (("a", "11"), ("b", "11"), ("c", "12")):
        cli("run", biased_spec, "--out", tmp_path / name, *FAST, "--seed", seed, "-q", code=1)
        reports.append(read_report(tmp_path / name / "biased.json"))
    first, again, other = reports
    for scan_a, scan_b in zip(first["scans"], again["scans"], strict=True):
        assert scan_a["findings"] == scan_b["findings"]  # subgroups, scores, p-values
        assert scan_a["null_distribution"] == scan_b["null_distribution"]  # null scores
    assert stable(first) == stable(again)
    # The seed is actually used: another seed draws other null replicates.
    assert (
        first["scans"][0]["null_distribution"]["scores"]
        != other["scans"][0]["null_distribution"]["scores"]
    )


def test_workers_do_not_change_the_report(cli: Invoke, biased_spec: Path, tmp_path: Path) -> None:
    cli(
        "run",
        biased_spec,
        "--out",
        tmp_path / "w1",
        "--replicates",
        "19",
        "--workers",
        "1",
        "-q",
        code=1,
    )
    cli(
        "run",
        biased_spec,
        "--out",
        tmp_path / "w2",
        "--replicates",
        "19",
        "--workers",
        "2",
        "-q",
        code=1,
    )
    one = read_report(tmp_path / "w1" / "biased.json")
    two = read_report(tmp_path / "w2" / "biased.json")
    assert one["provenance"]["workers"] == 1
    assert two["provenance"]["workers"] == 2
    # Bit-identical once the volatile provenance is removed: compare the serialised text.
    assert json.dumps(stable(one), sort_keys=True) == json.dumps(stable(two), sort_keys=True)


# --------------------------------------------------------------------------------------------
# 9., 10. Interrupts and internal errors
# --------------------------------------------------------------------------------------------


def test_ctrl_c_exits_130(cli: Invoke, clean_spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # cli.run imports run_audit from fairscan.api when it is called: patch it there.
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fairscan.api, "run_audit", interrupted)
    outcome = cli("run", clean_spec, *FAST, code=130)
    assert "interrupted" in outcome.stderr


def test_ctrl_c_in_validate_exits_130(
    cli: Invoke, clean_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fairscan.api, "prepare_audit", interrupted)
    outcome = cli("validate", clean_spec, code=130)
    assert "interrupted" in outcome.stderr


def _boom(*args: object, **kwargs: object) -> None:
    # Brackets that look like rich markup must be shown verbatim, not crash the error report.
    raise RuntimeError("boom [/bold] [red]x")


def test_internal_error_is_reported_as_a_bug(
    cli: Invoke, clean_spec: Path, biased_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fairscan.api, "run_audit", _boom)
    outcome = cli("run", clean_spec, *FAST, code=2)
    assert "internal error" in outcome.stderr
    assert "RuntimeError: boom [/bold] [red]x" in outcome.stderr
    assert "bug" in outcome.stderr
    assert "--debug" in outcome.stderr
    # --exit-zero does not hide it either
    cli("run", clean_spec, biased_spec, *FAST, "--exit-zero", code=2)


def test_internal_error_traceback_with_debug(
    clean_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fairscan.api, "run_audit", _boom)
    result = CliRunner().invoke(app, ["run", str(clean_spec), *FAST, "--debug"])
    assert result.exit_code == 2
    assert TRACEBACK in result.stderr
    assert "RuntimeError: boom" in result.stderr


def test_internal_error_in_validate(
    cli: Invoke, clean_spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fairscan.api, "prepare_audit", _boom)
    outcome = cli("validate", clean_spec, code=2)
    assert "internal error" in outcome.stderr
    assert "bug" in outcome.stderr


def test_unwritable_report_dir_is_not_an_internal_error(
    cli: Invoke, clean_spec: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    outcome = cli("run", clean_spec, "--out", blocker / "reports", *FAST, code=2)
    assert "cannot write the reports" in outcome.stderr
    assert "--out" in outcome.stderr
    assert "internal error" not in outcome.stderr
    # The same through output.dir in the spec: located at the output line of the spec.
    text = clean_spec.read_text().replace("output: {dir: reports}", "output: {dir: ../a-file}")
    clean_spec.write_text(text)
    outcome = cli("run", clean_spec, *FAST, code=2)
    assert f"{clean_spec}:{len(text.splitlines())}:" in outcome.stderr
    assert "output.dir" in outcome.stderr
    assert "internal error" not in outcome.stderr


# --------------------------------------------------------------------------------------------
# 11. Inputs untouched, atomic reports
# --------------------------------------------------------------------------------------------


def test_inputs_are_not_modified_and_reports_are_atomic(
    cli: Invoke, project: Project, biased_spec: Path, tmp_path: Path
) -> None:
    data = project.root / "biased.csv"
    before = {p.name: (sha256(p), p.stat().st_mtime_ns) for p in project.root.iterdir()}
    out = tmp_path / "out"
    cli("run", biased_spec, "--out", out, *FAST, "-q", code=1)
    # Run twice: the second run replaces the reports in place.
    cli("run", biased_spec, "--out", out, *FAST, "-q", code=1)
    after = {p.name: (sha256(p), p.stat().st_mtime_ns) for p in project.root.iterdir()}
    assert after == before  # nothing modified, nothing added next to the spec or the data
    assert sha256(data) == read_report(out / "biased.json")["provenance"]["data_sha256"]
    names = sorted(p.name for p in out.iterdir())
    assert names == ["biased.json", "biased.md"]  # no leftover .tmp (or other hidden) files


def test_data_values_that_look_like_markup(cli: Invoke, project: Project, tmp_path: Path) -> None:
    # Attribute values are user data: "[/S]" must be printed as is, not parsed as rich markup.
    frame = synthetic_frame(3000, seed=0, bias=True)
    project.data("biased.csv", frame.with_columns(pl.col("region").replace({"S": "[/S]"})))
    spec = project.spec(spec_text("biased", "biased.csv"), "biased.audit.yaml")
    outcome = cli("run", spec, "--out", tmp_path, *FAST, code=1)
    assert "region = [/S]" in outcome.stderr
    report = read_report(tmp_path / "biased.json")
    assert report["scans"][0]["findings"][0]["subgroup"] == {"region": ["[/S]"], "age_group": ["a"]}


def test_quoted_glob_is_expanded_by_the_tool(
    cli: Invoke, project: Project, clean_spec: Path, biased_spec: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    pattern = str(project.root / "*.audit.yaml")
    cli("run", pattern, "--out", out, *FAST, "-q", code=1)
    assert sorted(p.name for p in out.iterdir()) == [
        "biased.json",
        "biased.md",
        "clean.json",
        "clean.md",
    ]
    outcome = cli("run", str(project.root / "nothing-*.audit.yaml"), code=2)
    assert "no files match" in outcome.stderr
