"""The per-record metrics of the audit scans: what each reads and how reports name it.

A leaf module (no imports) so that the spec layer, ``audit validate`` and ``audit explain`` can
consult the table without loading the engine (methods.md §5.1, §5.7).
"""

from __future__ import annotations

# metric -> (inputs it reads, description of L, description of the population). Inputs:
# outcome; recommendation (0/1 decision); probability (the prediction read as a probability in
# [0, 1]); score (the prediction as any real number); column (the metric's own 0/1 column).
METRICS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "fpr": (("outcome", "recommendation"), "flagged positive", "rows with outcome = 0"),
    "fnr": (("outcome", "recommendation"), "flagged negative", "rows with outcome = 1"),
    "tpr": (("outcome", "recommendation"), "flagged positive", "rows with outcome = 1"),
    "tnr": (("outcome", "recommendation"), "flagged negative", "rows with outcome = 0"),
    "ppv": (("outcome", "recommendation"), "outcome = 1", "rows flagged positive"),
    "npv": (("outcome", "recommendation"), "outcome = 0", "rows flagged negative"),
    "positive_rate": (("recommendation",), "flagged positive", "all rows"),
    "accuracy": (("outcome", "recommendation"), "decision = outcome", "all rows"),
    "error": (("outcome", "recommendation"), "decision != outcome", "all rows"),
    "brier": (("outcome", "probability"), "(prediction - outcome)^2", "all rows"),
    "squared_error": (("outcome", "score"), "(prediction - outcome)^2", "all rows"),
    "calibration": (("outcome", "probability"), "outcome - prediction", "all rows"),
    "coverage": (("column",), "covered (column value)", "all rows"),
}

# metric -> what it is, in words (report wording)
METRIC_WORDS: dict[str, str] = {
    "fpr": "false positive rate",
    "fnr": "false negative rate",
    "tpr": "true positive rate",
    "tnr": "true negative rate",
    "ppv": "positive predictive value",
    "npv": "negative predictive value",
    "positive_rate": "positive rate",
    "accuracy": "accuracy",
    "error": "error rate",
    "brier": "Brier score",
    "squared_error": "squared error",
    "calibration": "calibration gap (outcome - prediction)",
    "coverage": "coverage",
}
