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
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from fairscan.data.discretize import discretize as bin_numeric
from fairscan.data.discretize import format_number
from fairscan.data.filters import FIELD as FILTER_FIELD
from fairscan.data.filters import filter_expression, quote_identifier
from fairscan.data.table import MISSING_LABEL, EncodedAttribute, PreparedData
from fairscan.errors import DataError, Issue, SpecError
from fairscan.spec.models import ColumnsSpec, DiscretizeSpec

__all__ = ["FLOAT_CATEGORICAL_MAX", "ROLES", "prepare_data"]

# "score": a real-valued prediction (no [0, 1] check), for ranking scans such as SubROC
ROLES = frozenset({"outcome", "prediction", "recommendation", "score"})
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

    def attribute_field(self, name: str) -> str:
        return self.attribute_fields.get(name, "attributes")

    @property
    def n(self) -> int:
        return self.frame.height

    def add(self, message: str, *, field: str, column: str | None, hint: str | None) -> None:
        self.issues.append(Issue(message, hint=hint, field=field, column=column))

    def rows(self, mask: pl.Series) -> str:
        """'data rows 4, 17, 90, …' for the first rows where ``mask`` holds (1-based)."""
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


def _missing_mask(series: pl.Series) -> pl.Series:
    mask = series.is_null()
    if series.dtype.is_float():
        mask = mask | series.is_nan().fill_null(False)
    return mask


def _binary(ctx: _Context, column: str, role: str, spec_field: str) -> np.ndarray | None:
    """Validate a binary role column and return it as int8 0/1, or None after adding issues."""
    s = ctx.frame[column]
    if s.dtype == pl.Null:
        s = s.cast(pl.Int8)  # every value missing: reported as such below
    dtype = s.dtype
    missing = _missing_mask(s)
    accepted = "0/1, true/false, or the strings '0'/'1'/'true'/'false'"
    invalid: pl.Series | None = None
    if dtype == pl.Boolean:
        ones = s.fill_null(False)
    elif dtype.is_numeric():
        f = s.cast(pl.Float64)
        ones = (f == 1.0).fill_null(False)
        invalid = ~missing & ~((f == 0.0) | (f == 1.0)).fill_null(False)
    elif dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Categorical):
        t = s.cast(pl.String).str.strip_chars().str.to_lowercase()
        ones = t.is_in(list(_TRUE)).fill_null(False)
        invalid = ~missing & ~(ones | t.is_in(list(_FALSE)).fill_null(False))
    else:
        ctx.add(
            f"{role} column {column!r} has type {dtype}; it must be binary ({accepted})",
            field=spec_field,
            column=column,
            hint=f"point {spec_field} at a 0/1 column",
        )
        return None

    ok = True
    n_missing = int(missing.sum())
    if n_missing:
        ok = False
        ctx.add(
            f"{role} column {column!r} has {_plural(n_missing, 'missing value')} "
            f"({ctx.rows(missing)})",
            field=spec_field,
            column=column,
            hint=ctx.not_null_hint(column),
        )
    if invalid is not None and bool(invalid.any()):
        ok = False
        bad = s.filter(invalid)
        ctx.add(
            f"{role} column {column!r} must be binary ({accepted}); "
            f"{_plural(bad.len(), 'row')} {'holds' if bad.len() == 1 else 'hold'} other values: "
            f"{_offending(bad)}",
            field=spec_field,
            column=column,
            hint=f"recode {column!r} to 0/1, or drop the other rows with data.filter",
        )
    if not ok:
        return None
    return ones.cast(pl.Int8).to_numpy().astype(np.int8, copy=False)


def _prediction(
    ctx: _Context, column: str, spec_field: str, *, probability: bool = True
) -> np.ndarray | None:
    s = ctx.frame[column]
    if s.dtype == pl.Null:
        s = s.cast(pl.Float64)  # every value missing: reported as such below
    dtype = s.dtype
    if dtype == pl.Boolean or not dtype.is_numeric():
        extra = ""
        if dtype == pl.String:
            present = s.drop_nulls()
            bad = present.filter(present.cast(pl.Float64, strict=False).is_null())
            if bad.len():
                extra = f"; non-numeric values: {_offending(bad)}"
        hint = "point columns.prediction at a column of probabilities in [0, 1]"
        if dtype == pl.Boolean:
            hint = "a 0/1 decision belongs in columns.recommendation; " + hint
        ctx.add(
            f"prediction column {column!r} has type {dtype}; it must hold numbers in [0, 1]{extra}",
            field=spec_field,
            column=column,
            hint=hint,
        )
        return None
    f = s.cast(pl.Float64)
    missing = _missing_mask(f)
    ok = True
    n_missing = int(missing.sum())
    if n_missing:
        ok = False
        ctx.add(
            f"prediction column {column!r} has {_plural(n_missing, 'missing value')} "
            f"(null or NaN; {ctx.rows(missing)})",
            field=spec_field,
            column=column,
            hint=ctx.not_null_hint(column),
        )
    present = f.filter(~missing)
    outside = (present < 0.0) | (present > 1.0)
    n_out = int(outside.sum()) if probability else 0
    if not probability:
        infinite = int(present.is_infinite().sum())
        if infinite:
            ok = False
            ctx.add(
                f"score column {column!r} has {_plural(infinite, 'infinite value')}",
                field=spec_field,
                column=column,
                hint="replace infinite scores by large finite values",
            )
    if n_out:
        ok = False
        lo, hi = present.min(), present.max()
        ctx.add(
            f"prediction column {column!r} must hold probabilities in [0, 1]; "
            f"{_plural(n_out, 'value')} {'lies' if n_out == 1 else 'lie'} outside (min {_show_value(lo)}, "
            f"max {_show_value(hi)})",
            field=spec_field,
            column=column,
            hint=(
                "if the column holds scores or logits, convert them to probabilities "
                "(e.g. with a sigmoid) before the audit"
            ),
        )
    if not ok:
        return None
    return f.to_numpy().astype(np.float64, copy=True)


# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------


@dataclass
class _Encoded:
    codes: np.ndarray  # int32, missing = len(labels) (before MISSING_LABEL is appended)
    labels: list[str]
    edges: tuple[float, ...] | None = None


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
    ctx.add(
        f"attribute {name!r} has {count} distinct values, more than max_categories "
        f"({max_categories})",
        field=ctx.attribute_field(name),
        column=name,
        hint=hint,
    )


def _encode_attribute(
    ctx: _Context,
    name: str,
    disc: DiscretizeSpec | None,
    max_categories: int,
) -> _Encoded | None:
    s = ctx.frame[name]
    dtype = s.dtype

    if disc is not None:
        if dtype == pl.Boolean or not dtype.is_numeric():
            ctx.add(
                f"discretize applies to numeric columns; attribute {name!r} has type {dtype}",
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
        labels = list(binned.labels[:n_bins])
        return _Encoded(binned.codes, labels, binned.edges)

    if dtype == pl.Null:
        return _Encoded(np.zeros(ctx.n, dtype=np.int32), [])

    missing = _missing_mask(s)
    if dtype == pl.Boolean:
        uniques = s.drop_nulls().unique().sort()
        labels = ["true" if v else "false" for v in uniques.to_list()]
        return _Encoded(_codes_against(s.cast(pl.Int8), uniques.cast(pl.Int8), missing), labels)

    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Categorical):
        text = s.cast(pl.String)
        n_distinct = text.drop_nulls().n_unique()
        if n_distinct > max_categories:
            _too_many(ctx, name, n_distinct, max_categories, numeric=False)
            return None
        present = text.drop_nulls().unique().to_list()
        if isinstance(dtype, pl.Enum):
            order = {c: i for i, c in enumerate(dtype.categories.to_list())}
            present.sort(key=lambda v: order[v])
        else:
            present.sort(key=_natural_key)
        k = len(present)
        codes = text.cast(pl.Enum(present)).to_physical().cast(pl.Int32).fill_null(k).to_numpy()
        return _Encoded(codes.astype(np.int32, copy=False), present)

    if dtype.is_integer() or dtype.is_temporal():
        present_s = s.drop_nulls()
        n_distinct = present_s.n_unique()
        if n_distinct > max_categories:
            _too_many(ctx, name, n_distinct, max_categories, numeric=dtype.is_integer())
            return None
        uniques = present_s.unique().sort()
        labels = (
            [str(v) for v in uniques.to_list()]
            if dtype.is_integer()
            else (uniques.cast(pl.String).to_list())
        )
        return _Encoded(_codes_against(s, uniques, missing), labels)

    if dtype.is_numeric():  # float or decimal
        f = s.cast(pl.Float64)
        present_f = f.filter(~missing)
        n_distinct = present_f.n_unique()
        integral = bool((present_f.is_finite() & (present_f == present_f.floor())).all())
        if integral and n_distinct <= FLOAT_CATEGORICAL_MAX:
            if n_distinct > max_categories:
                _too_many(ctx, name, n_distinct, max_categories, numeric=True)
                return None
            uniques = present_f.unique().sort()
            labels = [format_number(v) for v in uniques.to_list()]
            return _Encoded(_codes_against(f, uniques, missing), labels)
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

    ctx.add(
        f"attribute {name!r} has type {dtype}, which cannot be scanned",
        field=ctx.attribute_field(name),
        column=name,
        hint="use a column of strings, integers, booleans or (discretised) numbers",
    )
    return None


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _unique_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    name = base
    while name in taken:
        name += "_"
    return name


def prepare_data(
    frame: pl.DataFrame,
    *,
    columns: ColumnsSpec,
    attributes: list[str],
    discretize: Mapping[str, DiscretizeSpec],
    max_categories: int,
    filter: str | None,
    needs: set[str],
    extra_columns: Mapping[str, str] | None = None,
) -> PreparedData:
    """Filter, validate and encode ``frame`` for the scans.

    ``needs`` ⊆ {"outcome", "prediction", "recommendation"} lists the column roles the spec's
    scans require (the outcome always is; "score" is a prediction that may be any real number).
    ``extra_columns`` maps further columns a scan reads (e.g. a base-rate or split column) to
    the spec field naming them; they are returned filtered in ``PreparedData.extra``. Problems in the data are collected and raised as one
    :class:`DataError`; a filter that cannot be parsed or type-checked raises
    :class:`SpecError` (``data.filter``) unless other problems were found as well.
    """
    needs = set(needs) | {"outcome"}
    unknown_roles = needs - ROLES
    if unknown_roles:
        raise ValueError(f"unknown column roles in needs: {sorted(unknown_roles)}")
    n_raw = frame.height
    if n_raw == 0:
        raise DataError(
            "the data has no rows", field="data.path", hint="point data.path at a file with data"
        )
    names = frame.columns
    issues: list[Issue] = []

    # 1. Which columns play which role; are they there?
    role_columns: list[tuple[str, str, str]] = [("outcome", "columns.outcome", columns.outcome)]
    if columns.prediction is not None:
        role_columns.append(("prediction", "columns.prediction", columns.prediction))
    elif "prediction" in needs:
        issues.append(
            Issue(
                "the scans need a prediction column, but columns.prediction is not set",
                field="columns.prediction",
                hint="set columns.prediction to the column of predicted probabilities",
            )
        )
    if columns.recommendation is not None:
        role_columns.append(("recommendation", "columns.recommendation", columns.recommendation))
    elif columns.threshold is None and "recommendation" in needs:
        issues.append(
            Issue(
                "the scans need a binary recommendation, but neither columns.recommendation "
                "nor columns.threshold is set",
                field="columns.recommendation",
                hint=(
                    "set columns.recommendation to a 0/1 decision column, or set "
                    "columns.threshold to derive it from columns.prediction"
                ),
            )
        )

    wanted: list[tuple[str, str]] = [(f, c) for _, f, c in role_columns]
    wanted += [(f"attributes[{i}]", a) for i, a in enumerate(attributes)]
    extra_columns = dict(extra_columns or {})
    wanted += [(f, c) for c, f in extra_columns.items()]
    present: list[str] = []
    for spec_field, column in wanted:
        if column in names:
            if column not in present:
                present.append(column)
            continue
        hint = _did_you_mean(column, names)
        if hint is None:
            shown = ", ".join(repr(n) for n in names[:20])
            more = f" (and {len(names) - 20} more)" if len(names) > 20 else ""
            hint = f"the data's columns are: {shown}{more}"
        issues.append(
            Issue(
                f"column {column!r} is not in the data",
                field=spec_field,
                column=column,
                hint=hint,
            )
        )

    # 2. Filter rows, keep only the columns we use (plus the original row number).
    row_col = _unique_name("__fairscan_row__", names)
    lazy = frame.lazy().with_row_index(row_col)
    if filter is not None:
        try:
            expr = filter_expression(filter, frame.schema)
        except SpecError as exc:
            if issues:
                raise DataError(issues=[*issues, *exc.issues]) from exc
            raise
        lazy = lazy.filter(expr)
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
        issues.append(
            Issue(
                f"the filter keeps 0 of {n_raw} rows",
                field=FILTER_FIELD,
                hint="check the filter's values (string comparisons are case-sensitive)",
            )
        )
        raise DataError(issues=issues)

    ctx = _Context(frame=data, row_col=row_col, filter=filter, n_raw=n_raw, issues=issues)
    ctx.attribute_fields = {name: f"attributes[{i}]" for i, name in enumerate(attributes)}

    # 3. Role columns.
    outcome = prediction = recommendation = None
    for role, spec_field, column in role_columns:
        if column not in data.columns:
            continue
        if role == "outcome":
            outcome = _binary(ctx, column, role, spec_field)
        elif role == "prediction":
            probability = not ("score" in needs and "prediction" not in needs)
            prediction = _prediction(ctx, column, spec_field, probability=probability)
        else:
            recommendation = _binary(ctx, column, role, spec_field)
    if outcome is not None:
        n_pos = int(outcome.sum())
        if n_pos in (0, ctx.n):
            value = 0 if n_pos == 0 else 1
            ctx.add(
                f"outcome {columns.outcome!r} is {value} in all {ctx.n} rows; "
                f"scans need both classes{ctx.filter_note()}",
                field="columns.outcome",
                column=columns.outcome,
                hint="check columns.outcome and data.filter",
            )
    if columns.recommendation is None and columns.threshold is not None and prediction is not None:
        t = float(columns.threshold)
        decided = prediction >= t if columns.threshold_rule == "ge" else prediction > t
        recommendation = decided.astype(np.int8)

    # 4. Attributes.
    encoded: list[EncodedAttribute] = []
    code_columns: list[np.ndarray] = []
    for name in attributes:
        if name not in data.columns:
            continue
        enc = _encode_attribute(ctx, name, discretize.get(name), max_categories)
        if enc is None:
            continue
        k = len(enc.labels)
        n_missing = int(np.count_nonzero(enc.codes == k))
        labels = list(enc.labels)
        if n_missing:
            labels.append(MISSING_LABEL)
            ctx.warnings.append(
                f"attribute {name!r}: {_plural(n_missing, 'null value')} scanned as "
                f"{MISSING_LABEL!r}"
            )
        if len(labels) == 1:
            ctx.warnings.append(
                f"attribute {name!r} has a single value ({labels[0]!r}) in the "
                f"{ctx.n} rows scanned; it cannot split the data"
            )
        encoded.append(
            EncodedAttribute(name=name, labels=tuple(labels), n_missing=n_missing, edges=enc.edges)
        )
        code_columns.append(enc.codes)

    # 5. Extra columns: numbers as float64 (nulls are errors), anything else as strings.
    extra: dict[str, np.ndarray] = {}
    for column, spec_field in extra_columns.items():
        if column not in data.columns:
            continue
        series = data[column]
        if series.dtype.is_numeric() or series.dtype == pl.Boolean:
            values = series.cast(pl.Float64)
            missing = _missing_mask(values)
            if int(missing.sum()):
                ctx.add(
                    f"column {column!r} has {_plural(int(missing.sum()), 'missing value')} "
                    f"(null or NaN; {ctx.rows(missing)})",
                    field=spec_field,
                    column=column,
                    hint=ctx.not_null_hint(column),
                )
                continue
            extra[column] = values.to_numpy().astype(np.float64, copy=True)
        else:
            extra[column] = np.asarray(
                series.cast(pl.String).fill_null(MISSING_LABEL).to_list(), dtype=object
            )

    if ctx.issues:
        raise DataError(issues=ctx.issues)
    if outcome is None:  # pragma: no cover - every path to here has added an issue
        raise DataError("the outcome column could not be read", field="columns.outcome")

    if code_columns:
        codes = np.ascontiguousarray(np.stack(code_columns, axis=1), dtype=np.int32)
    else:
        codes = np.empty((ctx.n, 0), dtype=np.int32)
    return PreparedData(
        n_rows_raw=n_raw,
        attributes=tuple(encoded),
        codes=codes,
        outcome=outcome,
        prediction=prediction,
        recommendation=recommendation,
        warnings=tuple(ctx.warnings),
        extra=extra,
    )
