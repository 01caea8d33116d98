"""Re-test a baseline's significant findings on this run's data (``audit run --baseline``,
``audit diff OLD NEW --data``): each becomes a given subgroup of its own scan, defined by the
baseline's values and bin edges, and is tested alone under the scan's null model, with the
power to detect the baseline effect (:mod:`fairscan.report.baseline` labels the results).

Scan types with a fixed-subgroup test are those whose spec has ``subgroups`` (fpr_scan,
tpr_scan, bias_scan); the others keep the matching of two reports.
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


def check_comparable(baseline: AuditReport, current: AuditReport, path: str) -> None:
    """A baseline must come from the same audit over the same attributes (exit 2 otherwise)."""
    if baseline.name != current.name:
        raise DataError(
            f"the baseline {path} is a report of audit {baseline.name!r}, this run is "
            f"{current.name!r}",
            field="--baseline",
            hint="compare reports of the same spec (its `name`)",
        )
    if set(baseline.attributes) != set(current.attributes):
        raise DataError(
            f"the baseline {path} audited the attributes {sorted(baseline.attributes)}, this "
            f"run {sorted(current.attributes)}",
            field="--baseline",
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
    retests: list[Retest] = []
    for index, scan in enumerate(prepared.spec.scans):
        old = next((s for s in baseline.scans if s.id == scan.id), None)
        if old is None or old.type != scan.type or "subgroups" not in type(scan).model_fields:
            continue
        significant = [f for f in old.findings if f.significant is True]
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

    from fairscan.data.subgroups import resolve_subgroup
    from fairscan.progress import NullProgress

    scan = prepared.spec.scans[index]
    out: dict[int, Retest] = {}
    testable: list[tuple[int, Finding]] = []
    for k, finding in enumerate(findings):
        reason = _edges_reason(finding, baseline, prepared)
        if reason is None:
            try:
                resolve_subgroup(finding.subgroup or {}, prepared.data.attributes, "subgroup")
            except ScanError as error:
                reason = f"not re-testable on the new data: {error.issues[0].message}"
        if reason is not None:
            out[k] = Retest(scan.id, finding, None, reason)
        else:
            testable.append((k, finding))
    if testable:
        given = scan.model_copy(update={"subgroups": [f.subgroup for _, f in testable]})
        scans = list(prepared.spec.scans)
        scans[index] = given
        spec = prepared.spec.model_copy(update={"scans": scans})
        detect = tuple(f.detail.get("q") for _, f in testable)
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
            if result.status == "error" or j >= len(result.findings):
                out[k] = Retest(scan.id, finding, None, f"the re-test failed: {result.error}")
            else:
                out[k] = Retest(scan.id, finding, result.findings[j])
    return [out[k] for k in sorted(out)]


__all__ = ["check_comparable", "retested_comparison"]
