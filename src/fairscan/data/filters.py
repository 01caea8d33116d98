"""Row filters in SQL ``WHERE`` syntax: a small recursive-descent parser and a polars compiler.

The filter text is tokenised and parsed into a tree of :class:`Node` objects; the tree is then
type-checked against the table schema and turned into a :class:`polars.Expr`. Nothing is ever
evaluated as Python code and no SQL engine is involved.

Grammar (keywords are case-insensitive, column names case-sensitive)::

    expr      := and_expr ( OR and_expr )*
    and_expr  := not_expr ( AND not_expr )*
    not_expr  := NOT not_expr | predicate
    predicate := '(' expr ')'
               | operand [ cmp_op operand
                         | [NOT] IN '(' literal ( ',' literal )* ')'
                         | [NOT] BETWEEN operand AND operand
                         | [NOT] LIKE string
                         | IS [NOT] NULL ]
    operand   := identifier | "quoted identifier" | literal
    literal   := number | '-' number | 'string' | TRUE | FALSE | NULL
    cmp_op    := = | == | != | <> | < | <= | > | >=

A bare operand is allowed as a predicate when it is a boolean column or TRUE/FALSE.
Comparisons with NULL follow SQL: a row whose comparison is NULL is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast
from typing import Literal as TypingLiteral

from fairscan.errors import SpecError

if TYPE_CHECKING:
    pass

FIELD = "data.filter"
MAX_NESTING = 100  # parentheses / NOT levels; keeps recursion far from Python's limit

__all__ = [
    "And",
    "Between",
    "Column",
    "Compare",
    "InList",
    "IsNull",
    "Like",
    "Literal",
    "Node",
    "Not",
    "Or",
    "filter_columns",
    "parse_filter",
    "quote_identifier",
]

# --------------------------------------------------------------------------------------------
# Syntax tree
# --------------------------------------------------------------------------------------------

Value = int | float | str | bool | None


@dataclass(frozen=True)
class Column:
    name: str
    pos: int  # 0-based character offset in the filter text
    quoted: bool = False


@dataclass(frozen=True)
class Literal:
    value: Value
    pos: int


Operand = Column | Literal


@dataclass(frozen=True)
class Compare:
    op: str  # one of = != < <= > >=  (== and <> are normalised)
    left: Operand
    right: Operand
    pos: int  # position of the operator


@dataclass(frozen=True)
class InList:
    operand: Operand
    values: tuple[Literal, ...]
    negated: bool
    pos: int


@dataclass(frozen=True)
class Between:
    operand: Operand
    low: Operand
    high: Operand
    negated: bool
    pos: int


@dataclass(frozen=True)
class IsNull:
    operand: Operand
    negated: bool
    pos: int


@dataclass(frozen=True)
class Like:
    operand: Operand
    pattern: str
    negated: bool
    pos: int


@dataclass(frozen=True)
class And:
    left: Node
    right: Node


@dataclass(frozen=True)
class Or:
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    operand: Node
    pos: int


Node = Column | Literal | Compare | InList | Between | IsNull | Like | And | Or | Not

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


# characters of the filter shown on each side of the error (a long filter is not echoed whole)
CARET_CONTEXT = 60


def _caret(text: str, pos: int) -> str:
    """Two-line excerpt: the filter text around character ``pos`` (0-based; at most
    CARET_CONTEXT characters each side, cut ends marked "…") and a caret under it."""
    shown = re.sub(r"[\t\r\n]", " ", text)
    pos = max(0, min(pos, len(shown)))
    start, end = max(0, pos - CARET_CONTEXT), min(len(shown), pos + CARET_CONTEXT)
    head = "…" if start > 0 else ""
    tail = "…" if end < len(shown) else ""
    excerpt = head + shown[start:end] + tail
    return f"  {excerpt}\n  {' ' * (pos - start + len(head))}^"


def _error(
    text: str, pos: int, message: str, hint: str | None = None, *, expected: str | None = None
) -> SpecError:
    """A :class:`SpecError` for ``data.filter`` pointing at character ``pos`` (0-based).

    The message reads ``<message> at position <pos+1>[; expected <expected>]`` followed by the
    filter text and a caret line.
    """
    full = f"{message} at position {pos + 1}"
    if expected:
        full += f"; expected {expected}"
    full += f"\n{_caret(text, pos)}"
    return SpecError(full, field=FIELD, hint=hint)


# --------------------------------------------------------------------------------------------
# Tokeniser
# --------------------------------------------------------------------------------------------

KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "LIKE", "TRUE", "FALSE"})
_COMPARISON = {
    "=": "=",
    "==": "=",
    "!=": "!=",
    "<>": "!=",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
}

TokenKind = TypingLiteral["ident", "qident", "number", "string", "keyword", "op", "punct", "eof"]


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # source text (for display)
    value: Value  # identifier name, keyword (upper case), number, string contents, operator
    pos: int


_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[^\W\d]\w*")
_OPS = ("<=", ">=", "<>", "!=", "==", "=", "<", ">")


def _read_quoted(text: str, i: int, unterminated: str, hint: str) -> tuple[str, int]:
    """The contents of the quoted token opening at ``i`` (a doubled quote stands for one quote)
    and the index of its closing quote."""
    quote = text[i]
    j, parts = i + 1, []
    while True:
        k = text.find(quote, j)
        if k < 0:
            raise _error(text, i, unterminated, hint)
        parts.append(text[j:k])
        if k + 1 < len(text) and text[k + 1] == quote:
            parts.append(quote)
            j = k + 2
            continue
        return "".join(parts), k


def _tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "'":
            value, k = _read_quoted(
                text,
                i,
                "unterminated string",
                "close the string with a single quote; write '' for a quote inside it",
            )
            tokens.append(Token("string", text[i : k + 1], value, i))
            i = k + 1
            continue
        if ch == '"':
            name, k = _read_quoted(
                text,
                i,
                "unterminated quoted column name",
                "close the name with a double quote; string values take single quotes",
            )
            if not name:
                raise _error(text, i, "empty quoted column name")
            tokens.append(Token("qident", text[i : k + 1], name, i))
            i = k + 1
            continue
        m = _NUMBER.match(text, i)
        if m:
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise _error(
                    text,
                    i,
                    f"malformed number {text[i : end + 1]!r}",
                    'quote column names that start with a digit: "2nd_col"',
                )
            lexeme = m.group()
            number: int | float = int(lexeme) if lexeme.isdigit() else float(lexeme)
            tokens.append(Token("number", lexeme, number, i))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m:
            word = m.group()
            if word.upper() in KEYWORDS:
                tokens.append(Token("keyword", word, word.upper(), i))
            else:
                tokens.append(Token("ident", word, word, i))
            i = m.end()
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op is not None:
            tokens.append(Token("op", op, _COMPARISON[op], i))
            i += len(op)
            continue
        if ch in "(),-":
            tokens.append(Token("punct", ch, ch, i))
            i += 1
            continue
        hint = None
        if ch == "`":
            hint = 'quote column names with double quotes: "my column"'
        elif ch in "&|":
            hint = "use AND / OR"
        elif ch == "!":
            hint = "use NOT, or != for 'not equal'"
        raise _error(text, i, f"unexpected character {ch!r}", hint)
    tokens.append(Token("eof", "end of filter", None, n))
    return tokens


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0  # nesting of parentheses and NOT

    def _enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _error(
                self.text,
                pos,
                f"filter nested more than {MAX_NESTING} levels deep",
                "simplify the filter",
            )

    # -- helpers ---------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def _advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def _is_kw(self, *words: str) -> bool:
        return self.tok.kind == "keyword" and self.tok.value in words

    def _is_punct(self, ch: str) -> bool:
        return self.tok.kind == "punct" and self.tok.value == ch

    def _unexpected(self, expected: str | None = None, hint: str | None = None) -> SpecError:
        tok = self.tok
        msg = "unexpected end of filter" if tok.kind == "eof" else f"unexpected token {tok.text!r}"
        if hint is None and tok.kind == "punct" and tok.value == "(" and self.i > 0:
            prev = self.tokens[self.i - 1]
            if prev.kind in ("ident", "qident"):
                hint = "function calls are not supported; a filter compares columns with values"
        return _error(self.text, tok.pos, msg, hint, expected=expected)

    def _expect_punct(self, ch: str, expected: str) -> Token:
        if not self._is_punct(ch):
            raise self._unexpected(expected)
        return self._advance()

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> Node:
        if self.tok.kind == "eof":
            raise _error(
                self.text,
                0,
                "empty filter",
                "write a condition such as age >= 18, or remove data.filter",
            )
        node = self._or()
        if self.tok.kind != "eof":
            if self._is_punct(")"):
                raise self._unexpected(hint="remove it or add the matching '('")
            raise self._unexpected("AND, OR or end of filter")
        return node

    def _or(self) -> Node:
        node = self._and()
        while self._is_kw("OR"):
            self._advance()
            node = Or(node, self._and())
        return node

    def _and(self) -> Node:
        node = self._not()
        while self._is_kw("AND"):
            self._advance()
            node = And(node, self._not())
        return node

    def _not(self) -> Node:
        if self._is_kw("NOT"):
            tok = self._advance()
            self._enter(tok.pos)
            node = Not(self._not(), tok.pos)
            self.depth -= 1
            return node
        return self._predicate()

    def _predicate(self) -> Node:
        if self._is_punct("("):
            open_tok = self._advance()
            self._enter(open_tok.pos)
            node = self._or()
            if not self._is_punct(")"):
                if self.tok.kind == "eof":
                    raise _error(self.text, open_tok.pos, "unclosed '('", "add the matching ')'")
                raise self._unexpected("')'")
            self._advance()
            self.depth -= 1
            return node
        left = self._operand()
        tok = self.tok
        if tok.kind == "op":
            self._advance()
            right = self._operand()
            return Compare(str(tok.value), left, right, tok.pos)
        if self._is_kw("IS"):
            self._advance()
            negated = False
            if self._is_kw("NOT"):
                self._advance()
                negated = True
            if not self._is_kw("NULL"):
                raise self._unexpected(
                    "NULL", "IS only tests for NULL; use = to compare with a value"
                )
            self._advance()
            return IsNull(left, negated, tok.pos)
        negated = False
        if self._is_kw("NOT"):
            self._advance()
            negated = True
            if not self._is_kw("IN", "BETWEEN", "LIKE"):
                raise self._unexpected("IN, BETWEEN or LIKE after NOT")
        if self._is_kw("IN"):
            self._advance()
            return InList(left, self._in_list(), negated, tok.pos)
        if self._is_kw("BETWEEN"):
            self._advance()
            low = self._operand()
            if not self._is_kw("AND"):
                raise self._unexpected("AND", "write: x BETWEEN low AND high")
            self._advance()
            high = self._operand()
            return Between(left, low, high, negated, tok.pos)
        if self._is_kw("LIKE"):
            self._advance()
            if self.tok.kind != "string":
                raise self._unexpected(
                    "a 'quoted' pattern", "write: name LIKE 'A%' (% = any text, _ = one character)"
                )
            pattern = self._advance()
            return Like(left, str(pattern.value), negated, tok.pos)
        # A bare operand used as a condition.
        if isinstance(left, Column) or (isinstance(left, Literal) and isinstance(left.value, bool)):
            return left
        if isinstance(left, Literal) and left.value is None:
            return left
        raise self._unexpected("a comparison operator, IN, BETWEEN, LIKE or IS")

    def _in_list(self) -> tuple[Literal, ...]:
        self._expect_punct("(", "'(' after IN")
        values = [self._literal("a value in the IN list")]
        while self._is_punct(","):
            self._advance()
            values.append(self._literal("a value after ','"))
        if not self._is_punct(")"):
            raise self._unexpected("',' or ')'")
        self._advance()
        return tuple(values)

    def _literal(self, expected: str) -> Literal:
        operand = self._operand(expected)
        if not isinstance(operand, Literal):
            hint = None
            if operand.quoted:
                hint = f"string values take single quotes: '{operand.name}'"
            raise _error(
                self.text,
                operand.pos,
                f"expected a literal value, found column {operand.name!r}",
                hint or "IN lists hold literal values only: x IN (1, 2) or x IN ('a', 'b')",
            )
        return operand

    def _operand(self, expected: str = "a column name or a value") -> Operand:
        tok = self.tok
        if tok.kind == "ident":
            self._advance()
            return Column(str(tok.value), tok.pos)
        if tok.kind == "qident":
            self._advance()
            return Column(str(tok.value), tok.pos, quoted=True)
        if tok.kind == "number":
            self._advance()
            return Literal(tok.value, tok.pos)
        if tok.kind == "string":
            self._advance()
            return Literal(tok.value, tok.pos)
        if tok.kind == "keyword" and tok.value in ("TRUE", "FALSE", "NULL"):
            self._advance()
            value = None if tok.value == "NULL" else tok.value == "TRUE"
            return Literal(value, tok.pos)
        if self._is_punct("-"):
            self._advance()
            num = self.tok
            if num.kind != "number":
                raise self._unexpected("a number after '-'", "arithmetic is not supported")
            self._advance()
            return Literal(-cast(int | float, num.value), tok.pos)
        hint = None
        if tok.kind == "keyword":
            hint = f'{tok.text!r} is a keyword; quote a column of that name: "{tok.text}"'
        raise self._unexpected(expected, hint)


def parse_filter(text: str) -> Node:
    """Parse a filter in SQL ``WHERE`` syntax; raise :class:`SpecError` (``data.filter``)."""
    if not isinstance(text, str):
        raise SpecError("the filter must be a string", field=FIELD)
    return _Parser(text).parse()


def quote_identifier(name: str) -> str:
    """``name`` as the filter syntax needs it: bare if it can be, else "double-quoted"."""
    if _IDENT.fullmatch(name) and name.upper() not in KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _flatten(node: And | Or, kind: type[And] | type[Or]) -> list[Node]:
    """Operands of a chain of ``kind`` nodes, left to right."""
    out: list[Node] = []
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kind):
            stack.append(current.right)
            stack.append(current.left)
        else:
            out.append(current)
    return out


def filter_columns(node: Node) -> set[str]:
    """Names of the columns a parsed filter refers to."""
    names: set[str] = set()
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Column):
            names.add(current.name)
        elif isinstance(current, And | Or):
            stack += [current.left, current.right]
        elif isinstance(current, Not):
            stack.append(current.operand)
        elif isinstance(current, Compare):
            stack += [current.left, current.right]
        elif isinstance(current, InList | IsNull | Like):
            stack.append(current.operand)
        elif isinstance(current, Between):
            stack += [current.operand, current.low, current.high]
    return names
