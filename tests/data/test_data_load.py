"""Reading data files."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from fairscan.data.load import file_sha256, read_table
from fairscan.errors import DataError

FRAME = pl.DataFrame(
    {
        "y": [0, 1, 1, 0],
        "p": [0.1, 0.9, None, 0.25],
        "race": ["A", "N/A", None, "NA"],
        "flag": [True, False, None, True],
        "my col": [1, None, 3, 4],
    }
)

WRITERS: dict[str, Callable[[pl.DataFrame, Path], None]] = {
    ".csv": lambda df, p: df.write_csv(p),
    ".parquet": lambda df, p: df.write_parquet(p),
    ".ndjson": lambda df, p: df.write_ndjson(p),
    ".jsonl": lambda df, p: df.write_ndjson(p),
    ".arrow": lambda df, p: df.write_ipc(p),
    ".ipc": lambda df, p: df.write_ipc(p),
    ".feather": lambda df, p: df.write_ipc(p),
}


def _data_error(path: Path) -> DataError:
    with pytest.raises(DataError) as info:
        read_table(path)
    assert info.value.issues[0].field == "data.path"
    assert info.value.issues[0].hint
    return info.value


@pytest.mark.parametrize("ext", sorted(WRITERS))
def test_round_trip(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"data{ext}"
    WRITERS[ext](FRAME, path)
    assert_frame_equal(read_table(path), FRAME)


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    path = tmp_path / "DATA.CSV"
    FRAME.write_csv(path)
    assert read_table(path).shape == FRAME.shape


def test_csv_only_empty_fields_are_null(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a,b\nNA,1\nN/A,\nnull,3\n,4\n")
    frame = read_table(path)
    assert frame["a"].to_list() == ["NA", "N/A", "null", None]
    assert frame["b"].to_list() == [1, None, 3, 4]


def test_csv_infers_types_from_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    rows = [str(i) for i in range(500)] + ["1.5"]
    path.write_text("x\n" + "\n".join(rows) + "\n")
    assert read_table(path)["x"].dtype == pl.Float64


def test_csv_glob_characters_are_literal(tmp_path: Path) -> None:
    FRAME.write_csv(tmp_path / "a.csv")
    err = _data_error(tmp_path / "*.csv")
    assert "does not exist" in str(err)


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_text("x")
    err = _data_error(path)
    assert "extension '.xlsx'" in str(err)
    assert ".csv" in (err.issues[0].hint or "")


def test_no_extension(tmp_path: Path) -> None:
    err = _data_error(tmp_path / "data")
    assert "no extension" in str(err)


def test_missing_file(tmp_path: Path) -> None:
    err = _data_error(tmp_path / "nope.csv")
    assert "does not exist" in str(err)


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "dir.parquet").mkdir()
    err = _data_error(tmp_path / "dir.parquet")
    assert "is not a file" in str(err)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_bytes(b"")
    assert "is empty" in str(_data_error(path))


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".ndjson", ".arrow"])
def test_no_rows(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"d{ext}"
    if ext == ".csv":
        path.write_text("a,b\n")
    else:
        WRITERS[ext](FRAME.head(0), path)
    message = str(_data_error(path))
    assert "has no rows" in message or "is empty" in message


@pytest.mark.parametrize(
    ("ext", "content", "phrase"),
    [
        (".csv", b"a,b\n1,2\n3,4,5\n", "as CSV"),
        (".parquet", b"definitely not parquet", "as Parquet"),
        (".ndjson", b'{"a": 1}\n{"a":\n', "as newline-delimited JSON"),
        (".feather", b"not arrow at all", "as Arrow IPC"),
    ],
)
def test_unparseable(tmp_path: Path, ext: str, content: bytes, phrase: str) -> None:
    path = tmp_path / f"bad{ext}"
    path.write_bytes(content)
    err = _data_error(path)
    assert phrase in str(err)
    assert err.__cause__ is not None  # the polars error is kept as the cause, not shown raw


def test_parquet_with_csv_extension(tmp_path: Path) -> None:
    path = tmp_path / "actually_parquet.csv"
    FRAME.write_parquet(path)
    _data_error(path)


def test_file_sha256(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    data = bytes(range(256)) * 1000
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert file_sha256(path) == expected
    assert file_sha256(path, chunk_size=1000) == expected


def test_file_sha256_missing(tmp_path: Path) -> None:
    with pytest.raises(DataError):
        file_sha256(tmp_path / "nope.csv")


@pytest.mark.parametrize(("sep", "name"), [(";", "semicolons"), ("\t", "tabs")])
def test_csv_with_other_separator(tmp_path: Path, sep: str, name: str) -> None:
    path = tmp_path / "d.csv"
    path.write_text(f"y{sep}p\n1{sep}0.5\n")
    err = _data_error(path)
    assert f"separated by {name}" in str(err)
