"""Reading the data file named by ``data.path``."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import polars as pl

from fairscan.errors import DataError

FIELD = "data.path"

_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".arrow": "ipc",
    ".ipc": "ipc",
    ".feather": "ipc",
}

_FORMAT_NAMES = {
    "csv": "CSV",
    "parquet": "Parquet",
    "ndjson": "newline-delimited JSON",
    "ipc": "Arrow IPC",
}

_HINTS = {
    "csv": (
        "check that the file is comma-separated UTF-8 text with a header row and the same "
        "number of fields on every line"
    ),
    "parquet": "check that the file is a complete Parquet file (re-export it if in doubt)",
    "ndjson": "check that every line is one JSON object (newline-delimited JSON)",
    "ipc": "check that the file is an Arrow IPC (Feather v2) file",
}


def _read_csv(path: Path) -> pl.DataFrame:
    # Only empty fields are null: strings such as "NA" or "N/A" stay strings.
    return pl.read_csv(
        path,
        infer_schema_length=None,
        null_values=None,
        glob=False,
        raise_if_empty=True,
    )


def _read_parquet(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path, glob=False)


def _read_ndjson(path: Path) -> pl.DataFrame:
    return pl.read_ndjson(path, infer_schema_length=None)


def _read_ipc(path: Path) -> pl.DataFrame:
    return pl.read_ipc(path)


_READERS: dict[str, Callable[[Path], pl.DataFrame]] = {
    "csv": _read_csv,
    "parquet": _read_parquet,
    "ndjson": _read_ndjson,
    "ipc": _read_ipc,
}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def read_table(path: Path) -> pl.DataFrame:
    """Read a data file; the format follows the extension.

    ``.csv``, ``.parquet``, ``.ndjson``/``.jsonl``, ``.arrow``/``.ipc``/``.feather``.
    Every failure (unknown extension, missing file, unreadable or unparseable content, no rows)
    is a :class:`DataError` on ``data.path``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = _FORMATS.get(suffix)
    if fmt is None:
        known = ", ".join(_FORMATS)
        what = f"extension {suffix!r}" if suffix else "no extension"
        raise DataError(
            f"cannot tell the format of {str(path)!r}: {what}",
            field=FIELD,
            hint=f"use one of the supported extensions: {known}",
        )
    if not path.exists():
        raise DataError(
            f"data file {str(path)!r} does not exist",
            field=FIELD,
            hint="check data.path; a relative path is resolved against the spec file's folder",
        )
    if not path.is_file():
        raise DataError(
            f"{str(path)!r} is not a file",
            field=FIELD,
            hint="data.path must name a single data file, not a directory",
        )
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise DataError(
            f"cannot open {str(path)!r}: {exc.strerror or exc}",
            field=FIELD,
            hint="check the file's permissions",
        ) from exc
    if path.stat().st_size == 0:
        raise DataError(
            f"data file {str(path)!r} is empty (0 bytes)",
            field=FIELD,
            hint="point data.path at a file with a header and data rows",
        )
    try:
        frame = _READERS[fmt](path)
    except (Exception, pl.exceptions.PanicException) as exc:
        raise DataError(
            f"cannot read {str(path)!r} as {_FORMAT_NAMES[fmt]}: {_first_line(exc)}",
            field=FIELD,
            hint=_HINTS[fmt],
        ) from exc
    if fmt == "csv" and frame.width == 1:
        header = frame.columns[0]
        for sep, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|'")):
            if sep in header:
                raise DataError(
                    f"{str(path)!r} has a single column {header!r}; its fields seem to be "
                    f"separated by {name}, not commas",
                    field=FIELD,
                    hint="save the file as comma-separated CSV (or as Parquet)",
                )
    if frame.width == 0:
        raise DataError(f"data file {str(path)!r} has no columns", field=FIELD, hint=_HINTS[fmt])
    if frame.height == 0:
        raise DataError(
            f"data file {str(path)!r} has no rows",
            field=FIELD,
            hint="the file has column names but no data rows; point data.path at a file with data",
        )
    return frame


def file_sha256(path: Path, *, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as fh:
            while chunk := fh.read(chunk_size):
                digest.update(chunk)
    except OSError as exc:
        raise DataError(
            f"cannot read {str(path)!r}: {exc.strerror or exc}",
            field=FIELD,
            hint="check that the data file exists and is readable",
        ) from exc
    return digest.hexdigest()
