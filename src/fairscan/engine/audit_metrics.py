"""Per-record metrics L and their populations for the audit scans (methods.md §5.1, §5.7)."""

from __future__ import annotations

import numpy as np

from fairscan.metric_table import CATALOGUE


def metric_values(
    metric: str,
    outcome: np.ndarray | None,
    recommendation: np.ndarray | None,
    prediction: np.ndarray | None,
    column: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(L, population) of a named metric; ``L`` is 0 outside the population.

    Inputs a metric does not read (see :data:`~fairscan.metric_table.CATALOGUE`) may be None.
    """
    if metric not in CATALOGUE:
        raise ValueError(f"unknown metric {metric!r}")
    given = {"outcome": outcome, "recommendation": recommendation, "column": column}
    given["probability"] = given["score"] = prediction
    for need in CATALOGUE[metric].inputs:
        if given[need] is None:
            raise ValueError(f"needs {'an' if need[0] in 'aeiou' else 'a'} {need}")
    y = None if outcome is None else outcome.astype(np.float64)
    f = None if recommendation is None else recommendation.astype(np.float64)
    p = None if prediction is None else prediction.astype(np.float64)
    n = len(next(v for v in (outcome, recommendation, prediction, column) if v is not None))
    everyone = np.ones(n, dtype=bool)
    L, pop = _metric(metric, y, f, p, column, everyone)
    return np.where(pop, L, 0.0), np.asarray(pop, dtype=bool)


def _metric(
    metric: str,
    y: np.ndarray | None,
    f: np.ndarray | None,
    p: np.ndarray | None,
    column: np.ndarray | None,
    everyone: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(L, population) from the inputs the catalogue says the metric reads (checked non-None)."""
    if metric == "positive_rate":
        assert f is not None
        return f, everyone
    if metric == "coverage":
        assert column is not None
        return column.astype(np.float64), everyone
    assert y is not None
    if metric in ("brier", "squared_error", "calibration"):
        assert p is not None
        return ((p - y) ** 2 if metric != "calibration" else y - p), everyone
    assert f is not None
    pop = {
        "fpr": y == 0,
        "tnr": y == 0,
        "fnr": y == 1,
        "tpr": y == 1,
        "ppv": f == 1,
        "npv": f == 0,
    }.get(metric, everyone)
    L = {
        "fpr": f,
        "tpr": f,
        "tnr": 1.0 - f,
        "fnr": 1.0 - f,
        "ppv": y,
        "npv": 1.0 - y,
        "accuracy": (f == y).astype(np.float64),
        "error": (f != y).astype(np.float64),
    }[metric]
    return L, pop
