"""The shared discretiser of numeric scan attributes (methods.md §1.3).

Two ways to bin a numeric column:

* **quantiles** — ``k`` equal-frequency bins computed on the data given. The edges are the
  ``0, 1/k, …, 1`` quantiles of the non-missing values (``numpy.quantile`` with
  ``method="higher"``, so every edge is an observed value and no bin is empty), with duplicate
  edges collapsed. Bins are ``[lo, hi)`` except the last, which is closed ``[lo, hi]``; the
  outer edges are the data's minimum and maximum.
* **explicit inner edges** ``e1 < … < ek`` — bins ``(-inf, e1), [e1, e2), …, [ek, inf)``.

Either way the result carries the *full* edge list (``k + 1`` boundaries for ``k`` bins), so the
same bins can be applied to other data with :func:`apply_edges` (values outside a finite outer
edge fall into the first or last bin). Missing values (null / NaN) get the code after the last
bin, labelled :data:`~fairscan.data.table.MISSING_LABEL`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import polars as pl

from fairscan.data.table import MISSING_LABEL

DEFAULT_QUANTILES = 5

__all__ = [
    "DEFAULT_QUANTILES",
    "Discretized",
    "apply_edges",
    "bin_labels",
    "discretize",
    "explicit_edges",
    "format_number",
    "quantile_edges",
]


@dataclass(frozen=True)
class Discretized:
    """Binned values: codes ``0..k-1`` for the ``k`` bins, ``k`` for missing values."""

    codes: np.ndarray  # (n,) int32
    labels: tuple[str, ...]  # one per bin, then MISSING_LABEL if n_missing > 0
    edges: tuple[float, ...]  # full edge list, len = number of bins + 1
    n_missing: int = 0

    @property
    def n_bins(self) -> int:
        return max(len(self.edges) - 1, 0)


def format_number(value: float) -> str:
    """Shortest faithful text for an edge: ``25`` not ``25.0``, ``0.1`` not ``0.1000…``."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _as_float_array(values: np.ndarray | pl.Series | Sequence[float | None]) -> np.ndarray:
    if isinstance(values, pl.Series):
        return values.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = np.array([np.nan if v is None else v for v in arr.ravel()], dtype=np.float64)
    return arr.astype(np.float64, copy=False).ravel()


def quantile_edges(values: np.ndarray, quantiles: int = DEFAULT_QUANTILES) -> tuple[float, ...]:
    """Full edge list of ``quantiles`` equal-frequency bins of the non-NaN ``values``.

    Duplicate edges are collapsed, so fewer bins may result. A constant column gives one bin
    ``(v, v)``; no non-missing value gives ``()`` (no bins).
    """
    if quantiles < 1:
        raise ValueError("quantiles must be at least 1")
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return ()
    probs = np.linspace(0.0, 1.0, quantiles + 1)
    edges = np.unique(np.quantile(x, probs, method="higher"))
    if edges.size == 1:
        return (float(edges[0]), float(edges[0]))
    return tuple(float(e) for e in edges)


def explicit_edges(inner: Sequence[float]) -> tuple[float, ...]:
    """Full edge list ``(-inf, e1, …, ek, inf)`` for strictly increasing inner edges."""
    inner_list = [float(e) for e in inner]
    if not inner_list:
        raise ValueError("give at least one edge")
    if any(not math.isfinite(e) for e in inner_list):
        raise ValueError("edges must be finite numbers")
    if any(b <= a for a, b in pairwise(inner_list)):
        raise ValueError("edges must be strictly increasing")
    return (-math.inf, *inner_list, math.inf)


def bin_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """Labels of the bins defined by a full edge list, in code order.

    ``< 25``, ``[25, 45)``, ``>= 45`` for open outer edges; ``[18, 25)`` … ``[45, 96]`` for
    finite ones (the last bin is closed).
    """
    edges = [float(e) for e in edges]
    k = len(edges) - 1
    labels: list[str] = []
    for i in range(k):
        lo, hi = edges[i], edges[i + 1]
        if lo == -math.inf and hi == math.inf:
            labels.append("all values")
        elif lo == -math.inf:
            labels.append(f"< {format_number(hi)}")
        elif hi == math.inf:
            labels.append(f">= {format_number(lo)}")
        elif i == k - 1:
            labels.append(f"[{format_number(lo)}, {format_number(hi)}]")
        else:
            labels.append(f"[{format_number(lo)}, {format_number(hi)})")
    return tuple(labels)


def apply_edges(
    values: np.ndarray | pl.Series | Sequence[float | None], edges: Sequence[float]
) -> tuple[np.ndarray, int]:
    """Bin ``values`` with a full edge list; return ``(codes int32, n_missing)``.

    Bin ``i`` holds ``edges[i] <= x < edges[i+1]`` (the last bin also holds its upper edge;
    values beyond a finite outer edge are put in the nearest end bin). Missing values (null,
    NaN) get code ``len(edges) - 1``, one past the last bin.
    """
    x = _as_float_array(values)
    n_bins = max(len(edges) - 1, 0)
    inner = np.asarray(edges[1:-1], dtype=np.float64)
    codes = np.searchsorted(inner, x, side="right").astype(np.int32, copy=False)
    missing = np.isnan(x)
    n_missing = int(missing.sum())
    if n_missing:
        codes[missing] = n_bins
    return codes, n_missing


def discretize(
    values: np.ndarray | pl.Series | Sequence[float | None],
    *,
    quantiles: int | None = None,
    edges: Sequence[float] | None = None,
) -> Discretized:
    """Bin a numeric column: ``quantiles`` equal-frequency bins, or explicit inner ``edges``.

    With neither given, :data:`DEFAULT_QUANTILES` bins are used. Missing values (null / NaN)
    get the last code, labelled :data:`MISSING_LABEL`.
    """
    if quantiles is not None and edges is not None:
        raise ValueError("give either quantiles or edges, not both")
    x = _as_float_array(values)
    full = (
        explicit_edges(edges)
        if edges is not None
        else quantile_edges(x, DEFAULT_QUANTILES if quantiles is None else quantiles)
    )
    codes, n_missing = apply_edges(x, full)
    labels = bin_labels(full)
    if n_missing:
        labels = (*labels, MISSING_LABEL)
    return Discretized(codes=codes, labels=labels, edges=full, n_missing=n_missing)
