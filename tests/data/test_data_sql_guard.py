"""data.sql is one read-only query, data.table a name, data.connection no wider than reading,
against real engines: DuckDB and SQLite files and a throwaway PostgreSQL cluster
(tests/data/conftest.py). Each hostile spec ends in a located error (exit code 2) and leaves
the database, the file system and the reports as they were: the victim table keeps its rows,
no file appears at a COPY target, an environment secret reaches no report, the DuckDB file
keeps its bytes. The guard's own cases: test_sql_guard.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from lazy_import import lazy, require

from fairscan import api
from fairscan.errors import DataError, FairscanError, SpecError

from .conftest import Postgres

require("ibis", reason="Ibis (fairscan[sql]) is not installed")
duckdb = lazy("duckdb")

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
PASSWORD_VARIABLE = "FAIRSCAN_TEST_PGPASSWORD"

SPEC = """\
version: 1
name: guard
data:
{data}
columns: {{outcome: default, prediction: score, threshold: 0.5}}
attributes: [sex, region]
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
significance: {{replicates: 39, seed: 1, workers: 1}}
"""


def _spec(folder: Path, data: str, name: str = "guard.audit.yaml") -> Path:
    spec = folder / name
    spec.write_text(SPEC.format(data=data))
    return spec


def _run(folder: Path, data: str) -> Any:
    return api.run_audit(_spec(folder, data), api.RunOptions(write=False)).report


def _error(folder: Path, data: str) -> FairscanError:
    with pytest.raises((DataError, SpecError)) as info:
        _run(folder, data)
    return info.value


def _outcome(folder: Path, data: str) -> FairscanError | None:
    """The audit's error, None when it ran: the side effect is checked first."""
    try:
        _run(folder, data)
    except (DataError, SpecError) as error:
        return error
    return None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT)


@pytest.fixture
def folder(tmp_path: Path, credit: pl.DataFrame) -> Path:
    """A DuckDB and an SQLite file holding `credit`, fresh for each test (one may be
    attacked)."""
    con = duckdb.connect(str(tmp_path / "credit.duckdb"))
    con.execute("create table credit as select * from credit")
    con.close()
    import sqlite3

    con = sqlite3.connect(tmp_path / "credit.sqlite")
    con.execute(
        "create table credit (applicant_id integer, sex text, ethnicity text, age_group text, "
        'region text, employment text, income real, "default" integer, score real, '
        "high_risk integer)"
    )
    con.executemany("insert into credit values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", credit.iter_rows())
    con.commit()
    con.close()
    return tmp_path


# --- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture
def pg(postgres: Postgres, credit: pl.DataFrame) -> Iterator[Postgres]:
    """scoring.credit to audit, public.victim (3 rows) to attack, and public.purge(), a
    function that empties the victim (a write the guard cannot see in a SELECT)."""
    with postgres.connect() as con:
        con.execute("drop schema if exists scoring cascade")
        con.execute('drop schema if exists "My Schema" cascade')
        con.execute("drop table if exists public.victim")
        con.execute("create schema scoring")
        con.execute(
            "create table scoring.credit (applicant_id int, sex text, ethnicity text, "
            'age_group text, region text, employment text, income double precision, "default" '
            "int, score double precision, high_risk int)"
        )
        with con.cursor().copy("copy scoring.credit from stdin") as copy:
            for row in credit.iter_rows():
                copy.write_row(row)
        con.execute("create table public.victim (id int)")
        con.execute("insert into public.victim values (1), (2), (3)")
        con.execute(
            "create or replace function public.purge() returns int language plpgsql as "
            "$$ begin delete from public.victim; return 1; end $$"
        )
    os.environ[PASSWORD_VARIABLE] = postgres.password
    try:
        yield postgres
    finally:
        os.environ.pop(PASSWORD_VARIABLE, None)


def _victims(pg: Postgres) -> int:
    with pg.connect() as con:
        return int(con.execute("select count(*) from public.victim").fetchone()[0])


def test_postgres_second_statement_never_runs(folder: Path, pg: Postgres) -> None:
    """Reproduction: the DELETE after the SELECT was committed (the text went into a view
    definition sent as one simple query)."""
    error = _outcome(
        folder,
        f"  connection: '{pg.url()}'\n"
        '  sql: "select * from scoring.credit; delete from public.victim"',
    )
    assert _victims(pg) == 3
    assert error is not None
    issue = error.issues[0]
    assert issue.field == "data.sql" and "2 statements" in issue.message
    # located at the key in the spec file, as other spec errors are
    assert (
        issue.file
        and issue.file.endswith("guard.audit.yaml")
        and (issue.line, issue.col)
        == (
            5,
            8,
        )
    )


@pytest.mark.parametrize(
    "sql",
    [
        "with d as (delete from public.victim returning *) select * from scoring.credit",
        "select * into public.pwned from scoring.credit",
        "select *, set_config('default_transaction_read_only', 'off', false) from scoring.credit",
    ],
    ids=["writing-cte", "select-into", "set-config"],
)
def test_postgres_writes_inside_a_select_are_refused(folder: Path, pg: Postgres, sql: str) -> None:
    error = _error(folder, f"  connection: '{pg.url()}'\n  sql: \"{sql}\"")
    assert error.issues[0].field == "data.sql"
    assert _victims(pg) == 3


def test_postgres_session_is_read_only(folder: Path, pg: Postgres) -> None:
    """A write the guard cannot see (a function that deletes) fails in the read-only session."""
    error = _outcome(
        folder,
        f"  connection: '{pg.url()}'\n"
        '  sql: "select c.*, public.purge() as purged from scoring.credit c"',
    )
    assert _victims(pg) == 3
    assert "read-only transaction" in str(error)


def test_postgres_statement_timeout(
    folder: Path, pg: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every statement of the session is bounded by FAIRSCAN_QUERY_TIMEOUT."""
    monkeypatch.setenv("FAIRSCAN_QUERY_TIMEOUT", "0.2")
    error = _error(
        folder,
        f"  connection: '{pg.url()}'\n"
        '  sql: "select c.* from scoring.credit c cross join lateral '
        '(select pg_sleep(30)) as s"',
    )
    assert "statement_timeout" in str(error) and "FAIRSCAN_QUERY_TIMEOUT" in str(error)


@pytest.mark.slow
def test_postgres_names_and_filters_are_quoted(folder: Path, pg: Postgres) -> None:
    """A schema-qualified name with spaces, dots and quotes is read as written; a column name
    and a filter string holding statement separators stay a name and a value."""
    import yaml

    column = 'reg"ion; drop table public.victim; --'
    quoted = '"' + column.replace('"', '""') + '"'
    with pg.connect() as con:
        con.execute('create schema "My Schema"')
        con.execute(
            f'create table "My Schema"."credit.v2 ""x""" as select sex, region as {quoted}, '
            '"default", score from scoring.credit'
        )
    spec = yaml.safe_load(SPEC.format(data="  table: t"))
    spec["data"] = {
        "connection": pg.url(),
        "table": '"My Schema"."credit.v2 ""x"""',
        "filter": f"{quoted} != 'North''; delete from public.victim; --'",
    }
    spec["attributes"] = ["sex", column]
    path = folder / "quoted.audit.yaml"
    path.write_text(yaml.safe_dump(spec))
    report = api.run_audit(path, api.RunOptions(write=False)).report
    assert report.provenance.data_rows == report.provenance.rows_after_filter == 12000
    assert column in report.attributes
    spec["data"]["filter"] = f"{quoted} != 'North'"
    path.write_text(yaml.safe_dump(spec))
    fewer = api.run_audit(path, api.RunOptions(write=False)).report
    assert 0 < fewer.provenance.rows_after_filter < 12000
    assert _victims(pg) == 3


def test_postgres_table_name_with_a_separator_is_refused(folder: Path, pg: Postgres) -> None:
    error = _error(
        folder, f"  connection: '{pg.url()}'\n  table: 'credit; delete from public.victim'"
    )
    assert error.issues[0].field == "data.table"
    assert _victims(pg) == 3


# --- DuckDB ------------------------------------------------------------------------------------


def test_duckdb_copy_writes_no_file(folder: Path) -> None:
    """Reproduction: `copy ... to FILE; select ...` wrote the file and the audit passed."""
    target = folder / "pwned.csv"
    error = _outcome(
        folder,
        "  connection: credit.duckdb\n"
        f"  sql: \"copy (select 42) to '{target}'; select * from credit\"",
    )
    assert not target.exists()
    assert error is not None and error.issues[0].field == "data.sql"


@pytest.mark.parametrize(
    ("sql", "left"),
    [
        ("attach '{f}/other.duckdb' as o (read_only false)", "other.duckdb"),
        ("export database '{f}/exported'", "exported"),
        ("install httpfs", None),
        ("load httpfs", None),
        ("pragma enable_profiling", None),
        ("set enable_external_access = true", None),
        (";", None),
        ("drop table credit; create table pwned as select 1 as x", None),
    ],
)
def test_duckdb_other_statements_are_refused(folder: Path, sql: str, left: str | None) -> None:
    """`;` alone gave an internal error; the rest ran."""
    before = _sha(folder / "credit.duckdb")
    text = sql.format(f=folder)
    error = _outcome(folder, f'  connection: credit.duckdb\n  sql: "{text}"')
    assert _sha(folder / "credit.duckdb") == before
    if left is not None:
        assert not (folder / left).exists()
    assert error is not None and error.issues[0].field == "data.sql"
    assert "Traceback" not in str(error) and "internal" not in str(error)


@pytest.mark.slow
def test_duckdb_file_read_never_reaches_a_report(folder: Path, tmp_path: Path) -> None:
    """Reproduction: a column built from read_text('/proc/self/environ') became an attribute
    value, and an environment secret landed in the console summary, the JSON and the
    Markdown."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("no /proc/self/environ")
    secret = "leaked-Secret-4471"
    spec = _spec(
        folder,
        "  connection: credit.duckdb\n"
        '  sql: "select c.* exclude (region), t.content as region from credit c, '
        "read_text('/proc/self/environ') t\"",
    )
    spec.write_text(spec.read_text() + "output: {dir: out, formats: [json, markdown, html]}\n")
    done = subprocess.run(
        [sys.executable, "-m", "fairscan.cli", "run", str(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, "FAIRSCAN_TEST_SECRET": secret},
        timeout=300,
    )
    assert secret not in done.stdout + done.stderr
    assert not any(
        secret in path.read_text(errors="replace")
        for path in (folder / "out").rglob("*")
        if path.is_file()
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "data.sql" in done.stderr and "read_text" in done.stderr


def test_duckdb_url_cannot_widen_the_connection(folder: Path) -> None:
    """Reproduction: `?access_mode=read_write` with `drop table ...; create table pwned ...`
    exited 0 and changed the file; other settings passed through the same way."""
    database = folder / "credit.duckdb"
    before = _sha(database)
    _outcome(
        folder,
        f"  connection: 'duckdb:///{database}?access_mode=read_write'\n"
        '  sql: "drop table credit; create table pwned as select 1 as x"',
    )
    assert _sha(database) == before
    con = duckdb.connect(str(database), read_only=True)
    assert [t[0] for t in con.sql("show tables").fetchall()] == ["credit"]
    con.close()
    for query in (
        "access_mode=read_write",
        "enable_external_access=true",
        "lock_configuration=false",
    ):
        error = _error(folder, f"  connection: 'duckdb:///{database}?{query}'\n  table: credit")
        issue = error.issues[0]
        assert issue.field == "data.connection" and query.split("=")[0] in issue.message
    # a setting that only bounds resources is passed on
    report = _run(
        folder, f"  connection: 'duckdb:///{database}?memory_limit=200MB'\n  table: credit"
    )
    assert report.provenance.data_rows == 12000


def test_duckdb_connection_is_read_only_and_locked(folder: Path) -> None:
    """Behind the guard: the connection itself reads no file, writes nothing and cannot be
    reconfigured, whatever text reaches it."""
    from fairscan.data.database import connect, database_table

    source = database_table("credit.duckdb", "credit", None, folder)
    con = connect(source).con
    (folder / "plain.txt").write_text("not for the audit")
    for statement in (
        f"select * from read_text('{folder}/plain.txt')",
        f"copy (select 1) to '{folder}/out.csv'",
        f"attach '{folder}/new.duckdb'",
        "set enable_external_access = true",
        "set lock_configuration = false",
        "create table credit2 as select 1",
        "install httpfs",
    ):
        with pytest.raises(duckdb.Error):
            con.execute(statement)
    assert not (folder / "out.csv").exists() and not (folder / "new.duckdb").exists()
    assert con.sql("select count(*) from credit").fetchall() == [(12000,)]
    opened = database_table("credit.duckdb", "credit", None, folder, allow_file_access=True)
    con = connect(opened).con
    assert con.sql(f"select content from read_text('{folder}/plain.txt')").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute("set lock_configuration = false")


def test_file_access_is_an_opt_in(folder: Path, credit: pl.DataFrame) -> None:
    parquet = folder / "credit.parquet"
    credit.write_parquet(parquet)
    sql = f"  connection: credit.duckdb\n  sql: \"select * from read_parquet('{parquet}')\""
    error = _error(folder, sql)
    assert "allow_file_access: true" in (error.issues[0].hint or "")
    report = _run(folder, sql + "\n  allow_file_access: true")
    assert report.provenance.data_rows == credit.height
    error = _error(folder, "  path: credit.parquet\n  allow_file_access: true")
    assert error.issues[0].field == "data.allow_file_access"


def test_duckdb_quoted_table_names(folder: Path) -> None:
    con = duckdb.connect(str(folder / "credit.duckdb"))
    con.execute('create schema "My Schema"')
    con.execute('create table "My Schema"."credit.v2" as select * from credit')
    con.close()
    report = _run(folder, '  connection: credit.duckdb\n  table: \'"My Schema"."credit.v2"\'')
    assert report.provenance.data_rows == 12000
    assert _run(folder, "  connection: credit.duckdb\n  table: credit.main.credit")


# --- SQLite, and checking without the data --------------------------------------------------


def test_sqlite_is_opened_read_only(folder: Path) -> None:
    from fairscan.data.database import connect, database_table

    before = _sha(folder / "credit.sqlite")
    error = _error(folder, '  connection: credit.sqlite\n  sql: "select 1; delete from credit"')
    assert error.issues[0].field == "data.sql"
    backend = connect(database_table("credit.sqlite", "credit", None, folder))
    with pytest.raises(Exception, match="readonly"):
        backend.con.execute("delete from credit")
    assert _sha(folder / "credit.sqlite") == before


@pytest.mark.slow
def test_validate_without_data_refuses_the_query(folder: Path) -> None:
    spec = _spec(folder, '  connection: credit.duckdb\n  sql: "select 1; delete from credit"')
    done = subprocess.run(
        [sys.executable, "-m", "fairscan.cli", "validate", "--no-data", str(spec)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert f"{spec}:5:8: data.sql:" in done.stderr and "Traceback" not in done.stderr


def test_postgres_query_types_without_a_temporary_view(folder: Path, pg: Postgres) -> None:
    """The read-only session creates no view to learn a query's types: they come from the
    query's columns, as Ibis reads a table's (type modifiers, enums)."""
    from fairscan.data.database import database_source

    with pg.connect() as con:
        con.execute("drop type if exists public.region_t cascade")
        con.execute("create type public.region_t as enum ('North', 'South', 'East', 'West')")
    sql = (
        "select c.region::public.region_t as region_e, c.income::numeric(12, 2) as income_n, "
        "c.sex::varchar(8) as sex_v, c.score, 'N%' as pattern from scoring.credit c "
        "where c.region like 'N%'"
    )
    source = database_source(pg.url(), None, sql, folder)
    schema = source.relation.table().schema()
    assert str(schema["income_n"]) == "decimal(12, 2)"
    assert schema["sex_v"].is_string() and schema["region_e"].is_string()
    assert schema["score"].is_floating()
    rows = source.relation.execute(source.relation.table().count().as_table())
    assert 0 < rows.item() < 12000


def test_python_api_checks_the_spec_query(folder: Path) -> None:
    """fairscan.audit(spec=...) reading the spec's database goes through the same guard."""
    import fairscan

    target = folder / "api.csv"
    spec = _spec(
        folder,
        "  connection: credit.duckdb\n"
        f"  sql: \"copy (select 42) to '{target}'; select * from credit\"",
    )
    with pytest.raises(FairscanError) as info:
        fairscan.audit(spec=spec)
    assert not target.exists()
    assert info.value.issues[0].field == "data.sql" and info.value.issues[0].line == 5
