"""The YAML loader: positions, duplicate keys, timestamps, top level, syntax errors."""

from __future__ import annotations

import pytest

from fairscan.errors import SpecError
from fairscan.spec.loader import format_path, load_spec_text


def load(text: str):
    return load_spec_text(text, "t.yaml")


def spec_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load(text)
    return info.value


# -- positions -------------------------------------------------------------------------------


NESTED = """\
# comment line
top: 1
data:
  path: compas.csv
  inner:
    deep: x
list:
  - a
  - b: 2
    c: [3, 4]
flow: {id: fpr, type: fpr_scan}
seq_of_flow:
  - {id: tpr, type: tpr_scan}
"""


def test_positions_of_nested_mapping_keys_and_values() -> None:
    data, pos = load(NESTED)
    assert data["data"]["inner"]["deep"] == "x"
    assert pos.locate(()) == (2, 1)  # the top-level mapping starts after the comment
    assert pos.locate(("top",)) == (2, 6)  # a scalar: at the value
    assert pos.locate_key(("top",)) == (2, 1)
    assert pos.locate(("data", "path")) == (4, 9)
    assert pos.locate_key(("data", "path")) == (4, 3)
    assert pos.locate(("data",)) == (3, 1)  # a block mapping: at its key
    assert pos.locate_value(("data",)) == (4, 3)  # its value starts on the next line
    assert pos.locate(("data", "inner", "deep")) == (6, 11)


def test_positions_of_sequence_items() -> None:
    _, pos = load(NESTED)
    assert pos.locate(("list",)) == (7, 1)
    assert pos.locate(("list", 0)) == (8, 5)
    assert pos.locate(("list", 1)) == (9, 5)  # a mapping item: where the mapping starts
    assert pos.locate(("list", 1, "b")) == (9, 8)
    assert pos.locate(("list", 1, "c", 1)) == (10, 12)


def test_positions_in_flow_style() -> None:
    _, pos = load(NESTED)
    assert pos.locate(("flow",)) == (11, 1)
    assert pos.locate_value(("flow",)) == (11, 7)
    assert pos.locate(("flow", "id")) == (11, 12)
    assert pos.locate_key(("flow", "type")) == (11, 17)
    assert pos.locate(("flow", "type")) == (11, 23)
    assert pos.locate(("seq_of_flow", 0)) == (13, 5)
    assert pos.locate(("seq_of_flow", 0, "type")) == (13, 21)


def test_locate_falls_back_to_the_deepest_existing_prefix() -> None:
    _, pos = load(NESTED)
    assert pos.locate(("data", "missing")) == (3, 1)  # a missing key points at its parent
    assert pos.locate(("data", "inner", "missing", "more")) == (5, 3)
    assert pos.locate(("list", 7)) == (7, 1)  # an index out of range: the list
    assert pos.locate(("seq_of_flow", 0, "missing")) == (13, 5)  # the item
    assert pos.locate(("nope",)) == (2, 1)  # the top level
    assert not pos.exists(("data", "missing"))
    assert pos.exists(("list", 1, "c", 0))


def test_plain_scalar_source_is_kept() -> None:
    _, pos = load('a: no\nb: "no"\nc: [yes, 1.50]\n')
    assert pos.source_of(("a",)) == "no"
    assert pos.source_of(("b",)) is None  # quoted
    assert pos.source_of(("c", 0)) == "yes"
    assert pos.source_of(("c", 1)) == "1.50"


def test_recursive_alias_is_an_error_not_a_hang() -> None:
    with pytest.raises(SpecError) as info:
        load("a: &x [1, *x]\n")
    (issue,) = info.value.issues
    assert issue.message.startswith("recursive YAML alias")
    assert (issue.line, issue.col) == (1, 4)
    assert issue.hint


def test_merge_keys_are_not_duplicates() -> None:
    data, pos = load("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n")
    assert data["m"] == {"x": 3, "y": 2}
    assert pos.locate(("m", "x")) == (4, 6)
    assert pos.locate(("m", "y")) == (1, 20)  # where the merged value is written


# -- YAML 1.1 traps --------------------------------------------------------------------------


def test_timestamps_stay_strings() -> None:
    data, _ = load("d: 2024-01-31\nt: 2024-01-31T10:20:30Z\nu: 2001-12-14 21:59:43.10 -5\n")
    assert data == {
        "d": "2024-01-31",
        "t": "2024-01-31T10:20:30Z",
        "u": "2001-12-14 21:59:43.10 -5",
    }


def test_booleans_are_still_yaml_1_1_booleans() -> None:
    # Validation (not the loader) reports them where a string is expected.
    data, _ = load("a: no\nb: On\nc: 'no'\n")
    assert data == {"a": False, "b": True, "c": "no"}


def test_duplicate_keys_are_errors_with_both_lines() -> None:
    error = spec_error("alpha: 1\nbeta:\n  x: 1\n  y: 2\n  x: 3\nalpha: 2\n")
    assert [(i.field, i.line, i.col) for i in error.issues] == [("beta.x", 5, 3), ("alpha", 6, 1)]
    assert "duplicate key 'x' (first on line 3, again on line 5)" in error.issues[0].message
    assert "first on line 1, again on line 6" in error.issues[1].message
    assert all(i.file == "t.yaml" for i in error.issues)


def test_duplicate_keys_in_flow_mappings_inside_lists() -> None:
    error = spec_error("scans:\n  - {id: a, type: fpr_scan, id: b}\n")
    (issue,) = error.issues
    assert (issue.field, issue.line, issue.col) == ("scans[0].id", 2, 29)


# -- document shape and syntax ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n- b\n", "got a list"),
        ("just text\n", "got the value 'just text'"),
        ("", "empty"),
        ("# only a comment\n", "empty"),
    ],
)
def test_top_level_must_be_a_mapping(text: str, expected: str) -> None:
    (issue,) = spec_error(text).issues
    assert expected in issue.message
    assert issue.line == 1
    assert issue.hint and "version: 1" in issue.hint


def test_syntax_error_has_the_line_and_column_of_the_yaml_mark() -> None:
    (issue,) = spec_error("a: 1\nb: [1, 2\nc: 3\n").issues
    assert issue.message.startswith("invalid YAML: ")
    assert (issue.file, issue.line) == ("t.yaml", 3)
    assert issue.col is not None

    (issue,) = spec_error("a: 1\nb: c: d\n").issues
    assert "mapping values are not allowed here" in issue.message
    assert (issue.line, issue.col) == (2, 5)


def test_tab_indentation_gets_a_hint() -> None:
    (issue,) = spec_error("a:\n\tb: 1\n").issues
    assert issue.line == 2
    assert issue.hint == "YAML indentation must use spaces, not tabs"


def test_python_tags_are_refused() -> None:
    (issue,) = spec_error("a: !!python/object/apply:os.system [echo hi]\n").issues
    assert issue.line == 1
    assert "constructor" in issue.message


def test_control_characters_are_located() -> None:
    (issue,) = spec_error("a: 1\nb: x\x07y\n").issues
    assert (issue.line, issue.col) == (2, 5)
    assert "#x0007" in issue.message


def test_a_second_document_is_an_error() -> None:
    (issue,) = spec_error("a: 1\n---\nb: 2\n").issues
    assert issue.line == 2
    assert "second YAML document" in issue.message


def test_byte_order_mark_is_ignored() -> None:
    data, pos = load("\ufeffa: 1\n")
    assert data == {"a": 1}
    assert pos.locate(("a",)) == (1, 4)


def test_format_path() -> None:
    assert format_path(("scans", 1, "penalty")) == "scans[1].penalty"
    assert format_path(("columns", "outcome")) == "columns.outcome"
    assert format_path(("discretize", "age group")) == 'discretize["age group"]'
    assert format_path(("discretize", False)) == "discretize[false]"
    assert format_path(()) == ""
