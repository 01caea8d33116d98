"""A dataset or a polars LazyFrame as a push-down source on an in-process DuckDB
(:mod:`fairscan.data.engine_scan` holds the connection, :mod:`fairscan.data.pushdown` the
preparation): what data.path and ``fairscan.audit(lazy_frame)`` stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from fairscan.data.engine_scan import (
    FIELD,
    Engine,
    _read_error,
    parquet_relation,
    polars_schema,
    stream_relation,
)
from fairscan.errors import DataError


def _local_parquet(source: Any) -> bool:
    from fairscan.data.sources import DatasetSource

    return (
        isinstance(source, DatasetSource)
        and source.format == "parquet"
        and bool(source.files)
        and not source.remote
    )


# Memory polars' streaming engine holds while it decodes a CSV or NDJSON file, per byte of the
# file: it reads a text file whole before it hands out batches (measured with polars 2.1: 0.8 to
# 1.2 times the file's size, whatever the batch size or thread count).
TEXT_DECODE_FACTOR = 1.2


def _check_text_files_fit(files: Sequence[Any]) -> None:
    """A :class:`DataError` before a CSV/NDJSON file whose decoding needs more memory than is
    available: past a container's memory limit the kernel kills the process, with no message."""
    from pathlib import Path

    from fairscan.data.load import available_memory, bytes_text

    available = available_memory()
    sizes = [(Path(f).stat().st_size, Path(f)) for f in files if Path(f).is_file()]
    if available is None or not sizes:
        return
    size, largest = max(sizes)
    needed = int(size * TEXT_DECODE_FACTOR)
    if needed <= available:
        return
    raise DataError(
        f"data file {str(largest)!r} ({bytes_text(size)}) needs about {bytes_text(needed)} of "
        f"memory to decode (text files are read whole), more than the {bytes_text(available)} "
        "available",
        field=FIELD,
        hint='convert it to Parquet (read in bounded memory: e.g. duckdb -c "COPY (FROM '
        "'data.csv') TO 'data.parquet'\"), split it into smaller files in a folder, or raise "
        "the memory limit",
    )


def engine_source(source: Any, engine: Engine, columns: Sequence[str]) -> tuple[Any, pl.Schema]:
    """A dataset (:class:`~fairscan.data.sources.DatasetSource`) or a polars LazyFrame
    (:class:`~fairscan.data.backends.LazyTable` without a count column) as a
    :class:`~fairscan.data.pushdown.PushdownSource` on ``engine``'s connection, and the
    polars types of its columns (the aggregate is cast back to them: :func:`restore_types`).
    ``columns``: the columns the audit reads (the spec's and the filter's)."""
    import duckdb

    from fairscan.data.load import IN_MEMORY_FIELD
    from fairscan.data.pushdown import DuckDBRelation, PushdownSource
    from fairscan.data.sources import DatasetSource

    lazy = source.scan()
    schema = polars_schema(lazy)
    if not _local_parquet(source):
        import pyarrow  # noqa: F401  (the Arrow stream's; here, a failure to load it is plain)
    con = engine.connection()
    dataset = isinstance(source, DatasetSource)
    provenance: dict[str, Any] = {
        "kind": ("url" if source.remote else "files") if dataset else source.kind,
        "engine": "duckdb",
        "engine_version": duckdb.__version__,
    }
    try:
        if _local_parquet(source):
            files = [str(f) for f in source.files]
            relation = parquet_relation(con, files, source._hive())
            engine.rows = int(relation.aggregate("count(*)").fetchall()[0][0])
            provenance["reader"] = "duckdb read_parquet"
        else:
            if dataset and not source.remote and source.format in ("csv", "ndjson"):
                _check_text_files_fit(source.files)
            used = [c for c in dict.fromkeys(columns) if c in schema]
            kept = pl.Schema({c: schema[c] for c in used})
            relation = stream_relation(con, lazy.select(used), kept, engine)
            provenance["reader"] = "polars streaming engine (Arrow stream)"
    except DataError:
        raise
    except Exception as exc:
        from fairscan.memory_budget import is_resource_failure

        if is_resource_failure(exc):
            raise
        raise _read_error(exc) from None
    if dataset:
        provenance["format"] = source.format
        if source.files:
            provenance["files"] = len(source.files)
    pushdown = PushdownSource(
        DuckDBRelation(relation, engine=engine),
        source.location,
        FIELD if dataset else IN_MEMORY_FIELD,
        provenance,
        failed="reading the data failed",
        # Parquet files read by DuckDB: counted from their metadata, a column read at a time
        extra_passes=_local_parquet(source),
    )
    return pushdown, schema
