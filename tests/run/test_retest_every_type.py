"""Baseline re-tests for the scan types beyond fpr/tpr/bias (issue 26): ijdi_scan, cbs, subroc
and shift re-test each significant baseline finding on new data as a fixed subgroup, with the
power to detect the baseline effect; flag reads its flagged group again in the new run (its
own, unadjusted p-value and a normal-approximation power); persists / resolved / inconclusive
as for the MDSS scans.

The data: one subgroup (g1 = a and g2 = x) whose negatives are flagged high risk more often (an
FPR bias, for ijdi/cbs/shift) and whose scores carry no information (an AUC bias, for subroc),
in a baseline and a retrain; a fixed version without either bias; a small sample of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.run.execute import run_audit
from fairscan.run.options import RunOptions

GROUP = {"g1": ["a"], "g2": ["x"]}
CBS_GROUP = {"g1": ["a"]}  # within the protected class g2 = x

SCANS: list[dict[str, Any]] = [
    {"id": "ijdi", "type": "ijdi_scan", "lambda": 0, "penalty": 1, "restarts": 10},
    {
        "id": "cbs",
        "type": "cbs",
        "protected": {"column": "g2", "value": "x"},
        "metric": "fpr",
        "direction": "positive",
        "restarts": 10,
        "model_attributes": ["g1", "g3"],
    },
    {
        "id": "subroc",
        "type": "subroc",
        "max_length": 2,
        "min_cover": 50,
        "top_k": 1,
        "candidates": 5,
        "significance": {"subsets": 199},
    },
    {
        "id": "shift",
        "type": "shift",
        "metric": "fpr",
        "features": ["income"],
        "bootstrap": 199,
        "subgroups": [GROUP],
    },
    {
        "id": "flag",
        "type": "flag",
        "metric": "fpr",
        "groups": {"attributes": ["g1", "g2"], "min_size": 30},
        "tolerance": 0.02,
        "bootstrap": 199,
    },
]


def table(seed: int, biased: bool, n: int = 6000) -> pl.DataFrame:
    rng = np.random.default_rng(20261126)  # the applicants: the same in every version
    g1 = rng.choice(["a", "b", "c"], n)
    g2 = rng.choice(["x", "y"], n)
    g3 = rng.choice(["u", "v"], n)
    income = rng.normal(30.0, 8.0, n)
    y = (rng.random(n) < 0.3).astype(np.int64)
    model = np.random.default_rng(seed)  # the model version
    score = 1.0 / (1.0 + np.exp(-(2.5 * (y - 0.5) + model.normal(0.0, 1.0, n))))
    flag = 0.1 + 0.6 * y
    if biased:
        inside = (g1 == "a") & (g2 == "x")
        flag = flag + 0.2 * inside
        score = np.where(inside, model.random(n), score)
    high_risk = (model.random(n) < flag).astype(np.int64)
    return pl.DataFrame(
        {
            "g1": g1,
            "g2": g2,
            "g3": g3,
            "income": income,
            "y": y,
            "score": score.round(6),
            "high_risk": high_risk,
        }
    )


def _spec(root: Path, name: str, data: pl.DataFrame) -> Path:
    csv = root / f"{name}.csv"
    data.write_csv(csv)
    spec = {
        "version": 1,
        "name": "every-type-retest",
        "data": {"path": csv.name},
        "columns": {"outcome": "y", "prediction": "score", "recommendation": "high_risk"},
        "attributes": ["g1", "g2", "g3"],
        "scans": SCANS,
        "significance": {"replicates": 99, "alpha": 0.05, "seed": 3, "workers": 1},
        "output": {"dir": name, "formats": ["json"]},
        "gate": {"fail_on": "new_significant"},
    }
    path = root / f"{name}.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("every-type")
    baseline = run_audit(_spec(root, "baseline", table(1, True)), RunOptions(workers=1))
    path = root / "baseline" / "every-type-retest.json"
    out: dict[str, Any] = {"baseline": baseline.report, "root": root}
    fixed = table(3, False)
    versions = {
        "retrain": table(2, True),
        "fixed": fixed,
        "small": fixed[np.sort(np.random.default_rng(4).choice(fixed.height, 40, replace=False))],
    }
    for name, data in versions.items():
        spec = _spec(root, name, data)
        out[name] = run_audit(spec, RunOptions(workers=1, baseline=path)).report
    return out


def _entry(report: Any, scan_id: str) -> Any:
    entries = [e for e in report.baseline.entries if e.scan_id == scan_id and e.before]
    if scan_id == "flag":  # every flagged group is re-tested: the injected one here
        entries = [e for e in entries if e.before.subgroup == GROUP]
    assert len(entries) == 1, entries
    return entries[0]


TYPES = ["ijdi", "cbs", "subroc", "shift", "flag"]


@pytest.mark.slow
@pytest.mark.parametrize("scan_id", TYPES)
def test_the_baseline_finds_the_injected_subgroup(runs: dict[str, Any], scan_id: str) -> None:
    scan = next(s for s in runs["baseline"].scans if s.id == scan_id)
    assert scan.status == "significant", scan.error
    top = scan.findings[0]
    if scan_id == "subroc":  # its size weight prefers the generalisation g1 = a
        assert top.subgroup is not None and top.subgroup.get("g1") == ["a"]
    else:
        assert top.subgroup == (CBS_GROUP if scan_id == "cbs" else GROUP)
    assert top.significant is True


@pytest.mark.slow
@pytest.mark.parametrize("scan_id", TYPES)
def test_a_retrain_with_the_same_bias_persists(runs: dict[str, Any], scan_id: str) -> None:
    report = runs["retrain"]
    assert report.baseline.method == "retest"
    entry = _entry(report, scan_id)
    assert entry.label == "persists", entry
    assert entry.after.p_value <= 0.05
    assert report.baseline.counts["new"] == 0
    assert report.verdict.exit_code == 0  # fail_on new_significant: nothing new


@pytest.mark.parametrize("scan_id", TYPES)
def test_the_removed_bias_is_resolved_with_power(runs: dict[str, Any], scan_id: str) -> None:
    entry = _entry(runs["fixed"], scan_id)
    assert entry.label == "resolved", entry
    assert entry.power is not None and entry.power >= 0.8
    assert entry.after.p_value > 0.05


@pytest.mark.parametrize("scan_id", TYPES)
def test_a_small_sample_is_inconclusive(runs: dict[str, Any], scan_id: str) -> None:
    """40 rows: not significant, never resolved (underpowered, or not re-testable)."""
    entry = _entry(runs["small"], scan_id)
    assert entry.label == "inconclusive", entry
    assert entry.reason
    assert entry.power is None or entry.power < 0.8


def test_the_retest_compares_the_baseline_subgroup_itself(runs: dict[str, Any]) -> None:
    for scan_id in TYPES:
        entry = _entry(runs["fixed"], scan_id)
        assert entry.after is not None and entry.similarity == 1.0
        assert entry.after.subgroup == entry.before.subgroup


@pytest.mark.parametrize(
    ("side", "gap", "tolerance"),
    [("above", 0.1, 0.02), ("below", -0.1, -0.02), ("two-sided", -0.1, 0.02)],
)
def test_flag_power_is_the_one_sided_normal_power(side: str, gap: float, tolerance: float) -> None:
    from scipy.stats import norm

    from fairscan.scans.certification.retest import _power

    scale, alpha = 0.04, 0.05
    shift = abs(gap) - abs(tolerance)  # distance past the tolerance on the flagged side
    want = norm.sf(norm.isf(alpha) - shift / scale)
    assert _power(gap, tolerance, scale, side, alpha) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("scan_id", ["cbs", "subroc"])  # one generic path; cbs matches by class
def test_a_baseline_value_unknown_now_is_inconclusive_with_the_reason(
    runs: dict[str, Any], tmp_path: Path, scan_id: str
) -> None:
    """A baseline subgroup naming a value the new data lacks: inconclusive with the reason,
    never a traceback; the other scans are re-tested as usual."""
    import json

    old = json.loads(runs["baseline"].model_dump_json())
    scan = next(s for s in old["scans"] if s["id"] == scan_id)
    scan["findings"][0]["subgroup"] = {"g1": ["zzz"]}
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    spec = _spec(tmp_path, "retrain", table(2, True))
    report = run_audit(spec, RunOptions(workers=1, baseline=path, write=False)).report
    entry = next(
        e for e in report.baseline.entries if e.scan_id == scan_id and e.before is not None
    )
    assert entry.label == "inconclusive"
    assert "'zzz' is not a value of g1" in entry.reason
    others = [e for e in report.baseline.entries if e.scan_id != scan_id and e.before]
    assert others and all(e.label == "persists" for e in others)


def test_diff_with_data_retests_every_type(runs: dict[str, Any]) -> None:
    """`audit diff OLD NEW --data FILE` re-tests with NEW's resolved spec (a CBS spec with
    `metric:` reloads from it) and labels every type as the run did."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    root = runs["root"]
    old, new = (root / name / "every-type-retest.json" for name in ("baseline", "fixed"))
    result = CliRunner().invoke(
        app, ["diff", str(old), str(new), "--data", str(root / "fixed.csv")]
    )
    assert result.exit_code == 0, result.output
    for scan_id in TYPES:
        assert f"| **resolved** | `{scan_id}` |" in result.stdout
