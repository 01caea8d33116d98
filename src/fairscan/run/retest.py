"""Re-test a baseline's significant findings on this run's data (``audit run --baseline``,
``audit diff OLD NEW --data``): each becomes a given subgroup of its own scan, defined by the
baseline's values and bin edges, and is tested alone under the scan's null model, with the
power to detect the baseline effect (:mod:`fairscan.report.baseline` labels the results).

Scan types with a fixed-subgroup test are those whose spec has ``subgroups`` (every subset
and pattern scan: fpr/tpr/bias/ijdi scans, cbs, subroc, and shift for subgroups of the scan
attributes); the power each re-test reports is against the effect its scan type reads from the
baseline finding (``ScanType.baseline_effect``). A flag scan evaluates the same named groups
on the new data itself: its type reads each baseline group's re-test from this run's scan
(``ScanType.retest.named``). Certify's groups and shift's tilts keep the matching of two
reports, where a group no longer significant is ``inconclusive`` (no power is computed for
their simultaneous bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from fairscan.errors import DataError, ScanError
from fairscan.report.baseline import Retest, retest_comparison
from fairscan.report.models import AuditReport, BaselineComparison, Finding

if TYPE_CHECKING:
    from fairscan.engine.jobs import Executor
    from fairscan.run.prepare import PreparedAudit


# run_scan(prepared, index, root, workers, progress, *, executor=, detect=) -> ScanResult
ScanRunner = Callable[..., Any]


def check_comparable(
    baseline: AuditReport, current: AuditReport, path: str, field: str = "--baseline"
) -> None:
    """A baseline must come from the same audit over the same attributes (exit 2 otherwise;
    ``audit run --baseline`` and ``audit diff``, whose ``field`` is OLD)."""
    if baseline.name != current.name:
        raise DataError(
            f"the baseline {path} is a report of audit {baseline.name!r}, this run is "
            f"{current.name!r}",
            field=field,
            hint="compare reports of the same spec (its `name`)",
        )
    if set(baseline.attributes) != set(current.attributes):
        raise DataError(
            f"the baseline {path} audited the attributes {sorted(baseline.attributes)}, this "
            f"run {sorted(current.attributes)}",
            field=field,
            hint="a baseline re-test needs the same attributes (the same data schema)",
        )


def retested_comparison(
    prepared: PreparedAudit,
    report: AuditReport,
    baseline: AuditReport,
    *,
    baseline_path: str,
    fail_on: str,
    root: np.random.SeedSequence,
    workers: int,
    runner: ScanRunner,
    executor: Executor | None = None,
) -> BaselineComparison:
    """The comparison with ``baseline`` by re-testing on ``prepared``'s data (``runner``: the
    run layer's one-scan runner, :func:`fairscan.run.execute.run_scan`)."""
    check_comparable(baseline, report, baseline_path)
    from fairscan.scans import SCAN_TYPES

    retests: list[Retest] = []
    for index, scan in enumerate(prepared.spec.scans):
        old = next((s for s in baseline.scans if s.id == scan.id), None)
        if old is None or old.type != scan.type:
            continue
        significant = [f for f in old.findings if f.significant is True]
        named = SCAN_TYPES[scan.type].retest.named
        now = next((s for s in report.scans if s.id == scan.id), None)
        if named is not None and now is not None and now.status != "error":
            for finding in significant:  # the run evaluated the same named groups itself
                after, reason = named(finding, now)
                retests.append(Retest(scan.id, finding, after, reason or None))
            continue
        if "subgroups" not in type(scan).model_fields:
            continue
        if any(f.subgroup is None for f in significant):
            continue  # named groups (shift's tilts): the run evaluates them itself
        retests += _retest_scan(
            prepared,
            index,
            significant,
            baseline,
            root=root,
            workers=workers,
            runner=runner,
            executor=executor,
        )
    data = prepared.data

    def overlap(scan_id: str, a: dict[str, list[str]], b: dict[str, list[str]]) -> float | None:
        from fairscan.data.subgroups import resolve_subgroup, subgroup_rows

        try:
            rows = [
                subgroup_rows(
                    resolve_subgroup(s, data.attributes, "subgroup"), data.attributes, data.codes
                )
                for s in (a, b)
            ]
        except ScanError:
            return None
        union = int(np.count_nonzero(rows[0] | rows[1]))
        return int(np.count_nonzero(rows[0] & rows[1])) / union if union else None

    return retest_comparison(
        baseline, report, retests, overlap, baseline_path=baseline_path, fail_on=fail_on
    )


def _edges_reason(finding: Finding, baseline: AuditReport, prepared: PreparedAudit) -> str | None:
    """Why a baseline finding cannot be re-tested at its own bin edges (None: it can)."""
    for attribute in prepared.data.attributes:
        if attribute.edges is None or attribute.name not in (finding.subgroup or {}):
            continue
        if baseline.bins is None or attribute.name not in baseline.bins:
            return (
                f"the baseline records no bin edges for {attribute.name} (a report made before "
                "reports kept them): its bins cannot be cut on the new data; re-run the "
                "baseline with this version"
            )
        old = baseline.bins[attribute.name]
        if len(old) != len(attribute.edges) or not np.allclose(old, attribute.edges):
            inner = ", ".join(f"{e:g}" for e in old[1:-1])
            return (
                f"the bin edges of {attribute.name} differ: baseline {list(old)}, now "
                f"{list(attribute.edges)}; pin the baseline's edges in the spec "
                f"(discretize: {{{attribute.name}: {{edges: [{inner}]}}}}) to re-test it"
            )
    return None


def _retest_scan(
    prepared: PreparedAudit,
    index: int,
    findings: list[Finding],
    baseline: AuditReport,
    *,
    root: np.random.SeedSequence,
    workers: int,
    runner: ScanRunner,
    executor: Executor | None,
) -> list[Retest]:
    from dataclasses import replace

    from fairscan.progress import NullProgress
    from fairscan.scans import SCAN_TYPES

    scan = prepared.spec.scans[index]
    entry = SCAN_TYPES[scan.type]
    out: dict[int, Retest] = {}
    testable: list[tuple[int, Finding]] = []
    for k, finding in enumerate(findings):
        reason = _edges_reason(finding, baseline, prepared)
        if reason is None:
            reason = _rows_reason(finding, prepared)
        if reason is not None:
            out[k] = Retest(scan.id, finding, None, reason)
        else:
            testable.append((k, finding))
    if testable:
        given = scan.model_copy(update={"subgroups": [f.subgroup for _, f in testable]})
        scans = list(prepared.spec.scans)
        scans[index] = given
        spec = prepared.spec.model_copy(update={"scans": scans})
        detect = tuple(entry.baseline_effect(f) for _, f in testable)
        result = runner(
            replace(prepared, spec=spec),
            index,
            root,
            workers,
            NullProgress(),
            executor=executor,
            detect=detect,
        )
        for j, (k, finding) in enumerate(testable):
            after = _retest_of(result.findings, j, entry.finding_key(finding), entry.finding_key)
            if result.status == "error" or after is None:
                why = result.error or "no finding of the subgroup on the new data"
                out[k] = Retest(scan.id, finding, None, f"the re-test failed: {why}")
            else:
                out[k] = Retest(scan.id, finding, after)
    return [out[k] for k in sorted(out)]


def _retest_of(
    findings: list[Finding], index: int, key: str | None, key_of: Callable[[Finding], str | None]
) -> Finding | None:
    """The re-test's finding of given subgroup ``index`` (of the baseline finding's ``key``,
    e.g. its CBS protected class)."""
    for finding in findings:
        given = finding.detail.get("given_subgroup", {})
        if given.get("index") == index and (key is None or key_of(finding) == key):
            return finding
    return None


def _rows_reason(finding: Finding, prepared: PreparedAudit) -> str | None:
    """Why a baseline finding's subgroup cannot be re-tested on the new data (None: it can)."""
    from fairscan.data.subgroups import resolve_subgroup, subgroup_rows

    data = prepared.data
    try:
        subgroup = resolve_subgroup(finding.subgroup or {}, data.attributes, "subgroup")
    except ScanError as error:
        return f"not re-testable on the new data: {error.issues[0].message}"
    if not subgroup_rows(subgroup, data.attributes, data.codes).any():
        return "the subgroup has no row in the new data: nothing to re-test"
    return None


__all__ = ["check_comparable", "retested_comparison"]
