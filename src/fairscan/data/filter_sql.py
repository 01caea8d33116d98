"""A parsed filter (:mod:`fairscan.data.filters`) compiled to an Ibis boolean expression, so
that a database applies ``data.filter`` itself (never evaluated in Python).

The type checks and messages are the polars compiler's (:mod:`fairscan.data.filter_compile`),
run first against the table's schema; this module only builds the expression, with the same
meaning: SQL three-valued logic, string literals compared with date/time columns read as ISO
8601, LIKE with ``%`` and ``_``.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from fairscan.data.filter_compile import _dtype_kind, filter_expression
from fairscan.data.filters import (
    And,
    Between,
    Column,
    Compare,
    InList,
    IsNull,
    Like,
    Literal,
    Node,
    Not,
    Operand,
    Or,
    _flatten,
    parse_filter,
)

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_PARSE: dict[str, Callable[[str], object]] = {
    "date": dt.date.fromisoformat,
    "datetime": dt.datetime.fromisoformat,
    "time": dt.time.fromisoformat,
}


def filter_ibis(text: str, table: Any, schema: Mapping[str, pl.DataType]) -> Any:
    """``text`` as a boolean Ibis expression over ``table``; a :class:`SpecError` on
    ``data.filter`` (syntax, unknown column, types) exactly as for a file."""
    filter_expression(text, schema)  # the checks and their messages
    return _Builder(table, schema).node(parse_filter(text))


class _Builder:
    def __init__(self, table: Any, schema: Mapping[str, pl.DataType]) -> None:
        self.table = table
        self.schema = schema

    def _kind(self, node: Operand) -> str:
        if isinstance(node, Column):
            return _dtype_kind(self.schema[node.name])
        return "literal"

    def _operand(self, node: Operand, other: Operand | None = None) -> Any:
        import ibis

        if isinstance(node, Column):
            expr = self.table[node.name]
            if _dtype_kind(self.schema[node.name]) == "string" and not expr.type().is_string():
                expr = expr.cast("string")
            return expr
        value = node.value
        kind = self._kind(other) if other is not None else "literal"
        if isinstance(value, str) and kind in _PARSE:
            return ibis.literal(_PARSE[kind](value))
        if value is None:
            return ibis.null()
        return ibis.literal(value)

    def node(self, node: Node) -> Any:
        import ibis

        if isinstance(node, And):
            parts = [self.node(n) for n in _flatten(node, And)]
            return ibis.and_(*parts)
        if isinstance(node, Or):
            parts = [self.node(n) for n in _flatten(node, Or)]
            return ibis.or_(*parts)
        if isinstance(node, Not):
            return ~self.node(node.operand)
        if isinstance(node, Column):
            return self.table[node.name].cast("boolean")
        if isinstance(node, Literal):
            return ibis.literal(bool(node.value))
        if isinstance(node, Compare):
            left = self._operand(node.left, node.right)
            right = self._operand(node.right, node.left)
            return _CMP[node.op](left, right)
        if isinstance(node, InList):
            operand = self._operand(node.operand)
            parts = [operand == self._operand(v, node.operand) for v in node.values]
            expr = ibis.or_(*parts)
            return ~expr if node.negated else expr
        if isinstance(node, Between):
            x = self._operand(node.operand)
            low = self._operand(node.low, node.operand)
            high = self._operand(node.high, node.operand)
            expr = (x >= low) & (x <= high)
            return ~expr if node.negated else expr
        if isinstance(node, IsNull):
            x = self._operand(node.operand)
            return x.notnull() if node.negated else x.isnull()
        if isinstance(node, Like):
            expr = self._operand(node.operand).cast("string").like(node.pattern)
            return ~expr if node.negated else expr
        raise TypeError(f"not a filter node: {node!r}")  # pragma: no cover
