"""One recommendation rule and per-scan role columns.

Every scan that needs a recommendation gets it the same way, in this order:

1. the scan's own ``threshold`` (and ``threshold_rule``): its prediction compared with it;
2. ``columns.recommendation``: a 0/1 decision column;
3. ``columns.threshold`` (+ ``columns.threshold_rule``): the scan's prediction compared with it.

The default rule is ``ge`` (prediction >= threshold) everywhere. A scan may also read its own
``outcome`` (with ``positive``) and ``prediction`` columns instead of ``columns``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from fairscan.data.table import PreparedData, RoleColumn, RoleKind
from fairscan.errors import Issue, ScanError
from fairscan.scans.base import Role, RoleArrays
from fairscan.spec.base import ScanSpecBase
from fairscan.spec.models import ColumnsSpec

ThresholdRule = Literal["ge", "gt"]


@dataclass(frozen=True)
class ScanRoles:
    """Where one scan's outcome, prediction and recommendation come from."""

    outcome: RoleColumn | None = None
    prediction: RoleColumn | None = None
    decision: RoleColumn | None = None  # a 0/1 recommendation column
    threshold: float | str | None = None  # else the recommendation is prediction vs this
    threshold_rule: ThresholdRule = "ge"
    threshold_field: str | None = None
    names: dict[str, str] = field(default_factory=dict)  # role -> column (or rule) for wording
    # nominal outcomes: (class label, its probability column), in the order written
    classes: tuple[tuple[str, RoleColumn], ...] = ()

    def requests(self) -> list[RoleColumn]:
        """The role columns the data layer must load and check for this scan."""
        singles = [r for r in (self.outcome, self.prediction, self.decision) if r is not None]
        return singles + [column for _, column in self.classes]

    def threshold_columns(self) -> dict[str, str]:
        """A per-row threshold column, as an extra column: {column: spec field}."""
        if isinstance(self.threshold, str) and self.threshold_field is not None:
            return {self.threshold: self.threshold_field}
        return {}


def outcome_text(names: Mapping[str, str], value: int) -> str:
    """'two_year_recid = 1'; with a positive label: 'class = 2' (1) / 'class != 2' (0)."""
    column = names.get("outcome", "outcome")
    positive = names.get("positive")
    if positive is None:
        return f"{column} = {value}"
    return f"{column} {'=' if value == 1 else '!='} {positive}"


def rule_text(prediction: str, threshold: float | str, rule: ThresholdRule) -> str:
    """'decile_score >= 5' for messages and report wording."""
    shown = threshold if isinstance(threshold, str) else f"{threshold:g}"
    return f"{prediction} {'>=' if rule == 'ge' else '>'} {shown}"


def _decision_source(
    columns: ColumnsSpec, scan: Any, prefix: str
) -> tuple[str | None, float | str | None, ThresholdRule, str | None]:
    """(decision column, threshold, rule, field naming the threshold) by the rule above."""
    own = getattr(scan, "threshold", None)
    if own is not None:
        rule = getattr(scan, "threshold_rule", None) or columns.threshold_rule
        return None, own, rule, f"{prefix}.threshold"
    if columns.recommendation is not None:
        return columns.recommendation, None, columns.threshold_rule, None
    if columns.threshold is not None:
        return None, columns.threshold, columns.threshold_rule, "columns.threshold"
    return None, None, columns.threshold_rule, None


# How an outcome of each bias_scan `outcome_type` is read, and its expectation (the prediction).
_OUTCOME_KIND: dict[str, RoleKind] = {
    "binary": "outcome",
    "continuous": "continuous",
    "count": "count",
    "ordinal": "ordinal",
    "nominal": "nominal",
}
_EXPECTATION_KIND: dict[str, RoleKind] = {
    "binary": "probability",
    "continuous": "score",
    "count": "mean",
    "ordinal": "mean",
    "nominal": "probability",
}


@dataclass
class _Resolver:
    """Resolves one scan's roles, collecting an issue for each one it cannot find."""

    columns: ColumnsSpec
    scan: ScanSpecBase
    index: int
    needs: frozenset[Role]
    issues: list[Issue] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return f"scans[{self.index}]"

    def missing(self, what: str, hint: str, where: str) -> None:
        label = f"scan {self.scan.id!r} ({self.scan.type})"
        self.issues.append(Issue(f"{label} needs {what}", hint=hint, field=where))

    def outcome(self) -> RoleColumn | None:
        if "outcome" not in self.needs:
            return None
        scan, columns = self.scan, self.columns
        column = scan.outcome or columns.outcome
        if column is None:
            hint = "set columns.outcome (or `outcome` in the scan) to the binary outcome"
            self.missing("an outcome column", hint, "columns")
            return None
        own = scan.outcome is not None
        where = f"{self.prefix}.outcome" if own else "columns.outcome"
        self.names["outcome"] = column
        kind = _OUTCOME_KIND[self.outcome_type]
        if kind != "outcome":  # not binary: no positive label
            levels = getattr(scan, "levels", None)
            return RoleColumn(column, kind, where, levels=tuple(levels) if levels else None)
        # columns.positive belongs to columns.outcome; the scan's own `positive` wins
        positive = scan.positive if scan.positive is not None or own else columns.positive
        if positive is not None:
            shown = str(positive).lower() if isinstance(positive, bool) else str(positive)
            self.names["positive"] = shown
        return RoleColumn(column, "outcome", where, positive)

    @property
    def outcome_type(self) -> str:
        return str(getattr(self.scan, "outcome_type", "binary"))

    def classes(self) -> tuple[tuple[str, RoleColumn], ...]:
        """A nominal outcome's class probability columns (``class_probabilities``)."""
        mapping = getattr(self.scan, "class_probabilities", None) or {}
        out = []
        for label, column in mapping.items():
            where = f"{self.prefix}.class_probabilities.{label}"
            self.names[f"class {label}"] = column
            out.append((str(label), RoleColumn(column, "probability", where)))
        return tuple(out)

    def prediction(
        self, derives_recommendation: bool, threshold_field: str | None
    ) -> RoleColumn | None:
        if not (self.needs & {"probability", "score", "expectation"} or derives_recommendation):
            return None
        probability = "probability" in self.needs
        column = self.scan.prediction or self.columns.prediction
        if column is None and "expectation" in self.needs:
            return None  # the scan expects the outcome's overall mean
        if column is None:
            what = (
                "a predicted probability column" if probability else "a prediction (score) column"
            )
            hint = "set columns.prediction (or `prediction` in the scan)" + (
                " to probabilities in [0, 1]" if probability else ""
            )
            self.missing(what, hint, threshold_field or "columns")
            return None
        self.names["prediction"] = column
        own = self.scan.prediction is not None
        where = f"{self.prefix}.prediction" if own else "columns.prediction"
        if "expectation" in self.needs:
            return RoleColumn(column, _EXPECTATION_KIND[self.outcome_type], where)
        return RoleColumn(column, "probability" if probability else "score", where)

    def resolve(self) -> ScanRoles:
        outcome = self.outcome()
        decision_column, threshold, rule, threshold_field = (
            None,
            None,
            self.columns.threshold_rule,
            None,
        )
        if "recommendation" in self.needs:
            decision_column, threshold, rule, threshold_field = _decision_source(
                self.columns, self.scan, self.prefix
            )
            if decision_column is None and threshold is None:
                hint = (
                    "set columns.recommendation to a 0/1 column, or columns.threshold "
                    "(with columns.prediction) to derive it, or `threshold` in the scan"
                )
                self.missing("binary recommendations", hint, self.prefix)
        prediction = self.prediction(threshold is not None, threshold_field)
        decision = None
        if decision_column is not None:
            decision = RoleColumn(decision_column, "decision", "columns.recommendation")
            self.names["recommendation"] = decision_column
        elif threshold is not None and prediction is not None:
            self.names["recommendation"] = rule_text(prediction.column, threshold, rule)
        return ScanRoles(
            outcome=outcome,
            prediction=prediction,
            decision=decision,
            classes=self.classes() if "outcome" in self.needs else (),
            threshold=threshold if decision is None else None,
            threshold_rule=rule,
            threshold_field=threshold_field,
            names=self.names,
        )


def resolve_roles(
    columns: ColumnsSpec, scan: ScanSpecBase, index: int, needs: frozenset[Role]
) -> tuple[ScanRoles, list[Issue]]:
    """This scan's role columns, and issues (located by spec field) for the ones missing."""
    resolver = _Resolver(columns, scan, index, needs)
    roles = resolver.resolve()
    return roles, resolver.issues


def compare(
    prediction: np.ndarray, threshold: float | np.ndarray, rule: ThresholdRule
) -> np.ndarray:
    """The recommendation rule itself: int8 0/1 of prediction >= (or >) threshold."""
    hit = prediction >= threshold if rule == "ge" else prediction > threshold
    return np.asarray(hit, dtype=np.int8)


def bind_roles(data: PreparedData, roles: ScanRoles) -> RoleArrays:
    """The arrays of one scan's roles, from the loaded table."""
    outcome = data.role(roles.outcome) if roles.outcome is not None else None
    prediction = data.role(roles.prediction) if roles.prediction is not None else None
    recommendation = data.role(roles.decision) if roles.decision is not None else None
    classes = {label: data.role(column) for label, column in roles.classes}
    if recommendation is None and roles.threshold is not None and prediction is not None:
        threshold: float | np.ndarray
        if isinstance(roles.threshold, str):
            values = data.extra[roles.threshold]
            if values.dtype == object:
                raise ScanError(
                    f"threshold column {roles.threshold!r} must hold numbers",
                    field=roles.threshold_field,
                    column=roles.threshold,
                    hint="point threshold at a numeric column of per-record thresholds, or give a number",
                )
            threshold = values.astype(np.float64)
        else:
            threshold = float(roles.threshold)
        recommendation = compare(prediction, threshold, roles.threshold_rule)
    return RoleArrays(
        outcome=outcome, prediction=prediction, recommendation=recommendation, classes=classes
    )


def _number(value: float) -> str:
    return f"{value:.6g}"


def threshold_warnings(data: PreparedData, roles: ScanRoles, arrays: RoleArrays) -> list[str]:
    """A warning when a recommendation derived from a threshold is the same for every row.

    A per-row threshold column (or a number) that the predictions never (or always) reach makes
    every recommendation 0 (or 1): no subgroup can differ, so a scan would pass without having
    looked at anything. Mostly a threshold on another scale than the prediction.
    """
    if roles.decision is not None or roles.threshold is None or arrays.recommendation is None:
        return []
    if arrays.prediction is None or arrays.recommendation.size == 0:
        return []
    weight = data.row_weight  # aggregated data: each row stands for this many data rows
    if weight is not None and weight.size == arrays.recommendation.size:
        n_ones = int((arrays.recommendation * weight).sum())
        n = int(weight.sum())
    else:
        n_ones = int(arrays.recommendation.sum())
        n = int(arrays.recommendation.size)
    if 0 < n_ones < n:
        return []
    value = 1 if n_ones else 0
    prediction = roles.names.get("prediction", "prediction")
    if isinstance(roles.threshold, str) and roles.threshold in data.extra:
        values = np.asarray(data.extra[roles.threshold], dtype=np.float64)
        what = (
            f"threshold column {roles.threshold!r} (values {_number(float(values.min()))} to "
            f"{_number(float(values.max()))})"
        )
    elif isinstance(roles.threshold, str):
        what = f"threshold column {roles.threshold!r}"
    else:
        what = f"threshold {_number(float(roles.threshold))}"
    cross = "always" if value else "never"
    rule = roles.names.get("recommendation", "the recommendation rule")
    where = f"{roles.threshold_field}: " if roles.threshold_field else ""
    return [
        f"{where}the recommendation ({rule}) is {value} in all {n} rows: prediction "
        f"{prediction!r} (values {_number(float(arrays.prediction.min()))} to "
        f"{_number(float(arrays.prediction.max()))}) {cross} reaches {what}, so no subgroup "
        "can differ in it; check that the threshold is on the prediction's scale"
    ]
