"""The `subroc` scan through the spec layer and the library API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.api import RunOptions, run_audit
from fairscan.errors import FairscanError
from fairscan.report.markdown import render_markdown

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "adult"


def _data(tmp_path: Path, n: int = 1200, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c"], n)
    color = rng.choice(["red", "blue"], n)
    age = rng.integers(18, 80, n).astype(float)
    y = (rng.random(n) < 0.5).astype(int)
    score = rng.normal(2.0 * y, 1.0)
    bad = group == "c"  # the classifier is uninformative for group c
    score[bad] = rng.normal(0, 1, bad.sum())
    split = np.where(rng.random(n) < 0.5, "s", "v")
    path = tmp_path / "d.csv"
    pl.DataFrame(
        {"y": y, "score": score * 3 - 1, "group": group, "color": color, "age": age, "part": split}
    ).write_csv(path)
    return path


def _spec(tmp_path: Path, scan: dict, **top) -> Path:
    spec = {
        "version": 1,
        "name": "t",
        "data": {"path": "d.csv"},
        "columns": {"outcome": "y", "prediction": "score"},
        "attributes": ["group", "color", "age"],
        "discretize": {"age": {"quantiles": 4}},
        "scans": [{"id": "s", "type": "subroc", **scan}],
        "significance": {"seed": 1, "workers": 1},
        **top,
    }
    path = tmp_path / "x.audit.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run(path: Path):
    return run_audit(path, RunOptions(write=False)).report


def test_finds_the_uninformative_group_with_a_split_column(tmp_path):
    _data(tmp_path)
    report = _run(
        _spec(
            tmp_path,
            {
                "split": {"column": "part", "search": "s", "validation": "v"},
                # BY over k' = 10 with p >= 1/2001 can reach 0.015 < 0.05
                "significance": {"subsets": 2000},
                "candidates": 10,
            },
        )
    )
    scan = report.scans[0]
    assert scan.status == "significant", scan
    res = scan.subroc
    top = next(p for p in res.patterns if p.reported)
    assert top.subgroup == {"group": ["c"]}
    assert top.search.measure < 0.7 < res.overall_search
    assert top.significant and 0 < top.p_value <= top.adjusted_p_value <= 1
    assert res.search_rows + res.validation_rows == 1200
    assert res.candidates_evaluated > 0
    md = render_markdown(report)
    assert "group = c" in md and "candidate patterns evaluated" in md


def test_fraction_split_is_stratified_and_seeded(tmp_path):
    _data(tmp_path)
    spec = _spec(tmp_path, {"split": {"fraction": 0.3}, "significance": {"subsets": 50}})
    a, b = _run(spec).scans[0], _run(spec).scans[0]
    assert a.subroc.search_rows == pytest.approx(360, abs=2)
    assert [p.p_value for p in a.subroc.patterns] == [p.p_value for p in b.subroc.patterns]


def test_default_split_and_other_measures(tmp_path):
    _data(tmp_path)
    for measure in ("pr_auc", "ranking_loss"):
        scan = _run(_spec(tmp_path, {"measure": measure, "significance": {"subsets": 50}})).scans[0]
        assert scan.status != "error", scan.error
        assert scan.subroc.search_rows == pytest.approx(600, abs=2)
        if measure == "pr_auc":  # ARL grows with the negatives, so small groups rarely exceed it
            assert scan.subroc.patterns[0].subgroup == {"group": ["c"]}


def test_missing_split_value_is_a_clear_error(tmp_path):
    _data(tmp_path)
    scan = _run(
        _spec(tmp_path, {"split": {"column": "part", "search": "s", "validation": "nope"}})
    ).scans[0]
    assert scan.status == "error"
    assert "no row has part = 'nope'" in scan.error and "values present: s, v" in scan.error


def test_min_cover_larger_than_data(tmp_path):
    _data(tmp_path)
    scan = _run(_spec(tmp_path, {"min_cover": 100_000})).scans[0]
    assert scan.status == "no_finding"
    assert any("min_cover" in w for w in scan.warnings)


def test_one_class_search_set_is_an_error(tmp_path):
    path = _data(tmp_path)
    frame = pl.read_csv(path)
    frame = frame.with_columns(
        pl.when(pl.col("part") == "s").then(1).otherwise(pl.col("y")).alias("y")
    )
    frame.write_csv(path)
    scan = _run(
        _spec(tmp_path, {"split": {"column": "part", "search": "s", "validation": "v"}})
    ).scans[0]
    assert scan.status == "error" and "roc_auc is undefined" in scan.error


@pytest.mark.parametrize(
    "bad",
    [
        {"split": {"column": "part", "search": "s"}},
        {"split": {"fraction": 0.5, "column": "part"}},
        {"split": {"fraction": 1.5}},
        {"top_k": 10, "candidates": 5},
        {"measure": "accuracy"},
        {"significance": {"correction": "holm"}},
    ],
)
def test_spec_errors(tmp_path, bad):
    _data(tmp_path)
    with pytest.raises(FairscanError):
        _run(_spec(tmp_path, bad))


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/adult is not available")
def test_adult_audit_spec(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "adult.csv"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "prepare_adult.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    spec = yaml.safe_load((ROOT / "audits" / "adult-subroc.audit.yaml").read_text())
    spec["data"]["path"] = str(out)
    spec["scans"][0]["significance"]["subsets"] = 100
    path = tmp_path / "a.audit.yaml"
    path.write_text(yaml.safe_dump(spec))
    scan = _run(path).scans[0]
    assert scan.subroc.search_rows == 15074 and scan.subroc.validation_rows == 15074
    assert scan.subroc.overall_search == pytest.approx(0.921293, abs=1e-6)
    assert scan.subroc.overall_validation == pytest.approx(0.920672, abs=1e-6)
    top = scan.subroc.patterns[0]
    assert top.subgroup == {"marital-status": ["Married-civ-spouse"]}
