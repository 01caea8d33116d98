"""Re-audits that tell the truth (issue 26): the seeded credit-default scenario of
scripts/make_reaudit_data.py, each model version re-tested against the baseline's findings."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fairscan.report.verdict import ExitCode
from fairscan.run.execute import run_audit
from fairscan.run.options import RunOptions

FPR_GROUP = {"sex": ["male"], "education": ["high school", "university"]}
CAL_GROUP = {"age_group": ["18-25"], "region": ["South"]}


@pytest.fixture(scope="module")
def reaudit(tmp_path_factory: pytest.TempPathFactory, reaudit_data: ModuleType) -> dict[str, Any]:
    """Every version audited: the baseline alone, the others against its report."""
    root = tmp_path_factory.mktemp("reaudit")
    specs = reaudit_data.write(root, replicates=99)
    baseline = run_audit(specs["baseline"], RunOptions(workers=1))
    path = root / "baseline" / "credit-reaudit.json"
    out: dict[str, Any] = {"baseline": baseline.report, "path": path, "specs": specs}
    for name in ("female_only", "retrain", "fixed", "small"):
        out[name] = run_audit(specs[name], RunOptions(workers=1, baseline=path)).report
    return out


def _entries(report: Any, scan_id: str) -> list[Any]:
    return [e for e in report.baseline.entries if e.scan_id == scan_id]


@pytest.mark.slow
def test_the_baseline_finds_both_injected_biases(reaudit: dict[str, Any]) -> None:
    fpr, calibration = reaudit["baseline"].scans
    assert fpr.findings[0].subgroup == FPR_GROUP and fpr.findings[0].significant
    assert calibration.findings[0].subgroup == CAL_GROUP and calibration.findings[0].significant


def test_a_untouched_finding_persists_with_the_same_rates(reaudit: dict[str, Any]) -> None:
    """(a) new predictions for female rows only: the male finding persists, same rates."""
    report = reaudit["female_only"]
    assert report.baseline.method == "retest"
    (entry,) = _entries(report, "fpr")
    assert entry.label == "persists"
    assert entry.after.subgroup == FPR_GROUP
    assert entry.after.rate == entry.before.rate  # byte-identical predictions, same rows
    assert entry.after.p_value < 0.05
    assert report.baseline.counts["resolved"] == 0 and report.baseline.counts["new"] == 0


@pytest.mark.slow
def test_b_retrain_with_the_same_biases_is_not_new(reaudit: dict[str, Any]) -> None:
    """(b) a retrain with another seed: zero new, so fail_on new_significant passes."""
    report = reaudit["retrain"]
    assert report.baseline.counts["new"] == 0
    assert report.baseline.counts["persists"] == 2
    assert report.verdict.significant_findings == 2
    assert report.verdict.exit_code == ExitCode.OK


def test_c_removed_bias_is_resolved_with_power(reaudit: dict[str, Any]) -> None:
    """(c) the biases removed: resolved, with power >= 0.8 to detect the baseline effect."""
    report = reaudit["fixed"]
    for scan_id in ("fpr", "calibration"):
        (entry,) = _entries(report, scan_id)
        assert entry.label == "resolved", entry
        assert entry.power is not None and entry.power >= 0.8
        assert entry.after.p_value > 0.05
    fpr = _entries(report, "fpr")[0]
    assert fpr.after.rate < fpr.before.rate  # the effect moved toward zero


def test_d_too_small_a_sample_is_inconclusive(reaudit: dict[str, Any]) -> None:
    """(d) 250 rows: not significant, but underpowered: inconclusive, never resolved."""
    report = reaudit["small"]
    assert report.baseline.counts["resolved"] == 0
    for scan_id in ("fpr", "calibration"):
        (entry,) = _entries(report, scan_id)
        assert entry.label == "inconclusive"
        assert entry.power is not None and entry.power < 0.8
        assert "power" in entry.reason


def test_persisting_or_new_fails_on_a_persisting_finding(reaudit: dict[str, Any]) -> None:
    spec = reaudit["specs"]["retrain"]
    text = spec.read_text(encoding="utf-8").replace("new_significant", "persisting_or_new")
    gated = spec.with_name("retrain-strict.audit.yaml")
    gated.write_text(text, encoding="utf-8")
    report = run_audit(gated, RunOptions(workers=1, baseline=reaudit["path"], write=False)).report
    assert report.baseline.counts["persists"] == 2
    assert report.verdict.exit_code == ExitCode.FINDINGS


def test_diff_reuses_the_runs_retest(reaudit: dict[str, Any]) -> None:
    from fairscan.run.reports import diff_reports

    root = reaudit["path"].parent.parent
    _, comparison = diff_reports(reaudit["path"], root / "fixed" / "credit-reaudit.json")
    assert comparison.method == "retest" and comparison.counts["resolved"] == 2


def test_bin_edges_missing_from_the_baseline_make_it_inconclusive(
    reaudit: dict[str, Any], tmp_path: Path
) -> None:
    """A baseline finding on a discretised attribute whose edges the baseline does not record
    (a report made before `bins`): inconclusive with the reason, never a traceback."""
    import polars as pl

    data = pl.read_csv(reaudit["specs"]["baseline"].with_suffix("").with_suffix(".csv"))
    data = data.with_columns(age=pl.col("age_group").str.slice(0, 2).cast(pl.Int64))
    csv = tmp_path / "binned.csv"
    data.write_csv(csv)
    spec = tmp_path / "binned.audit.yaml"
    spec.write_text(
        f"""\
version: 1
name: binned
data: {{path: {csv.name}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, education, age]
discretize: {{age: {{edges: [26, 41]}}}}
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 10, subgroups: ["age < 26"]}}
significance: {{replicates: 19, seed: 1}}
output: {{dir: out, formats: [json]}}
""",
        encoding="utf-8",
    )
    first = run_audit(spec, RunOptions(workers=1)).report
    assert first.bins is not None and "age" in first.bins
    old = json.loads((tmp_path / "out" / "binned.json").read_text(encoding="utf-8"))
    old["scans"][0]["findings"][0]["significant"] = True  # make it a baseline finding
    del old["bins"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    report = run_audit(spec, RunOptions(workers=1, baseline=path, write=False)).report
    (entry,) = _entries(report, "fpr")
    assert entry.label == "inconclusive" and "no bin edges" in entry.reason
    # edges recorded but different from this run's: inconclusive, with the edges to pin
    old["bins"] = {"age": [18.0, 30.0, 41.0, 61.0]}
    path.write_text(json.dumps(old), encoding="utf-8")
    report = run_audit(spec, RunOptions(workers=1, baseline=path, write=False)).report
    (entry,) = _entries(report, "fpr")
    assert entry.label == "inconclusive" and "bin edges of age differ" in entry.reason
    assert "edges: [30, 41]" in entry.reason


def test_a_baseline_of_another_audit_is_refused(reaudit: dict[str, Any], tmp_path: Path) -> None:
    from fairscan.errors import DataError

    old = json.loads(reaudit["path"].read_text(encoding="utf-8"))
    old["name"] = "another-audit"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    with pytest.raises(DataError, match="another-audit"):
        run_audit(reaudit["specs"]["retrain"], RunOptions(workers=1, baseline=path, write=False))


def _diff(*args: str | Path, code: int) -> Any:
    from typer.testing import CliRunner

    from fairscan.cli import app

    result = CliRunner().invoke(app, ["diff", *map(str, args)])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result


def test_diff_with_data_retests_two_plain_reports(reaudit: dict[str, Any], tmp_path: Path) -> None:
    """`audit diff OLD NEW --data FILE`: NEW run without --baseline, re-tested on its data."""
    spec = reaudit["specs"]["fixed"]
    plain = run_audit(spec, RunOptions(workers=1, out_dir=tmp_path / "plain")).report
    assert plain.baseline is None
    new = tmp_path / "plain" / "credit-reaudit.json"
    csv = spec.with_suffix("").with_suffix(".csv")
    out = _diff(reaudit["path"], new, "--data", csv, code=0)
    assert "| **resolved** | `fpr`" in out.stdout
    # without the data, no re-test: never resolved
    out = _diff(reaudit["path"], new, code=0)
    assert "**inconclusive**" in out.stdout and "**resolved**" not in out.stdout
    # another file than NEW's data: exit 2, naming --data
    other = spec.with_name("retrain.csv")
    out = _diff(reaudit["path"], new, "--data", other, code=2)
    assert "--data" in out.stderr and "SHA-256" in out.stderr
