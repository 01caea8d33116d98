"""Power analysis (``audit power``): the smallest miscalibration the Bias Scan would detect in
a named subgroup of the spec's data (methods.md §2.5)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fairscan.data.table import RoleColumn
from fairscan.errors import SpecError, UsageError
from fairscan.run.prepare import prepare_audit
from fairscan.run.specs import load_spec, locate
from fairscan.spec.constraints import ALPHA

if TYPE_CHECKING:
    from fairscan.engine.critical import Detectability


@dataclass(frozen=True)
class PowerAnalysis:
    """Detectability of a miscalibration in a named subgroup (methods.md §2.5)."""

    subgroup: dict[str, list[str]]
    size: int
    observed_rate: float
    predicted_rate: float
    detectability: Detectability


def power_analysis(
    spec_path: Path, subgroup: dict[str, list[str]], alpha: float | None = None
) -> PowerAnalysis:
    """h(alpha) for the spec's data and the odds inflation Delta_thresh the Bias Scan would detect.

    Uses the spec's outcome and prediction (taken as unbiased probabilities) and its attributes
    (M = distinct attribute profiles).
    """
    # scipy, through the critical values: only for audit power (start-up cost of other commands)
    from fairscan.engine.critical import detectability_threshold

    if alpha is not None and (why := ALPHA.violation(alpha)):  # the spec's bounds of alpha
        raise UsageError(why, field="alpha", hint="give a level such as 0.05")
    columns = load_spec(spec_path).spec.columns
    if columns.prediction is None or columns.outcome is None:
        loaded = load_spec(spec_path)
        raise locate(
            loaded,
            SpecError(
                "power analysis needs the outcome and predicted probabilities",
                field="columns",
                hint="set columns.outcome and columns.prediction",
            ),
        )
    outcome_role = RoleColumn(columns.outcome, "outcome", "columns.outcome", columns.positive)
    prediction_role = RoleColumn(columns.prediction, "probability", "columns.prediction")
    prepared = prepare_audit(spec_path, extra_roles=(outcome_role, prediction_role))
    data = prepared.data
    inside = np.ones(data.n_rows, dtype=bool)
    for name, values in subgroup.items():
        if name not in data.attribute_names:
            close = difflib.get_close_matches(name, data.attribute_names, n=1)
            raise UsageError(
                f"{name!r} is not an attribute of this spec",
                hint=f"did you mean {close[0]!r}?"
                if close
                else f"attributes: {', '.join(data.attribute_names)}",
            )
        j = data.attribute_names.index(name)
        labels = data.attributes[j].labels
        unknown = [v for v in values if v not in labels]
        if unknown:
            raise UsageError(
                f"attribute {name!r} has no value {unknown[0]!r}",
                hint=f"its values are: {', '.join(labels)}",
            )
        codes = [labels.index(v) for v in values]
        inside &= np.isin(data.codes[:, j], codes)
    if not inside.any():
        raise UsageError("the subgroup is empty in the data", hint="check the --where conditions")
    y = data.role(outcome_role)[inside].astype(np.float64)
    p = data.role(prediction_role)[inside]
    if y.sum() in (0, len(y)):
        raise UsageError(
            "the subgroup has only one outcome class; the detectability threshold needs both",
            hint="choose a larger subgroup",
        )
    profiles = int(np.unique(data.codes, axis=0).shape[0])
    level = alpha if alpha is not None else prepared.spec.significance.alpha
    result = detectability_threshold(y, p, level, profiles)
    return PowerAnalysis(
        subgroup=subgroup,
        size=int(inside.sum()),
        observed_rate=float(y.mean()),
        predicted_rate=float(p.mean()),
        detectability=result,
    )
