"""Database sources (``data.connection`` with ``data.table`` / ``data.sql``) against real
engines started here: a DuckDB file, an SQLite file and a throwaway PostgreSQL cluster
(tests/data/conftest.py). Each audit through the database gives the report of the same table
audited in memory: same subgroups, statistics and p-values with the same seed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from lazy_import import lazy, require

from fairscan import api
from fairscan.errors import DataError, SpecError

from .conftest import PG_PASSWORD, Postgres

require("ibis", reason="Ibis (fairscan[sql]) is not installed")
duckdb = lazy("duckdb")

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
PASSWORD_VARIABLE = "FAIRSCAN_TEST_PGPASSWORD"

# a continuous score read through a threshold, a quantile-binned attribute, a filter on a
# continuous column, padded text (stripped in the engine), and a calibration scan that needs
# the probabilities themselves
SPEC = """\
version: 1
name: warehouse
data:
{data}
  filter: "income >= 12000 AND region != 'North'"
columns: {{outcome: default, prediction: score, threshold: 0.5}}
attributes: [sex, ethnicity, age_group, region, income]
discretize:
  income: {{quantiles: 4}}
scans:
{scans}
significance: {{replicates: 9, seed: 3, workers: 1}}
"""
ALL_SCANS = """\
  - {id: fpr, type: fpr_scan, restarts: 20}
  - {id: tpr, type: tpr_scan, restarts: 20}
  - {id: calibration, type: bias_scan, direction: negative, restarts: 10}"""
THRESHOLD_SCANS = """\
  - {id: fpr, type: fpr_scan, restarts: 20}
  - {id: tpr, type: tpr_scan, restarts: 20}"""


def _summary(report: Any) -> list[Any]:
    return [
        (
            scan.id,
            scan.status,
            scan.error,
            [(f.label, f.statistic.value, f.p_value, f.size) for f in scan.findings],
            scan.null_distribution.scores if scan.null_distribution else None,
            scan.population.size if scan.population else None,
        )
        for scan in report.scans
    ]


def _run(folder: Path, data: str, scans: str = ALL_SCANS) -> Any:
    spec = folder / "warehouse.audit.yaml"
    spec.write_text(SPEC.format(data=data, scans=scans))
    return api.run_audit(spec, api.RunOptions(write=False)).report


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    frame = pl.read_csv(CREDIT)
    # padded labels: merged by strip_whitespace in the engine as in memory
    return frame.with_columns(
        pl.when(pl.col("sex") == "Male").then(pl.lit(" Male")).otherwise("sex").alias("sex")
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, credit: pl.DataFrame) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    credit.write_parquet(folder / "credit.parquet")
    con = duckdb.connect(str(folder / "credit.duckdb"))
    con.execute("create table credit as select * from credit")
    con.execute('create table nested as select [1, 2] as sex, 1 as "default"')
    con.close()
    import sqlite3

    con = sqlite3.connect(folder / "credit.sqlite")
    con.execute(
        "create table credit (applicant_id integer, sex text, ethnicity text, age_group text, "
        'region text, employment text, income real, "default" integer, score real, '
        "high_risk integer)"
    )
    con.executemany("insert into credit values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", credit.iter_rows())
    con.commit()
    con.close()
    return folder


@pytest.fixture(scope="module")
def in_memory(folder: Path) -> dict[str, Any]:
    path = "  path: credit.parquet\n  streaming: false"
    return {
        "all": _run(folder, path),
        "threshold": _run(folder, path, THRESHOLD_SCANS),
    }


@pytest.fixture(scope="module")
def pg(postgres: Postgres, credit: pl.DataFrame) -> Iterator[Postgres]:
    with postgres.connect() as con:  # type: ignore[attr-defined]
        con.execute("drop table if exists credit")
        con.execute(
            "create table credit (applicant_id int, sex text, ethnicity text, age_group text, "
            'region text, employment text, income double precision, "default" int, '
            "score double precision, high_risk int)"
        )
        with con.cursor().copy("copy credit from stdin") as copy:
            for row in credit.iter_rows():
                copy.write_row(row)
    os.environ[PASSWORD_VARIABLE] = postgres.password
    try:
        yield postgres
    finally:
        os.environ.pop(PASSWORD_VARIABLE, None)


def _assert_same(report: Any, memory: Any) -> None:
    assert _summary(report) == _summary(memory)
    assert report.attributes == memory.attributes
    assert report.provenance.data_rows == memory.provenance.data_rows
    assert report.provenance.rows_after_filter == memory.provenance.rows_after_filter
    assert report.scans[0].findings, "the injected subgroup is found"


@pytest.mark.parametrize(
    "data",
    [
        "  connection: credit.duckdb\n  table: credit",
        "  connection: credit.sqlite\n  table: credit",
        "  connection: duckdb://credit.duckdb\n  sql: select * from credit where score >= 0",
        "  connection: sqlite://credit.sqlite\n  sql: select * from credit",
    ],
    ids=["duckdb-table", "sqlite-table", "duckdb-sql", "sqlite-sql"],
)
@pytest.mark.slow
def test_embedded_databases_match_in_memory(
    folder: Path, in_memory: dict[str, Any], data: str
) -> None:
    report = _run(folder, data)
    _assert_same(report, in_memory["all"])
    source = report.provenance.data_source
    assert source["kind"] == "database"
    assert {"filter", "strip_whitespace", "group by"} <= set(source["pushdown"])
    assert any(step.startswith("discretize") for step in source["pushdown"])
    assert source["rows"] == report.provenance.data_rows
    assert source["engine_version"]
    if "sql:" in data:
        assert source["sql_sha256"] and report.provenance.data_path.split("#")[1].startswith("sql:")


def test_threshold_is_pushed_down(folder: Path, in_memory: dict[str, Any]) -> None:
    """A score read only through `score >= 0.5` comes back as a handful of values per side:
    the aggregate has the cells' rows, not one row per distinct score."""
    report = _run(folder, "  connection: credit.duckdb\n  table: credit", THRESHOLD_SCANS)
    _assert_same(report, in_memory["threshold"])
    source = report.provenance.data_source
    assert "threshold on 'score'" in source["pushdown"]
    # the calibration scan needs every probability: no collapse then
    full = _run(folder, "  connection: credit.duckdb\n  table: credit")
    assert not any(s.startswith("threshold") for s in full.provenance.data_source["pushdown"])
    # nor in bins: the FPR-Scan reads the score through its threshold
    assert not any(s.startswith("probabilities") for s in full.provenance.data_source["pushdown"])
    # at most two rows per (cell, outcome, side) instead of one per distinct score
    assert source["aggregated_rows"] * 3 < full.provenance.data_source["aggregated_rows"]


@pytest.mark.slow
def test_postgres_matches_in_memory(folder: Path, in_memory: dict[str, Any], pg: Postgres) -> None:
    report = _run(folder, f"  connection: '{pg.url()}'\n  table: credit")
    _assert_same(report, in_memory["all"])
    source = report.provenance.data_source
    assert source["engine"] == "postgres"
    assert source["connection"] == f"postgresql://127.0.0.1:{pg.port}/postgres"
    text = report.model_dump_json()
    assert PG_PASSWORD not in text
    assert pg.user not in report.provenance.data_path
    threshold = _run(folder, f"  connection: '{pg.url()}'\n  table: credit", THRESHOLD_SCANS)
    _assert_same(threshold, in_memory["threshold"])
    query = _run(
        folder,
        f"  connection: '{pg.url()}'\n  sql: select * from credit where applicant_id > 0",
    )
    _assert_same(query, in_memory["all"])


@pytest.mark.slow
def test_python_api_pushes_ibis_and_duckdb_tables_down(
    folder: Path, credit: pl.DataFrame, pg: Postgres
) -> None:
    import ibis

    import fairscan

    spec: dict[str, Any] = {
        "outcome": "default",
        "prediction": "score",
        "threshold": 0.5,
        "attributes": ["sex", "ethnicity", "age_group", "region", "income"],
        "discretize": {"income": {"quantiles": 4}},
        "scans": [{"id": "fpr", "type": "fpr_scan", "restarts": 20}],
        "significance": {"replicates": 9, "seed": 3, "workers": 1},
        "filter": "income >= 12000 AND region != 'North'",
    }
    base = fairscan.audit(credit, **spec)
    relation = duckdb.connect(str(folder / "credit.duckdb"), read_only=True).table("credit")
    backend = ibis.postgres.connect(
        host="127.0.0.1", port=pg.port, user=pg.user, password=pg.password, database="postgres"
    )
    for table in (
        relation,
        backend.table("credit"),
        ibis.duckdb.connect().create_table("credit", credit.to_arrow()),
    ):
        report = fairscan.audit(table, **spec)
        assert _summary(report) == _summary(base)
        source = report.provenance.data_source
        assert "threshold on 'score'" in source["pushdown"]
        assert source["engine"] in ("duckdb", "postgres") and source["engine_version"]
        assert source["rows"] == credit.height


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_sample_is_drawn_in_the_database(folder: Path, engine: str, request: Any) -> None:
    """A seeded Bernoulli sample drawn by the engine (DuckDB: TABLESAMPLE ... REPEATABLE;
    PostgreSQL: RANDOM() after setseed), cut to the rows asked for: the same audit each run."""
    if engine == "duckdb":
        source = "  connection: credit.duckdb\n  table: credit"
    else:
        pg = request.getfixturevalue("pg")
        source = f"  connection: '{pg.url()}'\n  sql: select * from credit"
    spec = folder / "sampled.audit.yaml"
    text = SPEC.format(data=source + "\n  sample: {rows: 3000, seed: 7}", scans=THRESHOLD_SCANS)
    spec.write_text(text)
    first = api.run_audit(spec, api.RunOptions(write=False)).report
    again = api.run_audit(spec, api.RunOptions(write=False)).report
    assert _summary(first) == _summary(again)  # seeded
    assert "sample" in first.provenance.data_source["pushdown"]
    assert 2000 < first.provenance.rows_after_filter <= 3000
    assert any("drawn in the database" in w for w in first.data_warnings)


def test_sqlite_sample_asks_for_another_way(folder: Path) -> None:
    error = _error(
        folder, "  connection: credit.sqlite\n  table: credit\n  sample: {rows: 30, seed: 1}"
    )
    assert error.issues[0].field == "data.sample" and "seeded" in error.issues[0].message


# --- errors ----------------------------------------------------------------------------------


def _error(folder: Path, data: str) -> DataError | SpecError:
    with pytest.raises((DataError, SpecError)) as info:
        _run(folder, data, THRESHOLD_SCANS)
    return info.value


def test_unknown_table_lists_the_tables(folder: Path) -> None:
    error = _error(folder, "  connection: credit.sqlite\n  table: credits")
    assert error.issues[0].field == "data.table"
    assert "'credit'" in (error.issues[0].hint or "")
    error = _error(folder, "  connection: credit.duckdb\n  table: credits")
    assert error.issues[0].field == "data.table"


@pytest.mark.parametrize("connection", ["credit.duckdb", "credit.sqlite"])
def test_sql_syntax_error_names_data_sql(folder: Path, connection: str) -> None:
    error = _error(folder, f"  connection: {connection}\n  sql: selec * from credit")
    issue = error.issues[0]
    assert issue.field == "data.sql"
    assert "syntax error" in issue.message.lower()


def test_unknown_column_and_unusable_type(folder: Path) -> None:
    error = _error(
        folder, "  connection: credit.duckdb\n  sql: select sex, income, region, score from credit"
    )
    assert any("'default' is not in the data" in i.message for i in error.issues)
    error = _error(folder, "  connection: credit.duckdb\n  table: nested")
    assert "cannot use" in error.issues[0].message and error.issues[0].column == "sex"


def test_secrets_only_from_the_environment(folder: Path) -> None:
    error = _error(folder, "  connection: 'postgresql://me:hunter2@127.0.0.1/db'\n  table: t")
    assert isinstance(error, SpecError)
    assert "hunter2" not in str(error) and error.issues[0].field == "data.connection"
    error = _error(folder, "  connection: 'postgresql://me:${FAIRSCAN_UNSET_VAR}@h/db'\n  table: t")
    assert "FAIRSCAN_UNSET_VAR" in error.issues[0].message
    error = _error(folder, "  connection: credit.duckdb")
    assert "data.table or data.sql" in str(error)


@pytest.mark.slow
def test_authentication_failure_never_shows_the_password(folder: Path, pg: Postgres) -> None:
    os.environ["FAIRSCAN_TEST_WRONG"] = "wrong-Secret-77"
    try:
        error = _error(
            folder, f"  connection: '{pg.url('${FAIRSCAN_TEST_WRONG}')}'\n  table: credit"
        )
    finally:
        os.environ.pop("FAIRSCAN_TEST_WRONG")
    issue = error.issues[0]
    assert issue.field == "data.connection"
    assert "authentication failed" in issue.message
    assert "wrong-Secret-77" not in str(error) and pg.user not in issue.message.split(": ", 2)[1]


@pytest.mark.slow
def test_unreachable_server_exits_2_without_traceback(folder: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = folder / "down.audit.yaml"
    spec.write_text(
        SPEC.format(
            data=f"  connection: 'postgresql://u:${{{PASSWORD_VARIABLE}}}@127.0.0.1:{port}/db'\n"
            "  table: credit",
            scans=THRESHOLD_SCANS,
        )
    )
    env = {**os.environ, PASSWORD_VARIABLE: "pw-not-shown-42"}
    done = subprocess.run(
        [sys.executable, "-m", "fairscan.cli", "run", str(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "data.connection" in done.stderr and "cannot be reached" in done.stderr
    assert "pw-not-shown-42" not in done.stderr + done.stdout


def test_report_names_no_secret(folder: Path, pg: Postgres, tmp_path: Path) -> None:
    spec = tmp_path / "pg.audit.yaml"
    spec.write_text(
        SPEC.format(data=f"  connection: '{pg.url()}'\n  table: credit", scans=THRESHOLD_SCANS)
        + "output: {dir: out, formats: [json, markdown, html]}\n"
    )
    outcome = api.run_audit(spec)
    for path in outcome.written:
        text = path.read_text()
        assert PG_PASSWORD not in text
    report = json.loads((tmp_path / "out" / "warehouse.json").read_text())
    assert report["provenance"]["data_source"]["table"] == "credit"


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [0.5, 2.0, -1.0], ids=["split", "never", "always"])
def test_threshold_push_down_keeps_warnings_and_checks(tmp_path: Path, threshold: float) -> None:
    """A threshold nothing (or everything) reaches warns with the score's true range, and
    invalid scores (null, out of [0, 1]) are reported as in memory."""
    frame = pl.read_csv(CREDIT).with_columns(
        pl.when(pl.col("applicant_id") % 97 == 0)
        .then(None)
        .when(pl.col("applicant_id") % 89 == 0)
        .then(1.5)
        .otherwise(pl.col("score"))
        .alias("score")
    )
    frame.write_parquet(tmp_path / "scores.parquet")
    duckdb.connect(str(tmp_path / "scores.duckdb")).execute(
        "create table credit as select * from frame"
    ).close()
    scans = THRESHOLD_SCANS.replace("restarts: 20}", f"restarts: 20, threshold: {threshold}}}")
    text = SPEC.replace("prediction: score, threshold: 0.5", "prediction: score")
    results = []
    for data in (
        "  path: scores.parquet\n  streaming: false",
        "  connection: scores.duckdb\n  table: credit",
    ):
        spec = tmp_path / "s.audit.yaml"
        spec.write_text(text.format(data=data, scans=scans))
        with pytest.raises(DataError) as info:
            api.run_audit(spec, api.RunOptions(write=False))
        results.append([(i.field, i.message.split(" (")[0]) for i in info.value.issues])
    assert results[0] == results[1]
    assert any("missing value" in m for _, m in results[0])
    # without the invalid rows: the same reports, warnings included
    clean = frame.filter(pl.col("score").is_not_null() & (pl.col("score") <= 1))
    clean.write_parquet(tmp_path / "clean.parquet")
    duckdb.connect(str(tmp_path / "clean.duckdb")).execute(
        "create table credit as select * from clean"
    ).close()
    reports = []
    for data in (
        "  path: clean.parquet\n  streaming: false",
        "  connection: clean.duckdb\n  table: credit",
    ):
        spec = tmp_path / "c.audit.yaml"
        spec.write_text(text.format(data=data, scans=scans))
        reports.append(api.run_audit(spec, api.RunOptions(write=False)).report)
    assert _summary(reports[0]) == _summary(reports[1])
    # the threshold warnings (the kernel's count of clipped expectations counts the rows of
    # the arrays, distinct rows when aggregated, as for a streamed file)
    warnings = [w for s in reports[0].scans for w in s.warnings if "threshold" in w]
    assert warnings == [w for s in reports[1].scans for w in s.warnings if "threshold" in w]
    if threshold != 0.5:
        assert any("in all" in w for w in warnings), warnings


@pytest.mark.slow
def test_server_that_does_not_answer_times_out(folder: Path) -> None:
    """A server that accepts the connection and never answers: the connect timeout ends the
    attempt with a data error on data.connection (no hang)."""
    pytest.importorskip("psycopg", reason="the PostgreSQL driver psycopg is not installed")
    with socket.socket() as silent:  # listens, never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        os.environ[PASSWORD_VARIABLE] = "pw-silent-9"
        try:
            error = _error(
                folder,
                f"  connection: 'postgresql://u:${{{PASSWORD_VARIABLE}}}@127.0.0.1:{port}/db'\n"
                "  table: credit",
            )
        finally:
            os.environ.pop(PASSWORD_VARIABLE, None)
    issue = error.issues[0]
    assert issue.field == "data.connection"
    assert "did not answer" in issue.message, issue.message
    assert "pw-silent-9" not in str(error)


def test_python_api_reads_the_spec_database(folder: Path, in_memory: dict[str, Any]) -> None:
    """fairscan.audit(spec=...) without data audits the spec's database table, keyword
    overrides included."""
    import fairscan

    spec = folder / "api.audit.yaml"
    spec.write_text(
        SPEC.format(data="  connection: credit.duckdb\n  table: credit", scans=THRESHOLD_SCANS)
    )
    report = fairscan.audit(spec=spec)
    assert _summary(report) == _summary(in_memory["threshold"])
    assert report.provenance.data_source["table"] == "credit"
    fewer = fairscan.audit(spec=spec, filter="income >= 12000")
    assert fewer.provenance.rows_after_filter > report.provenance.rows_after_filter


CALIBRATION_SCANS = """\
  - {id: calibration, type: bias_scan, direction: negative, restarts: 10}
  - {id: under, type: bias_scan, direction: positive, restarts: 10}"""


def _calibration(report: Any) -> list[Any]:
    return [
        (
            scan.id,
            [
                (f.label, f.size, f.detail["observed_count"], f.detail["q"] is not None)
                for f in scan.findings
            ],
            scan.population.size if scan.population else None,
        )
        for scan in report.scans
    ]


# DuckDB in the fast suite; the other engines' runs (about 5 s each) with the slow tests
@pytest.mark.parametrize(
    "engine",
    [
        "duckdb",
        pytest.param("sqlite", marks=pytest.mark.slow),
        pytest.param("postgres", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow
def test_calibration_scan_needs_no_rows(
    folder: Path, engine: str, request: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probabilities read only by calibration bias scans come back in 1000 bins per (profile,
    outcome) with the per-profile sums at the expansion nodes: the same subgroups and scores
    (1e-9 relative) as in memory, p-values within simulation error (replicates drawn per bin)."""
    memory = _run(folder, "  path: credit.parquet\n  streaming: false", CALIBRATION_SCANS)
    if engine == "postgres":
        pg = request.getfixturevalue("pg")
        monkeypatch.setenv(PASSWORD_VARIABLE, pg.password)
        data = f"  connection: '{pg.url()}'\n  table: credit"
    else:
        data = f"  connection: credit.{engine}\n  table: credit"
    report = _run(folder, data, CALIBRATION_SCANS)
    source = report.provenance.data_source
    assert any(s.startswith("probabilities of 'score'") for s in source["pushdown"])
    assert _calibration(report) == _calibration(memory)
    for scan, reference in zip(report.scans, memory.scans, strict=True):
        assert scan.findings, "the scans find a subgroup"
        assert scan.warnings == reference.warnings
        for found, expected in zip(scan.findings, reference.findings, strict=True):
            assert found.statistic.value == pytest.approx(expected.statistic.value, rel=1e-9)
            assert found.detail["expected_count"] == pytest.approx(
                expected.detail["expected_count"], rel=1e-12
            )
            # 9 replicates each: a p-value is k / 10; two estimates of one p-value
            assert found.p_value is not None and expected.p_value is not None
            assert abs(found.p_value - expected.p_value) <= 0.5
    # fewer rows come back than there are distinct (profile, outcome, score) rows
    assert source["aggregated_rows"] < memory.provenance.data_rows


@pytest.mark.slow
def test_calibration_push_down_keeps_checks_and_clip_warning(tmp_path: Path) -> None:
    """Invalid probabilities (null, above 1) read by a binned calibration scan are reported
    as in memory; probabilities of exactly 0 or 1 are clipped and counted as in memory."""
    frame = pl.read_csv(CREDIT).with_columns(
        pl.when(pl.col("applicant_id") % 97 == 0)
        .then(None)
        .when(pl.col("applicant_id") % 89 == 0)
        .then(1.5)
        .when(pl.col("applicant_id") % 83 == 0)
        .then(0.0)
        .when(pl.col("applicant_id") % 79 == 0)
        .then(1.0)
        .otherwise(pl.col("score"))
        .alias("score")
    )
    clean = frame.filter(pl.col("score").is_not_null() & (pl.col("score") <= 1))
    outcomes: list[list[Any]] = [[], []]
    for i, scores in enumerate((frame, clean)):
        scores.write_parquet(tmp_path / f"t{i}.parquet")
        duckdb.connect(str(tmp_path / f"t{i}.duckdb")).execute(
            "create table credit as select * from scores"
        ).close()
        for data in (
            f"  path: t{i}.parquet\n  streaming: false",
            f"  connection: t{i}.duckdb\n  table: credit",
        ):
            spec = tmp_path / "s.audit.yaml"
            spec.write_text(SPEC.format(data=data, scans=CALIBRATION_SCANS))
            if i == 0:
                with pytest.raises(DataError) as info:
                    api.run_audit(spec, api.RunOptions(write=False))
                # (the count of values outside [0, 1] counts distinct rows of an aggregated
                # table, as for a streamed file: the message up to it)
                outcomes[i].append([(x.field, x.message.split(";")[0]) for x in info.value.issues])
            else:
                outcomes[i].append(api.run_audit(spec, api.RunOptions(write=False)).report)
    assert outcomes[0][0] == outcomes[0][1]
    assert any("missing value" in m for _, m in outcomes[0][0])
    memory, database = outcomes[1]
    assert any(s.startswith("probabilities") for s in database.provenance.data_source["pushdown"])
    assert _calibration(database) == _calibration(memory)
    for scan, reference in zip(database.scans, memory.scans, strict=True):
        assert scan.warnings == reference.warnings
        assert any("clipped" in w for w in scan.warnings)
