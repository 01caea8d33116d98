"""Files, datasets, URLs and polars LazyFrames prepared in DuckDB: the streamed tables end in
the same push-down path as database tables (:mod:`fairscan.data.pushdown`).

A streamed table becomes a DuckDB relation on a connection of its own, and the push-down
compiles the whole preparation (whitespace stripping, filter, quantile edges, bins, the
``GROUP BY`` with counts) to DuckDB's SQL, one query per pass, run in DuckDB's threads:

* local Parquet files are read by DuckDB itself (``read_parquet``: decoding, projection and
  row-group pruning in the engine; hive partitions; parts whose integer or float types differ
  are read as the wider type, as before);
* CSV and NDJSON files, Arrow IPC files, URLs (read by polars' object-store layer, with the
  credentials of the environment) and polars LazyFrames are decoded by polars' streaming
  engine and handed to DuckDB as an Arrow stream, which DuckDB opens afresh for each query;
  their parsing is therefore exactly the one in-memory reads use.

The aggregate that comes back is cast to the types polars gives the same data, so that every
input path builds the same table, bit for bit (the sort and dtypes are canonical, and so are
the seeded results).

DuckDB runs with at most :func:`engine_threads` threads and :func:`memory_limit` bytes of
buffer memory, and spills to a temporary folder of its own (never the working directory).
:class:`Engine` polls DuckDB's query progress for the progress display and interrupts the
running query (``interrupt()``) when the waiting thread is interrupted (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fairscan.data.load import first_line
from fairscan.errors import DataError

FIELD = "data.path"
# DuckDB's buffer memory: a quarter of what is available, within these bounds
MIN_MEMORY_LIMIT = 64 * 2**20
MAX_MEMORY_LIMIT = 768 * 2**20
# rows a batch of an Arrow stream holds (polars' streaming engine decodes them)
STREAM_BATCH_ROWS = 1_000_000
# how often the progress of a running query is read
PROGRESS_SECONDS = 0.2

Progress = Callable[[int], None]


def engine_threads() -> int:
    """DuckDB's threads: the cores this process may use (``FAIRSCAN_ENGINE_THREADS`` caps it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    text = os.environ.get("FAIRSCAN_ENGINE_THREADS", "")
    if text.isdigit() and int(text) > 0:
        cores = min(cores, int(text))
    return max(1, cores)


def memory_limit() -> int:
    """DuckDB's buffer memory in bytes: a quarter of the available memory, clamped to
    [:data:`MIN_MEMORY_LIMIT`, :data:`MAX_MEMORY_LIMIT`] (the aggregate it builds is small; a
    sort for exact quantiles spills to disk beyond it)."""
    from fairscan.data.load import available_memory

    available = available_memory()
    if available is None:
        return MAX_MEMORY_LIMIT
    return max(MIN_MEMORY_LIMIT, min(MAX_MEMORY_LIMIT, available // 4))


def available() -> bool:
    """DuckDB and Ibis, which compile the push-down, are installed (``fairscan[sql]``); without
    them, datasets and LazyFrames are streamed by polars (:mod:`fairscan.data.stream`), which
    prepares the same table. Nothing is imported here."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) is not None for name in ("duckdb", "ibis"))
    except (ImportError, ValueError):  # a module blocked by an import hook, or half-imported
        return False


def _read_error(exc: BaseException) -> DataError:
    return DataError(
        f"cannot read the data: {first_line(exc)}",
        field=FIELD,
        hint="check that every file has the same columns and types, and for a URL the "
        "network and the credentials in the environment",
    )


@dataclass
class Engine:
    """An in-process DuckDB connection for one streamed table: its settings, the progress
    of its queries, and their interruption."""

    progress: Progress | None = None
    rows: int | None = None  # data rows of the table, once known (the progress's scale)
    provenance: dict[str, Any] | None = None  # what the report's data_source says of it
    _con: Any = None
    _spill: tempfile.TemporaryDirectory[str] | None = None
    _reported: int = 0
    _streamed: bool = False  # the table is an Arrow stream that reports its own progress
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def connection(self) -> Any:
        if self._con is None:
            import duckdb

            self._spill = tempfile.TemporaryDirectory(prefix="fairscan-duckdb-")
            self._con = duckdb.connect(
                config={
                    "threads": engine_threads(),
                    "memory_limit": f"{memory_limit() // 2**20}MB",
                    "temp_directory": self._spill.name,
                    "preserve_insertion_order": False,
                }
            )
            # no filter pushed into the Parquet reader: DuckDB then skips row groups by their
            # statistics, and a float column holding NaN whose statistics another writer (polars
            # 1.x) wrote has every row group skipped by any filter on it, NaN test and IS NOT
            # NULL included (tests/data/test_data_engine_parity.py); filters run on the rows read
            self._con.execute("SET disabled_optimizers = 'filter_pushdown'")
            # progress is read with query_progress(), never printed
            self._con.execute("SET enable_progress_bar = true")
            self._con.execute("SET enable_progress_bar_print = false")
        return self._con

    def interrupt(self) -> None:
        """Stop the running query (it raises in the thread that runs it)."""
        if self._con is not None:
            self._con.interrupt()

    def close(self, wait: float = 1.0) -> None:
        """Close the connection and remove the spill folder, waiting at most ``wait`` seconds:
        after an interrupt or a stalled read the query's thread may still hold the connection
        (it ends with the process: a run must not hang on it)."""
        con, spill = self._con, self._spill
        self._con = self._spill = None
        if con is None:
            return

        def close() -> None:
            # an interrupted query may still hold the connection (DuckDB refuses to close it
            # then): it is released with the process; the spill folder goes either way
            with contextlib.suppress(Exception):
                con.close()
            if spill is not None:
                with contextlib.suppress(OSError):
                    spill.cleanup()

        closer = threading.Thread(target=close, name="fairscan-duckdb-close", daemon=True)
        closer.start()
        closer.join(wait)

    def advance(self, rows: int) -> None:
        if self.progress is not None and rows > 0:
            with self._lock:
                self.progress(rows)

    def run(self, query: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """``query()`` with the progress of the pass shown meanwhile (DuckDB's estimate of
        the share of the table scanned, times its rows)."""
        if self.progress is None or self._streamed or not self.rows or self._con is None:
            return query()
        done = threading.Event()
        self._reported = 0
        poller = threading.Thread(target=self._poll, args=(done,), daemon=True)
        poller.start()
        try:
            return query()
        finally:
            done.set()
            poller.join()
            assert self.rows is not None
            self.advance(self.rows - self._reported)

    def _poll(self, done: threading.Event) -> None:
        assert self.rows is not None
        while not done.wait(PROGRESS_SECONDS):
            try:
                share = float(self._con.query_progress())
            except Exception:
                return
            if share <= 0:
                continue
            now = min(self.rows, int(self.rows * share / 100))
            self.advance(now - self._reported)
            self._reported = max(self._reported, now)


class ArrowStream:
    """A polars LazyFrame as an Arrow C stream that DuckDB opens once per scan: each opening
    runs the lazy query again in polars' streaming engine, batch by batch (a table never held
    whole), and counts the rows for the progress display."""

    def __init__(self, lazy: pl.LazyFrame, schema: pl.Schema, engine: Engine) -> None:
        self.lazy = lazy
        self.schema = schema
        self.engine = engine

    def _batches(self) -> Iterator[Any]:
        try:
            for frame in self.lazy.collect_batches(chunk_size=STREAM_BATCH_ROWS):
                yield from frame.to_arrow().to_batches()
                self.engine.advance(frame.height)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
            raise _read_error(exc) from exc

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        import pyarrow as pa

        schema = pl.DataFrame(schema=self.schema).to_arrow().schema
        reader = pa.RecordBatchReader.from_batches(schema, self._batches())
        return reader.__arrow_c_stream__(requested_schema)


def _canonical_schema(schema: pl.Schema) -> pl.Schema:
    """Types DuckDB reads back as they are: categoricals and enums as strings (their
    aggregate is cast back to the source's types)."""
    out: dict[str, pl.DataType] = {}
    for name, dtype in schema.items():
        out[name] = pl.String() if isinstance(dtype, pl.Categorical | pl.Enum) else dtype
    return pl.Schema(out)


def _same_columns(files: Sequence[str]) -> None:
    """Every part has the columns of the first (DuckDB would fill the missing ones with
    nulls: a part written with another schema is an error, as it is for polars)."""
    first: list[str] | None = None
    for file in files:
        try:
            names = list(pl.read_parquet_schema(file))
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DataError(
                f"cannot read the Parquet file {file!r}: {first_line(exc)}",
                field=FIELD,
                hint="check that every file of the dataset is a complete Parquet file",
            ) from None
        if first is None:
            first = names
        elif set(names) != set(first):
            missing = sorted(set(first) - set(names)) or sorted(set(names) - set(first))
            raise DataError(
                f"the parts of the dataset have different columns: {file!r} "
                f"{'lacks' if set(first) - set(names) else 'adds'} "
                f"{', '.join(repr(m) for m in missing[:5])} (against {files[0]!r})",
                field=FIELD,
                column=missing[0],
                hint="check that every file of the dataset has the same columns and types",
            )


def parquet_relation(con: Any, files: Sequence[str], hive: bool) -> Any:
    """DuckDB's own reader over local Parquet files (wider types where the parts differ)."""
    _same_columns(files)
    return con.read_parquet(
        list(files), hive_partitioning=hive, union_by_name=len(files) > 1, binary_as_string=False
    )


def stream_relation(con: Any, lazy: pl.LazyFrame, schema: pl.Schema, engine: Engine) -> Any:
    """A relation over polars' streaming read of ``lazy`` (only the columns used)."""
    canonical = _canonical_schema(schema)
    casts = [pl.col(n).cast(d) for n, d in canonical.items() if d != schema[n]]
    if casts:
        lazy = lazy.with_columns(casts)
    engine._streamed = True
    return con.from_arrow(ArrowStream(lazy, canonical, engine))


def restore_types(frame: pl.DataFrame, schema: pl.Schema, keep: Sequence[str]) -> pl.DataFrame:
    """The aggregate's columns cast to the source's polars types (``keep``: columns whose
    values the push-down replaced, e.g. bin codes, left as they are)."""
    casts = {
        name: schema[name]
        for name in frame.columns
        if name in schema and name not in keep and frame.schema[name] != schema[name]
    }
    if not casts:
        return frame
    try:
        return frame.cast(casts)  # type: ignore[arg-type]
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
        return frame


def polars_schema(lazy: pl.LazyFrame) -> pl.Schema:
    try:
        return lazy.collect_schema()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise _read_error(exc) from exc
