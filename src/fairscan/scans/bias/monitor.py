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
    counts = None if data.row_weight is None else data.row_weight.astype(np.float64)
    # a streamed dataset's distinct rows: the positives among each row's copies, and its count
    y = np.asarray(roles.outcome, dtype=np.float64)
    positives = y if counts is None else y * counts

    def evidence(inside: np.ndarray) -> np.ndarray:
        from fairscan.engine.evidence import bernoulli_loglik

        if counts is None:
            return bernoulli_loglik(positives[inside], p[inside])
        return bernoulli_loglik(positives[inside], p[inside], counts[inside])

    return evidence
