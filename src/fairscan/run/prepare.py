"""Data preparation: the spec's data read (a file, a streamed dataset, a lazy table or a table
already in memory), checked and encoded for the scans. Three entry points
(:func:`prepare_audit` for a spec file, :func:`prepare_frame` and :func:`prepare_lazy` for
``fairscan.audit``) share one step, :func:`_prepare`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairscan.errors import DataError, Issue, ScanError, SpecError
from fairscan.progress import Progress
from fairscan.run.options import RunOptions
from fairscan.run.specs import (
    apply_overrides,
    checked_roles,
    extra_columns,
    load_spec,
    locate,
    used_columns,
    with_spec_issues,
)
from fairscan.spec.load import LoadedSpec
from fairscan.spec.models import AuditSpec

if TYPE_CHECKING:
    import polars as pl

    from fairscan.data.backends import LazyTable
    from fairscan.data.engine_scan import Engine
    from fairscan.data.pushdown import PushdownSource
    from fairscan.data.sources import DatasetSource
    from fairscan.data.table import Aggregation, PreparedData, RoleColumn
    from fairscan.scans.roles import ScanRoles, ThresholdRule


@dataclass(frozen=True)
class PreparedAudit:
    """A validated spec with its data loaded and checked: everything a run needs."""

    loaded: LoadedSpec
    spec: AuditSpec
    data_path: Path | str  # the data file, or what was audited in memory ("<in-memory ...>")
    data_sha256: str
    data: PreparedData
    roles: tuple[ScanRoles, ...]  # per scan, in spec order
    # issues point at the spec file's lines; False where the spec is not (only) the file's
    # (fairscan.audit keyword arguments): issues then name the field path alone
    located: bool = True
    data_source: dict[str, Any] | None = None  # a database table's provenance (no secret)
    # aggregated data expanded to rows, made once for the scans that work on rows
    _rows: dict[str, PreparedData] = field(default_factory=dict, compare=False, repr=False)

    def data_for(self, weighted_rows: bool) -> PreparedData:
        """The data a scan type reads: aggregated rows with their counts if it can use them,
        else one row per data row (expanded once, after a memory check)."""
        if weighted_rows or self.data.row_weight is None:
            return self.data
        if "rows" not in self._rows:
            check_expansion(self.data)
            self._rows["rows"] = self.data.expanded()
        return self._rows["rows"]


def check_expansion(data: PreparedData) -> None:
    """A :class:`ScanError` before expanding aggregated data to more rows than memory holds."""
    from fairscan.data.load import available_memory, bytes_text

    available = available_memory()
    columns = data.codes.shape[1] + len(data.roles) + len(data.extra)
    # the rows' arrays, and about as much again for the copies a scan makes
    needed = data.n_data_rows * (2 * (4 * data.codes.shape[1] + 8 * (columns + 1)))
    if available is None or needed <= available:
        return
    raise ScanError(
        f"this scan works on rows: the {data.n_data_rows:,} rows need about "
        f"{bytes_text(needed)} of memory, more than the {bytes_text(available)} available",
        hint="audit a uniform sample of the rows: data: {sample: {rows: 1000000, seed: 0}} "
        "(the aggregate scans, fpr_scan and tpr_scan, can still run on all rows in an audit "
        "of their own)",
    )


def prepare_audit(
    spec_path: Path, options: RunOptions | None = None, extra_roles: Sequence[RoleColumn] = ()
) -> PreparedAudit:
    """Load and validate the spec, then load and check its data (no scanning).

    ``extra_roles``: role columns to load besides those the scans need (``audit power``).
    """
    return prepare_loaded(load_spec(Path(spec_path)), options, extra_roles)


def prepare_loaded(
    loaded: LoadedSpec,
    options: RunOptions | None = None,
    extra_roles: Sequence[RoleColumn] = (),
    *,
    located: bool = True,
) -> PreparedAudit:
    """Load and check the data a validated spec names in ``data.path`` (relative to the file
    it is written in); issues point at the spec file's lines when ``located`` (a spec built
    from a mapping, :func:`~fairscan.run.specs.loaded_from_mapping`, has none)."""
    from fairscan.data.load import file_sha256, read_table
    from fairscan.data.netio import watched

    options = options or RunOptions()
    spec = apply_overrides(loaded.spec, options)
    roles, spec_issues = checked_roles(loaded, spec)
    if spec.data.connection is not None:  # a database table, prepared where it lives
        from fairscan.data.database import database_source

        try:
            base = Path(loaded.file_of("data.connection")).parent
            db = database_source(
                spec.data.connection,
                spec.data.table,
                spec.data.sql,
                base,
                allow_file_access=spec.data.allow_file_access,
            )
        except DataError as db_error:
            raise locate(loaded, with_spec_issues(db_error, spec_issues), located) from db_error
        return _prepare_streamed(
            loaded, spec, roles, db, extra_roles, spec_issues, options, located
        )
    assert spec.data.path is not None
    # relative to the file the path is written in (a parent spec, with extends)
    try:
        data_path = (Path(loaded.file_of("data.path")).parent / spec.data.path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable parent folder
        error = DataError(
            f"cannot resolve the data path {spec.data.path!r}: {exc}",
            field="data.path",
            hint="point data.path at a regular data file (check for a symlink loop)",
        )
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from exc
    try:
        source = _streamed_source(spec, data_path)
    except DataError as error:
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    if source is not None:
        return _prepare_streamed(
            loaded, spec, roles, source, extra_roles, spec_issues, options, located
        )
    try:
        # in a watched thread: Ctrl-C ends a long read at once
        frame = watched(lambda: read_table(data_path), remote=False)
        sha = watched(lambda: file_sha256(data_path), remote=False)
    except DataError as error:
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    return _prepare(
        loaded,
        spec,
        roles,
        frame,
        data_path,
        sha,
        extra_roles,
        located=located,
        spec_issues=spec_issues,
    )


def _streamed_source(spec: AuditSpec, data_path: Path) -> DatasetSource | None:
    """The data as a lazily scanned dataset when it is one (a directory, glob or URL), when
    it is sampled or streaming is asked for, or when the file is too large to read at once;
    None: read the file into memory."""
    from fairscan.data.load import fits_in_memory
    from fairscan.data.sources import dataset_source, file_source

    assert spec.data.path is not None
    source = dataset_source(spec.data.path, data_path)
    if source is not None or spec.data.streaming is False:
        return source
    if spec.data.streaming or spec.data.sample is not None or not fits_in_memory(data_path):
        return file_source(data_path)
    return None


def _prepare_streamed(
    loaded: LoadedSpec,
    spec: AuditSpec,
    roles: list[ScanRoles],
    source: DatasetSource | LazyTable | PushdownSource,
    extra_roles: Sequence[RoleColumn] = (),
    spec_issues: list[Issue] | None = None,
    options: RunOptions | None = None,
    located: bool = True,
) -> PreparedAudit:
    """Stream a dataset or lazy table: a uniform sample of its rows (``data.sample``), or its
    distinct rows with their counts (the aggregate scans run on those; the others get them
    as rows)."""
    from fairscan.data.engine_scan import Engine
    from fairscan.data.netio import watched
    from fairscan.data.pushdown import PushdownSource
    from fairscan.data.sources import DatasetSource

    spec_issues = spec_issues or []
    progress = (options or RunOptions()).progress
    engine = Engine(_stream_progress(progress, source.location))
    try:

        def read() -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
            return _read_streamed(spec, roles, source, extra_roles, engine)

        # files, URLs and LazyFrames in a watched thread: interruptible (DuckDB's query is
        # interrupted too), and a stalled remote read times out; so are DuckDB tables; another
        # database table stays on the thread that holds its connection (SQLite allows no other,
        # and stops its query on a signal itself; the drivers return to Python between steps)
        if isinstance(source, DatasetSource) or _in_engine(source):
            remote = isinstance(source, DatasetSource) and source.remote
            if remote:  # a server that does not answer is named by the probe, not the stall watch
                from fairscan.data.netio import probe_url

                watched(lambda: probe_url(source.location), remote=False)
            frame, aggregation, sample_note = watched(read, remote=remote, cancel=engine.interrupt)
        elif isinstance(source, PushdownSource) and source.relation.movable:
            cancel = source.relation.interrupt
            frame, aggregation, sample_note = watched(read, remote=False, cancel=cancel)
        else:
            frame, aggregation, sample_note = read()
        sha = (
            watched(source.fingerprint, remote=False) if isinstance(source, DatasetSource) else None
        )
    except (DataError, SpecError) as error:
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    finally:
        progress.done()
        engine.close()
        if isinstance(source, PushdownSource):
            source.release()
    if sha is None:
        from fairscan.data.load import frame_sha256

        sha = frame_sha256(frame)
    prepared = _prepare(
        loaded,
        spec,
        roles,
        frame,
        source.location,
        sha,
        extra_roles,
        located,
        spec_issues,
        prefiltered=aggregation is None,
        aggregated=aggregation,
    )
    prepared = replace(
        prepared, data_source=engine.provenance or getattr(source, "provenance", None)
    )
    if sample_note is None:
        return prepared
    n_raw, note = sample_note
    data = replace(prepared.data, n_rows_raw=n_raw, warnings=(*prepared.data.warnings, note))
    return replace(prepared, data=data)


def _in_engine(source: DatasetSource | LazyTable | PushdownSource) -> bool:
    """A dataset or a polars LazyFrame (not a table aggregated elsewhere) prepared in DuckDB,
    when DuckDB and Ibis are installed (``fairscan[sql]``); else streamed by polars."""
    from fairscan.data import engine_scan
    from fairscan.data.pushdown import PushdownSource

    if isinstance(source, PushdownSource) or source.weight is not None:
        return False
    return engine_scan.available()


def _read_streamed(
    spec: AuditSpec,
    roles: list[ScanRoles],
    source: DatasetSource | LazyTable | PushdownSource,
    extra_roles: Sequence[RoleColumn],
    engine: Engine,
) -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
    """(table, its aggregation or None for a sample, (data rows, note) of a sample).

    Database tables, datasets and polars LazyFrames are prepared by one push-down path
    (:mod:`fairscan.data.pushdown`; the latter two in DuckDB, :mod:`fairscan.data.engine_scan`);
    a uniform sample of a dataset (``data.sample``) and a table aggregated in another engine
    are streamed by :mod:`fairscan.data.stream`."""
    from fairscan.data.load import available_memory
    from fairscan.data.pushdown import PushdownSource, pushed_down
    from fairscan.data.stream import aggregated_table, sampled_table, stream_query

    columns = used_columns(spec, roles, extra_roles)
    if isinstance(source, PushdownSource) or (spec.data.sample is None and _in_engine(source)):
        other = {*spec.attributes, *extra_columns(spec, roles), *(r.column for r in extra_roles)}
        cuts = threshold_only_columns(list(spec.scans), roles, other)
        calibrations = calibration_only_columns(spec, roles, other)
        if isinstance(source, PushdownSource):  # prepared in the database (or engine) itself
            _check_names(spec, roles, extra_roles, source.columns(columns))
            by_value = read_by_value(spec, roles, extra_roles)
            return pushed_down(source, spec, columns, cuts, calibrations, by_value)
        return _pushed_to_engine(spec, roles, extra_roles, source, engine, columns, cuts)
    progress = engine.progress or (lambda rows: None)
    query, schema = stream_query(
        source.scan(),
        sliceable=source.sliceable,
        columns=used_columns(spec, roles, extra_roles),
        attributes=list(spec.attributes),
        filter=spec.data.filter,
        strip_whitespace=spec.data.strip_whitespace,
        progress=progress,
        weight=source.weight,
    )
    _check_names(spec, roles, extra_roles, list(schema))
    sample = spec.data.sample
    if sample is not None:
        frame, n_raw, n_filtered = sampled_table(query, sample.rows, sample.seed)
        note = (
            f"audited a uniform sample of {frame.height:,} of the {n_filtered:,} rows the "
            f"filter keeps (data.sample, seed {sample.seed})"
        )
        return frame, None, (n_raw, note)
    engine.provenance = _polars_provenance(source)
    available = available_memory()
    # distinct rows held while merging: about 3 copies of ~16 bytes a column
    max_rows = None if available is None else available // (3 * 16 * (len(query.columns) + 1))
    frame, aggregation = aggregated_table(
        query,
        schema,
        attributes=list(spec.attributes),
        discretize=spec.discretize,
        max_rows=max_rows,
        by_value=read_by_value(spec, roles, extra_roles),
    )
    return frame, aggregation, None


def _polars_provenance(source: DatasetSource | LazyTable) -> dict[str, Any] | None:
    """The report's data_source for a dataset streamed by polars (without ``fairscan[sql]``),
    as :func:`~fairscan.data.engine_source.engine_source` gives it for DuckDB; None for a table
    aggregated elsewhere (it carries its own)."""
    import polars as pl

    from fairscan.data.sources import DatasetSource

    if not isinstance(source, DatasetSource) or source.weight is not None:
        return None
    provenance: dict[str, Any] = {
        "kind": "url" if source.remote else "files",
        "engine": "polars",
        "engine_version": pl.__version__,
        "reader": "polars streaming engine",
        "format": source.format,
    }
    if source.files:
        provenance["files"] = len(source.files)
    return provenance


def _check_names(
    spec: AuditSpec,
    roles: list[ScanRoles],
    extra_roles: Sequence[RoleColumn],
    names: Sequence[str],
) -> None:
    """A DataError for the columns the spec names that the streamed or database table (its
    columns ``names``) lacks, before any pass over it."""
    from fairscan.data.prepare import column_issues

    requests = [*(request for r in roles for request in r.requests()), *extra_roles]
    issues = column_issues(requests, list(spec.attributes), extra_columns(spec, roles), names)
    if issues:
        raise DataError(issues=issues)


def _pushed_to_engine(
    spec: AuditSpec,
    roles: list[ScanRoles],
    extra_roles: Sequence[RoleColumn],
    source: DatasetSource | LazyTable,
    engine: Engine,
    columns: Sequence[str],
    cuts: dict[str, tuple[tuple[float, ...], ThresholdRule, bool]],
) -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
    """A dataset or LazyFrame prepared in DuckDB; the aggregate in the source's polars types."""
    from fairscan.data.engine_scan import restore_types
    from fairscan.data.engine_source import engine_source
    from fairscan.data.filters import filter_columns, parse_filter
    from fairscan.data.pushdown import pushed_down

    keys = sorted(filter_columns(parse_filter(spec.data.filter))) if spec.data.filter else []
    pushdown, schema = engine_source(source, engine, [*columns, *keys])
    _check_names(spec, roles, extra_roles, list(schema))
    # probabilities stay per row (not binned as for a database table): the seeded null
    # replicates of a calibration scan are those of the rows, as in memory
    by_value = read_by_value(spec, roles, extra_roles)
    frame, aggregation, note = pushed_down(pushdown, spec, columns, cuts, {}, by_value)
    replaced = [*cuts, *(aggregation.binned if aggregation else ())]
    engine.provenance = pushdown.provenance
    return restore_types(frame, schema, replaced), aggregation, note


def prepare_lazy(
    loaded: LoadedSpec,
    data: Any,
    *,
    spec: AuditSpec | None = None,
    located: bool = True,
) -> PreparedAudit:
    """Check the spec, then stream a lazy table (``fairscan.audit``): a polars LazyFrame, a
    DuckDB relation / Dask / PySpark DataFrame aggregated where it lives, or a
    :class:`~fairscan.data.sources.DatasetSource` (a directory, glob or URL)."""
    from fairscan.data.backends import lazy_table
    from fairscan.data.filters import filter_columns, parse_filter
    from fairscan.data.sources import DatasetSource

    spec = loaded.spec if spec is None else spec
    roles, spec_issues = checked_roles(loaded, spec)
    if isinstance(data, DatasetSource):
        return _prepare_streamed(loaded, spec, roles, data, (), spec_issues, None, located)
    filter_keys: list[str] = []
    if spec.data.filter is not None:
        try:
            filter_keys = sorted(filter_columns(parse_filter(spec.data.filter)))
        except SpecError as error:
            raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    try:
        source = lazy_table(data, used_columns(spec, roles, ()), filter_keys)
    except DataError as error:
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    return _prepare_streamed(loaded, spec, roles, source, (), spec_issues, None, located)


def _stream_progress(progress: Progress, location: str) -> Callable[[int], None]:
    """Progress of a streamed read, in data rows read (a pass per quantile column, then one)."""
    progress.start(f"reading {location} (rows read)", None)

    def advance(rows: int) -> None:
        progress.advance(rows)

    return advance


def prepare_frame(
    loaded: LoadedSpec,
    frame: pl.DataFrame,
    *,
    data_path: Path | str,
    data_sha256: str,
    spec: AuditSpec | None = None,
    located: bool = True,
    extra_roles: Sequence[RoleColumn] = (),
) -> PreparedAudit:
    """Check the spec, then check and encode a table already loaded (``fairscan.audit``).

    ``spec`` defaults to ``loaded.spec``; ``data_path`` and ``data_sha256`` go to the report's
    provenance. Issues are located in the spec file when ``located``, else name field paths.
    """
    spec = loaded.spec if spec is None else spec
    roles, spec_issues = checked_roles(loaded, spec)
    return _prepare(
        loaded, spec, roles, frame, data_path, data_sha256, extra_roles, located, spec_issues
    )


def _prepare(
    loaded: LoadedSpec,
    spec: AuditSpec,
    roles: list[ScanRoles],
    frame: pl.DataFrame,
    data_path: Path | str,
    data_sha256: str,
    extra_roles: Sequence[RoleColumn],
    located: bool,
    spec_issues: list[Issue] | None = None,
    *,
    prefiltered: bool = False,
    aggregated: Aggregation | None = None,
) -> PreparedAudit:
    """Check and encode the table for the checked spec: the step every entry point shares.

    ``prefiltered``: the streaming reader applied ``data.filter`` already (a sample);
    ``aggregated``: ``frame`` holds distinct rows with counts (a streamed dataset).

    ``spec_issues`` (from :func:`check_spec`) are raised here, together with what the data
    checks find, so a user fixes both in one round.
    """
    spec_issues = spec_issues or []
    from fairscan.data.prepare import prepare_data
    from fairscan.data.weights import apply_weights, drop_zero_weights

    weight = spec.columns.weight
    try:
        if weight is not None:
            frame = drop_zero_weights(frame, weight)
        data = prepare_data(
            frame,
            roles=[*(request for r in roles for request in r.requests()), *extra_roles],
            attributes=list(spec.attributes),
            discretize=spec.discretize,
            max_categories=spec.max_categories,
            filter=None if prefiltered else spec.data.filter,
            extra_columns=extra_columns(spec, roles),
            strip_whitespace=spec.data.strip_whitespace,
            aggregated=aggregated,
        )
        if weight is not None:
            data = apply_weights(data, weight)
    except (DataError, SpecError) as error:
        raise locate(loaded, with_spec_issues(error, spec_issues), located) from error
    if spec_issues:
        raise locate(loaded, SpecError(issues=spec_issues), located)
    return PreparedAudit(
        loaded=loaded,
        spec=spec,
        data_path=data_path,
        data_sha256=data_sha256,
        data=data,
        roles=tuple(roles),
        located=located,
    )


def read_by_value(
    spec: AuditSpec, roles: list[ScanRoles], extra_roles: Sequence[RoleColumn]
) -> list[str]:
    """The columns some scan reads by value (its roles, model covariates and other extra
    columns): a binned attribute among them is kept by value beside its bins, so that every
    engine fits a scan's models on the values a file read into memory gives (issue 37)."""
    requests = [*(request for r in roles for request in r.requests()), *extra_roles]
    return list(dict.fromkeys([*(r.column for r in requests), *extra_columns(spec, roles)]))


def calibration_only_columns(
    spec: AuditSpec, roles: list[ScanRoles], other_columns: set[str]
) -> dict[str, tuple[int, ...]]:
    """Probability columns every scan reads only as per-row expectations of a calibration
    bias scan (binary outcome, Bernoulli score, unweighted rows): column -> the scans'
    directions (+1 positive, -1 negative). A database then returns them in bins per
    profile, with the per-profile sums the scan searches and scores with
    (:mod:`fairscan.data.pushdown`). ``other_columns``: columns read otherwise."""
    if spec.columns.weight is not None:
        return {}
    raw = set(other_columns)
    found: dict[str, set[int]] = {}
    for scan, scan_roles in zip(spec.scans, roles, strict=True):
        for request in (scan_roles.outcome, scan_roles.decision):
            if request is not None:
                raw.add(request.column)
        raw.update(column.column for _, column in scan_roles.classes)
        prediction = scan_roles.prediction
        if prediction is None:
            continue
        calibration = (
            scan.type == "bias_scan"
            and getattr(scan, "outcome_type", None) == "binary"
            and getattr(scan, "score", None) == "bernoulli"
            and prediction.kind == "probability"
        )
        if not calibration:
            raw.add(prediction.column)
            continue
        found.setdefault(prediction.column, set()).add(
            -1 if getattr(scan, "direction", "positive") == "negative" else 1
        )
    return {c: tuple(sorted(d)) for c, d in found.items() if c not in raw}


def threshold_only_columns(
    scans: list[Any], roles: list[ScanRoles], other_columns: set[str]
) -> dict[str, tuple[tuple[float, ...], ThresholdRule, bool]]:
    """Prediction columns every scan reads only through a numeric threshold (no scan needs
    their values): column -> (thresholds, rule, read as a probability). A database can then
    return one value per side of each threshold instead of every distinct prediction
    (:mod:`fairscan.data.pushdown`). ``other_columns``: columns read otherwise (attributes,
    extra columns, other roles), never collapsed."""
    from fairscan.scans import SCAN_TYPES

    raw = set(other_columns)
    found: dict[str, tuple[set[float], set[ThresholdRule], bool]] = {}
    for scan, scan_roles in zip(scans, roles, strict=True):
        for request in (scan_roles.outcome, scan_roles.decision):
            if request is not None:
                raw.add(request.column)
        raw.update(column.column for _, column in scan_roles.classes)
        prediction = scan_roles.prediction
        if prediction is None:
            continue
        needs = SCAN_TYPES[scan.type].roles_for(scan)
        threshold = scan_roles.threshold
        if needs & {"probability", "score", "expectation"} or not isinstance(
            threshold, int | float
        ):
            raw.add(prediction.column)
            continue
        values, rules, probability = found.get(prediction.column, (set(), set(), False))
        values.add(float(threshold))
        rules.add(scan_roles.threshold_rule)
        found[prediction.column] = (
            values,
            rules,
            probability or prediction.kind == "probability",
        )
    return {
        column: (tuple(sorted(values)), next(iter(rules)), probability)
        for column, (values, rules, probability) in found.items()
        if column not in raw and len(rules) == 1
    }
