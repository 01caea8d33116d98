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
    # fractional sample weights (columns.weight) of the input rows: the Bernoulli null draws
    # are then per row, each draw times its row's weight; None: whole-number weights, drawn
    # per unit of weight (Binomial(weight, expected) per cell, as for repeated rows)
    row_weight: np.ndarray | None = None
    # Gaussian score with fractional sample weights: the variance of each cell's null sum,
    # sum_i w_i^2 / sigma_i^2 (each row's N(0, sigma_i^2) draw times its weight, over the
    # cell's precision-weighted rows); None: the cell weight (per unit of weight)
    draw_variance: np.ndarray | None = None

    @property
    def n_cells(self) -> int:
        return int(self.weight.shape[0])


def fractional(weights: np.ndarray | None) -> bool:
    """Sample weights that are not all whole numbers (then no draw can be per unit of weight)."""
    return weights is not None and not bool(np.all(weights == np.round(weights)))


def per_row_probabilities(cells: Cells) -> bool:
    """Whether every cell is one row and the expectations are not all equal (per-row
    probabilities): such cells draw one uniform per row (:func:`bernoulli_sums`), as the
    profile summary of :mod:`fairscan.engine.expectation_cells` does, so that the
    representation a calibration scan searches in never changes its null draws."""
    return (
        cells.row_weight is None
        and not cells.constant_expectation
        and cells.n_cells > 0
        and float(cells.weight.max()) == 1.0
    )


def bernoulli_sums(cells: Cells, rng: np.random.Generator) -> np.ndarray:
    """One null replicate of the cells' observed sums under Bernoulli(expected) rows: per unit
    of weight (``Binomial(weight, expected)`` per cell), with per-row probabilities one uniform
    per row below its probability, or with fractional row weights per row, each row's draw
    times its weight."""
    if per_row_probabilities(cells):
        return (rng.random(cells.n_cells) < cells.expected).astype(np.float64)
    if cells.row_weight is None:
        return rng.binomial(cells.weight.astype(np.int64), cells.expected).astype(np.float64)
    drawn = rng.random(cells.row_cell.shape[0]) < cells.expected[cells.row_cell]
    return np.bincount(
        cells.row_cell, weights=drawn * cells.row_weight, minlength=cells.n_cells
    ).astype(np.float64)


def restrict(cells: Cells, inside: np.ndarray, expected: np.ndarray | None = None) -> Cells:
    """The cells ``inside`` (a boolean mask over cells), with ``expected`` instead of theirs if
    given; rows (and their fractional weights) kept only where the null draws need them."""
    row_cell = np.zeros(0, np.int64)
    row_weight = None
    if cells.row_weight is not None:
        keep = inside[cells.row_cell]
        row_cell = (np.cumsum(inside) - 1)[cells.row_cell[keep]].astype(np.int64)
        row_weight = cells.row_weight[keep]
    return Cells(
        codes=cells.codes[inside],
        weight=cells.weight[inside],
        observed=cells.observed[inside],
        expected=cells.expected[inside] if expected is None else expected,
        row_cell=row_cell,
        cardinality=cells.cardinality,
        constant_expectation=cells.constant_expectation and expected is None,
        row_weight=row_weight,
        draw_variance=None if cells.draw_variance is None else cells.draw_variance[inside],
    )


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


def count_profiles(codes: np.ndarray) -> int:
    """The distinct rows of ``codes`` (non-negative codes; covariate profiles): one sort of
    int64 keys, not ``np.unique(codes, axis=0)``'s sort of whole rows (many times slower at
    10^6 rows)."""
    if codes.shape[0] == 0:
        return 0
    cardinality = codes.max(axis=0).astype(np.int64) + 1
    return int(np.unique(_profile_keys(codes, cardinality)).size)


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
