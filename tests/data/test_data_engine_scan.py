"""Streamed datasets and polars LazyFrames prepared in DuckDB (issue 29): the same push-down
path as database tables, the same tables and seeded results as in memory, the progress of
the engine's passes, its interruption, and data-row counts in the checks' messages."""

from __future__ import annotations

import _thread
import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import fairscan
from fairscan import api
from fairscan.data.engine_scan import Engine, memory_limit
from fairscan.data.netio import watched
from fairscan.errors import DataError, SpecError

# without fairscan[sql] datasets are streamed by polars (tests/data/test_data_engine_parity.py)
pytest.importorskip("ibis", reason="DuckDB prepares datasets with fairscan[sql] installed")

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

SPEC = """\
version: 1
name: engine
data:
  path: {path}
{data_extra}columns:
  outcome: default
  recommendation: high_risk
attributes: [sex, ethnicity, age_group, region, income]
discretize:
  income: {{quantiles: 4}}
scans:
  - {{id: fpr, type: fpr_scan, restarts: 20}}
significance: {{replicates: 9, seed: 3, workers: 1}}
"""


def _run(folder: Path, path: str, data_extra: str = "", options: Any = None) -> Any:
    spec = folder / "engine.audit.yaml"
    spec.write_text(SPEC.format(path=path, data_extra=data_extra))
    return api.run_audit(spec, options or api.RunOptions(write=False)).report


def _scans(report: Any) -> list[Any]:
    return [
        (
            scan.id,
            [(f.label, f.statistic.value, f.p_value, f.size) for f in scan.findings],
            scan.null_distribution.scores if scan.null_distribution else None,
        )
        for scan in report.scans
    ]


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT)


def test_a_parquet_dataset_is_prepared_by_duckdb(tmp_path: Path, credit: pl.DataFrame) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        credit[i * 4000 : (i + 1) * 4000].write_parquet(parts / f"p{i}.parquet")
    credit.write_parquet(tmp_path / "credit.parquet")
    streamed = _run(tmp_path, "parts/")
    source = streamed.provenance.data_source
    assert source["engine"] == "duckdb" and source["reader"] == "duckdb read_parquet"
    assert source["kind"] == "files" and source["files"] == 3 and source["rows"] == 12000
    assert "group by" in source["pushdown"]
    assert "discretize (quantiles exact, by value counts)" in source["pushdown"]
    in_memory = _run(tmp_path, "credit.parquet", "  streaming: false\n")
    assert in_memory.provenance.data_source is None
    assert _scans(streamed) == _scans(in_memory)


def test_a_csv_dataset_is_decoded_by_polars_and_aggregated_by_duckdb(
    tmp_path: Path, credit: pl.DataFrame
) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    credit.head(6000).write_csv(parts / "a.csv")
    credit.tail(6000).write_csv(parts / "b.csv")
    streamed = _run(tmp_path, "parts/*.csv")
    assert streamed.provenance.data_source["reader"].startswith("polars streaming engine")
    assert _scans(streamed) == _scans(_run(tmp_path, str(CREDIT), "  streaming: false\n"))


def test_a_lazyframe_goes_through_duckdb_with_the_dataframe_s_results(
    credit: pl.DataFrame,
) -> None:
    fields: dict[str, Any] = {
        "outcome": "default",
        "recommendation": "high_risk",
        "attributes": ["sex", "ethnicity", "age_group", "region"],
        "scans": [{"id": "fpr", "type": "fpr_scan", "restarts": 20}],
        "significance": {"replicates": 19, "seed": 5, "workers": 1},
        "filter": "income >= 20000",
    }
    lazy = fairscan.audit(credit.lazy(), **fields)
    frame = fairscan.audit(credit, **fields)
    assert lazy.provenance.data_source["engine"] == "duckdb"
    assert lazy.provenance.data_source["kind"] == "polars LazyFrame"
    assert "filter" in lazy.provenance.data_source["pushdown"]
    assert _scans(lazy) == _scans(frame)


def test_categorical_columns_come_back_in_their_polars_type(
    tmp_path: Path, credit: pl.DataFrame
) -> None:
    """DuckDB reads a categorical as text; the aggregate is cast back, so the streamed table
    is the in-memory one (same encoding, same seeded draws)."""
    typed = credit.with_columns(pl.col("ethnicity").cast(pl.Categorical))
    typed.write_parquet(tmp_path / "typed.parquet")
    streamed = _run(tmp_path, "typed.parquet", "  streaming: true\n")
    assert streamed.provenance.data_source["engine"] == "duckdb"
    assert _scans(streamed) == _scans(_run(tmp_path, "typed.parquet", "  streaming: false\n"))


class _Recorder:
    """A progress display that keeps what it was told."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.advanced: dict[str, int] = {}

    def start(self, label: str, total: int | None) -> None:
        self.started.append(label)

    def advance(self, n: int = 1) -> None:
        task = self.started[-1]
        self.advanced[task] = self.advanced.get(task, 0) + n

    def done(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:  # the display's other hooks: not needed here
        return lambda *args, **kwargs: None


def test_the_progress_counts_the_rows_of_each_pass(tmp_path: Path, credit: pl.DataFrame) -> None:
    """Two passes over the 12,000 rows: the value counts of income (its quantiles), then the
    GROUP BY; counts read from the files' metadata are no pass."""
    credit.write_parquet(tmp_path / "credit.parquet")
    recorder = _Recorder()
    options = api.RunOptions(write=False, progress=recorder)  # type: ignore[arg-type]
    _run(tmp_path, "credit.parquet", "  streaming: true\n", options)
    reading = [label for label in recorder.started if "rows read" in label]
    assert len(reading) == 1
    assert recorder.advanced[reading[0]] == 2 * credit.height


def test_an_interrupt_stops_duckdb_s_query() -> None:
    """The waiting thread's KeyboardInterrupt interrupts the engine's running query, so that
    it does not go on in the background."""
    engine = Engine()
    con = engine.connection()
    ended = threading.Event()
    failure: list[BaseException] = []

    def read() -> Any:
        try:
            return con.sql("select sum(hash(range)) from range(100000000000)").fetchall()
        except BaseException as exc:
            failure.append(exc)
            raise
        finally:
            ended.set()

    threading.Timer(0.5, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        watched(read, remote=False, cancel=engine.interrupt)
    assert ended.wait(60), "the query went on after the interrupt"
    assert failure and "interrupt" in type(failure[0]).__name__.lower()
    engine.close()


def test_duckdb_memory_is_bounded() -> None:
    assert 64 * 2**20 <= memory_limit() <= 768 * 2**20
    engine = Engine()
    limit = engine.connection().sql("select current_setting('memory_limit')").fetchall()[0][0]
    assert limit.endswith(("MiB", "MB", "GiB", "GB"))
    spill = engine.connection().sql("select current_setting('temp_directory')").fetchall()[0][0]
    assert "fairscan-duckdb-" in spill
    engine.close()
    assert not Path(spill).exists()


def test_probabilities_outside_the_unit_interval_are_counted_in_data_rows(
    tmp_path: Path,
) -> None:
    """An aggregated table counts each distinct value once; the message counts the rows."""
    frame = pl.DataFrame(
        {
            "g": ["a", "b"] * 50,
            "y": [0, 1] * 50,
            "p": [1.5] * 10 + [-0.5] * 5 + [0.3] * 85,
        }
    )
    frame.write_parquet(tmp_path / "p.parquet")
    spec = tmp_path / "p.audit.yaml"
    spec.write_text(
        "version: 1\nname: p\ndata: {path: p.parquet, streaming: true}\n"
        "columns: {outcome: y, prediction: p}\nattributes: [g]\n"
        "scans:\n  - {id: c, type: bias_scan, direction: negative}\n"
        "significance: {replicates: 0}\n"
    )
    with pytest.raises((DataError, SpecError)) as caught:
        api.run_audit(spec, api.RunOptions(write=False))
    assert "15 values lie outside" in caught.value.render()


def test_a_missing_column_is_named(tmp_path: Path, credit: pl.DataFrame) -> None:
    credit.drop("region").write_parquet(tmp_path / "credit.parquet")
    with pytest.raises((DataError, SpecError)) as caught:
        _run(tmp_path, "credit.parquet", "  streaming: true\n")
    assert "region" in caught.value.render()


def test_a_corrupt_part_is_a_data_error_naming_data_path(
    tmp_path: Path, credit: pl.DataFrame
) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    credit.write_parquet(parts / "a.parquet")
    (parts / "b.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises((DataError, SpecError)) as caught:
        _run(tmp_path, "parts/")
    assert "data.path" in caught.value.render()


def _megabytes(setting: str) -> float:
    number, unit = setting.split(" ") if " " in setting else (setting[:-3], setting[-3:])
    scale = {"KiB": 2**-10, "MiB": 1, "GiB": 2**10, "KB": 1e3 / 2**20, "MB": 1e6 / 2**20}
    return float(number) * scale.get(unit, 2**10 if unit.startswith("G") else 1)


def test_a_duckdb_connection_gets_the_same_bounded_memory(tmp_path: Path) -> None:
    """data.connection to a DuckDB file: the memory limit streamed datasets get (a 100M-row
    threshold audit stays under 1 GiB without ?memory_limit=), unless the URL sets its own."""
    duckdb = pytest.importorskip("duckdb")
    from fairscan.data.database import database_source

    for name in ("t.duckdb", "u.duckdb"):
        con = duckdb.connect(str(tmp_path / name))
        con.sql("create table t as select 1 as x")
        con.close()
    default = database_source(str(tmp_path / "t.duckdb"), "t", None, tmp_path)
    setting = default.relation.relation.query(
        "fairscan_input", "select current_setting('memory_limit')"
    ).fetchall()[0][0]
    assert _megabytes(setting) <= 768 * 1.05
    own = database_source(
        f"duckdb://{tmp_path / 'u.duckdb'}?memory_limit=100MB", "t", None, tmp_path
    )
    setting = own.relation.relation.query(
        "fairscan_input", "select current_setting('memory_limit')"
    ).fetchall()[0][0]
    assert 90 <= _megabytes(setting) <= 100
