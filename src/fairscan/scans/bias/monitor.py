"""Monitoring a Bias Scan (spec ``monitor:``): a run's evidence about a subgroup's calibration.

Under the Bias Scan's null every row's outcome is Bernoulli with its predicted probability p;
the alternative multiplies the odds inside the subgroup by q. The run's log-likelihood of q
(up to a constant) is what :func:`fairscan.engine.evidence.bernoulli_loglik` sums, on the
rows, or on a streamed dataset's distinct rows with their counts. Only a binary outcome with a
predicted probability has this null; the other outcome types are reported as unsupported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fairscan.data.table import PreparedData
    from fairscan.scans.base import RoleArrays, RunEvidence
    from fairscan.scans.bias.spec import BiasScanSpec


def calibration_evidence(
    spec: BiasScanSpec, data: PreparedData, roles: RoleArrays
) -> RunEvidence | str:
    """The run's evidence function over subgroup masks, or why this scan cannot be monitored."""
    if spec.outcome_type != "binary":
        return (
            f"outcome_type {spec.outcome_type}: anytime-valid evidence is computed only for a "
            "binary outcome with predicted probabilities"
        )
    if roles.prediction is None or roles.outcome is None:
        return (
            "no predicted probability: the scan compares with the outcome's overall rate, "
            "estimated from the data; set columns.prediction to monitor it"
        )
    if data.profile_sums:
        return (
            "the database summarised the probabilities into bins: the rows' own probabilities, "
            "which the evidence needs, were not read"
        )
    p = np.asarray(roles.prediction, dtype=np.float64)
    y = np.asarray(roles.outcome, dtype=np.float64)
    if data.row_weight is not None:  # a streamed dataset's distinct rows: already cells
        counts = data.row_weight.astype(np.float64)

        def counted(inside: np.ndarray) -> np.ndarray:
            from fairscan.engine.evidence import bernoulli_loglik

            return bernoulli_loglik(y[inside] * counts[inside], p[inside], counts[inside])

        return counted
    return _by_cells(data.codes, y, p)


def _by_cells(codes: np.ndarray, y: np.ndarray, p: np.ndarray) -> RunEvidence:
    """Evidence from the log-likelihood of each cell (a combination of attribute values): a
    subgroup is a union of cells, so each monitored subgroup costs a count over the rows and a
    sum over its cells. A cell's log-likelihood is computed once, when a subgroup holding it is
    first asked for: the rows of cells no monitored subgroup touches are never evaluated (the
    grid of odds ratios costs 41 logarithms a row)."""
    cache: list[_CellCache] = []

    def evidence(inside: np.ndarray) -> np.ndarray:
        if not cache:
            cache.append(_CellCache(*_cell_ids(codes)))
        return cache[0].loglik(y, p, inside)

    return evidence


class _CellCache:
    """Each cell's log-likelihood, filled in as subgroups ask for their cells."""

    def __init__(self, cell: np.ndarray, n_cells: int) -> None:
        from fairscan.engine.evidence import GRID_SIZE

        self.cell, self.n_cells = cell, n_cells
        self.values = np.zeros((n_cells, GRID_SIZE))
        self.done = np.zeros(n_cells, dtype=bool)

    def loglik(self, y: np.ndarray, p: np.ndarray, inside: np.ndarray) -> np.ndarray:
        from fairscan.engine.evidence import bernoulli_cell_loglik

        chosen = np.bincount(self.cell, weights=inside, minlength=self.n_cells) > 0
        missing = chosen & ~self.done
        if missing.any():
            rows = missing[self.cell]
            fresh = bernoulli_cell_loglik(y[rows], p[rows], self.cell[rows], self.n_cells)
            self.values[missing] = fresh[missing]
            self.done |= missing
        return self.values[chosen].sum(axis=0)


# Up to this many attribute combinations, a row's cell is its combination's number (the cache
# then holds 41 floats per combination: 21 MB); beyond, the combinations present are numbered.
_DIRECT_CELLS = 1 << 16


def _cell_ids(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Each row's cell (its combination of attribute codes) numbered 0..cells-1."""
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64), 1
    sizes = codes.max(axis=0).astype(np.int64) + 1
    profiles = float(np.prod(sizes.astype(np.float64)))
    if profiles <= _DIRECT_CELLS:  # every combination numbered: no sort of the rows
        cell = np.ravel_multi_index(tuple(codes.T.astype(np.int64)), tuple(sizes))
        return cell.astype(np.int64), int(profiles)
    if profiles < 2.0**62:
        combined = np.ravel_multi_index(tuple(codes.T.astype(np.int64)), tuple(sizes))
        _, cell = np.unique(combined, return_inverse=True)
    else:
        _, cell = np.unique(codes, axis=0, return_inverse=True)
    cell = np.asarray(cell, dtype=np.int64).ravel()
    return cell, int(cell.max()) + 1 if cell.size else 1
