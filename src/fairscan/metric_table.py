"""The metric catalogue: one record per per-record metric L of the certify, flag and shift scans.

Everything said about a metric lives in its record: what it reads, what L is, its population,
its range and how reports name it (methods.md §5.1, §5.7). The spec's metric names and target
ranges, the scans' data roles and help text, and the findings' wording are derived from it.

A leaf module (no imports but typing) so that the spec layer, ``audit validate`` and
``audit explain`` can consult it without loading the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# The metric names a spec accepts, in the catalogue's order (a type checker needs them spelled
# out; tests/test_metric_table.py checks they are exactly the catalogue's).
MetricName = Literal[
    "fpr",
    "fnr",
    "tpr",
    "tnr",
    "ppv",
    "npv",
    "positive_rate",
    "accuracy",
    "error",
    "brier",
    "calibration",
    "coverage",
    "squared_error",
]

# What a metric reads: outcome; recommendation (0/1 decision); probability (the prediction read
# as a probability in [0, 1]); score (the prediction as any real number); column (the metric's
# own 0/1 column).
MetricInput = Literal["outcome", "recommendation", "probability", "score", "column"]

UNIT = (0.0, 1.0)
DECISION: tuple[MetricInput, ...] = ("outcome", "recommendation")


@dataclass(frozen=True)
class Metric:
    """One per-record metric L: its inputs, what L is over which rows, its range, its words."""

    name: str
    inputs: tuple[MetricInput, ...]
    value: str  # what L is, e.g. "flagged positive"
    population: str  # the rows L is averaged over, e.g. "rows with outcome = 0"
    words: str  # the metric in report wording, e.g. "false positive rate"
    range: tuple[float, float] | None  # of L, hence of a numeric target; None: unbounded
    rate: bool = False  # a confusion-matrix rate: findings name it by its acronym (FPR)

    @property
    def short(self) -> str:
        """How a finding names the metric: ``FPR`` for the rates, else its words."""
        return self.name.upper() if self.rate else self.words


CATALOGUE: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("fpr", DECISION, "flagged positive", "rows with outcome = 0", "false positive rate", UNIT, rate=True),
        Metric("fnr", DECISION, "flagged negative", "rows with outcome = 1", "false negative rate", UNIT, rate=True),
        Metric("tpr", DECISION, "flagged positive", "rows with outcome = 1", "true positive rate", UNIT, rate=True),
        Metric("tnr", DECISION, "flagged negative", "rows with outcome = 0", "true negative rate", UNIT, rate=True),
        Metric("ppv", DECISION, "outcome = 1", "rows flagged positive", "positive predictive value", UNIT, rate=True),
        Metric("npv", DECISION, "outcome = 0", "rows flagged negative", "negative predictive value", UNIT, rate=True),
        Metric("positive_rate", ("recommendation",), "flagged positive", "all rows", "positive rate", UNIT),
        Metric("accuracy", DECISION, "decision = outcome", "all rows", "accuracy", UNIT),
        Metric("error", DECISION, "decision != outcome", "all rows", "error rate", UNIT),
        Metric("brier", ("outcome", "probability"), "(prediction - outcome)^2", "all rows", "Brier score", UNIT),
        Metric("calibration", ("outcome", "probability"), "outcome - prediction", "all rows", "calibration gap (outcome - prediction)", (-1.0, 1.0)),
        Metric("coverage", ("column",), "covered (column value)", "all rows", "coverage", UNIT),
        Metric("squared_error", ("outcome", "score"), "(prediction - outcome)^2", "all rows", "squared error", None),
    )
}  # fmt: skip

METRIC_NAMES: tuple[str, ...] = get_args(MetricName)


def metrics_reading(item: MetricInput) -> tuple[str, ...]:
    """The metrics whose L reads ``item``, in catalogue order."""
    return tuple(name for name, m in CATALOGUE.items() if item in m.inputs)


# The roles a certify/flag/shift scan reads, by metric (scan help text and `audit explain`).
NEEDS_DOC = (
    "outcome (not with `loss`); plus the recommendation for the decision metrics "
    f"({', '.join(metrics_reading('recommendation'))}), the prediction as a probability for "
    f"{' and '.join(metrics_reading('probability'))}, or as a score for "
    f"{' and '.join(metrics_reading('score'))}"
)
