"""Turn the loaded table into the encoded :class:`PreparedData` every scan works on.

Checks are collected, not raised one at a time: a spec with three mistakes gets one
:class:`DataError` listing all three, each naming the spec field and the data column.
Everything is vectorised (polars/numpy); there is no per-row Python code.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from fairscan.data.discretize import bin_labels, format_number
from fairscan.data.discretize import discretize as bin_numeric
from fairscan.data.filter_compile import filter_expression
from fairscan.data.filters import FIELD as FILTER_FIELD
from fairscan.data.filters import quote_identifier
from fairscan.data.table import (
    MISSING_LABEL,
    Aggregation,
    EncodedAttribute,
    Label,
    PreparedData,
    RoleColumn,
)
from fairscan.errors import DataError, Issue, SpecError
from fairscan.spec.models import DiscretizeSpec

__all__ = ["FLOAT_CATEGORICAL_MAX", "prepare_data"]

FLOAT_CATEGORICAL_MAX = 10  # an integral float column with at most this many values is categorical
_SHOW_VALUES = 5  # offending values / row numbers listed in a message

_TRUE = ("1", "true")
_FALSE = ("0", "false")


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _did_you_mean(name: str, candidates: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in candidates}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    if not close:
        return None
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def _discretize_field(name: str) -> str:
    """Spec field of a discretize entry, written like ``fairscan.spec.loader.format_path``:
    ``discretize.age``, or ``discretize["age group"]`` for keys that are not simple."""
    if name and all(ch.isalnum() or ch in "_-$" for ch in name):
        return f"discretize.{name}"
    return f"discretize[{json.dumps(name, ensure_ascii=False)}]"


def _show_value(value: object) -> str:
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _show_values(values: Iterable[object], total: int) -> str:
    shown = ", ".join(_show_value(v) for v in values)
    if total > _SHOW_VALUES:
        shown += f", … ({total} distinct)"
    return shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _offending(values: pl.Series) -> str:
    """The first few distinct values of ``values`` (sorted when possible), for a message."""
    distinct = values.unique()
    try:
        first = distinct.sort().head(_SHOW_VALUES).to_list()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
        first = distinct.head(_SHOW_VALUES).to_list()
    return _show_values(first, distinct.len())


_DIGITS = re.compile(r"(\d+)")


def _natural_key(text: str) -> tuple[tuple[object, ...], str]:
    """Sort key that orders embedded numbers numerically: 'grade 9' < 'grade 10'."""
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


@dataclass
class _Context:
    """State shared by the checks of one :func:`prepare_data` call."""

    frame: pl.DataFrame  # filtered; only the columns we use plus the row index
    row_col: str
    filter: str | None
    n_raw: int
    issues: list[Issue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attribute_fields: dict[str, str] = field(default_factory=dict)  # name -> "attributes[i]"
    # aggregated data (a streamed dataset): the data rows each row of ``frame`` stands for
    weights: np.ndarray | None = None
    binned: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # already in bins

    def attribute_field(self, name: str) -> str:
        return self.attribute_fields.get(name, "attributes")

    @property
    def n(self) -> int:
        """Data rows after the filter."""
        return self.frame.height if self.weights is None else int(self.weights.sum())

    def count(self, mask: pl.Series) -> int:
        """Data rows where ``mask`` holds."""
        if self.weights is None:
            return int(mask.sum())
        return int(self.weights[mask.fill_null(False).to_numpy()].sum())

    def add(self, message: str, *, field: str, column: str | None, hint: str | None) -> None:
        self.issues.append(Issue(message, hint=hint, field=field, column=column))

    def rows(self, mask: pl.Series) -> str:
        """'data rows 4, 17, 90, …' for the first rows where ``mask`` holds (1-based)."""
        if self.weights is not None:  # aggregated: the rows' numbers are not known
            return _plural(self.count(mask), "data row")
        idx = self.frame[self.row_col].filter(mask).head(_SHOW_VALUES).to_list()
        text = ", ".join(str(i + 1) for i in idx)
        if int(mask.sum()) > len(idx):
            text += ", …"
        return f"data rows {text}" if len(idx) > 1 else f"data row {text}"

    def not_null_hint(self, column: str) -> str:
        cond = f"{quote_identifier(column)} IS NOT NULL"
        if self.filter and self.filter.strip():
            cond = f"({self.filter.strip()}) AND {cond}"
        # A JSON string is a valid YAML double-quoted scalar, escapes included.
        return f"drop those rows with data.filter: {json.dumps(cond, ensure_ascii=False)}"

    def filter_note(self) -> str:
        if self.filter and self.filter.strip():
            return f" (data.filter keeps {self.n} of {self.n_raw} rows)"
        return ""


# --------------------------------------------------------------------------------------------
# Role columns
# --------------------------------------------------------------------------------------------

_ROLE_WORD = {
    "outcome": "outcome",
    "decision": "recommendation",
    "probability": "prediction",
    "score": "prediction",
    "continuous": "outcome",
    "count": "outcome",
    "ordinal": "outcome",
    "nominal": "outcome",
    "mean": "prediction",
}
_BINARY_ACCEPTED = "0/1, true/false, or the strings '0'/'1'/'true'/'false'"


def _missing_mask(series: pl.Series) -> pl.Series:
    mask = series.is_null()
    if series.dtype.is_float():
        mask = mask | series.is_nan().fill_null(False)
    return mask


def _is_text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.Enum | pl.Categorical)


def _role_series(ctx: _Context, request: RoleColumn, null_dtype: type[pl.DataType]) -> pl.Series:
    series = ctx.frame[request.column]
    if series.dtype == pl.Null:
        series = series.cast(null_dtype)  # every value missing: reported as such
    return series


def _report_missing(ctx: _Context, request: RoleColumn, missing: pl.Series, what: str = "") -> bool:
    """Add the 'has N missing values' issue; True when there were none."""
    n_missing = ctx.count(missing)
    if n_missing:
        ctx.add(
            f"{_ROLE_WORD[request.kind]} column {request.column!r} has "
            f"{_plural(n_missing, 'missing value')} ({what}{ctx.rows(missing)})",
            field=request.field,
            column=request.column,
            hint=ctx.not_null_hint(request.column),
        )
    return not n_missing


def _report_type(
    ctx: _Context, request: RoleColumn, dtype: pl.DataType, need: str, instead: str
) -> None:
    ctx.add(
        f"{_ROLE_WORD[request.kind]} column {request.column!r} has type {dtype}; it must {need}",
        field=request.field,
        column=request.column,
        hint=f"point {request.field} at {instead}",
    )


def _to_int8(mask: pl.Series) -> np.ndarray:
    return mask.cast(pl.Int8).to_numpy().astype(np.int8, copy=False)


def _binary_default(ctx: _Context, request: RoleColumn) -> np.ndarray | None:
    """A binary role column without a positive label: 0/1, true/false, '0'/'1'."""
    s = _role_series(ctx, request, pl.Int8)
    missing = _missing_mask(s)
    invalid: pl.Series | None = None
    if s.dtype == pl.Boolean:
        ones = s.fill_null(False)
    elif s.dtype.is_numeric():
        f = s.cast(pl.Float64)
        ones = (f == 1.0).fill_null(False)
        invalid = ~missing & ~((f == 0.0) | (f == 1.0)).fill_null(False)
    elif _is_text(s.dtype):
        t = s.cast(pl.String).str.strip_chars().str.to_lowercase()
        ones = t.is_in(list(_TRUE)).fill_null(False)
        invalid = ~missing & ~(ones | t.is_in(list(_FALSE)).fill_null(False))
    else:
        _report_type(ctx, request, s.dtype, f"be binary ({_BINARY_ACCEPTED})", "a 0/1 column")
        return None
    ok = _report_missing(ctx, request, missing)
    if invalid is not None and bool(invalid.any()):
        ok = False
        bad = s.filter(invalid)
        n_bad = ctx.count(invalid)
        ctx.add(
            f"{_ROLE_WORD[request.kind]} column {request.column!r} must be binary "
            f"({_BINARY_ACCEPTED}); {_plural(n_bad, 'row')} "
            f"{'holds' if n_bad == 1 else 'hold'} other values: {_offending(bad)}",
            field=request.field,
            column=request.column,
            hint=f"recode {request.column!r} to 0/1, name its positive label with `positive`, "
            "or drop the other rows with data.filter",
        )
    return _to_int8(ones) if ok else None


def _label_text(label: Label) -> str:
    """A positive label as it reads in a string column (booleans as true/false)."""
    if isinstance(label, bool):
        return "true" if label else "false"
    return str(label)


def _show_label(label: Label) -> str:
    return _label_text(label) if isinstance(label, bool) else _show_value(label)


def _float_label(label: Label) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None


def _bool_label(label: Label) -> bool | None:
    if isinstance(label, bool):
        return label
    text = str(label).strip().lower()
    if text in ("1", "1.0", "true"):
        return True
    if text in ("0", "0.0", "false"):
        return False
    return None


def _comparable(series: pl.Series, label: Label) -> tuple[pl.Series, object | None]:
    """The column and its positive label in one type (None: the label cannot be of that type).

    Numeric columns compare with float(label), strings with str(label), booleans with a bool.
    """
    if series.dtype == pl.Boolean:
        return series, _bool_label(label)
    if series.dtype.is_numeric():
        return series.cast(pl.Float64), _float_label(label)
    return series.cast(pl.String).str.strip_chars(), _label_text(label).strip()


def _report_unmatchable(
    ctx: _Context, request: RoleColumn, label: Label, dtype: pl.DataType, present: pl.Series
) -> None:
    role = _ROLE_WORD[request.kind]
    if dtype == pl.Boolean:
        what, kind, hint = "true or false", "boolean", "use positive: true or positive: false"
    else:
        what, kind = "a number", "numeric"
        hint = f"set positive to one of the column's values: {_offending(present)}"
    ctx.add(
        f"positive label {_show_label(label)} is not {what}, but {role} column "
        f"{request.column!r} is {kind}",
        field=request.field,
        column=request.column,
        hint=hint,
    )


def _check_labels(
    ctx: _Context, request: RoleColumn, label: Label, present: pl.Series, target: object
) -> bool:
    """Two labels at most, one of them the positive label; adds issues, True when fine."""
    role, column = _ROLE_WORD[request.kind], request.column
    ok = True
    if present.n_unique() > 2:
        ok = False
        ctx.add(
            f"{role} column {column!r} has {present.n_unique()} distinct values "
            f"({_offending(present)}); with a positive label ({_show_label(label)}) it must "
            "hold exactly two",
            field=request.field,
            column=column,
            hint="drop the rows with other values with data.filter, or recode "
            f"{column!r} to two labels before the audit",
        )
    if present.len() and not bool((present == target).any()):
        ok = False
        ctx.add(
            f"positive label {_show_label(label)} does not occur in {role} column {column!r}"
            f"{ctx.filter_note()}; its values are: {_offending(present)}",
            field=request.field,
            column=column,
            hint="set positive to the value read as 1 (check its spelling and type), "
            "or check data.filter",
        )
    return ok


def _binary_positive(ctx: _Context, request: RoleColumn, label: Label) -> np.ndarray | None:
    """A binary role column read through its positive label: 1 where the value is that label."""
    s = _role_series(ctx, request, pl.Float64)
    if not (s.dtype == pl.Boolean or s.dtype.is_numeric() or _is_text(s.dtype)):
        _report_type(ctx, request, s.dtype, "hold two labels", "a column of two labels")
        return None
    values, target = _comparable(s, label)
    missing = _missing_mask(values)
    present = values.filter(~missing)
    ok = _report_missing(ctx, request, missing)
    if target is None:
        _report_unmatchable(ctx, request, label, s.dtype, present)
        return None
    ok = _check_labels(ctx, request, label, present, target) and ok
    return _to_int8((values == target).fill_null(False)) if ok else None


def _both_classes(ctx: _Context, request: RoleColumn, values: np.ndarray) -> bool:
    """An outcome must hold both classes (after the filter); adds the issue when it does not."""
    n_pos = int(values.sum() if ctx.weights is None else (values * ctx.weights).sum())
    if n_pos not in (0, ctx.n):
        return True
    value = 0 if n_pos == 0 else 1
    shown = _show_label(request.positive) if value and request.positive is not None else value
    ctx.add(
        f"outcome {request.column!r} is {shown} in all {ctx.n} rows; "
        f"scans need both classes{ctx.filter_note()}",
        field=request.field,
        column=request.column,
        hint=f"check {request.field} and data.filter",
    )
    return False


def _report_not_numeric(ctx: _Context, request: RoleColumn, s: pl.Series) -> None:
    probability = request.kind == "probability"
    extra = ""
    if s.dtype == pl.String:
        present = s.drop_nulls()
        bad = present.filter(present.cast(pl.Float64, strict=False).is_null())
        if bad.len():
            extra = f"; non-numeric values: {_offending(bad)}"
    wanted = "probabilities in [0, 1]" if probability else "real-valued scores"
    hint = f"point {request.field} at a column of {wanted}"
    if s.dtype == pl.Boolean:
        hint = "a 0/1 decision belongs in columns.recommendation; " + hint
    ctx.add(
        f"prediction column {request.column!r} has type {s.dtype}; it must hold numbers"
        f"{' in [0, 1]' if probability else ''}{extra}",
        field=request.field,
        column=request.column,
        hint=hint,
    )


def _check_unit_interval(
    ctx: _Context, request: RoleColumn, values: pl.Series, missing: pl.Series
) -> bool:
    """Probabilities in [0, 1]; the count of those outside is of data rows (an aggregated
    row counts as the rows it stands for)."""
    present = values.filter(~missing)
    n_out = ctx.count(((values < 0.0) | (values > 1.0)) & ~missing)
    if n_out:
        ctx.add(
            f"prediction column {request.column!r} must hold probabilities in [0, 1]; "
            f"{_plural(n_out, 'value')} {'lies' if n_out == 1 else 'lie'} outside "
            f"(min {_show_value(present.min())}, max {_show_value(present.max())})",
            field=request.field,
            column=request.column,
            hint=(
                "if the column holds scores or logits, convert them to probabilities "
                "(e.g. with a sigmoid) before the audit"
            ),
        )
    return not n_out


def _check_finite(
    ctx: _Context, request: RoleColumn, values: pl.Series, missing: pl.Series
) -> bool:
    infinite = ctx.count(values.is_infinite() & ~missing)  # data rows
    if infinite:
        ctx.add(
            f"score column {request.column!r} has {_plural(infinite, 'infinite value')}",
            field=request.field,
            column=request.column,
            hint="replace infinite scores by large finite values",
        )
    return not infinite


def _real(ctx: _Context, request: RoleColumn) -> np.ndarray | None:
    """A probability (a number in [0, 1]) or a score (any finite real number), as float64."""
    s = _role_series(ctx, request, pl.Float64)
    if s.dtype == pl.Boolean or not s.dtype.is_numeric():
        _report_not_numeric(ctx, request, s)
        return None
    f = s.cast(pl.Float64)
    missing = _missing_mask(f)
    ok = _report_missing(ctx, request, missing, "null or NaN; ")
    if request.kind == "probability":
        ok = _check_unit_interval(ctx, request, f, missing) and ok
    else:
        ok = _check_finite(ctx, request, f, missing) and ok
    return f.to_numpy().astype(np.float64, copy=True) if ok else None


# --------------------------------------------------------------------------------------------
# Outcomes of other types (bias_scan outcome_type) and Poisson expectations
# --------------------------------------------------------------------------------------------

_TYPE_NEEDS = {
    "continuous": "real numbers (outcome_type continuous)",
    "count": "counts, non-negative integers (outcome_type count)",
    "ordinal": "ordinal codes, non-negative integers (outcome_type ordinal)",
    "mean": "expected counts, non-negative numbers (score poisson)",
}


def _finite_numbers(ctx: _Context, request: RoleColumn) -> pl.Series | None:
    """A numeric column without missing or infinite values, as Float64 (None after issues)."""
    s = _role_series(ctx, request, pl.Float64)
    word = _ROLE_WORD[request.kind]
    if s.dtype == pl.Boolean or not s.dtype.is_numeric():
        hint = f"point {request.field} at a numeric column"
        if request.kind in ("count", "ordinal", "continuous"):
            hint += " (class labels: outcome_type nominal; ordered labels: `levels`)"
        ctx.add(
            f"{word} column {request.column!r} has type {s.dtype}; it must hold "
            f"{_TYPE_NEEDS[request.kind]}",
            field=request.field,
            column=request.column,
            hint=hint,
        )
        return None
    f = s.cast(pl.Float64)
    missing = _missing_mask(f)
    ok = _report_missing(ctx, request, missing, "null or NaN; ")
    infinite = f.is_infinite().fill_null(False)
    if bool(infinite.any()):
        ok = False
        ctx.add(
            f"{word} column {request.column!r} has {_plural(int(infinite.sum()), 'infinite value')}"
            f" ({ctx.rows(infinite)})",
            field=request.field,
            column=request.column,
            hint=f"{word}s must be finite numbers; drop those rows with data.filter",
        )
    return f if ok else None


def _report_invalid(ctx: _Context, request: RoleColumn, values: pl.Series, bad: pl.Series) -> bool:
    """The 'must hold counts; N rows hold other values' issue; True when no row is bad."""
    if not bool(bad.any()):
        return True
    shown = values.filter(bad)
    word = _ROLE_WORD[request.kind]
    hint = "drop those rows with data.filter, or check the column"
    if request.kind == "mean":
        hint = "a Poisson expectation is a mean count; check the prediction column"
    ctx.add(
        f"{word} column {request.column!r} must hold {_TYPE_NEEDS[request.kind]}; "
        f"{_plural(shown.len(), 'row')} {'holds' if shown.len() == 1 else 'hold'} other values: "
        f"{_offending(shown)} ({ctx.rows(bad)})",
        field=request.field,
        column=request.column,
        hint=hint,
    )
    return False


def _numeric_outcome(ctx: _Context, request: RoleColumn) -> np.ndarray | None:
    """continuous: finite reals; count / ordinal codes: non-negative integers; mean: >= 0."""
    f = _finite_numbers(ctx, request)
    if f is None:
        return None
    if request.kind in ("count", "ordinal"):
        bad = ((f < 0.0) | (f != f.round())).fill_null(False)
        if not _report_invalid(ctx, request, f, bad):
            return None
    elif request.kind == "mean" and not _report_invalid(
        ctx, request, f, (f < 0.0).fill_null(False)
    ):
        return None
    return f.to_numpy().astype(np.float64, copy=True)


def _as_labels(series: pl.Series) -> pl.Series:
    """Values as label strings: integral floats as integers ('2', not '2.0'), booleans as words."""
    if series.dtype == pl.Boolean:
        return series.cast(pl.String).str.to_lowercase()
    if series.dtype.is_float():
        integral = (series == series.round()).fill_null(False).all()
        if integral:
            return series.cast(pl.Int64).cast(pl.String)
    return series.cast(pl.String).str.strip_chars()


def _labels(ctx: _Context, request: RoleColumn) -> pl.Series | None:
    """A column of labels without missing values, as strings (None after issues)."""
    s = _role_series(ctx, request, pl.String)
    if not (s.dtype == pl.Boolean or s.dtype.is_numeric() or _is_text(s.dtype)):
        _report_type(ctx, request, s.dtype, "hold class labels", "a column of labels")
        return None
    missing = _missing_mask(s)
    if not _report_missing(ctx, request, missing):
        return None
    return _as_labels(s)


def _ordinal_levels(
    ctx: _Context, request: RoleColumn, levels: tuple[Label, ...]
) -> np.ndarray | None:
    """Ordinal labels coded by their position in `levels` (0 = the first)."""
    labels = _labels(ctx, request)
    if labels is None:
        return None
    order = [_label_text(level).strip() for level in levels]
    bad = ~labels.is_in(order)
    if bool(bad.any()):
        ctx.add(
            f"outcome column {request.column!r} holds values that are not in `levels` "
            f"({', '.join(order)}): {_offending(labels.filter(bad))} ({ctx.rows(bad)})",
            field=request.field,
            column=request.column,
            hint="add them to `levels` in their place, or drop those rows with data.filter",
        )
        return None
    codes = labels.replace_strict(order, list(range(len(order))), return_dtype=pl.Float64)
    return codes.to_numpy().astype(np.float64, copy=True)


def _nominal(ctx: _Context, request: RoleColumn) -> np.ndarray | None:
    """Class labels (strings); at least two classes after the filter."""
    labels = _labels(ctx, request)
    if labels is None:
        return None
    if labels.n_unique() < 2:
        ctx.add(
            f"outcome {request.column!r} holds a single class in all {ctx.n} rows"
            f"{ctx.filter_note()}; a nominal scan needs two classes at least",
            field=request.field,
            column=request.column,
            hint=f"check {request.field} and data.filter",
        )
        return None
    return np.asarray(labels.to_list(), dtype=object)


def _read_role(ctx: _Context, request: RoleColumn) -> np.ndarray | None:
    """Validate one role column; its values, or None after adding issues."""
    if request.kind in ("probability", "score"):
        return _real(ctx, request)
    if request.kind == "ordinal" and request.levels is not None:
        return _ordinal_levels(ctx, request, request.levels)
    if request.kind in ("continuous", "count", "ordinal", "mean"):
        return _numeric_outcome(ctx, request)
    if request.kind == "nominal":
        return _nominal(ctx, request)
    if request.positive is None:
        values = _binary_default(ctx, request)
    else:
        values = _binary_positive(ctx, request, request.positive)
    if values is not None and request.kind == "outcome" and not _both_classes(ctx, request, values):
        return None
    return values


# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------


@dataclass
class _Encoded:
    codes: np.ndarray  # int32, missing = len(labels) (before MISSING_LABEL is appended)
    labels: list[str]
    edges: tuple[float, ...] | None = None
    ordered: bool = False  # labels follow a numeric (or temporal) order


def _codes_against(series: pl.Series, uniques: pl.Series, missing: pl.Series) -> np.ndarray:
    """Codes of ``series`` against its sorted distinct non-missing values ``uniques``.

    Both are compared in their physical (numeric) representation; missing rows get
    ``len(uniques)``.
    """
    k = uniques.len()
    if k == 0:
        return np.zeros(series.len(), dtype=np.int32)
    phys = series.to_physical()
    sorted_phys = uniques.to_physical().to_numpy()
    values = phys.fill_null(sorted_phys[0]).to_numpy()
    if phys.dtype.is_float():
        values = np.where(np.isnan(values), sorted_phys[0], values)
    codes = np.searchsorted(sorted_phys, values).astype(np.int32, copy=False)
    codes[missing.to_numpy()] = k
    return codes


def _too_many(ctx: _Context, name: str, count: int, max_categories: int, *, numeric: bool) -> None:
    ctx.issues.append(
        too_many_categories(name, count, max_categories, ctx.attribute_field(name), numeric)
    )


def too_many_categories(
    name: str, count: int | None, max_categories: int, spec_field: str, numeric: bool
) -> Issue:
    """Attribute ``name`` has ``count`` distinct values, more than ``max_categories`` (also
    asked of a database before its table is read, where ``count`` is None: the database
    stopped counting past the limit, :mod:`fairscan.data.pushdown`)."""
    if numeric:
        hint = (
            f"bin it with discretize: {{{name}: {{quantiles: 5}}}}, or raise max_categories "
            f"(now {max_categories})"
        )
    else:
        hint = (
            "group rare values into fewer categories before the audit, drop the attribute, "
            f"or raise max_categories (now {max_categories})"
        )
    how_many = f"{count} distinct values, more than" if count is not None else "more than"
    return Issue(
        f"attribute {name!r} has {how_many} max_categories ({max_categories})"
        + (" distinct values" if count is None else ""),
        field=spec_field,
        column=name,
        hint=hint,
    )


def _encode_binned(
    ctx: _Context, name: str, disc: DiscretizeSpec, max_categories: int
) -> _Encoded | None:
    """A numeric attribute cut into bins by its discretize entry."""
    s = ctx.frame[name]
    if s.dtype == pl.Boolean or not s.dtype.is_numeric():
        ctx.add(
            f"discretize applies to numeric columns; attribute {name!r} has type {s.dtype}",
            field=_discretize_field(name),
            column=name,
            hint=(
                f"remove the {_discretize_field(name)} entry; non-numeric attributes are "
                "scanned by value"
            ),
        )
        return None
    binned = bin_numeric(s.cast(pl.Float64), quantiles=disc.quantiles, edges=disc.edges)
    n_bins = binned.n_bins
    if n_bins > max_categories:
        ctx.add(
            f"{_discretize_field(name)} makes {n_bins} bins, more than max_categories "
            f"({max_categories})",
            field=_discretize_field(name),
            column=name,
            hint=f"use fewer bins, or raise max_categories (now {max_categories})",
        )
        return None
    if disc.quantiles is not None and 0 < n_bins < disc.quantiles:
        _warn_collapsed(ctx, name, s, disc.quantiles, binned.labels[:n_bins])
    return _Encoded(binned.codes, list(binned.labels[:n_bins]), binned.edges, ordered=True)


def _encode_prebinned(
    ctx: _Context, name: str, disc: DiscretizeSpec | None, max_categories: int
) -> _Encoded | None:
    """An attribute the streaming reader already cut into bins: its values are bin codes."""
    edges = ctx.binned[name]
    labels = list(bin_labels(edges))
    if len(labels) > max_categories:
        ctx.add(
            f"{_discretize_field(name)} makes {len(labels)} bins, more than max_categories "
            f"({max_categories})",
            field=_discretize_field(name),
            column=name,
            hint=f"use fewer bins, or raise max_categories (now {max_categories})",
        )
        return None
    if disc is not None and disc.quantiles is not None and 0 < len(labels) < disc.quantiles:
        ctx.warnings.append(
            f"{_discretize_field(name)}: quantiles: {disc.quantiles} gave only "
            f"{_plural(len(labels), 'bin')} ({', '.join(labels)}) because quantiles coincide; "
            f"give explicit edges instead, e.g. discretize: {{{name}: {{edges: [...]}}}}"
        )
    codes = ctx.frame[name].cast(pl.Int32).fill_null(len(labels)).to_numpy()
    return _Encoded(codes.astype(np.int32, copy=False), labels, edges, ordered=True)


def _warn_collapsed(
    ctx: _Context, name: str, s: pl.Series, quantiles: int, labels: Sequence[str]
) -> None:
    """Quantile edges that coincide (a zero-inflated column) give fewer bins than asked."""
    f = s.cast(pl.Float64)
    present = f.filter(~_missing_mask(f))
    note, example = "", "..."
    if present.len():
        mode = present.mode().sort()[0]
        share = float((present == mode).mean() or 0.0)
        note = f"; {share:.0%} of its values are {format_number(mode)}"
        above = present.filter(present > mode)
        if above.len():
            example = format_number(above.min())  # type: ignore[arg-type]
    ctx.warnings.append(
        f"{_discretize_field(name)}: quantiles: {quantiles} gave only "
        f"{_plural(len(labels), 'bin')} ({', '.join(labels)}) because quantiles coincide"
        f"{note}; give explicit edges instead, e.g. discretize: "
        f"{{{name}: {{edges: [{example}]}}}}"
    )


def _encode_text(ctx: _Context, name: str, max_categories: int) -> _Encoded | None:
    """Strings and categoricals in natural order; enums in their declared order."""
    s = ctx.frame[name]
    text = s.cast(pl.String)
    n_distinct = text.drop_nulls().n_unique()
    if n_distinct > max_categories:
        _too_many(ctx, name, n_distinct, max_categories, numeric=False)
        return None
    present = text.drop_nulls().unique().to_list()
    if isinstance(s.dtype, pl.Enum):
        order = {c: i for i, c in enumerate(s.dtype.categories.to_list())}
        present.sort(key=lambda v: order[v])
    else:
        present.sort(key=_natural_key)
    k = len(present)
    codes = text.cast(pl.Enum(present)).to_physical().cast(pl.Int32).fill_null(k).to_numpy()
    return _Encoded(codes.astype(np.int32, copy=False), present)


def _encode_ordinal(ctx: _Context, name: str, max_categories: int) -> _Encoded | None:
    """Integers and dates/times: one code per distinct value, in value order."""
    s = ctx.frame[name]
    present_s = s.drop_nulls()
    n_distinct = present_s.n_unique()
    if n_distinct > max_categories:
        _too_many(ctx, name, n_distinct, max_categories, numeric=s.dtype.is_integer())
        return None
    uniques = present_s.unique().sort()
    if s.dtype.is_integer():
        labels = [str(v) for v in uniques.to_list()]
    else:
        labels = uniques.cast(pl.String).to_list()
    return _Encoded(_codes_against(s, uniques, _missing_mask(s)), labels, ordered=True)


def _encode_float(ctx: _Context, name: str, max_categories: int) -> _Encoded | None:
    """Floats (and decimals): categorical when few and integral, else they need discretize."""
    f = ctx.frame[name].cast(pl.Float64)
    missing = _missing_mask(f)
    present_f = f.filter(~missing)
    n_distinct = present_f.n_unique()
    integral = bool((present_f.is_finite() & (present_f == present_f.floor())).all())
    if integral and n_distinct <= FLOAT_CATEGORICAL_MAX:
        if n_distinct > max_categories:
            _too_many(ctx, name, n_distinct, max_categories, numeric=True)
            return None
        uniques = present_f.unique().sort()
        labels = [format_number(v) for v in uniques.to_list()]
        return _Encoded(_codes_against(f, uniques, missing), labels, ordered=True)
    ctx.add(
        f"attribute {name!r} is a continuous numeric column "
        f"({n_distinct} distinct values); scan attributes must be categorical",
        field=ctx.attribute_field(name),
        column=name,
        hint=(
            f"bin it with discretize: {{{name}: {{quantiles: 5}}}} "
            f"(or explicit edges: {{{name}: {{edges: [...]}}}})"
        ),
    )
    return None


def _encode_attribute(
    ctx: _Context,
    name: str,
    disc: DiscretizeSpec | None,
    max_categories: int,
) -> _Encoded | None:
    """Encode one attribute by its type, or add an issue and return None."""
    dtype = ctx.frame[name].dtype
    if name in ctx.binned:
        return _encode_prebinned(ctx, name, disc, max_categories)
    if disc is not None:
        return _encode_binned(ctx, name, disc, max_categories)
    if dtype == pl.Null:  # one code a row of the table (its rows are distinct rows when aggregated)
        return _Encoded(np.zeros(ctx.frame.height, dtype=np.int32), [])
    if dtype == pl.Boolean:
        s = ctx.frame[name]
        uniques = s.drop_nulls().unique().sort()
        labels = ["true" if v else "false" for v in uniques.to_list()]
        codes = _codes_against(s.cast(pl.Int8), uniques.cast(pl.Int8), _missing_mask(s))
        return _Encoded(codes, labels)
    if _is_text(dtype):
        return _encode_text(ctx, name, max_categories)
    if dtype.is_integer() or (dtype.is_temporal() and dtype != pl.Duration):
        return _encode_ordinal(ctx, name, max_categories)
    if dtype.is_numeric():  # float or decimal
        return _encode_float(ctx, name, max_categories)
    ctx.add(
        f"attribute {name!r} has type {dtype}, which cannot be scanned",
        field=ctx.attribute_field(name),
        column=name,
        hint="use a column of strings, integers, booleans or (discretised) numbers"
        + (" (e.g. a duration as a number of days)" if dtype == pl.Duration else ""),
    )
    return None


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _whitespace_groups(text: pl.Series) -> list[tuple[str, list[str]]]:
    """Distinct values of ``text`` that differ only by surrounding whitespace:
    (stripped value, the raw variants), sorted."""
    raw = text.drop_nulls().unique()
    if raw.len() == 0 or not bool((raw != raw.str.strip_chars()).any()):
        return []
    groups = (
        pl.DataFrame({"raw": raw, "key": raw.str.strip_chars()})
        .group_by("key")
        .agg(pl.col("raw").sort())
        .filter(pl.col("raw").list.len() > 1)
        .sort("key")
    )
    return [(row["key"], list(row["raw"])) for row in groups.iter_rows(named=True)]


def _show_groups(groups: Sequence[tuple[str, list[str]]], *, merged: bool) -> str:
    shown = []
    for key, variants in groups[:_SHOW_VALUES]:
        variants_text = " / ".join(repr(v) for v in variants)
        shown.append(f"{variants_text} -> {key!r}" if merged else variants_text)
    text = "; ".join(shown)
    if len(groups) > _SHOW_VALUES:
        text += f"; … ({len(groups)} values)"
    return text


def _stripped(series: pl.Series) -> pl.Series:
    if isinstance(series.dtype, pl.Enum):
        categories = list(dict.fromkeys(c.strip() for c in series.dtype.categories.to_list()))
        return series.cast(pl.String).str.strip_chars().cast(pl.Enum(categories))
    return series.cast(pl.String).str.strip_chars()


def _strip_attributes(
    frame: pl.DataFrame, attributes: Sequence[str], strip: bool
) -> tuple[pl.DataFrame, list[str]]:
    """Text attributes with surrounding whitespace stripped (``data.strip_whitespace``), and
    warnings naming the values that this merged (or, when not stripping, that stay apart)."""
    warnings: list[str] = []
    replaced: list[pl.Series] = []
    for name in dict.fromkeys(attributes):
        if name not in frame.columns or not _is_text(frame[name].dtype):
            continue
        series = frame[name]
        text = series.cast(pl.String)
        groups = _whitespace_groups(text)
        if strip:
            if bool((text != text.str.strip_chars()).any()):
                replaced.append(_stripped(series))
            if groups:
                warnings.append(
                    f"attribute {name!r}: values that differ only by surrounding whitespace "
                    f"were merged: {_show_groups(groups, merged=True)} "
                    "(set data.strip_whitespace: false to keep them apart)"
                )
        elif groups:
            warnings.append(
                f"attribute {name!r} has values that differ only by surrounding whitespace, "
                f"scanned as separate subgroups: {_show_groups(groups, merged=False)} "
                "(set data.strip_whitespace: true to merge them)"
            )
    if replaced:
        frame = frame.with_columns(replaced)
    return frame, warnings


def _unique_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    name = base
    while name in taken:
        name += "_"
    return name


def _unique_requests(roles: Sequence[RoleColumn]) -> list[RoleColumn]:
    """One request per key (the first one names it in messages)."""
    unique: dict[tuple[str, str, str | None], RoleColumn] = {}
    for request in roles:
        if request.kind not in _ROLE_WORD:
            raise ValueError(f"unknown role kind {request.kind!r} for column {request.column!r}")
        unique.setdefault(request.key, request)
    return list(unique.values())


def _missing_column(column: str, spec_field: str, names: Sequence[str]) -> Issue:
    hint = _did_you_mean(column, names)
    if hint is None:
        shown = ", ".join(repr(n) for n in names[:20])
        more = f" (and {len(names) - 20} more)" if len(names) > 20 else ""
        hint = f"the data's columns are: {shown}{more}"
    return Issue(
        f"column {column!r} is not in the data", field=spec_field, column=column, hint=hint
    )


def _is_pattern(column: str) -> bool:
    """polars reads this name as a pattern of column names (``*``: every column, ``^...$``: a
    regular expression), never as the column itself."""
    return column == "*" or (column.startswith("^") and column.endswith("$"))


def _pattern_column(column: str, spec_field: str) -> Issue:
    return Issue(
        f"column name {column!r} cannot be audited: the data engine (polars) reads it as a "
        "pattern of column names, not as one column",
        field=spec_field,
        column=column,
        hint=f'rename the column (e.g. in data.sql: select "{column}" as another_name, ...) '
        "and name the new one in the spec",
    )


def _check_columns(
    wanted: Sequence[tuple[str, str]], names: Sequence[str]
) -> tuple[list[str], list[Issue]]:
    """(the wanted columns that are there, in order; an issue per (field, column) missing or
    named as a pattern)."""
    present: list[str] = []
    issues: list[Issue] = []
    reported: set[tuple[str, str]] = set()
    for spec_field, column in wanted:
        if _is_pattern(column):
            if (spec_field, column) not in reported:
                reported.add((spec_field, column))
                issues.append(_pattern_column(column, spec_field))
        elif column in names:
            if column not in present:
                present.append(column)
        elif (spec_field, column) not in reported:
            reported.add((spec_field, column))
            issues.append(_missing_column(column, spec_field, names))
    return present, issues


def _is_nested(dtype: pl.DataType) -> bool:
    return isinstance(dtype, pl.Struct | pl.List | pl.Array | pl.Object)


def _drop_nested(
    frame: pl.DataFrame, wanted: Sequence[tuple[str, str]], present: list[str], issues: list[Issue]
) -> list[str]:
    """The present columns without those holding nested values (JSON objects or lists, read
    from NDJSON or Parquet); an issue for each of those, on the first field naming it."""
    nested = [c for c in present if _is_nested(frame.schema[c])]
    for column in nested:
        spec_field = next(f for f, c in wanted if c == column)
        issues.append(
            Issue(
                f"column {column!r} holds nested values (JSON objects or lists), not single "
                "values; it cannot be scanned",
                field=spec_field,
                column=column,
                hint=f"flatten {column!r} before the audit: put the value you mean in a column "
                "of its own (e.g. jq, or polars' unnest / list.get), or remove it from the spec",
            )
        )
    return [c for c in present if c not in nested]


def _filtered(
    frame: pl.DataFrame, filter: str | None, present: list[str], issues: list[Issue]
) -> _Context:
    """Rows kept by the filter, with the used columns and the original row number."""
    row_col = _unique_name("__fairscan_row__", frame.columns)
    lazy = frame.lazy().with_row_index(row_col)
    if filter is not None:
        try:
            lazy = lazy.filter(filter_expression(filter, frame.schema))
        except SpecError as exc:
            if issues:
                raise DataError(issues=[*issues, *exc.issues]) from exc
            raise
    try:
        data = lazy.select([row_col, *present]).collect()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        err_issue = Issue(
            f"the filter could not be applied: {first}",
            field=FILTER_FIELD,
            hint="simplify the filter or check the column types it compares",
        )
        if issues:
            raise DataError(issues=[*issues, err_issue]) from exc
        raise SpecError(issues=[err_issue]) from exc
    if data.height == 0:
        zero = Issue(
            f"the filter keeps 0 of {frame.height} rows",
            field=FILTER_FIELD,
            hint="check the filter's values (string comparisons are case-sensitive)",
        )
        raise DataError(issues=[*issues, zero])
    return _Context(frame=data, row_col=row_col, filter=filter, n_raw=frame.height, issues=issues)


def _read_roles(
    ctx: _Context, requests: Sequence[RoleColumn]
) -> dict[tuple[str, str, str | None], np.ndarray]:
    values: dict[tuple[str, str, str | None], np.ndarray] = {}
    for request in requests:
        if request.column in ctx.frame.columns:
            read = _read_role(ctx, request)
            if read is not None:
                values[request.key] = read
    return values


def _encode_attributes(
    ctx: _Context,
    attributes: Sequence[str],
    discretize: Mapping[str, DiscretizeSpec],
    max_categories: int,
) -> tuple[tuple[EncodedAttribute, ...], np.ndarray]:
    """The encoded attributes and their (n, m) int32 code matrix."""
    encoded: list[EncodedAttribute] = []
    code_columns: list[np.ndarray] = []
    for name in attributes:
        if name not in ctx.frame.columns:
            continue
        enc = _encode_attribute(ctx, name, discretize.get(name), max_categories)
        if enc is not None:
            encoded.append(_finish_attribute(ctx, name, enc))
            code_columns.append(enc.codes)
    if code_columns:
        codes = np.ascontiguousarray(np.stack(code_columns, axis=1), dtype=np.int32)
    else:
        codes = np.empty((ctx.frame.height, 0), dtype=np.int32)
    return tuple(encoded), codes


def _finish_attribute(ctx: _Context, name: str, enc: _Encoded) -> EncodedAttribute:
    """The attribute with its missing label appended, warning about nulls and single values."""
    k = len(enc.labels)
    missing = enc.codes == k
    n_missing = int(missing.sum() if ctx.weights is None else ctx.weights[missing].sum())
    labels = list(enc.labels)
    if n_missing:
        labels.append(MISSING_LABEL)
        ctx.warnings.append(
            f"attribute {name!r}: {_plural(n_missing, 'null value')} scanned as {MISSING_LABEL!r}"
        )
    if len(labels) == 1:
        ctx.warnings.append(
            f"attribute {name!r} has a single value ({labels[0]!r}) in the "
            f"{ctx.n} rows scanned; it cannot split the data"
        )
    return EncodedAttribute(
        name=name, labels=tuple(labels), n_missing=n_missing, edges=enc.edges, ordered=enc.ordered
    )


def _by_value(ctx: _Context, raw: Mapping[str, str]) -> _Context:
    """``ctx`` with each binned attribute of an aggregate read by value (``raw``: attribute ->
    the aggregate's column of its values); its issues and warnings are ``ctx``'s own."""
    present = {name: column for name, column in raw.items() if column in ctx.frame.columns}
    if not present:
        return ctx
    frame = ctx.frame.with_columns(pl.col(c).alias(name) for name, c in present.items())
    return replace(ctx, frame=frame)


def _read_extra(ctx: _Context, extra_columns: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Extra columns: numbers as float64 (nulls are errors), anything else as strings."""
    extra: dict[str, np.ndarray] = {}
    for column, spec_field in extra_columns.items():
        if column not in ctx.frame.columns:
            continue
        series = ctx.frame[column]
        if not (series.dtype.is_numeric() or series.dtype == pl.Boolean):
            strings = series.cast(pl.String).fill_null(MISSING_LABEL).to_list()
            extra[column] = np.asarray(strings, dtype=object)
            continue
        values = series.cast(pl.Float64)
        missing = _missing_mask(values)
        if ctx.count(missing):
            ctx.add(
                f"column {column!r} has {_plural(ctx.count(missing), 'missing value')} "
                f"(null or NaN; {ctx.rows(missing)})",
                field=spec_field,
                column=column,
                hint=ctx.not_null_hint(column),
            )
            continue
        extra[column] = values.to_numpy().astype(np.float64, copy=True)
    return extra


def _wanted(
    requests: Sequence[RoleColumn], attributes: Sequence[str], extra_columns: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(spec field, column) of every column the audit reads."""
    wanted = [(r.field, r.column) for r in requests]
    wanted += [(f"attributes[{i}]", a) for i, a in enumerate(attributes)]
    wanted += [(f, c) for c, f in extra_columns.items()]
    return wanted


def column_issues(
    roles: Sequence[RoleColumn],
    attributes: Sequence[str],
    extra_columns: Mapping[str, str],
    names: Sequence[str],
) -> list[Issue]:
    """The issues :func:`prepare_data` raises for the columns the spec names that a table of
    columns ``names`` lacks (or names as a pattern): asked of a database or streamed table
    before it is read, so that a wrong name costs no pass over it and its message lists the
    table's own columns (not those of the aggregate that comes back)."""
    wanted = _wanted(_unique_requests(roles), attributes, extra_columns)
    return _check_columns(wanted, names)[1]


def prepare_data(
    frame: pl.DataFrame,
    *,
    roles: Sequence[RoleColumn],
    attributes: list[str],
    discretize: Mapping[str, DiscretizeSpec],
    max_categories: int,
    filter: str | None,
    extra_columns: Mapping[str, str] | None = None,
    strip_whitespace: bool = True,
    aggregated: Aggregation | None = None,
) -> PreparedData:
    """Filter, validate and encode ``frame`` for the scans.

    ``roles`` are the role columns the scans read (built by :mod:`fairscan.scans.roles`);
    requests with the same key are loaded once and returned in ``PreparedData.roles[key]``
    (``PreparedData.role(request)``). ``extra_columns`` maps further columns a scan reads
    (e.g. a base-rate or split column) to the spec field naming them; they are returned
    filtered in ``PreparedData.extra``. Problems in the data are collected and raised as one
    :class:`DataError`; a filter that cannot be parsed or type-checked raises
    :class:`SpecError` (``data.filter``) unless other problems were found as well.
    ``strip_whitespace`` strips surrounding whitespace from text attribute values before the
    filter (``data.strip_whitespace``). ``aggregated``: ``frame`` holds the distinct rows of a
    streamed dataset (filtered already, discretised attributes as bin codes) with their counts;
    the result then carries those counts as ``row_weight``.
    """
    if frame.height == 0:
        raise DataError(
            "the data has no rows", field="data.path", hint="point data.path at a file with data"
        )
    requests = _unique_requests(roles)
    extra_columns = dict(extra_columns or {})
    wanted = _wanted(requests, attributes, extra_columns)
    present, issues = _check_columns(wanted, frame.columns)
    present = _drop_nested(frame, wanted, present, issues)
    frame, strip_warnings = _strip_attributes(frame, attributes, strip_whitespace)

    if aggregated is None:
        ctx = _filtered(frame, filter, present, issues)
    else:
        raw = [c for c in aggregated.raw.values() if c in frame.columns]
        ctx = _filtered(frame, None, [*present, aggregated.weight_column, *raw], issues)
        ctx.filter, ctx.n_raw = filter, aggregated.n_rows_raw
        ctx.weights = ctx.frame[aggregated.weight_column].to_numpy().astype(np.int64)
        ctx.binned = aggregated.binned
    ctx.warnings.extend(strip_warnings)
    ctx.attribute_fields = {name: f"attributes[{i}]" for i, name in enumerate(attributes)}
    # roles and extra columns read a binned attribute's values, not its bin codes
    by_value = _by_value(ctx, aggregated.raw if aggregated is not None else {})
    role_values = _read_roles(by_value, requests)
    encoded, codes = _encode_attributes(ctx, attributes, discretize, max_categories)
    extra = _read_extra(by_value, extra_columns)
    if ctx.issues:
        raise DataError(issues=ctx.issues)
    return PreparedData(
        n_rows_raw=ctx.n_raw,
        attributes=encoded,
        codes=codes,
        roles=role_values,
        warnings=tuple(ctx.warnings),
        extra=extra,
        row_weight=ctx.weights,
        profile_sums={} if aggregated is None else dict(aggregated.profile_sums),
    )
