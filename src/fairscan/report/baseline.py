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

from dataclasses import dataclass
from math import prod

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
FAIL_ON = ("significant", "new_significant", "never")


@dataclass(frozen=True)
class _Item:
    key: str  # canonical subgroup key, or "group:<name>" for a named group
    side: BaselineSide
    by_name: bool  # a named group: matched by name only


def _canonical(subgroup: dict[str, list[str]]) -> str:
    return ";".join(f"{a}={'|'.join(sorted(v))}" for a, v in sorted(subgroup.items()))


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
    order = {label: i for i, label in enumerate(LABELS)}
    entries.sort(key=lambda e: order[e.label])
    counts = {label: sum(1 for e in entries if e.label == label) for label in LABELS}
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
    )


def gated_exit_code(significant: int, new_significant: int | None, fail_on: str) -> int:
    """0/1 for a run without errors under ``gate.fail_on`` (no baseline: every finding is new)."""
    if fail_on == "never":
        return 0
    if fail_on == "new_significant":
        count = significant if new_significant is None else new_significant
        return 1 if count else 0
    return 1 if significant else 0


def render_comparison(comparison: BaselineComparison) -> list[str]:
    """Markdown lines: what changed since the baseline, new findings first."""
    from fairscan.data.labels import subgroup_label
    from fairscan.report.markdown import cell
    from fairscan.report.text import fmt_p, fmt_value

    def num(x: float | None) -> str:
        return fmt_value(x, missing="-")

    def p(x: float | None) -> str:
        return fmt_p(x, missing="-")

    def name_of(side: BaselineSide) -> str:
        return cell(side.label or subgroup_label(side.subgroup))

    c = comparison
    source = f"`{c.baseline_path}`" if c.baseline_path else f"`{c.baseline_name}`"
    summary = ", ".join(f"{c.counts.get(label, 0)} {label}" for label in LABELS)
    lines = [
        "## What changed since the baseline",
        "",
        f"Baseline {source} ({c.baseline_utc_time}): {summary}. Gate: fail on {c.fail_on}.",
        "",
    ]
    if c.scans_added or c.scans_removed:
        if c.scans_added:
            lines.append(f"Scans not in the baseline: {', '.join(c.scans_added)}.")
        if c.scans_removed:
            lines.append(f"Scans no longer run: {', '.join(c.scans_removed)}.")
        lines.append("")
    if not c.entries:
        lines += ["No significant finding in either run.", ""]
        return lines
    lines += [
        "| label | scan | finding | statistic before → after | p before → after "
        "| inside before → after |",
        "|---|---|---|---|---|---|",
    ]
    for e in c.entries:
        shown = e.after or e.before
        assert shown is not None
        subgroup = name_of(shown)
        if e.label == "changed" and e.before is not None:
            subgroup = f"{name_of(e.before)} → {subgroup}"
        b, a = e.before, e.after
        lines.append(
            f"| **{e.label}** | `{e.scan_id}` | {subgroup} "
            f"| {num(b.score if b else None)} → {num(a.score if a else None)} "
            f"| {p(b.p_value if b else None)} → {p(a.p_value if a else None)} "
            f"| {num(b.rate if b else None)} → {num(a.rate if a else None)} |"
        )
    lines.append("")
    return lines


def diff_verdict(comparison: BaselineComparison) -> str:
    """One line for ``audit diff``: FAIL on new findings; otherwise "no new significant
    finding", with the findings still significant counted (PASS only when there are none)."""
    if comparison.new_significant:
        return f"FAIL: {comparison.new_significant} new significant finding(s)"
    still = comparison.counts.get("persisting", 0) + comparison.counts.get("changed", 0)
    if still:
        changed = comparison.counts.get("changed", 0)
        extra = f", {changed} of them with a shifted subgroup" if changed else ""
        return (
            f"no new significant finding; {still} persisting finding(s) from the baseline are "
            f"still significant{extra}"
        )
    return "PASS: no new significant finding"


def render_diff(comparison: BaselineComparison, current: AuditReport) -> str:
    """Markdown of ``audit diff``: the comparison, then the current verdict per scan."""
    lines = [f"# Fairness audit diff: {current.name}", ""]
    text = diff_verdict(comparison)
    head, sep, rest = text.partition(": ")
    if sep and head in ("FAIL", "PASS"):
        verdict = f"**{head}**: {rest}."
    else:
        first, _, rest = text.partition("; ")
        verdict = f"**{first[0].upper()}{first[1:]}**; {rest}."
    lines += [verdict, ""]
    lines += render_comparison(comparison)
    return "\n".join(lines)
