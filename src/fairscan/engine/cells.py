"""Compression of rows into weighted cells (identical attribute profile and expectation)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cells:
    """Rows grouped by (attribute codes, expectation).

    ``row_cell[i]`` is the cell of input row ``i``; observed sums can be recomputed for any
    other observed vector (e.g. a null replicate) with ``np.bincount(row_cell, observed)``.
    """

    codes: np.ndarray  # (M, m) int32
    weight: np.ndarray  # (M,) float64: rows in the cell
    observed: np.ndarray  # (M,) float64: sum of the observed indicator
    expected: np.ndarray  # (M,) float64: the cells' common expectation
    row_cell: np.ndarray  # (n,) int64
    cardinality: np.ndarray  # (m,) int32: values per attribute (codes are 0..card-1)
    constant_expectation: bool

    @property
    def n_cells(self) -> int:
        return int(self.weight.shape[0])


def _profile_keys(codes: np.ndarray, cardinality: np.ndarray) -> np.ndarray:
    """One int64 key per row (mixed radix), or row ranks when the radix product overflows."""
    n, m = codes.shape
    if m == 0:
        return np.zeros(n, np.int64)
    if float(np.prod(cardinality.astype(np.float64))) < 2.0**62:
        key = np.zeros(n, np.int64)
        for j in range(m):
            key = key * np.int64(cardinality[j]) + codes[:, j].astype(np.int64)
        return key
    _, inverse = np.unique(codes, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def compress(
    codes: np.ndarray,
    observed: np.ndarray,
    expected: np.ndarray,
    cardinality: np.ndarray,
    weight: np.ndarray | None = None,
) -> Cells:
    """Group rows by profile and expectation; sums are exact (integers stored as floats).

    ``weight`` (default 1 per row) lets already-compressed cells be regrouped.
    """
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    n = codes.shape[0]
    key = _profile_keys(codes, cardinality)
    constant = bool(n > 0 and np.all(expected == expected[0]))
    if constant:
        uniq, first, row_cell = np.unique(key, return_index=True, return_inverse=True)
    else:
        order = np.lexsort((expected, key))
        k_sorted = key[order]
        e_sorted = expected[order]
        new = np.ones(n, bool)
        new[1:] = (k_sorted[1:] != k_sorted[:-1]) | (e_sorted[1:] != e_sorted[:-1])
        cell_sorted = np.cumsum(new) - 1
        row_cell = np.empty(n, np.int64)
        row_cell[order] = cell_sorted
        first = order[new]
        uniq = first
    row_cell = row_cell.reshape(-1).astype(np.int64)
    n_cells = len(uniq)
    weight = np.bincount(row_cell, weights=weight, minlength=n_cells).astype(np.float64)
    obs = np.bincount(row_cell, weights=observed, minlength=n_cells)
    return Cells(
        codes=np.ascontiguousarray(codes[first]),
        weight=weight,
        observed=obs,
        expected=np.ascontiguousarray(expected[first]),
        row_cell=row_cell,
        cardinality=np.asarray(cardinality, dtype=np.int32),
        constant_expectation=constant,
    )
