"""The audit's preparation pushed down into the engine that holds the table.

One path for every engine: the table is an Ibis expression (a database table or query named
in the spec, an Ibis table, or a DuckDB relation handed to ``fairscan.audit``), and every step
is compiled to that engine's SQL:

1. ``strip_whitespace``: text attributes trimmed;
2. ``data.filter``: the filter grammar compiled to an Ibis expression (:mod:`filter_sql`);
3. ``discretize``: explicit edges, and quantile edges computed in the engine, exactly (the
   order statistics numpy's ``method="higher"`` gives, picked by ``ROW_NUMBER()``);
4. the recommendation threshold: a prediction column read only through ``prediction >= t``
   is replaced by one value per side of each threshold (the side's smallest value, and its
   largest kept as it is, so that its range in messages stays the data's);
5. the ``GROUP BY`` of the audited columns with the count of data rows of each group.

Only that aggregate comes back (or, for ``data.sample``, the rows of a sample drawn by the
engine: ``TABLESAMPLE BERNOULLI ... REPEATABLE (seed)`` where it has one).

Before the aggregate, the database counts at most ``max_categories + 1`` values of each
categorical attribute. The passes' row counts must agree (PostgreSQL runs them all in one
REPEATABLE READ transaction): a table written while it is read is a data error. Each query is
interruptible (Ctrl-C, SIGTERM) and bounded by ``FAIRSCAN_QUERY_TIMEOUT``.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from fairscan.data.discretize import DEFAULT_QUANTILES, explicit_edges
from fairscan.data.engine_scan import Engine
from fairscan.data.load import first_line
from fairscan.data.plan import Calibration, Cut, ReadPlan
from fairscan.data.quantiles import (
    MAX_VALUE_COUNTS,
    check_numeric,
    edges_from,
    order_statistics,
    ranks,
)
from fairscan.data.stream import WEIGHT_COLUMN, too_many_distinct
from fairscan.data.table import Aggregation, raw_column
from fairscan.errors import DataError
from fairscan.redact import mask_text as mask
from fairscan.spec.models import SampleSpec

_INPUT = "fairscan_input"


class QueryTimeout(Exception):
    """A query ran past :func:`~fairscan.data.netio.query_timeout` and was stopped."""


@contextlib.contextmanager
def _bounded(interrupt: Callable[[], None]) -> Iterator[None]:
    """The block's query stopped by ``interrupt()`` (from a timer thread) once it has run
    :func:`~fairscan.data.netio.query_timeout` seconds: a :class:`QueryTimeout` then."""
    from fairscan.data.netio import query_timeout

    fired = threading.Event()

    def expire() -> None:
        fired.set()
        with contextlib.suppress(Exception):
            interrupt()

    timer = threading.Timer(query_timeout(), expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except Exception:
        if fired.is_set():
            raise QueryTimeout() from None
        raise
    finally:
        timer.cancel()


# SQLite virtual-machine steps between two calls of the progress handler (~1 ms of work)
_SQLITE_STEPS = 100_000


@contextlib.contextmanager
def _sqlite_bounded(con: Any) -> Iterator[None]:
    """SQLite runs the query on this (the main) thread, where no signal handler runs until it
    returns: its progress handler runs Python code every :data:`_SQLITE_STEPS` steps, so that
    Ctrl-C's and SIGTERM's handler runs then (its KeyboardInterrupt stops the query: SQLite's
    "interrupted"), and stops the query past :func:`~fairscan.data.netio.query_timeout`."""
    from fairscan.data.netio import query_timeout

    deadline = time.monotonic() + query_timeout()
    expired: list[bool] = []

    def progress() -> int:
        if time.monotonic() > deadline:
            expired.append(True)
            return 1
        return 0

    con.set_progress_handler(progress, _SQLITE_STEPS)
    try:
        yield
    except Exception:
        if expired:
            raise QueryTimeout() from None
        raise
    finally:
        con.set_progress_handler(None, 0)


def _time_limit(exc: BaseException) -> str | None:
    """The time limit ``exc`` reports a query stopped at, in words; None for another error.
    PostgreSQL's ``statement_timeout`` (set on fairscan's sessions) cancels it on the server."""
    from fairscan.data.netio import query_timeout

    if isinstance(exc, QueryTimeout):
        return f"the {query_timeout():g} s limit"
    for current in _chain(exc):  # (closing the cursor fails next)
        if type(current).__name__ == "QueryCanceled" and "statement timeout" in str(current):
            return "the session's statement_timeout"
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during, newest first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _first_driver_error(exc: BaseException) -> BaseException:
    """The error the database driver (psycopg) raised first, else ``exc``: a failed statement
    inside a transaction is followed by others (closing the cursor, a savepoint's rollback)
    whose messages would hide its cause (e.g. a write refused by the read-only session)."""
    driver = [e for e in _chain(exc) if type(e).__module__.startswith("psycopg")]
    return driver[-1] if driver else exc


def _interrupted(exc: BaseException) -> bool:
    """``exc`` is an engine's own report of a query stopped by an interrupt: DuckDB's
    ``interrupt()`` (called when the waiting thread is interrupted, or by DuckDB itself on
    Ctrl-C), SQLite's progress handler stopped by a signal's KeyboardInterrupt."""
    from fairscan.interrupts import interrupt_of

    if interrupt_of(exc) is not None or type(exc).__name__ == "InterruptException":
        return True
    return str(exc).strip() in ("Query interrupted", "interrupted")


class IbisRelation:
    """A table of an Ibis backend: expressions run where it lives."""

    def __init__(self, table: Any, secrets: Sequence[str] = ()) -> None:
        self._table = table
        self.secrets = tuple(secrets)
        try:
            self.backend: Any = table.get_backend()
            name = self.backend.name
        except Exception:
            self.backend, name = None, None
        self.engine = name
        self.has_nan = name != "sqlite"  # SQLite stores NaN as NULL (and has no isnan)

    def sample(self, expr: Any, fraction: float, seed: int) -> Any:
        """A seeded Bernoulli sample of ``expr``'s rows, drawn by the engine."""
        if self.engine == "sqlite":
            raise DataError(
                "SQLite has no seeded random numbers to draw data.sample with",
                field="data.sample",
                hint="draw the sample in data.sql (e.g. where id % 20 = 3), or audit the "
                "table in DuckDB (connection: file.duckdb after ATTACH 'x.sqlite')",
            )
        if self.engine == "postgres":  # RANDOM() <= fraction after setseed, in this session
            self.backend.raw_sql(f"SELECT setseed({(seed % 2**31) / 2**31!r})").close()
            return expr.sample(fraction)
        return expr.sample(fraction, seed=seed)

    def table(self) -> Any:
        return self._table

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every query of the block reads one snapshot where the engine gives one (PostgreSQL:
        one REPEATABLE READ, READ ONLY transaction; Ibis' own transactions inside it are
        savepoints), so that a concurrent write cannot change the audit's answer."""
        con = getattr(self.backend, "con", None) if self.engine == "postgres" else None
        if con is None or not hasattr(con, "transaction"):
            yield
            return
        import psycopg

        saved = (con.isolation_level, con.read_only)
        con.isolation_level, con.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
        try:
            with con.transaction():
                yield
        finally:
            con.isolation_level, con.read_only = saved

    @property
    def movable(self) -> bool:
        """The queries may run in another thread (which :meth:`interrupt` stops): DuckDB."""
        return self.engine == "duckdb"

    def interrupt(self) -> None:
        if self.engine == "duckdb":
            self.backend.con.interrupt()

    def _limits(self) -> contextlib.AbstractContextManager[None]:
        """Time limit and interruption of a query (PostgreSQL: the session's own
        ``statement_timeout``; other engines: their drivers')."""
        if self.engine == "sqlite":
            return _sqlite_bounded(self.backend.con)
        if self.engine == "duckdb":
            return _bounded(self.backend.con.interrupt)
        return contextlib.nullcontext()

    def execute(self, expr: Any, scan: bool = True) -> pl.DataFrame:
        with self._limits():
            result = expr.to_polars()
        assert isinstance(result, pl.DataFrame)
        return result


class DuckDBRelation:
    """A DuckDB relation (``duckdb.sql(...)``): the expressions are compiled to DuckDB's SQL
    and run by the relation's own connection (``relation.query``)."""

    def __init__(self, relation: Any, engine: Engine | None = None, con: Any = None) -> None:
        import ibis
        from ibis.backends.sql.datatypes import DuckDBType

        self.relation = relation
        self.engine = engine  # a streamed table's connection: progress and interruption
        self.con = con  # a database file's connection: the queries' time limit, interruption
        self.secrets: tuple[str, ...] = ()
        self.has_nan = True

        schema = {
            name: DuckDBType.from_string(str(dtype))
            for name, dtype in zip(relation.columns, relation.types, strict=True)
        }
        self._table = ibis.table(ibis.schema(schema), name=_INPUT)

    def sample(self, expr: Any, fraction: float, seed: int) -> Any:
        """``TABLESAMPLE BERNOULLI ... REPEATABLE (seed)``."""
        return expr.sample(fraction, seed=seed)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """No transaction of its own: the passes compare their row counts."""
        return contextlib.nullcontext()

    def table(self) -> Any:
        return self._table

    def execute(self, expr: Any, scan: bool = True) -> pl.DataFrame:
        """``expr``'s result; ``scan``: it reads the table (a pass the progress display shows),
        not just a count."""
        import ibis

        sql = str(ibis.to_sql(expr, dialect="duckdb"))

        def query() -> pl.DataFrame:
            result = self.relation.query(_INPUT, sql).pl()
            assert isinstance(result, pl.DataFrame)
            return result

        if self.con is not None:
            with _bounded(self.con.interrupt):
                return query()
        return query() if self.engine is None or not scan else self.engine.run(query)

    @property
    def movable(self) -> bool:
        """The queries may run in another thread (which :meth:`interrupt` stops)."""
        return self.con is not None

    def interrupt(self) -> None:
        if self.con is not None:
            self.con.interrupt()


@dataclass(frozen=True)
class PushdownSource:
    """A table whose preparation runs in its engine; what the report names it by."""

    relation: IbisRelation | DuckDBRelation
    location: str  # the report's data path (no secret)
    spec_field: str  # the spec field errors of the engine name (data.table, data.sql, data)
    provenance: dict[str, Any] = field(default_factory=dict)
    sliceable: bool = False
    weight: str | None = WEIGHT_COLUMN
    failed: str = "the database failed"  # how an engine error's message begins
    # a pass reads the table where it lives (not a stream fairscan decodes afresh for each
    # pass): its rows are counted again after the last pass (a table written meanwhile is
    # detected) and max_categories is asked before the aggregate
    extra_passes: bool = True
    # undoes what preparing the table left in the caller's engine (a PySpark temporary view),
    # called once the table is read (:meth:`release`)
    cleanup: Callable[[], None] | None = None

    def columns(self, audited: Sequence[str]) -> list[str]:
        """The table's own columns (its schema: nothing is read); a DataError for an
        ``audited`` column of a type the audit cannot use."""
        return list(_polars_schema(self, self.relation.table(), audited))

    def release(self) -> None:
        """Undo what reading the table left in its engine; never raises (the audit's result
        or error is what the caller needs)."""
        if self.cleanup is not None:
            with contextlib.suppress(Exception):
                self.cleanup()

    def run(
        self, expr: Any, what: str, hint: str | None = None, *, scan: bool = True
    ) -> pl.DataFrame:
        """Run ``expr`` in the engine; its failure a DataError naming the source's field
        (``scan``: a pass over the table that the progress display shows)."""
        try:
            return self.relation.execute(expr, scan)
        except DataError:
            raise
        except Exception as exc:
            from fairscan.interrupts import interrupt_of
            from fairscan.memory_budget import is_resource_failure

            if is_resource_failure(exc):  # the run's out-of-memory message, with the way out
                raise
            limit = _time_limit(exc)
            if limit is not None:
                raise DataError(
                    f"{self.failed} while {what}: the query ran past {limit} and was stopped",
                    field=self.spec_field,
                    hint="audit fewer rows (data.filter, data.sample), or allow longer queries "
                    "with FAIRSCAN_QUERY_TIMEOUT (seconds)",
                ) from None
            if _interrupted(exc):  # an interrupt, never a data error
                raise interrupt_of(exc) or KeyboardInterrupt() from None
            cause = mask(first_line(_first_driver_error(exc)), self.relation.secrets)
            raise DataError(
                f"{self.failed} while {what}: {cause}",
                field=self.spec_field,
                hint=hint
                or "check the table's columns and types (and the query in the database's "
                "own client)",
            ) from None


_UNUSABLE = ("array", "struct", "map", "json", "binary", "uuid", "geospatial", "inet", "macaddr")


def _polars_schema(source: PushdownSource, table: Any, columns: Sequence[str]) -> pl.Schema:
    """The polars types of the audited columns (the filter's checks and messages use them);
    a column of a type the audit cannot use is a DataError naming it."""
    out: dict[str, pl.DataType] = {}
    schema = table.schema()
    for name in schema.names:
        dtype = schema[name]
        if name in columns and any(getattr(dtype, f"is_{k}", lambda: False)() for k in _UNUSABLE):
            raise DataError(
                f"column {name!r} has type {dtype}, which the audit cannot use",
                field=source.spec_field,
                column=name,
                hint="select a plain value in its place (a string, number, boolean or date), "
                "e.g. with data.sql: select ..., cast(col as varchar) as col",
            )
        try:
            out[name] = dtype.to_polars()
        except Exception:
            out[name] = pl.Object()
    return pl.Schema(out)


def _count(source: PushdownSource, table: Any, what: str) -> int:
    import ibis

    frame = source.run(table.aggregate(n=ibis._.count()), what, scan=False)
    return int(frame["n"][0] or 0)


def _present(source: PushdownSource, table: Any, column: str) -> tuple[Any, Any]:
    """The column as float64, and where it holds a value (not null, not NaN)."""
    x = table[column].cast("float64")
    if not source.relation.has_nan:
        return x, x.notnull()
    return x, x.notnull() & ~x.isnan()


def _quantile_edges(
    source: PushdownSource, table: Any, column: str, quantiles: int
) -> tuple[tuple[float, ...], str]:
    """Exact quantile edges computed by the engine: the values at numpy's ``higher`` ranks,
    from the column's value counts (one ``GROUP BY``, any SQL engine) when it has at most
    :data:`~fairscan.data.quantiles.MAX_VALUE_COUNTS` distinct values, else picked by
    ``ROW_NUMBER()`` (a sort); and how they were computed."""
    x, ok = _present(source, table, column)
    values = table.filter(ok).select(v=x)
    counts = source.run(
        values.group_by("v").aggregate(n=values.count()).limit(MAX_VALUE_COUNTS + 1),
        f"counting the values of {column!r}",
    )
    if counts.height <= MAX_VALUE_COUNTS:
        n = int(counts["n"].sum()) if counts.height else 0
        if n == 0:
            return (), "value counts"
        counts = counts.with_columns(pl.col("n").cast(pl.Int64))
        return edges_from(order_statistics(counts, ranks(n, quantiles))), "value counts"
    return _ranked_edges(source, values, column, quantiles), "ROW_NUMBER"


def _ranked_edges(source: PushdownSource, values: Any, column: str, quantiles: int) -> tuple:
    """The order statistics at numpy's ``higher`` ranks, picked by ``ROW_NUMBER()``."""
    import ibis

    n = _count(source, values, f"counting the values of {column!r}")
    if n == 0:
        return ()
    wanted = sorted({int(r) for r in ranks(n, quantiles)})
    ranked = values.mutate(r=ibis.row_number().over(order_by=values.v))
    picked = source.run(
        ranked.filter(ranked.r.isin(wanted)).select("r", "v"),
        f"computing the quantiles of {column!r}",
        hint=f"exact quantiles need ROW_NUMBER() over the column; give explicit edges instead: "
        f"discretize: {{{column}: {{edges: [...]}}}}",
    )
    by_rank = dict(zip(picked["r"].to_list(), picked["v"].to_list(), strict=True))
    return edges_from(np.array([by_rank[int(r)] for r in ranks(n, quantiles)], dtype=float))


def _bin_codes(source: PushdownSource, table: Any, column: str, edges: Sequence[float]) -> Any:
    """Bin codes as :func:`fairscan.data.stream.bin_codes` computes them, in the engine. An
    integer column is compared with the edges rounded up (the same codes, no cast a row), and
    a null propagates through the sum of comparisons (no NaN to tell apart)."""
    import ibis

    inner = list(edges[1:-1])
    raw = table[column]
    code = ibis.literal(0, type="int32")
    if raw.type().is_integer() and all(abs(e) < 2**62 for e in inner):
        for e in inner:
            code = code + (raw >= math.ceil(e)).cast("int32")
        return code if inner else ibis.ifelse(raw.notnull(), code, ibis.null("int32"))
    x, ok = _present(source, table, column)
    for e in inner:
        code = code + (x >= e).cast("int32")
    return ibis.ifelse(ok, code, ibis.null("int32")).cast("int32")


def _side_column(column: str) -> str:
    return f"__fairscan_side_{column}__"


def _valid(source: PushdownSource, table: Any, column: str, cut: Cut) -> tuple[Any, Any]:
    """The column as float64, and where its value is one the checks accept (not null, NaN or
    infinite; in [0, 1] for a probability)."""
    x, valid = _present(source, table, column)
    if source.relation.has_nan:
        valid = valid & ~x.isinf()
    if cut.probability:
        valid = valid & (x >= 0) & (x <= 1)
    return x, valid


def _threshold_keys(source: PushdownSource, table: Any, column: str, cut: Cut) -> dict[str, Any]:
    """Group keys that read ``column`` only through its thresholds: the side of the
    thresholds each valid value is on (the value itself null then); invalid values (null,
    NaN, infinite, a probability outside [0, 1]) stay as they are, for the checks."""
    import ibis

    x, valid = _valid(source, table, column, cut)
    side = ibis.literal(0, type="int32")
    for t in cut.thresholds:
        side = side + ((x >= t) if cut.rule == "ge" else (x > t)).cast("int32")
    return {
        column: ibis.ifelse(valid, ibis.null("float64"), x),
        _side_column(column): ibis.ifelse(valid, side, ibis.null("int32")),
    }


def _representative(cut: Cut, side: int) -> float:
    """A value on ``side`` of the thresholds (side k: between the k-th and the next)."""
    if cut.rule == "ge":  # side 0: x < t1; side k: t_k <= x < t_k+1
        return (
            float(np.nextafter(cut.thresholds[0], -np.inf))
            if side == 0
            else cut.thresholds[side - 1]
        )
    # side 0: x <= t1; side k: t_k < x <= t_k+1
    return cut.thresholds[0] if side == 0 else float(np.nextafter(cut.thresholds[side - 1], np.inf))


def _one_sided(cut: Cut, sides: Sequence[int]) -> bool:
    """Some threshold has every valid value on one side (its recommendation is constant:
    the warning then quotes the column's minimum and maximum)."""
    return any(
        all(s < k for s in sides) or all(s >= k for s in sides)
        for k in range(1, len(cut.thresholds) + 1)
    )


def _with_sides(
    source: PushdownSource,
    filtered: Any,
    frame: pl.DataFrame,
    column: str,
    cut: Cut,
    keys: Sequence[str],
) -> pl.DataFrame:
    """The side of each valid value replaced by a value on that side; where a threshold's
    recommendation is constant, the smallest and largest valid values (one row each, taken
    from the lowest and highest sides) so that the warning quotes the data's range."""
    side = pl.col(_side_column(column))
    sides = sorted(int(v) for v in frame[_side_column(column)].drop_nulls().unique())
    mapping = {s: _representative(cut, s) for s in sides}
    top: float | None = None
    if sides and _one_sided(cut, sides):  # rare: one extra pass for the data's values
        _, valid = _valid(source, filtered, column, cut)
        keyed = filtered.filter(valid).mutate(
            side=_threshold_keys(source, filtered, column, cut)[_side_column(column)]
        )
        ranges = source.run(
            keyed.group_by("side").aggregate(
                lo=keyed[column].cast("float64").min(), hi=keyed[column].cast("float64").max()
            ),
            f"reading the range of {column!r}",
        )
        mapping = {int(s): float(lo) for s, lo in zip(ranges["side"], ranges["lo"], strict=True)}
        top = float(ranges["hi"].max())  # type: ignore[arg-type]
    value = side.replace_strict(mapping, default=None, return_dtype=pl.Float64)
    frame = frame.with_columns(
        pl.when(side.is_not_null()).then(value).otherwise(column).alias(column)
    )
    if top is not None:
        frame = _move_one_row(frame, side == sides[-1], column, top)
    return frame.drop(_side_column(column)).group_by(list(keys)).agg(pl.col(WEIGHT_COLUMN).sum())


def _move_one_row(frame: pl.DataFrame, where: pl.Expr, column: str, value: float) -> pl.DataFrame:
    """One data row of the first group where ``where`` holds gets ``value`` in ``column``."""
    index = frame.with_row_index("__i__").filter(where)["__i__"]
    if index.len() == 0:
        return frame
    row = frame[int(index[0])]
    moved = row.with_columns(
        pl.lit(value, pl.Float64).alias(column), pl.lit(1, pl.Int64).alias(WEIGHT_COLUMN)
    )
    rest = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == int(index[0]))
        .then(pl.col(WEIGHT_COLUMN) - 1)
        .otherwise(pl.col(WEIGHT_COLUMN))
        .alias(WEIGHT_COLUMN)
    )
    return pl.concat([rest, moved.select(rest.columns)]).filter(pl.col(WEIGHT_COLUMN) > 0)


def _bin_column(column: str) -> str:
    return f"__fairscan_pbin_{column}__"


def _psum_column(column: str) -> str:
    return f"__fairscan_psum_{column}__"


def _clipped(x: Any) -> Any:
    """The probability as the scans use it: clipped to [1e-6, 1 - 1e-6] (engine.mdss)."""
    import ibis

    from fairscan.engine.mdss import EPSILON

    return ibis.greatest(ibis.least(x, 1.0 - EPSILON), EPSILON)


def _probability_keys(source: PushdownSource, table: Any, column: str, bins: int) -> dict:
    """Group keys that read a probability column by bins: the bin of each valid value (the
    value itself null then) and, to sum, the clipped value; invalid values (null, NaN,
    outside [0, 1]) stay as they are, for the checks."""
    import ibis

    x, valid = _valid(source, table, column, Cut((), "ge", True))
    p = _clipped(x)
    index = ibis.least((p * bins).floor().cast("int64"), bins - 1).cast("int32")
    return {
        column: ibis.ifelse(valid, ibis.null("float64"), x),
        _bin_column(column): ibis.ifelse(valid, index, ibis.null("int32")),
        _psum_column(column): ibis.ifelse(valid, p, ibis.null("float64")),
    }


def _log1p(x: Any) -> Any:
    """log(1 + x) to a few ulps with only LN (Goldberg's trick: engines lack LOG1P)."""
    import ibis

    w = 1.0 + x
    return ibis.ifelse(w == 1.0, x, w.ln() * x / (w - 1.0))


def _node_sums(p: Any, direction: int) -> dict[str, Any]:
    """sum log(1 - p + p e^u) at each expansion node u (engine.expectation_cells.nodes), as
    the kernel's fit_coefficients evaluates it per row."""
    import ibis

    from fairscan.engine.expectation_cells import nodes

    out: dict[str, Any] = {}
    tag = "p" if direction > 0 else "n"
    for k, u in enumerate(nodes(direction)):
        tm1, eu = float(np.expm1(u)), float(np.exp(u))
        term = _log1p(p * tm1)
        if tm1 < -0.5:  # p (e^u - 1) < -1/2 for p near 1: (1 - p) + p e^u has no cancellation
            term = ibis.ifelse(p * tm1 < -0.5, ((1.0 - p) + p * eu).ln(), term)
        out[f"v{tag}{k}"] = term.sum()
    return out


def profile_sums(
    source: PushdownSource,
    table: Any,
    column: str,
    profile: Sequence[str],
    calibration: Calibration,
) -> pl.DataFrame:
    """One ``GROUP BY`` of the attribute profile over the rows with a valid probability:
    rows, sum p, the cumulants and sum log(1 - p + p e^u) at every expansion node of each
    direction (p clipped as the scans clip it)."""
    x, valid = _valid(source, table, column, Cut((), "ge", True))
    rows = table.filter(valid).mutate(__p__=_clipped(x))
    p = rows["__p__"]
    import ibis

    from fairscan.engine.mdss import EPSILON

    changed = (rows[column].cast("float64") < EPSILON) | (
        rows[column].cast("float64") > 1 - EPSILON
    )
    sums: dict[str, Any] = {
        "n": rows.count(),
        "clipped": ibis.ifelse(changed, 1, 0).sum(),  # PostgreSQL casts no boolean to bigint
        "e": p.sum(),
        "k2": (p * (1.0 - p)).sum(),
        "k3": (p * (1.0 - p) * (1.0 - 2.0 * p)).sum(),
    }
    for direction in calibration.directions:
        sums.update(_node_sums(p, direction))
    return source.run(
        rows.group_by(list(profile)).aggregate(**sums),
        f"summing the probabilities of {column!r} per profile",
    )


def _attach_sums(
    frame: pl.DataFrame,
    sums: pl.DataFrame,
    profile: Sequence[str],
    calibration: Calibration,
) -> tuple[pl.DataFrame, Any]:
    """``frame`` with the summed profile of each row (column ``__fairscan_profile__``), and
    the :class:`ProfileSums`; None for the sums when a row's profile has none."""
    from fairscan.engine.expectation_cells import ProfileSums

    index = sums.select(*profile).with_row_index("__fairscan_profile__")
    for name in profile:
        index = index.with_columns(pl.col(name).cast(frame.schema[name]))
    joined = frame.join(index, on=list(profile), how="left", nulls_equal=True)
    if joined["__fairscan_profile__"].null_count():
        return joined.with_columns(pl.lit(None).alias("__fairscan_profile__")), None
    values = {}
    for direction in calibration.directions:
        tag = "p" if direction > 0 else "n"
        names = [c for c in sums.columns if c.startswith(f"v{tag}")]
        names.sort(key=lambda c: int(c[2:]))
        values[direction] = sums.select(names).to_numpy().astype(np.float64)
    return joined, ProfileSums(
        weight=sums["n"].to_numpy().astype(np.float64),
        expected=sums["e"].to_numpy().astype(np.float64),
        k2=sums["k2"].to_numpy().astype(np.float64),
        k3=sums["k3"].to_numpy().astype(np.float64),
        values=values,
        clipped=int(sums["clipped"].sum() or 0),
    )


def _with_bin_means(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Each bin's key replaced by its rows' mean (clipped) probability."""
    mean = pl.col(_psum_column(column)) / pl.col(WEIGHT_COLUMN)
    return frame.with_columns(
        pl.when(pl.col(_bin_column(column)).is_not_null())
        .then(mean)
        .otherwise(pl.col(column))
        .alias(column)
    ).drop(_bin_column(column), _psum_column(column))


@dataclass(frozen=True)
class _Counts:
    """What the first pass over the table counts."""

    raw: int  # the table's rows
    kept: int  # the rows the filter keeps (all without a filter)


@dataclass
class _Pass:
    """One preparation in the engine: the plan, the table as the steps so far left it, and the
    steps that ran (the report's provenance lists them)."""

    source: PushdownSource
    plan: ReadPlan
    schema: pl.Schema
    present: list[str]  # the audited columns the table has
    table: Any  # the source's table (text attributes stripped where that comes first)
    filtered: Any = None  # the rows data.filter keeps
    counts: _Counts | None = None
    steps: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        assert self.counts is not None
        return self.counts.kept


def prepared_table(
    source: PushdownSource, plan: ReadPlan, max_rows: int | None
) -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
    """(table, its aggregation or None for a sample, (data rows, note) of a sample), the
    ``plan`` done in the source's engine; the provenance's ``pushdown`` lists the steps.

    Probability columns of ``plan.calibrations`` come back in bins (each bin's mean) with
    their exact per-profile sums in the aggregation's ``profile_sums``; ``max_categories`` is
    checked by the database (a bounded count of each categorical attribute's values) before
    the aggregate is built; a binned attribute of ``plan.by_value`` comes back by value too.

    The passes' row counts must agree (the first pass's rows are those the aggregate adds up,
    and the table is counted again after the last pass): a table written while it is read is
    a DataError, not a report that mixes two versions of it."""
    step = _started(source, plan)
    stripped = _stripped_attributes(step)
    deferred = _strip_after_grouping(stripped, plan.filter, plan.sample, plan.calibrations)
    if stripped and not deferred:
        step.table = step.table.mutate(**{a: step.table[a].strip() for a in stripped})
        step.steps.append("strip_whitespace")
    _filtered(step)
    checked = [] if plan.sample is not None or not source.extra_passes else plan.attributes
    categorical = _categorical(step.filtered, step.schema, checked, plan.discretize, stripped)
    _check_categories(source, step.filtered, categorical, plan.attributes, plan.max_categories)
    if plan.sample is not None:
        return _sample_of(step, plan.sample)
    frame, aggregation = _aggregate_of(step, deferred, max_rows)
    return frame, aggregation, None


def _started(source: PushdownSource, plan: ReadPlan) -> _Pass:
    """The pass over the table's audited columns (a DataError when it has none of them)."""
    table = source.relation.table()
    schema = _polars_schema(source, table, plan.columns)
    present = [c for c in plan.columns if c in schema]
    if not present:  # nothing to group by (the run checks the columns first: a direct caller)
        raise DataError(
            f"the table has none of the audited columns ({', '.join(map(repr, plan.columns))})",
            field=source.spec_field,
            hint=f"the table's columns are: {', '.join(map(repr, list(schema)[:20]))}",
        )
    return _Pass(source, plan, schema, present, table)


def _stripped_attributes(step: _Pass) -> list[str]:
    """The text attributes whose surrounding whitespace is stripped (data.strip_whitespace)."""
    if not step.plan.strip_whitespace:
        return []
    return [a for a in step.plan.attributes if a in step.present and step.schema[a] == pl.String]


def _filtered(step: _Pass) -> None:
    """The first pass (the rows, and those data.filter keeps) and the filtered table."""
    from fairscan.data.filter_sql import filter_ibis

    plan = step.plan
    keep = filter_ibis(plan.filter, step.table, step.schema) if plan.filter is not None else None
    step.counts = _first_pass(step.source, step.table, keep)
    step.filtered = step.table
    if keep is not None:
        step.filtered = step.table.filter(keep)
        step.steps.append("filter")


def _sample_of(step: _Pass, sample: SampleSpec) -> tuple[pl.DataFrame, None, tuple[int, str]]:
    """The rows of a sample the engine draws, and the note the report carries."""
    assert step.counts is not None
    frame = _sampled(step.source, step.filtered, step.present, sample, step.kept)
    _check_unchanged(step.source, step.table, step.counts.raw)
    step.steps.append("sample")
    step.source.provenance.update(_provenance(step.steps, step.counts.raw))
    note = (
        f"audited a sample of {frame.height:,} of the {step.kept:,} rows the filter keeps, "
        f"drawn in the database (data.sample, seed {sample.seed})"
    )
    return frame, None, (step.counts.raw, note)


@dataclass
class _Keys:
    """The group keys computed in the engine besides the audited columns themselves."""

    binned: dict[str, tuple[float, ...]] = field(default_factory=dict)  # attribute -> edges
    exprs: dict[str, Any] = field(default_factory=dict)  # column -> its expression
    raw: dict[str, str] = field(default_factory=dict)  # binned attribute -> its values' column
    sided: list[str] = field(default_factory=list)  # columns read through thresholds
    calibrated: list[str] = field(default_factory=list)  # probabilities summed per profile


def _keys(step: _Pass) -> _Keys:
    """Bins, values kept beside their bins, threshold sides and probability bins."""
    plan, schema, present = step.plan, step.schema, step.present
    keys = _Keys()
    _bins(step, keys)
    keys.raw = {name: raw_column(name) for name in plan.by_value if name in keys.binned}
    keys.exprs.update({column: step.filtered[name] for name, column in keys.raw.items()})
    keys.sided = [
        n for n in plan.cuts if n in present and n not in keys.exprs and schema[n].is_numeric()
    ]
    for name in keys.sided:
        keys.exprs.update(_threshold_keys(step.source, step.filtered, name, plan.cuts[name]))
        step.steps.append(f"threshold on {name!r}")
    keys.calibrated = [
        n
        for n in plan.calibrations
        if n in present
        and n not in keys.exprs
        and n not in plan.attributes
        and schema[n].is_numeric()
    ]
    for name in keys.calibrated:
        bins = plan.calibrations[name].bins
        keys.exprs.update(_probability_keys(step.source, step.filtered, name, bins))
    return keys


def _bins(step: _Pass, keys: _Keys) -> None:
    """The edges of each discretised attribute (quantiles computed by the engine, exactly) and
    its bin codes as a group key."""
    methods: set[str] = set()
    for name in step.plan.attributes:
        rule = step.plan.discretize.get(name)
        if rule is None or name not in step.present:
            continue
        check_numeric(step.schema, name)
        if rule.edges is not None:
            keys.binned[name] = explicit_edges(rule.edges)
        else:
            quantiles = DEFAULT_QUANTILES if rule.quantiles is None else rule.quantiles
            keys.binned[name], method = _quantile_edges(step.source, step.filtered, name, quantiles)
            methods.add(method)
        keys.exprs[name] = _bin_codes(step.source, step.filtered, name, keys.binned[name])
    if keys.binned:
        how = " and ".join(sorted(methods))
        step.steps.append(f"discretize (quantiles exact, by {how})" if how else "discretize")


def _aggregate_of(
    step: _Pass, deferred: list[str], max_rows: int | None
) -> tuple[pl.DataFrame, Aggregation]:
    """The distinct rows of the audited columns with their counts, as the scans read them."""
    assert step.counts is not None
    keys = _keys(step)
    rows = [*step.present, *keys.raw.values()]  # the columns the aggregate is sorted by
    group_keys = [
        *rows,
        *(_side_column(n) for n in keys.sided),
        *(_bin_column(n) for n in keys.calibrated),
    ]
    sums = [_psum_column(n) for n in keys.calibrated]
    frame = _grouped(step, keys, group_keys, sums, max_rows)
    if deferred:
        frame = _stripped(frame, deferred, group_keys, [WEIGHT_COLUMN, *sums])
        step.steps.append("strip_whitespace (of the distinct values)")
    for name in keys.calibrated:
        frame = _with_bin_means(frame, name)
    for i, name in enumerate(keys.sided):
        later = [*rows, *(_side_column(n) for n in keys.sided[i + 1 :])]
        frame = _with_sides(step.source, step.filtered, frame, name, step.plan.cuts[name], later)
    frame = frame.with_columns(pl.col(WEIGHT_COLUMN).cast(pl.Int64))
    frame = frame.with_columns(pl.col(name).cast(pl.Int32) for name in keys.binned)
    frame, pushed = _with_profile_sums(step, keys, frame, rows)
    frame = frame.sort(rows, nulls_last=True)
    _check_rows(step, frame)
    _check_unchanged(step.source, step.table, step.counts.raw)
    step.source.provenance.update(_provenance(step.steps, step.counts.raw, frame))
    return frame, Aggregation(WEIGHT_COLUMN, step.counts.raw, keys.binned, pushed, keys.raw)


def _grouped(
    step: _Pass, keys: _Keys, group_keys: list[str], sums: list[str], max_rows: int | None
) -> pl.DataFrame:
    """The GROUP BY in the engine, its rows checked against the first pass's."""
    grouped = step.filtered.mutate(**keys.exprs) if keys.exprs else step.filtered
    summed = {column: grouped[column].sum() for column in sums}
    aggregate = grouped.group_by(group_keys).aggregate(**{WEIGHT_COLUMN: grouped.count()}, **summed)
    if max_rows is not None:
        aggregate = aggregate.limit(max_rows + 1)
    frame = step.source.run(aggregate, "aggregating the audited columns")
    step.steps.append("group by")
    if max_rows is not None and frame.height > max_rows:
        raise too_many_distinct(frame, max_rows)
    aggregated = int(frame[WEIGHT_COLUMN].sum()) if frame.height else 0
    if aggregated != step.kept:
        raise _changed(step.source, step.kept, aggregated, "the aggregation")
    return frame.with_columns(pl.col(WEIGHT_COLUMN).cast(pl.Int64))


def _with_profile_sums(
    step: _Pass, keys: _Keys, frame: pl.DataFrame, rows: list[str]
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The calibrated probabilities' exact per-profile sums (one GROUP BY each)."""
    profile = [a for a in step.plan.attributes if a in step.present]
    binned_keys = {a: keys.exprs[a] for a in keys.binned}  # the profiles as the sums group them
    pushed: dict[str, Any] = {}
    for name in keys.calibrated:
        calibration = step.plan.calibrations[name]
        with_binned = step.filtered.mutate(**binned_keys) if binned_keys else step.filtered
        sums_frame = profile_sums(step.source, with_binned, name, profile, calibration)
        sums_frame = sums_frame.with_columns(pl.col(a).cast(pl.Int32) for a in keys.binned)
        frame, summed = _attach_sums(frame, sums_frame, profile, calibration)
        frame = frame.sort(rows, nulls_last=True)
        rows_profile = frame["__fairscan_profile__"]
        frame = frame.drop("__fairscan_profile__")
        if summed is not None:
            pushed[name] = (rows_profile.to_numpy().astype(np.int64), summed)
            step.steps.append(
                f"probabilities of {name!r}: per-profile sums at the expansion nodes, "
                f"{calibration.bins} bins per profile and outcome"
            )
    return frame, pushed


def _check_rows(step: _Pass, frame: pl.DataFrame) -> None:
    """A DataError when no row is left (the filter keeps none, or the table has none)."""
    assert step.counts is not None
    if frame.height and int(frame[WEIGHT_COLUMN].sum()):
        return
    if step.plan.filter is not None:
        raise DataError(
            f"the filter keeps 0 of {step.counts.raw} rows",
            field="data.filter",
            hint="check the filter's values (string comparisons are case-sensitive)",
        )
    raise DataError(
        "no data rows", field=step.source.spec_field, hint="point the source at a table with rows"
    )


def _categorical(
    table: Any,
    schema: pl.Schema,
    attributes: Sequence[str],
    discretize: Mapping[str, Any],
    stripped: Sequence[str],
) -> dict[str, tuple[Any, bool]]:
    """The attributes the audit reads as categories (text, integers, dates), each as the
    expression whose distinct values it counts (``stripped``: text attributes counted
    stripped, as they are audited) and whether it is an integer."""
    out: dict[str, tuple[Any, bool]] = {}
    for name in attributes:
        dtype = schema.get(name)
        if name in discretize or dtype is None:
            continue
        if dtype == pl.String:
            out[name] = (table[name].strip() if name in stripped else table[name], False)
        elif dtype.is_integer() or (dtype.is_temporal() and dtype != pl.Duration):
            out[name] = (table[name], dtype.is_integer())
    return out


def _first_pass(source: PushdownSource, table: Any, keep: Any) -> _Counts:
    """The table's rows and those ``keep`` (the filter's predicate, None: all) keeps."""
    import ibis

    metrics: dict[str, Any] = {"n": ibis._.count()}
    if keep is not None:
        metrics["kept"] = table.count(where=keep)
    frame = source.run(table.aggregate(**metrics), "counting the rows", scan=keep is not None)
    row = frame.row(0, named=True)
    raw = int(row["n"] or 0)
    return _Counts(raw, int(row.get("kept", raw) or 0))


def _check_categories(
    source: PushdownSource,
    filtered: Any,
    categorical: Mapping[str, tuple[Any, bool]],
    attributes: Sequence[str],
    max_categories: int | None,
) -> None:
    """The in-memory check of ``max_categories`` (:mod:`fairscan.data.prepare`), asked of
    the database before the aggregate is built, so that an attribute of millions of values
    fails after one pass rather than after a GROUP BY of millions of groups. One query counts
    every attribute's distinct values at once (``COUNT(DISTINCT ...)``): a bounded ``DISTINCT
    ... LIMIT`` per attribute was a whole pass each in DuckDB (2.3 s per attribute on the
    200M-row benchmark dataset, six of them)."""
    from fairscan.data.prepare import too_many_categories

    if max_categories is None or not categorical:
        return
    metrics = {f"n{i}": expr.nunique() for i, (expr, _) in enumerate(categorical.values())}
    what = f"counting the distinct values of {', '.join(repr(n) for n in categorical)}"
    counts = source.run(filtered.aggregate(**metrics), what, scan=False).row(0)
    issues = [
        too_many_categories(
            name, None, max_categories, f"attributes[{attributes.index(name)}]", integer
        )
        for (name, (_, integer)), count in zip(categorical.items(), counts, strict=True)
        if int(count or 0) > max_categories
    ]
    if issues:
        raise DataError(issues=issues)


def _changed(source: PushdownSource, first: int, later: int, what: str) -> DataError:
    return DataError(
        f"the table changed while it was read: {first:,} rows in the first pass, {later:,} in "
        f"{what}; the report would mix two versions of it",
        field=source.spec_field,
        hint="audit a snapshot of the table (a copy, or a view of a fixed version), or retry "
        "once the writes are done",
    )


def _check_unchanged(source: PushdownSource, table: Any, raw: int) -> None:
    """The table's rows counted again after the last pass: the same as in the first (not
    for a stream fairscan decodes itself, where a count is a whole pass)."""
    if not source.extra_passes:
        return
    now = _count(source, table, "counting the rows again")
    if now != raw:
        raise _changed(source, raw, now, "the last")


def _strip_after_grouping(
    stripped: Sequence[str],
    filter: str | None,
    sample: SampleSpec | None,
    calibrations: Mapping[str, Calibration] | None,
) -> list[str]:
    """The text attributes whose whitespace is stripped from the aggregate's distinct values
    instead of every row (the same groups once merged, at a fraction of the cost): all of
    them unless the filter reads one, a sample needs the rows, or profile sums group by them."""
    if not stripped or sample is not None or calibrations:
        return []
    if filter is not None:
        from fairscan.data.filters import filter_columns, parse_filter

        if set(filter_columns(parse_filter(filter))) & set(stripped):
            return []
    return list(stripped)


def _stripped(
    frame: pl.DataFrame, columns: Sequence[str], keys: Sequence[str], sums: Sequence[str]
) -> pl.DataFrame:
    """``columns`` stripped of surrounding whitespace (as :mod:`fairscan.data.load` strips
    them), the groups that become equal merged."""
    # an ENUM comes back as a categorical: its values stripped as text
    frame = frame.with_columns(pl.col(c).cast(pl.String).str.strip_chars() for c in columns)
    return frame.group_by(list(keys)).agg(pl.col(c).sum() for c in sums)


def _sampled(
    source: PushdownSource,
    filtered: Any,
    present: Sequence[str],
    sample: SampleSpec,
    n_filtered: int,
) -> pl.DataFrame:
    """A Bernoulli sample drawn by the engine (seeded) from the ``n_filtered`` rows the
    filter keeps, cut to ``sample.rows`` rows."""
    if n_filtered == 0:
        raise DataError(
            "the filter keeps 0 rows",
            field="data.filter",
            hint="check the filter's values (string comparisons are case-sensitive)",
        )
    selected = filtered.select(*present)
    if sample.rows < n_filtered:
        # a little more than asked, so that the cut to `rows` rarely leaves fewer
        fraction = min(1.0, sample.rows / n_filtered * 1.1 + 100 / n_filtered)
        selected = source.relation.sample(selected, fraction, sample.seed).limit(sample.rows)
    return source.run(selected, "drawing the sample")


def _provenance(
    steps: Sequence[str], n_raw: int, frame: pl.DataFrame | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": n_raw, "pushdown": list(steps)}
    if frame is not None:
        out["aggregated_rows"] = frame.height
    return out


def pushed_down(
    source: PushdownSource, plan: ReadPlan
) -> tuple[pl.DataFrame, Aggregation | None, tuple[int, str] | None]:
    """:func:`prepared_table` in one snapshot of the table where the engine gives one, the
    aggregate bounded by the memory available."""
    from fairscan.data.load import held_rows

    with source.relation.snapshot():  # one snapshot for every pass, where there is one
        return prepared_table(source, plan, held_rows(len(plan.columns)))
