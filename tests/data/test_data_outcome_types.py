"""prepare_data for the outcome types of bias_scan (continuous, count, ordinal, nominal) and the
non-negative expectations of the Poisson score: values read right, every mismatch a DataError
that names the spec field, the column and the offending rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from fairscan.data.prepare import prepare_data
from fairscan.data.table import Label, PreparedData, RoleColumn, RoleKind
from fairscan.errors import DataError, Issue

FIELD = "scans[0].outcome"


def _run(values: list[Any], request: RoleColumn) -> PreparedData:
    frame = pl.DataFrame(
        {"y": values, "g": ["a", "b"] * (len(values) // 2) + ["a"] * (len(values) % 2)}
    )
    return prepare_data(
        frame, roles=[request], attributes=["g"], discretize={}, max_categories=50, filter=None
    )


def _request(kind: RoleKind, levels: tuple[Label, ...] | None = None) -> RoleColumn:
    return RoleColumn("y", kind, FIELD, levels=levels)


def _only_issue(values: list[Any], request: RoleColumn) -> Issue:
    with pytest.raises(DataError) as info:
        _run(values, request)
    issues = info.value.issues
    assert len(issues) == 1, [i.render() for i in issues]
    issue = issues[0]
    assert issue.field == FIELD and issue.column == "y" and issue.hint
    return issue


@pytest.mark.parametrize(
    ("kind", "values", "expected"),
    [
        ("continuous", [1.5, -2.0, 3.25, 0.0], [1.5, -2.0, 3.25, 0.0]),
        ("continuous", [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0]),
        ("count", [0, 3, 1, 7], [0.0, 3.0, 1.0, 7.0]),
        ("count", [0.0, 3.0, 1.0, 7.0], [0.0, 3.0, 1.0, 7.0]),
        ("ordinal", [0, 2, 1, 2], [0.0, 2.0, 1.0, 2.0]),
        ("mean", [0.0, 0.5, 2.25, 1.0], [0.0, 0.5, 2.25, 1.0]),
    ],
)
def test_numeric_outcome_types_are_read_as_floats(kind, values, expected) -> None:
    request = _request(kind)
    data = _run(values, request)
    assert data.role(request).dtype == np.float64
    assert data.role(request).tolist() == expected


def test_ordinal_labels_are_coded_by_their_levels() -> None:
    request = _request("ordinal", levels=("low", "mid", "high"))
    data = _run(["mid", "high", "low", " high"], request)
    assert data.role(request).tolist() == [1.0, 2.0, 0.0, 2.0]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["A", "B", "C", "A"], ["A", "B", "C", "A"]),
        ([1, 2, 3, 1], ["1", "2", "3", "1"]),
        ([1.0, 2.0, 3.0, 1.0], ["1", "2", "3", "1"]),  # integral floats read as integers
        ([True, False, True, True], ["true", "false", "true", "true"]),
    ],
)
def test_nominal_outcomes_are_class_labels(values, expected) -> None:
    request = _request("nominal")
    assert _run(values, request).role(request).tolist() == expected


@pytest.mark.parametrize(
    ("kind", "values", "words"),
    [
        ("count", [0, -1, 2, 3], ("counts, non-negative integers", "-1", "data row 2")),
        ("count", [0.0, 1.5, 2.0, 3.0], ("counts, non-negative integers", "1.5")),
        ("count", ["a", "b", "c", "d"], ("has type String", "outcome_type count")),
        ("ordinal", [0.0, 1.0, 2.5, 3.0], ("ordinal codes", "2.5")),
        ("continuous", [1.0, float("nan"), 2.0, 3.0], ("1 missing value", "null or NaN")),
        ("continuous", [1.0, None, 2.0, 3.0], ("1 missing value",)),
        ("continuous", [1.0, float("inf"), 2.0, 3.0], ("1 infinite value",)),
        ("continuous", [True, False, True, False], ("has type Boolean", "real numbers")),
        ("mean", [0.5, -0.1, 1.0, 2.0], ("expected counts, non-negative numbers", "-0.1")),
        ("nominal", ["A", "A", "A", "A"], ("a single class", "two classes")),
        ("nominal", ["A", None, "B", "A"], ("1 missing value",)),
    ],
)
def test_mismatches_are_clear_data_errors(kind, values, words) -> None:
    issue = _only_issue(values, _request(kind))
    for word in words:
        assert word in issue.message, issue.render()


def test_ordinal_values_outside_levels_are_listed() -> None:
    issue = _only_issue(["low", "mid", "top", "low"], _request("ordinal", levels=("low", "mid")))
    assert "not in `levels` (low, mid)" in issue.message and "top" in issue.message


def test_binary_outcome_with_three_values_is_still_an_error() -> None:
    issue = _only_issue([0, 1, 2, 1], RoleColumn("y", "outcome", FIELD))
    assert "must be binary" in issue.message


def test_levels_are_part_of_the_request_key() -> None:
    a = _request("ordinal", levels=("a", "b"))
    b = _request("ordinal", levels=("b", "a"))
    assert a.key != b.key and a.key != _request("ordinal").key
