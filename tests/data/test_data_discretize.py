"""The shared discretiser (methods.md §1.3)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fairscan.data.discretize import (
    apply_edges,
    bin_labels,
    discretize,
    explicit_edges,
    format_number,
    quantile_edges,
)
from fairscan.data.table import MISSING_LABEL


def test_default_is_five_equal_frequency_bins() -> None:
    d = discretize(np.arange(1, 101))
    assert d.n_bins == 5
    assert np.bincount(d.codes).tolist() == [20] * 5
    assert d.labels == ("[1, 21)", "[21, 41)", "[41, 61)", "[61, 81)", "[81, 100]")
    assert d.edges == (1.0, 21.0, 41.0, 61.0, 81.0, 100.0)
    assert d.codes.dtype == np.int32
    assert d.n_missing == 0


def test_quantile_edges_match_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=1001)
    edges = quantile_edges(x, 4)
    expected = np.unique(np.quantile(x, [0, 0.25, 0.5, 0.75, 1], method="higher"))
    np.testing.assert_array_equal(edges, expected)
    assert edges[0] == x.min()
    assert edges[-1] == x.max()


def test_duplicate_edges_collapse() -> None:
    x = np.array([0.0] * 50 + list(range(1, 51)))
    d = discretize(x, quantiles=5)
    assert d.edges == (0.0, 11.0, 31.0, 50.0)
    assert d.labels == ("[0, 11)", "[11, 31)", "[31, 50]")
    assert np.bincount(d.codes).tolist() == [60, 20, 20]


def test_duplicate_edges_can_collapse_to_one_bin() -> None:
    # Like pandas.qcut(duplicates="drop"): a value holding >= 80% of the rows swallows the
    # inner edges of 5 bins.
    d = discretize(np.array([0.0] * 90 + list(range(1, 11))), quantiles=5)
    assert d.edges == (0.0, 10.0)
    assert d.labels == ("[0, 10]",)


def test_last_bin_is_closed() -> None:
    d = discretize([1, 2, 3, 4], quantiles=2)
    assert d.labels[-1].endswith("]")
    assert d.codes[-1] == d.n_bins - 1  # the maximum belongs to the last bin


def test_constant_column_is_one_bin() -> None:
    d = discretize([3, 3, 3], quantiles=4)
    assert d.labels == ("[3, 3]",)
    assert d.codes.tolist() == [0, 0, 0]


def test_explicit_edges() -> None:
    d = discretize([10, 25, 30, 45, 80, 24.999], edges=[25, 45])
    assert d.edges == (-math.inf, 25.0, 45.0, math.inf)
    assert d.labels == ("< 25", "[25, 45)", ">= 45")
    assert d.codes.tolist() == [0, 1, 1, 2, 2, 0]


def test_explicit_edges_keep_empty_bins() -> None:
    d = discretize([1, 2], edges=[10, 20])
    assert d.labels == ("< 10", "[10, 20)", ">= 20")
    assert d.codes.tolist() == [0, 0]


def test_float_labels() -> None:
    d = discretize([0.5, 1.25, 2.0, 3.75], quantiles=2)
    assert d.labels == ("[0.5, 2)", "[2, 3.75]")
    assert bin_labels((-math.inf, 0.1, math.inf)) == ("< 0.1", ">= 0.1")


def test_format_number() -> None:
    assert format_number(25.0) == "25"
    assert format_number(-3.0) == "-3"
    assert format_number(0.1) == "0.1"
    assert format_number(2.5e-7) == "2.5e-07"
    assert format_number(math.inf) == "inf"
    assert format_number(1e20) == "1e+20"


def test_nulls_go_to_the_missing_category() -> None:
    d = discretize(pl.Series([1.0, None, 2.0, float("nan"), 3.0, 4.0]), quantiles=2)
    assert d.n_missing == 2
    assert d.labels[-1] == MISSING_LABEL
    assert d.labels[:-1] == ("[1, 3)", "[3, 4]")
    assert d.codes.tolist() == [0, 2, 0, 2, 1, 1]


def test_nulls_in_a_python_list_and_explicit_edges() -> None:
    d = discretize([None, 5, 50], edges=[10])
    assert d.labels == ("< 10", ">= 10", MISSING_LABEL)
    assert d.codes.tolist() == [2, 0, 1]


def test_all_missing() -> None:
    d = discretize([None, None], quantiles=3)
    assert d.edges == ()
    assert d.labels == (MISSING_LABEL,)
    assert d.codes.tolist() == [0, 0]


def test_edges_reused_on_other_data() -> None:
    d = discretize(np.arange(1, 11), quantiles=5)
    codes, n_missing = apply_edges(np.array([0.0, 1.0, 2.9, 3.0, 10.0, 11.0, np.nan]), d.edges)
    assert codes.tolist() == [0, 0, 0, 1, 4, 4, 5]  # out-of-range values go to the end bins
    assert n_missing == 1
    same, _ = apply_edges(np.arange(1, 11), d.edges)
    np.testing.assert_array_equal(same, d.codes)


@pytest.mark.parametrize(
    ("inner", "message"),
    [
        ([], "at least one"),
        ([2, 1], "strictly increasing"),
        ([1, 1], "strictly"),
        ([math.inf], "finite"),
    ],
)
def test_explicit_edges_validation(inner: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        explicit_edges(inner)


def test_quantiles_and_edges_are_exclusive() -> None:
    with pytest.raises(ValueError, match="either"):
        discretize([1, 2], quantiles=2, edges=[1])


_values = hnp.arrays(
    np.float64,
    st.integers(1, 300),
    elements=st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False), st.integers(-20, 20).map(float), st.just(np.nan)
    ),
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_values, st.integers(2, 12))
def test_quantile_bins_properties(x: np.ndarray, q: int) -> None:
    d = discretize(x, quantiles=q)
    present = ~np.isnan(x)
    assert d.n_missing == int((~present).sum())
    assert d.codes.dtype == np.int32
    if not present.any():
        assert d.labels == (MISSING_LABEL,)
        return
    edges = np.array(d.edges)
    expected = np.unique(np.quantile(x[present], np.linspace(0, 1, q + 1), method="higher"))
    if expected.size == 1:
        expected = np.repeat(expected, 2)
    np.testing.assert_array_equal(edges, expected)
    assert 1 <= d.n_bins <= q
    codes = d.codes[present]
    xs = x[present]
    # Every value lies in its bin: [lo, hi), the last bin closed.
    lo, hi = edges[codes], edges[codes + 1]
    last = codes == d.n_bins - 1
    assert np.all(xs >= lo)
    assert np.all((xs < hi) | (last & (xs <= hi)))
    # Codes are monotone in the value and every bin is non-empty.
    order = np.argsort(xs, kind="stable")
    assert np.all(np.diff(codes[order]) >= 0)
    assert set(codes.tolist()) == set(range(d.n_bins))
    assert np.all(d.codes[~present] == d.n_bins)
    assert len(d.labels) == d.n_bins + (1 if d.n_missing else 0)
