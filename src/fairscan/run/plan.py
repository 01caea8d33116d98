"""The read plan of an audit: spec + the scans' roles + what each scan type declares ->
:class:`~fairscan.data.plan.ReadPlan` (no scan type is named here: a type declares what of its
columns may be pushed down, :attr:`fairscan.scans.base.ScanType.probability_summary`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fairscan.run.specs import extra_columns
from fairscan.spec.models import AuditSpec

if TYPE_CHECKING:
    from fairscan.data.plan import Cut, ReadPlan
    from fairscan.data.table import RoleColumn
    from fairscan.scans.roles import ScanRoles


def read_plan(
    spec: AuditSpec, roles: Sequence[ScanRoles], extra_roles: Sequence[RoleColumn] = ()
) -> ReadPlan:
    """What the audit of ``spec`` reads (``extra_roles``: role columns loaded besides those
    the scans need, e.g. for ``audit power``)."""
    from fairscan.data.plan import Calibration, ReadPlan

    requests = (*(request for r in roles for request in r.requests()), *extra_roles)
    extra = extra_columns(spec, list(roles))
    # columns read otherwise than as a prediction: never collapsed
    other = {*spec.attributes, *extra, *(r.column for r in extra_roles)}
    calibrations = calibration_only_columns(spec, roles, other)
    return ReadPlan(
        requests=requests,
        attributes=tuple(spec.attributes),
        extra=extra,
        filter=spec.data.filter,
        strip_whitespace=spec.data.strip_whitespace,
        discretize=dict(spec.discretize),
        max_categories=spec.max_categories,
        cuts=threshold_only_columns(list(spec.scans), roles, other),
        calibrations={c: Calibration(d) for c, d in calibrations.items()},
        sample=spec.data.sample,
    )


def _read_otherwise(roles: ScanRoles) -> set[str]:
    """A scan's role columns other than its prediction (outcome, decision, class columns)."""
    raw = {r.column for r in (roles.outcome, roles.decision) if r is not None}
    return raw | {column.column for _, column in roles.classes}


def calibration_only_columns(
    spec: AuditSpec, roles: Sequence[ScanRoles], other_columns: set[str]
) -> dict[str, tuple[int, ...]]:
    """Probability columns every scan reads only as per-row expectations summed per profile
    (the scan type's :attr:`~fairscan.scans.base.ScanType.probability_summary`; unweighted
    rows): column -> the scans' directions (+1 positive, -1 negative). A database then returns
    them in bins per profile, with the per-profile sums the scan searches and scores with
    (:mod:`fairscan.data.pushdown`). ``other_columns``: columns read otherwise."""
    from fairscan.scans import SCAN_TYPES

    if spec.columns.weight is not None:
        return {}
    raw = set(other_columns)
    found: dict[str, set[int]] = {}
    for scan, scan_roles in zip(spec.scans, roles, strict=True):
        raw |= _read_otherwise(scan_roles)
        prediction = scan_roles.prediction
        if prediction is None:
            continue
        summary = SCAN_TYPES[scan.type].probability_summary
        direction = None if summary is None else summary(scan, prediction.kind)
        if direction is None:
            raw.add(prediction.column)
            continue
        found.setdefault(prediction.column, set()).add(direction)
    return {c: tuple(sorted(d)) for c, d in found.items() if c not in raw}


def threshold_only_columns(
    scans: list[Any], roles: Sequence[ScanRoles], other_columns: set[str]
) -> dict[str, Cut]:
    """Prediction columns every scan reads only through a numeric threshold (no scan needs
    their values): column -> its thresholds, rule and whether it is read as a probability. A
    database can then return one value per side of each threshold instead of every distinct
    prediction (:mod:`fairscan.data.pushdown`). ``other_columns``: columns read otherwise
    (attributes, extra columns, other roles), never collapsed."""
    from fairscan.data.plan import Cut
    from fairscan.scans import SCAN_TYPES

    raw = set(other_columns)
    found: dict[str, tuple[set[float], set[str], bool]] = {}
    for scan, scan_roles in zip(scans, roles, strict=True):
        raw |= _read_otherwise(scan_roles)
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
        column: Cut(tuple(sorted(values)), "gt" if rules == {"gt"} else "ge", probability)
        for column, (values, rules, probability) in found.items()
        if column not in raw and len(rules) == 1
    }
