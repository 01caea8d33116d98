"""One recommendation rule and per-scan role columns.

Every scan that needs a recommendation gets it the same way, in this order:

1. the scan's own ``threshold`` (and ``threshold_rule``): its prediction compared with it;
2. ``columns.recommendation``: a 0/1 decision column;
3. ``columns.threshold`` (+ ``columns.threshold_rule``): the scan's prediction compared with it.

The default rule is ``ge`` (prediction >= threshold) everywhere. A scan may also read its own
``outcome`` (with ``positive``) and ``prediction`` columns instead of ``columns``'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from fairscan.data.table import PreparedData, RoleColumn
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

    def requests(self) -> list[RoleColumn]:
        """The role columns the data layer must load and check for this scan."""
        return [r for r in (self.outcome, self.prediction, self.decision) if r is not None]

    def threshold_columns(self) -> dict[str, str]:
        """A per-row threshold column, as an extra column: {column: spec field}."""
        if isinstance(self.threshold, str) and self.threshold_field is not None:
            return {self.threshold: self.threshold_field}
        return {}


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


def resolve_roles(
    columns: ColumnsSpec, scan: ScanSpecBase, index: int, needs: frozenset[Role]
) -> tuple[ScanRoles, list[Issue]]:
    """This scan's role columns, and issues (located by spec field) for the ones missing."""
    prefix = f"scans[{index}]"
    label = f"scan {scan.id!r} ({scan.type})"
    issues: list[Issue] = []
    names: dict[str, str] = {}

    outcome = None
    if "outcome" in needs:
        column = scan.outcome or columns.outcome
        if column is None:
            issues.append(
                Issue(
                    f"{label} needs an outcome column",
                    hint="set columns.outcome (or `outcome` in the scan) to the binary outcome",
                    field="columns",
                )
            )
        else:
            own = scan.outcome is not None
            positive = scan.positive if scan.positive is not None else None
            if positive is None and not own:
                positive = columns.positive
            where = f"{prefix}.outcome" if own else "columns.outcome"
            outcome = RoleColumn(column, "outcome", where, positive)
            names["outcome"] = column

    decision_column, threshold, rule, threshold_field = (None, None, columns.threshold_rule, None)
    if "recommendation" in needs:
        decision_column, threshold, rule, threshold_field = _decision_source(columns, scan, prefix)
        if decision_column is None and threshold is None:
            issues.append(
                Issue(
                    f"{label} needs binary recommendations",
                    hint="set columns.recommendation to a 0/1 column, or columns.threshold "
                    "(with columns.prediction) to derive it, or `threshold` in the scan",
                    field=prefix,
                )
            )

    prediction = None
    prediction_column = scan.prediction or columns.prediction
    wants_prediction = bool(needs & {"probability", "score"}) or threshold is not None
    if wants_prediction:
        if prediction_column is None:
            what = (
                "a predicted probability column"
                if "probability" in needs
                else "a prediction (score) column"
            )
            issues.append(
                Issue(
                    f"{label} needs {what}",
                    hint="set columns.prediction (or `prediction` in the scan)"
                    + (" to probabilities in [0, 1]" if "probability" in needs else ""),
                    field="columns" if threshold_field is None else threshold_field,
                )
            )
        else:
            kind: Literal["probability", "score"] = (
                "probability" if "probability" in needs else "score"
            )
            where = f"{prefix}.prediction" if scan.prediction is not None else "columns.prediction"
            prediction = RoleColumn(prediction_column, kind, where)
            names["prediction"] = prediction_column

    decision = None
    if decision_column is not None:
        decision = RoleColumn(decision_column, "decision", "columns.recommendation")
        names["recommendation"] = decision_column
    elif threshold is not None and prediction_column is not None:
        names["recommendation"] = rule_text(prediction_column, threshold, rule)
    roles = ScanRoles(
        outcome=outcome,
        prediction=prediction,
        decision=decision,
        threshold=threshold if decision is None else None,
        threshold_rule=rule,
        threshold_field=threshold_field,
        names=names,
    )
    return roles, issues


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
    return RoleArrays(outcome=outcome, prediction=prediction, recommendation=recommendation)
