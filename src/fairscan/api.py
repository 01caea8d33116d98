"""Library API: load and check a spec, prepare its data, run its scans, build and write reports.

Nothing here prints, reads environment variables or exits; the CLI does that.

The steps are shared by every entry point: ``audit run`` reads a spec file and its data file
(:func:`prepare_audit`); ``fairscan.audit`` (:mod:`fairscan.inmemory`) validates keyword
arguments with the same models (:func:`spec_from_mapping`) and audits a table already in memory
(:func:`prepare_frame`). Both run through :func:`run_prepared`: same statistics, same seeds.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fairscan import __version__
from fairscan.errors import (
    DataError,
    ExitCode,
    FairscanError,
    Issue,
    ScanError,
    SpecError,
    UsageError,
)
from fairscan.progress import NullProgress, Progress, ScanProgress
from fairscan.report.models import (
    AuditReport,
    BaselineComparison,
    Environment,
    Provenance,
    ScanResult,
    ScanTiming,
    build_verdict,
)
from fairscan.spec import load as spec_load
from fairscan.spec.load import LoadedSpec
from fairscan.spec.models import AuditSpec

if TYPE_CHECKING:
    import polars as pl

    from fairscan.data.backends import LazyTable
    from fairscan.data.sources import DatasetSource
    from fairscan.data.table import Aggregation, PreparedData, RoleColumn
    from fairscan.engine.critical import Detectability
    from fairscan.engine.executors import Executor
    from fairscan.scans.roles import ScanRoles


def load_spec(path: Path | str) -> LoadedSpec:
    """Read, parse and validate a ``*.audit.yaml`` file against the registered scan types."""
    from fairscan.scans import AUDIT_SPEC

    return spec_load.load_spec(path, AUDIT_SPEC)


def load_spec_from_text(text: str, filename: str = "<spec>") -> LoadedSpec:
    """Parse and validate spec text; ``filename`` is used in messages and as its path."""
    from fairscan.scans import AUDIT_SPEC

    return spec_load.load_spec_from_text(text, AUDIT_SPEC, filename)


@dataclass(frozen=True)
class RunOptions:
    """Overrides and settings of one run (the CLI fills these from flags)."""

    out_dir: Path | None = None  # overrides output.dir (relative to the working directory)
    seed: int | None = None
    replicates: int | None = None
    workers: int | None = None
    executor: str | None = None  # overrides significance.executor: local or dask://HOST:PORT
    write: bool = True
    progress: Progress = field(default_factory=NullProgress)
    baseline: Path | None = None  # a previous JSON report to label findings against
    debug: bool = False  # a scan's internal error carries its traceback into the report


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
    # aggregated data expanded to rows, made once for the scans that work on rows
    _rows: dict[str, PreparedData] = field(default_factory=dict, compare=False, repr=False)

    def data_for(self, weighted_rows: bool) -> PreparedData:
        """The data a scan type reads: aggregated rows with their counts if it can use them,
        else one row per data row (expanded once, after a memory check)."""
        if weighted_rows or self.data.row_weight is None:
            return self.data
        if "rows" not in self._rows:
            _check_expansion(self.data)
            self._rows["rows"] = self.data.expanded()
        return self._rows["rows"]


@dataclass(frozen=True)
class AuditOutcome:
    report: AuditReport
    written: list[Path]

    formats: tuple[str, ...] = ()  # output.formats of the spec (the CLI handles `github`)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode(self.report.verdict.exit_code)


def register_render_hooks() -> None:
    """Import the scan registry, which registers the scan types' render hooks as the report
    layer's defaults: ``report.to_html()`` and ``report.write()`` then render every type's
    detail as ``audit run`` does."""
    import fairscan.scans  # noqa: F401


def load_report(path: Path | str) -> AuditReport:
    """Read a JSON report written by ``audit run`` (a baseline, or either side of a diff).

    The report object renders itself (``report.findings``, ``report.to_html()``,
    ``report.write(dir)``) with the registered scan types' render hooks.
    """
    from fairscan.report.read import read_report

    register_render_hooks()
    # the spec's file rules (regular file, size cap) and a located message for any bad shape
    return read_report(path)


def diff_reports(
    old_path: Path | str, new_path: Path | str
) -> tuple[AuditReport, BaselineComparison]:
    """Compare two JSON reports (``audit diff``): the new report and the labelled comparison."""
    from fairscan.report.baseline import compare_reports

    old = load_report(old_path)
    new = load_report(new_path)
    fail_on = str(new.provenance.parameters.get("gate", {}).get("fail_on", "significant"))
    return new, compare_reports(old, new, baseline_path=str(old_path), fail_on=fail_on)


def _locate(loaded: LoadedSpec, error: FairscanError, located: bool = True) -> FairscanError:
    """Attach the spec file and the YAML line of each issue's field (nothing if not ``located``)."""
    if not located:
        return error
    issues = []
    for issue in error.issues:
        if issue.file is None and issue.field is not None:
            line, col = loaded.locate_field(issue.field)
            issue = issue.located(loaded.file_of(issue.field), line, col)
        elif issue.file is None:
            issue = issue.located(str(loaded.path), None, None)
        issues.append(issue)
    return error.with_issues(issues)


def scan_roles(spec: AuditSpec) -> tuple[list[ScanRoles], list[Issue]]:
    """Each scan's role columns (one recommendation rule), and issues for those missing."""
    from fairscan.scans import SCAN_TYPES
    from fairscan.scans.roles import resolve_roles

    roles: list[ScanRoles] = []
    issues: list[Issue] = []
    for i, scan in enumerate(spec.scans):
        needs = SCAN_TYPES[scan.type].roles_for(scan)
        resolved, problems = resolve_roles(spec.columns, scan, i, needs)
        roles.append(resolved)
        issues += problems
    return roles, issues


def check_spec(spec: AuditSpec) -> list[Issue]:
    """Every check that needs no data: roles each scan needs, and each type's own checks."""
    from fairscan.scans import SCAN_TYPES

    _, issues = scan_roles(spec)
    for i, scan in enumerate(spec.scans):
        check = SCAN_TYPES[scan.type].check
        if check is None:
            continue
        for issue in check(scan, spec):
            field = f"scans[{i}]" + (f".{issue.field}" if issue.field else "")
            issues.append(Issue(issue.message, hint=issue.hint, field=field, column=issue.column))
    return issues


def extra_columns(spec: AuditSpec, roles: list[ScanRoles]) -> dict[str, str]:
    """Further data columns the scans read: column -> spec field path (first scan naming it)."""
    from fairscan.scans import SCAN_TYPES

    columns: dict[str, str] = {}
    for i, (scan, scan_roles_) in enumerate(zip(spec.scans, roles, strict=True)):
        hook = SCAN_TYPES[scan.type].extra_columns
        if hook is not None:
            for column, field_path in hook(scan).items():
                columns.setdefault(column, f"scans[{i}].{field_path}")
        for column, field_path in scan_roles_.threshold_columns().items():
            columns.setdefault(column, field_path)
    return columns


def apply_overrides(spec: AuditSpec, options: RunOptions) -> AuditSpec:
    significance = spec.significance
    updates: dict[str, int | str] = {}
    if options.seed is not None:
        updates["seed"] = options.seed
    if options.replicates is not None:
        updates["replicates"] = options.replicates
    if options.workers is not None:
        updates["workers"] = options.workers
    if options.executor is not None:
        updates["executor"] = options.executor
    if updates:
        significance = type(significance).model_validate({**significance.model_dump(), **updates})
        spec = spec.model_copy(update={"significance": significance})
    return spec


def prepare_audit(
    spec_path: Path, options: RunOptions | None = None, extra_roles: Sequence[RoleColumn] = ()
) -> PreparedAudit:
    """Load and validate the spec, then load and check its data (no scanning).

    ``extra_roles``: role columns to load besides those the scans need (``audit power``).
    """
    from fairscan.data.load import file_sha256, read_table
    from fairscan.data.netio import watched

    options = options or RunOptions()
    loaded = load_spec(Path(spec_path))
    spec = apply_overrides(loaded.spec, options)
    roles, spec_issues = _checked_roles(loaded, spec)
    # relative to the file the path is written in (a parent spec, with extends)
    try:
        data_path = (Path(loaded.file_of("data.path")).parent / spec.data.path).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable parent folder
        error = DataError(
            f"cannot resolve the data path {spec.data.path!r}: {exc}",
            field="data.path",
            hint="point data.path at a regular data file (check for a symlink loop)",
        )
        raise _locate(loaded, _with_spec_issues(error, spec_issues)) from exc
    try:
        source = _streamed_source(spec, data_path)
    except DataError as error:
        raise _locate(loaded, _with_spec_issues(error, spec_issues)) from error
    if source is not None:
        return _prepare_streamed(loaded, spec, roles, source, extra_roles, spec_issues, options)
    try:
        # in a watched thread: Ctrl-C ends a long read at once
        frame = watched(lambda: read_table(data_path), remote=False)
        sha = watched(lambda: file_sha256(data_path), remote=False)
    except DataError as error:
        raise _locate(loaded, _with_spec_issues(error, spec_issues)) from error
    return _prepare(
        loaded,
        spec,
        roles,
        frame,
        data_path,
        sha,
        extra_roles,
        located=True,
        spec_issues=spec_issues,
    )


def _check_expansion(data: PreparedData) -> None:
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


def _streamed_source(spec: AuditSpec, data_path: Path) -> DatasetSource | None:
    """The data as a lazily scanned dataset when it is one (a directory, glob or URL), when
    it is sampled or streaming is asked for, or when the file is too large to read at once;
    None: read the file into memory."""
    from fairscan.data.load import fits_in_memory
    from fairscan.data.sources import dataset_source, file_source

    source = dataset_source(spec.data.path, data_path)
    if source is not None or spec.data.streaming is False:
        return source
    if spec.data.streaming or spec.data.sample is not None or not fits_in_memory(data_path):
        return file_source(data_path)
    return None


def _used_columns(
    spec: AuditSpec, roles: list[ScanRoles], extra_roles: Sequence[RoleColumn]
) -> list[str]:
    """Every data column the audit reads: roles, attributes and the scans' extra columns."""
    columns = [request.column for r in roles for request in r.requests()]
    columns += [request.column for request in extra_roles]
    columns += list(spec.attributes)
    columns += list(extra_columns(spec, roles))
    return list(dict.fromkeys(columns))


def _prepare_streamed(
    loaded: LoadedSpec,
    spec: AuditSpec,
    roles: list[ScanRoles],
    source: DatasetSource | LazyTable,
    extra_roles: Sequence[RoleColumn] = (),
    spec_issues: list[Issue] | None = None,
    options: RunOptions | None = None,
    located: bool = True,
) -> PreparedAudit:
    """Stream a dataset or lazy table: a uniform sample of its rows (``data.sample``), or its
    distinct rows with their counts (the aggregate scans run on those; the others get them
    as rows)."""
    from fairscan.data.netio import watched
    from fairscan.data.sources import DatasetSource

    spec_issues = spec_issues or []
    progress = (options or RunOptions()).progress
    try:
        # in a watched thread: interruptible, and a stalled remote read times out
        frame, aggregation, sample_note = watched(
            lambda: _read_streamed(
                spec, roles, source, extra_roles, _stream_progress(progress, source.location)
            ),
            remote=isinstance(source, DatasetSource) and source.remote,
        )
        sha = (
            watched(source.fingerprint, remote=False) if isinstance(source, DatasetSource) else None
        )
    except (DataError, SpecError) as error:
        raise _locate(loaded, _with_spec_issues(error, spec_issues), located) from error
    finally:
        progress.done()
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
    if sample_note is None:
        return prepared
    n_raw, note = sample_note
    data = replace(prepared.data, n_rows_raw=n_raw, warnings=(*prepared.data.warnings, note))
    return replace(prepared, data=data)


def _read_streamed(
    spec: AuditSpec,
    roles: list[ScanRoles],
    source: DatasetSource | LazyTable,
    extra_roles: Sequence[RoleColumn],
    progress: Callable[[int], None],
) -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
    """(table, its aggregation or None for a sample, (data rows, note) of a sample)."""
    from fairscan.data.load import available_memory
    from fairscan.data.stream import aggregated_table, sampled_table, stream_query

    query, schema = stream_query(
        source.scan(),
        sliceable=source.sliceable,
        columns=_used_columns(spec, roles, extra_roles),
        attributes=list(spec.attributes),
        filter=spec.data.filter,
        strip_whitespace=spec.data.strip_whitespace,
        progress=progress,
        weight=source.weight,
    )
    sample = spec.data.sample
    if sample is not None:
        frame, n_raw, n_filtered = sampled_table(query, sample.rows, sample.seed)
        note = (
            f"audited a uniform sample of {frame.height:,} of the {n_filtered:,} rows the "
            f"filter keeps (data.sample, seed {sample.seed})"
        )
        return frame, None, (n_raw, note)
    available = available_memory()
    # distinct rows held while merging: about 3 copies of ~16 bytes a column
    max_rows = None if available is None else available // (3 * 16 * (len(query.columns) + 1))
    frame, aggregation = aggregated_table(
        query,
        schema,
        attributes=list(spec.attributes),
        discretize=spec.discretize,
        max_rows=max_rows,
    )
    return frame, aggregation, None


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
    roles, spec_issues = _checked_roles(loaded, spec)
    if isinstance(data, DatasetSource):
        return _prepare_streamed(loaded, spec, roles, data, (), spec_issues, None, located)
    filter_keys: list[str] = []
    if spec.data.filter is not None:
        try:
            filter_keys = sorted(filter_columns(parse_filter(spec.data.filter)))
        except SpecError as error:
            raise _locate(loaded, _with_spec_issues(error, spec_issues), located) from error
    try:
        source = lazy_table(data, _used_columns(spec, roles, ()), filter_keys)
    except DataError as error:
        raise _locate(loaded, _with_spec_issues(error, spec_issues), located) from error
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
    roles, spec_issues = _checked_roles(loaded, spec)
    return _prepare(
        loaded, spec, roles, frame, data_path, data_sha256, extra_roles, located, spec_issues
    )


def _checked_roles(loaded: LoadedSpec, spec: AuditSpec) -> tuple[list[ScanRoles], list[Issue]]:
    """Each scan's role columns (those it could resolve) and every data-free issue of the spec
    (:func:`check_spec`). The issues are raised after the data checks, so one run reports the
    problems of both."""
    roles, _ = scan_roles(spec)
    return roles, check_spec(spec)


def _with_spec_issues(error: FairscanError, spec_issues: list[Issue]) -> FairscanError:
    """The spec's own issues first, then those the data checks found."""
    if not spec_issues:
        return error
    return SpecError(issues=[*spec_issues, *error.issues])


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

    try:
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
    except (DataError, SpecError) as error:
        raise _locate(loaded, _with_spec_issues(error, spec_issues), located) from error
    if spec_issues:
        raise _locate(loaded, SpecError(issues=spec_issues), located)
    return PreparedAudit(
        loaded=loaded,
        spec=spec,
        data_path=data_path,
        data_sha256=data_sha256,
        data=data,
        roles=tuple(roles),
        located=located,
    )


# --- specs that are not (only) a file: fairscan.audit keyword arguments ----------------------


def spec_from_mapping(raw: Mapping[str, Any]) -> AuditSpec:
    """Validate a spec given as a mapping (as a YAML file would read: plain dicts, lists,
    strings, numbers) with the registered models, the ``defaults:`` applied, exactly as
    :func:`load_spec` validates a file. Issues name field paths (``scans[0].penalty``), with
    the messages ``audit validate`` prints, in one :class:`SpecError`."""
    from pydantic import ValidationError

    from fairscan.scans import AUDIT_SPEC
    from fairscan.spec.issues import validation_issues
    from fairscan.spec.models import scan_models_of
    from fairscan.spec.resolve import apply_defaults

    data = apply_defaults(dict(raw), scan_models_of(AUDIT_SPEC))
    try:
        return AUDIT_SPEC.model_validate(data)
    except ValidationError as exc:
        raise SpecError(issues=validation_issues(exc, data, None, None, AUDIT_SPEC)) from exc


def spec_mapping(loaded: LoadedSpec) -> dict[str, Any]:
    """A spec file as the mapping it was validated from: ``extends`` merged, before the
    ``defaults:`` are given to the scans (so keys merged over it can change them)."""
    from fairscan.spec.loader import load_spec_text
    from fairscan.spec.resolve import resolve_extends

    name = str(loaded.path)
    raw, positions = load_spec_text(loaded.text, name)
    merged, _, _, _ = resolve_extends(raw, positions, loaded.path, name)
    return merged


def spec_json(spec: AuditSpec) -> str:
    """The canonical JSON of a resolved spec (sorted keys, no spaces): what is hashed."""
    return json.dumps(
        spec.model_dump(mode="json", by_alias=True),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def resolved_spec(spec: AuditSpec, path: Path | str) -> LoadedSpec:
    """A :class:`LoadedSpec` for a spec that was not read from one file as it is: its text is
    the canonical JSON (:func:`spec_json`) and its sha256 that text's. ``path`` is what the
    report's provenance names (``<fairscan.audit arguments>``, or the spec file keyword
    arguments were merged over); paths in the spec are relative to its folder. Prepare it with
    ``located=False``: it has no lines to point at."""
    from fairscan.spec.loader import Positions

    text = spec_json(spec)
    return LoadedSpec(
        spec=spec,
        path=Path(path),
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        positions=Positions(line=1, col=1, kind="mapping"),
    )


# distribution name -> import name of the libraries whose versions a report records
_LIBRARIES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "scikit-learn": "sklearn",
    "polars": "polars",
    "pydantic": "pydantic",
    "pyyaml": "yaml",
}


def _environment() -> Environment:
    """Python, platform and the versions of the libraries this run used; a library the run's
    scans never imported is listed as "not used" (reading installed package metadata instead
    would cost more start-up time than the rest of a small audit)."""
    packages = {"fairscan": __version__}
    for name, module in _LIBRARIES.items():
        version = getattr(sys.modules.get(module), "__version__", None)
        packages[name] = version if isinstance(version, str) else "not used"
    return Environment(
        python=sys.version.split()[0], platform=platform.platform(), packages=packages
    )


def scan_seed(root: np.random.SeedSequence, scan_id: str) -> np.random.SeedSequence:
    """Each scan's stream is keyed by its id, so adding or reordering scans changes nothing else."""
    key = int.from_bytes(hashlib.sha256(scan_id.encode()).digest()[:4], "little")
    return np.random.SeedSequence(entropy=root.entropy, spawn_key=(*root.spawn_key, key))


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run_scan(
    prepared: PreparedAudit,
    index: int,
    root: np.random.SeedSequence,
    workers: int,
    progress: Progress,
    debug: bool = False,
    executor: Executor | None = None,
) -> ScanResult:
    """Run one scan of a prepared audit.

    A failing scan marks itself ``error`` with its message (an internal error too, with the
    traceback when ``debug``), so the other scans' results are never lost; the run exits 2.
    """
    from fairscan.scans import SCAN_TYPES, ScanContext
    from fairscan.scans.roles import bind_roles, threshold_warnings

    scan = prepared.spec.scans[index]
    roles = prepared.roles[index]
    started = time.perf_counter()
    try:
        data = prepared.data_for(SCAN_TYPES[scan.type].reads_weighted_rows(scan))
        bound = bind_roles(data, roles)
        ctx = ScanContext(
            data=data,
            alpha=prepared.spec.significance.alpha,
            replicates=prepared.spec.significance.replicates,
            seed=scan_seed(root, scan.id),
            workers=workers,
            executor=executor,
            progress=progress,
            role_names=dict(roles.names),
            roles=bound,
            threshold_rule=roles.threshold_rule,
            spec_dir=Path(prepared.loaded.file_of(f"scans[{index}]")).parent,
        )
        result = SCAN_TYPES[scan.type].runner(scan, ctx)
        warnings = threshold_warnings(prepared.data, roles, bound)
        if warnings:  # the runners need not know: the scan's result carries them
            result = result.model_copy(update={"warnings": [*warnings, *result.warnings]})
        return result
    except ScanError as error:
        message = _locate(prepared.loaded, _in_scan(error, index), prepared.located).render()
    except Exception as exc:  # a bug inside one scan: the other scans still run
        from fairscan.interrupts import interrupt_of

        interrupt = interrupt_of(exc)  # Ctrl-C may arrive wrapped by a library
        if interrupt is not None:
            raise interrupt from None
        from fairscan.memory_budget import resource_failure

        message = resource_failure(exc) or (
            f"internal error in this scan: {type(exc).__name__}: {exc}\n"
            "  help: this is a bug in fairscan; please report it with the spec "
            "(audit run --debug adds the traceback here)"
        )
        if debug:
            message += "\n" + "".join(traceback.format_exception(exc))
    elapsed = time.perf_counter() - started
    return ScanResult(
        id=scan.id,
        type=scan.type,
        status="error",
        parameters=scan.model_dump(mode="json", by_alias=True),
        timing=ScanTiming(search_seconds=elapsed, significance_seconds=0.0, total_seconds=elapsed),
        error=message,
    )


def _in_scan(error: ScanError, index: int) -> ScanError:
    """Prefix a scan error's scan-relative fields (``threshold``) with ``scans[i].``."""
    issues = []
    for issue in error.issues:
        field_ = issue.field
        if field_ is not None and not field_.startswith(
            ("scans[", "columns", "data", "attributes")
        ):
            field_ = f"scans[{index}].{field_}"
        issues.append(Issue(issue.message, hint=issue.hint, field=field_, column=issue.column))
    return ScanError(issues=issues)


def _relative_data_path(data_path: Path | str, spec_path: Path | str) -> str:
    """The data file as the report records it: relative to the spec file's folder (POSIX
    separators), so that a committed baseline names no machine's absolute path; relative to
    the working directory for a spec that is not a file (``<fairscan.audit arguments>``) or no
    longer exists (``audit scan``'s). Kept as given when it is not a file path
    (``<in-memory ...>``), and absolute when the two share no folder but the root (or lie on
    different drives)."""
    text = str(data_path)
    if text.startswith("<") or "://" in text:  # in memory, or a URL
        return text
    data = os.path.abspath(text)
    spec_dir = os.path.dirname(os.path.abspath(spec_path))
    if not os.path.isdir(spec_dir):  # a temporary spec, gone (audit scan): the working directory
        spec_dir = os.getcwd()
    try:
        common = os.path.commonpath([data, spec_dir])
        relative = os.path.relpath(data, spec_dir)
    except ValueError:  # different drives
        return data
    if common == os.path.dirname(common):  # only the root in common
        return Path(data).as_posix()
    return Path(relative).as_posix()


def _provenance(
    prepared: PreparedAudit,
    root: np.random.SeedSequence,
    workers: int,
    started_wall: float,
    elapsed: float,
) -> Provenance:
    spec = prepared.spec
    return Provenance(
        tool_version=__version__,
        spec_path=str(prepared.loaded.path),
        spec_sha256=prepared.loaded.sha256,
        data_path=_relative_data_path(prepared.data_path, prepared.loaded.path),
        data_sha256=prepared.data_sha256,
        data_rows=prepared.data.n_rows_raw,
        rows_after_filter=prepared.data.n_data_rows,
        filter=spec.data.filter,
        seed=spec.significance.seed,
        seed_entropy=str(root.entropy),
        utc_time=_utc(started_wall),
        finished_utc_time=_utc(time.time()),
        total_seconds=elapsed,
        workers=workers,
        executor=spec.significance.executor,
        parameters=spec.model_dump(mode="json", by_alias=True),
        environment=_environment(),
    )


def run_prepared(prepared: PreparedAudit, options: RunOptions | None = None) -> AuditOutcome:
    """Run every scan of a prepared audit and (optionally) write the reports."""
    from fairscan.engine.executors import open_executor
    from fairscan.engine.randomization import default_workers

    options = options or RunOptions()
    if options.executor is not None:  # audit scan and fairscan.audit: not applied yet
        prepared = replace(prepared, spec=apply_overrides(prepared.spec, options))
    spec = prepared.spec
    # read the baseline before scanning: a bad path fails fast
    baseline = load_report(options.baseline) if options.baseline is not None else None
    started_wall = time.time()
    started = time.perf_counter()
    root = np.random.SeedSequence(spec.significance.seed)
    workers = spec.significance.workers or default_workers()
    count = len(spec.scans)
    # one connection to a Dask cluster for the whole run (none without replicates)
    with open_executor(
        spec.significance.executor, connect=spec.significance.replicates > 0
    ) as executor:
        results = [
            # the observer sees "scan 2 of 3: <task>" (its interface is unchanged)
            run_scan(
                prepared,
                i,
                root,
                workers,
                ScanProgress(options.progress, i + 1, count),
                options.debug,
                executor,
            )
            for i in range(count)
        ]
    report = AuditReport(
        name=spec.name,
        description=spec.description,
        verdict=build_verdict(results),
        provenance=_provenance(
            prepared, root, workers, started_wall, time.perf_counter() - started
        ),
        data_warnings=list(prepared.data.warnings),
        attributes={a.name: list(a.labels) for a in prepared.data.attributes},
        scans=results,
    )
    report = _apply_gate(report, baseline, options.baseline, spec.gate.fail_on)
    written = _write(prepared, report, options) if options.write else []
    return AuditOutcome(report=report, written=written, formats=tuple(spec.output.formats))


def _write(prepared: PreparedAudit, report: AuditReport, options: RunOptions) -> list[Path]:
    """Write the spec's report formats; an unwritable folder is the user's to fix."""
    from fairscan.report.write import write_reports
    from fairscan.scans import render_hooks

    spec = prepared.spec
    spec_dir = Path(prepared.loaded.file_of("output.dir")).parent
    out_dir = options.out_dir or (spec_dir / spec.output.dir)
    try:
        return write_reports(report, Path(out_dir), spec.output.formats, render_hooks())
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if Path(out_dir).exists() and not Path(out_dir).is_dir():
            reason = "it is a file, not a folder"
        message = f"cannot write the reports to {str(out_dir)!r}: {reason}"
        if options.out_dir is not None:
            raise UsageError(message, hint="pass --out a folder you can write to") from exc
        raise _locate(
            prepared.loaded,
            SpecError(
                message,
                field="output.dir",
                hint="set output.dir (relative to the spec file) to a writable folder, or pass --out",
            ),
            prepared.located,
        ) from exc


def _apply_gate(
    report: AuditReport, baseline: AuditReport | None, baseline_path: Path | None, fail_on: str
) -> AuditReport:
    """Label findings against the baseline and set the exit code from ``gate.fail_on``."""
    from fairscan.report.baseline import compare_reports, gated_exit_code

    comparison = None
    if baseline is not None:
        comparison = compare_reports(
            baseline, report, baseline_path=str(baseline_path), fail_on=fail_on
        )
    verdict = report.verdict
    if verdict.status != "error":
        code = gated_exit_code(
            verdict.significant_findings,
            comparison.new_significant if comparison is not None else None,
            fail_on,
        )
        verdict = verdict.model_copy(update={"exit_code": code})
    return report.model_copy(update={"verdict": verdict, "baseline": comparison})


def run_audit(spec_path: Path, options: RunOptions | None = None) -> AuditOutcome:
    """Load, check and run one ``*.audit.yaml`` spec; write its reports."""
    options = options or RunOptions()
    return run_prepared(prepare_audit(spec_path, options), options)


@dataclass(frozen=True)
class PowerAnalysis:
    """Detectability of a miscalibration in a named subgroup (methods.md §2.5)."""

    subgroup: dict[str, list[str]]
    size: int
    observed_rate: float
    predicted_rate: float
    detectability: Detectability


def power_analysis(
    spec_path: Path, subgroup: dict[str, list[str]], alpha: float | None = None
) -> PowerAnalysis:
    """h(alpha) for the spec's data and the odds inflation Delta_thresh the Bias Scan would detect.

    Uses the spec's outcome and prediction (taken as unbiased probabilities) and its attributes
    (M = distinct attribute profiles).
    """
    import difflib

    from fairscan.data.table import RoleColumn
    from fairscan.engine.critical import detectability_threshold

    columns = load_spec(spec_path).spec.columns
    if columns.prediction is None or columns.outcome is None:
        loaded = load_spec(spec_path)
        raise _locate(
            loaded,
            SpecError(
                "power analysis needs the outcome and predicted probabilities",
                field="columns",
                hint="set columns.outcome and columns.prediction",
            ),
        )
    outcome_role = RoleColumn(columns.outcome, "outcome", "columns.outcome", columns.positive)
    prediction_role = RoleColumn(columns.prediction, "probability", "columns.prediction")
    prepared = prepare_audit(spec_path, extra_roles=(outcome_role, prediction_role))
    data = prepared.data
    inside = np.ones(data.n_rows, dtype=bool)
    for name, values in subgroup.items():
        if name not in data.attribute_names:
            close = difflib.get_close_matches(name, data.attribute_names, n=1)
            raise UsageError(
                f"{name!r} is not an attribute of this spec",
                hint=f"did you mean {close[0]!r}?"
                if close
                else f"attributes: {', '.join(data.attribute_names)}",
            )
        j = data.attribute_names.index(name)
        labels = data.attributes[j].labels
        unknown = [v for v in values if v not in labels]
        if unknown:
            raise UsageError(
                f"attribute {name!r} has no value {unknown[0]!r}",
                hint=f"its values are: {', '.join(labels)}",
            )
        codes = [labels.index(v) for v in values]
        inside &= np.isin(data.codes[:, j], codes)
    if not inside.any():
        raise UsageError("the subgroup is empty in the data", hint="check the --where conditions")
    y = data.role(outcome_role)[inside].astype(np.float64)
    p = data.role(prediction_role)[inside]
    if y.sum() in (0, len(y)):
        raise UsageError(
            "the subgroup has only one outcome class; the detectability threshold needs both",
            hint="choose a larger subgroup",
        )
    profiles = int(np.unique(data.codes, axis=0).shape[0])
    result = detectability_threshold(y, p, alpha or prepared.spec.significance.alpha, profiles)
    return PowerAnalysis(
        subgroup=subgroup,
        size=int(inside.sum()),
        observed_rate=float(y.mean()),
        predicted_rate=float(p.mean()),
        detectability=result,
    )
