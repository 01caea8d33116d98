"""Per-record metrics L and their populations for the audit scans (methods.md §5.1, §5.7)."""

from __future__ import annotations

import numpy as np

# metric -> (role columns needed, description of L, description of the population)
METRICS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "fpr": (("recommendation",), "flagged positive", "rows with outcome = 0"),
    "fnr": (("recommendation",), "flagged negative", "rows with outcome = 1"),
    "tpr": (("recommendation",), "flagged positive", "rows with outcome = 1"),
    "tnr": (("recommendation",), "flagged negative", "rows with outcome = 0"),
    "ppv": (("recommendation",), "outcome = 1", "rows flagged positive"),
    "npv": (("recommendation",), "outcome = 0", "rows flagged negative"),
    "positive_rate": (("recommendation",), "flagged positive", "all rows"),
    "accuracy": (("recommendation",), "decision = outcome", "all rows"),
    "error": (("recommendation",), "decision != outcome", "all rows"),
    "brier": (("prediction",), "(prediction - outcome)^2", "all rows"),
    "squared_error": (("prediction",), "(prediction - outcome)^2", "all rows"),
    "calibration": (("prediction",), "outcome - prediction", "all rows"),
    "coverage": (("column",), "covered (column value)", "all rows"),
}


def metric_values(
    metric: str,
    outcome: np.ndarray,
    recommendation: np.ndarray | None,
    prediction: np.ndarray | None,
    column: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(L, population) of a named metric; ``L`` is 0 outside the population."""
    y = outcome.astype(np.float64)
    n = len(y)
    everyone = np.ones(n, dtype=bool)
    f = None if recommendation is None else recommendation.astype(np.float64)
    if metric in ("fpr", "tnr", "fnr", "tpr", "ppv", "npv", "positive_rate", "accuracy", "error"):
        if f is None:
            raise ValueError("needs a recommendation")
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
            "positive_rate": f,
            "tnr": 1.0 - f,
            "fnr": 1.0 - f,
            "ppv": y,
            "npv": 1.0 - y,
            "accuracy": (f == y).astype(np.float64),
            "error": (f != y).astype(np.float64),
        }[metric]
    elif metric in ("brier", "squared_error", "calibration"):
        if prediction is None:
            raise ValueError("needs a prediction")
        p = prediction.astype(np.float64)
        pop = everyone
        L = (p - y) ** 2 if metric != "calibration" else y - p
    elif metric == "coverage":
        if column is None:
            raise ValueError("needs a column")
        pop = everyone
        L = column.astype(np.float64)
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return np.where(pop, L, 0.0), np.asarray(pop, dtype=bool)
