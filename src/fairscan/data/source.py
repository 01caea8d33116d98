"""One interface for every place the audited rows come from.

A :class:`Source` receives the :class:`~fairscan.data.plan.ReadPlan` and hands back a
:class:`Read`: the table (its rows, a sample, or its distinct rows with their counts), the
hash of what it read, and its provenance. One implementation per engine:

* :class:`FileSource`: a data file read into memory, hashed while it is read;
* :class:`FrameSource`: a table already in memory (``fairscan.audit``);
* :class:`StreamedSource`: a dataset (directory, glob, URL, a file too large to hold) or a
  polars LazyFrame (a Dask DataFrame is one; a table aggregated in another engine, e.g. by
  narwhals, too), prepared in DuckDB when ``fairscan[sql]`` is installed, else streamed by
  polars;
* :class:`DatabaseSource`: a table prepared where it lives (a database, an Ibis table, a
  DuckDB relation; :mod:`fairscan.data.pushdown`).

:func:`source_of` picks the source for a spec's ``data:`` block, :func:`source_for` for an
object handed to ``fairscan.audit``. The run layer asks ``source.read(plan, progress)`` and
never which kind of source it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fairscan.errors import DataError

if TYPE_CHECKING:
    import polars as pl

    from fairscan.data.backends import LazyTable
    from fairscan.data.engine_scan import Engine
    from fairscan.data.plan import ReadPlan
    from fairscan.data.pushdown import PushdownSource
    from fairscan.data.sources import DatasetSource
    from fairscan.data.table import Aggregation
    from fairscan.progress import Progress
    from fairscan.spec.models import DataSpec


@dataclass(frozen=True)
class Read:
    """What a source read for a plan."""

    frame: pl.DataFrame
    sha256: str  # of what was read (the file, the dataset's files, or the table handed back)
    # the distinct rows of ``frame`` with their counts; None: ``frame`` holds rows
    aggregation: Aggregation | None = None
    # data.filter applied already (a sample drawn from the rows it keeps, or an aggregate)
    prefiltered: bool = False
    sample: tuple[int, str] | None = None  # a sample's (data rows, note for the report)
    provenance: dict[str, Any] | None = None  # the report's data_source (no secret)


class Source(Protocol):
    """A place the audited rows come from."""

    @property
    def location(self) -> str:
        """The report's data path (no secret)."""
        ...

    def read(self, plan: ReadPlan, progress: Progress) -> Read:
        """The table ``plan`` asks for, with as much of the plan done where the data lives as
        the engine can (``progress``: started and ended by the source when it reads in
        passes). Errors are :class:`~fairscan.errors.DataError` or
        :class:`~fairscan.errors.SpecError` naming the spec field."""
        ...


# --- in memory ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrameSource:
    """A table already in memory; ``sha256`` and ``location`` as the caller names it."""

    frame: pl.DataFrame
    location: str
    sha256: str

    def read(self, plan: ReadPlan, progress: Progress) -> Read:
        return Read(self.frame, self.sha256)


@dataclass(frozen=True)
class FileSource:
    """A data file read into memory at once: its bytes are read once, hashed and parsed."""

    path: Path

    @property
    def location(self) -> str:
        return str(self.path)

    def read(self, plan: ReadPlan, progress: Progress) -> Read:
        from fairscan.data.load import read_table_hashed
        from fairscan.data.netio import watched
        from fairscan.progress import phase

        with phase(progress, self._reading()):
            # in a watched thread: Ctrl-C ends a long read at once
            frame, sha = watched(lambda: read_table_hashed(self.path), remote=False)
        return Read(frame, sha)

    def _reading(self) -> str:
        """The reading phase's words: the file and its size (read in one call: no steps)."""
        from fairscan.data.load import bytes_text

        try:
            return f"reading {self.path.name} ({bytes_text(self.path.stat().st_size)})"
        except OSError:  # the read names what is wrong with the path
            return f"reading {self.path.name}"


# --- streamed -------------------------------------------------------------------------------


def _stream_progress(progress: Progress, location: str) -> Callable[[int], None]:
    """Progress of a streamed read, in data rows read (a pass per quantile column, then one)."""
    progress.start(f"reading {location} (rows read)", None)

    def advance(rows: int) -> None:
        progress.advance(rows)

    return advance


@dataclass(frozen=True)
class StreamedSource:
    """A dataset or a LazyFrame, streamed slice by slice: aggregated in DuckDB (with
    ``fairscan[sql]``) by the push-down plan, else by polars; sampled by polars."""

    table: DatasetSource | LazyTable

    @property
    def location(self) -> str:
        return self.table.location

    @property
    def _dataset(self) -> DatasetSource | None:
        from fairscan.data.sources import DatasetSource

        return self.table if isinstance(self.table, DatasetSource) else None

    def _duckdb(self) -> bool:
        """Rows that are data rows (not a table aggregated elsewhere), DuckDB and Ibis
        installed: prepared in DuckDB unless a sample is asked for."""
        from fairscan.data import engine_scan

        return self.table.weight is None and engine_scan.available()

    def read(self, plan: ReadPlan, progress: Progress) -> Read:
        from fairscan.data.engine_scan import Engine
        from fairscan.data.netio import probe_url, watched

        engine = Engine(_stream_progress(progress, self.location))
        dataset = self._dataset
        remote = dataset is not None and dataset.remote
        try:
            if remote:  # a server that does not answer is named by the probe, not the stall watch
                watched(lambda: probe_url(self.location), remote=False)
            # files, URLs and LazyFrames DuckDB reads in a watched thread: interruptible
            # (DuckDB's query is interrupted too), and a stalled remote read times out
            if dataset is not None or self._duckdb():
                cancel = engine.interrupt
                read = watched(lambda: self._read(plan, engine), remote=remote, cancel=cancel)
            else:
                read = self._read(plan, engine)
            sha = watched(dataset.fingerprint, remote=False) if dataset is not None else None
        finally:
            progress.done()
            engine.close()
        if sha is None:
            from fairscan.data.load import frame_sha256

            sha = frame_sha256(read.frame)
        provenance = engine.provenance or read.provenance
        prefiltered = read.aggregation is None  # a sample of the rows the filter keeps
        return Read(read.frame, sha, read.aggregation, prefiltered, read.sample, provenance)

    def _read(self, plan: ReadPlan, engine: Engine) -> Read:
        if plan.sample is None and self._duckdb():
            return self._in_duckdb(plan, engine)
        from fairscan.data.stream import stream_query

        query, schema = stream_query(
            self.table.scan(),
            sliceable=self.table.sliceable,
            columns=plan.columns,
            attributes=plan.attributes,
            filter=plan.filter,
            strip_whitespace=plan.strip_whitespace,
            progress=engine.progress or (lambda rows: None),
            weight=self.table.weight,
        )
        _check_names(plan, list(schema))
        if plan.sample is not None:
            return self._sampled(plan, query)
        return self._aggregated(plan, query, schema)

    def _sampled(self, plan: ReadPlan, query: Any) -> Read:
        from fairscan.data.stream import sampled_table

        sample = plan.sample
        assert sample is not None
        frame, n_raw, n_filtered = sampled_table(query, sample.rows, sample.seed)
        note = (
            f"audited a uniform sample of {frame.height:,} of the {n_filtered:,} rows the "
            f"filter keeps (data.sample, seed {sample.seed})"
        )
        return Read(frame, "", sample=(n_raw, note))

    def _aggregated(self, plan: ReadPlan, query: Any, schema: pl.Schema) -> Read:
        from fairscan.data.load import held_rows
        from fairscan.data.stream import aggregated_table

        frame, aggregation = aggregated_table(
            query,
            schema,
            attributes=plan.attributes,
            discretize=plan.discretize,
            max_rows=held_rows(len(query.columns)),
            by_value=plan.by_value,
        )
        return Read(frame, "", aggregation, provenance=self._polars_provenance())

    def _in_duckdb(self, plan: ReadPlan, engine: Engine) -> Read:
        """Prepared in DuckDB; the aggregate in the source's polars types."""
        from dataclasses import replace

        from fairscan.data.engine_scan import restore_types
        from fairscan.data.engine_source import engine_source
        from fairscan.data.pushdown import pushed_down

        pushdown, schema = engine_source(
            self.table, engine, [*plan.columns, *plan.filter_columns()]
        )
        _check_names(plan, list(schema))
        # probabilities stay per row (not binned as for a database table): the seeded null
        # replicates of a calibration scan are those of the rows, as in memory
        frame, aggregation, note = pushed_down(pushdown, replace(plan, calibrations={}))
        replaced = [*plan.cuts, *(aggregation.binned if aggregation else ())]
        engine.provenance = pushdown.provenance
        return Read(restore_types(frame, schema, replaced), "", aggregation, sample=note)

    def _polars_provenance(self) -> dict[str, Any] | None:
        """The report's data_source for a dataset streamed by polars (without
        ``fairscan[sql]``), as DuckDB's :func:`~fairscan.data.engine_source.engine_source`
        gives it; None for a table aggregated elsewhere (it carries its own)."""
        import polars as pl

        dataset = self._dataset
        if dataset is None:
            return None
        provenance: dict[str, Any] = {
            "kind": "url" if dataset.remote else "files",
            "engine": "polars",
            "engine_version": pl.__version__,
            "reader": "polars streaming engine",
            "format": dataset.format,
        }
        if dataset.files:
            provenance["files"] = len(dataset.files)
        return provenance


# --- where the data lives -------------------------------------------------------------------


@dataclass(frozen=True)
class DatabaseSource:
    """A table prepared where it lives: the whole plan compiled to its engine's SQL."""

    table: PushdownSource

    @property
    def location(self) -> str:
        return self.table.location

    def read(self, plan: ReadPlan, progress: Progress) -> Read:
        from fairscan.data.load import frame_sha256
        from fairscan.data.netio import watched
        from fairscan.data.pushdown import pushed_down

        _stream_progress(progress, self.location)
        source = self.table

        def read() -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
            _check_names(plan, source.columns(plan.columns))
            return pushed_down(source, plan)

        try:
            # DuckDB's queries in a watched thread (interruptible); another database's stay on
            # the thread that holds its connection (SQLite allows no other, and stops its query
            # on a signal itself; the drivers return to Python between steps)
            if source.relation.movable:
                cancel = source.relation.interrupt
                frame, aggregation, sample = watched(read, remote=False, cancel=cancel)
            else:
                frame, aggregation, sample = read()
        finally:
            progress.done()
            source.release()
        prefiltered = aggregation is None
        return Read(frame, frame_sha256(frame), aggregation, prefiltered, sample, source.provenance)


def _check_names(plan: ReadPlan, names: list[str]) -> None:
    """A DataError for the columns the plan reads that the table (its columns ``names``)
    lacks, before any pass over it."""
    issues = plan.column_issues(names)
    if issues:
        raise DataError(issues=issues)


# --- choosing the source --------------------------------------------------------------------


def source_of(data: DataSpec, base: Path) -> Source:
    """The source of a spec's ``data:`` block (``base``: the folder of the spec file that
    names ``data.path`` or ``data.connection``)."""
    if data.connection is not None:
        from fairscan.data.database import database_source

        table = database_source(
            data.connection,
            data.table,
            data.sql,
            base,
            allow_file_access=data.allow_file_access,
        )
        return DatabaseSource(table)
    assert data.path is not None
    try:
        path = (base / data.path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable parent folder
        raise DataError(
            f"cannot resolve the data path {data.path!r}: {exc}",
            field="data.path",
            hint="point data.path at a regular data file (check for a symlink loop)",
        ) from exc
    streamed = _streamed_file(data, path)
    return FileSource(path) if streamed is None else StreamedSource(streamed)


def _streamed_file(data: DataSpec, path: Path) -> DatasetSource | None:
    """The data as a lazily scanned dataset when it is one (a directory, glob or URL), when
    it is sampled or streaming is asked for, or when the file is too large to read at once;
    None: read the file into memory."""
    from fairscan.data.load import fits_in_memory
    from fairscan.data.sources import dataset_source, file_source

    assert data.path is not None
    dataset = dataset_source(data.path, path)
    if dataset is not None or data.streaming is False:
        return dataset
    if data.streaming or data.sample is not None or not fits_in_memory(path):
        return file_source(path)
    return None


def source_for(data: Any, plan: ReadPlan) -> Source:
    """The source of a lazy table handed to ``fairscan.audit``: a
    :class:`~fairscan.data.sources.DatasetSource`, a polars LazyFrame, a Dask or PySpark
    DataFrame (aggregated where it lives when it cannot be streamed), an Ibis table or DuckDB
    relation, or a :class:`~fairscan.data.pushdown.PushdownSource`."""
    from fairscan.data.backends import lazy_table
    from fairscan.data.pushdown import PushdownSource
    from fairscan.data.sources import DatasetSource

    if isinstance(data, DatasetSource):
        return StreamedSource(data)
    table = lazy_table(data, plan.columns, plan.filter_columns())
    if isinstance(table, PushdownSource):
        return DatabaseSource(table)
    return StreamedSource(table)


def lazy_of(data: Any, *, only_database: bool = False) -> tuple[Any, str] | None:
    """(what to stream, the report's data path) when ``data`` handed to ``fairscan.audit``
    is read by :func:`source_for`: a :class:`~fairscan.data.pushdown.PushdownSource`, and
    unless ``only_database`` the path of a dataset (a directory, glob or URL) or a lazy table
    (a polars LazyFrame, a DuckDB relation, a Dask or PySpark DataFrame); None for a table
    read into memory (a DataFrame, a file)."""
    import os

    from fairscan.data.backends import engine_of
    from fairscan.data.pushdown import PushdownSource
    from fairscan.data.sources import dataset_source

    if isinstance(data, PushdownSource):
        return data, data.location
    if only_database:
        return None
    if isinstance(data, str | os.PathLike):
        text = os.fspath(data)
        dataset = dataset_source(text, Path(text).expanduser().resolve())
        return None if dataset is None else (dataset, text)
    engine = engine_of(data)
    return None if engine is None else (data, f"<in-memory {engine}>")
