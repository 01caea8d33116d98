"""Counting covariate profiles (the Bias Scan's critical value, Theorem 2) by int64 keys, against
Python's set of the rows and ``np.unique(axis=0)`` (issue 36: that sort of whole rows took a
silent half-minute of a 10^6-row audit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fairscan.engine.cells import count_profiles


@pytest.mark.parametrize(
    "cardinality",
    [(2,), (2, 3, 4, 5, 6, 4, 3, 8), (1, 1, 7), (60_000,) * 5],  # the last overflows 2^62
)
def test_count_profiles_is_the_number_of_distinct_rows(cardinality: tuple[int, ...]) -> None:
    rng = np.random.default_rng(36)
    codes = np.column_stack([rng.integers(0, k, 5_000) for k in cardinality]).astype(np.int32)
    codes[:500] = codes[500:1000]  # repeated rows
    assert count_profiles(codes) == len({tuple(row) for row in codes.tolist()})
    assert count_profiles(codes) == np.unique(codes, axis=0).shape[0]


def test_no_rows_no_profiles() -> None:
    assert count_profiles(np.zeros((0, 3), np.int32)) == 0
    assert count_profiles(np.zeros((4, 0), np.int32)) == 1  # one empty profile, as np.unique


def test_the_critical_value_counts_the_profiles_of_the_data(tmp_path: Path) -> None:
    from fairscan.api import RunOptions, run_audit

    rng = np.random.default_rng(0)
    n = 2_000
    frame = pl.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.choice(["u", "v"], n),
            "c": rng.integers(0, 9, n).astype(str),
            "y": rng.integers(0, 2, n),
            "p": rng.uniform(0.2, 0.8, n),
        }
    )
    frame.write_csv(tmp_path / "d.csv")
    spec = tmp_path / "d.audit.yaml"
    spec.write_text(
        "version: 1\nname: profiles\ndata: {path: d.csv}\n"
        "columns: {outcome: y, prediction: p}\nattributes: [a, b, c]\n"
        "scans:\n  - {id: bias, type: bias_scan, direction: negative, penalty: 0}\n"
        "significance: {replicates: 0}\n",
        encoding="utf-8",
    )
    outcome = run_audit(spec, RunOptions(write=False, workers=1))
    profiles = frame.select("a", "b", "c").unique().height
    assert outcome.report.scans[0].detail["critical_value"]["profiles"] == profiles
