"""prepare_data: role columns (outcome, decision, probability, score), positive labels,
request de-duplication and the ``ordered`` flag of attributes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.data.load import read_table
from fairscan.data.prepare import prepare_data
from fairscan.data.table import Label, PreparedData, RoleColumn, RoleKind
from fairscan.errors import DataError, Issue
from fairscan.spec.models import DiscretizeSpec


def german_like() -> pl.DataFrame:
    """A German-credit-like table: ``class`` coded 1 (good) / 2 (bad)."""
    return pl.DataFrame(
        {
            "class": [1, 2, 1, 1, 2, 1, 2, 1],
            "score": [1, 10, 3, 5, 7, 2, 9, 4],
            "g": ["a", "b", "a", "b", "a", "b", "a", "b"],
        }
    )


def run(frame: pl.DataFrame, roles: list[RoleColumn], **overrides: Any) -> PreparedData:
    kwargs: dict[str, Any] = {
        "roles": roles,
        "attributes": ["g"],
        "discretize": {},
        "max_categories": 50,
        "filter": None,
    }
    kwargs.update(overrides)
    return prepare_data(frame, **kwargs)


def only_issue(frame: pl.DataFrame, roles: list[RoleColumn], **overrides: Any) -> Issue:
    with pytest.raises(DataError) as info:
        run(frame, roles, **overrides)
    issues = info.value.issues
    assert len(issues) == 1, issues
    assert issues[0].field and issues[0].hint, issues[0]
    return issues[0]


def outcome(column: str = "class", positive: Label | None = None) -> RoleColumn:
    return RoleColumn(column, "outcome", "columns.outcome", positive)


# --------------------------------------------------------------------------------------------
# Positive labels
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("positive", "expected"),
    [(2, [0, 1, 0, 0, 1, 0, 1, 0]), (1, [1, 0, 1, 1, 0, 1, 0, 1]), ("2", [0, 1, 0, 0, 1, 0, 1, 0])],
)
def test_positive_label_of_a_one_two_coding(positive: Label, expected: list[int]) -> None:
    request = outcome(positive=positive)
    data = run(german_like(), [request])
    assert data.role(request).dtype == np.int8
    assert data.role(request).tolist() == expected


@pytest.mark.shared_data
def test_german_credit_class_with_positive_label(shared_data: Path) -> None:
    frame = read_table(shared_data / "german" / "german.csv")
    bad, good = outcome(positive=2), outcome(positive=1)
    data = run(frame, [bad, good], attributes=["personal_status"])
    assert int(data.role(bad).sum()) == 300
    assert int(data.role(good).sum()) == 700
    np.testing.assert_array_equal(data.role(bad), 1 - data.role(good))


def test_without_positive_a_one_two_coding_is_not_binary() -> None:
    issue = only_issue(german_like(), [outcome()])
    assert issue.field == "columns.outcome"
    assert "must be binary" in issue.message
    assert "positive" in (issue.hint or "")


@pytest.mark.parametrize(
    ("values", "positive", "expected"),
    [
        (["good", "bad", "good", "bad"], "bad", [0, 1, 0, 1]),
        (["good", "bad", "good", "bad"], "good", [1, 0, 1, 0]),
        ([" yes", "no ", "yes", "no"], "yes", [1, 0, 1, 0]),
        (["true", "false", "true", "false"], True, [1, 0, 1, 0]),
        (["1", "2", "1", "2"], 2, [0, 1, 0, 1]),
        ([True, False, True, False], False, [0, 1, 0, 1]),
        ([True, False, True, False], "true", [1, 0, 1, 0]),
        ([0.5, 1.5, 0.5, 1.5], 0.5, [1, 0, 1, 0]),
        ([0, 1, 0, 1], 0, [1, 0, 1, 0]),
    ],
)
def test_positive_label_matches_by_column_type(
    values: list[Any], positive: Label, expected: list[int]
) -> None:
    frame = pl.DataFrame({"y": values, "g": ["a", "b", "a", "b"]})
    request = outcome("y", positive)
    assert run(frame, [request]).role(request).tolist() == expected


def test_positive_label_on_categorical_column() -> None:
    frame = pl.DataFrame(
        {"y": pl.Series(["no", "yes", "no"], dtype=pl.Categorical), "g": ["a", "b", "a"]}
    )
    request = outcome("y", "yes")
    assert run(frame, [request]).role(request).tolist() == [0, 1, 0]


def test_positive_label_absent() -> None:
    issue = only_issue(german_like(), [outcome(positive=3)])
    assert issue.field == "columns.outcome"
    assert issue.column == "class"
    assert issue.message == (
        "positive label 3 does not occur in outcome column 'class'; its values are: 1, 2"
    )
    assert "set positive to the value read as 1" in (issue.hint or "")


def test_positive_label_absent_after_filter() -> None:
    issue = only_issue(german_like(), [outcome(positive=2)], filter="class = 1")
    assert "does not occur" in issue.message
    assert "data.filter keeps 5 of 8 rows" in issue.message


def test_positive_string_label_absent_lists_values() -> None:
    frame = pl.DataFrame({"y": ["good", "bad", "good"], "g": ["a", "b", "a"]})
    issue = only_issue(frame, [outcome("y", "Bad")])
    assert issue.message == (
        "positive label 'Bad' does not occur in outcome column 'y'; its values are: 'bad', 'good'"
    )


def test_positive_label_not_a_number_for_numeric_column() -> None:
    issue = only_issue(german_like(), [outcome(positive="bad")])
    assert issue.field == "columns.outcome"
    assert issue.column == "class"
    assert issue.message == (
        "positive label 'bad' is not a number, but outcome column 'class' is numeric"
    )
    assert issue.hint == "set positive to one of the column's values: 1, 2"


def test_positive_label_for_boolean_column_must_be_a_boolean() -> None:
    frame = pl.DataFrame({"y": [True, False], "g": ["a", "b"]})
    issue = only_issue(frame, [outcome("y", "yes")])
    assert "is not true or false, but outcome column 'y' is boolean" in issue.message


def test_more_than_two_values_with_positive_label() -> None:
    frame = german_like().with_columns(pl.Series("class", [1, 2, 3, 1, 2, 1, 2, 4]))
    issue = only_issue(frame, [outcome(positive=2)])
    assert issue.field == "columns.outcome"
    assert issue.column == "class"
    assert issue.message == (
        "outcome column 'class' has 4 distinct values (1, 2, 3, 4); with a positive label (2) "
        "it must hold exactly two"
    )
    assert "data.filter" in (issue.hint or "")
    assert "recode" in (issue.hint or "")
    # the filter fixes it
    data = run(frame, [outcome(positive=2)], filter="class IN (1, 2)")
    assert data.role(outcome(positive=2)).tolist() == [0, 1, 0, 1, 0, 1]


def test_nulls_with_positive_label() -> None:
    frame = german_like().with_columns(pl.Series("class", [1, 2, None, 1, 2, 1, 2, 1]))
    issue = only_issue(frame, [outcome(positive=2)])
    assert issue.field == "columns.outcome"
    assert "outcome column 'class' has 1 missing value (data row 3)" in issue.message
    assert "class IS NOT NULL" in (issue.hint or "")


def test_single_class_with_positive_label_names_the_label() -> None:
    frame = german_like().with_columns(pl.lit(2).alias("class"))
    issue = only_issue(frame, [outcome(positive=2)])
    assert issue.message == "outcome 'class' is 2 in all 8 rows; scans need both classes"


def test_decision_with_positive_label_may_hold_one_class() -> None:
    frame = german_like().with_columns(pl.lit("approve").alias("d"))
    request = RoleColumn("d", "decision", "columns.recommendation", "approve")
    assert run(frame, [request]).role(request).tolist() == [1] * 8


def test_scan_level_field_names_the_messages() -> None:
    request = RoleColumn("class", "outcome", "scans[3].outcome", 5)
    issue = only_issue(german_like(), [request])
    assert issue.field == "scans[3].outcome"


two_labels = st.lists(st.integers(-5, 5), min_size=2, max_size=2, unique=True)


@given(
    labels=two_labels,
    picks=st.lists(st.booleans(), min_size=2, max_size=40),
    first_positive=st.booleans(),
    as_text=st.booleans(),
)
def test_positive_indicator_equals_numpy_comparison(
    labels: list[int], picks: list[bool], first_positive: bool, as_text: bool
) -> None:
    picks = [True, False, *picks]  # both labels present
    values = np.where(np.array(picks), labels[0], labels[1])
    positive: Label = labels[0] if first_positive else labels[1]
    column = pl.Series("y", values)
    if as_text:
        column = column.cast(pl.String)
        positive = str(positive)
    frame = pl.DataFrame({"y": column, "g": ["a"] * len(values)})
    request = RoleColumn("y", "decision", "columns.recommendation", positive)
    got = run(frame, [request]).role(request)
    expected = (values == int(positive)).astype(np.int8)
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------------------------
# Probabilities and scores
# --------------------------------------------------------------------------------------------


def test_score_accepts_any_finite_real_number() -> None:
    request = RoleColumn("score", "score", "columns.prediction")
    data = run(german_like(), [request])
    assert data.role(request).dtype == np.float64
    assert data.role(request).tolist() == [1.0, 10.0, 3.0, 5.0, 7.0, 2.0, 9.0, 4.0]


def test_same_column_as_score_fails_as_probability() -> None:
    request = RoleColumn("score", "probability", "scans[2].prediction")
    issue = only_issue(german_like(), [request])
    assert issue.field == "scans[2].prediction"
    assert issue.column == "score"
    assert "must hold probabilities in [0, 1]; 7 values lie outside (min 1, max 10)" in (
        issue.message
    )


def test_probability_rejects_one_and_a_half() -> None:
    frame = pl.DataFrame({"p": [0.1, 1.5, 0.3], "g": ["a", "b", "a"]})
    issue = only_issue(frame, [RoleColumn("p", "probability", "scans[2].prediction")])
    assert issue.field == "scans[2].prediction"
    assert issue.message == (
        "prediction column 'p' must hold probabilities in [0, 1]; 1 value lies outside "
        "(min 0.1, max 1.5)"
    )


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (float("inf"), "score column 's' has 1 infinite value"),
        (float("-inf"), "score column 's' has 1 infinite value"),
        (float("nan"), "prediction column 's' has 1 missing value (null or NaN; data row 2)"),
        (None, "prediction column 's' has 1 missing value (null or NaN; data row 2)"),
    ],
)
def test_score_rejects_infinite_and_missing(value: float | None, phrase: str) -> None:
    frame = pl.DataFrame({"s": [3.0, value, -2.5], "g": ["a", "b", "a"]})
    issue = only_issue(frame, [RoleColumn("s", "score", "columns.prediction")])
    assert issue.field == "columns.prediction"
    assert issue.message == phrase


def test_score_must_be_numeric() -> None:
    frame = pl.DataFrame({"s": ["high", "low", "3"], "g": ["a", "b", "a"]})
    issue = only_issue(frame, [RoleColumn("s", "score", "columns.prediction")])
    assert issue.message == (
        "prediction column 's' has type String; it must hold numbers; non-numeric values: "
        "'high', 'low'"
    )
    assert issue.hint == "point columns.prediction at a column of real-valued scores"


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


def test_same_column_as_decision_and_outcome() -> None:
    frame = pl.DataFrame({"y": [0, 1, 1, 0], "g": ["a", "b", "a", "b"]})
    as_outcome = RoleColumn("y", "outcome", "columns.outcome")
    as_decision = RoleColumn("y", "decision", "columns.recommendation")
    data = run(frame, [as_outcome, as_decision])
    assert set(data.roles) == {as_outcome.key, as_decision.key}
    assert data.role(as_outcome).tolist() == data.role(as_decision).tolist() == [0, 1, 1, 0]


def test_same_column_single_class_fails_only_as_outcome() -> None:
    frame = pl.DataFrame({"y": [1, 1, 1], "g": ["a", "b", "a"]})
    as_decision = RoleColumn("y", "decision", "columns.recommendation")
    assert run(frame, [as_decision]).role(as_decision).tolist() == [1, 1, 1]
    issue = only_issue(frame, [RoleColumn("y", "outcome", "columns.outcome"), as_decision])
    assert issue.field == "columns.outcome"


def test_requests_with_the_same_key_are_loaded_once() -> None:
    frame = pl.DataFrame({"p": [0.1, None, 0.3], "g": ["a", "b", "a"]})
    first = RoleColumn("p", "probability", "columns.prediction")
    second = RoleColumn("p", "probability", "scans[1].prediction")
    assert first.key == second.key
    issue = only_issue(frame, [first, second, first])
    assert issue.field == "columns.prediction"  # the first request names it
    frame = frame.with_columns(pl.Series("p", [0.1, 0.2, 0.3]))
    data = run(frame, [first, second])
    assert list(data.roles) == [first.key]
    assert data.role(second) is data.role(first)


def test_missing_role_column_reported_once_per_key() -> None:
    first = RoleColumn("pp", "probability", "columns.prediction")
    with pytest.raises(DataError) as info:
        run(german_like(), [first, first, RoleColumn("pp", "score", "scans[0].prediction")])
    fields = [i.field for i in info.value.issues]
    assert fields == ["columns.prediction", "scans[0].prediction"]
    assert all("not in the data" in i.message for i in info.value.issues)


def test_no_outcome_request() -> None:
    data = run(german_like(), [])
    assert data.roles == {}
    assert data.n_rows == 8
    score = RoleColumn("score", "score", "columns.prediction")
    assert set(run(german_like(), [score]).roles) == {score.key}


def test_unknown_kind_is_a_programming_error() -> None:
    kind: Any = "label"
    bad_kind: RoleKind = kind
    with pytest.raises(ValueError, match="unknown role kind"):
        run(german_like(), [RoleColumn("class", bad_kind, "columns.outcome")])


# --------------------------------------------------------------------------------------------
# Ordered attributes
# --------------------------------------------------------------------------------------------


def test_ordered_flags() -> None:
    frame = pl.DataFrame(
        {
            "y": [0, 1, 0, 1],
            "age": [20, 40, 60, 80],
            "priors": [0, 1, 2, 0],
            "kids": [0.0, 1.0, 2.0, None],
            "day": [dt.date(2020, 1, d) for d in (1, 2, 3, 1)],
            "race": ["A", "B", "A", "C"],
            "member": [True, False, True, None],
            "level": pl.Series(["lo", "hi", "lo", "mid"], dtype=pl.Enum(["lo", "mid", "hi"])),
            "region": pl.Series(["n", "s", "n", "s"], dtype=pl.Categorical),
            "none": [None, None, None, None],
        }
    )
    names = ["age", "priors", "kids", "day", "race", "member", "level", "region", "none"]
    data = run(
        frame,
        [RoleColumn("y", "outcome", "columns.outcome")],
        attributes=names,
        discretize={"age": DiscretizeSpec(quantiles=2)},
    )
    ordered = {a.name: a.ordered for a in data.attributes}
    assert ordered == {
        "age": True,
        "priors": True,
        "kids": True,
        "day": True,
        "race": False,
        "member": False,
        "level": False,
        "region": False,
        "none": False,
    }
