"""Compare an audit report with a baseline report: label each result new, persisting, resolved
or changed (``audit run --baseline``, ``audit diff``).

The compared results are the scans' findings (``scans[].findings``, the result contract), whatever
the scan type. Matching is per scan id. A finding of the current run is first matched to a
baseline finding with the identical subgroup (a finding of a named group, ``group`` set: the
same group name); the remaining findings with a subgroup are then matched greedily, best first,
by the Jaccard similarity of the attribute cells their subgroups cover, when it is at least
:data:`OVERLAP_THRESHOLD`. Named groups match by name only. An attribute a subgroup does not
constrain covers all of its values (taken from the reports' ``attributes``).

Labels (only findings significant, ``significant is True``, in at least one of the two runs are
labelled; a non-significant top subgroup is noise, not a finding):

- ``new``: significant now; unmatched, or matched to a baseline result that was not significant;
- ``resolved``: significant in the baseline; unmatched, or its match is not significant now;
- ``persisting``: significant in both, identical subgroup;
- ``changed``: significant in both, matched by overlap (the subgroup shifted).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from fairscan.report.models import (
    AuditReport,
    BaselineComparison,
    BaselineEntry,
    BaselineSide,
    Finding,
    ScanResult,
)

OVERLAP_THRESHOLD = 0.5
LABELS = ("new", "changed", "persisting", "resolved")


@dataclass(frozen=True)
class _Item:
    key: str  # canonical subgroup key, or "group:<name>" for a named group
    side: BaselineSide
    by_name: bool  # a named group: matched by name only


def _canonical(subgroup: dict[str, list[str]]) -> str:
    return ";".join(f"{a}={'|'.join(sorted(v))}" for a, v in sorted(subgroup.items()))


def _finding_key(finding: Finding) -> str:
    """A finding's identity: its named group, else its subgroup."""
    if finding.group is not None:
        return f"group:{finding.group}"
    return _canonical(finding.subgroup or {})


def finding_side(finding: Finding) -> BaselineSide:
    """What the comparison keeps of a finding."""
    subgroup = finding.subgroup
    if subgroup is None:
        subgroup = {"group": [finding.group or finding.label]}
    p = finding.adjusted_p_value if finding.adjusted_p_value is not None else finding.p_value
    return BaselineSide(
        subgroup=subgroup,
        label=finding.label,
        score=finding.statistic.value,
        p_value=p,
        rate=finding.effect.inside,
        expected_rate=finding.effect.expected,
        significant=finding.significant is True,
    )


def scan_items(scan: ScanResult) -> list[_Item]:
    """The comparable results of one scan: its findings."""
    items: list[_Item] = []
    for f in scan.findings:
        if f.group is not None:
            items.append(_Item(f"group:{f.group}", finding_side(f), True))
        else:
            items.append(_Item(_canonical(f.subgroup or {}), finding_side(f), False))
    return items


def similarity(
    a: dict[str, list[str]], b: dict[str, list[str]], domains: dict[str, list[str]]
) -> float:
    """Jaccard similarity of the attribute cells covered by two subgroups (1 = identical)."""
    names = sorted(set(a) | set(b))
    if not names:
        return 1.0

    def values(sub: dict[str, list[str]], name: str) -> set[str]:
        if name in sub:
            return set(sub[name])
        return set(domains.get(name, [])) | set(a.get(name, [])) | set(b.get(name, []))

    size_a = prod(len(values(a, n)) for n in names)
    size_b = prod(len(values(b, n)) for n in names)
    inter = prod(len(values(a, n) & values(b, n)) for n in names)
    union = size_a + size_b - inter
    return inter / union if union else 1.0


def _label(before: BaselineSide | None, after: BaselineSide | None, exact: bool) -> str | None:
    was = before is not None and before.significant
    now = after is not None and after.significant
    if now and not was:
        return "new"
    if was and not now:
        return "resolved"
    if was and now:
        return "persisting" if exact else "changed"
    return None  # not significant in either run: not a finding


def _match_scan(
    old: list[_Item], new: list[_Item], domains: dict[str, list[str]], threshold: float
) -> list[tuple[_Item | None, _Item | None, str, float | None]]:
    pairs: list[tuple[_Item | None, _Item | None, str, float | None]] = []
    old_left = list(old)
    new_left: list[_Item] = []
    for item in new:
        twin = next((o for o in old_left if o.key == item.key), None)
        if twin is not None:
            old_left.remove(twin)
            pairs.append((twin, item, "exact", 1.0))
        else:
            new_left.append(item)
    candidates = sorted(
        (
            (similarity(o.side.subgroup, n.side.subgroup, domains), i, j)
            for i, o in enumerate(old_left)
            for j, n in enumerate(new_left)
            if not (o.by_name or n.by_name)
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_old: set[int] = set()
    used_new: set[int] = set()
    for sim, i, j in candidates:
        if sim < threshold or i in used_old or j in used_new:
            continue
        used_old.add(i)
        used_new.add(j)
        pairs.append((old_left[i], new_left[j], "overlap", sim))
    pairs += [(n, None, "none", None) for k, n in enumerate(old_left) if k not in used_old]
    pairs += [(None, n, "none", None) for k, n in enumerate(new_left) if k not in used_new]
    return pairs


def compare_reports(
    baseline: AuditReport,
    current: AuditReport,
    *,
    baseline_path: str | None = None,
    fail_on: str = "significant",
    threshold: float = OVERLAP_THRESHOLD,
) -> BaselineComparison:
    """Label every significant result of ``current`` and ``baseline`` (see the module doc)."""
    domains: dict[str, list[str]] = {}
    for report in (baseline, current):
        for name, labels in report.attributes.items():
            domains[name] = sorted(set(domains.get(name, [])) | set(labels))
    old_scans = {s.id: s for s in baseline.scans}
    new_scans = {s.id: s for s in current.scans}
    entries: list[BaselineEntry] = []
    for scan_id in [*new_scans, *(i for i in old_scans if i not in new_scans)]:
        old = old_scans.get(scan_id)
        new = new_scans.get(scan_id)
        scan_type = (new or old).type  # type: ignore[union-attr]
        if old is not None and new is not None and old.type != new.type:
            old = None  # same id, different scan: nothing to compare with
        pairs = _match_scan(
            scan_items(old) if old else [], scan_items(new) if new else [], domains, threshold
        )
        for before, after, how, sim in pairs:
            b = before.side if before else None
            a = after.side if after else None
            label = _label(b, a, how == "exact")
            if label is None:
                continue
            entries.append(
                BaselineEntry(
                    scan_id=scan_id,
                    scan_type=scan_type,
                    label=label,  # type: ignore[arg-type]
                    match=how,  # type: ignore[arg-type]
                    similarity=sim,
                    before=b,
                    after=a,
                )
            )
    return _comparison(
        baseline,
        baseline_path,
        entries,
        LABELS,
        threshold,
        fail_on,
        list(old_scans),
        list(new_scans),
    )


# --- Re-testing the baseline's findings on the new data (issue 26) ----------------------------

POWER_TARGET = 0.8  # `resolved` needs at least this power to detect the baseline effect
RETEST_LABELS = ("new", "shifted", "persists", "inconclusive", "resolved")
# labels of the top-subgroup matching, for scan types without a fixed-subgroup test
_MATCHED_AS = {"new": "new", "changed": "shifted", "persisting": "persists"}


@dataclass(frozen=True)
class Retest:
    """A significant baseline finding evaluated on the new data as a fixed subgroup."""

    scan_id: str
    before: Finding
    after: Finding | None  # the re-test's finding; None when it could not run (see reason)
    reason: str | None = None


# (scan id, subgroup a, subgroup b) -> row-level Jaccard on the new data (None: not computable)
Overlap = Callable[[str, dict[str, list[str]], dict[str, list[str]]], float | None]


def _odds(finding: Finding) -> float | None:
    q = finding.detail.get("q")
    return float(q) if isinstance(q, int | float) and q > 0 else None


def retest_label(retest: Retest) -> tuple[str, str | None, float | None]:
    """(label, reason, power) of a re-tested baseline finding."""
    after = retest.after
    if after is None:
        return "inconclusive", retest.reason, None
    if after.significant is True:
        return "persists", None, None
    given = after.detail.get("given_subgroup", {})
    power = given.get("power")
    if after.p_value is None:
        return "inconclusive", "the re-test is untested (replicates: 0)", power
    if power is None:
        return "inconclusive", "no power could be computed for this test", None
    before, now = _effect_sizes(retest.before, after, given)
    if power < POWER_TARGET:
        shown = "" if before is None else f" ({_effect_text(retest.before, given, before)})"
        return (
            "inconclusive",
            f"not significant now, but the re-test had power {power:.2f} < {POWER_TARGET} to "
            f"detect the baseline effect{shown} on {after.size} rows",
            power,
        )
    if before is None or now is None or abs(now) >= abs(before):
        return "inconclusive", "the effect did not move toward zero", power
    return "resolved", None, power


def _effect_sizes(
    before: Finding, after: Finding, given: dict[str, Any]
) -> tuple[float | None, float | None]:
    """(baseline, now) effect on a scale where 0 is no effect: the sizes the re-test recorded
    (log odds, mean shift, AUC gap, metric gap), else the log of the odds multipliers q."""
    then, now = given.get("baseline_effect_size"), given.get("effect_size")
    if isinstance(then, int | float) and isinstance(now, int | float):
        return float(then), float(now)
    q_before, q_now = _odds(before), _odds(after)
    return (
        None if q_before is None else math.log(q_before),
        None if q_now is None else math.log(q_now),
    )


def _effect_text(before: Finding, given: dict[str, Any], size: float) -> str:
    q = _odds(before)
    if "baseline_effect_size" not in given and q is not None:
        return f"q = {q:.3g}"
    return f"effect {given.get('power_at', size):.3g}"


def _entry(scan_type: str, scan_id: str, label: str, **fields: object) -> BaselineEntry:
    return BaselineEntry(
        scan_id=scan_id,
        scan_type=scan_type,
        label=label,  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


def retest_comparison(
    baseline: AuditReport,
    current: AuditReport,
    retests: Sequence[Retest] = (),
    overlap: Overlap | None = None,
    *,
    baseline_path: str | None = None,
    fail_on: str = "significant",
    threshold: float = OVERLAP_THRESHOLD,
) -> BaselineComparison:
    """Label by re-testing: each significant baseline finding of a re-tested scan is
    persists / resolved / inconclusive by its re-test; each significant finding of this run is
    shifted (its rows overlap a baseline finding's, Jaccard >= ``threshold``) or new. Scans
    without re-tests keep the matching of :func:`compare_reports`, whose `resolved` becomes
    `inconclusive` (a search that no longer finds a subgroup says nothing of its power)."""
    retested = {r.scan_id for r in retests}
    new_scans = {s.id: s for s in current.scans}
    old_scans = {s.id: s for s in baseline.scans}
    entries: list[BaselineEntry] = []
    for r in retests:
        label, reason, power = retest_label(r)
        entries.append(
            _entry(
                old_scans[r.scan_id].type,
                r.scan_id,
                label,
                match="exact",
                similarity=1.0 if r.after is not None else None,
                before=finding_side(r.before),
                after=finding_side(r.after) if r.after is not None else None,
                reason=reason,
                power=power,
            )
        )
    for scan in current.scans:
        if scan.id not in retested:
            continue
        before = [r.before for r in retests if r.scan_id == scan.id]
        keys = {_finding_key(f) for f in before}
        for finding in scan.findings:
            if finding.significant is not True or _finding_key(finding) in keys:
                continue
            scores = [
                overlap(scan.id, f.subgroup or {}, finding.subgroup or {})
                if overlap and f.group is None and finding.group is None
                else None  # named groups: compared by name only
                for f in before
            ]
            best = max((s for s in scores if s is not None), default=0.0)
            entries.append(
                _entry(
                    scan.type,
                    scan.id,
                    "shifted" if best >= threshold else "new",
                    match="overlap" if best >= threshold else "none",
                    similarity=best,
                    before=finding_side(before[scores.index(best)]) if best >= threshold else None,
                    after=finding_side(finding),
                )
            )
    matched = compare_reports(
        _without(baseline, retested), _without(current, retested), threshold=threshold
    )
    for e in matched.entries:
        if e.label == "resolved":
            entries.append(
                e.model_copy(
                    update={
                        "label": "inconclusive",
                        "reason": f"not re-tested ({e.scan_type}: two reports matched, no "
                        "re-test with its power): no longer significant or reported is no "
                        "evidence that it is fixed",
                    }
                )
            )
        else:
            entries.append(e.model_copy(update={"label": _MATCHED_AS[e.label]}))
    return _comparison(
        baseline,
        baseline_path,
        entries,
        RETEST_LABELS,
        threshold,
        fail_on,
        list(old_scans),
        list(new_scans),
        method="retest" if retests else "match",
    )


def _comparison(
    baseline: AuditReport,
    baseline_path: str | None,
    entries: list[BaselineEntry],
    labels: Sequence[str],
    threshold: float,
    fail_on: str,
    old_scans: list[str],
    new_scans: list[str],
    **extra: Any,
) -> BaselineComparison:
    """The comparison of labelled ``entries``, in the order of ``labels``, with their counts."""
    order = {label: i for i, label in enumerate(labels)}
    entries.sort(key=lambda e: order[e.label])
    counts = {label: sum(1 for e in entries if e.label == label) for label in labels}
    return BaselineComparison(
        baseline_path=baseline_path,
        baseline_name=baseline.name,
        baseline_utc_time=baseline.provenance.utc_time,
        overlap_threshold=threshold,
        fail_on=fail_on,
        counts=counts,
        new_significant=counts["new"],
        scans_added=[i for i in new_scans if i not in old_scans],
        scans_removed=[i for i in old_scans if i not in new_scans],
        entries=entries,
        **extra,
    )


def _without(report: AuditReport, scan_ids: set[str]) -> AuditReport:
    return report.model_copy(update={"scans": [s for s in report.scans if s.id not in scan_ids]})
