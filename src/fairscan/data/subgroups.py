"""Given subgroups (a scan's ``subgroups:``) resolved to attribute -> value labels.

A subgroup is written as a mapping ``{race: African-American, sex: [Male]}`` or as a filter
string in the filter grammar (:mod:`fairscan.data.filters`, parsed, never evaluated):
``race = 'African-American' and sex = 'Male'``. Either way it becomes the scan's own subgroup
form, attribute -> selected value labels (unconstrained attributes omitted), the form every
finding reports and :func:`fairscan.data.labels.subgroup_label` reads.

A filter string is a conjunction (``AND``) of conditions on scan attributes: ``=``, ``!=``,
``IN``, ``NOT IN``, ``IS [NOT] NULL``, and on ordered attributes ``<``, ``<=``, ``>``, ``>=``
and ``BETWEEN``. On a discretised attribute a comparison must fall on a bin edge (a bin is
either wholly inside or wholly outside a subgroup); bin labels such as ``'[18, 25)'`` are
values too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairscan.data.filters import (
    And,
    Between,
    Column,
    Compare,
    InList,
    IsNull,
    Literal,
    Node,
    Value,
    parse_filter,
)
from fairscan.data.table import MISSING_LABEL, EncodedAttribute
from fairscan.errors import ScanError, SpecError, truncate

Subgroup = dict[str, list[str]]
SHOWN_VALUES = 12  # values listed in an "unknown value" message


def resolve_subgroups(
    entries: Sequence[Mapping[str, Any] | str],
    attributes: Sequence[EncodedAttribute],
    field: str = "subgroups",
) -> list[Subgroup]:
    """Each entry as attribute -> value labels, in attribute and label order.

    Raises :class:`ScanError` naming ``field[k]`` for an unknown attribute or value, a filter
    that is not a conjunction of attribute conditions, or a condition no value meets.
    """
    return [resolve_subgroup(entry, attributes, f"{field}[{k}]") for k, entry in enumerate(entries)]


def resolve_subgroup(
    entry: Mapping[str, Any] | str, attributes: Sequence[EncodedAttribute], field: str
) -> Subgroup:
    by_name = {a.name: a for a in attributes}
    chosen: dict[str, set[int]] = {}
    if isinstance(entry, str):
        conditions = _conditions(entry, field)
        for node in conditions:
            name, codes = _condition_codes(node, by_name, field)
            chosen[name] = chosen.get(name, codes) & codes
    else:
        for name, values in entry.items():
            attribute = _attribute(str(name), by_name, field)
            listed = values if isinstance(values, list | tuple) else [values]
            codes = {_code(attribute, v, field) for v in listed}
            chosen[attribute.name] = chosen.get(attribute.name, codes) & codes
    out: Subgroup = {}
    for attribute in attributes:  # the scan's attribute order, each in label order
        if attribute.name not in chosen:
            continue
        codes = chosen[attribute.name]
        if not codes:
            raise ScanError(
                f"the conditions on {attribute.name!r} leave no value of it",
                field=field,
                hint=f"{attribute.name} has the values {_shown(attribute)}",
            )
        if len(codes) == attribute.cardinality:
            continue  # every value: the attribute is not constrained
        out[attribute.name] = [attribute.labels[c] for c in sorted(codes)]
    return out


def subgroup_rows(
    subgroup: Mapping[str, Sequence[str]],
    attributes: Sequence[EncodedAttribute],
    codes: np.ndarray,
) -> np.ndarray:
    """Boolean mask of the rows of ``codes`` (n, m) inside ``subgroup`` (labels per attribute)."""
    inside = np.ones(codes.shape[0], dtype=bool)
    for j, attribute in enumerate(attributes):
        if attribute.name in subgroup:
            wanted = [attribute.labels.index(v) for v in subgroup[attribute.name]]
            inside &= np.isin(codes[:, j], wanted)
    return inside


# --- filter strings ---------------------------------------------------------------------------


def _conditions(text: str, field: str) -> list[Node]:
    try:
        tree = parse_filter(text)
    except SpecError as error:
        raise ScanError(error.issues[0].message, field=field, hint=error.issues[0].hint) from None
    out: list[Node] = []
    stack: list[Node] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, And):
            stack += [node.right, node.left]
        else:
            out.append(node)
    return out


def _not_a_condition(field: str, what: str) -> ScanError:
    return ScanError(
        f"a subgroup is a conjunction (AND) of conditions on scan attributes; {what}",
        field=field,
        hint="write e.g. race = 'African-American' and sex in ('Male') "
        "(several values of one attribute: IN (...))",
    )


def _condition_codes(
    node: Node, by_name: Mapping[str, EncodedAttribute], field: str
) -> tuple[str, set[int]]:
    """(attribute, the codes of its values that meet the condition)."""
    if isinstance(node, Compare):
        left, right, op = node.left, node.right, node.op
        if isinstance(right, Column) and isinstance(left, Literal):
            left, right = right, left
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        if not (isinstance(left, Column) and isinstance(right, Literal)):
            raise _not_a_condition(field, "each condition compares an attribute with a value")
        attribute = _attribute(left.name, by_name, field)
        if op in ("=", "!="):
            code = _code(attribute, right.value, field)
            every = set(range(attribute.cardinality))
            return attribute.name, {code} if op == "=" else every - {code}
        return attribute.name, _ordered_codes(attribute, op, right.value, field)
    if isinstance(node, InList) and isinstance(node.operand, Column):
        attribute = _attribute(node.operand.name, by_name, field)
        codes = {_code(attribute, v.value, field) for v in node.values}
        if node.negated:
            codes = set(range(attribute.cardinality)) - codes
        return attribute.name, codes
    if isinstance(node, IsNull) and isinstance(node.operand, Column):
        attribute = _attribute(node.operand.name, by_name, field)
        missing = {i for i, v in enumerate(attribute.labels) if v == MISSING_LABEL}
        return attribute.name, set(range(attribute.cardinality)) - missing if node.negated else (
            missing
        )
    if (
        isinstance(node, Between)
        and isinstance(node.operand, Column)
        and isinstance(node.low, Literal)
        and isinstance(node.high, Literal)
    ):
        attribute = _attribute(node.operand.name, by_name, field)
        codes = _ordered_codes(attribute, ">=", node.low.value, field) & _ordered_codes(
            attribute, "<=", node.high.value, field
        )
        if node.negated:
            codes = set(range(attribute.cardinality)) - codes
        return attribute.name, codes
    raise _not_a_condition(field, f"{type(node).__name__.upper()} is not one of them")


def _ordered_codes(attribute: EncodedAttribute, op: str, value: Value, field: str) -> set[int]:
    """Codes of an ordered attribute's values (or whole bins) meeting ``attribute op value``."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ScanError(
            f"{attribute.name} {op} {value!r}: an order comparison needs a number",
            field=field,
        )
    threshold = float(value)
    labels = attribute.labels
    if attribute.edges is not None:
        edges = attribute.edges
        bins = [i for i, v in enumerate(labels) if v != MISSING_LABEL]
        if len(edges) == len(bins) + 1:
            if (
                not any(math.isclose(threshold, e) for e in edges)
                and edges[0] < threshold < (edges[-1])
            ):
                raise ScanError(
                    f"{attribute.name} {op} {value}: {value} is not a bin edge, so a bin would be "
                    "split",
                    field=field,
                    hint=f"the bin edges of {attribute.name} are "
                    + ", ".join(f"{e:g}" for e in edges),
                )
            out = set()
            for k, code in enumerate(bins):
                low, high = edges[k], edges[k + 1]
                if op in ("<", "<=") and high <= threshold + 1e-12 * max(1.0, abs(threshold)):
                    out.add(code)
                if op in (">", ">=") and low >= threshold - 1e-12 * max(1.0, abs(threshold)):
                    out.add(code)
            return out
    if not attribute.ordered:
        raise ScanError(
            f"{attribute.name} {op} {value}: {attribute.name} has no order",
            field=field,
            hint=f"use = or IN with its values: {_shown(attribute)}",
        )
    out = set()
    for code, label in enumerate(labels):
        try:
            number = float(label)
        except ValueError:
            continue
        if _compare(number, op, threshold):
            out.add(code)
    return out


def _compare(a: float, op: str, b: float) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


# --- names and values -------------------------------------------------------------------------


def _attribute(name: str, by_name: Mapping[str, EncodedAttribute], field: str) -> EncodedAttribute:
    attribute = by_name.get(name)
    if attribute is None:
        raise ScanError(
            f"{truncate(name)!r} is not a scan attribute",
            field=field,
            hint="a subgroup constrains the spec's attributes: " + ", ".join(sorted(by_name)),
        )
    return attribute


def _candidates(value: object) -> list[str]:
    """The label texts a written value may stand for (``1`` -> "1", ``1.0`` -> "1", ...)."""
    if value is None:
        return [MISSING_LABEL]
    if isinstance(value, bool):
        return [str(value).lower(), str(value)]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value)), repr(value)]
    return [str(value)]


def _code(attribute: EncodedAttribute, value: object, field: str) -> int:
    for text in _candidates(value):
        if text in attribute.labels:
            return attribute.labels.index(text)
    raise ScanError(
        f"{truncate(str(value))!r} is not a value of {attribute.name}",
        field=field,
        hint=f"{attribute.name} has the values {_shown(attribute)}",
    )


def _shown(attribute: EncodedAttribute) -> str:
    labels = list(attribute.labels)
    text = ", ".join(labels[:SHOWN_VALUES])
    return text + (f", … ({len(labels)} in all)" if len(labels) > SHOWN_VALUES else "")


__all__ = ["Subgroup", "resolve_subgroup", "resolve_subgroups", "subgroup_rows"]
