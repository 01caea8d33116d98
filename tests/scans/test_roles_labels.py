"""The one recommendation rule, per-scan role columns, outcome wording and range labels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.data.labels import EVERYONE, subgroup_label
from fairscan.data.table import EncodedAttribute, PreparedData, RoleColumn
from fairscan.scans.roles import bind_roles, compare, outcome_text, resolve_roles
from fairscan.spec.models import ColumnsSpec

from fairscan.scans.bias import BiasScanSpec  # isort: skip
from fairscan.scans.fpr_scan import FprScanSpec  # isort: skip

FPR = frozenset({"outcome", "recommendation"})


def _fpr(**kw: object) -> FprScanSpec:
    return FprScanSpec.model_validate({"id": "s", "type": "fpr_scan", **kw})


def test_the_scan_threshold_wins_then_the_column_then_columns_threshold() -> None:
    with_column = ColumnsSpec(outcome="y", prediction="p", recommendation="r")
    roles, issues = resolve_roles(with_column, _fpr(threshold=5, threshold_rule="gt"), 0, FPR)
    assert not issues
    assert roles.decision is None and roles.threshold == 5 and roles.threshold_rule == "gt"
    assert roles.threshold_field == "scans[0].threshold"
    assert roles.names["recommendation"] == "p > 5"

    roles, _ = resolve_roles(with_column, _fpr(), 0, FPR)
    assert roles.decision == RoleColumn("r", "decision", "columns.recommendation")
    assert roles.threshold is None and roles.prediction is None

    derived = ColumnsSpec(outcome="y", prediction="p", threshold=0.5)
    roles, _ = resolve_roles(derived, _fpr(), 3, FPR)
    assert roles.threshold == 0.5 and roles.threshold_rule == "ge"  # one default rule: ge
    assert roles.prediction == RoleColumn("p", "score", "columns.prediction")
    assert roles.threshold_field == "columns.threshold"


def test_a_missing_recommendation_names_the_scan_and_the_fix() -> None:
    _, issues = resolve_roles(ColumnsSpec(outcome="y"), _fpr(), 2, FPR)
    assert [i.field for i in issues] == ["scans[2]"]
    assert "needs binary recommendations" in issues[0].message
    assert issues[0].hint is not None and "columns.threshold" in issues[0].hint


def test_scan_level_outcome_prediction_and_positive() -> None:
    columns = ColumnsSpec(outcome="y", positive=2, prediction="p")
    spec = BiasScanSpec.model_validate(
        {"id": "b", "type": "bias_scan", "outcome": "y2", "prediction": "m"}
    )
    roles, issues = resolve_roles(columns, spec, 1, frozenset({"outcome", "probability"}))
    assert not issues
    # columns.positive belongs to columns.outcome: an own outcome column starts from 1/true
    assert roles.outcome == RoleColumn("y2", "outcome", "scans[1].outcome", None)
    assert roles.prediction == RoleColumn("m", "probability", "scans[1].prediction")
    roles, _ = resolve_roles(columns, _fpr(threshold=1), 0, FPR)
    assert roles.outcome == RoleColumn("y", "outcome", "columns.outcome", 2)
    assert outcome_text(roles.names, 1) == "y = 2" and outcome_text(roles.names, 0) == "y != 2"
    assert outcome_text({"outcome": "y"}, 0) == "y = 0"


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=50),
    st.floats(-1e6, 1e6, allow_nan=False),
)
def test_the_rule_is_a_plain_comparison(values: list[float], threshold: float) -> None:
    p = np.array(values)
    assert np.array_equal(compare(p, threshold, "ge"), (p >= threshold).astype(np.int8))
    assert np.array_equal(compare(p, threshold, "gt"), (p > threshold).astype(np.int8))


def test_a_scaled_score_with_a_scaled_threshold_gives_the_same_recommendation() -> None:
    deciles = np.arange(1, 11, dtype=np.float64)
    assert np.array_equal(compare(deciles, 5.0, "ge"), compare(deciles / 10, 0.5, "ge"))


def test_bind_roles_derives_the_recommendation_from_a_per_row_threshold_column() -> None:
    columns = ColumnsSpec(outcome="y", prediction="p")
    roles, _ = resolve_roles(columns, _fpr(threshold=0.5), 0, FPR)
    p_role = roles.prediction
    assert p_role is not None and roles.outcome is not None
    data = PreparedData(
        n_rows_raw=4,
        attributes=(),
        codes=np.zeros((4, 0), np.int32),
        roles={
            roles.outcome.key: np.array([0, 1, 0, 1], np.int8),
            p_role.key: np.array([0.2, 0.5, 0.7, 0.9]),
        },
    )
    bound = bind_roles(data, roles)
    assert bound.recommendation is not None
    assert bound.recommendation.tolist() == [0, 1, 1, 1]


def _ordinal(name: str, labels: list[str], edges: list[float] | None = None) -> EncodedAttribute:
    return EncodedAttribute(
        name=name, labels=tuple(labels), edges=tuple(edges) if edges else None, ordered=True
    )


BINS = ["[4, 12)", "[12, 15)", "[15, 24)", "[24, 30)", "[30, 72]"]
DURATION = _ordinal("duration", BINS, [4, 12, 15, 24, 30, 72])


@pytest.mark.parametrize(
    ("chosen", "label"),
    [
        (BINS[1:], "duration >= 12"),
        (BINS[:2], "duration < 15"),
        (BINS[1:3], "12 <= duration < 24"),
        (BINS[2:3], "15 <= duration < 24"),
        ([BINS[0], BINS[3]], "(duration < 12 or 24 <= duration < 30)"),
    ],
)
def test_contiguous_bins_read_as_a_range(chosen: list[str], label: str) -> None:
    assert subgroup_label({"duration": chosen}, [DURATION]) == label


def test_ordered_values_missing_values_and_unordered_attributes() -> None:
    priors = _ordinal("priors_count", [str(v) for v in range(6)] + ["(missing)"])
    race = EncodedAttribute(name="race", labels=("A", "B", "C"))
    attrs = [priors, race]
    assert subgroup_label({"priors_count": ["0", "1", "2"]}, attrs) == "priors_count <= 2"
    assert subgroup_label({"priors_count": ["4", "5"]}, attrs) == "priors_count >= 4"
    assert subgroup_label({"priors_count": ["3"]}, attrs) == "priors_count = 3"
    assert (
        subgroup_label({"priors_count": ["2", "3", "(missing)"]}, attrs)
        == "(2 <= priors_count <= 3 or priors_count is missing)"
    )
    assert subgroup_label({"race": ["A", "C"]}, attrs) == "race in {A, C}"
    assert (
        subgroup_label({"race": ["B"], "priors_count": ["5"]}, attrs)
        == "race = B and priors_count = 5"
    )
    assert subgroup_label({}, attrs) == EVERYONE
    # an attribute the scan did not encode (e.g. a certify/flag group column) reads plainly
    assert subgroup_label({"sex": ["F"]}, attrs) == "sex = F"


@given(st.sets(st.integers(0, 4), min_size=1, max_size=4))
def test_a_range_label_names_exactly_the_chosen_bins(chosen: set[int]) -> None:
    """Evaluate the label's conditions on each bin's lower edge: true exactly for chosen bins."""
    label = subgroup_label({"duration": [BINS[i] for i in sorted(chosen)]}, [DURATION])
    lows = [4, 12, 15, 24, 30]
    for i, low in enumerate(lows):
        text = label.replace("duration", str(low)).replace("=", "==")
        text = text.replace("<==", "<=").replace(">==", ">=")
        assert eval(text) == (i in chosen), (label, low)
