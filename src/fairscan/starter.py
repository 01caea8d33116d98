"""Starter spec for ``audit init``: guess column roles from a data file's columns."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from fairscan.data.load import read_table

SCHEMA_MODELINE = "# yaml-language-server: $schema="
SCHEMA_FILE = "audit-spec.schema.json"

# Likely protected attributes, matched as whole words of a column name (case-insensitive;
# `personal_status`, `age_group` and `Sex` match): each with the reason written next to it.
PROTECTED_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"sex|gender", "sex/gender"),
    (r"age|age_?group|age_?cat|birth_?year|dob|date_of_birth|year_of_birth", "age"),
    (r"race|racial", "race"),
    (r"ethnicity|ethnic|ethnic_?group", "ethnicity"),
    (
        r"nationality|national_?origin|citizenship|country_of_birth|native_?country|foreign_?worker"
        r"|immigrant|immigration",
        "nationality/national origin",
    ),
    (r"marital|marital_?status|personal_?status|married|relationship", "marital status"),
    (r"religion|religious|faith", "religion"),
    (r"disability|disabled|handicap", "disability"),
    (r"pregnan\w*|maternity", "pregnancy"),
    (r"sexual_?orientation|orientation", "sexual orientation"),
    (r"caste|skin_?colou?r", "caste/colour"),
    (r"language|native_?language", "language"),
    (r"veteran", "veteran status"),
)
EXCLUDED_NAMES = ("split", "fold", "folds", "partition", "subset", "set", "dataset", "train_test")
SCORE_WORDS = ("score", "prob", "proba", "probability", "pred", "prediction", "predicted")
STARTER_REPLICATES = 199
STARTER_RESTARTS = 50

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


def _words(name: str) -> str:
    """``personal_status`` / ``Age Group`` / ``ageGroup`` -> ``_personal_status_`` style word string."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return "_" + re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_") + "_"


def protected_reason(name: str) -> str | None:
    """Why ``name`` looks like a protected attribute (``"age"``), or None."""
    words = _words(name)
    for pattern, reason in PROTECTED_PATTERNS:
        if re.search(rf"_(?:{pattern})_", words):
            return reason
    return None


def _looks_like_id(name: str, series: pl.Series) -> bool:
    """Identifiers make useless subgroup attributes: `id`, `*_id`, or all-unique integers/strings."""
    low = name.lower()
    if low in ("id", "index", "row_id", "uuid", "idx", "row", "rownum", "row_number", "key"):
        return True
    if low.endswith(("_id", "-id", " id", "_idx", "_index", "_uuid")) or low.startswith("id_"):
        return True
    if low.startswith("unnamed"):  # a pandas index written to CSV
        return True
    unique = series.n_unique() == series.len() and series.len() > 20
    return unique and (series.dtype.is_integer() or series.dtype == pl.String)


def _looks_like_split(name: str) -> bool:
    words = _words(name)
    return any(f"_{word}_" in words for word in EXCLUDED_NAMES) or bool(
        re.search(r"_(?:is_)?(?:train|test|valid|validation|holdout)_", words)
    )


def _looks_like_score(name: str, series: pl.Series) -> bool:
    """A model output (score, probability, prediction): a role candidate, never an attribute."""
    words = _words(name)
    if any(f"_{word}_" in words for word in SCORE_WORDS):
        return True
    return _name_rank(name, PREDICTION_HINTS) < 2 * len(PREDICTION_HINTS) and _is_probability(
        series
    )


def _schema_line(spec_dir: Path) -> list[str]:
    """The yaml-language-server modeline: a path to the project's schema when one is reachable."""
    here = spec_dir.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "schemas" / SCHEMA_FILE
        if candidate.is_file():
            relative = Path(os.path.relpath(candidate, here)).as_posix()
            return [SCHEMA_MODELINE + relative]
    return [
        SCHEMA_MODELINE + SCHEMA_FILE,
        f"# (for editor completion, write the schema next to this file: audit schema > {SCHEMA_FILE})",
    ]


def _two_label_outcome(frame: pl.DataFrame) -> tuple[str, object] | None:
    """An outcome-named column with two labels other than 0/1 (`class` in {1, 2}): (name, label)."""
    candidates = []
    for name in frame.columns:
        if _name_rank(name, OUTCOME_HINTS) >= 2 * len(OUTCOME_HINTS):
            continue
        values = frame[name].drop_nulls().unique().sort().to_list()
        if len(values) == 2:
            candidates.append(name)
    if not candidates:
        return None
    name = min(candidates, key=lambda c: _name_rank(c, OUTCOME_HINTS))
    return name, frame[name].drop_nulls().unique().sort().to_list()[-1]


def _attribute_kind(series: pl.Series, probabilities: list[str], name: str) -> str | None:
    """``"category"``, ``"numeric"`` (needs discretize) or None (not usable as an attribute)."""
    distinct = series.n_unique()
    if series.dtype in (pl.String, pl.Categorical, pl.Boolean):
        return "category" if 2 <= distinct <= 20 else None
    if series.dtype.is_integer() and 2 <= distinct <= 10:
        return "category"
    if series.dtype.is_numeric() and distinct > 10 and name not in probabilities:
        return "numeric"
    return None


def starter_spec(data_path: Path, *, spec_dir: Path) -> str:
    """A commented ``*.audit.yaml`` text for ``data_path`` (path written relative to ``spec_dir``).

    Only likely protected attributes (matched by name: sex, age, race, ...) are switched on, each
    with the reason; the other usable columns are listed commented out. Identifier, split/fold and
    score-like columns are left out. The settings (199 replicates, 50 restarts) keep the first run
    to about a minute on two cores.
    """
    frame = read_table(Path(data_path))
    columns = frame.columns
    binary = [c for c in columns if _is_binary(frame[c])]
    probabilities = [c for c in columns if _is_probability(frame[c])]
    positive: object = None
    named_binary = [c for c in binary if _name_rank(c, OUTCOME_HINTS) < 2 * len(OUTCOME_HINTS)]
    two_label = None if named_binary else _two_label_outcome(frame)
    if two_label is not None:
        outcome, positive = two_label
    elif binary:
        outcome = min(binary, key=lambda c: _name_rank(c, OUTCOME_HINTS))
    else:
        outcome = "OUTCOME_COLUMN"
    prediction = (
        min(probabilities, key=lambda c: _name_rank(c, PREDICTION_HINTS)) if probabilities else None
    )
    recs = [c for c in binary if c != outcome]
    recommendation = min(recs, key=lambda c: _name_rank(c, RECOMMENDATION_HINTS)) if recs else None
    roles = {outcome, prediction, recommendation}
    protected: list[tuple[str, str]] = []
    others: list[str] = []
    discretize: list[str] = []
    left_out: list[str] = []
    for name in columns:
        if name in roles:
            continue
        series = frame[name]
        if _looks_like_id(name, series) or _looks_like_split(name):
            left_out.append(name)
            continue
        if _looks_like_score(name, series) or (
            name in binary
            and _name_rank(name, RECOMMENDATION_HINTS) < 2 * len(RECOMMENDATION_HINTS)
        ):
            left_out.append(name)
            continue
        kind = _attribute_kind(series, probabilities, name)
        if kind is None:
            left_out.append(name)
            continue
        reason = protected_reason(name)
        if reason is not None:
            protected.append((name, reason))
            if kind == "numeric":
                discretize.append(name)
        else:
            others.append(name)
    relative = Path(os.path.relpath(Path(data_path).resolve(), spec_dir.resolve())).as_posix()
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(data_path).stem).strip("-") or "audit"

    lines = [
        *_schema_line(spec_dir),
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
    if positive is not None:
        lines.append(
            f"  positive: {positive}                   # the outcome label counted as 1: check it"
        )
    if prediction:
        lines.append(f"  prediction: {prediction}")
    if recommendation:
        lines.append(f"  recommendation: {recommendation}")
    elif prediction:
        lines.append("  threshold: 0.5                 # recommendation = prediction >= 0.5")
    lines.append(
        "# Subgroup dimensions. Switched on: columns whose names suggest a protected attribute."
    )
    lines.append(
        "# Every extra attribute multiplies the search; add others (listed below) one at a time."
    )
    if protected:
        lines.append("attributes:")
        lines += [f"  - {name:<28} # likely protected: {reason}" for name, reason in protected]
    else:
        lines.append("attributes:                      # no column name suggests a protected one")
        lines.append("  - ATTRIBUTE                    # name at least one column")
    lines += [f"  # - {name}" for name in others]
    if left_out:
        lines.append(
            "# Left out (identifiers, splits, scores, or unusable as groups): "
            + ", ".join(left_out)
        )
    if discretize:
        lines.append("discretize:")
        lines += [f"  {name}: {{quantiles: 5}}" for name in discretize]
    numeric_others = [n for n in others if _attribute_kind(frame[n], probabilities, n) == "numeric"]
    if numeric_others:
        lines.append(
            "# numeric columns need `discretize` when switched on, e.g. "
            + f"{numeric_others[0]}: {{quantiles: 5}}"
        )
    lines.append(
        f"defaults: {{restarts: {STARTER_RESTARTS}}}        # raise (e.g. 500) for the final audit"
    )
    lines.append("scans:")
    if recommendation or prediction:
        lines.append("  - {id: fpr, type: fpr_scan, penalty: 1}")
        lines.append("  - {id: tpr, type: tpr_scan, penalty: 1}")
    if prediction:
        lines.append("  - {id: calibration, type: bias_scan, direction: negative}")
    if not (recommendation or prediction):
        lines.append("  - {id: fpr, type: fpr_scan, penalty: 1}   # needs columns.recommendation")
    lines += [
        f"significance: {{replicates: {STARTER_REPLICATES}, alpha: 0.05, seed: 0}}"
        "   # 999 for the final audit",
        "output: {dir: reports, formats: [json, markdown]}",
        "",
    ]
    return "\n".join(lines)
