"""The filter grammar compiled to SQL (fairscan.data.filter_sql) keeps the rows the polars
compiler keeps, in DuckDB and SQLite; quantile edges computed in the engine are the in-memory
ones; a filter error reads as for a file."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from lazy_import import lazy

from fairscan.data.discretize import quantile_edges
from fairscan.data.filter_compile import filter_expression
from fairscan.data.filter_sql import filter_ibis
from fairscan.data.pushdown import DuckDBRelation, IbisRelation, PushdownSource, _quantile_edges
from fairscan.errors import SpecError

ibis = lazy("ibis", reason="Ibis (fairscan[sql]) is not installed")
duckdb = lazy("duckdb")

FILTERS = [
    "x >= 0.25",
    "x > 0.25 AND name != 'b'",
    "NOT (x < 0.5 OR flag)",
    "name IN ('a', 'c')",
    "name NOT IN ('a')",
    "n BETWEEN 2 AND 5",
    "n NOT BETWEEN 2 AND 5",
    "name IS NULL",
    "x IS NOT NULL AND name LIKE 'a%'",
    "name NOT LIKE '_b'",
    "day >= '2024-03-01'",
    "day BETWEEN '2024-01-15' AND '2024-04-01' OR n = 7",
    "flag = TRUE",
    "NOT flag",
    "x = n",
]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    names = rng.choice(["a", "b", "c", "ab", "bb", "cab", "Ab", "A"], n).tolist()
    names = [None if i % 37 == 0 else v for i, v in enumerate(names)]
    x = rng.random(n).round(3).tolist()
    x = [None if i % 41 == 0 else v for i, v in enumerate(x)]
    return pl.DataFrame(
        {
            "name": names,
            "x": x,
            "n": rng.integers(0, 10, n),
            "flag": rng.random(n) < 0.4,
            "day": [
                dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 150, n)
            ],
        }
    )


def _sources(frame: pl.DataFrame, folder: Path) -> dict[str, Any]:
    con = duckdb.connect()
    con.execute("create table t as select * from frame")
    path = folder / "t.sqlite"
    lite = sqlite3.connect(path)
    lite.execute("create table t (name text, x real, n integer, flag boolean, day date)")
    lite.executemany(
        "insert into t values (?, ?, ?, ?, ?)",
        [(r[0], r[1], r[2], r[3], r[4].isoformat()) for r in frame.iter_rows()],
    )
    lite.commit()
    lite.close()
    return {
        "duckdb": DuckDBRelation(con.table("t")),
        "ibis-duckdb": IbisRelation(ibis.duckdb.connect().create_table("t", frame.to_arrow())),
        "sqlite": IbisRelation(ibis.sqlite.connect(path).table("t")),
    }


def test_filters_keep_the_same_rows(frame: pl.DataFrame, tmp_path: Path) -> None:
    sources = _sources(frame, tmp_path)
    for text in FILTERS:
        expected = frame.filter(filter_expression(text, frame.schema)).height
        for name, relation in sources.items():
            table = relation.table()
            schema = frame.schema  # the checks run against the data's types
            kept = table.filter(filter_ibis(text, table, schema))
            got = int(relation.execute(kept.aggregate(n=kept.count()))["n"][0])
            assert got == expected, (name, text)


def test_filter_errors_read_as_for_a_file(frame: pl.DataFrame) -> None:
    table = ibis.table(ibis.schema({"name": "string", "x": "float64"}), name="t")
    with pytest.raises(SpecError) as info:
        filter_ibis("nme = 'a'", table, pl.Schema({"name": pl.String, "x": pl.Float64}))
    assert "unknown column 'nme'" in str(info.value) and "did you mean 'name'" in str(info.value)


@pytest.mark.parametrize("quantiles", [2, 4, 7])
def test_quantile_edges_are_exact(frame: pl.DataFrame, tmp_path: Path, quantiles: int) -> None:
    sources = _sources(frame, tmp_path)
    expected = quantile_edges(frame["x"].drop_nulls().to_numpy(), quantiles)
    for relation in sources.values():
        source = PushdownSource(relation, "t", "data.table")
        got, method = _quantile_edges(source, relation.table(), "x", quantiles)
        assert got == tuple(expected) and method == "value counts"


@pytest.mark.parametrize("quantiles", [3, 7])
def test_quantile_edges_of_many_distinct_values_are_ranked(
    frame: pl.DataFrame, tmp_path: Path, quantiles: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond MAX_VALUE_COUNTS distinct values the edges are picked by ROW_NUMBER(): the same."""
    from fairscan.data import pushdown

    monkeypatch.setattr(pushdown, "MAX_VALUE_COUNTS", 5)
    expected = quantile_edges(frame["x"].drop_nulls().to_numpy(), quantiles)
    for relation in _sources(frame, tmp_path).values():
        source = PushdownSource(relation, "t", "data.table")
        got, method = _quantile_edges(source, relation.table(), "x", quantiles)
        assert got == tuple(expected) and method == "ROW_NUMBER"
