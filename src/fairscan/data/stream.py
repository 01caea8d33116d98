"""Streaming a table slice by slice in polars: the uniform sample of a dataset
(``data.sample``) and tables aggregated in another engine (Dask, PySpark through narwhals).
Datasets and polars LazyFrames are streamed here too when DuckDB and Ibis (``fairscan[sql]``)
are not installed; otherwise they are aggregated in DuckDB, through the push-down path of
database tables (:mod:`fairscan.data.engine_scan`, :mod:`fairscan.data.pushdown`), which
reuses the order statistics and bin codes defined here.

The data is read in slices of :data:`SLICE_ROWS` rows (slice pushdown for Parquet and Arrow
IPC, batches for text formats); each slice is filtered, its discretised attributes are cut into
bins, and it is aggregated to its distinct rows with a count. The partial tables are merged as
they come, so peak memory is one slice plus the distinct rows (the cells of the scans, times the
role values), never the whole dataset. Quantile bins use exact quantiles, streamed: the value
counts of the column (merged per slice), or for columns with very many distinct values a
histogram pass followed by a pass that keeps only the values around each quantile.

``data.sample: {rows, seed}`` draws a uniform sample of the filtered rows (without replacement)
in two passes: count, then keep the drawn row numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from fairscan.data.discretize import DEFAULT_QUANTILES, explicit_edges
from fairscan.data.load import bytes_text, first_line
from fairscan.data.quantiles import (
    MAX_VALUE_COUNTS,
    check_numeric,
    edges_from,
    order_statistics,
    ranks,
)
from fairscan.data.table import Aggregation, raw_column
from fairscan.errors import DataError
from fairscan.spec.models import DiscretizeSpec

SLICE_ROWS = 2_000_000
WEIGHT_COLUMN = "__fairscan_rows__"
# merge the partial tables once they hold this many rows more than the merged table
MERGE_ROWS = 1_000_000
HISTOGRAM_BUCKETS = 4096
# the values kept around the quantiles in the histogram method, at most
MAX_QUANTILE_VALUES = 20_000_000

Progress = Callable[[int], None]


@dataclass(frozen=True)
class StreamQuery:
    """A lazily scanned table and what to read from it."""

    lazy: pl.LazyFrame
    sliceable: bool  # slice pushdown is cheap (Parquet, Arrow IPC, in-memory frames)
    columns: tuple[str, ...]  # the columns the spec uses
    filter: pl.Expr | None = None
    # text attributes stripped of surrounding whitespace before the filter (data.strip_whitespace)
    stripped: tuple[str, ...] = ()
    progress: Progress | None = None
    # a column counting the data rows each row stands for (a table aggregated where the data
    # lives, e.g. by DuckDB or Spark); None: one data row each
    weight: str | None = None

    def prepared(self, lazy: pl.LazyFrame) -> pl.LazyFrame:
        """Whitespace stripped, the filter applied, the used columns selected."""
        if self.stripped:
            lazy = lazy.with_columns(pl.col(c).str.strip_chars() for c in self.stripped)
        if self.filter is not None:
            lazy = lazy.filter(self.filter)
        return lazy.select([*self.columns, *([self.weight] if self.weight else [])])


def _read_error(exc: BaseException) -> DataError:
    return DataError(
        f"cannot read the data: {first_line(exc)}",
        field="data.path",
        hint="check that every file has the same columns and types, and for a URL the "
        "network and the credentials in the environment",
    )


def count_rows(lazy: pl.LazyFrame, weight: str | None = None) -> int:
    """Data rows of a table (the sum of its ``weight`` column when it has one)."""
    count = pl.len() if weight is None else pl.col(weight).sum()
    try:
        return int(lazy.select(count).collect(engine="streaming").item())
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _read_error(exc) from exc


def _frames(
    query: StreamQuery, n_rows: int, step: Callable[[pl.LazyFrame], pl.LazyFrame]
) -> Iterator[pl.DataFrame]:
    """``step`` applied to each filtered slice of the table, collected; a failing read (a
    corrupt file, a schema that differs between files, the network) is a DataError."""
    try:
        yield from _collected(query, n_rows, step)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _read_error(exc) from exc


def _collected(
    query: StreamQuery, n_rows: int, step: Callable[[pl.LazyFrame], pl.LazyFrame]
) -> Iterator[pl.DataFrame]:
    if query.weight is not None:  # aggregated where the data lives: small, in memory
        yield step(query.prepared(query.lazy)).collect()
        return
    if query.sliceable:
        for offset in range(0, n_rows, SLICE_ROWS):
            rows = min(SLICE_ROWS, n_rows - offset)
            yield step(query.prepared(query.lazy.slice(offset, rows))).collect()
            if query.progress is not None:
                query.progress(rows)
        return
    for batch in query.lazy.collect_batches(chunk_size=SLICE_ROWS):
        yield step(query.prepared(batch.lazy())).collect()
        if query.progress is not None:
            query.progress(batch.height)


def _merge(
    parts: Iterator[pl.DataFrame], keys: Sequence[str], weight: str, max_rows: int | None = None
) -> pl.DataFrame:
    """Sum ``weight`` over equal ``keys`` across partial tables, merging as they come."""
    merged: pl.DataFrame | None = None
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    for part in parts:
        pending.append(part)
        pending_rows += part.height
        if pending_rows > max(MERGE_ROWS, 0 if merged is None else merged.height):
            merged = _sum_by(([merged] if merged is not None else []) + pending, keys, weight)
            pending, pending_rows = [], 0
            if max_rows is not None and merged.height > max_rows:
                raise too_many_distinct(merged, max_rows)
    merged = _sum_by(([merged] if merged is not None else []) + pending, keys, weight)
    if max_rows is not None and merged.height > max_rows:
        raise too_many_distinct(merged, max_rows)
    return merged


def too_many_distinct(merged: pl.DataFrame, max_rows: int) -> DataError:
    return DataError(
        f"the data has more than {max_rows:,} distinct rows in the columns the audit uses "
        f"(so far {merged.height:,}, {bytes_text(merged.estimated_size())}): streaming it into "
        "cells does not shrink it (a continuous prediction or extra column makes rows "
        "distinct), and holding it would take more memory than is available",
        field="data.path",
        hint="audit a uniform sample of the rows: data: {sample: {rows: 1000000, seed: 0}}; "
        "or bin the continuous attributes with discretize",
    )


def _sum_by(frames: list[pl.DataFrame], keys: Sequence[str], weight: str) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    if not frames:
        return pl.DataFrame()
    stacked = pl.concat(frames, how="vertical_relaxed")
    return stacked.group_by(list(keys)).agg(pl.col(weight).sum())


# --- exact streamed quantiles ----------------------------------------------------------------


def _present(column: str) -> pl.Expr:
    x = pl.col(column).cast(pl.Float64)
    return x.filter(x.is_not_null() & ~x.is_nan())


def _present_mask(column: str) -> pl.Expr:
    x = pl.col(column).cast(pl.Float64)
    return x.is_not_null() & ~x.is_nan()


def _rows(query: StreamQuery) -> pl.Expr:
    """Data rows of a group: its length, or the sum of the weights of a weighted table."""
    return pl.len() if query.weight is None else pl.col(query.weight).sum()


def _present_rows(query: StreamQuery, column: str) -> pl.Expr:
    """Data rows with a value in ``column`` (not null, not NaN)."""
    x = pl.col(column).cast(pl.Float64)
    ok = x.is_not_null() & ~x.is_nan()
    if query.weight is None:
        return ok.sum()
    return pl.col(query.weight).filter(ok).sum()


def _value_counts(query: StreamQuery, n_rows: int, column: str) -> pl.DataFrame | None:
    """The column's (value, count) table over the filtered rows; None when it has more than
    :data:`MAX_VALUE_COUNTS` distinct values."""
    merged: pl.DataFrame | None = None
    pending: list[pl.DataFrame] = []
    for part in _frames(
        query,
        n_rows,
        lambda lf: (
            lf.filter(_present_mask(column))
            .group_by(pl.col(column).cast(pl.Float64).alias("v"))
            .agg(_rows(query).cast(pl.Int64).alias("n"))
        ),
    ):
        pending.append(part)
        if sum(p.height for p in pending) > MERGE_ROWS:
            merged = _sum_by(([merged] if merged is not None else []) + pending, ["v"], "n")
            pending = []
            if merged.height > MAX_VALUE_COUNTS:
                return None
    merged = _sum_by(([merged] if merged is not None else []) + pending, ["v"], "n")
    return merged if merged.height <= MAX_VALUE_COUNTS else None


def _histogram_statistics(
    query: StreamQuery, n_rows: int, column: str, at: np.ndarray
) -> np.ndarray:
    """Order statistics of a column with very many distinct values: a histogram pass finds the
    bucket of each rank in ``at``, a second pass keeps the values of those buckets only."""
    bounds = pl.concat(
        list(
            _frames(
                query,
                n_rows,
                lambda lf: lf.select(_present(column).min().alias("lo"), _present(column).max()),
            )
        )
    )
    lo, hi = float(bounds["lo"].min()), float(bounds[column].max())  # type: ignore[arg-type]
    width = (hi - lo) / HISTOGRAM_BUCKETS or 1.0

    def bucket() -> pl.Expr:
        b = ((pl.col(column).cast(pl.Float64) - lo) / width).floor().cast(pl.Int64)
        return b.clip(0, HISTOGRAM_BUCKETS - 1).alias("b")

    histogram = _merge(
        _frames(
            query,
            n_rows,
            lambda lf: (
                lf.filter(_present_mask(column))
                .group_by(bucket())
                .agg(_rows(query).cast(pl.Int64).alias("len"))
            ),
        ),
        ["b"],
        "len",
    ).sort("b")
    cumulative = np.cumsum(histogram["len"].to_numpy())
    hit = np.searchsorted(cumulative, at, side="right")
    wanted = np.unique(histogram["b"].to_numpy()[hit])
    below = np.concatenate([[0], cumulative])[hit]
    if int(histogram.filter(pl.col("b").is_in(wanted.tolist()))["len"].sum()) > MAX_QUANTILE_VALUES:
        raise DataError(
            f"column {column!r} has too many equal values around its quantiles to bin it "
            "exactly while streaming",
            field=f"discretize.{column}",
            column=column,
            hint=f"give explicit edges instead: discretize: {{{column}: {{edges: [...]}}}}",
        )
    kept = pl.concat(
        list(
            _frames(
                query,
                n_rows,
                lambda lf: (
                    lf.filter(_present_mask(column))
                    .select(
                        pl.col(column).cast(pl.Float64).alias("v"),
                        bucket(),
                        (pl.lit(1, pl.Int64) if query.weight is None else pl.col(query.weight))
                        .cast(pl.Int64)
                        .alias("n"),
                    )
                    .filter(pl.col("b").is_in(wanted.tolist()))
                ),
            )
        )
    )
    out = np.empty(len(at))
    for i, (b, offset) in enumerate(zip(histogram["b"].to_numpy()[hit], below, strict=True)):
        counts = kept.filter(pl.col("b") == b).group_by("v").agg(pl.col("n").sum())
        out[i] = order_statistics(counts, np.array([at[i] - offset]))[0]
    return out


def streamed_quantile_edges(
    query: StreamQuery, n_rows: int, column: str, quantiles: int
) -> tuple[float, ...]:
    """The edges :func:`~fairscan.data.discretize.quantile_edges` gives on the filtered
    column, computed without holding the column in memory."""
    counts = _value_counts(query, n_rows, column)
    if counts is not None:
        n = int(counts["n"].sum()) if counts.height else 0
        if n == 0:
            return ()
        return edges_from(order_statistics(counts, ranks(n, quantiles)))
    n = sum(
        int(f.item() or 0)
        for f in _frames(query, n_rows, lambda lf: lf.select(_present_rows(query, column)))
    )
    return edges_from(_histogram_statistics(query, n_rows, column, ranks(n, quantiles)))


def bin_codes(column: str, edges: Sequence[float]) -> pl.Expr:
    """Bin code of each value, as :func:`~fairscan.data.discretize.apply_edges` gives it
    (values beyond the outer edges go to the end bins); null for null and NaN."""
    x = pl.col(column).cast(pl.Float64)
    inner = list(edges[1:-1])
    code = pl.sum_horizontal([(x >= e).cast(pl.Int32) for e in inner]) if inner else pl.lit(0)
    return pl.when(x.is_null() | x.is_nan()).then(None).otherwise(code).cast(pl.Int32).alias(column)


# --- the aggregated table ---------------------------------------------------------------------


@dataclass(frozen=True)
class AggregatedTable:
    """The distinct rows of the used columns (discretised attributes as bin codes), with the
    number of data rows of each in :data:`WEIGHT_COLUMN`."""

    frame: pl.DataFrame
    n_rows_raw: int  # rows in the data
    n_rows: int  # rows the filter kept
    binned: dict[str, tuple[float, ...]] = field(default_factory=dict)  # attribute -> edges


def bin_edges(
    query: StreamQuery,
    n_rows: int,
    schema: pl.Schema,
    discretize: Mapping[str, DiscretizeSpec],
    attributes: Sequence[str],
) -> dict[str, tuple[float, ...]]:
    """Full edge lists of the discretised attributes present in the data."""
    edges: dict[str, tuple[float, ...]] = {}
    for name in attributes:
        rule = discretize.get(name)
        if rule is None or name not in schema:
            continue
        check_numeric(schema, name)
        if rule.edges is not None:
            edges[name] = explicit_edges(rule.edges)
        else:
            quantiles = DEFAULT_QUANTILES if rule.quantiles is None else rule.quantiles
            edges[name] = streamed_quantile_edges(query, n_rows, name, quantiles)
    return edges


def aggregate(
    query: StreamQuery,
    n_rows_raw: int,
    binned: dict[str, tuple[float, ...]],
    *,
    max_rows: int | None = None,
    raw: Mapping[str, str] | None = None,
) -> AggregatedTable:
    """Stream the table into its distinct (filtered, binned) rows with their counts; a
    :class:`DataError` naming ``data.sample`` once they exceed ``max_rows``. ``raw``: binned
    attributes also kept by value, in the column it names (attribute -> column)."""
    raw = dict(raw or {})
    keys = [*query.columns, *raw.values()]

    def step(lazy: pl.LazyFrame) -> pl.LazyFrame:
        if raw:
            lazy = lazy.with_columns(pl.col(name).alias(column) for name, column in raw.items())
        if binned:
            lazy = lazy.with_columns(bin_codes(name, e) for name, e in binned.items())
        return lazy.group_by(keys).agg(_rows(query).cast(pl.Int64).alias(WEIGHT_COLUMN))

    frame = _merge(_frames(query, n_rows_raw, step), keys, WEIGHT_COLUMN, max_rows)
    if frame.width == 0:
        frame = pl.DataFrame(schema={**dict.fromkeys(keys, pl.Null), WEIGHT_COLUMN: pl.Int64})
    # a fixed row order (the merge's is not), so that every run builds the same table
    frame = frame.sort(keys, nulls_last=True)
    return AggregatedTable(
        frame=frame,
        n_rows_raw=n_rows_raw,
        n_rows=int(frame[WEIGHT_COLUMN].sum()) if frame.height else 0,
        binned=binned,
    )


# --- a uniform sample of the filtered rows ----------------------------------------------------


def sample_rows(
    query: StreamQuery, n_rows_raw: int, rows: int, seed: int
) -> tuple[pl.DataFrame, int]:
    """``rows`` filtered rows drawn uniformly without replacement (all of them when fewer),
    in data order, and the number of filtered rows they were drawn from."""
    if query.weight is not None:
        raise DataError(
            "data.sample needs the rows themselves, not a table aggregated where the data lives",
            field="data.sample",
            hint="sample the rows where they live (e.g. DuckDB's USING SAMPLE) and pass those",
        )
    counts = [int(f.item()) for f in _frames(query, n_rows_raw, lambda lf: lf.select(pl.len()))]
    total = sum(counts)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    chosen = np.sort(rng.choice(total, size=min(rows, total), replace=False))
    starts = np.concatenate([[0], np.cumsum(counts)])
    kept: list[pl.DataFrame] = []
    for i, frame in enumerate(_frames(query, n_rows_raw, lambda lf: lf)):
        lo, hi = np.searchsorted(chosen, [starts[i], starts[i + 1]])
        if hi > lo:
            kept.append(frame[chosen[lo:hi] - starts[i]])
    if not kept:
        return query.prepared(query.lazy.head(0)).collect(), total
    return pl.concat(kept, how="vertical_relaxed"), total


# --- entry points ------------------------------------------------------------------------------


def stream_query(
    lazy: pl.LazyFrame,
    *,
    sliceable: bool,
    columns: Sequence[str],
    attributes: Sequence[str],
    filter: str | None,
    strip_whitespace: bool,
    progress: Progress | None = None,
    weight: str | None = None,
) -> tuple[StreamQuery, pl.Schema]:
    """The query over the columns present (missing ones are reported by the data checks)."""
    from fairscan.data.filter_compile import filter_expression

    try:
        schema = lazy.collect_schema()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _read_error(exc) from exc
    present = tuple(dict.fromkeys(c for c in columns if c in schema))
    stripped = tuple(
        a for a in attributes if strip_whitespace and a in present and schema[a] == pl.String
    )
    expression = filter_expression(filter, schema) if filter is not None else None
    query = StreamQuery(lazy, sliceable, present, expression, stripped, progress, weight)
    return query, schema


def aggregated_table(
    query: StreamQuery,
    schema: pl.Schema,
    *,
    attributes: Sequence[str],
    discretize: Mapping[str, DiscretizeSpec],
    max_rows: int | None = None,
    by_value: Sequence[str] = (),
) -> tuple[pl.DataFrame, Aggregation]:
    """The filtered data as distinct rows with counts, ready for
    :func:`fairscan.data.prepare.prepare_data` (``aggregated=``). ``by_value``: columns some
    scan reads by value (model covariates, roles): a binned one is kept by value too."""
    n_raw = count_rows(query.lazy, query.weight)
    binned = bin_edges(query, n_raw, schema, discretize, attributes)
    raw = {name: raw_column(name) for name in by_value if name in binned}
    table = aggregate(query, n_raw, binned, max_rows=max_rows, raw=raw)
    if table.n_rows == 0:
        raise DataError(
            f"the filter keeps 0 of {n_raw} rows" if query.filter is not None else "no data rows",
            field="data.filter" if query.filter is not None else "data.path",
            hint="check the filter's values (string comparisons are case-sensitive)"
            if query.filter is not None
            else "point data.path at data with rows",
        )
    return table.frame, Aggregation(WEIGHT_COLUMN, n_raw, binned, raw=raw)


def sampled_table(query: StreamQuery, rows: int, seed: int) -> tuple[pl.DataFrame, int, int]:
    """A uniform sample of the filtered rows (filter and whitespace stripping applied), the
    rows in the data and the filtered rows it was drawn from."""
    n_raw = count_rows(query.lazy)
    frame, total = sample_rows(query, n_raw, rows, seed)
    if total == 0:
        raise DataError(
            f"the filter keeps 0 of {n_raw} rows",
            field="data.filter",
            hint="check the filter's values (string comparisons are case-sensitive)",
        )
    return frame, n_raw, total
