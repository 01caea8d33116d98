"""Database sources on hostile tables (issue 34): every edge case a located error naming the
field or column (never an internal error), against real DuckDB and SQLite files and a
throwaway PostgreSQL cluster (tests/data/conftest.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from fairscan import api
from fairscan.errors import DataError, SpecError

pytest.importorskip("ibis", reason="Ibis (fairscan[sql]) is not installed")
duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
COLUMNS = (
    "applicant_id, sex, ethnicity, age_group, region, employment, income, default, score, "
    "high_risk"
)

SPEC = """\
version: 1
name: edges
data:
{data}
columns: {{outcome: default, prediction: score, threshold: 0.5}}
attributes: {attributes}
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
significance: {{replicates: 9, seed: 3, workers: 1}}
"""


def _spec(folder: Path, data: str, attributes: str = "[sex, ethnicity, age_group]") -> Path:
    spec = folder / "edges.audit.yaml"
    spec.write_text(SPEC.format(data=data, attributes=attributes))
    return spec


def _run(folder: Path, data: str, attributes: str = "[sex, ethnicity, age_group]") -> Any:
    return api.run_audit(_spec(folder, data, attributes), api.RunOptions(write=False)).report


def _error(folder: Path, data: str, attributes: str = "[sex, ethnicity, age_group]") -> Any:
    with pytest.raises((DataError, SpecError)) as info:
        _run(folder, data, attributes)
    return info.value


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, credit: pl.DataFrame) -> Path:
    folder = tmp_path_factory.mktemp("edges")
    credit.write_parquet(folder / "credit.parquet")
    con = duckdb.connect(str(folder / "t.duckdb"))
    con.execute("create table credit as select * from credit")
    con.execute("create table other as select 1 as a, 2 as b")
    con.execute("create type sexes as enum ('Male', ' Male', 'Female')")
    # padded labels in an ENUM: merged by strip_whitespace as the text column's are
    con.execute(
        "create table enumt as select * replace (cast(case when applicant_id % 2 = 0 and "
        "sex = 'Male' then ' Male' else sex end as sexes) as sex) from credit"
    )
    con.execute('create table star as select *, sex as "*" from credit')
    con.close()
    db = sqlite3.connect(folder / "t.sqlite")
    db.execute(
        "create table credit (applicant_id integer, sex text, ethnicity text, age_group text, "
        'region text, employment text, income real, "default" integer, score real, '
        "high_risk integer)"
    )
    db.executemany("insert into credit values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", credit.iter_rows())
    # a column of no declared type holding only NULL (Ibis reads its type as null)
    db.execute(
        "create table nulls as select applicant_id, NULL as sex, ethnicity, age_group, region, "
        'employment, income, "default", score, high_risk from credit'
    )
    db.commit()
    db.close()
    return folder


def _findings(report: Any) -> list[Any]:
    return [
        (f.label, f.statistic.value, f.p_value, f.size) for s in report.scans for f in s.findings
    ]


@pytest.mark.parametrize(
    ("data", "names"),
    [
        ("  connection: t.duckdb\n  table: other", ["a", "b"]),
        ("  connection: t.sqlite\n  sql: select 1 as a, 2 as b", ["a", "b"]),
        # a statement that is no SELECT (refused upfront elsewhere): no usable column either
        ("  connection: t.duckdb\n  sql: copy (select 42) to '{folder}/copied.csv'", None),
    ],
    ids=["duckdb-table", "sqlite-sql", "duckdb-copy"],
)
def test_a_table_without_the_spec_s_columns_names_them(
    folder: Path, data: str, names: list[str] | None
) -> None:
    error = _error(folder, data.format(folder=folder))
    fields = {i.field for i in error.issues}
    assert {"columns.outcome", "attributes[0]"} <= fields or "data.sql" in fields, error
    if names is not None:
        issue = next(i for i in error.issues if i.field == "columns.outcome")
        assert issue.column == "default"
        assert issue.hint == f"the data's columns are: {', '.join(map(repr, names))}"


@pytest.mark.parametrize(
    "data",
    [
        "  connection: t.duckdb\n  sql: select sex, ethnicity, age_group, score from credit",
        "  connection: t.sqlite\n  sql: select sex, ethnicity, age_group, score from credit",
        "  connection: t.duckdb\n  table: credit\n  sample: {rows: 3000, seed: 1}",
        "  path: credit.parquet\n  streaming: true",
        "  path: credit.parquet\n  sample: {rows: 3000, seed: 1}",
    ],
    ids=["duckdb", "sqlite", "duckdb-sample", "streamed", "streamed-sample"],
)
def test_the_missing_column_hint_lists_the_table_s_own_columns(folder: Path, data: str) -> None:
    """Not the aggregate's (``__fairscan_rows__``) nor only the audited ones."""
    attributes = "[sex, ethnicity, age_group]" if "sql" in data else "[sex, ethnicity, nothere]"
    error = _error(folder, data, attributes)
    issue = next(i for i in error.issues if "is not in the data" in i.message)
    assert "__fairscan" not in (issue.hint or "")
    if "sql" in data:
        assert issue.field == "columns.outcome"
        assert issue.hint == "the data's columns are: 'sex', 'ethnicity', 'age_group', 'score'"
    else:
        assert issue.field == "attributes[2]"
        assert issue.hint == f"the data's columns are: {', '.join(map(repr, COLUMNS.split(', ')))}"


@pytest.mark.parametrize("data", ["  connection: t.duckdb\n  table: star", "  path: star.csv"])
def test_an_attribute_named_star_is_a_located_error(
    folder: Path, credit: pl.DataFrame, data: str
) -> None:
    credit.with_columns(pl.col("sex").alias("*")).write_csv(folder / "star.csv")
    error = _error(folder, data, "['*', ethnicity]")
    issue = error.issues[0]
    assert issue.field == "attributes[0]" and issue.column == "*"
    assert "pattern" in issue.message and "rename" in (issue.hint or "")
    assert issue.line is not None  # located in the spec file


def test_duckdb_sql_without_a_result_names_data_sql(folder: Path) -> None:
    error = _error(folder, "  connection: t.duckdb\n  sql: ';'")
    assert error.issues[0].field == "data.sql"
    assert error.issues[0].line is not None


def test_a_duckdb_enum_attribute_is_stripped_as_text(folder: Path) -> None:
    """The ENUM's padded label merges with its trimmed one: the audit of the text column."""
    enum = _run(folder, "  connection: t.duckdb\n  table: enumt")
    text = _run(folder, "  connection: t.duckdb\n  table: credit")
    assert _findings(enum) == _findings(text) and _findings(text)
    assert enum.attributes == text.attributes


def test_an_all_null_sqlite_attribute_audits_as_in_memory(
    folder: Path, credit: pl.DataFrame
) -> None:
    credit.with_columns(sex=pl.lit(None)).write_parquet(folder / "nulls.parquet")
    database = _run(folder, "  connection: t.sqlite\n  table: nulls")
    memory = _run(folder, "  path: nulls.parquet\n  streaming: false")
    streamed = _run(folder, "  path: nulls.parquet\n  streaming: true")
    assert _findings(database) == _findings(memory) == _findings(streamed)
    assert database.data_warnings == memory.data_warnings
    assert any("null values scanned as" in w for w in database.data_warnings)
