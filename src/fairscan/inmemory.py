"""``fairscan.audit``: audit a table in memory (or a data file) from Python.

Keyword arguments are the spec's fields, validated by the same models as a ``*.audit.yaml``
file, with the same defaults and messages (issues name the field path, e.g.
``scans[0].penalty``, instead of a file line). The run is :func:`fairscan.api.run_prepared`'s:
the same statistics, seeds and report as ``audit run``. Nothing is written unless asked
(``report.write(dir)``).

pandas is not a dependency: a pandas DataFrame is recognised by its type's module and converted
through Arrow (``polars.from_pandas``, which needs pyarrow).
"""

from __future__ import annotations

import difflib
import enum
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from fairscan.errors import DataError, Issue, SpecError, UsageError
from fairscan.progress import Progress, phase
from fairscan.report.models import AuditReport
from fairscan.run.specs import SIGNIFICANCE_SHORTHANDS, errors_located, locate
from fairscan.spec.loader import MAX_DEPTH
from fairscan.spec.models import AuditSpec, ColumnsSpec

if TYPE_CHECKING:
    import polars as pl

    from fairscan.spec.load import LoadedSpec
    from fairscan.spec.models import AuditSpec

__all__ = ["ARGUMENTS", "COLUMN_KEYWORDS", "KEYWORDS", "SHORTHANDS", "UNSET", "Unset", "audit"]

ARGUMENTS = "<fairscan.audit arguments>"  # the provenance's spec_path without a spec file
DEFAULT_NAME = "audit"
DEFAULT_PREDICTION = "prediction"  # the column of model= predictions unless prediction= names it

# keyword -> its place in the spec
COLUMN_KEYWORDS = tuple(ColumnsSpec.model_fields)  # outcome=, prediction=, ... go to `columns`
# every other spec field is a keyword too; `data` is the first argument, `filter` its filter
# (`model`, the spec's description of the model, is the `model=` argument given as a mapping)
SPEC_KEYWORDS = tuple(
    k for k in AuditSpec.model_fields if k not in ("version", "extends", "data", "model")
)
KEYWORDS = (*COLUMN_KEYWORDS, "filter", *SPEC_KEYWORDS)
# significance settings as top-level keywords (replicates=99)
SHORTHANDS = SIGNIFICANCE_SHORTHANDS

_REMOVE: Any = object()  # a keyword given as None: the field takes its default


class Unset(enum.Enum):
    """The default of ``fairscan.audit``'s spec fields: not given (``None`` asks for the
    field's default, over a ``spec=`` file's value)."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


def audit(
    data: Any = None,
    *,
    outcome: str | Unset | None = UNSET,
    prediction: str | Unset | None = UNSET,
    recommendation: str | Unset | None = UNSET,
    threshold: float | Unset | None = UNSET,
    threshold_rule: Literal["ge", "gt"] | Unset | None = UNSET,
    positive: str | int | float | bool | Unset | None = UNSET,
    weight: str | Unset | None = UNSET,
    attributes: Sequence[str] | Unset | None = UNSET,
    scans: Sequence[str | Mapping[str, Any]] | Unset | None = UNSET,
    replicates: int | Unset | None = UNSET,
    seed: int | Literal["random"] | Unset | None = UNSET,
    alpha: float | Unset | None = UNSET,
    workers: int | Unset | None = UNSET,
    filter: str | Unset | None = UNSET,
    discretize: Mapping[str, Any] | Unset | None = UNSET,
    max_categories: int | Unset | None = UNSET,
    defaults: Mapping[str, Any] | Unset | None = UNSET,
    significance: Mapping[str, Any] | Unset | None = UNSET,
    gate: Mapping[str, Any] | Unset | None = UNSET,
    output: Mapping[str, Any] | Unset | None = UNSET,
    monitor: Mapping[str, Any] | Unset | None = UNSET,
    columns: Mapping[str, Any] | Unset | None = UNSET,
    name: str | Unset | None = UNSET,
    description: str | Unset | None = UNSET,
    spec: str | os.PathLike[str] | None = None,
    model: Any = None,
    features: Sequence[str] | None = None,
    executor: Any = None,
    progress: bool | Progress = False,
    **unknown: Any,
) -> AuditReport:
    """Audit ``data`` and return the report (nothing is written unless you call ``.write``).

    ``data``: a polars or pandas DataFrame, a pyarrow Table, or the path of a data file (read
    as ``audit run`` reads ``data.path``; relative to the working directory); with ``spec=``
    and no ``data``, the spec's data file.

    The spec's fields are keyword arguments. ``outcome``, ``prediction``, ``recommendation``,
    ``threshold``, ``threshold_rule``, ``positive`` and ``weight`` are the ``columns`` (or pass
    ``columns={...}``); ``filter`` is ``data.filter``; ``attributes``, ``discretize``,
    ``max_categories``, ``scans``, ``defaults``, ``significance``, ``gate``, ``output``,
    ``name`` (default ``"audit"``) and ``description`` are as in a spec file. A field given
    as ``None`` takes its default. ``monitor`` is refused (a :class:`~fairscan.UsageError`):
    the monitor's evidence lives in the history that ``audit run`` records, which this
    function does not write; a spec file's ``monitor:`` block is left to ``audit run``.

    ``scans``: each entry a scan type's name (``"fpr_scan"``) or a mapping of its settings;
    ``id`` defaults to the type (``fpr_scan``, then ``fpr_scan_2`` for a second one).

    ``replicates``, ``seed``, ``alpha``, ``workers``: shorthands for ``significance={...}``,
    validated by the spec's model (give each one way only).

    ``spec``: a ``*.audit.yaml`` whose settings are used (``extends`` and ``defaults`` applied);
    keyword fields override them (mappings merge, lists and scalars replace, as ``extends``
    does). Problems in the file are reported at its lines, as ``audit validate`` does.

    ``executor``: where null replicates run, overriding ``significance.executor``: ``"local"``,
    ``"dask://HOST:PORT"``, ``"tls://HOST:PORT"``, or a connected ``distributed.Client`` (a
    notebook's, dask-gateway's, Coiled's), which is used as it is and left open.

    ``model``: a mapping describes the audited model for every report format (the spec's
    ``model:`` block: ``{"name": ..., "version": ..., "owner": ..., "description": ...}``).
    A fitted classifier with ``features``: the prediction is
    ``model.predict_proba(data[features])[:, 1]`` (the probability of ``model.classes_[1]``),
    added as the column named by ``prediction=`` (default ``"prediction"``). The report's
    ``data_sha256`` is then of the table with it.

    ``progress``: ``True`` shows a bar while the scans and their null replicates run (tqdm: a
    widget in Jupyter, stderr in a terminal; without tqdm a line on stderr every 2 s); or an
    observer with ``start(task, total)``, ``advance(n)`` and ``done()`` methods.

    Raises :class:`~fairscan.SpecError` (invalid fields), :class:`~fairscan.DataError` (the data
    does not fit the spec) or :class:`~fairscan.UsageError` (the arguments do not fit together),
    with the messages ``audit run`` prints.
    """
    given = {
        "outcome": outcome,
        "prediction": prediction,
        "recommendation": recommendation,
        "threshold": threshold,
        "threshold_rule": threshold_rule,
        "positive": positive,
        "weight": weight,
        "attributes": attributes,
        "scans": scans,
        "filter": filter,
        "discretize": discretize,
        "max_categories": max_categories,
        "defaults": defaults,
        "significance": significance,
        "gate": gate,
        "output": output,
        "columns": columns,
        "name": name,
        "description": description,
    }
    if monitor is not UNSET and monitor is not None:
        raise UsageError(
            "monitor= needs the audit history: the monitor's evidence is recorded with each "
            "run in output.history, which fairscan.audit does not write",
            field="monitor",
            hint="put `monitor:` and `output: {history: ...}` in the spec and run it with "
            "`audit run SPEC` (each run then adds its evidence)",
        )
    fields = {key: value for key, value in given.items() if value is not UNSET}
    if isinstance(model, Mapping):  # the spec's model block, not a classifier
        fields["model"], model = model, None
    shorthands = {
        key: value
        for key, value in (
            ("replicates", replicates),
            ("seed", seed),
            ("alpha", alpha),
            ("workers", workers),
        )
        if value is not UNSET
    }
    return _audit(
        data, {**fields, **unknown}, shorthands, spec, model, features, executor, progress
    )


def _audit(
    data: Any,
    fields: dict[str, Any],
    shorthands: dict[str, Any],
    spec: str | os.PathLike[str] | None,
    model: Any,
    features: Sequence[str] | None,
    executor: Any,
    progress: bool | Progress,
) -> AuditReport:
    from fairscan import api

    _check_keywords(fields)
    observer = _observer(progress)
    overrides = _overrides(fields, shorthands)
    prediction_column: str | None = None
    if model is not None or features is not None:
        named = fields.get("prediction")
        if named is None and isinstance(fields.get("columns"), Mapping):
            named = fields["columns"].get("prediction")
        prediction_column = _check_model(model, features, named)
        overrides.setdefault("columns", {})["prediction"] = prediction_column
    loaded = api.load_spec(Path(spec)) if spec is not None else None
    spec_model, located = _spec(loaded, overrides, data is not None, tuple(shorthands))
    # the checks that need no data come before reading it (and before running the model)
    issues = api.check_spec(spec_model)
    if issues and loaded is not None:
        raise locate(loaded, SpecError(issues=issues), located)
    if issues:
        raise SpecError(issues=issues)
    if data is None and loaded is not None and spec_model.data.connection is not None:
        data = _database(loaded, spec_model)
    streamed = _streamed(data, model)
    if streamed is not None:
        spec_model = spec_model.model_copy(
            update={"data": spec_model.data.model_copy(update={"path": streamed[1]})}
        )
        run_loaded = loaded if located and loaded is not None else None
        if run_loaded is None:
            where = loaded.path if loaded is not None else ARGUMENTS
            run_loaded = api.resolved_spec(spec_model, where)
        prepared = api.prepare_lazy(
            run_loaded, streamed[0], spec=spec_model, located=located, progress=observer
        )
        return api.run_prepared(
            prepared, api.RunOptions(write=False, executor=executor, progress=observer)
        ).report
    with phase(observer, "reading the table"):
        frame, data_path, data_sha256, label = _table(data, loaded)
    if model is not None and features is not None and prediction_column is not None:
        from fairscan.data.load import frame_sha256

        frame = _with_predictions(frame, data, model, features, prediction_column)
        data_sha256 = frame_sha256(frame)
    if label is not None:
        spec_model = spec_model.model_copy(
            update={"data": spec_model.data.model_copy(update={"path": label})}
        )
    if located and loaded is not None:
        run_loaded = loaded
    else:
        run_loaded = api.resolved_spec(spec_model, loaded.path if loaded is not None else ARGUMENTS)
    prepared = api.prepare_frame(
        run_loaded,
        frame,
        spec=spec_model,
        data_path=data_path,
        data_sha256=data_sha256,
        located=located,
        progress=observer,
    )
    return api.run_prepared(
        prepared, api.RunOptions(write=False, executor=executor, progress=observer)
    ).report


# --- keyword arguments -> spec --------------------------------------------------------------


def _observer(progress: Any) -> Progress:
    from fairscan.progress import is_observer, progress_observer

    if isinstance(progress, bool) or progress is None or is_observer(progress):
        return progress_observer(bool(progress) if progress is None else progress)
    raise UsageError(
        f"progress= takes True, False or a progress observer, got a {type(progress).__qualname__}",
        field="progress",
        hint="progress=True shows a bar; an observer has start(task, total), advance(n) and done()",
    )


def _check_keywords(fields: Mapping[str, Any]) -> None:
    issues = [
        Issue(f"unknown keyword argument {key!r}", hint=_keyword_hint(key))
        for key in fields
        if key not in KEYWORDS and key != "model"  # model: given as a mapping (see audit)
    ]
    if issues:
        raise SpecError(issues=issues)


def _keyword_hint(key: str) -> str:
    from fairscan.scans import AUDIT_SPEC
    from fairscan.spec.models import GateSpec, OutputSpec, ScanDefaults, SignificanceSpec

    choices = [*KEYWORDS, *SHORTHANDS, "spec", "model", "features", "executor", "progress"]
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[key.lower()]] if key.lower() in lowered else []
    if close:
        return f"did you mean {close[0]!r}?"
    for name, section in (
        ("significance", SignificanceSpec),
        ("gate", GateSpec),
        ("output", OutputSpec),
    ):
        if key in section.model_fields:
            return f"{key!r} belongs under `{name}`: {name}={{{key!r}: ...}}"
    if key in ScanDefaults.model_fields:
        return (
            f"{key!r} is a scan setting: put it in a scan, scans=[{{'id': ..., 'type': ..., "
            f"{key!r}: ...}}], or give it to every scan with defaults={{{key!r}: ...}}"
        )
    from fairscan.spec.models import scan_models_of

    if any(key in m.model_fields for m in scan_models_of(AUDIT_SPEC).values()):
        return f"{key!r} is a scan setting: put it in a scan, scans=[{{'id': ..., 'type': ..., {key!r}: ...}}]"
    if key == "path":
        return "give the data file (or a DataFrame) as the first argument"
    return f"the keyword arguments are the spec's fields: {', '.join(KEYWORDS)}"


def _plain(value: Any, keyword: str, depth: int = 0, within: frozenset[int] = frozenset()) -> Any:
    """A Python value as YAML would have read it: dicts, lists, str, int, float, bool, None.

    Tuples and numpy arrays become lists and numpy scalars Python numbers, so that the strict
    spec models judge them as they judge the YAML. A value that contains itself, or is nested
    deeper than a spec may be, is a :class:`SpecError` naming its ``keyword`` (never Python's
    recursion limit).
    """
    if isinstance(value, Mapping | list | tuple):
        if id(value) in within:
            raise SpecError(
                f"the value contains itself (a {type(value).__name__} inside itself)",
                field=keyword,
                hint="pass plain data: lists and mappings of text, numbers and booleans",
            )
        if depth >= MAX_DEPTH:
            raise SpecError(
                f"the value is nested more than {MAX_DEPTH} levels deep",
                field=keyword,
                hint="a spec field needs only a few levels of lists and mappings",
            )
        inner = within | {id(value)}
        if isinstance(value, Mapping):
            return {k: _plain(v, keyword, depth + 1, inner) for k, v in value.items()}
        return [_plain(v, keyword, depth + 1, inner) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if type(value).__module__ == "numpy":
        tolist = getattr(value, "tolist", None)
        if callable(tolist):
            return _plain(tolist(), keyword, depth, within)
    return value


def _overrides(fields: Mapping[str, Any], shorthands: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword fields as a (partial) spec mapping; ``None`` marks a field to default.
    ``scans`` entries get their ids (:func:`~fairscan.run.specs.scan_entries`); the
    shorthands go into ``significance``."""
    from fairscan.run.specs import scan_entries, with_significance_shorthands

    out: dict[str, Any] = {}

    def value(v: Any, keyword: str) -> Any:
        return _REMOVE if v is None else _plain(v, keyword)

    for key, v in fields.items():
        if key in COLUMN_KEYWORDS or key == "filter":
            continue
        out[key] = value(v, key)
    if isinstance(out.get("scans"), list):
        out["scans"] = scan_entries(out["scans"])
    if shorthands:
        base = out.get("significance")
        merged = with_significance_shorthands(
            None if base is _REMOVE else base, {k: value(v, k) for k, v in shorthands.items()}
        )
        out["significance"] = merged
    columns = {k: value(fields[k], k) for k in COLUMN_KEYWORDS if k in fields}
    if columns:
        base = out.get("columns")
        out["columns"] = {**base, **columns} if isinstance(base, dict) else columns
    if "filter" in fields:
        out["data"] = {"filter": value(fields["filter"], "filter")}
    return out


def _merge(base: Any, over: Any) -> Any:
    """Deep-merge ``over`` into ``base`` as ``extends`` does: mappings merge key by key, lists
    and scalars replace; ``_REMOVE`` deletes the key."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over
    out = dict(base)
    for key, value in over.items():
        if value is _REMOVE:
            out.pop(key, None)
        elif key in out:
            out[key] = _merge(out[key], value)
        else:
            out[key] = _strip_removed(value)
    return out


def _strip_removed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_removed(v) for k, v in value.items() if v is not _REMOVE}
    return value


def _spec(
    loaded: LoadedSpec | None,
    overrides: dict[str, Any],
    has_data: bool,
    shorthands: tuple[str, ...] = (),
) -> tuple[AuditSpec, bool]:
    """The validated spec, and whether its issues can point at the spec file's lines."""
    from fairscan import api

    if loaded is not None and not overrides:
        return loaded.spec, True
    if loaded is not None:
        base = api.spec_mapping(loaded)
    else:
        # the data file comes from `data`: data.path is set to it once it is read
        base = {"version": 1, "data": {"path": ARGUMENTS}, "columns": {}}
    raw = _merge(base, overrides)
    raw.setdefault("name", DEFAULT_NAME)  # also where name=None asked for the default
    if has_data or loaded is None:
        # data.path is not the user's to set here (it is `data`); it is replaced once read
        data = raw.get("data")
        kept = (
            {k: v for k, v in data.items() if k not in ("connection", "table", "sql")}
            if isinstance(data, dict)
            else {}
        )
        raw["data"] = {**kept, "path": ARGUMENTS}
    try:
        return api.spec_from_mapping(raw), False
    except SpecError as error:
        raise SpecError(
            issues=[_as_keyword(issue, shorthands) for issue in error.issues]
        ) from error


def _as_keyword(issue: Issue, shorthands: tuple[str, ...] = ()) -> Issue:
    """A missing top-level field asks for the keyword argument, not a YAML key; an issue of a
    significance setting given as a shorthand (``replicates=``) names that keyword."""
    key = issue.field
    short = key.removeprefix("significance.") if key is not None else None
    if short in shorthands and short != key:
        return Issue(issue.message, hint=issue.hint, field=short, column=issue.column)
    hint = issue.hint
    if key in KEYWORDS and hint is not None and hint.startswith(f"add `{key}:`"):
        hint = f"pass {key}=..." + hint[len(f"add `{key}:`") :]
        return Issue(issue.message, hint=hint, field=issue.field, column=issue.column)
    return issue


# --- the table ------------------------------------------------------------------------------


def _streamed(data: Any, model: Any) -> tuple[Any, str] | None:
    """(what to stream, the report's data path) for lazy tables and datasets
    (:func:`fairscan.data.source.lazy_of`); None for tables read into memory (and whenever
    a model adds predictions to a table that is not in a database)."""
    from fairscan.data.source import lazy_of

    return lazy_of(data, only_database=model is not None)


def _database(loaded: LoadedSpec, spec: AuditSpec) -> Any:
    """The spec's database table (``data.connection``), connected."""
    from fairscan.data.database import database_source

    base = Path(loaded.file_of("data.connection")).parent
    with errors_located(loaded):
        return database_source(
            str(spec.data.connection),
            spec.data.table,
            spec.data.sql,
            base,
            allow_file_access=spec.data.allow_file_access,
        )


def _table(data: Any, loaded: LoadedSpec | None) -> tuple[pl.DataFrame, str, str, str | None]:
    """(frame, the provenance's data_path, data_sha256, the spec's data.path or None to keep)."""
    from fairscan.data.load import frame_sha256, read_in_memory, read_table_hashed

    if data is None:
        if loaded is None:
            raise UsageError(
                "nothing to audit: give the data",
                hint="fairscan.audit(df, outcome=..., ...) with a polars or pandas DataFrame, a "
                "pyarrow Table or a data file path, or spec='NAME.audit.yaml' for its data file",
            )
        path = (Path(loaded.file_of("data.path")).parent / str(loaded.spec.data.path)).resolve()
        with errors_located(loaded):
            frame, sha = read_table_hashed(path)  # one read: hashed while it is read
        return frame, str(path), sha, None
    if isinstance(data, str | os.PathLike):
        path = Path(data).expanduser().resolve()
        frame, sha = read_table_hashed(path)
        return frame, str(path), sha, os.fspath(data)
    frame, label = read_in_memory(data)
    return frame, label, frame_sha256(frame), label


def _check_model(model: Any, features: Sequence[str] | None, prediction: Any) -> str:
    """The column the model's predictions go to; a :class:`UsageError` if model/features misfit."""
    if model is None:
        raise UsageError(
            "features= names the model's input columns, but no model= is given",
            hint="pass model=<fitted classifier> too, or drop features=",
        )
    if not callable(getattr(model, "predict_proba", None)):
        raise UsageError(
            f"model has no predict_proba method (got a {type(model).__qualname__})",
            hint="pass a fitted probabilistic classifier (e.g. scikit-learn's "
            "LogisticRegression), or add its scores to the data and name that column with "
            "prediction=",
        )
    if features is None or isinstance(features, str) or not list(features):
        raise UsageError(
            "model= needs features=[...]: the columns the model predicts from",
            hint="e.g. features=['age', 'priors_count'] (a list, in the order the model was fitted)",
        )
    if not all(isinstance(f, str) for f in features):
        raise UsageError("features= must list column names (strings)")
    if prediction is not None and not isinstance(prediction, str):
        raise SpecError(
            "expected text (the column for the model's predictions)", field="columns.prediction"
        )
    return prediction or DEFAULT_PREDICTION


def _with_predictions(
    frame: pl.DataFrame, data: Any, model: Any, features: Sequence[str], column: str
) -> pl.DataFrame:
    """``frame`` with ``model.predict_proba(data[features])[:, 1]`` as ``column``."""
    import numpy as np
    import polars as pl

    from fairscan.data.load import _is_pandas_frame

    features = list(features)
    missing = [f for f in features if f not in frame.columns]
    if missing:
        close = difflib.get_close_matches(missing[0], frame.columns, n=1, cutoff=0.6)
        raise DataError(
            f"feature column(s) not in the data: {', '.join(map(repr, missing))}",
            field="features",
            column=missing[0],
            hint=f"did you mean {close[0]!r}?"
            if close
            else f"the columns are: {', '.join(frame.columns[:30])}",
        )
    if column in frame.columns:
        raise DataError(
            f"the data already has a column {column!r}; the model's predictions need a new one",
            field="columns.prediction",
            hint="name the predictions' column with prediction='...' (or drop the column)",
        )
    # the model sees the features as it was most likely fitted on them: a pandas frame stays one
    x = data[features] if _is_pandas_frame(data) else frame.select(features)
    proba = np.asarray(model.predict_proba(x), dtype=np.float64)
    if proba.ndim != 2 or proba.shape != (frame.height, 2):
        raise UsageError(
            f"model.predict_proba returned an array of shape {proba.shape}; expected "
            f"({frame.height}, 2): one row per data row, the probabilities of two classes",
            hint="pass a binary classifier fitted on the outcome",
        )
    return frame.with_columns(pl.Series(column, proba[:, 1]))
