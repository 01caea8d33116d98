"""The per-record metric L of the certify, flag and shift scans: the data roles a spec's metric
reads, and L with its population computed on a scan's roles (methods.md §5.1, §5.7).

Shared by the scan packages that audit a metric (``certification``, ``shift``) so that neither
imports the other; what each metric reads and is called comes from
:data:`fairscan.metric_table.CATALOGUE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fairscan.errors import ScanError
from fairscan.metric_table import CATALOGUE, MetricInput
from fairscan.scans.base import Role, ScanContext

# metric inputs that are data roles (the rest, `column`: the metric's own column)
_ROLES: dict[MetricInput, Role] = {
    "outcome": "outcome",
    "recommendation": "recommendation",
    "probability": "probability",
    "score": "score",
}
# metric inputs -> the ScanContext attribute that holds them
_CONTEXT_ATTRIBUTE: dict[MetricInput, str] = {
    "outcome": "outcome",
    "recommendation": "recommendation",
    "probability": "prediction",
    "score": "prediction",
}


class MetricSpec(Protocol):
    """A scan spec that audits a named metric or a loss column (certify, flag, shift)."""

    @property
    def metric(self) -> str | None: ...

    @property
    def loss(self) -> str | None: ...

    @property
    def column(self) -> str | None: ...


def metric_reads(spec: MetricSpec) -> tuple[MetricInput, ...]:
    """What L is computed from (the catalogue's inputs); () for a loss column."""
    return () if spec.metric is None else CATALOGUE[spec.metric].inputs


def needs(spec: MetricSpec) -> tuple[Role, ...]:
    """The data roles of a metric scan: those its metric reads (none for a loss column).

    An outcome for every metric that compares with it; a recommendation for fpr ... error; the
    prediction as a probability in [0, 1] for brier and calibration, as any real for
    squared_error. Coverage and ``loss`` read their own column only.
    """
    return tuple(_ROLES[item] for item in metric_reads(spec) if item in _ROLES)


@dataclass(frozen=True)
class MetricInputs:
    """L, its population and how to name them."""

    L: np.ndarray  # (n,) per-record metric, 0 outside the population
    population: np.ndarray  # (n,) bool
    name: str  # e.g. "fpr" or "loss cost"
    words: str  # e.g. "false positive rate" (the findings' effect metric)
    text: str  # what L is, e.g. "flagged positive"
    population_text: str  # e.g. "rows with outcome = 0"

    @property
    def short(self) -> str:
        """``FPR`` for the rates, else the metric in words (``mean cost``)."""
        metric = CATALOGUE.get(self.name)
        return metric.short if metric is not None else self.words


def numeric_column(ctx: ScanContext, column: str, field: str) -> np.ndarray:
    """A loaded extra column as float64; a clear error naming ``field`` if it is not numeric."""
    values = ctx.data.extra.get(column)
    if values is None:
        raise ScanError(f"column {column!r} was not loaded", field=field)
    if values.dtype == object:
        raise ScanError(
            f"column {column!r} is not numeric", field=field, hint="use a numeric column"
        )
    return values.astype(np.float64)


def metric_inputs(spec: MetricSpec, ctx: ScanContext) -> MetricInputs:
    """L and its population, from a loss column or a named metric on this scan's roles."""
    # the engine loads when a scan runs, not when the registry is listed (start-up cost)
    from fairscan.engine.audit_metrics import metric_values

    n = ctx.data.n_rows
    if spec.loss is not None:
        L = numeric_column(ctx, spec.loss, "loss")
        return MetricInputs(
            L=L,
            population=np.ones(n, dtype=bool),
            name=f"loss {spec.loss}",
            words=f"mean {spec.loss}",
            text=f"per-row {spec.loss}",
            population_text="all rows",
        )
    assert spec.metric is not None  # the spec models require metric or loss
    metric = CATALOGUE[spec.metric]
    given = {
        item: getattr(ctx, _CONTEXT_ATTRIBUTE[item])
        for item in metric.inputs
        if item in _CONTEXT_ATTRIBUTE
    }
    column = numeric_column(ctx, spec.column, "column") if spec.column else None
    L, population = metric_values(
        spec.metric,
        given.get("outcome"),
        given.get("recommendation"),
        given.get("probability", given.get("score")),
        column,
    )
    return MetricInputs(L, population, metric.name, metric.words, metric.value, metric.population)
