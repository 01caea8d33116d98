"""The SQL guard (:mod:`fairscan.data.sql_guard`): data.sql is one read-only SELECT in the
connection's dialect, file readers only with data.allow_file_access, data.table a name,
data.connection's DuckDB settings only those that bound resources. No database here: the
end-to-end checks against real engines are in test_data_sql_guard.py."""

from __future__ import annotations

import pytest
from lazy_import import require

from fairscan.data.sql_guard import (
    checked_duckdb_settings,
    checked_query,
    quoted_table,
    table_parts,
)
from fairscan.errors import DataError

require("duckdb")

ACCEPTED = [
    ("duckdb", "select * from credit"),
    ("duckdb", "select * from credit;"),
    ("duckdb", "from credit"),
    ("duckdb", "with c as (select * from credit) select * from c where score > 0.5"),
    ("duckdb", "select * from credit union all select * from credit"),
    ("duckdb", "select * exclude (score) from credit"),
    ("duckdb", "select * from s.credit where region like 'N%'"),
    ("postgres", "select * from scoring.credit where region like 'N%'"),
    ("postgres", "with c as (select 1 as x) select * from c"),
    ("postgres", "select $$;$$ as semi, * from credit"),
    ("sqlite", "select * from credit where sex glob 'M*'"),
    ("snowflake", "select * from db.schema.credit"),
    ("unknown-engine", "select * from credit"),
]


@pytest.mark.parametrize(("engine", "sql"), ACCEPTED)
def test_one_select_is_accepted(engine: str, sql: str) -> None:
    text = checked_query(sql, engine)
    assert ";" not in text.rstrip(";") or "$$" in sql


REFUSED = [
    # several statements, or none
    ("postgres", "select * from scoring.credit; delete from public.victim", "2 statements"),
    ("duckdb", "copy (select 42) to '/tmp/x.csv'; select * from credit", "2 statements"),
    ("duckdb", ";", "no statement"),
    ("postgres", ";", "no statement"),
    ("sqlite", "select 1; select 2", "2 statements"),
    # statements that are not a SELECT
    ("duckdb", "copy (select 42) to '/tmp/x.csv'", "COPY"),
    ("duckdb", "attach '/tmp/x.duckdb' (read_only false)", "ATTACH"),
    ("duckdb", "export database '/tmp/out'", "EXPORT"),
    ("duckdb", "install httpfs", "LOAD"),  # DuckDB calls INSTALL a LOAD statement
    ("duckdb", "load httpfs", "LOAD"),
    ("duckdb", "pragma version", "PRAGMA"),
    ("duckdb", "set threads = 1", "SET"),
    ("duckdb", "drop table credit", "DROP"),
    ("duckdb", "create table pwned as select 1", "CREATE"),
    ("postgres", "copy credit from program 'id'", "not a SELECT"),
    ("postgres", "delete from victim", "not a SELECT"),
    ("postgres", "values (1)", "not a SELECT"),
    # writes inside a SELECT
    ("postgres", "with d as (delete from victim returning *) select * from d", "DELETE"),
    ("postgres", "select * into pwned from credit", "INTO"),
    ("postgres", "select * from credit for update", "LOCK"),
    # parser differentials: what PostgreSQL would read as two statements
    ("postgres", "select 'a\\'; delete from victim; --'", "statements"),
    # file readers (without data.allow_file_access)
    ("duckdb", "select * from read_text('/proc/self/environ')", "read_text"),
    ("duckdb", "select c.*, t.content from credit c, read_text('/etc/passwd') t", "read_text"),
    ("duckdb", "select * from read_csv('/etc/passwd')", "read_csv"),
    ("duckdb", "select * from read_csv_auto('/etc/passwd')", "read_csv_auto"),
    ("duckdb", "select * from read_parquet('/x.parquet')", "read_parquet"),
    ("duckdb", "select * from parquet_scan('/x.parquet')", "parquet_scan"),
    ("duckdb", "select * from read_json_auto('/x.json')", "read_json_auto"),
    ("duckdb", "select * from read_blob('/etc/passwd')", "read_blob"),
    ("duckdb", "select * from glob('/*')", "glob"),
    ("duckdb", "select * from sniff_csv('/etc/passwd')", "sniff_csv"),
    ("duckdb", "select * from '/etc/passwd'", "file named as a table"),
    ("duckdb", "select * from 'data.csv'", "file named as a table"),
    ("postgres", "select pg_read_file('/etc/passwd') as x, * from credit", "pg_read_file"),
    ("postgres", "select pg_catalog.pg_read_binary_file('/etc/passwd')", "pg_read_binary_file"),
    ("postgres", "select * from pg_ls_dir('/')", "pg_ls_dir"),
    ("sqlite", "select readfile('/etc/passwd')", "readfile"),
    # never, whatever the spec says
    ("duckdb", "select * from query('copy (select 1) to ''/tmp/x.csv''')", "query"),
    ("duckdb", "select getenv('HOME')", "getenv"),
    ("postgres", "select lo_import('/etc/passwd')", "lo_import"),
    ("postgres", "select set_config('default_transaction_read_only', 'off', false)", "set_config"),
    ("postgres", "select query_to_xml('delete from victim', true, true, '')", "query_to_xml"),
    ("postgres", "select * from dblink('host=x', 'select 1') as t(x int)", "dblink"),
    ("sqlite", "select load_extension('/tmp/evil.so')", "load_extension"),
    # text sqlglot cannot read as one query
    ("duckdb", "selec * from credit", "syntax error"),
    ("sqlite", "selec * from credit", "syntax error"),
    ("postgres", "select * from (select 1", "syntax error"),
    ("duckdb", "select 1\x00", "NUL"),
]


@pytest.mark.parametrize(("engine", "sql", "why"), REFUSED)
def test_anything_else_is_refused(engine: str, sql: str, why: str) -> None:
    with pytest.raises(DataError) as info:
        checked_query(sql, engine)
    issue = info.value.issues[0]
    assert issue.field == "data.sql"
    assert why.lower() in issue.message.lower(), issue.message
    assert issue.hint


@pytest.mark.parametrize(
    ("engine", "sql"),
    [
        ("duckdb", "select * from read_text('/proc/self/environ')"),
        ("duckdb", "select * from read_csv('/data/x.csv')"),
        ("duckdb", "select * from '/data/x.parquet'"),
        ("postgres", "select pg_read_file('/etc/hostname') as host"),
        ("sqlite", "select readfile('/etc/hostname') as host"),
    ],
)
def test_file_readers_need_the_spec_to_opt_in(engine: str, sql: str) -> None:
    with pytest.raises(DataError) as info:
        checked_query(sql, engine)
    assert "allow_file_access: true" in (info.value.issues[0].hint or "")
    assert checked_query(sql, engine, allow_file_access=True)


@pytest.mark.parametrize(
    ("engine", "sql"),
    [
        ("duckdb", "select * from query('select 1')"),
        ("postgres", "select set_config('default_transaction_read_only', 'off', false)"),
        ("duckdb", "copy (select 1) to '/tmp/x.csv'"),
        ("duckdb", "select 1; select 2"),
    ],
)
def test_the_opt_in_allows_reading_only(engine: str, sql: str) -> None:
    with pytest.raises(DataError):
        checked_query(sql, engine, allow_file_access=True)


def test_text_sent_to_postgres_is_the_one_statement_sqlglot_read() -> None:
    """Other engines get the query as sqlglot writes it back: what sqlglot read as one
    statement is one statement whatever the database's own parser makes of the original."""
    sent = checked_query("select * from credit where region like 'N%' ;", "postgres")
    assert sent == "SELECT * FROM credit WHERE region LIKE 'N%'"
    # DuckDB's own parser checked it: sent as written
    assert checked_query("from credit;", "duckdb") == "from credit;"


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("credit", ("credit",)),
        ("scoring.credit", ("scoring", "credit")),
        ("warehouse.scoring.credit", ("warehouse", "scoring", "credit")),
        ('"My Schema"."a.b"', ("My Schema", "a.b")),
        ('"say ""hi"""', ('say "hi"',)),
        ("Credit_2024", ("Credit_2024",)),
    ],
)
def test_table_names_are_identifiers(name: str, parts: tuple[str, ...]) -> None:
    assert table_parts(name) == parts
    assert table_parts(quoted_table(parts)) == parts


@pytest.mark.parametrize(
    "name",
    [
        "credit; drop table credit",
        "credit;",
        '"credit; drop table x"',
        "credit --",
        "credit where 1=1",
        "a.b.c.d",
        "a..b",
        '"unclosed',
        "credit\nx",
        "(select 1)",
    ],
)
def test_anything_else_as_a_table_name_is_refused(name: str) -> None:
    with pytest.raises(DataError) as info:
        table_parts(name)
    assert info.value.issues[0].field == "data.table"


def test_duckdb_url_settings_are_an_allow_list() -> None:
    assert checked_duckdb_settings((("memory_limit", "512MB"), ("Threads", "2"))) == {
        "memory_limit": "512MB",
        "threads": "2",
    }
    for key in (
        "access_mode",
        "enable_external_access",
        "allow_unsigned_extensions",
        "allowed_directories",
        "lock_configuration",
        "autoload_known_extensions",
        "custom_extension_repository",
    ):
        with pytest.raises(DataError) as info:
            checked_duckdb_settings(((key, "x"),))
        issue = info.value.issues[0]
        assert issue.field == "data.connection" and key in issue.message


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "sqlite", "snowflake"])
def test_compiled_filters_quote_names_and_bind_values(dialect: str) -> None:
    """data.filter compiled for a database (data/filter_sql.py): a column name and a string
    holding statement separators stay one quoted identifier and one literal, in one
    statement."""
    ibis = pytest.importorskip("ibis")
    import polars as pl
    import sqlglot

    from fairscan.data.filter_sql import filter_ibis

    column = 'reg"ion; drop table victim; --'
    schema: dict[str, pl.DataType] = {column: pl.String(), "score": pl.Float64()}
    table = ibis.table({column: "string", "score": "float64"}, name="credit")
    quoted = '"' + column.replace('"', '""') + '"'
    text = f"{quoted} != 'x''; delete from victim; --' AND score >= 0.5"
    sql = str(ibis.to_sql(table.filter(filter_ibis(text, table, schema)), dialect=dialect))
    statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    assert len(statements) == 1 and not statements[0].find(sqlglot.exp.Delete, sqlglot.exp.Drop)
    names = {c.name for c in statements[0].find_all(sqlglot.exp.Column)}
    assert column in names
    values = {s.this for s in statements[0].find_all(sqlglot.exp.Literal) if s.is_string}
    assert "x'; delete from victim; --" in values
