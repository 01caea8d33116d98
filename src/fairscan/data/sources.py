"""Where ``data.path`` points: one file, a directory or glob of files, or a URL.

A single local file is read into memory as before (:func:`fairscan.data.load.read_table`).
Datasets (a directory, hive-partitioned or not, a glob such as ``parts/*.parquet``) and remote
data (``s3://``, ``gs://``, ``az://``, ``https://`` ...) are scanned lazily (credentials come from
the environment, as polars reads them) and prepared in DuckDB (:mod:`fairscan.data.engine_scan`:
local Parquet by DuckDB's own reader, the rest decoded by polars' streaming engine), so that
they never need to fit in memory.
"""

from __future__ import annotations

import glob as globbing
import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from fairscan.data.load import FILE_FORMATS, first_line
from fairscan.data.netio import probe_url
from fairscan.errors import DataError, truncate

FIELD = "data.path"

# schemes polars reads through its object-store layer (credentials from the environment)
REMOTE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "http", "https", "hf")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_GLOB_CHARS = ("*", "?", "[")
# the single-file extensions, and .pq (common for Parquet parts)
_SCAN_FORMATS = {**FILE_FORMATS, ".pq": "parquet"}


# Harmless schema drift between the parts of a dataset (a column stored as int32 in one file
# and int64 in another, float32 and float64) is read as the wider type.
_DRIFT = pl.ScanCastOptions(integer_cast="upcast", float_cast="upcast")


@dataclass(frozen=True)
class DatasetSource:
    """Data scanned lazily: a directory, a glob, a URL, or a file too large to read at once."""

    location: str  # what data.path resolved to (a path, a glob or a URL)
    format: str  # parquet | csv | ndjson | ipc
    files: tuple[Path, ...]  # the local files it reads (empty for a URL)
    remote: bool = False
    weight: None = None  # rows are data rows (a table aggregated elsewhere has a count column)

    @property
    def sliceable(self) -> bool:
        """Slices are cheap (row groups and record batches are skipped, not parsed)."""
        return self.format in ("parquet", "ipc")

    def scan(self) -> pl.LazyFrame:
        """The lazy frame of the whole dataset (nothing is read yet)."""
        target: str | list[str] = self.location
        if self.remote:
            probe_url(self.location)  # a server that does not answer is named now
        if self.files:
            target = [str(f) for f in self.files]
        try:
            if self.format == "parquet":
                if self.files and not self.remote:
                    widest = _widest_schema(self.files, pl.read_parquet_schema)
                    return pl.scan_parquet(
                        target,
                        hive_partitioning=self._hive(),
                        schema=widest,
                        cast_options=_DRIFT,
                    )
                return pl.scan_parquet(target, cast_options=_DRIFT)
            if self.format == "ipc":
                if len(self.files) > 1:
                    return _ipc_parts(self.files)
                return pl.scan_ipc(target)
            # text parts are typed one by one (each from its own first rows): a column that is
            # whole numbers in one part and decimals or text in another is read as the wider
            overrides = _text_drift(self.files, self.format) if not self.remote else None
            if self.format == "ndjson":
                return pl.scan_ndjson(target, schema_overrides=overrides)
            return pl.scan_csv(
                target, infer_schema_length=10_000, null_values=None, schema_overrides=overrides
            )
        except (Exception, pl.exceptions.PanicException) as exc:
            raise DataError(
                f"cannot scan {self.location!r}: {first_line(exc)}",
                field=FIELD,
                hint=_scan_hint(self),
            ) from exc

    def _hive(self) -> bool:
        """Hive partitions (``key=value`` folders) become columns."""
        return any("=" in part for f in self.files for part in f.parent.parts)

    def fingerprint(self) -> str:
        """SHA-256 over the files' names (relative to the dataset), sizes and contents; for a
        URL, over the URL only (the report's data hash then names what was read, not its
        bytes, which would mean downloading the data twice)."""
        digest = hashlib.sha256()
        if self.remote or not self.files:
            digest.update(self.location.encode())
            return digest.hexdigest()
        root = Path(_common_root(self.files))
        for file in self.files:
            digest.update(str(file.relative_to(root)).encode() + b"\0")
            with file.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
        return digest.hexdigest()


def _ipc_parts(files: tuple[Path, ...]) -> pl.LazyFrame:
    """Arrow IPC parts read as one table, each column cast to the widest of its parts' integer
    or float types (scan_ipc has no cast options; a wider drift is left to fail as before)."""
    schemas = [pl.read_ipc_schema(f) for f in files]
    target = _widest(schemas)
    parts = []
    for file, schema in zip(files, schemas, strict=True):
        casts = {n: target[n] for n, d in schema.items() if d != target[n] and _wider(target[n], d)}
        lazy = pl.scan_ipc(file)
        parts.append(lazy.cast(casts) if casts else lazy)  # type: ignore[arg-type]
    return pl.concat(parts, how="vertical")


def _widest(
    schemas: list[dict[str, pl.DataType]],
    wider: Callable[[pl.DataType, pl.DataType], bool] | None = None,
) -> dict[str, pl.DataType]:
    """Each column's widest type over the parts by ``wider`` (default: the widest integer or
    float type; else its first type)."""
    is_wider = wider or _wider
    target: dict[str, pl.DataType] = {}
    for schema in schemas:
        for name, dtype in schema.items():
            have = target.get(name)
            if have is None or is_wider(dtype, have):
                target[name] = dtype
    return target


def _wider_text(a: pl.DataType, b: pl.DataType) -> bool:
    """``a`` reads every value of ``b`` as text parts are parsed: integers < floats < text."""
    rank = {pl.String: 2, pl.Float32: 1, pl.Float64: 1}
    ints = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)
    rank.update(dict.fromkeys(ints, 0))
    if a in rank and b in rank and rank[a] != rank[b]:  # type: ignore[index]
        return rank[a] > rank[b]  # type: ignore[index]
    return _wider(a, b)


def _text_drift(files: tuple[Path, ...], fmt: str) -> dict[str, pl.DataType] | None:
    """The columns whose inferred type differs between the text parts, with the type that
    reads them all (None: the parts agree, polars' own inference stands)."""
    if len(files) < 2:
        return None

    def schema_of(path: Path) -> dict[str, pl.DataType]:
        if fmt == "ndjson":
            return dict(pl.scan_ndjson(path).collect_schema())
        return dict(
            pl.scan_csv(path, infer_schema_length=10_000, null_values=None).collect_schema()
        )

    schemas = [schema_of(f) for f in files]
    target = _widest(schemas, _wider_text)
    drift = {n: t for n, t in target.items() if any(s.get(n, t) != t for s in schemas)}
    return drift or None


def _widest_schema(
    files: tuple[Path, ...], read: Callable[[Path], dict[str, pl.DataType]]
) -> pl.Schema | None:
    """The widest schema of the parts; None (polars' own) when there is nothing to widen."""
    if len(files) < 2:
        return None
    schemas = [dict(read(f)) for f in files]
    target = _widest(schemas)
    if all(schema == target for schema in schemas):
        return None
    return pl.Schema(target)


def _wider(a: pl.DataType, b: pl.DataType) -> bool:
    """``a`` holds every value of ``b`` and more: a wider signed integer or float."""
    ints = [pl.Int8, pl.Int16, pl.Int32, pl.Int64]
    floats = [pl.Float32, pl.Float64]
    for family in (ints, floats):
        if a in family and b in family:
            return family.index(a) > family.index(b)  # type: ignore[arg-type]
    return False


def _scan_hint(source: DatasetSource) -> str:
    if source.remote:
        return (
            "check the URL and that the credentials polars needs are set in the environment "
            "(e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION for s3://)"
        )
    return "check that every file of the dataset has the same columns and format"


def _common_root(files: tuple[Path, ...]) -> str:
    parents = [str(f.parent) for f in files]
    root = parents[0]
    for p in parents[1:]:
        while not (p == root or p.startswith(root.rstrip("/") + "/")):
            root = str(Path(root).parent)
    return root


def _format_of(name: str, where: str) -> str:
    suffix = Path(name.split("?", 1)[0]).suffix.lower()
    fmt = _SCAN_FORMATS.get(suffix)
    if fmt is None:
        raise DataError(
            f"cannot tell the format of {where!r}: extension {suffix or '(none)'!r}",
            field=FIELD,
            hint=f"name files with one of the extensions {', '.join(_SCAN_FORMATS)}",
        )
    return fmt


def _single_format(files: list[Path], where: str) -> str:
    formats = {_format_of(f.name, str(f)) for f in files}
    if len(formats) > 1:
        raise DataError(
            f"{where!r} mixes data formats ({', '.join(sorted(formats))})",
            field=FIELD,
            hint="keep one format per dataset, or point data.path at a glob such as "
            "'folder/*.parquet'",
        )
    return formats.pop()


def _url_source(text: str) -> DatasetSource:
    match = _URL.match(text)
    assert match is not None
    scheme = match.group(1).lower()
    if scheme not in REMOTE_SCHEMES:
        raise DataError(
            f"data.path {text!r} uses the scheme {scheme!r}, which fairscan cannot read",
            field=FIELD,
            hint=f"use a local path or one of {', '.join(s + '://' for s in REMOTE_SCHEMES)}",
        )
    path_part = text[match.end() :].split("?", 1)[0]
    # a URL of a folder or of many files (s3://bucket/table/, .../*.parquet) is a Parquet dataset
    if path_part.endswith("/") or not Path(path_part).suffix:
        return DatasetSource(location=text, format="parquet", files=(), remote=True)
    return DatasetSource(location=text, format=_format_of(path_part, text), files=(), remote=True)


# file systems whose "files" are kernel state, not data: reading them can block for ever
# (/proc/kmsg, /dev/zero) or never end, and walking them recurses through every process
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
        "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs",
        "binfmt_misc", "autofs", "efivarfs", "rpc_pipefs", "nsfs",
    }
)  # fmt: skip


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of this machine, longest mount point first."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            rows = [line.split()[1:3] for line in fh if len(line.split()) >= 3]
    except OSError:
        return []
    return sorted(((m.replace("\\040", " "), t) for m, t in rows), key=lambda r: -len(r[0]))


def pseudo_filesystem(path: str) -> str | None:
    """The type of the pseudo file system (``proc``, ``sysfs`` ...) ``path`` lies on, if any."""
    absolute = str(Path(path).absolute())
    for mount, fstype in _mounts():
        if absolute == mount or absolute.startswith(mount.rstrip("/") + "/"):
            return fstype if fstype in PSEUDO_FILESYSTEMS else None
    return None


def _refuse_pseudo(where: str, path: str) -> None:
    fstype = pseudo_filesystem(path)
    if fstype is not None:
        raise DataError(
            f"data.path {truncate(where)!r} lies on the {fstype} pseudo file system, which "
            "holds no data files",
            field=FIELD,
            hint="point data.path at regular data files (CSV, Parquet, ...)",
        )


def _glob_root(pattern: str) -> str:
    """The folder a glob pattern starts from (its parts before the first wildcard)."""
    parts = Path(pattern).parts
    fixed = list(itertools.takewhile(lambda p: not any(c in p for c in _GLOB_CHARS), parts))
    return str(Path(*fixed)) if fixed else "."


def _local_files(pattern: str) -> list[Path]:
    _refuse_pseudo(pattern, _glob_root(pattern))
    return sorted(
        Path(p)
        for p in globbing.glob(pattern, recursive=True)
        if Path(p).is_file() and pseudo_filesystem(p) is None
    )


def _directory_files(folder: Path) -> list[Path]:
    files = [
        f
        for f in sorted(folder.rglob("*"))
        if f.is_file()
        and f.suffix.lower() in _SCAN_FORMATS
        and not any(part.startswith((".", "_")) for part in f.relative_to(folder).parts)
    ]
    return files


def dataset_source(text: str, resolved: Path) -> DatasetSource | None:
    """The dataset ``data.path`` names (``text`` as written, ``resolved`` against the spec's
    folder), or None when it names a single local file."""
    if _URL.match(text):
        return _url_source(text)
    if any(c in text for c in _GLOB_CHARS):
        files = _local_files(str(resolved))
        if not files:
            raise DataError(
                f"data.path {text!r} matches no file",
                field=FIELD,
                hint="check the pattern; it is resolved against the spec file's folder",
            )
        return DatasetSource(str(resolved), _single_format(files, text), tuple(files))
    if resolved.is_dir():
        _refuse_pseudo(text, str(resolved))
        files = _directory_files(resolved)
        if not files:
            raise DataError(
                f"the folder {text!r} holds no data files",
                field=FIELD,
                hint=f"put files with the extensions {', '.join(_SCAN_FORMATS)} in it "
                "(hive partitions such as year=2024/ are read as columns)",
            )
        return DatasetSource(str(resolved), _single_format(files, text), tuple(files))
    return None


def file_source(path: Path) -> DatasetSource:
    """One local file scanned lazily (a file too large to read into memory at once)."""
    return DatasetSource(str(path), _format_of(path.name, str(path)), (path,))
