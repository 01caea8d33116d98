"""Specs: read and validate a spec file, or a mapping (``fairscan.audit``'s keyword arguments,
``audit scan``'s flags) through the same registered models; the data-free checks; the CLI's
overrides; issues located at the spec file's lines.

Every spec reaches a run as a :class:`~fairscan.spec.load.LoadedSpec`: read from its file
(:func:`load_spec`), or built from a validated mapping (:func:`loaded_from_mapping`), never
through a temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fairscan.errors import DataError, FairscanError, Issue, SpecError
from fairscan.run.options import RunOptions
from fairscan.scans import AUDIT_SPEC, SCAN_TYPES
from fairscan.scans.roles import resolve_roles
from fairscan.spec import load as spec_load
from fairscan.spec.issues import validation_issues
from fairscan.spec.load import LoadedSpec
from fairscan.spec.loader import Positions, load_spec_text
from fairscan.spec.models import AuditSpec, scan_models_of
from fairscan.spec.resolve import apply_defaults, resolve_extends

if TYPE_CHECKING:
    from fairscan.data.table import RoleColumn
    from fairscan.scans.roles import ScanRoles


def load_spec(path: Path | str) -> LoadedSpec:
    """Read, parse and validate a ``*.audit.yaml`` file against the registered scan types."""
    return spec_load.load_spec(path, AUDIT_SPEC)


def load_spec_from_text(text: str, filename: str = "<spec>") -> LoadedSpec:
    """Parse and validate spec text; ``filename`` is used in messages and as its path."""
    return spec_load.load_spec_from_text(text, AUDIT_SPEC, filename)


def _executor_name(executor: Any) -> str:
    """significance.executor for an override: the text itself, or a Client's address."""
    if isinstance(executor, str):
        return executor
    from fairscan.engine.executors import client_name

    return client_name(executor)


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
        updates["executor"] = _executor_name(options.executor)
    if updates:
        significance = type(significance).model_validate({**significance.model_dump(), **updates})
        spec = spec.model_copy(update={"significance": significance})
    return spec


def scan_roles(spec: AuditSpec) -> tuple[list[ScanRoles], list[Issue]]:
    """Each scan's role columns (one recommendation rule), and issues for those missing."""
    roles: list[ScanRoles] = []
    issues: list[Issue] = []
    for i, scan in enumerate(spec.scans):
        needs = SCAN_TYPES[scan.type].roles_for(scan)
        resolved, problems = resolve_roles(spec.columns, scan, i, needs)
        roles.append(resolved)
        issues += problems
    return roles, issues


def check_spec(spec: AuditSpec) -> list[Issue]:
    """Every check that needs no data: roles each scan needs, each type's own checks, and
    what data.sql / data.table / data.connection hand the database."""
    _, issues = scan_roles(spec)
    return [*issues, *_type_checks(spec), *_source_checks(spec)]


def _source_checks(spec: AuditSpec) -> list[Issue]:
    """The database source's checks (:mod:`fairscan.data.sql_guard`), without connecting."""
    data = spec.data
    if data.connection is None:
        return []
    from fairscan.data.database import database_table
    from fairscan.errors import DataError

    try:
        source = database_table(
            data.connection,
            data.table,
            data.sql,
            Path(),
            allow_file_access=data.allow_file_access,
        )
        source.check()
    except DataError as error:
        return list(error.issues)
    return []


def _type_checks(spec: AuditSpec) -> list[Issue]:
    """Each scan type's own data-free checks, their fields prefixed with ``scans[i]``."""
    issues: list[Issue] = []
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
    columns: dict[str, str] = {}
    for i, (scan, scan_roles_) in enumerate(zip(spec.scans, roles, strict=True)):
        hook = SCAN_TYPES[scan.type].extra_columns
        if hook is not None:
            for column, field_path in hook(scan).items():
                columns.setdefault(column, f"scans[{i}].{field_path}")
        for column, field_path in scan_roles_.threshold_columns().items():
            columns.setdefault(column, field_path)
    if spec.columns.weight is not None:
        columns.setdefault(spec.columns.weight, "columns.weight")
    return columns


def checked_roles(loaded: LoadedSpec, spec: AuditSpec) -> tuple[list[ScanRoles], list[Issue]]:
    """Each scan's role columns (those it could resolve) and every data-free issue of the spec
    (:func:`check_spec`). The issues are raised after the data checks, so one run reports the
    problems of both. The roles are resolved once, for both."""
    roles, issues = scan_roles(spec)
    return roles, [*issues, *_type_checks(spec)]


def used_columns(
    spec: AuditSpec, roles: list[ScanRoles], extra_roles: Sequence[RoleColumn]
) -> list[str]:
    """Every data column the audit reads: roles, attributes and the scans' extra columns."""
    columns = [request.column for r in roles for request in r.requests()]
    columns += [request.column for request in extra_roles]
    columns += list(spec.attributes)
    columns += list(extra_columns(spec, roles))
    return list(dict.fromkeys(columns))


def locate(loaded: LoadedSpec, error: FairscanError, located: bool = True) -> FairscanError:
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


@contextlib.contextmanager
def errors_located(
    loaded: LoadedSpec, spec_issues: Sequence[Issue] = (), located: bool = True
) -> Iterator[None]:
    """A data or spec error of the block re-raised with the spec's own issues first and each
    issue located at the spec file's lines (:func:`locate`): the one place a preparation's
    errors get their file:line:col."""
    try:
        yield
    except (DataError, SpecError) as error:
        raise locate(loaded, with_spec_issues(error, list(spec_issues)), located) from error


def with_spec_issues(error: FairscanError, spec_issues: list[Issue]) -> FairscanError:
    """The spec's own issues first, then those the data checks found."""
    if not spec_issues:
        return error
    return SpecError(issues=[*spec_issues, *error.issues])


def spec_from_mapping(raw: Mapping[str, Any]) -> AuditSpec:
    """Validate a spec given as a mapping (as a YAML file would read: plain dicts, lists,
    strings, numbers) with the registered models, the ``defaults:`` applied, exactly as
    :func:`load_spec` validates a file. Issues name field paths (``scans[0].penalty``), with
    the messages ``audit validate`` prints, in one :class:`SpecError`."""
    data = apply_defaults(dict(raw), scan_models_of(AUDIT_SPEC))
    try:
        return AUDIT_SPEC.model_validate(data)
    except ValidationError as exc:
        raise SpecError(issues=validation_issues(exc, data, None, None, AUDIT_SPEC)) from exc


def spec_mapping(loaded: LoadedSpec) -> dict[str, Any]:
    """A spec file as the mapping it was validated from: ``extends`` merged, before the
    ``defaults:`` are given to the scans (so keys merged over it can change them)."""
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


def resolved_spec(spec: AuditSpec, path: Path | str, text: str | None = None) -> LoadedSpec:
    """A :class:`LoadedSpec` for a spec that was not read from one file as it is: its text is
    ``text`` (default: the canonical JSON, :func:`spec_json`) and its sha256 that text's.
    ``path`` is what the report's provenance names (``<fairscan.audit arguments>``, or the spec
    file keyword arguments were merged over); paths in the spec are relative to its folder.
    Prepare it with ``located=False``: it has no lines to point at."""
    text = spec_json(spec) if text is None else text
    return LoadedSpec(
        spec=spec,
        path=Path(path),
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        positions=Positions(line=1, col=1, kind="mapping"),
    )


def loaded_from_mapping(
    raw: Mapping[str, Any], path: Path | str, text: str | None = None
) -> LoadedSpec:
    """The one path from a spec given as a mapping (``fairscan.audit``, ``audit scan``) to a
    validated :class:`LoadedSpec`: the registered models (:func:`spec_from_mapping`), then the
    data-free checks (:func:`check_spec`); every issue names its field path, in one
    :class:`SpecError`. ``path`` and ``text`` as for :func:`resolved_spec`."""
    spec = spec_from_mapping(raw)
    issues = check_spec(spec)
    if issues:
        raise SpecError(issues=issues)
    return resolved_spec(spec, path, text)


# --- fairscan.audit's shorter forms ---------------------------------------------------------

# the significance settings fairscan.audit takes as top-level keywords (replicates=99)
SIGNIFICANCE_SHORTHANDS = ("replicates", "seed", "alpha", "workers")


def scan_entries(scans: Any) -> Any:
    """``scans`` as the spec spells it, from the notebook's shorter forms: an entry may be a
    scan type's name (``"fpr_scan"``) or a mapping without ``id``; the id defaults to the type,
    de-duplicated in order (``fpr_scan``, ``fpr_scan_2``), never one an entry names itself.
    Anything else is left as it is, for the spec's validation to name."""
    if not isinstance(scans, list | tuple):
        return scans
    entries: list[Any] = [{"type": entry} if isinstance(entry, str) else entry for entry in scans]
    taken = {
        entry["id"]
        for entry in entries
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)
    }
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, Mapping) and "id" not in entry and isinstance(entry.get("type"), str):
            scan_id = _free_id(entry["type"], taken)
            taken.add(scan_id)
            entry = {"id": scan_id, **entry}
        out.append(entry)
    return out


def _free_id(scan_type: str, taken: set[str]) -> str:
    if scan_type not in taken:
        return scan_type
    n = 2
    while f"{scan_type}_{n}" in taken:
        n += 1
    return f"{scan_type}_{n}"


def with_significance_shorthands(significance: Any, shorthands: Mapping[str, Any]) -> Any:
    """``significance`` with the top-level ``replicates=``, ``seed=``, ``alpha=``, ``workers=``
    merged in (validated with it, by the spec's model). A setting given both ways is a
    :class:`~fairscan.errors.UsageError` naming the keyword."""
    from fairscan.errors import UsageError

    if not shorthands:
        return significance
    if significance is None:
        return dict(shorthands)
    if not isinstance(significance, Mapping):
        return significance  # the spec's validation says what `significance` must be
    for key in shorthands:
        if key in significance:
            raise UsageError(
                f"given twice: {key}= and significance={{{key!r}: ...}}",
                field=key,
                hint=f"give it once, e.g. {key}={shorthands[key]!r}",
            )
    return {**significance, **shorthands}


def untested_issues(spec: AuditSpec) -> list[Issue]:
    """The searching scans whose randomization test cannot reach significance.alpha with the
    spec's replicates, after gate.correction (issue 34): one issue on significance.replicates
    naming them and what to do. Certain, not a guess: the bounds of
    :func:`~fairscan.report.verdict.untested_bound` only rise with further scans; given
    subgroups, which may have exact tests, are left to the run."""
    from fairscan.report.verdict import exceeds, replicates_needed, untested_bound

    significance, gate = spec.significance, spec.gate
    scans, floors = [], []
    for scan in spec.scans:
        floor = SCAN_TYPES[scan.type].p_value_floor
        if floor is not None and not getattr(scan, "subgroups", None):
            scans.append(scan.id)
            floors.append(floor(scan, significance.replicates))
    bounds = untested_bound(floors, gate.correction)
    untested = [i for i, b in zip(scans, bounds, strict=True) if exceeds(b, significance.alpha)]
    if not untested:
        return []
    need = replicates_needed(significance.alpha, gate.correction, len(scans))
    after = f" after gate.correction {gate.correction}" if gate.correction != "none" else ""
    verdict = (
        "the run passes as UNTESTED (gate.allow_untested)"
        if gate.allow_untested
        else "the run will exit 2 with the verdict UNTESTED"
    )
    return [
        Issue(
            f"{significance.replicates} replicates cannot reach alpha {significance.alpha:g}"
            f"{after} in {len(untested)} scan(s) ({', '.join(untested)}): {verdict}",
            hint=f"raise significance.replicates to at least {need} (SubROC: its "
            "significance.subsets), or set gate.allow_untested: true to accept an UNTESTED run",
            field="significance.replicates",
        )
    ]
