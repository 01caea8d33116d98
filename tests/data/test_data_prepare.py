"""prepare_data: filtering, validation and encoding of the scan table."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pytest

from fairscan.data.prepare import prepare_data
from fairscan.data.table import MISSING_LABEL, PreparedData, RoleColumn
from fairscan.errors import DataError, Issue, SpecError
from fairscan.spec.models import DiscretizeSpec

Y = RoleColumn("y", "outcome", "columns.outcome")
P = RoleColumn("p", "probability", "columns.prediction")
REC = RoleColumn("rec", "decision", "columns.recommendation")


def small_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "y": [0, 1, 0, 1, 1, 0, 1, 0],
            "p": [0.1, 0.8, 0.5, 0.9, 0.6, 0.2, 0.4, 0.05],
            "rec": [0, 1, 1, 1, 1, 0, 0, 0],
            "race": ["B", "A", None, "A", "C", "B", "A", "C"],
            "sex": ["M", "F", "F", "M", "M", "F", "F", "M"],
            "age": [19, 25, 33, 47, 52, 61, 70, 85],
            "priors": [0, 1, 2, 0, 1, 2, 3, 0],
            "score": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5],
            "n_kids": [0.0, 1.0, 2.0, 0.0, 1.0, None, 2.0, 3.0],
            "member": [True, False, True, True, False, None, True, False],
            "grade": [
                "grade 10",
                "grade 9",
                "grade 9",
                "grade 10",
                "grade 11",
                "grade 9",
                "grade 9",
                "grade 10",
            ],
            "const": ["x"] * 8,
        }
    )


def run(frame: pl.DataFrame | None = None, **overrides: Any) -> PreparedData:
    kwargs: dict[str, Any] = {
        "roles": [Y, P, REC],
        "attributes": ["race", "sex"],
        "discretize": {},
        "max_categories": 50,
        "filter": None,
    }
    kwargs.update(overrides)
    return prepare_data(small_frame() if frame is None else frame, **kwargs)


def issues_of(frame: pl.DataFrame | None = None, **overrides: Any) -> list[Issue]:
    with pytest.raises(DataError) as info:
        run(frame, **overrides)
    for issue in info.value.issues:
        assert issue.field, issue
        assert issue.hint, issue
    return info.value.issues


def only_issue(frame: pl.DataFrame | None = None, **overrides: Any) -> Issue:
    issues = issues_of(frame, **overrides)
    assert len(issues) == 1, issues
    return issues[0]


# --------------------------------------------------------------------------------------------
# Happy path
# --------------------------------------------------------------------------------------------


def test_happy_path() -> None:
    data = run(
        attributes=["race", "sex", "age", "priors", "score", "n_kids", "member", "grade"],
        discretize={"age": DiscretizeSpec(edges=[25, 45]), "score": DiscretizeSpec(quantiles=2)},
    )
    assert data.n_rows == data.n_rows_raw == 8
    assert data.attribute_names == (
        "race",
        "sex",
        "age",
        "priors",
        "score",
        "n_kids",
        "member",
        "grade",
    )
    by_name = {a.name: a for a in data.attributes}
    assert by_name["race"].labels == ("A", "B", "C", MISSING_LABEL)
    assert by_name["race"].n_missing == 1
    assert by_name["sex"].labels == ("F", "M")
    assert by_name["age"].labels == ("< 25", "[25, 45)", ">= 45")
    assert by_name["age"].edges == (-np.inf, 25.0, 45.0, np.inf)
    assert by_name["priors"].labels == ("0", "1", "2", "3")
    assert by_name["priors"].edges is None
    assert by_name["score"].labels == ("[0.5, 4.5)", "[4.5, 7.5]")
    assert by_name["n_kids"].labels == ("0", "1", "2", "3", MISSING_LABEL)
    assert by_name["member"].labels == ("false", "true", MISSING_LABEL)
    assert by_name["grade"].labels == ("grade 9", "grade 10", "grade 11")  # natural order

    codes = data.codes
    assert codes.shape == (8, 8)
    assert codes.dtype == np.int32
    assert codes.flags.c_contiguous
    assert codes[:, 0].tolist() == [1, 0, 3, 0, 2, 1, 0, 2]
    assert codes[:, 2].tolist() == [0, 1, 1, 2, 2, 2, 2, 2]
    assert codes[:, 4].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert codes[:, 5].tolist() == [0, 1, 2, 0, 1, 4, 2, 3]
    assert codes[:, 6].tolist() == [1, 0, 1, 1, 0, 2, 1, 0]
    assert codes[:, 7].tolist() == [1, 0, 0, 1, 2, 0, 0, 1]
    for j, attr in enumerate(data.attributes):
        assert codes[:, j].max() < attr.cardinality

    assert set(data.roles) == {Y.key, P.key, REC.key}
    assert data.role(Y).dtype == np.int8
    assert data.role(Y).tolist() == [0, 1, 0, 1, 1, 0, 1, 0]
    assert data.role(P).dtype == np.float64
    assert data.role(P).tolist() == small_frame()["p"].to_list()
    assert data.role(REC).dtype == np.int8
    assert data.role(REC).tolist() == [0, 1, 1, 1, 1, 0, 0, 0]
    assert "attribute 'race': 1 null value scanned as '(missing)'" in data.warnings
    assert any("'n_kids'" in w for w in data.warnings)


def test_filter_is_applied_before_everything() -> None:
    data = run(filter="race IS NOT NULL AND age >= 25")
    assert data.n_rows_raw == 8
    assert data.n_rows == 6
    assert data.attributes[0].labels == ("A", "B", "C")
    assert data.attributes[0].n_missing == 0
    assert data.warnings == ()


def test_filter_can_remove_invalid_rows() -> None:
    frame = small_frame().with_columns(pl.Series("y", [0, 1, 0, 1, 1, 0, 1, 7]))
    assert run(frame, filter="y IN (0, 1)").n_rows == 7


@pytest.mark.parametrize(
    "values",
    [
        [False, True, False, True],
        [0, 1, 0, 1],
        [0.0, 1.0, 0.0, 1.0],
        ["0", "1", "0", "1"],
        ["false", "TRUE", "False", " true "],
    ],
)
def test_binary_encodings(values: list[Any]) -> None:
    frame = pl.DataFrame({"y": values, "rec": values, "g": ["a", "a", "b", "b"]})
    data = run(
        frame,
        roles=[Y, REC],
        attributes=["g"],
    )
    assert data.role(Y).tolist() == [0, 1, 0, 1]
    assert data.role(REC).tolist() == [0, 1, 0, 1]
    assert P.key not in data.roles


def test_unsigned_and_small_int_outcome() -> None:
    frame = pl.DataFrame({"y": pl.Series([0, 1, 1], dtype=pl.UInt8), "g": ["a", "b", "a"]})
    data = run(frame, roles=[Y], attributes=["g"])
    assert data.role(Y).tolist() == [0, 1, 1]


def test_unrequested_columns_are_not_checked() -> None:
    frame = small_frame().with_columns(pl.Series("p", [0.1, 0.8, 0.5, 0.9, 0.6, 0.2, 0.4, 2.0]))
    data = run(frame, roles=[Y])
    assert set(data.roles) == {Y.key}


def test_single_valued_attribute_is_a_warning() -> None:
    data = run(attributes=["const", "sex"])
    assert data.attributes[0].labels == ("x",)
    assert any("'const'" in w and "single value" in w for w in data.warnings)


def test_enum_keeps_its_order_and_categorical_is_sorted() -> None:
    frame = pl.DataFrame(
        {
            "y": [0, 1, 0, 1],
            "e": pl.Series(["lo", "hi", "mid", "lo"], dtype=pl.Enum(["lo", "mid", "hi"])),
            "c": pl.Series(["b", "a", "c", "a"], dtype=pl.Categorical),
        }
    )
    data = run(frame, roles=[Y], attributes=["e", "c"])
    assert data.attributes[0].labels == ("lo", "mid", "hi")
    assert data.codes[:, 0].tolist() == [0, 2, 1, 0]
    assert data.attributes[1].labels == ("a", "b", "c")
    assert data.codes[:, 1].tolist() == [1, 0, 2, 0]


def test_integer_attribute_with_nulls_and_negative_values() -> None:
    frame = pl.DataFrame({"y": [0, 1, 0, 1], "i": [-5, None, 10, -5]})
    data = run(frame, roles=[Y], attributes=["i"])
    assert data.attributes[0].labels == ("-5", "10", MISSING_LABEL)
    assert data.codes[:, 0].tolist() == [0, 2, 1, 0]


def test_discretize_integer_column_with_nulls() -> None:
    frame = pl.DataFrame({"y": [0, 1, 0, 1, 0], "age": [20, None, 40, 60, 80]})
    data = run(
        frame,
        roles=[Y],
        attributes=["age"],
        discretize={"age": DiscretizeSpec(quantiles=2)},
    )
    attr = data.attributes[0]
    assert attr.labels == ("[20, 60)", "[60, 80]", MISSING_LABEL)
    assert attr.n_missing == 1
    assert data.codes[:, 0].tolist() == [0, 2, 0, 1, 1]


def test_date_attribute_is_categorical() -> None:
    frame = pl.DataFrame(
        {"y": [0, 1, 0], "d": [dt.date(2021, 1, 1), dt.date(2020, 5, 1), dt.date(2021, 1, 1)]}
    )
    data = run(frame, roles=[Y], attributes=["d"])
    assert data.attributes[0].labels == ("2020-05-01", "2021-01-01")
    assert data.codes[:, 0].tolist() == [1, 0, 1]


def test_all_null_attribute() -> None:
    frame = pl.DataFrame({"y": [0, 1], "n": [None, None]})
    data = run(frame, roles=[Y], attributes=["n"])
    assert data.attributes[0].labels == (MISSING_LABEL,)
    assert data.attributes[0].n_missing == 2


# --------------------------------------------------------------------------------------------
# Error paths
# --------------------------------------------------------------------------------------------


def test_missing_columns_all_reported_with_suggestions() -> None:
    issues = issues_of(
        roles=[
            RoleColumn("yy", "outcome", "columns.outcome"),
            RoleColumn("pred", "probability", "columns.prediction"),
            RoleColumn("recc", "decision", "columns.recommendation"),
        ],
        attributes=["rase", "sex", "zzz"],
    )
    found = {(i.field, i.column): i for i in issues}
    assert set(found) == {
        ("columns.outcome", "yy"),
        ("columns.prediction", "pred"),
        ("columns.recommendation", "recc"),
        ("attributes[0]", "rase"),
        ("attributes[2]", "zzz"),
    }
    assert "not in the data" in found["attributes[0]", "rase"].message
    assert "did you mean 'race'" in (found["attributes[0]", "rase"].hint or "")
    assert "did you mean 'rec'?" in (found["columns.recommendation", "recc"].hint or "")
    assert "columns are:" in (found["attributes[2]", "zzz"].hint or "")


def test_missing_column_and_bad_filter_reported_together() -> None:
    issues = issues_of(attributes=["rase"], filter="agee > 3")
    assert [i.field for i in issues] == ["attributes[0]", "data.filter"]
    assert "unknown column 'agee'" in issues[1].message


def test_bad_filter_alone_is_a_spec_error() -> None:
    with pytest.raises(SpecError) as info:
        run(filter="age >= 18 AND )")
    assert info.value.issues[0].field == "data.filter"
    assert "unexpected token ')'" in info.value.issues[0].message


def test_filter_type_mismatch_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="cannot compare column 'race'"):
        run(filter="race > 3")


def test_filter_keeps_zero_rows() -> None:
    issue = only_issue(filter="race = 'a'")
    assert issue.field == "data.filter"
    assert "filter keeps 0 of 8 rows" in issue.message


def test_empty_frame() -> None:
    with pytest.raises(DataError, match="no rows"):
        run(small_frame().head(0))


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        ([0, 1, 2, 3, 1, 0, 1, 0], "2, 3"),
        ([0.0, 1.0, 0.5, 1.0, 1.0, 0.0, 1.0, 0.0], "0.5"),
        (["0", "1", "yes", "no", "1", "0", "1", "0"], "'no', 'yes'"),
        ([0, 1, 2, 3, 4, 5, 6, 7], "2, 3, 4, 5, 6, … (6 distinct)"),
    ],
)
def test_outcome_not_binary(values: list[Any], shown: str) -> None:
    frame = small_frame().with_columns(pl.Series("y", values))
    issue = only_issue(frame)
    assert issue.field == "columns.outcome"
    assert issue.column == "y"
    assert "must be binary" in issue.message
    assert shown in issue.message


def test_outcome_wrong_type() -> None:
    frame = small_frame().with_columns(pl.Series("y", [[0]] * 8))
    issue = only_issue(frame)
    assert issue.field == "columns.outcome"
    assert "nested values" in issue.message  # a list column (issue 16)


def test_outcome_nulls() -> None:
    frame = small_frame().with_columns(pl.Series("y", [0, None, 0, 1, None, 0, 1, 0]))
    issue = only_issue(frame, filter="age > 0")
    assert issue.field == "columns.outcome"
    assert issue.column == "y"
    assert "2 missing values" in issue.message
    assert "data rows 2, 5" in issue.message
    assert 'data.filter: "(age > 0) AND y IS NOT NULL"' in (issue.hint or "")


def test_null_rows_numbered_in_the_file_not_after_the_filter() -> None:
    frame = small_frame().with_columns(pl.Series("y", [0, 1, 0, 1, 1, 0, None, 0]))
    issue = only_issue(frame, filter="age > 30")
    assert "data row 7" in issue.message


def test_many_nulls_are_elided() -> None:
    frame = small_frame().with_columns(pl.Series("rec", [None] * 7 + [1]))
    issue = only_issue(frame)
    assert issue.field == "columns.recommendation"
    assert "7 missing values (data rows 1, 2, 3, 4, 5, …)" in issue.message


def test_nan_outcome_counts_as_missing() -> None:
    frame = small_frame().with_columns(pl.Series("y", [0.0, 1.0, float("nan"), 1, 1, 0, 1, 0]))
    issue = only_issue(frame)
    assert "1 missing value" in issue.message


@pytest.mark.parametrize("value", [0, 1])
def test_single_class_outcome(value: int) -> None:
    frame = small_frame().with_columns(pl.lit(value).alias("y"))
    issue = only_issue(frame)
    assert issue.field == "columns.outcome"
    assert f"outcome 'y' is {value} in all 8 rows; scans need both classes" in issue.message


def test_single_class_after_filter_mentions_filter() -> None:
    issue = only_issue(filter="y = 1")
    assert "is 1 in all 4 rows" in issue.message
    assert "data.filter keeps 4 of 8 rows" in issue.message


def test_prediction_out_of_range() -> None:
    frame = small_frame().with_columns(
        pl.Series("p", [0.1, 1.2, 0.5, -0.3, 0.6, 0.2, float("inf"), 0.05])
    )
    issue = only_issue(frame)
    assert issue.field == "columns.prediction"
    assert issue.column == "p"
    assert "3 values lie outside" in issue.message
    assert "min -0.3, max inf" in issue.message


def test_prediction_nulls_and_nan() -> None:
    frame = small_frame().with_columns(
        pl.Series("p", [0.1, None, 0.5, float("nan"), 0.6, 0.2, 0.4, 0.05])
    )
    issue = only_issue(frame)
    assert issue.field == "columns.prediction"
    assert "2 missing values" in issue.message
    assert "data rows 2, 4" in issue.message
    assert "p IS NOT NULL" in (issue.hint or "")


@pytest.mark.parametrize(
    ("values", "phrase"),
    [
        (["0.1", "x", "0.5", "0.9", "0.6", "0.2", "0.4", "y"], "non-numeric values: 'x', 'y'"),
        ([True] * 8, "columns.recommendation"),
    ],
)
def test_prediction_wrong_type(values: list[Any], phrase: str) -> None:
    frame = small_frame().with_columns(pl.Series("p", values))
    issue = only_issue(frame)
    assert issue.field == "columns.prediction"
    assert "must hold numbers in [0, 1]" in issue.message
    assert phrase in issue.message + (issue.hint or "")


def test_recommendation_not_binary() -> None:
    frame = small_frame().with_columns(pl.Series("rec", [0, 1, 1, 1, 1, 0, 0, 2]))
    issue = only_issue(frame)
    assert issue.field == "columns.recommendation"
    assert issue.column == "rec"
    assert "must be binary" in issue.message


def test_continuous_float_attribute_needs_discretize() -> None:
    issue = only_issue(attributes=["score"])
    assert issue.field is not None and issue.field.startswith("attributes[")
    assert issue.column == "score"
    assert "continuous" in issue.message
    assert "discretize: {score: {quantiles: 5}}" in (issue.hint or "")


def test_float_attribute_with_many_integral_values_needs_discretize() -> None:
    frame = small_frame().with_columns(pl.Series("score", [float(i) for i in range(8)]))
    frame = pl.concat([frame] * 2).with_columns(pl.Series("score", [float(i) for i in range(16)]))
    issue = only_issue(frame, attributes=["score"])
    assert "discretize" in (issue.hint or "")


def test_too_many_categories_integer() -> None:
    issue = only_issue(attributes=["age"], max_categories=5)
    assert issue.field is not None and issue.field.startswith("attributes[")
    assert issue.column == "age"
    assert "8 distinct values, more than max_categories (5)" in issue.message
    assert "discretize: {age: {quantiles: 5}}" in (issue.hint or "")
    assert "max_categories" in (issue.hint or "")


def test_too_many_categories_string() -> None:
    frame = small_frame().with_columns(pl.Series("race", list("ABCDEFGH")))
    issue = only_issue(frame, max_categories=4)
    assert issue.column == "race"
    assert "more than max_categories (4)" in issue.message
    assert "group" in (issue.hint or "")
    assert "discretize" not in (issue.hint or "")


def test_too_many_bins() -> None:
    issue = only_issue(
        attributes=["age"], discretize={"age": DiscretizeSpec(quantiles=8)}, max_categories=3
    )
    assert issue.field == "discretize.age"
    assert "more than max_categories (3)" in issue.message


def test_discretize_non_numeric_column() -> None:
    issue = only_issue(discretize={"race": DiscretizeSpec(quantiles=3)})
    assert issue.field == "discretize.race"
    assert issue.column == "race"
    assert "numeric" in issue.message


def test_unsupported_attribute_type() -> None:
    frame = small_frame().with_columns(pl.Series("race", [[1]] * 8))
    issue = only_issue(frame)
    assert issue.column == "race"
    assert "cannot be scanned" in issue.message


def test_all_problems_collected_in_one_error() -> None:
    frame = small_frame().with_columns(
        pl.Series("y", [0, 1, 2, 1, 1, 0, 1, 0]),
        pl.Series("p", [0.1, 0.8, 0.5, 0.9, 0.6, 0.2, 0.4, 9.0]),
    )
    issues = issues_of(
        frame,
        attributes=["race", "score", "nope"],
        discretize={"race": DiscretizeSpec(quantiles=2)},
    )
    fields = sorted(i.field or "" for i in issues)
    assert fields == [
        "attributes[1]",
        "attributes[2]",
        "columns.outcome",
        "columns.prediction",
        "discretize.race",
    ]


def test_never_raises_anything_but_fairscan_errors_on_junk() -> None:
    frame = pl.DataFrame(
        {
            "y": [None, None],
            "p": ["a", None],
            "rec": [[1], [2]],
            "race": [{"a": 1}, {"a": 2}],
            "sex": [b"x", b"y"],
        }
    )
    issues = issues_of(frame)
    assert {i.field for i in issues if not (i.field or "").startswith("attributes[")} == {
        "columns.outcome",
        "columns.prediction",
        "columns.recommendation",
    }
    assert any((i.field or "").startswith("attributes[") for i in issues)


def test_discretize_field_for_names_with_spaces() -> None:
    frame = small_frame().rename({"race": "race group"})
    issue = only_issue(
        frame,
        attributes=["race group"],
        discretize={"race group": DiscretizeSpec(quantiles=3)},
    )
    assert issue.field == 'discretize["race group"]'
