"""What a spec may hand a database: ``data.sql`` is one read-only query, ``data.table`` a
(schema-qualified) name, ``data.connection`` no setting that widens what the connection can
reach. Checked before anything connects, so a refused spec touches nothing.

``data.sql`` is parsed by sqlglot in the connection's dialect (and, for DuckDB, by DuckDB's own
parser as well, which splits statements exactly as the database will) and must be a single
``SELECT`` (``WITH ... SELECT``, a ``UNION`` of selects): several statements, ``COPY``,
``ATTACH``, ``PRAGMA``, ``SET``, DDL/DML (a writing CTE, ``SELECT ... INTO``, ``FOR UPDATE``
included) and text sqlglot cannot read as one query are refused. Functions that read files
(DuckDB's ``read_csv``, ``read_text``, a path used as a table; PostgreSQL's ``pg_read_file``;
SQLite's ``readfile``) are refused unless the spec opts in with ``data.allow_file_access``;
functions that run text as SQL, write, load code or change settings are always refused.

These checks are the first line; the connections are the second (:mod:`fairscan.data.database`):
DuckDB opened read-only with external access and extension loading off and its configuration
locked, PostgreSQL sessions read-only with a statement timeout, SQLite files opened read-only.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fairscan.errors import DataError

if TYPE_CHECKING:
    from sqlglot import exp

CONNECTION_FIELD = "data.connection"
TABLE_FIELD = "data.table"
SQL_FIELD = "data.sql"

# Ibis' engine names whose sqlglot dialect has another name; other engines use their own name
# when sqlglot knows it, else sqlglot's generic dialect
_DIALECTS = {"mssql": "tsql", "pyspark": "spark", "impala": "hive", "postgresql": "postgres"}

# functions that read files (or list them) on the database's machine: allowed with
# data.allow_file_access
_FILE_READERS: dict[str, frozenset[str]] = {
    "duckdb": frozenset(
        [
            "read_csv",
            "read_csv_auto",
            "read_parquet",
            "parquet_scan",
            "read_json",
            "read_json_auto",
            "read_json_objects",
            "read_json_objects_auto",
            "read_ndjson",
            "read_ndjson_auto",
            "read_ndjson_objects",
            "read_text",
            "read_blob",
            "glob",
            "sniff_csv",
            "parquet_metadata",
            "parquet_schema",
            "parquet_file_metadata",
            "parquet_kv_metadata",
            "parquet_bloom_probe",
            "read_xlsx",
            "st_read",
            "st_read_meta",
            "delta_scan",
            "iceberg_scan",
            "iceberg_metadata",
            "iceberg_snapshots",
            "sqlite_scan",
            "read_avro",
        ]
    ),
    "postgres": frozenset(
        [
            "pg_read_file",
            "pg_read_binary_file",
            "pg_ls_dir",
            "pg_stat_file",
            "pg_ls_logdir",
            "pg_ls_waldir",
            "pg_ls_tmpdir",
            "pg_ls_archive_statusdir",
            "pg_ls_logicalsnapdir",
            "pg_ls_logicalmapdir",
            "pg_ls_replslotdir",
        ]
    ),
    "sqlite": frozenset({"readfile"}),
}
# functions never allowed: they run text as SQL, write, reach another server, load code, read
# the environment or change the session's settings
_NEVER: dict[str, frozenset[str]] = {
    "duckdb": frozenset(
        [
            "query",
            "query_table",
            "arrow_scan",
            "arrow_scan_dumb",
            "getenv",
            "duckdb_secrets",
            "which_secret",
            "sqlite_attach",
            "postgres_attach",
            "postgres_scan",
            "postgres_scan_pushdown",
            "postgres_query",
            "postgres_execute",
            "mysql_scan",
            "mysql_query",
            "mysql_execute",
        ]
    ),
    "postgres": frozenset(
        [
            "set_config",
            "dblink",
            "dblink_exec",
            "dblink_connect",
            "dblink_connect_u",
            "dblink_open",
            "dblink_send_query",
            "query_to_xml",
            "query_to_xml_and_xmlschema",
            "query_to_xmlschema",
            "cursor_to_xml",
            "lo_import",
            "lo_export",
            "lo_create",
            "lo_creat",
            "lo_unlink",
            "lo_put",
            "lo_from_bytea",
            "pg_file_write",
            "pg_file_rename",
            "pg_file_unlink",
            "pg_file_sync",
            "pg_logdir_ls",
            "pg_terminate_backend",
            "pg_cancel_backend",
            "pg_reload_conf",
            "pg_rotate_logfile",
            "pg_promote",
            "pg_switch_wal",
            "pg_create_restore_point",
            "nextval",
            "setval",
        ]
    ),
    "sqlite": frozenset({"load_extension", "writefile", "edit", "fts3_tokenizer"}),
}
# DuckDB reads a quoted name that looks like a path as a file (`from '/etc/passwd'`)
_PATH_LIKE = re.compile(r"[/\\:.]")

# DuckDB settings a data.connection URL may set (?memory_limit=512MB&threads=2); the rest
# (access_mode, enable_external_access, allowed_directories, lock_configuration, ...) could
# widen what the connection reaches
DUCKDB_URL_SETTINGS = (
    "memory_limit",
    "max_memory",
    "threads",
    "worker_threads",
    "temp_directory",
    "max_temp_directory_size",
    "preserve_insertion_order",
)

_SHOWN = 60  # characters of a refused statement quoted in a message


def dialect_of(engine: str) -> str:
    """sqlglot's dialect for an Ibis engine name ("" for sqlglot's generic dialect)."""
    import sqlglot

    name = _DIALECTS.get(engine, engine)
    return name if sqlglot.Dialect.get(name) is not None else ""


def checked_query(sql: str, engine: str, allow_file_access: bool = False) -> str:
    """The text of ``data.sql`` to send to ``engine``: the query as sqlglot writes it back
    (one statement, whatever the database's parser would make of the original), DuckDB's
    as written (checked by DuckDB's own parser); a :class:`DataError` on ``data.sql`` when it
    is not one read-only SELECT."""
    if "\x00" in sql:
        raise _refused("the query holds a NUL character")
    if engine == "duckdb":
        _duckdb_statements(sql)
    tree = _one_query(sql, dialect_of(engine))
    _check_tree(tree, engine, allow_file_access)
    if engine == "duckdb":
        return sql
    return str(tree.sql(dialect=dialect_of(engine)))


def _refused(message: str, hint: str | None = None) -> DataError:
    return DataError(
        message,
        field=SQL_FIELD,
        hint=hint
        or "data.sql is one read-only SELECT (WITH ... SELECT and UNION of selects too); "
        "create tables or views in the database's own client",
    )


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _duckdb_statements(sql: str) -> None:
    """DuckDB's own parser: exactly one statement, of type SELECT."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise _refused(
            f"DuckDB cannot parse the query: {str(exc).splitlines()[0]}",
            "check the query in DuckDB's own client",
        ) from None
    if not statements:
        raise _refused("the query holds no statement")
    if len(statements) > 1:
        kinds = ", ".join(s.type.name for s in statements)
        raise _refused(f"the query holds {len(statements)} statements ({kinds}), not one SELECT")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise _refused(f"the query is a {statements[0].type.name} statement, not a SELECT")


def _one_query(sql: str, dialect: str) -> Any:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        with _quiet_sqlglot():
            trees = [t for t in sqlglot.parse(sql, read=dialect or None) if t is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        what = first.get("description") or str(exc).splitlines()[0]
        raise _refused(
            f"cannot read the query as {dialect or 'generic'} SQL (syntax error{where}: {what})",
            "check the query in the database's own client; fairscan runs only what it can "
            "read as one SELECT",
        ) from None
    except TokenError as exc:
        raise _refused(f"cannot read the query (syntax error: {exc})") from None
    if not trees:
        raise _refused("the query holds no statement")
    if len(trees) > 1:
        shown = "; ".join(_shown(t.sql(dialect=dialect or None)) for t in trees[:3])
        raise _refused(f"the query holds {len(trees)} statements, not one SELECT: {shown}")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        raise _refused(f"the query is not a SELECT: {_shown(tree.sql(dialect=dialect or None))}")
    return tree


@contextlib.contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """sqlglot's warnings (a statement it reads as an opaque command) off: the refusal says it."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _statement_types() -> tuple[type[exp.Expression], ...]:
    from sqlglot import exp

    names = [
        "DML",
        "DDL",
        "Command",
        "Into",
        "Lock",
        "Set",
        "Pragma",
        "Transaction",
        "Commit",
        "Rollback",
        "Attach",
        "Detach",
        "Install",
        "Export",
        "Grant",
        "Revoke",
        "TruncateTable",
        "LoadData",
        "Use",
        "Summarize",
        "Analyze",
        "Refresh",
        "Cache",
        "Uncache",
        "Comment",
        "Kill",
        "Execute",
        "Drop",
        "Alter",
        "Describe",
        "Show",
    ]
    return tuple(getattr(exp, n) for n in names if hasattr(exp, n))


def _check_tree(tree: Any, engine: str, allow_file_access: bool) -> None:
    from sqlglot import exp

    statements = _statement_types()
    readers = _FILE_READERS.get(engine, frozenset())
    never = _NEVER.get(engine, frozenset())
    for node in tree.walk():
        if isinstance(node, statements):
            what = type(node).__name__.upper()
            raise _refused(f"the query holds a {what} ({_shown(node.sql())}), not only reads")
        if isinstance(node, exp.Func):
            name = _function_name(node, engine)
            if name in never:
                raise _refused(
                    f"the query calls {name}(), which fairscan never runs (it runs text as SQL, "
                    "writes, reaches another server or changes the session)"
                )
            if name in readers and not allow_file_access:
                raise _file_access(f"the query calls {name}(), which reads files")
        if (
            engine == "duckdb"
            and isinstance(node, exp.Table)
            and isinstance(node.this, exp.Identifier)
            and node.this.quoted
            and _PATH_LIKE.search(node.this.name)
            and not allow_file_access
        ):
            raise _file_access(f"the query reads {node.this.name!r}, a file named as a table")


def _function_name(node: Any, engine: str) -> str:
    """A function's name as the database sees it (lower case, without its schema)."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    written = str(node.sql(dialect=dialect_of(engine))).split("(", 1)[0]
    return written.rsplit(".", 1)[-1].strip().strip('"').lower()


def _file_access(message: str) -> DataError:
    return _refused(
        message,
        "reading files through the database is off by default; if the spec is meant to, "
        "set data: {allow_file_access: true} (or audit the file with data.path)",
    )


# -- data.table --------------------------------------------------------------------------------

_BARE = re.compile(r"[^.\"\s;\x00-\x1f\x7f]+")


def table_parts(name: str) -> tuple[str, ...]:
    """``data.table`` as its name parts: ``table``, ``schema.table`` or
    ``catalog.schema.table``, each bare or double-quoted (``"My Schema"."a.b"``, ``""`` for a
    quote); a :class:`DataError` on ``data.table`` otherwise. Every part is quoted when
    compiled: the name never becomes SQL text of its own."""
    parts: list[str] = []
    i = 0
    while True:
        if name.startswith('"', i):
            end = i + 1
            text = []
            while True:
                close = name.find('"', end)
                if close < 0:
                    raise _bad_table(name, "a quote is not closed")
                text.append(name[end:close])
                if name.startswith('"', close + 1):
                    text.append('"')
                    end = close + 2
                    continue
                break
            part, i = "".join(text), close + 1
        else:
            match = _BARE.match(name, i)
            if match is None:
                raise _bad_table(name, f"unexpected {name[i : i + 1]!r} at character {i + 1}")
            part, i = match.group(), match.end()
        if not part or re.search(r"[;\x00-\x1f\x7f]", part):
            raise _bad_table(name, "a name part is empty or holds ';' or a control character")
        parts.append(part)
        if i == len(name):
            break
        if name[i] != ".":
            raise _bad_table(name, f"unexpected {name[i]!r} at character {i + 1}")
        i += 1
    if len(parts) > 3:
        raise _bad_table(name, "more than three name parts")
    return tuple(parts)


def quoted_table(parts: tuple[str, ...]) -> str:
    """The parts as one SQL name, each part double-quoted."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def _bad_table(name: str, why: str) -> DataError:
    return DataError(
        f"data.table {name[:_SHOWN]!r} is not a table name: {why}",
        field=TABLE_FIELD,
        hint="write table, schema.table or catalog.schema.table (double-quote a part with "
        'spaces or dots: "My Schema".predictions); a query goes into data.sql',
    )


# -- data.connection -------------------------------------------------------------------------


def checked_duckdb_settings(options: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The DuckDB settings of a ``duckdb://`` URL's query, when each is one that only bounds
    resources (:data:`DUCKDB_URL_SETTINGS`); a :class:`DataError` on ``data.connection``
    naming the first other one."""
    settings: dict[str, str] = {}
    for key, value in options:
        if key.lower() not in DUCKDB_URL_SETTINGS:
            raise DataError(
                f"the connection URL sets {key!r}, which fairscan does not pass to DuckDB: "
                "the database is opened read-only, with external access, extension loading and "
                "configuration changes off",
                field=CONNECTION_FIELD,
                hint=f"remove ?{key}=... from data.connection; settings it may carry: "
                + ", ".join(DUCKDB_URL_SETTINGS),
            )
        settings[key.lower()] = value
    return settings
