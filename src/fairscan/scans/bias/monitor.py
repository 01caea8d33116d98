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
    from fairscan.engine.evidence import Profiles
    from fairscan.scans.base import RoleArrays, RunEvidence
    from fairscan.scans.bias.spec import BiasScanSpec


def calibration_evidence(
    spec: BiasScanSpec, data: PreparedData, roles: RoleArrays, profiles: Profiles
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
    counts = None if data.row_weight is None else data.row_weight.astype(np.float64)
    return _by_profiles(profiles, y, p, counts)


def _by_profiles(
    profiles: Profiles, y: np.ndarray, p: np.ndarray, counts: np.ndarray | None
) -> RunEvidence:
    """Evidence from the log-likelihood of each profile (a combination of attribute values): a
    subgroup is a union of profiles, so each monitored subgroup costs a sum over its profiles.
    A profile's log-likelihood is computed once, when a subgroup holding it is first asked for:
    the rows of profiles no monitored subgroup touches are never evaluated (the grid of odds
    ratios costs 41 logarithms a row). ``counts``: a streamed dataset's distinct rows, each
    standing for that many rows (y then counts their positives)."""
    from fairscan.engine.evidence import GRID_SIZE

    slot = np.full(profiles.count, -1, dtype=np.int64)  # a profile's row in `values`, once known
    values = np.zeros((0, GRID_SIZE))

    def evidence(inside: np.ndarray) -> np.ndarray:
        nonlocal values
        fresh = np.flatnonzero(inside & (slot < 0))
        if fresh.size:
            slot[fresh] = values.shape[0] + np.arange(fresh.size)
            values = np.vstack([values, _profile_loglik(profiles, fresh, y, p, counts)])
        return values[slot[inside]].sum(axis=0)

    return evidence


def _profile_loglik(
    profiles: Profiles, chosen: np.ndarray, y: np.ndarray, p: np.ndarray, counts: np.ndarray | None
) -> np.ndarray:
    """The (len(chosen), grid) log-likelihoods of the rows of the ``chosen`` profiles."""
    from fairscan.engine.evidence import GRID, bernoulli_cell_loglik

    compact = np.full(profiles.count, -1, dtype=np.int64)
    compact[chosen] = np.arange(chosen.size)
    of_row = compact[profiles.of_row]
    rows = of_row >= 0
    of_row = of_row[rows]
    if counts is None:
        return bernoulli_cell_loglik(y[rows], p[rows], of_row, chosen.size)
    # distinct rows with their counts: per grid point, one weighted count per profile (the
    # terms of bernoulli_loglik, as in memory)
    n, positives, chosen_p = counts[rows], y[rows] * counts[rows], p[rows]
    out = np.multiply.outer(np.bincount(of_row, positives, chosen.size), np.log(GRID))
    for g, odds in enumerate(GRID):
        terms = n * np.log(1.0 + (odds - 1.0) * chosen_p)
        out[:, g] -= np.bincount(of_row, terms, chosen.size)
    return out
