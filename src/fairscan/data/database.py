"""A table that lives in a database or warehouse, named by ``data.connection`` and
``data.table`` or ``data.sql``.

Connections go through Ibis (the optional extra ``fairscan[sql]``), which compiles one
expression to DuckDB, PostgreSQL, SQLite, Snowflake, BigQuery, Trino, Spark and more; the
audit's whole preparation is compiled to the engine's SQL by :mod:`fairscan.data.pushdown`.

Secrets come from the environment only: ``${NAME}`` in the URL is replaced by the variable's
value when connecting (or the driver reads its own variables, e.g. ``PGPASSWORD``). A password
written into the URL is a spec error (:func:`fairscan.spec.models.DataSpec`). The URL the
report, the logs and every message show has its user and password removed
(:func:`redacted_url`), and error messages of the driver have the secret values masked.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fairscan.data.load import first_line, mask
from fairscan.errors import DataError

CONNECTION_FIELD = "data.connection"
TABLE_FIELD = "data.table"
SQL_FIELD = "data.sql"
# seconds a server has to answer the connection attempt (passed to drivers that take one)
CONNECT_TIMEOUT_S = 5
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
# a database file named as the connection, without a URL scheme
_FILE_ENGINES = {
    ".duckdb": "duckdb",
    ".ddb": "duckdb",
    ".db": "sqlite",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
}
# query parameters that carry credentials (dropped from the URL the report shows)
_SECRET_PARAMS = ("password", "passwd", "pwd", "token", "secret", "key", "credentials")
# drivers that take a connect timeout, and its keyword
_TIMEOUT_KEYWORD = {"postgres": "connect_timeout", "postgresql": "connect_timeout"}
SQL_SHOWN = 200  # characters of data.sql a message quotes


def secret_values(url: str) -> list[str]:
    """The values of the environment variables a URL names (masked in any message)."""
    return [os.environ[name] for name in _ENV.findall(url) if os.environ.get(name)]


def redacted_url(url: str) -> str:
    """The connection URL without user, password and credential parameters."""
    match = _SCHEME.match(url)
    if not match:
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return f"{match.group(1)}://(unparsable URL)"
    if ":" in host:
        host = f"[{host}]"
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query) if k.lower() not in _SECRET_PARAMS]
    )
    return urlunsplit((parts.scheme, host + port, parts.path, query, ""))


def interpolated(url: str) -> str:
    """``${NAME}`` replaced by the environment variable's value; a DataError when unset."""
    missing = [name for name in _ENV.findall(url) if name not in os.environ]
    if missing:
        raise DataError(
            f"environment variable {missing[0]} (named in the connection URL) is not set",
            field=CONNECTION_FIELD,
            hint=f"export {missing[0]}=... before the audit; secrets come from the environment only",
        )
    return _ENV.sub(lambda m: os.environ[m.group(1)], url)


@dataclass(frozen=True)
class DatabaseTable:
    """A table or query named in the spec, resolved (nothing connected yet)."""

    connection: str  # as written (with ${NAME} placeholders, never a secret)
    engine: str  # duckdb | sqlite | postgres | ... (the URL scheme)
    target: str  # the database file (duckdb, sqlite) or the URL to connect to
    table: str | None = None
    sql: str | None = None
    # DuckDB settings from the URL's query (duckdb:///f.duckdb?memory_limit=512MB&threads=2)
    options: tuple[tuple[str, str], ...] = ()

    @property
    def location(self) -> str:
        """What the report names as the data: the URL without credentials and the table, or
        the query's hash."""
        where = (
            self.target if self.engine in ("duckdb", "sqlite") else redacted_url(self.connection)
        )
        if self.table is not None:
            return f"{where}#{self.table}"
        return f"{where}#sql:{self.sql_sha256[:16]}"

    @property
    def sql_sha256(self) -> str:
        return hashlib.sha256((self.sql or "").encode()).hexdigest()

    @property
    def field(self) -> str:
        return TABLE_FIELD if self.table is not None else SQL_FIELD

    def describe(self) -> dict[str, Any]:
        """The provenance of the source (no secret)."""
        out: dict[str, Any] = {
            "kind": "database",
            "engine": self.engine,
            "connection": self.location.split("#", 1)[0],
        }
        if self.table is not None:
            out["table"] = self.table
        else:
            out["sql"] = self.sql
            out["sql_sha256"] = self.sql_sha256
        return out


def database_table(
    connection: str, table: str | None, sql: str | None, base: Path
) -> DatabaseTable:
    """The source ``data.connection`` names; a database file relative to ``base`` (the spec's
    folder)."""
    match = _SCHEME.match(connection)
    if match is None:
        suffix = Path(connection).suffix.lower()
        engine = _FILE_ENGINES.get(suffix)
        if engine is None:
            raise DataError(
                f"data.connection {connection!r} is neither a URL nor a database file",
                field=CONNECTION_FIELD,
                hint="write a URL such as postgresql://host:5432/db or duckdb:///path/file.duckdb, "
                f"or name a database file ({', '.join(_FILE_ENGINES)})",
            )
        return DatabaseTable(connection, engine, str((base / connection).resolve()), table, sql)
    scheme = match.group(1).lower()
    engine = {"postgresql": "postgres", "sqlite3": "sqlite"}.get(scheme, scheme)
    if engine in ("duckdb", "sqlite"):
        # duckdb:///abs/file.duckdb (absolute), duckdb://file.duckdb (the spec's folder)
        path, _, query = connection[match.end() :].partition("?")
        options = tuple(parse_qsl(query)) if engine == "duckdb" else ()
        if path in ("", ":memory:"):
            target = ":memory:"
        else:
            target = str((base / path).resolve()) if not path.startswith("/") else path
        return DatabaseTable(connection, engine, target, table, sql, options)
    return DatabaseTable(connection, engine, connection, table, sql)


def connect(source: DatabaseTable) -> Any:
    """An Ibis backend connected to the source's database; every failure a DataError on
    ``data.connection`` that shows neither user nor password."""
    try:
        import ibis
    except ImportError as exc:
        raise DataError(
            "auditing a database table needs Ibis",
            field=CONNECTION_FIELD,
            hint="pip install 'fairscan[sql]' (and the engine's driver, e.g. "
            "'ibis-framework[postgres]')",
        ) from exc
    secrets = secret_values(source.connection)
    shown = source.location.split("#", 1)[0]
    try:
        if source.engine in ("duckdb", "sqlite"):
            if source.target != ":memory:" and not Path(source.target).is_file():
                raise DataError(
                    f"database file {source.target!r} does not exist",
                    field=CONNECTION_FIELD,
                    hint="check data.connection; a relative path is resolved against the spec "
                    "file's folder",
                )
            if source.engine == "duckdb":
                # no progress bar on the terminal; the URL's settings (memory_limit, threads),
                # else the memory limit and threads streamed datasets get (engine_scan)
                from fairscan.data.engine_scan import engine_threads, memory_limit

                settings = {
                    "memory_limit": f"{memory_limit() // 2**20}MB",
                    "threads": engine_threads(),
                    **dict(source.options),
                }
                read_only = source.target != ":memory:"
                backend = ibis.duckdb.connect(source.target, read_only=read_only, **settings)
                backend.raw_sql("SET enable_progress_bar = false")
                return backend
            return ibis.sqlite.connect(source.target)
        url = interpolated(source.target)
        keyword = _TIMEOUT_KEYWORD.get(source.engine)
        if keyword is not None and keyword not in url:
            return ibis.connect(url, **{keyword: CONNECT_TIMEOUT_S})
        return ibis.connect(url)
    except DataError:
        raise
    except Exception as exc:
        raise _connect_error(exc, shown, secrets, source.engine) from None


def _connect_error(exc: BaseException, shown: str, secrets: list[str], engine: str) -> DataError:
    text = mask(first_line(exc), secrets)
    lowered = text.lower()
    if engine in ("duckdb", "sqlite"):
        what, hint = "cannot open the database", "check the database file and its settings"
    elif "password" in lowered or "authentication" in lowered or "auth" in lowered:
        what, hint = (
            "authentication failed",
            "check the user and the password variable (${NAME} in the URL, or the driver's own, "
            "e.g. PGPASSWORD)",
        )
    elif "timeout" in lowered or "timed out" in lowered:
        what, hint = (
            f"the server did not answer within {CONNECT_TIMEOUT_S} s",
            "check the host, the port and the network (a firewall drops the packets)",
        )
    elif "refused" in lowered or "could not" in lowered or "resolve" in lowered:
        what, hint = "the server cannot be reached", "check the host, the port and the network"
    elif isinstance(exc, ModuleNotFoundError | ImportError):
        what, hint = (
            "the engine's driver is not installed",
            f"pip install 'ibis-framework[{engine}]'",
        )
    else:
        what, hint = "cannot connect", "check data.connection"
    return DataError(f"{what}: {shown}: {text}", field=CONNECTION_FIELD, hint=hint)


def open_table(source: DatabaseTable, backend: Any) -> Any:
    """The Ibis table of ``data.table`` or ``data.sql``; unknown tables and failing queries
    are DataErrors naming the field."""
    secrets = secret_values(source.connection)
    if source.table is not None:
        try:
            database, _, name = source.table.rpartition(".")
            if database:
                return backend.table(name, database=tuple(database.split(".")))
            return backend.table(name)
        except Exception as exc:
            raise _table_error(source, exc, secrets, _list_tables(backend.list_tables)) from None
    assert source.sql is not None
    try:
        return backend.sql(source.sql)
    except Exception as exc:
        raise _sql_error(source, exc, secrets) from None


def open_duckdb(source: DatabaseTable, con: Any) -> Any:
    """The DuckDB relation of ``data.table`` or ``data.sql``, on DuckDB's own connection."""
    try:
        if source.table is not None:
            return con.table(source.table)
        assert source.sql is not None
        return con.sql(source.sql)
    except Exception as exc:
        if source.table is None:
            raise _sql_error(source, exc, []) from None
        tables = _list_tables(lambda: [row[0] for row in con.sql("show tables").fetchall()])
        raise _table_error(source, exc, [], tables) from None


def _list_tables(lister: Any) -> list[str] | None:
    try:
        return sorted(str(n) for n in lister())
    except Exception:
        return None


def _table_error(
    source: DatabaseTable, exc: BaseException, secrets: list[str], names: list[str] | None
) -> DataError:
    if names is None:
        hint = "check the table's name (and its schema: schema.table)"
    elif not names:
        hint = "the database holds no tables: check data.connection"
    else:
        more = f" (and {len(names) - 20} more)" if len(names) > 20 else ""
        hint = f"the database's tables are: {', '.join(repr(n) for n in names[:20])}{more}"
    return DataError(
        f"table {source.table!r} cannot be read: {mask(first_line(exc), secrets)}",
        field=TABLE_FIELD,
        hint=hint,
    )


def _sql_error(source: DatabaseTable, exc: BaseException, secrets: list[str]) -> DataError:
    sql = source.sql or ""
    shown = sql if len(sql) <= SQL_SHOWN else sql[: SQL_SHOWN - 3] + "..."
    return DataError(
        f"the query fails in the database: {mask(first_line(exc), secrets)} (query: {shown!r})",
        field=SQL_FIELD,
        hint="run the query in the database's own client first; it must be one SELECT",
    )


def _a_table(relation: Any) -> Any:
    """DuckDB's relation of ``data.sql``; a DataError when the statement returns no table
    (``;``, a ``SET``: DuckDB runs it and hands back None)."""
    if relation is None:
        raise DataError(
            "data.sql returns no table",
            field=SQL_FIELD,
            hint="write one SELECT that returns the audited columns",
        )
    return relation


def engine_version(backend: Any) -> str | None:
    try:
        return str(backend.version)
    except Exception:
        return None


def database_source(connection: str, table: str | None, sql: str | None, base: Path) -> Any:
    """The :class:`~fairscan.data.pushdown.PushdownSource` of ``data.connection`` with
    ``data.table`` or ``data.sql``, connected (``base``: the spec file's folder)."""
    from fairscan.data.pushdown import DuckDBRelation, IbisRelation, PushdownSource

    source = database_table(connection, table, sql, base)
    backend = connect(source)
    relation: IbisRelation | DuckDBRelation
    if source.engine == "duckdb":  # DuckDB's own relations: its native SQL, no copy
        relation = DuckDBRelation(_a_table(open_duckdb(source, backend.con)), con=backend.con)
    else:
        relation = IbisRelation(open_table(source, backend), secret_values(source.connection))
    provenance = source.describe()
    provenance["engine_version"] = engine_version(backend)
    return PushdownSource(relation, source.location, source.field, provenance)
