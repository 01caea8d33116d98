"""Starter spec for ``audit init``: guess column roles from a data file's columns."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from fairscan.data.load import read_table

SCHEMA_COMMENT = "# yaml-language-server: $schema=https://raw.githubusercontent.com/fairscan/fairscan/main/schemas/audit-spec.schema.json"

OUTCOME_HINTS = (
    "outcome",
    "label",
    "target",
    "y",
    "y_true",
    "two_year_recid",
    "recid",
    "default",
    "class",
)
PREDICTION_HINTS = ("prediction", "prob", "proba", "probability", "score", "p", "y_prob", "pred")
RECOMMENDATION_HINTS = ("recommendation", "decision", "y_pred", "pred_label", "high_risk", "flag")


def _name_rank(name: str, hints: tuple[str, ...]) -> int:
    low = name.lower()
    for i, hint in enumerate(hints):
        if low == hint:
            return i
    for i, hint in enumerate(hints):
        if re.search(rf"(^|_){re.escape(hint)}($|_)", low):
            return len(hints) + i
    return 10 * len(hints)


def _is_binary(series: pl.Series) -> bool:
    if series.dtype == pl.Boolean:
        return True
    if not series.dtype.is_numeric():
        return False
    values = set(series.drop_nulls().unique().to_list())
    return bool(values) and values <= {0, 1}


def _is_probability(series: pl.Series) -> bool:
    if not series.dtype.is_float():
        return False
    s = series.drop_nulls()
    if s.len() == 0 or s.n_unique() <= 2:
        return False
    low, high = s.min(), s.max()
    return isinstance(low, int | float) and isinstance(high, int | float) and 0 <= low <= high <= 1


def _looks_like_id(name: str, series: pl.Series) -> bool:
    """Identifiers make useless subgroup attributes: `id`, `*_id`, or all-unique integers/strings."""
    low = name.lower()
    if low in ("id", "index", "row_id", "uuid") or low.endswith(("_id", "-id", " id")):
        return True
    unique = series.n_unique() == series.len() and series.len() > 20
    return unique and (series.dtype.is_integer() or series.dtype == pl.String)


def starter_spec(data_path: Path, *, spec_dir: Path) -> str:
    """A commented ``*.audit.yaml`` text for ``data_path`` (path written relative to ``spec_dir``)."""
    frame = read_table(Path(data_path))
    columns = frame.columns
    binary = [c for c in columns if _is_binary(frame[c])]
    probabilities = [c for c in columns if _is_probability(frame[c])]
    outcome = (
        min(binary, key=lambda c: _name_rank(c, OUTCOME_HINTS)) if binary else "OUTCOME_COLUMN"
    )
    prediction = (
        min(probabilities, key=lambda c: _name_rank(c, PREDICTION_HINTS)) if probabilities else None
    )
    recs = [c for c in binary if c != outcome]
    recommendation = min(recs, key=lambda c: _name_rank(c, RECOMMENDATION_HINTS)) if recs else None
    roles = {outcome, prediction, recommendation}
    attributes: list[str] = []
    discretize: list[str] = []
    for name in columns:
        if name in roles or _looks_like_id(name, frame[name]):
            continue
        series = frame[name]
        distinct = series.n_unique()
        if (
            series.dtype == pl.String
            or series.dtype == pl.Categorical
            or series.dtype == pl.Boolean
        ):
            if 2 <= distinct <= 20:
                attributes.append(name)
        elif series.dtype.is_integer() and 2 <= distinct <= 10:
            attributes.append(name)
        elif series.dtype.is_numeric() and distinct > 10 and name not in probabilities:
            attributes.append(name)
            discretize.append(name)
    relative = os.path.relpath(Path(data_path).resolve(), spec_dir.resolve())
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(data_path).stem).strip("-") or "audit"

    lines = [
        SCHEMA_COMMENT,
        "# Starter spec written by `audit init`: check every guess below, then",
        "#   audit validate THIS_FILE && audit run THIS_FILE",
        "version: 1",
        f"name: {stem}",
        "data:",
        f"  path: {relative}",
        '  # filter: "age >= 18"          # optional, SQL WHERE syntax',
        "columns:",
        f"  outcome: {outcome}",
    ]
    if prediction:
        lines.append(f"  prediction: {prediction}")
    if recommendation:
        lines.append(f"  recommendation: {recommendation}")
    elif prediction:
        lines.append("  threshold: 0.5                 # recommendation = prediction >= 0.5")
    lines.append(
        "attributes: [" + ", ".join(attributes) + "]" if attributes else "attributes: [ATTRIBUTE]"
    )
    if discretize:
        lines.append("discretize:")
        lines += [f"  {name}: {{quantiles: 5}}" for name in discretize]
    lines.append("scans:")
    if recommendation or prediction:
        lines.append("  - {id: fpr, type: fpr_scan, penalty: 1}")
        lines.append("  - {id: tpr, type: tpr_scan, penalty: 1}")
    if prediction:
        lines.append("  - {id: calibration, type: bias_scan, direction: negative}")
    if not (recommendation or prediction):
        lines.append("  - {id: fpr, type: fpr_scan, penalty: 1}   # needs columns.recommendation")
    lines += [
        "significance: {replicates: 999, alpha: 0.05, seed: 0}",
        "output: {dir: reports, formats: [json, markdown]}",
        "",
    ]
    return "\n".join(lines)
