"""A streamed dataset gives the same report whichever engine prepares it (issue 38): DuckDB
through the push-down (``fairscan[sql]`` installed) or polars' streaming engine (a base install,
without Ibis and DuckDB), and both the same as reading the rows into memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from fairscan import api
from fairscan.data import engine_scan

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
# written by polars 1.44.2: a float column with NaN and null, whose Parquet statistics made
# DuckDB skip every row group on any filter of it (income all "(missing)" when streamed)
POLARS_1_PARQUET = Path(__file__).parent / "files" / "nan_income_polars_1.44.parquet"

SPEC = """\
version: 1
name: parity
data:
  path: {path}
  streaming: {streaming}
{extra}columns:
  outcome: default
  prediction: score
  recommendation: high_risk
attributes: [sex, ethnicity, age_group, {attributes}income]
discretize:
  income: {{quantiles: 4}}
scans:
  - {{id: fpr, type: fpr_scan, restarts: 10}}
  - {{id: calibration, type: bias_scan, direction: negative, restarts: 5}}
significance: {{replicates: 9, seed: 11, workers: 1}}
"""
# what differs between runs and engines: timings, versions, the engine's own provenance
RUN_KEYS = {"timing", "utc_time", "finished_utc_time", "tool_version", "environment"}
ENGINE_KEYS = {"data_source", "data_sha256"}
# the two specs differ in data.streaming only
SPEC_KEYS = {"spec_path", "spec_sha256", "parameters"}


def _comparable(node: Any, drop: set[str]) -> Any:
    if isinstance(node, dict):
        return {
            k: _comparable(v, drop)
            for k, v in node.items()
            if k not in drop and not k.endswith("_seconds")
        }
    if isinstance(node, list):
        return [_comparable(v, drop) for v in node]
    return node


def _report(
    folder: Path, path: Path, streaming: bool, extra: str = "", attributes: str = ""
) -> Any:
    spec = folder / f"parity-{streaming}.audit.yaml"
    text = SPEC.format(
        path=path, streaming=str(streaming).lower(), extra=extra, attributes=attributes
    )
    spec.write_text(text)
    report = api.run_audit(spec, api.RunOptions(write=False)).report
    return json.loads(report.model_dump_json())


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeded: null attribute values, NaN and null in the discretised column, padded text."""
    credit = pl.read_csv(CREDIT)
    rng = np.random.default_rng(38)
    holes = pl.Series(rng.random(credit.height) < 0.05)
    nan = pl.Series(rng.random(credit.height) < 0.03)
    frame = credit.with_columns(
        pl.when(holes).then(None).otherwise(pl.col("region")).alias("region"),
        pl.when(nan)
        .then(float("nan"))
        .when(holes)
        .then(None)
        .otherwise(pl.col("income").cast(pl.Float64))
        .alias("income"),
        pl.when(pl.col("sex") == "Male").then(pl.lit(" Male ")).otherwise("sex").alias("sex"),
    )
    folder = tmp_path_factory.mktemp("parity")
    frame.head(6000).write_parquet(folder / "part-0.parquet")
    frame.tail(frame.height - 6000).write_parquet(folder / "part-1.parquet")
    return folder


@pytest.mark.parametrize("filtered", [False, True])
def test_polars_stream_equals_duckdb_push_down(
    tmp_path: Path, messy: Path, monkeypatch: pytest.MonkeyPatch, filtered: bool
) -> None:
    """The same report, bit for bit, from DuckDB (Ibis push-down) and from polars' streaming
    engine, which a base install uses; the data source names the engine that ran."""
    pytest.importorskip("ibis")
    extra = "  filter: \"sex = 'Male' OR region = 'East'\"\n" if filtered else ""
    duckdb = _report(tmp_path, messy, True, extra, "region, ")
    monkeypatch.setattr(engine_scan, "available", lambda: False)
    polars = _report(tmp_path, messy, True, extra, "region, ")
    assert duckdb["provenance"]["data_source"]["engine"] == "duckdb"
    assert polars["provenance"]["data_source"]["engine"] == "polars"
    assert polars["provenance"]["data_source"]["files"] == 2
    drop = RUN_KEYS | {"data_source"}
    assert _comparable(polars, drop) == _comparable(duckdb, drop)
    assert any("income" in w and "(missing)" in w for w in polars["data_warnings"])


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_parquet_whose_statistics_hold_nan_streams_like_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """A Parquet file polars 1.x wrote (NaN in a float column's statistics): streamed, its
    discretised column gets the bins it gets in memory, not every row '(missing)'."""
    if engine == "duckdb":
        pytest.importorskip("ibis")
    else:
        monkeypatch.setattr(engine_scan, "available", lambda: False)
    streamed = _report(tmp_path, POLARS_1_PARQUET, True)
    memory = _report(tmp_path, POLARS_1_PARQUET, False)
    assert streamed["provenance"]["data_source"]["engine"] == engine
    drop = RUN_KEYS | ENGINE_KEYS | SPEC_KEYS
    assert _comparable(streamed, drop) == _comparable(memory, drop)
    assert not any("single value" in w for w in streamed["data_warnings"])
