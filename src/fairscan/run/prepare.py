"""Data preparation: the spec's data read (a file, a streamed dataset, a lazy table, a database
table or a table already in memory), checked and encoded for the scans. Every entry point
(:func:`prepare_audit` for a spec file, :func:`prepare_frame` and :func:`prepare_lazy` for
``fairscan.audit``) builds the read plan (:func:`fairscan.run.plan.read_plan`), asks its
:class:`~fairscan.data.source.Source` for the table, and checks it in one step,
:func:`_prepare`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairscan.errors import Issue, ScanError, SpecError
from fairscan.progress import NullProgress, Progress, phase
from fairscan.run.options import RunOptions
from fairscan.run.plan import read_plan
from fairscan.run.specs import (
    apply_overrides,
    checked_roles,
    errors_located,
    extra_columns,
    load_spec,
    locate,
)
from fairscan.spec.load import LoadedSpec
from fairscan.spec.models import AuditSpec

if TYPE_CHECKING:
    import polars as pl

    from fairscan.data.source import Read, Source
    from fairscan.data.table import PreparedData, RoleColumn
    from fairscan.scans.roles import ScanRoles


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
    """Load and check the data a validated spec names in ``data.path`` or ``data.connection``
    (relative to the file it is written in); issues point at the spec file's lines when
    ``located`` (a spec built from a mapping, :func:`~fairscan.run.specs.loaded_from_mapping`,
    has none)."""
    from fairscan.data.source import source_of

    options = options or RunOptions()
    spec = apply_overrides(loaded.spec, options)
    roles, spec_issues = checked_roles(loaded, spec)
    where = "data.connection" if spec.data.connection is not None else "data.path"
    with errors_located(loaded, spec_issues, located):
        # relative to the file the path is written in (a parent spec, with extends)
        source = source_of(spec.data, Path(loaded.file_of(where)).parent)
    return _prepare_source(loaded, spec, roles, source, spec_issues, options, extra_roles, located)


def prepare_lazy(
    loaded: LoadedSpec,
    data: Any,
    *,
    spec: AuditSpec | None = None,
    located: bool = True,
    progress: Progress | None = None,
) -> PreparedAudit:
    """Check the spec, then stream a lazy table (``fairscan.audit``): a polars LazyFrame, a
    DuckDB relation / Dask / PySpark DataFrame aggregated where it lives, or a
    :class:`~fairscan.data.sources.DatasetSource` (a directory, glob or URL)."""
    from fairscan.data.source import source_for

    spec = loaded.spec if spec is None else spec
    roles, spec_issues = checked_roles(loaded, spec)
    with errors_located(loaded, spec_issues, located):
        source = source_for(data, read_plan(spec, roles))
    options = RunOptions(progress=progress or NullProgress())
    return _prepare_source(loaded, spec, roles, source, spec_issues, options, (), located)


def prepare_frame(
    loaded: LoadedSpec,
    frame: pl.DataFrame,
    *,
    data_path: Path | str,
    data_sha256: str,
    spec: AuditSpec | None = None,
    located: bool = True,
    extra_roles: Sequence[RoleColumn] = (),
    progress: Progress | None = None,
) -> PreparedAudit:
    """Check the spec, then check and encode a table already loaded (``fairscan.audit``).

    ``spec`` defaults to ``loaded.spec``; ``data_path`` and ``data_sha256`` go to the report's
    provenance. Issues are located in the spec file when ``located``, else name field paths.
    """
    from fairscan.data.source import FrameSource

    spec = loaded.spec if spec is None else spec
    roles, spec_issues = checked_roles(loaded, spec)
    source = FrameSource(frame, str(data_path), data_sha256)
    options = RunOptions(progress=progress or NullProgress())
    prepared = _prepare_source(
        loaded, spec, roles, source, spec_issues, options, extra_roles, located
    )
    # the caller's own label (a Path stays a Path)
    return replace(prepared, data_path=data_path)


def _prepare_source(
    loaded: LoadedSpec,
    spec: AuditSpec,
    roles: list[ScanRoles],
    source: Source,
    spec_issues: list[Issue],
    options: RunOptions | None,
    extra_roles: Sequence[RoleColumn],
    located: bool,
) -> PreparedAudit:
    """Read the plan's table from ``source``, then check and encode it."""
    plan = read_plan(spec, roles, extra_roles)
    progress = (options or RunOptions()).progress
    with errors_located(loaded, spec_issues, located):
        read = source.read(plan, progress)
    prepared = _prepare(
        loaded, spec, roles, read, source.location, extra_roles, located, spec_issues, progress
    )
    if read.provenance is not None:
        prepared = replace(prepared, data_source=read.provenance)
    if read.sample is None:
        return prepared
    n_raw, note = read.sample
    data = replace(prepared.data, n_rows_raw=n_raw, warnings=(*prepared.data.warnings, note))
    return replace(prepared, data=data)


def _prepare(
    loaded: LoadedSpec,
    spec: AuditSpec,
    roles: list[ScanRoles],
    read: Read,
    data_path: Path | str,
    extra_roles: Sequence[RoleColumn],
    located: bool,
    spec_issues: list[Issue],
    progress: Progress,
) -> PreparedAudit:
    """Check and encode the table read for the checked spec: the step every entry point
    shares. ``read.prefiltered``: the source applied ``data.filter`` already (a sample);
    ``read.aggregation``: ``read.frame`` holds distinct rows with counts.

    ``spec_issues`` (from :func:`check_spec`) are raised here, together with what the data
    checks find, so a user fixes both in one round.
    """
    from fairscan.data.prepare import prepare_data
    from fairscan.data.weights import apply_weights, drop_zero_weights

    weight = spec.columns.weight
    frame = read.frame
    rows = "distinct rows" if read.aggregation is not None else "rows"
    with (
        errors_located(loaded, spec_issues, located),
        phase(progress, f"preparing {frame.height:,} {rows}"),
    ):
        if weight is not None:
            frame = drop_zero_weights(frame, weight)
        data = prepare_data(
            frame,
            roles=[*(request for r in roles for request in r.requests()), *extra_roles],
            attributes=list(spec.attributes),
            discretize=spec.discretize,
            max_categories=spec.max_categories,
            filter=None if read.prefiltered else spec.data.filter,
            extra_columns=extra_columns(spec, roles),
            strip_whitespace=spec.data.strip_whitespace,
            aggregated=read.aggregation,
        )
        if weight is not None:
            data = apply_weights(data, weight)
    if spec_issues:
        raise locate(loaded, SpecError(issues=spec_issues), located)
    return PreparedAudit(
        loaded=loaded,
        spec=spec,
        data_path=data_path,
        data_sha256=read.sha256,
        data=data,
        roles=tuple(roles),
        located=located,
    )
