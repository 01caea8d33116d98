"""A table that lives in a database or warehouse, named by ``data.connection`` and
``data.table`` or ``data.sql``.

Connections go through Ibis (the optional extra ``fairscan[sql]``), which compiles one
expression to DuckDB, PostgreSQL, SQLite, Snowflake, BigQuery, Trino, Spark and more; the
audit's whole preparation is compiled to the engine's SQL by :mod:`fairscan.data.pushdown`.

Secrets come from the environment only: ``${NAME}`` in the URL is replaced by the variable's
value when connecting (or the driver reads its own variables, e.g. ``PGPASSWORD``). A password
written into the URL is a spec error (:func:`fairscan.spec.models.DataSpec`). The URL the
report, the logs and every message show keeps only the query parameters known to be harmless
(:func:`fairscan.redact.shown_url`), values are percent-encoded before they are spliced in, and
error messages of the driver have the secret values masked (:func:`fairscan.redact.mask_text`).

What the spec hands the database is checked first (:mod:`fairscan.data.sql_guard`: one
read-only SELECT, a table name, harmless URL settings), and the connection can do no more than
read: DuckDB files are attached read-only to a private in-memory DuckDB with extension loading
off, external access off (on with ``data.allow_file_access``) and the configuration locked
before the query runs; SQLite files are opened read-only; PostgreSQL sessions are read-only
(``default_transaction_read_only``) with a ``statement_timeout``
(:func:`fairscan.data.netio.query_timeout`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fairscan.data.load import first_line
from fairscan.data.sql_guard import (
    CONNECTION_FIELD,
    SQL_FIELD,
    TABLE_FIELD,
    checked_duckdb_settings,
    checked_query,
    quoted_table,
    table_parts,
)
from fairscan.errors import DataError
from fairscan.redact import interpolated as _spliced
from fairscan.redact import mask_text as mask
from fairscan.redact import missing_variables, secret_values, shown_url

# seconds a server has to answer the connection attempt (passed to drivers that take one)
CONNECT_TIMEOUT_S = 5
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
# a database file named as the connection, without a URL scheme
_FILE_ENGINES = {
    ".duckdb": "duckdb",
    ".ddb": "duckdb",
    ".db": "sqlite",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
}
# drivers that take a connect timeout, and its keyword
_TIMEOUT_KEYWORD = {"postgres": "connect_timeout", "postgresql": "connect_timeout"}
SQL_SHOWN = 200  # characters of data.sql a message quotes


def interpolated(url: str) -> str:
    """``${NAME}`` replaced by the environment variable's value, percent-encoded for its place
    in the URL; a DataError when unset."""
    missing = missing_variables(url)
    if missing:
        raise DataError(
            f"environment variable {missing[0]} (named in the connection URL) is not set",
            field=CONNECTION_FIELD,
            hint=f"export {missing[0]}=... before the audit; secrets come from the environment only",
        )
    return _spliced(url)


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
    # data.allow_file_access: data.sql may read files (DuckDB keeps its external access)
    allow_file_access: bool = False

    @property
    def parts(self) -> tuple[str, ...]:
        """``data.table``'s name parts (checked: :func:`~fairscan.data.sql_guard.table_parts`)."""
        assert self.table is not None
        return table_parts(self.table)

    @property
    def query(self) -> str:
        """The text of ``data.sql`` sent to the database (checked: one read-only SELECT)."""
        assert self.sql is not None
        return checked_query(self.sql, self.engine, self.allow_file_access)

    def check(self) -> None:
        """A :class:`DataError` when the table name, the query or the URL's settings are not
        allowed (:mod:`fairscan.data.sql_guard`); before anything connects."""
        if self.table is not None:
            table_parts(self.table)
        if self.sql is not None:
            checked_query(self.sql, self.engine, self.allow_file_access)
        if self.engine == "duckdb":
            checked_duckdb_settings(self.options)

    @property
    def location(self) -> str:
        """What the report names as the data: the URL without credentials and the table, or
        the query's hash."""
        where = self.target if self.engine in ("duckdb", "sqlite") else shown_url(self.connection)
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
    connection: str,
    table: str | None,
    sql: str | None,
    base: Path,
    *,
    allow_file_access: bool = False,
) -> DatabaseTable:
    """The source ``data.connection`` names; a database file relative to ``base`` (the spec's
    folder). Nothing is checked or connected yet (:meth:`DatabaseTable.check`)."""
    match = _SCHEME.match(connection)
    if match is None:
        suffix = Path(connection).suffix.lower()
        engine = _FILE_ENGINES.get(suffix)
        if engine is None:
            raise DataError(
                f"data.connection {shown_url(connection)!r} is neither a URL nor a database file",
                field=CONNECTION_FIELD,
                hint="write a URL such as postgresql://host:5432/db or duckdb:///path/file.duckdb, "
                f"or name a database file ({', '.join(_FILE_ENGINES)})",
            )
        target = str((base / connection).resolve())
        return DatabaseTable(
            connection, engine, target, table, sql, allow_file_access=allow_file_access
        )
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
        return DatabaseTable(connection, engine, target, table, sql, options, allow_file_access)
    return DatabaseTable(connection, engine, connection, table, sql, (), allow_file_access)


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
                return _connect_duckdb(source)
            return _connect_sqlite(source)
        url = interpolated(source.target)
        keyword = _TIMEOUT_KEYWORD.get(source.engine)
        if keyword is not None and keyword not in url:
            backend = ibis.connect(url, **{keyword: CONNECT_TIMEOUT_S})
        else:
            backend = ibis.connect(url)
        if source.engine == "postgres":
            _read_only_session(backend)
        return backend
    except DataError:
        raise
    except Exception as exc:
        raise _connect_error(exc, shown, secrets, source.engine) from None


def _connect_duckdb(source: DatabaseTable) -> Any:
    """The DuckDB file attached read-only to a private in-memory DuckDB (one instance per
    audit: DuckDB shares the instance of a file among the connections of a process, and so
    its settings), no extension installed or loaded, then external access (files, URLs,
    ATTACH, COPY) turned off unless ``data.allow_file_access``, and the configuration locked:
    no statement the query runs can widen it again. The URL's settings (memory_limit,
    threads), else the memory limit and threads streamed datasets get (engine_scan); no
    progress bar on the terminal."""
    import duckdb
    import ibis

    from fairscan.data.engine_scan import engine_threads, memory_limit

    settings: dict[str, Any] = {
        "memory_limit": f"{memory_limit() // 2**20}MB",
        "threads": engine_threads(),
        **checked_duckdb_settings(source.options),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
    }
    if source.target != ":memory:":
        settings.setdefault("temp_directory", source.target + ".tmp")  # DuckDB's own default
    con = duckdb.connect(":memory:", config=settings)
    try:
        if source.target != ":memory:":
            # the file's name, as DuckDB names an attached file (DuckDB's own catalogs aside)
            stem = Path(source.target).stem
            stem = "fairscan_source" if stem.lower() in ("memory", "system", "temp") else stem
            catalog = '"' + stem.replace('"', '""') + '"'
            path = "'" + source.target.replace("'", "''") + "'"
            con.execute(f"ATTACH {path} AS {catalog} (READ_ONLY)")
            con.execute(f"USE {catalog}")
        backend = ibis.duckdb.from_connection(con)  # sets the time zone (UTC)
        con.execute("SET enable_progress_bar = false")
        if not source.allow_file_access:
            con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except Exception:
        con.close()
        raise
    return backend


def _connect_sqlite(source: DatabaseTable) -> Any:
    """The SQLite file opened read-only (an in-memory database as it is)."""
    import sqlite3

    import ibis

    if source.target == ":memory:":
        return ibis.sqlite.connect(source.target)
    con = sqlite3.connect(f"{Path(source.target).as_uri()}?mode=ro", uri=True)
    return ibis.sqlite.from_connection(con)


def _read_only_session(backend: Any) -> None:
    """The PostgreSQL session read-only (every transaction it starts) and each statement
    bounded by :func:`~fairscan.data.netio.query_timeout` (``FAIRSCAN_QUERY_TIMEOUT``)."""
    from fairscan.data.netio import query_timeout

    milliseconds = max(1, round(query_timeout() * 1000))
    for statement in (
        "SET SESSION default_transaction_read_only = on",
        f"SET SESSION statement_timeout = {milliseconds}",
    ):
        backend.raw_sql(statement).close()


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
        *database, name = source.parts
        try:
            if database:
                return backend.table(name, database=tuple(database))
            return backend.table(name)
        except Exception as exc:
            raise _table_error(source, exc, secrets, _list_tables(backend.list_tables)) from None
    query = source.query
    try:
        if source.engine == "postgres":  # no temporary view in a read-only session
            return backend.sql(query, schema=_postgres_schema(backend, query))
        return backend.sql(query)
    except Exception as exc:
        raise _sql_error(source, exc, secrets) from None


def _postgres_schema(backend: Any, query: str) -> Any:
    """The Ibis schema of a PostgreSQL query, from the columns of the query run with
    ``LIMIT 0`` (Ibis' own way creates a temporary view, which a read-only session refuses),
    sent with a parameter: the extended protocol runs one statement only. Types as Ibis reads
    a table's (``format_type`` with the type modifier; enums as ``enum``)."""
    import ibis

    with backend.con.cursor() as cursor:
        escaped = query.replace("%", "%%")  # a literal % in the query, not a placeholder
        cursor.execute(f"SELECT * FROM ({escaped}) AS fairscan_query LIMIT %(rows)s", {"rows": 0})
        result = cursor.pgresult
        assert result is not None
        names = [c.name for c in cursor.description or []]
        oids = [result.ftype(i) for i in range(len(names))]
        mods = [result.fmod(i) for i in range(len(names))]
        cursor.execute(
            "SELECT CASE WHEN t.typtype = 'e' THEN 'enum' "
            "ELSE pg_catalog.format_type(u.oid, u.mod) END "
            "FROM unnest(%(oids)s::oid[], %(mods)s::int[]) WITH ORDINALITY AS u(oid, mod, i) "
            "JOIN pg_catalog.pg_type t ON t.oid = u.oid ORDER BY u.i",
            {"oids": oids, "mods": mods},
        )
        types = [row[0] for row in cursor.fetchall()]
    mapper = backend.compiler.type_mapper
    return ibis.schema(
        {name: mapper.from_string(typ) for name, typ in zip(names, types, strict=True)}
    )


def open_duckdb(source: DatabaseTable, con: Any) -> Any:
    """The DuckDB relation of ``data.table`` or ``data.sql``, on DuckDB's own connection."""
    try:
        if source.table is not None:
            return con.table(quoted_table(source.parts))
        return con.sql(source.query)
    except DataError:
        raise
    except Exception as exc:
        secrets = secret_values(source.connection)
        if source.table is None:
            raise _sql_error(source, exc, secrets) from None
        tables = _list_tables(lambda: [row[0] for row in con.sql("show tables").fetchall()])
        raise _table_error(source, exc, secrets, tables) from None


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


def database_source(
    connection: str,
    table: str | None,
    sql: str | None,
    base: Path,
    *,
    allow_file_access: bool = False,
) -> Any:
    """The :class:`~fairscan.data.pushdown.PushdownSource` of ``data.connection`` with
    ``data.table`` or ``data.sql``, checked then connected (``base``: the spec file's folder;
    ``allow_file_access``: ``data.allow_file_access``)."""
    from fairscan.data.pushdown import DuckDBRelation, IbisRelation, PushdownSource

    source = database_table(connection, table, sql, base, allow_file_access=allow_file_access)
    source.check()
    backend = connect(source)
    relation: IbisRelation | DuckDBRelation
    if source.engine == "duckdb":  # DuckDB's own relations: its native SQL, no copy
        relation = DuckDBRelation(_a_table(open_duckdb(source, backend.con)), con=backend.con)
    else:
        relation = IbisRelation(open_table(source, backend), secret_values(source.connection))
    provenance = source.describe()
    provenance["engine_version"] = engine_version(backend)
    return PushdownSource(relation, source.location, source.field, provenance)
