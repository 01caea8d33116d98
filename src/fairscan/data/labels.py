"""Readable subgroup labels: contiguous values of an ordered attribute read as a range.

``{"duration": ["[12, 15)", "[15, 24)", "[24, 30)", "[30, 72]"]}`` reads
``duration >= 12``; ``{"priors_count": ["0", "1", "2"]}`` (an integer attribute with more
values) reads ``priors_count <= 2``. Unordered attributes read ``race = A`` or
``race in {A, B}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairscan.data.table import MISSING_LABEL, EncodedAttribute

EVERYONE = "everyone (no attribute constrained)"


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for p in sorted(positions):
        if runs and p == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], p)
        else:
            runs.append((p, p))
    return runs


def _bin_range(name: str, edges: Sequence[float], first: int, last: int, bins: int) -> str:
    from fairscan.data.discretize import format_number  # polars: only where bins are labelled

    low = format_number(edges[first]) if first > 0 else None
    high = format_number(edges[last + 1]) if last < bins - 1 else None
    if low is not None and high is not None:
        return f"{low} <= {name} < {high}"
    if low is not None:
        return f"{name} >= {low}"
    return f"{name} < {high}"


def _value_range(name: str, values: Sequence[str], first: int, last: int) -> str:
    if first == last:
        return f"{name} = {values[first]}"
    if first == 0:
        return f"{name} <= {values[last]}"
    if last == len(values) - 1:
        return f"{name} >= {values[first]}"
    return f"{values[first]} <= {name} <= {values[last]}"


def _ordered_part(attribute: EncodedAttribute, chosen: Sequence[str]) -> str | None:
    """The range text of an ordered attribute's selection; None if a label is unknown."""
    values = [v for v in attribute.labels if v != MISSING_LABEL]
    index = {v: i for i, v in enumerate(values)}
    if any(v not in index and v != MISSING_LABEL for v in chosen):
        return None
    positions = [index[v] for v in chosen if v in index]
    name = attribute.name
    edges = attribute.edges
    pieces = []
    for first, last in _runs(positions):
        if edges is not None and len(edges) == len(values) + 1:
            pieces.append(_bin_range(name, edges, first, last, len(values)))
        else:
            pieces.append(_value_range(name, values, first, last))
    if MISSING_LABEL in chosen:
        pieces.append(f"{name} is missing")
    return pieces[0] if len(pieces) == 1 else "(" + " or ".join(pieces) + ")"


def _plain_part(name: str, chosen: Sequence[str]) -> str:
    if len(chosen) == 1:
        return f"{name} = {chosen[0]}"
    return f"{name} in {{{', '.join(chosen)}}}"


def subgroup_label(
    subgroup: Mapping[str, Sequence[str]], attributes: Sequence[EncodedAttribute] = ()
) -> str:
    """The readable label of ``subgroup`` (attribute -> selected value labels)."""
    if not subgroup:
        return EVERYONE
    by_name = {a.name: a for a in attributes}
    parts = []
    for name, chosen in subgroup.items():
        attribute = by_name.get(name)
        text = None
        if attribute is not None and attribute.ordered:
            text = _ordered_part(attribute, list(chosen))
        parts.append(text if text is not None else _plain_part(name, list(chosen)))
    return " and ".join(parts)
