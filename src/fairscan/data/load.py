"""Reading the data file named by ``data.path``."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

import polars as pl

from fairscan.errors import DataError
from fairscan.redact import mask_text

FIELD = "data.path"

FILE_FORMATS: dict[str, str] = {
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


def _read_csv(path: Path | io.BytesIO) -> pl.DataFrame:
    # Only empty fields are null: strings such as "NA" or "N/A" stay strings.
    return pl.read_csv(
        path,
        infer_schema_length=None,
        null_values=None,
        glob=False,
        raise_if_empty=True,
    )


def _read_parquet(path: Path | io.BytesIO) -> pl.DataFrame:
    return pl.read_parquet(path, glob=False)


NESTED_JSON_FIELD = "json"  # the one field of the struct that marks a mixed nested column


def _read_ndjson(path: Path | io.BytesIO) -> pl.DataFrame:
    frame = pl.read_ndjson(path, infer_schema_length=None)
    return _mark_nested_strings(path, frame)


def _mark_nested_strings(path: Path | io.BytesIO, frame: pl.DataFrame) -> pl.DataFrame:
    """polars reads a key holding objects or lists on some lines and scalars on others as a
    string column (the objects as JSON text): wrap such a column in a one-field struct, so that
    using it is reported as nested JSON instead of scanning the JSON text as categories.

    Cheap: only string columns with a value that looks like an object or list are checked,
    by one regular-expression pass over the file for that key followed by ``{`` or ``[``.
    """
    suspects = [
        name
        for name, dtype in frame.schema.items()
        if dtype == pl.String
        and bool(frame[name].str.contains(r"^\s*[\[{]").fill_null(False).any())
    ]
    if not suspects:
        return frame
    raw = path.getvalue() if isinstance(path, io.BytesIO) else path.read_bytes()
    marked = []
    for name in suspects:
        key = json.dumps(name)[1:-1].encode("utf-8")  # as written inside the JSON quotes
        if re.search(rb'"' + re.escape(key) + rb'"\s*:\s*[\[{]', raw):
            marked.append(pl.struct(pl.col(name).alias(NESTED_JSON_FIELD)).alias(name))
    return frame.with_columns(marked) if marked else frame


def _read_ipc(path: Path | io.BytesIO) -> pl.DataFrame:
    return pl.read_ipc(path)


_READERS: dict[str, Callable[[Path | io.BytesIO], pl.DataFrame]] = {
    "csv": _read_csv,
    "parquet": _read_parquet,
    "ndjson": _read_ndjson,
    "ipc": _read_ipc,
}


# masking a driver's message: one home, fairscan.redact (re-exported for the data modules)
mask = mask_text


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none), at most 300
    characters: what a data error quotes of a reader's failure."""
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


# --- memory: refuse a file that cannot fit before polars aborts the process -----------------

# Bytes in memory per byte on disk, by text format: a lower bound in practice (numbers in
# text are shorter than 8 bytes, JSON repeats every key), so that no file that fits is refused.
_TEXT_FACTOR = {"csv": 1.5, "ndjson": 0.75}
_VARIABLE_WIDTH = 8  # bytes per value assumed for strings and other variable-width types


def available_memory() -> int | None:
    """Bytes of memory this process can still use: MemAvailable (or the free pages), capped by
    the memory cgroups that bound the process (v1 or v2) and by its address-space limit; None
    when it cannot be told."""
    available: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            return None
    # the cgroup's limit (a container's memory limit; above it the kernel kills the process)
    # and the address-space limit (prlimit --as, ulimit -v) bound it too
    from fairscan.memory_budget import address_space_headroom, cgroup_available

    cgroup = cgroup_available()
    if cgroup is not None:
        available = min(available, cgroup)
    headroom = address_space_headroom()
    return available if headroom is None else min(available, headroom)


def _binary_estimate(path: Path, fmt: str) -> int:
    """Rows x the width of the schema's columns, from the file's metadata (nothing is read)."""
    scan = pl.scan_parquet(path, glob=False) if fmt == "parquet" else pl.scan_ipc(path)
    schema = scan.collect_schema()
    rows = int(scan.select(pl.len()).collect().item())
    return rows * sum(_dtype_width(dtype) for dtype in schema.values())


_NARROW = {pl.Boolean: 1, pl.Int8: 1, pl.UInt8: 1, pl.Int16: 2, pl.UInt16: 2}
_NARROW.update({pl.Int32: 4, pl.UInt32: 4, pl.Float32: 4})


def _dtype_width(dtype: pl.DataType) -> int:
    if dtype.is_numeric() or dtype.is_temporal() or dtype == pl.Boolean:
        return _NARROW.get(type(dtype), 8)  # 64-bit numbers, dates and times
    return _VARIABLE_WIDTH


def estimate_memory(path: Path, fmt: str) -> int:
    """Bytes a data file needs in memory once read: the file size times a factor for text
    formats, the schema's width times the rows for Parquet and Arrow IPC (at least the size on
    disk for IPC, which is stored as it is held)."""
    size = path.stat().st_size
    if fmt in _TEXT_FACTOR:
        return int(size * _TEXT_FACTOR[fmt])
    try:
        estimate = _binary_estimate(path, fmt)
    except (Exception, pl.exceptions.PanicException):
        return 0  # unreadable metadata: reading it reports the problem
    return max(estimate, size) if fmt == "ipc" else estimate


def bytes_text(n: float) -> str:
    """A byte count in words: 512 bytes, 3.4 MB, 1.2 GB."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def fits_in_memory(path: Path, share: float = 0.5) -> bool:
    """Whether a data file read whole needs at most ``share`` of the available memory (True
    when that cannot be told, e.g. the file is missing: reading it reports the problem)."""
    fmt = FILE_FORMATS.get(Path(path).suffix.lower())
    available = available_memory()
    if fmt is None or available is None or not Path(path).is_file():
        return True
    return estimate_memory(Path(path), fmt) <= available * share


def held_rows(columns: int) -> int | None:
    """The most distinct rows of ``columns`` columns an aggregate may hold in memory (about 3
    copies of ~16 bytes a column, while the parts are merged); None when the memory available
    is not known."""
    available = available_memory()
    return None if available is None else available // (3 * 16 * (columns + 1))


def check_memory(path: Path, fmt: str) -> None:
    """A :class:`DataError` before reading a file that needs more memory than is available."""
    available = available_memory()
    if available is None:
        return
    needed = estimate_memory(path, fmt)
    if needed <= available:
        return
    raise DataError(
        f"data file {str(path)!r} ({bytes_text(path.stat().st_size)} on disk) needs about "
        f"{bytes_text(needed)} of memory to read, more than the {bytes_text(available)} available",
        field=FIELD,
        hint="let fairscan stream it (remove `streaming: false` from data), audit a sample "
        "(data: {sample: {rows: 1000000, seed: 0}}), or keep only the rows and columns the "
        "audit uses before it",
    )


# Data files the Makefile builds (never committed): file name under build/ -> make target.
MAKE_TARGETS = {"compas.csv": "compas", "adult_subroc.csv": "adult"}


def _missing_hint(path: Path) -> str:
    """Where a missing data file comes from: the make target that writes a ``build/`` file."""
    target = MAKE_TARGETS.get(path.name) if path.parent.name == "build" else None
    if target is not None:
        return (
            f"build/{path.name} is generated, never committed: run `make {target}` in the "
            "fairscan repository root to create it"
        )
    return "check data.path; a relative path is resolved against the spec file's folder"


def read_table(path: Path, digest: Any = None) -> pl.DataFrame:
    """Read a data file; the format follows the extension. ``digest`` (a :mod:`hashlib`
    object): updated with the file's bytes, which are then read once (hashed, then parsed).

    ``.csv``, ``.parquet``, ``.ndjson``/``.jsonl``, ``.arrow``/``.ipc``/``.feather``.
    Every failure (unknown extension, missing file, unreadable or unparseable content, no rows)
    is a :class:`DataError` on ``data.path``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = FILE_FORMATS.get(suffix)
    if fmt is None:
        known = ", ".join(FILE_FORMATS)
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
            hint=_missing_hint(path),
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
    check_memory(path, fmt)
    try:
        if digest is None:
            frame = _READERS[fmt](path)
        else:
            raw = path.read_bytes()
            digest.update(raw)
            frame = _READERS[fmt](io.BytesIO(raw))
            del raw
    except (Exception, pl.exceptions.PanicException) as exc:
        raise DataError(
            f"cannot read {str(path)!r} as {_FORMAT_NAMES[fmt]}: {first_line(exc)}",
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


def read_table_hashed(path: Path) -> tuple[pl.DataFrame, str]:
    """:func:`read_table` and the hex SHA-256 of the file's bytes, read once."""
    digest = hashlib.sha256()
    frame = read_table(path, digest)
    return frame, digest.hexdigest()


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


# --- in-memory tables (fairscan.audit) -------------------------------------------------------

IN_MEMORY_FIELD = "data"


def _is_a(obj: object, package: str, names: tuple[str, ...]) -> bool:
    """``obj`` is (a subclass of) one of ``package``'s classes ``names``, without importing it."""
    return any(
        cls.__module__.split(".", 1)[0] == package and cls.__name__ in names
        for cls in type(obj).__mro__
    )


def _is_pandas_frame(obj: object) -> bool:
    # duck typing: pandas is never imported here (it is not a dependency)
    return _is_a(obj, "pandas", ("DataFrame",))


def _has_pyarrow() -> bool:
    """pyarrow can be imported (polars converts pandas frames through it)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _is_arrow_table(obj: object) -> bool:
    return _is_a(obj, "pyarrow", ("Table", "RecordBatch"))


def read_in_memory(data: object) -> tuple[pl.DataFrame, str]:
    """A polars DataFrame (or LazyFrame), a pandas DataFrame or a pyarrow Table/RecordBatch as
    a polars DataFrame, with a description for the report (``<in-memory pandas DataFrame>``).

    pandas and pyarrow go through Arrow (``polars.from_pandas`` / ``polars.from_arrow``); neither
    is imported unless the object is one of theirs. The pandas index is not a column (reset it
    first to audit it). Every failure is a :class:`DataError` on ``data``.
    """
    if isinstance(data, pl.DataFrame):
        frame, what = data, "polars DataFrame"
    elif isinstance(data, pl.LazyFrame):
        what = "polars LazyFrame"
        try:
            frame = data.collect()
        except (Exception, pl.exceptions.PanicException) as exc:
            raise DataError(
                f"cannot collect the polars LazyFrame: {first_line(exc)}",
                field=IN_MEMORY_FIELD,
                hint="check the LazyFrame's query (frame.collect() must succeed)",
            ) from exc
    elif _is_pandas_frame(data):
        what = "pandas DataFrame"
        columns = list(data.columns)  # type: ignore[attr-defined]
        odd = [c for c in columns if not isinstance(c, str)]
        if odd:
            raise DataError(
                f"the pandas DataFrame has column names that are not text: "
                f"{', '.join(repr(c) for c in odd[:5])}",
                field=IN_MEMORY_FIELD,
                hint="name the columns with strings, e.g. df.columns = df.columns.map(str)",
            )
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if columns.count(c) > 1})
            raise DataError(
                f"the pandas DataFrame has duplicate column names: {', '.join(map(repr, dup))}",
                field=IN_MEMORY_FIELD,
                hint="give every column a distinct name",
            )
        if not _has_pyarrow():
            raise DataError(
                "reading a pandas DataFrame needs pyarrow, which is not installed",
                field=IN_MEMORY_FIELD,
                hint="install it: pip install pyarrow (or pip install 'fairscan[notebook]'), "
                "then restart the kernel",
            )
        try:
            frame = pl.from_pandas(data)
        except (Exception, pl.exceptions.PanicException) as exc:
            column = _unconvertible_column(data, columns)
            where = f"column {column!r}: " if column is not None else ""
            raise DataError(
                f"cannot convert the pandas DataFrame to Arrow: {where}{first_line(exc)}",
                field=IN_MEMORY_FIELD,
                column=column,
                hint="give each column a single type of plain values (e.g. "
                "df[col] = df[col].astype(str)), or drop it",
            ) from exc
    elif _is_arrow_table(data):
        what = f"pyarrow {type(data).__name__}"
        try:
            converted = pl.from_arrow(data)
        except (Exception, pl.exceptions.PanicException) as exc:
            raise DataError(
                f"cannot read the pyarrow {type(data).__name__}: {first_line(exc)}",
                field=IN_MEMORY_FIELD,
                hint="check that its column types are supported by polars",
            ) from exc
        if not isinstance(converted, pl.DataFrame):
            converted = converted.to_frame()
        frame = converted
    else:
        raise DataError(
            f"cannot audit a {type(data).__module__}.{type(data).__qualname__}",
            field=IN_MEMORY_FIELD,
            hint="give a polars or pandas DataFrame, a pyarrow Table or the path of a data file "
            f"({', '.join(FILE_FORMATS)})",
        )
    label = f"<in-memory {what}>"
    objects = [name for name, dtype in frame.schema.items() if dtype == pl.Object]
    if objects:  # Python objects: no value to compare, hash or write (polars' Object type)
        raise DataError(
            f"the {what} has column(s) of Python objects: {', '.join(map(repr, objects[:5]))}",
            field=IN_MEMORY_FIELD,
            column=objects[0],
            hint="convert them to plain values (text, numbers, booleans or dates), e.g. "
            "pl.col(c).map_elements(str, return_dtype=pl.String), or drop them",
        )
    if frame.width == 0:
        raise DataError(f"the {what} has no columns", field=IN_MEMORY_FIELD)
    if frame.height == 0:
        raise DataError(
            f"the {what} has no rows", field=IN_MEMORY_FIELD, hint="audit a table with data rows"
        )
    return frame, label


def _unconvertible_column(data: Any, columns: list[str]) -> str | None:
    """The first column of a pandas DataFrame that Arrow cannot convert (Python objects, mixed
    types), to name in the error; None when each converts alone."""
    for column in columns:
        try:
            pl.from_pandas(data[[column]])
        except (Exception, pl.exceptions.PanicException):
            return column
    return None


class _Digest:
    """A write-only file object that hashes what is written (no copy of the bytes is kept)."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return len(data)

    def flush(self) -> None:
        pass


def frame_sha256(frame: pl.DataFrame) -> str:
    """Hex SHA-256 of a deterministic serialisation of ``frame``: its uncompressed Arrow IPC
    bytes (column names, types and values; strings as plain Arrow UTF-8), after rechunking.

    The same values, types and column order give the same hash whichever library held them
    (a CSV file read by polars, by pandas with ``keep_default_na=False`` or by pyarrow hashes
    the same); it is not the hash of any file.
    """
    sink = _Digest()
    frame.rechunk().write_ipc(
        cast("IO[bytes]", sink),
        compression="uncompressed",
        compat_level=pl.CompatLevel.oldest(),
    )
    return sink.digest.hexdigest()
