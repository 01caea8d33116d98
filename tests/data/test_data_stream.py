"""Streamed datasets (issue 12): directories, globs, hive partitions, URLs, lazy tables of other
engines, exact streamed quantiles, data.sample and the memory guards.

The reference is always the in-memory path: a streamed audit must give the same findings,
scores and null distributions as reading the same rows into memory.
"""

from __future__ import annotations

import functools
import http.server
import io
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from fairscan import api
from fairscan.data import stream
from fairscan.data.discretize import apply_edges, quantile_edges
from fairscan.errors import DataError, SpecError

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

SPEC = """\
version: 1
name: streamed
data:
  path: {path}
{data_extra}columns:
  outcome: default
  prediction: score
  recommendation: high_risk
attributes: [sex, ethnicity, age_group, region, income]
discretize:
  income: {{quantiles: 4}}
scans:
  - {{id: fpr, type: fpr_scan, restarts: 20}}
  - {{id: tpr, type: tpr_scan, restarts: 20}}
  - {{id: calibration, type: bias_scan, direction: negative, restarts: 10}}
significance: {{replicates: 9, seed: 3, workers: 1}}
"""


def _run(folder: Path, path: str, data_extra: str = "") -> Any:
    spec = folder / "streamed.audit.yaml"
    spec.write_text(SPEC.format(path=path, data_extra=data_extra))
    return api.run_audit(spec, api.RunOptions(write=False)).report


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


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory, credit: pl.DataFrame) -> list[Any]:
    folder = tmp_path_factory.mktemp("memory")
    credit.write_parquet(folder / "credit.parquet")
    return _summary(_run(folder, "credit.parquet", "  streaming: false\n"))


def test_streamed_file_matches_in_memory(
    tmp_path: Path, credit: pl.DataFrame, in_memory: list[Any]
) -> None:
    credit.write_parquet(tmp_path / "credit.parquet")
    report = _run(tmp_path, "credit.parquet", "  streaming: true\n")
    assert _summary(report) == in_memory
    assert report.provenance.rows_after_filter == credit.height
    assert report.scans[0].findings, "the injected subgroup is found"


def test_directory_of_parts_matches_in_memory(
    tmp_path: Path, credit: pl.DataFrame, in_memory: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "SLICE_ROWS", 1000)  # many slices, merged as they come
    monkeypatch.setattr(stream, "MERGE_ROWS", 500)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, chunk in enumerate(credit.iter_slices(2500)):
        chunk.write_parquet(parts / f"part-{i}.parquet")
    report = _run(tmp_path, "parts")
    assert _summary(report) == in_memory
    assert report.provenance.data_path == "parts"
    glob_report = _run(tmp_path, "parts/part-*.parquet")
    assert _summary(glob_report) == in_memory


def test_hive_partitions_become_columns(
    tmp_path: Path, credit: pl.DataFrame, in_memory: list[Any]
) -> None:
    folder = tmp_path / "hive"
    for (region,), part in credit.group_by(["region"]):
        target = folder / f"region={region}"
        target.mkdir(parents=True)
        part.drop("region").write_parquet(target / "data.parquet")
    report = _run(tmp_path, "hive")
    assert report.provenance.rows_after_filter == credit.height
    # same scans on the same rows: the same scores (the hive column is a string like the CSV's)
    assert _summary(report) == in_memory


def test_csv_dataset_streams_in_batches(
    tmp_path: Path, credit: pl.DataFrame, in_memory: list[Any]
) -> None:
    folder = tmp_path / "csv"
    folder.mkdir()
    for i, chunk in enumerate(credit.iter_slices(5000)):
        chunk.write_csv(folder / f"part-{i}.csv")
    assert _summary(_run(tmp_path, "csv")) == in_memory


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with HTTP range requests (object stores serve Parquet footers this way)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_head(self) -> Any:
        spec = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if spec is None or not path.is_file():
            return super().send_head()
        data = path.read_bytes()
        first, _, last = spec.removeprefix("bytes=").partition("-")
        if first == "":  # the last N bytes
            start, end = max(0, len(data) - int(last)), len(data) - 1
        else:
            start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
        body = data[start : end + 1]
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return io.BytesIO(body)


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_RangeHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()  # the listening socket (a ResourceWarning, an error here)


def test_https_style_url(
    http_folder: tuple[Path, str], credit: pl.DataFrame, in_memory: list[Any], tmp_path: Path
) -> None:
    folder, base = http_folder
    credit.write_parquet(folder / "credit.parquet")
    report = _run(tmp_path, f"{base}/credit.parquet")
    assert _summary(report) == in_memory
    assert report.provenance.data_path.startswith("http://127.0.0.1")


def test_filter_applies_while_streaming(tmp_path: Path, credit: pl.DataFrame) -> None:
    credit.write_parquet(tmp_path / "credit.parquet")
    extra = "  filter: \"region != 'East'\"\n"
    streamed = _run(tmp_path, "credit.parquet", extra + "  streaming: true\n")
    memory = _run(tmp_path, "credit.parquet", extra + "  streaming: false\n")
    assert _summary(streamed) == _summary(memory)
    assert streamed.provenance.rows_after_filter == credit.filter(pl.col("region") != "East").height
    assert streamed.provenance.data_rows == credit.height


def test_sample_draws_the_same_rows(tmp_path: Path, credit: pl.DataFrame) -> None:
    credit.write_parquet(tmp_path / "credit.parquet")
    extra = "  sample: {rows: 3000, seed: 7}\n"
    first = _run(tmp_path, "credit.parquet", extra)
    again = _run(tmp_path, "credit.parquet", extra)
    assert _summary(first) == _summary(again)
    assert first.provenance.rows_after_filter == 3000
    assert first.provenance.data_rows == credit.height
    other = _run(tmp_path, "credit.parquet", "  sample: {rows: 3000, seed: 8}\n")
    assert _summary(other) != _summary(first)


def test_sample_is_uniform_without_replacement(credit: pl.DataFrame) -> None:
    numbered = credit.with_row_index("row")
    query, _ = stream.stream_query(
        numbered.lazy(),
        sliceable=True,
        columns=["row"],
        attributes=[],
        filter=None,
        strip_whitespace=True,
    )
    frame, n_raw, total = stream.sampled_table(query, 500, seed=1)
    rows = frame["row"].to_numpy()
    assert n_raw == total == credit.height
    assert len(np.unique(rows)) == 500
    assert np.all(np.diff(rows) > 0)  # data order
    expected = np.sort(
        np.random.Generator(np.random.PCG64(np.random.SeedSequence(1))).choice(
            credit.height, 500, replace=False
        )
    )
    assert np.array_equal(rows, expected)


@pytest.mark.parametrize("method", ["value_counts", "histogram"])
@pytest.mark.parametrize("quantiles", [1, 3, 5, 10])
def test_streamed_quantiles_are_exact(
    method: str, quantiles: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(quantiles)
    values = np.concatenate(
        [rng.lognormal(size=3000), np.zeros(800), rng.integers(0, 5, 500).astype(float)]
    )
    values[rng.choice(len(values), 50, replace=False)] = np.nan
    frame = pl.DataFrame({"x": values, "keep": rng.random(len(values)) < 0.8}).with_columns(
        pl.when(pl.int_range(pl.len()) % 97 == 0).then(None).otherwise(pl.col("x")).alias("x")
    )
    monkeypatch.setattr(stream, "SLICE_ROWS", 700)
    if method == "histogram":
        monkeypatch.setattr(stream, "MAX_VALUE_COUNTS", 10)
        monkeypatch.setattr(stream, "HISTOGRAM_BUCKETS", 64)
    query, _ = stream.stream_query(
        frame.lazy(),
        sliceable=True,
        columns=["x"],
        attributes=[],
        filter="keep = true",
        strip_whitespace=True,
    )
    got = stream.streamed_quantile_edges(query, frame.height, "x", quantiles)
    kept = frame.filter(pl.col("keep"))["x"].cast(pl.Float64).fill_null(math.nan).to_numpy()
    assert got == quantile_edges(kept, quantiles)


def test_bin_codes_match_apply_edges() -> None:
    values = [None, math.nan, -5.0, 0.0, 1.0, 1.5, 2.0, 9.0, 10.0, 11.0]
    for edges in [(0.0, 1.0, 2.0, 10.0), (-math.inf, 1.0, 2.0, math.inf), (3.0, 3.0)]:
        codes = pl.DataFrame({"x": values}).select(stream.bin_codes("x", edges))["x"]
        expected, _ = apply_edges(values, edges)
        n_bins = len(edges) - 1
        got = codes.fill_null(n_bins).to_numpy()
        assert np.array_equal(got, expected), edges


@pytest.mark.slow
def test_lazy_tables_of_other_engines_match(credit: pl.DataFrame) -> None:
    import fairscan

    spec: dict[str, Any] = {
        "outcome": "default",
        "prediction": "score",
        "recommendation": "high_risk",
        "attributes": ["sex", "ethnicity", "age_group", "region", "income"],
        "discretize": {"income": {"quantiles": 4}},
        "scans": [{"id": "fpr", "type": "fpr_scan", "restarts": 20}],
        "significance": {"replicates": 9, "seed": 3, "workers": 1},
        "filter": "region != 'North'",
    }
    base = _summary(fairscan.audit(credit, **spec))
    lazy = fairscan.audit(credit.lazy(), **spec)
    assert _summary(lazy) == base
    assert lazy.provenance.data_path == "<in-memory polars LazyFrame>"
    duckdb = pytest.importorskip("duckdb")
    relation = duckdb.from_arrow(credit.to_arrow())
    via_duckdb = fairscan.audit(relation, **spec)
    assert _summary(via_duckdb) == base
    assert via_duckdb.provenance.data_path == "<in-memory DuckDB relation>"
    dd = pytest.importorskip("dask.dataframe")
    via_dask = fairscan.audit(dd.from_pandas(credit.to_pandas(), npartitions=3), **spec)
    assert _summary(via_dask) == base


def test_too_many_distinct_rows_names_the_sample(
    tmp_path: Path, credit: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fairscan.data import load

    monkeypatch.setattr(stream, "SLICE_ROWS", 1000)
    monkeypatch.setattr(stream, "MERGE_ROWS", 100)
    monkeypatch.setattr(load, "available_memory", lambda: 2_000_000)
    credit.write_parquet(tmp_path / "credit.parquet")
    with pytest.raises(DataError) as caught:
        _run(tmp_path, "credit.parquet", "  streaming: true\n")
    text = caught.value.render()
    assert "data.sample" in text or "sample:" in text
    assert "distinct rows" in text


def test_row_scan_too_large_stops_with_the_way_out(
    tmp_path: Path, credit: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    credit.write_parquet(tmp_path / "credit.parquet")
    spec = tmp_path / "streamed.audit.yaml"
    text = SPEC.format(path="credit.parquet", data_extra="  streaming: true\n")
    # a Berk-Jones bias scan works on rows (the Bernoulli one runs on the counts)
    text = text.replace(
        "direction: negative,", "direction: negative, score: berk_jones, alpha: 0.2,"
    )
    spec.write_text(text)
    prepared = api.prepare_audit(spec)
    from fairscan.data import load

    monkeypatch.setattr(load, "available_memory", lambda: 100_000)
    report = api.run_prepared(prepared, api.RunOptions(write=False)).report
    status = {scan.id: scan.status for scan in report.scans}
    assert status["fpr"] != "error" and status["tpr"] != "error"  # aggregate scans still run
    assert status["calibration"] == "error"
    error = report.scans[2].error or ""
    assert "data.sample" in error or "sample:" in error
    assert "memory" in error


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("nothing/*.parquet", "matches no file"),
        ("empty_folder", "holds no data files"),
        ("ftp://example.com/x.parquet", "scheme 'ftp'"),
        ("mixed", "mixes data formats"),
    ],
)
def test_dataset_path_errors(tmp_path: Path, path: str, words: str) -> None:
    (tmp_path / "empty_folder").mkdir()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pl.DataFrame({"a": [1]}).write_parquet(mixed / "a.parquet")
    pl.DataFrame({"a": [1]}).write_csv(mixed / "b.csv")
    with pytest.raises(DataError) as caught:
        _run(tmp_path, path)
    assert words in caught.value.render()


def test_parts_with_different_columns_are_a_data_error(
    tmp_path: Path, credit: pl.DataFrame
) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    credit.head(100).write_parquet(parts / "a.parquet")
    credit.head(100).with_columns(pl.col("sex").cast(pl.Categorical)).drop("region").write_parquet(
        parts / "b.parquet"
    )
    with pytest.raises((DataError, SpecError)) as caught:
        _run(tmp_path, "parts")
    assert "data.path" in caught.value.render() or "data" in caught.value.render()


def test_row_scans_get_the_rows_back(tmp_path: Path, credit: pl.DataFrame) -> None:
    """A scan that works on rows (here Berk-Jones) reads the aggregated rows expanded again:
    the same results as in memory."""
    credit.write_parquet(tmp_path / "credit.parquet")
    reports = []
    for streaming in ("true", "false"):
        text = SPEC.format(path="credit.parquet", data_extra=f"  streaming: {streaming}\n")
        text = text.replace(
            "direction: negative,", "direction: negative, score: berk_jones, alpha: 0.2,"
        )
        spec = tmp_path / f"rows-{streaming}.audit.yaml"
        spec.write_text(text)
        reports.append(_summary(api.run_audit(spec, api.RunOptions(write=False)).report))
    assert reports[0] == reports[1]
    assert reports[0][2][3], "the Berk-Jones scan reports its subgroup"


def test_nulls_and_padded_text_stream_like_in_memory(tmp_path: Path, credit: pl.DataFrame) -> None:
    """Null attribute values, NaN/null in a discretised column and text with surrounding
    whitespace (stripped before the filter) give the same audit streamed and in memory."""
    rng = np.random.default_rng(5)
    holes = pl.Series(rng.random(credit.height) < 0.05)
    messy = credit.with_columns(
        pl.when(holes).then(None).otherwise(pl.col("region")).alias("region"),
        pl.when(pl.Series(rng.random(credit.height) < 0.03))
        .then(float("nan"))
        .when(holes)
        .then(None)
        .otherwise(pl.col("income"))
        .alias("income"),
        pl.when(pl.col("sex") == "Male").then(pl.lit(" Male ")).otherwise("sex").alias("sex"),
    )
    messy.write_parquet(tmp_path / "messy.parquet")
    extra = "  filter: \"sex = 'Male' OR region = 'East'\"\n"
    streamed = _run(tmp_path, "messy.parquet", extra + "  streaming: true\n")
    memory = _run(tmp_path, "messy.parquet", extra + "  streaming: false\n")
    assert _summary(streamed) == _summary(memory)
    assert streamed.data_warnings == memory.data_warnings
    assert any("null values scanned" in w for w in streamed.data_warnings)
