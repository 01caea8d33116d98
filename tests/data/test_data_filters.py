"""The SQL-WHERE filter parser and its polars compiler."""

from __future__ import annotations

import builtins
import datetime as dt
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairscan.data.filter_compile import filter_expression
from fairscan.data.filters import (
    And,
    Between,
    Column,
    Compare,
    InList,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    filter_columns,
    parse_filter,
    quote_identifier,
)
from fairscan.errors import SpecError

FRAME = pl.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6],
        "age": [17, 18, 40, None, 65, 30],
        "race": ["A", "B", "C-d", None, "it's", "A"],
        "my col": [1.0, 2.0, 3.0, 4.0, None, 2.5],
        "flag": [True, False, True, None, False, True],
        "score": [-1.5, 0.0, 2.5e3, 1.0, -0.25, 7.0],
        "day": [dt.date(2020, 1, d) for d in (1, 2, 3, 4, 5, 6)],
        "cat": pl.Series(["x", "y", "x", "z", None, "y"], dtype=pl.Categorical),
        'we"ird': [1, 2, 3, 4, 5, 6],
    }
)


def ids(text: str, frame: pl.DataFrame = FRAME) -> list[int]:
    return frame.filter(filter_expression(text, frame.schema))["id"].to_list()


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def test_precedence_and_binds_tighter_than_or() -> None:
    node = parse_filter("a = 1 OR b = 2 AND c = 3")
    assert isinstance(node, Or)
    assert isinstance(node.left, Compare)
    assert isinstance(node.right, And)


def test_precedence_not_binds_tighter_than_and() -> None:
    node = parse_filter("NOT a = 1 AND b = 2")
    assert isinstance(node, And)
    assert isinstance(node.left, Not)
    assert isinstance(node.left.operand, Compare)


def test_parentheses_override_precedence() -> None:
    node = parse_filter("(a = 1 OR b = 2) AND c = 3")
    assert isinstance(node, And)
    assert isinstance(node.left, Or)


def test_left_associative_chains() -> None:
    node = parse_filter("a OR b OR c")
    assert isinstance(node, Or)
    assert isinstance(node.left, Or)
    assert node.right == Column("c", 10)


def test_literals() -> None:
    node = parse_filter("x IN (1, -2, 3.5, -0.25, 1e3, .5, 'it''s', TRUE, false)")
    assert isinstance(node, InList)
    assert [v.value for v in node.values] == [1, -2, 3.5, -0.25, 1000.0, 0.5, "it's", True, False]
    assert isinstance(node.values[0].value, int)


def test_keywords_are_case_insensitive() -> None:
    node = parse_filter("x is NoT nUlL aNd y NOT in (1) Or z between 1 AND 2 or w like 'a'")
    assert isinstance(node, Or)
    assert isinstance(node.right, Like)


def test_quoted_identifiers() -> None:
    node = parse_filter('"my col" >= 2 AND "we""ird" = 1')
    assert isinstance(node, And)
    assert node.left == Compare(">=", Column("my col", 0, quoted=True), Literal(2, 12), 9)
    assert isinstance(node.right, Compare)
    assert node.right.left == Column('we"ird', 18, quoted=True)


def test_node_kinds() -> None:
    assert isinstance(parse_filter("x BETWEEN 1 AND 2"), Between)
    assert parse_filter("x NOT BETWEEN 1 AND 2").negated  # type: ignore[union-attr]
    assert isinstance(parse_filter("x IS NULL"), IsNull)
    assert parse_filter("x IS NOT NULL").negated  # type: ignore[union-attr]
    assert parse_filter("x NOT LIKE 'a%'") == Like(Column("x", 0), "a%", True, 2)
    assert parse_filter("18 <= x") == Compare("<=", Literal(18, 0), Column("x", 6), 3)


@pytest.mark.parametrize(
    ("op", "normal"),
    [
        ("=", "="),
        ("==", "="),
        ("!=", "!="),
        ("<>", "!="),
        ("<", "<"),
        ("<=", "<="),
        (">", ">"),
        (">=", ">="),
    ],
)
def test_comparison_operators(op: str, normal: str) -> None:
    node = parse_filter(f"x {op} 1")
    assert isinstance(node, Compare)
    assert node.op == normal


def test_filter_columns() -> None:
    node = parse_filter("a = 1 AND (b IN (1) OR NOT c BETWEEN d AND 3) OR e LIKE 'x' OR f IS NULL")
    assert filter_columns(node) == {"a", "b", "c", "d", "e", "f"}


def test_quote_identifier() -> None:
    assert quote_identifier("age") == "age"
    assert quote_identifier("my col") == '"my col"'
    assert quote_identifier("and") == '"and"'
    assert quote_identifier('a"b') == '"a""b"'


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age >= 18", [2, 3, 5, 6]),
        ("age >= 18 AND race IN ('A', 'B')", [2, 6]),
        ("age < 18 OR race = 'A' AND age > 20", [1, 6]),
        ("(age < 18 OR race = 'A') AND age > 20", [6]),
        ("NOT age < 18", [2, 3, 5, 6]),  # null age stays out (SQL three-valued logic)
        ("NOT (age < 18 OR age > 60)", [2, 3, 6]),
        ("race NOT IN ('A', 'B')", [3, 5]),
        ("age IN (17, 65.0)", [1, 5]),
        ("age BETWEEN 18 AND 40", [2, 3, 6]),
        ("age NOT BETWEEN 18 AND 40", [1, 5]),
        ("age IS NULL", [4]),
        ("race IS NOT NULL AND age IS NOT NULL", [1, 2, 3, 5, 6]),
        ("race LIKE 'C%'", [3]),
        ("race LIKE '_'", [1, 2, 6]),
        ("race LIKE 'C_d'", [3]),
        ("race NOT LIKE '%''%'", [1, 2, 3, 6]),
        ("race = 'it''s'", [5]),
        ('"my col" > 2', [3, 4, 6]),
        ('"we""ird" = 3', [3]),
        ("flag", [1, 3, 6]),
        ("NOT flag", [2, 5]),
        ("flag = TRUE", [1, 3, 6]),
        ("flag != false", [1, 3, 6]),
        ("score < -1", [1]),
        ("score >= 2.5e3", [3]),
        ("score = -0.25", [5]),
        ("id <> 3 AND id <= 4", [1, 2, 4]),
        ("18 <= age", [2, 3, 5, 6]),
        ("age = id", []),
        ("day >= '2020-01-04'", [4, 5, 6]),
        ("day BETWEEN '2020-01-02' AND '2020-01-03'", [2, 3]),
        ("cat = 'x'", [1, 3]),
        ("cat IN ('y', 'z')", [2, 4, 6]),
        ("cat LIKE 'x%'", [1, 3]),
        ("TRUE", [1, 2, 3, 4, 5, 6]),
        ("FALSE OR id = 2", [2]),
    ],
)
def test_evaluation(text: str, expected: list[int] | None) -> None:
    if expected is None:
        with pytest.raises(SpecError):
            ids(text)
        return
    assert ids(text) == expected


def test_like_escapes_regex_metacharacters() -> None:
    frame = pl.DataFrame({"id": [1, 2, 3, 4], "s": ["a.c", "abc", "a+c", "(x)"]})
    assert ids("s LIKE 'a.c'", frame) == [1]
    assert ids("s LIKE 'a+%'", frame) == [3]
    assert ids("s LIKE '(%)'", frame) == [4]


def test_like_matches_across_newlines() -> None:
    frame = pl.DataFrame({"id": [1, 2], "s": ["a\nb", "ab"]})
    assert ids("s LIKE 'a%b'", frame) == [1, 2]


def test_never_calls_eval_or_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec must never be called")

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(builtins, "exec", boom)
    assert ids("age >= 18 AND race IN ('A', 'B') OR race LIKE 'C%'") == [2, 3, 6]
    for text in ("__import__('os')", "os.system('rm -rf /')", "exec('x')", "1; DROP TABLE t"):
        with pytest.raises(SpecError):
            filter_expression(text, FRAME.schema)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _error(text: str, schema: dict[str, pl.DataType] | None = None) -> SpecError:
    with pytest.raises(SpecError) as info:
        filter_expression(text, FRAME.schema if schema is None else schema)
    err = info.value
    assert len(err.issues) == 1
    assert err.issues[0].field == "data.filter"
    return err


@pytest.mark.parametrize(
    ("text", "phrase", "pos"),
    [
        ("age >= 18 AND )", "unexpected token ')'", 14),
        ("__import__('os')", "unexpected token '('", 10),
        ("os.system('x')", "unexpected character '.'", 2),
        ("1; DROP TABLE t", "unexpected character ';'", 1),
        ("age >", "unexpected end of filter", 5),
        ("age >= 18 AND", "unexpected end of filter", 13),
        ("(age > 1", "unclosed '('", 0),
        ("age > 1)", "unexpected token ')'", 7),
        ("age > 1 race = 'A'", "unexpected token 'race'", 8),
        ("race = 'A", "unterminated string", 7),
        ('"my col = 1', "unterminated quoted column name", 0),
        ('"" = 1', "empty quoted column name", 0),
        ("", "empty filter", 0),
        ("   ", "empty filter", 0),
        ("age IS 3", "unexpected token '3'", 7),
        ("age NOT 3", "unexpected token '3'", 8),
        ("age IN 3", "unexpected token '3'", 7),
        ("age IN ()", "unexpected token ')'", 8),
        ("age IN (1, 2", "unexpected end of filter", 12),
        ("age IN (1 2)", "unexpected token '2'", 10),
        ("age IN (race)", "expected a literal value, found column 'race'", 8),
        ("age BETWEEN 1 OR 3", "unexpected token 'OR'", 14),
        ("race LIKE 3", "unexpected token '3'", 10),
        ("age > -race", "unexpected token 'race'", 7),
        ("age & 3", "unexpected character '&'", 4),
        ("age || 3", "unexpected character '|'", 4),
        ("x = `y`", "unexpected character '`'", 4),
        ("18abc = 3", "malformed number", 0),
        ("1.2.3 = x", "malformed number", 0),
        ("'x'", "unexpected end of filter", 3),
        ("3 AND age > 1", "unexpected token 'AND'", 2),
        ("age > 1 AND AND", "unexpected token 'AND'", 12),
        ("NOT", "unexpected end of filter", 3),
        ("age + 1 > 3", "unexpected character '+'", 4),
    ],
)
def test_syntax_errors(text: str, phrase: str, pos: int) -> None:
    err = _error(text)
    message = err.issues[0].message
    assert phrase in message
    assert f"at position {pos + 1}" in message
    shown = re.sub(r"\s", " ", text)
    assert f"\n  {shown}\n  {' ' * pos}^" in message


def test_syntax_error_example_from_the_docs() -> None:
    err = _error("age >= 18 AND )")
    assert err.issues[0].message == (
        "unexpected token ')' at position 15; expected a column name or a value\n"
        "  age >= 18 AND )\n"
        "                ^"
    )


def test_function_call_hint() -> None:
    err = _error("__import__('os')")
    assert "function calls are not supported" in (err.issues[0].hint or "")


def test_parse_filter_alone_checks_syntax_only() -> None:
    with pytest.raises(SpecError, match="unexpected token"):
        parse_filter("a = = 1")
    parse_filter("nonexistent = 1")  # columns are checked at compile time


def test_unknown_column_did_you_mean() -> None:
    err = _error("agee >= 18")
    assert "unknown column 'agee'" in err.issues[0].message
    assert "did you mean 'age'?" in (err.issues[0].hint or "")


def test_unknown_column_is_case_sensitive_but_suggests() -> None:
    err = _error("RACE = 'A'")
    assert "unknown column 'RACE'" in err.issues[0].message
    assert "'race'" in (err.issues[0].hint or "")


def test_unknown_column_lists_columns_when_nothing_is_close() -> None:
    err = _error("zzzzzz = 1")
    assert "columns are: 'id', 'age'" in (err.issues[0].hint or "")


def test_double_quoted_string_value_hint() -> None:
    err = _error('race = "African-American"')
    assert "unknown column 'African-American'" in err.issues[0].message
    assert "single quotes: 'African-American'" in (err.issues[0].hint or "")


@pytest.mark.parametrize(
    ("text", "phrase", "hint"),
    [
        ("race > 3", "cannot compare column 'race' (String) with a number 3", "quote the value"),
        ("age = 'x'", "cannot compare column 'age' (Int64) with a string 'x'", "without quotes"),
        ("flag = 1", "cannot compare column 'flag' (Boolean) with a number 1", "TRUE or FALSE"),
        ("age IN (1, 'a')", "IN list", "without quotes"),
        ("age BETWEEN 'a' AND 3", "BETWEEN", "without quotes"),
        ("age = race", "cannot compare column 'age' (Int64) with column 'race' (String)", None),
        ("age LIKE 'x%'", "LIKE: column 'age' (Int64) is not a string", "LIKE matches text"),
        ("race", "is not boolean", "race = ..."),
        ("day > 'yesterday'", "cannot read 'yesterday' as a date", "YYYY-MM-DD"),
        ("day > 3", "cannot compare column 'day' (Date) with a number 3", None),
        ("age = NULL", "comparison with NULL", "IS NULL"),
        ("age <> NULL", "comparison with NULL", "IS NOT NULL"),
        ("age IN (1, NULL)", "NULL in an IN list", "IS NULL"),
        ("age BETWEEN NULL AND 3", "BETWEEN bounds cannot be NULL", None),
    ],
)
def test_type_errors(text: str, phrase: str, hint: str | None) -> None:
    err = _error(text)
    assert phrase in err.issues[0].message
    assert "^" in err.issues[0].message
    if hint is not None:
        assert hint in (err.issues[0].hint or "")


def test_uncomparable_column_type() -> None:
    schema = {"l": pl.List(pl.Int64)}
    err = _error("l = 1", schema)
    assert "cannot compare" in err.issues[0].message


def test_keyword_as_column_name_hint() -> None:
    err = _error("in = 3")
    assert 'quote a column of that name: "in"' in (err.issues[0].hint or "")


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


_FUZZ_PIECES = [
    *"ab ()'\"=<>!-.,0123_%",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "LIKE",
    "BETWEEN",
    " age ",
    " race ",
    "'A'",
    " 18 ",
]


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FUZZ_PIECES), max_size=25).map("".join))
def test_fuzz_only_spec_errors(text: str) -> None:
    try:
        expr = filter_expression(text, FRAME.schema)
    except SpecError as err:
        assert err.issues[0].field == "data.filter"
        assert "at position" in err.issues[0].message
        return
    FRAME.filter(expr)  # anything that compiles also runs


# A random boolean formula over non-null boolean columns, rendered with varied keyword case
# and no redundant parentheses; the oracle is Python's own and/or/not, which has the same
# precedence (NOT > AND > OR).
_BOOL_FRAME = pl.DataFrame({f"b{i}": [(r >> i) & 1 == 1 for r in range(16)] for i in range(4)})

_leaf = st.sampled_from([f"b{i}" for i in range(4)])


def _join(keyword: str) -> st.SearchStrategy[str]:
    return st.sampled_from([keyword, keyword.lower(), keyword.capitalize()])


_formula = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.tuples(inner, _join("AND"), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(inner, _join("OR"), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(_join("NOT"), inner).map(lambda t: f"{t[0]} {t[1]}"),
        inner.map(lambda s: f"({s})"),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_formula)
def test_precedence_matches_python(text: str) -> None:
    got = _BOOL_FRAME.select(filter_expression(text, _BOOL_FRAME.schema).alias("r"))["r"]
    py = re.sub(r"\b(AND|OR|NOT)\b", lambda m: m.group().lower(), text, flags=re.IGNORECASE)
    code = compile(py, "<formula>", "eval")
    expected = [
        bool(builtins.eval(code, {"__builtins__": {}}, row))  # trusted, generated text
        for row in _BOOL_FRAME.iter_rows(named=True)
    ]
    assert got.to_list() == expected


# Three-valued logic against a row-by-row oracle, for comparisons on a nullable int column.
_TV_FRAME = pl.DataFrame({"x": [None, -2, 0, 1, 3, 7], "s": ["a", None, "ab", "b", "ba", "a"]})


def _oracle_cmp(x: int | None, op: str, v: int) -> bool | None:
    if x is None:
        return None
    return {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


_ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
_vals = st.integers(-3, 8)

_tv_atom = st.tuples(_ops, _vals).map(
    lambda t: (f"x {t[0]} {t[1]}", lambda row, t=t: _oracle_cmp(row["x"], t[0], t[1]))
)
_tv_formula = st.recursive(
    _tv_atom,
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(
            lambda t: (f"({t[0][0]} AND {t[1][0]})", lambda r, t=t: _and(t[0][1](r), t[1][1](r)))
        ),
        st.tuples(inner, inner).map(
            lambda t: (f"({t[0][0]} OR {t[1][0]})", lambda r, t=t: _or(t[0][1](r), t[1][1](r)))
        ),
        inner.map(lambda a: (f"NOT {a[0]}", lambda r, a=a: _not(a[1](r)))),
    ),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(_tv_formula)
def test_three_valued_logic(case: tuple[str, object]) -> None:
    text, oracle = case
    kept = _TV_FRAME.with_row_index("i").filter(filter_expression(text, _TV_FRAME.schema))
    expected = [i for i, row in enumerate(_TV_FRAME.iter_rows(named=True)) if oracle(row) is True]  # type: ignore[operator]
    assert kept["i"].to_list() == expected


def test_deep_nesting_is_a_clear_error() -> None:
    err = _error("(" * 500 + "age > 1" + ")" * 500)
    assert "nested more than 100 levels" in err.issues[0].message
    err = _error("NOT " * 500 + "flag")
    assert "nested more than 100 levels" in err.issues[0].message


def test_long_chains_compile() -> None:
    text = " OR ".join(f"id = {i}" for i in range(3000))
    assert ids(text) == [1, 2, 3, 4, 5, 6]
    text = " AND ".join("age > 0" for _ in range(3000))
    assert ids(text) == [1, 2, 3, 5, 6]
    values = ", ".join(str(i) for i in range(3000))
    assert ids(f"id IN ({values})") == [1, 2, 3, 4, 5, 6]
