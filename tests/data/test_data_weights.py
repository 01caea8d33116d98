"""columns.weight (issue 25): validation, fractional weights, and that weights are used.

The equivalence of integer weights with the row-replicated table over every registered scan
type is part of the contract test (tests/test_contract.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.api import RunOptions, run_audit
from fairscan.errors import DataError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data" / "credit.csv"


def _table(tmp_path: Path, weights: list[float | None] | np.ndarray, n: int = 1500) -> Path:
    frame = pl.read_csv(SAMPLE).head(n)
    w = np.resize(np.asarray(weights, dtype=object), n)
    path = tmp_path / "d.csv"
    frame.with_columns(pl.Series("w", list(w), dtype=pl.Float64, strict=False)).write_csv(path)
    return path


def _run(tmp_path: Path, data: Path, scan: dict, replicates: int = 9, weight: str | None = "w"):
    spec = {
        "version": 1,
        "name": "weights",
        "data": {"path": str(data)},
        "columns": {"outcome": "default", "prediction": "score", "recommendation": "high_risk"},
        "attributes": ["sex", "ethnicity", "age_group", "region"],
        "scans": [{"id": "s", **scan}],
        "significance": {"replicates": replicates, "seed": 0, "workers": 1},
    }
    if weight is not None:
        spec["columns"]["weight"] = weight
    path = tmp_path / "w.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return run_audit(path, RunOptions(write=False)).report


FPR = {"type": "fpr_scan", "restarts": 5}


def _close(a, b) -> None:
    """Equal, floats to 1e-12 relative (sums taken in another order)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-12, abs=1e-15)
    else:
        assert a == b


CERTIFY = {
    "type": "certify",
    "metric": "fpr",
    "groups": {"attributes": ["ethnicity"]},
    "bootstrap": 50,
}


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1, -1, 2], "500 negative value(s)"),
        ([1, None, 2], "500 missing values (null or NaN"),
        ([1, float("inf")], "infinite"),
        ([0], "is 0 on every row"),
    ],
)
def test_bad_weights_are_data_errors_naming_the_column(tmp_path, weights, message):
    data = _table(tmp_path, weights)
    with pytest.raises(DataError) as info:
        _run(tmp_path, data, FPR)
    text = str(info.value)
    assert "'w'" in text and "columns.weight" in text
    assert message in text


def test_a_text_weight_column_is_a_data_error(tmp_path):
    data = _table(tmp_path, [1])
    with pytest.raises(DataError) as info:
        _run(tmp_path, data, FPR, weight="sex")
    assert "weight column 'sex' must hold numbers" in str(info.value)


def test_weights_change_the_audit(tmp_path):
    data = _table(tmp_path, [1, 3, 0, 2])
    weighted = _run(tmp_path, data, FPR)
    plain = _run(tmp_path, data, FPR, weight=None)
    assert weighted.provenance.rows_after_filter == 1500 // 4 * 6
    assert plain.provenance.rows_after_filter == 1500
    assert weighted.scans[0].population.size != plain.scans[0].population.size


def test_fractional_weights(tmp_path):
    data = _table(tmp_path, [0.5, 1.5])
    # a scan that works on rows refuses them (never a silent unweighted run)
    scan = _run(tmp_path, data, CERTIFY).scans[0]
    assert scan.status == "error"
    assert "frequency weights only" in scan.error and "columns.weight" in scan.error
    # the aggregate scans score weighted counts; their null draws need whole numbers
    scan = _run(tmp_path, data, FPR).scans[0]
    assert scan.status == "error" and "per unit of weight" in scan.error
    halves = _run(tmp_path, data, FPR, replicates=0).scans[0]
    assert halves.status != "error", halves.error
    # scaling every weight by 2 gives whole numbers: the same subgroup, the statistic doubled
    doubled = _run(tmp_path, _table(tmp_path, [1, 3]), FPR, replicates=0).scans[0]
    (half,), (double,) = halves.findings, doubled.findings
    assert half.subgroup == double.subgroup
    assert half.effect.inside == pytest.approx(double.effect.inside, rel=1e-9)
    assert half.effect.reference == pytest.approx(double.effect.reference, rel=1e-9)


@pytest.mark.parametrize("scan", [FPR, CERTIFY])
def test_streamed_weights_equal_in_memory(tmp_path, scan):
    data = _table(tmp_path, [1, 3, 0, 2])
    in_memory = _run(tmp_path, data, scan)
    spec = yaml.safe_load((tmp_path / "w.audit.yaml").read_text())
    spec["data"]["streaming"] = True  # distinct rows with counts, times the weights
    (tmp_path / "w.audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    streamed = run_audit(tmp_path / "w.audit.yaml", RunOptions(write=False)).report
    a, b = (r.scans[0].model_dump(exclude={"timing"}) for r in (in_memory, streamed))
    _close(a, b)
    assert streamed.provenance.rows_after_filter == in_memory.provenance.rows_after_filter
