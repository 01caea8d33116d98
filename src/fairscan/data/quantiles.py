"""The one order-statistic rule of quantile bins, shared by every engine that bins a column
without holding it: polars' streaming (:mod:`fairscan.data.stream`) and the push-down into a
database or DuckDB (:mod:`fairscan.data.pushdown`). Both give the edges
:func:`fairscan.data.discretize.quantile_edges` gives in memory: the values at numpy's
``method="higher"`` ranks, duplicates collapsed."""

from __future__ import annotations

import numpy as np
import polars as pl

from fairscan.errors import DataError

# above this many distinct values, an engine finds the quantiles without a table of value counts
# (polars: a histogram pass; SQL: ROW_NUMBER())
MAX_VALUE_COUNTS = 1_000_000


def ranks(n: int, quantiles: int) -> np.ndarray:
    """0-based ranks of numpy's ``method="higher"`` quantiles at 0, 1/q, ..., 1 of ``n``
    values."""
    probs = np.linspace(0.0, 1.0, quantiles + 1)
    return np.ceil(probs * (n - 1)).astype(np.int64)


def order_statistics(counts: pl.DataFrame, at: np.ndarray) -> np.ndarray:
    """Values at ranks ``at`` of the sorted multiset given by (``v`` value, ``n`` count) rows."""
    table = counts.sort("v")
    values = table["v"].to_numpy()
    cumulative = np.cumsum(table["n"].to_numpy())
    return values[np.searchsorted(cumulative, at, side="right")]


def edges_from(values: np.ndarray) -> tuple[float, ...]:
    """The bin edges of order statistics ``values``: duplicates collapsed, as
    :func:`fairscan.data.discretize.quantile_edges` collapses them."""
    edges = np.unique(values)
    if edges.size == 1:
        return (float(edges[0]), float(edges[0]))
    return tuple(float(e) for e in edges)


def check_numeric(schema: pl.Schema, name: str) -> None:
    """A :class:`DataError` naming ``discretize.NAME`` for an attribute that is not a number."""
    dtype = schema[name]
    if dtype == pl.Boolean or not dtype.is_numeric():
        raise DataError(
            f"discretize applies to numeric columns; attribute {name!r} has type {dtype}",
            field=f"discretize.{name}",
            column=name,
            hint=f"remove the discretize.{name} entry; non-numeric attributes are scanned by value",
        )
