"""Compiling a parsed filter (:mod:`fairscan.data.filters`) into a polars expression: type
checks against the table's schema, then the expression. Separate from the parser so that
checking a spec without its data never imports polars (the parser does not import this module)."""

from __future__ import annotations

import datetime as dt
import difflib
import operator
import re
from collections.abc import Callable, Mapping
from typing import Literal as TypingLiteral

import polars as pl

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
    Value,
    _error,
    _flatten,
    parse_filter,
    quote_identifier,
)
from fairscan.errors import SpecError

# --------------------------------------------------------------------------------------------
# Compiler (type checks against the schema, then builds a polars expression)
# --------------------------------------------------------------------------------------------

Kind = TypingLiteral["numeric", "string", "boolean", "date", "datetime", "time", "null", "other"]


def _dtype_kind(dtype: pl.DataType) -> Kind:
    if dtype.is_numeric():
        return "numeric"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Categorical):
        return "string"
    if dtype == pl.Boolean:
        return "boolean"
    if dtype == pl.Date:
        return "date"
    if isinstance(dtype, pl.Datetime) or dtype == pl.Datetime:
        return "datetime"
    if dtype == pl.Time:
        return "time"
    if dtype == pl.Null:
        return "null"
    return "other"


def _value_kind(value: Value) -> Kind:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "numeric"
    return "string"


_KIND_NAME = {
    "numeric": "a number",
    "string": "a string",
    "boolean": "a boolean",
    "date": "a date",
    "datetime": "a datetime",
    "time": "a time",
    "null": "NULL",
    "other": "a value",
}


def _show(value: Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _like_regex(pattern: str) -> str:
    out = ["(?s)^"]
    for ch in pattern:
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    out.append("$")
    return "".join(out)


_CMP: dict[str, Callable[[pl.Expr, pl.Expr], pl.Expr]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Compiler:
    def __init__(self, text: str, schema: Mapping[str, pl.DataType]) -> None:
        self.text = text
        self.schema = dict(schema)

    def _err(self, pos: int, message: str, hint: str | None = None) -> SpecError:
        return _error(self.text, pos, message, hint)

    # -- operands --------------------------------------------------------------------------
    def _column(self, col: Column) -> tuple[pl.Expr, Kind, pl.DataType]:
        if col.name not in self.schema:
            names = list(self.schema)
            close = difflib.get_close_matches(col.name, names, n=3, cutoff=0.6)
            if not close:
                lowered = {n.lower(): n for n in names}
                if col.name.lower() in lowered:
                    close = [lowered[col.name.lower()]]
            if close:
                hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
                if any(not c.isidentifier() for c in close):
                    hint += ' (quote names with spaces or dashes: "my col")'
            elif col.quoted:
                hint = f"string values take single quotes: '{col.name}'"
            else:
                shown = ", ".join(repr(n) for n in names[:20])
                more = f" (and {len(names) - 20} more)" if len(names) > 20 else ""
                hint = f"columns are: {shown}{more}"
            if col.quoted and close:
                hint += f"; for a string value write '{col.name}'"
            raise self._err(col.pos, f"unknown column {col.name!r}", hint)
        dtype = self.schema[col.name]
        kind = _dtype_kind(dtype)
        expr = pl.col(col.name)
        if kind == "string" and dtype != pl.String:
            expr = expr.cast(pl.String)
        return expr, kind, dtype

    def _operand(self, node: Operand) -> tuple[pl.Expr, Kind, pl.DataType | None, Value]:
        if isinstance(node, Column):
            expr, kind, dtype = self._column(node)
            return expr, kind, dtype, None
        return pl.lit(node.value), _value_kind(node.value), None, node.value

    def _describe(self, node: Operand, kind: Kind, dtype: pl.DataType | None) -> str:
        if isinstance(node, Column):
            return f"column {node.name!r} ({dtype})"
        return f"{_KIND_NAME[kind]} {_show(node.value)}"

    def _coerce_temporal(self, kind: Kind, lit: Literal) -> pl.Expr | None:
        """A 'string' literal compared with a date/datetime/time column is read as ISO 8601."""
        if not isinstance(lit.value, str) or kind not in ("date", "datetime", "time"):
            return None
        parse: Callable[[str], object] = {
            "date": dt.date.fromisoformat,
            "datetime": dt.datetime.fromisoformat,
            "time": dt.time.fromisoformat,
        }[kind]
        try:
            return pl.lit(parse(lit.value))
        except ValueError:
            raise self._err(
                lit.pos,
                f"cannot read {_show(lit.value)} as a {kind}",
                "write dates as 'YYYY-MM-DD' and datetimes as 'YYYY-MM-DD HH:MM:SS'",
            ) from None

    def _pair(self, left: Operand, right: Operand, pos: int, what: str) -> tuple[pl.Expr, pl.Expr]:
        """Compile two operands that are compared with each other, checking their types."""
        lexpr, lkind, ldtype, _ = self._operand(left)
        rexpr, rkind, rdtype, _ = self._operand(right)
        for node, kind, dtype in ((left, lkind, ldtype), (right, rkind, rdtype)):
            if kind == "other" and isinstance(node, Column):
                raise self._err(
                    node.pos,
                    f"column {node.name!r} has type {dtype}, which a filter cannot compare",
                )
        if lkind == rkind or "null" in (lkind, rkind):
            # same kind; or a column of dtype Null (all missing), which is never true
            return lexpr, rexpr
        if isinstance(right, Literal):
            coerced = self._coerce_temporal(lkind, right)
            if coerced is not None:
                return lexpr, coerced
        if isinstance(left, Literal):
            coerced = self._coerce_temporal(rkind, left)
            if coerced is not None:
                return coerced, rexpr
        if {lkind, rkind} == {"date", "datetime"}:
            return lexpr, rexpr
        hint = None
        column_kind = lkind if isinstance(left, Column) else rkind
        literal = right if isinstance(right, Literal) else None
        if isinstance(left, Literal):
            literal = left
        if literal is not None and column_kind == "string":
            hint = f"quote the value as a string: '{literal.value}'"
        elif literal is not None and column_kind == "numeric" and isinstance(literal.value, str):
            hint = "compare a numeric column with a number, without quotes"
        elif literal is not None and column_kind == "boolean":
            hint = "compare a boolean column with TRUE or FALSE"
        raise self._err(
            pos,
            f"type mismatch in {what}: cannot compare {self._describe(left, lkind, ldtype)} "
            f"with {self._describe(right, rkind, rdtype)}",
            hint,
        )

    # -- nodes -----------------------------------------------------------------------------
    def compile(self, node: Node) -> pl.Expr:
        # AND/OR chains are flattened (iteratively, so long chains cannot exhaust the stack)
        # into one n-ary polars call; both use SQL's three-valued (Kleene) logic.
        if isinstance(node, And):
            return pl.all_horizontal([self.compile(n) for n in _flatten(node, And)])
        if isinstance(node, Or):
            return pl.any_horizontal([self.compile(n) for n in _flatten(node, Or)])
        if isinstance(node, Not):
            return ~self._boolean(node.operand)
        return self._boolean(node)

    def _boolean(self, node: Node) -> pl.Expr:
        if isinstance(node, And | Or | Not):
            return self.compile(node)
        if isinstance(node, Column):
            expr, kind, dtype = self._column(node)
            if kind not in ("boolean", "null"):
                raise self._err(
                    node.pos,
                    f"column {node.name!r} ({dtype}) is not boolean and cannot be a condition "
                    "on its own",
                    f"compare it with a value, e.g. {quote_identifier(node.name)} = ...",
                )
            return expr.cast(pl.Boolean)
        if isinstance(node, Literal):
            return pl.lit(node.value, dtype=pl.Boolean)
        if isinstance(node, Compare):
            for side in (node.left, node.right):
                if isinstance(side, Literal) and side.value is None:
                    negate = "NOT " if node.op == "!=" else ""
                    raise self._err(
                        side.pos,
                        f"comparison with NULL ({node.op} NULL) is never true",
                        f"use IS {negate}NULL",
                    )
            lexpr, rexpr = self._pair(node.left, node.right, node.pos, f"'{node.op}'")
            return _CMP[node.op](lexpr, rexpr)
        if isinstance(node, InList):
            parts = []
            for value in node.values:
                if value.value is None:
                    raise self._err(
                        value.pos,
                        "NULL in an IN list never matches",
                        "test for missing values with IS NULL, e.g. (x IN (1, 2) OR x IS NULL)",
                    )
                lexpr, rexpr = self._pair(node.operand, value, value.pos, "IN list")
                parts.append(lexpr == rexpr)
            expr = parts[0] if len(parts) == 1 else pl.any_horizontal(parts)
            return ~expr if node.negated else expr
        if isinstance(node, Between):
            for side in (node.low, node.high):
                if isinstance(side, Literal) and side.value is None:
                    raise self._err(side.pos, "BETWEEN bounds cannot be NULL")
            lo_l, lo_r = self._pair(node.operand, node.low, node.pos, "BETWEEN")
            hi_l, hi_r = self._pair(node.operand, node.high, node.pos, "BETWEEN")
            expr = (lo_l >= lo_r) & (hi_l <= hi_r)
            return ~expr if node.negated else expr
        if isinstance(node, IsNull):
            expr, _, _, _ = self._operand(node.operand)
            return expr.is_not_null() if node.negated else expr.is_null()
        if isinstance(node, Like):
            expr, kind, operand_dtype, _ = self._operand(node.operand)
            if kind not in ("string", "null"):
                raise self._err(
                    node.pos,
                    f"type mismatch in LIKE: {self._describe(node.operand, kind, operand_dtype)} "
                    "is not a string",
                    "LIKE matches text columns; compare numbers with =, <, BETWEEN",
                )
            expr = expr.cast(pl.String).str.contains(_like_regex(node.pattern))
            return ~expr if node.negated else expr
        raise TypeError(f"not a filter node: {node!r}")  # pragma: no cover


def filter_expression(text: str, schema: Mapping[str, pl.DataType]) -> pl.Expr:
    """Parse ``text`` and compile it against ``schema`` into a boolean polars expression.

    Raises :class:`SpecError` (field ``data.filter``) for syntax errors, unknown columns and
    type mismatches; the message carries the 1-based position and a caret line.
    """
    node = parse_filter(text)
    return Compiler(text, schema).compile(node)
