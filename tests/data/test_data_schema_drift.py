"""Streamed folders accept harmless schema drift between their parts (issue 24): a column
stored as int32 in one file and int64 in another (float32/float64 too) reads as the wider type
and gives the same audit as the data in one file."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from fairscan import api

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
version: 1
name: drift
data: {{path: '{data}'}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: f, type: fpr_scan, penalty: 1, restarts: 5}}
significance: {{replicates: 0, seed: 0, workers: 1}}
output: {{dir: out, formats: [json]}}
"""


def _summary(tmp_path: Path, data: Path) -> list[tuple[str, float | None]]:
    spec = tmp_path / f"{data.name}.audit.yaml"
    spec.write_text(SPEC.format(data=data.as_posix()), encoding="utf-8")
    report = api.run_audit(spec, api.RunOptions(write=False)).report
    return [(f.label, f.statistic.value) for s in report.scans for f in s.findings]


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_int32_and_int64_parts_read_as_one_table(tmp_path: Path, fmt: str) -> None:
    frame = pl.read_csv(ROOT / "sample_data" / "credit.csv")
    folder = tmp_path / "parts"
    folder.mkdir()
    first = frame[:5000].with_columns(
        pl.col("default").cast(pl.Int32), pl.col("score").cast(pl.Float32)
    )
    second = frame[5000:].with_columns(pl.col("high_risk").cast(pl.Int32))
    for name, part in (("a", first), ("b", second)):
        if fmt == "parquet":
            part.write_parquet(folder / f"{name}.parquet")
        else:
            part.write_ipc(folder / f"{name}.arrow")
    whole = tmp_path / "whole.parquet"
    pl.concat(
        [
            first.cast({"default": pl.Int64, "score": pl.Float64}),
            second.cast({"high_risk": pl.Int64}),
        ]
    ).write_parquet(whole)
    assert _summary(tmp_path, folder) == _summary(tmp_path, whole)


@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
def test_text_parts_with_whole_numbers_in_one_and_decimals_in_another(
    tmp_path: Path, fmt: str
) -> None:
    """Each text part is typed from its own rows: a column of whole numbers in one part and
    decimals in the other (here the decisions, written 1.0 / 0.0 by another tool) reads as
    decimals (it failed for NDJSON: "cannot parse '1.0' (f64) as Int64"), as the same rows in
    one file do."""
    frame = pl.read_csv(ROOT / "sample_data" / "credit.csv")
    first = frame[:5000]
    second = frame[5000:].with_columns(pl.col("high_risk").cast(pl.Float64))
    folder = tmp_path / "parts"
    folder.mkdir()
    for name, part in (("a", first), ("b", second)):
        getattr(part, f"write_{fmt}")(folder / f"{name}.{fmt}")
    whole = tmp_path / "whole.parquet"
    pl.concat([first.cast({"high_risk": pl.Float64}), second]).write_parquet(whole)
    assert _summary(tmp_path, folder) == _summary(tmp_path, whole)
