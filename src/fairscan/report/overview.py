"""What every renderer says before and around the findings, computed from the result contract
alone: readable labels for complements, which listed groups contain which, the attributes the
top findings constrain, and the "What was audited" facts.

Nothing here formats HTML or Markdown: :mod:`fairscan.report.html`, :mod:`.markdown` and
:mod:`.display` draw these the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairscan.report.models import AuditReport, Finding, ScanResult
from fairscan.report.text import fmt_value, is_rate, percent

# Findings per scan that the overview looks at (the scan's most important first).
OVERVIEW_FINDINGS = 5
# Values left out that a complement label still names (``education ∉ {a, b}``).
MAX_COMPLEMENT = 2


def _plain_part(name: str, chosen: Sequence[str]) -> str:
    """The label part :func:`fairscan.data.labels.subgroup_label` writes for an unordered
    attribute with several values."""
    return f"{name} in {{{', '.join(chosen)}}}"


def readable_label(finding: Finding, attributes: Mapping[str, Sequence[str]]) -> str:
    """The finding's label with ``name in {all values but one}`` read as ``name ≠ value`` (up
    to :data:`MAX_COMPLEMENT` values left out: ``name ∉ {a, b}``). Ranges are already merged by
    the scan (``duration >= 12``) and are kept as they are."""
    label = finding.label
    for name, chosen in (finding.subgroup or {}).items():
        values = list(attributes.get(name, ()))
        missing = [v for v in values if v not in set(chosen)]
        if len(chosen) < 2 or not missing or len(missing) > MAX_COMPLEMENT:
            continue
        if len(missing) >= len(chosen):
            continue  # the selection itself is the shorter text
        plain = _plain_part(name, chosen)
        if plain not in label:
            continue
        short = (
            f"{name} ≠ {missing[0]}" if len(missing) == 1 else f"{name} ∉ {{{', '.join(missing)}}}"
        )
        label = label.replace(plain, short, 1)
    return label


def _contains(outer: Mapping[str, Sequence[str]], inner: Mapping[str, Sequence[str]]) -> bool:
    """Every row of ``inner`` is in ``outer``: each attribute ``outer`` constrains is constrained
    by ``inner`` to a subset of its values."""
    return all(name in inner and set(inner[name]) <= set(values) for name, values in outer.items())


def containers(findings: Sequence[Finding]) -> dict[int, int]:
    """Finding index -> the index of the first other listed finding that contains it (its rows
    are a subset of that one's). Named groups without a subgroup take no part."""
    out: dict[int, int] = {}
    for i, inner in enumerate(findings):
        if inner.subgroup is None:
            continue
        for j, outer in enumerate(findings):
            if i == j or outer.subgroup is None or inner.subgroup == outer.subgroup:
                continue
            if _contains(outer.subgroup, inner.subgroup):
                out[i] = j
                break
    return out


def nested_note(findings: Sequence[Finding], index: int, labels: Sequence[str]) -> str | None:
    """``Contained in finding 2 (ethnicity = C): ...`` for a listed group inside another."""
    outer = containers(findings).get(index)
    if outer is None:
        return None
    return (
        f"Nested: every row of this group is also in finding {outer + 1} ({labels[outer]}), "
        "so the two are not independent results."
    )


def effect_size(finding: Finding) -> str:
    """inside - reference in words: percentage points for rates, the metric's units otherwise."""
    e = finding.effect
    if e.inside is None or e.reference is None:
        return "n/a"
    diff = e.inside - e.reference
    if is_rate(e.metric, e.inside, e.reference):
        return f"{100 * diff:+.1f} pts"
    return f"{diff:+.4g}" if abs(diff) < 1 else f"{diff:+.2f}"


@dataclass(frozen=True)
class ConstrainedAttribute:
    """An attribute that top findings constrain: its values there and the largest effect."""

    name: str
    values: list[str]
    findings: int
    largest: str  # the effect size of the strongest finding constraining it, with its scan


def constrained_attributes(
    report: AuditReport, per_scan: int = OVERVIEW_FINDINGS
) -> list[ConstrainedAttribute]:
    """Over the top findings of every scan: which attributes they constrain (most often first),
    with the values they select and the largest inside - reference difference."""
    seen: dict[str, tuple[list[str], int, float, str]] = {}
    order = list(report.attributes)
    for scan in report.scans:
        for finding in scan.findings[:per_scan]:
            e = finding.effect
            size = (
                abs(e.inside - e.reference)
                if e.inside is not None and e.reference is not None
                else -1.0
            )
            for name, chosen in (finding.subgroup or {}).items():
                values, count, best, text = seen.get(name, ([], 0, -2.0, "n/a"))
                values += [v for v in chosen if v not in values]
                if size > best:
                    best, text = size, f"{effect_size(finding)} ({scan.id})"
                seen[name] = (values, count + 1, best, text)

    def position(name: str) -> int:
        return order.index(name) if name in order else len(order)

    ranked = sorted(seen.items(), key=lambda item: (-item[1][1], position(item[0])))
    out = []
    for name, (values, count, _, text) in ranked:
        known = list(report.attributes.get(name, ()))
        values.sort(key=lambda v: known.index(v) if v in known else len(known))
        out.append(ConstrainedAttribute(name, values, count, text))
    return out


# --- "What was audited" ---------------------------------------------------------------------


def _edges(edges: Sequence[float]) -> str:
    return ", ".join(fmt_value(e) if abs(e) < 1 else f"{e:g}" for e in edges)


def _scan_settings(scan: ScanResult) -> str:
    """The scan's own settings (its spec without the keys every scan has), as ``k = v``."""
    skip = {"id", "type"}

    def shown(value: object) -> str:
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    parts = [
        f"{key} = {shown(value)}"
        for key, value in scan.parameters.items()
        if key not in skip and value not in (None, [], {})
    ]
    return ", ".join(parts) or "defaults"


def audited_items(report: AuditReport) -> list[tuple[str, str]]:
    """(item, value) rows of the "What was audited" section: model, data, rows, filter, roles,
    attributes with their values or bins, significance settings, seed, and each scan's
    settings."""
    prov = report.provenance
    params: dict[str, Any] = prov.parameters
    rows: list[tuple[str, str]] = []
    model = model_text(report)
    if model is not None:
        rows.append(("model", model))
    source = prov.data_source
    if source:
        where = source.get("table") or source.get("sql") or ""
        data = f"{source.get('kind', 'database')} {source.get('connection', '')} {where}".strip()
    else:
        data = prov.data_path
    rows.append(("data", f"{data} (sha256 {prov.data_sha256[:16]}…)"))
    kept = percent(prov.rows_after_filter / prov.data_rows, 1) if prov.data_rows else "n/a"
    rows.append(
        ("rows", f"{prov.data_rows} in the data, {prov.rows_after_filter} audited ({kept})")
    )
    rows.append(("filter", prov.filter or "none (every row)"))
    columns = params.get("columns")
    if isinstance(columns, dict):
        roles = [
            f"{k} = {v}" for k, v in columns.items() if v is not None and k != "threshold_rule"
        ]
        if roles:
            rows.append(("columns", ", ".join(roles)))
    bins = report.bins or {}
    for name, values in report.attributes.items():
        if name in bins:
            text = f"binned at {_edges(bins[name])} → {len(values)} bins: {', '.join(values)}"
        else:
            text = f"{len(values)} values: {', '.join(values)}"
        rows.append((f"attribute {name}", text))
    sig = params.get("significance")
    if isinstance(sig, dict):
        rows.append(
            (
                "significance",
                f"{sig.get('replicates')} null replicates, alpha = {sig.get('alpha')}",
            )
        )
    gate = params.get("gate")
    if isinstance(gate, dict) and gate:
        rows.append(("gate", ", ".join(f"{k} = {v}" for k, v in gate.items())))
    seed = str(prov.seed) if prov.seed is not None else f"none (entropy {prov.seed_entropy})"
    if prov.seed_origin not in (None, "significance.seed"):
        seed = f"{seed} ({prov.seed_origin})"
    rows.append(("seed", seed))
    for scan in report.scans:
        rows.append((f"scan {scan.id} ({scan.type})", _scan_settings(scan)))
    return rows


def model_text(report: AuditReport) -> str | None:
    """The audited model in one line (name, version, owner, description), if the spec names
    one."""
    model = report.model
    if model is None:
        return None
    text = model.name + (f" {model.version}" if model.version else "")
    if model.owner:
        text += f", owned by {model.owner}"
    if model.description:
        text += f": {model.description}"
    return text
