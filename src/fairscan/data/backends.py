"""Lazy tables handed to ``fairscan.audit()``: a polars LazyFrame, or a table that lives in
another engine (a DuckDB relation, an Ibis table, a Dask or PySpark DataFrame, anything
narwhals wraps as a lazy frame).

All of them go through the push-down plan (:mod:`fairscan.data.pushdown`: filter, exact
quantile edges, threshold sides, GROUP BY with counts) where that can be done:

- an Ibis table, a DuckDB relation, a PySpark DataFrame (through Ibis' PySpark backend): in
  their own engine, as a database table;
- a polars LazyFrame, and a Dask DataFrame as a LazyFrame over its partitions computed by
  Dask one at a time (:func:`dask_lazy_frame`): in fairscan's DuckDB, streamed.

Any other lazy frame narwhals wraps (and a PySpark DataFrame without Ibis) is aggregated where
it lives by the raw audited columns (through narwhals, the optional extra
``fairscan[backends]``); the filter, the discretisation and the checks then run on that table
as on a streamed dataset.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from fairscan.data.database import engine_version
from fairscan.data.load import IN_MEMORY_FIELD, first_line
from fairscan.data.pushdown import DuckDBRelation, IbisRelation, PushdownSource
from fairscan.data.stream import WEIGHT_COLUMN
from fairscan.errors import DataError

# modules whose lazy tables narwhals wraps (checked by name: none of them is imported here)
_ENGINES = {
    "duckdb": "DuckDB relation",
    "dask": "Dask DataFrame",
    "pyspark": "PySpark DataFrame",
    "sqlframe": "SQLFrame DataFrame",
    "ibis": "Ibis table",
}


@dataclass(frozen=True)
class LazyTable:
    """A lazy table to stream: its polars LazyFrame and how to read it."""

    lazy: pl.LazyFrame
    location: str  # the report's data path, e.g. "<in-memory DuckDB relation>"
    weight: str | None = None  # the count column of a table aggregated where it lives
    sliceable: bool = False
    kind: str = "polars LazyFrame"  # the provenance's source kind

    def scan(self) -> pl.LazyFrame:
        return self.lazy


def engine_of(data: object) -> str | None:
    """The engine's name in words when ``data`` is a lazy table fairscan streams, else None."""
    if isinstance(data, pl.LazyFrame):
        return "polars LazyFrame"
    root = type(data).__module__.split(".", 1)[0].lstrip("_")  # duckdb < 2: _duckdb
    return _ENGINES.get(root)


def lazy_table(
    data: Any, columns: Sequence[str], extra_keys: Sequence[str]
) -> LazyTable | PushdownSource:
    """``data`` as a :class:`LazyTable`; a table of another engine is aggregated there by
    ``columns`` and ``extra_keys`` (the filter's columns) first. An Ibis table or a DuckDB
    relation is a :class:`~fairscan.data.pushdown.PushdownSource`: the whole preparation
    (filter, bins, thresholds, GROUP BY) runs in its engine, as for ``data.connection``."""
    engine = engine_of(data)
    label = f"<in-memory {engine}>"
    if isinstance(data, PushdownSource):
        return data
    if isinstance(data, pl.LazyFrame):
        return LazyTable(data, label)
    if engine == "Dask DataFrame":
        streamed = dask_lazy_frame(data, [*columns, *extra_keys])
        return LazyTable(streamed, label, kind="Dask DataFrame")
    pushdown = _pushdown_source(data, engine, label)
    if pushdown is not None:
        return pushdown
    try:
        import narwhals as nw
    except ImportError as exc:  # pragma: no cover - narwhals comes with scikit-learn
        raise DataError(
            f"auditing a {engine} needs narwhals",
            field=IN_MEMORY_FIELD,
            hint="pip install 'fairscan[backends]'",
        ) from exc
    try:
        with warnings.catch_warnings():  # narwhals' notice that Dask moves to a plugin
            warnings.filterwarnings("ignore", category=FutureWarning, message=".*narwhals-dask")
            frame = nw.from_native(data)
        lazy = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
        names = lazy.collect_schema().names()
        keys = [c for c in dict.fromkeys([*columns, *extra_keys]) if c in names]
        grouped = (
            lazy.select(keys)
            .group_by(keys, drop_null_keys=False)
            .agg(nw.len().alias(WEIGHT_COLUMN))
        )
        table = grouped.collect(backend="polars").to_native()
    except DataError:
        raise
    except Exception as exc:
        raise DataError(
            f"cannot aggregate the {engine}: {first_line(exc)}",
            field=IN_MEMORY_FIELD,
            hint="check that the table's query runs in its engine and that its columns have "
            "plain types (strings, numbers, booleans, dates)",
        ) from exc
    assert isinstance(table, pl.DataFrame)
    return LazyTable(table.lazy(), label, weight=WEIGHT_COLUMN, sliceable=True)


def _pushdown_source(data: Any, engine: str | None, label: str) -> PushdownSource | None:
    """An Ibis table, a DuckDB relation or a PySpark DataFrame (through Ibis' PySpark
    backend), prepared in its engine; None for other engines, and when Ibis is not installed:
    those are aggregated through narwhals."""
    root = type(data).__module__.split(".", 1)[0].lstrip("_")  # duckdb < 2: _duckdb
    if root not in ("ibis", "duckdb", "pyspark"):
        return None
    try:
        import ibis  # noqa: F401
    except ImportError:
        return None
    if root == "pyspark":
        return _spark_source(data, engine, label)
    relation = IbisRelation(data) if root == "ibis" else DuckDBRelation(data)
    provenance: dict[str, Any] = {"kind": engine, "engine": root}
    if isinstance(relation, IbisRelation) and relation.backend is not None:
        provenance["engine"] = relation.engine
        provenance["engine_version"] = engine_version(relation.backend)
    elif isinstance(relation, DuckDBRelation):
        provenance["engine"] = "duckdb"
        provenance["engine_version"] = sys.modules["duckdb"].__version__
    return PushdownSource(relation, label, IN_MEMORY_FIELD, provenance)


def _spark_source(data: Any, engine: str | None, label: str) -> PushdownSource | None:
    """A PySpark DataFrame as an Ibis table of its own session (Ibis' PySpark backend), so that
    Spark runs the whole preparation, as a database does. The frame is registered as a
    temporary view of a unique name (``fairscan_input_<hex>``) in that session (Ibis reads
    tables by name), dropped again once the table is read. None when the frame is not a
    classic DataFrame with a session (Spark Connect): it is then aggregated through narwhals."""
    import uuid

    import ibis

    session = getattr(data, "sparkSession", None)
    if session is None or not hasattr(data, "createOrReplaceTempView"):
        return None
    name = f"fairscan_input_{uuid.uuid4().hex}"
    try:
        data.createOrReplaceTempView(name)
        table = ibis.pyspark.connect(session).table(name)
    except Exception as exc:
        raise DataError(
            f"cannot read the {engine} through Ibis' PySpark backend: {first_line(exc)}",
            field=IN_MEMORY_FIELD,
            hint="check that the DataFrame's query runs in Spark and that its columns have "
            "plain types (strings, numbers, booleans, dates)",
        ) from exc
    provenance: dict[str, Any] = {
        "kind": engine,
        "engine": "pyspark",
        "engine_version": getattr(sys.modules.get("pyspark"), "__version__", None),
        "view": name,
    }
    return PushdownSource(
        IbisRelation(table),
        label,
        IN_MEMORY_FIELD,
        provenance,
        # the view goes once the table is read: the caller's session is left as it was
        cleanup=lambda: session.catalog.dropTempView(name),
    )


def dask_lazy_frame(data: Any, columns: Sequence[str]) -> pl.LazyFrame:
    """A Dask DataFrame as a polars LazyFrame over its partitions, each computed by Dask when
    a scan reaches it (only the audited ``columns``, selected in Dask's graph).

    Why not Dask's own GROUP BY: the push-down plan (:mod:`fairscan.data.pushdown`) is built as
    Ibis expressions and Ibis has no Dask backend, and a second plan written for Dask would be a
    second home for the filter, the exact quantile edges and the threshold sides, with its own
    rounding. Streamed like a LazyFrame, a Dask DataFrame goes through the very same plan (in
    fairscan's DuckDB, one partition in memory at a time), so its audit is bit-identical to the
    in-memory one and only the aggregate is held. The cost: each pass (one per quantile column,
    then the GROUP BY) computes the partitions again, and on a distributed cluster the audited
    columns of every partition travel to this process (not the whole frame at once)."""
    names = [c for c in dict.fromkeys(columns) if c in data.columns]
    frame = data[names]
    try:
        schema = pl.from_pandas(frame._meta).schema
    except Exception as exc:
        raise DataError(
            f"cannot read the types of the Dask DataFrame: {first_line(exc)}",
            field=IN_MEMORY_FIELD,
            hint="give the audited columns plain types (strings, numbers, booleans, dates)",
        ) from exc
    partitions = frame.npartitions

    def batches(
        with_columns: list[str] | None, predicate: Any, n_rows: int | None, batch_size: int | None
    ) -> Any:
        left = n_rows
        for i in range(partitions):
            part = pl.from_pandas(frame.get_partition(i).compute()).cast(schema)
            if with_columns is not None:
                part = part.select(with_columns)
            if predicate is not None:
                part = part.filter(predicate)
            if left is not None:
                part = part.head(left)
                left -= part.height
            yield part
            if left is not None and left <= 0:
                return

    from polars.io.plugins import register_io_source

    return register_io_source(batches, schema=schema)
