"""Reading a JSON report back (``audit diff``, ``--baseline``, :func:`fairscan.load_report`)
under the same file rules as a spec: a regular file (``/dev/zero`` or a FIFO would be read for
ever), at most :data:`MAX_REPORT_BYTES`, read bounded; and every way it can be malformed (not
UTF-8, not JSON, nested too deep, an old or foreign shape) is a located :class:`UsageError`
(exit 2), never an internal error.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from fairscan.errors import Issue, UsageError, truncate
from fairscan.report.models import AuditReport

MAX_REPORT_BYTES = 256 << 20  # reports of the largest audits are a few MiB
# JSON nested deeper than this is no report (a report is nested about 10 levels)
MAX_REPORT_DEPTH = 64
HINT = "give the .json report written by a previous `audit run`"


def _error(name: str, message: str, line: int | None = None, col: int | None = None) -> UsageError:
    return UsageError(issues=[Issue(message, hint=HINT, file=name, line=line, col=col)])


def _read_bytes(path: Path, name: str) -> bytes:
    if "\0" in str(path):
        raise _error(name, "the path contains a NUL byte")
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory, not a report")
        if not stat.S_ISREG(info.st_mode):
            raise _error(name, "cannot read report: not a regular file (a device, FIFO or socket)")
        if info.st_size > MAX_REPORT_BYTES:
            raise _error(
                name, f"the file is larger than the {MAX_REPORT_BYTES >> 20} MiB a report may have"
            )
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT_BYTES + 1)  # bounded, even if the file grows
    except OSError as exc:
        raise _error(name, f"cannot read report: {truncate(exc.strerror or str(exc))}") from exc
    if len(data) > MAX_REPORT_BYTES:
        raise _error(
            name, f"the file is larger than the {MAX_REPORT_BYTES >> 20} MiB a report may have"
        )
    return data


def _depth_exceeded(text: str) -> tuple[int, int] | None:
    """(line, col) where the JSON text nests deeper than MAX_REPORT_DEPTH (strings skipped)."""
    depth, line, col, in_string, escaped = 0, 1, 0, False, False
    for char in text:
        col += 1
        if char == "\n":
            line, col = line + 1, 0
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_REPORT_DEPTH:
                return line, col
        elif char in "]}":
            depth -= 1
    return None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are unique: a report written twice over itself, or edited so
    that a later key overrides what a reader sees first, is not taken."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


# p-values a report holds: per scan, per finding, and per side of a baseline entry
_SCAN_P = ("p_value", "corrected_p_value", "p_value_floor")
_FINDING_P = ("p_value", "adjusted_p_value")


def _p_problem(value: object) -> str | None:
    """Why ``value`` is no p-value (null is: an untested one), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number between 0 and 1, got {truncate(repr(value))}"
    if not 0.0 <= value <= 1.0:  # NaN fails this too
        return f"must be a number between 0 and 1, got {value!r}"
    return None


def _bad_p_value(report: dict[str, object]) -> str | None:
    """The first p-value of the report (``scans[0].findings[1].p_value: ...``) that is not a
    number in [0, 1] (a string, negative, NaN, above 1), or None: the gate is decided on these
    numbers, so a report that cannot hold them is refused as ``--baseline`` and ``audit diff``."""
    places: list[tuple[str, object]] = []
    scans = report.get("scans")
    for i, scan in enumerate(scans if isinstance(scans, list) else []):
        if not isinstance(scan, dict):
            continue
        places += [(f"scans[{i}].{k}", scan.get(k)) for k in _SCAN_P]
        findings = scan.get("findings")
        for j, finding in enumerate(findings if isinstance(findings, list) else []):
            if isinstance(finding, dict):
                places += [(f"scans[{i}].findings[{j}].{k}", finding.get(k)) for k in _FINDING_P]
    baseline = report.get("baseline")
    entries = baseline.get("entries") if isinstance(baseline, dict) else None
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        for side in ("before", "after"):
            block = entry.get(side) if isinstance(entry, dict) else None
            if isinstance(block, dict):
                places.append((f"baseline.entries[{i}].{side}.p_value", block.get("p_value")))
    for where, value in places:
        why = _p_problem(value)
        if why is not None:
            return f"{where}: {why}"
    return None


def read_report(path: Path | str) -> AuditReport:
    """The report at ``path``; a :class:`UsageError` naming the file (and line:col) otherwise."""
    from pydantic import ValidationError

    from fairscan.report.upgrade import upgrade_report

    path = Path(path)
    name = truncate(str(path), 200)
    data = _read_bytes(path, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _error(
            name, f"the report is not UTF-8 text (byte 0x{data[exc.start]:02x})", line, col
        ) from exc
    deep = _depth_exceeded(text)
    if deep is not None:
        raise _error(
            name,
            f"this is not a fairscan JSON report: nested more than {MAX_REPORT_DEPTH} levels deep",
            *deep,
        )
    try:
        parsed = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise _error(
            name, f"this is not a fairscan JSON report: duplicate key {truncate(repr(exc.key))}"
        ) from exc
    except json.JSONDecodeError as exc:
        raise _error(
            name, f"this is not a fairscan JSON report: {exc.msg}", exc.lineno, exc.colno
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise _error(name, f"this is not a fairscan JSON report: {truncate(str(exc))}") from exc
    if not isinstance(parsed, dict):
        raise _error(
            name, "this is not a fairscan JSON report: the top level is not an object", 1, 1
        )
    try:
        upgraded = upgrade_report(parsed)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        # an old-format report whose blocks are not what version 1 wrote
        raise _error(
            name,
            f"this is not a fairscan JSON report: an old-format (schema_version 1) block has an "
            f"unexpected shape ({type(exc).__name__}: {truncate(str(exc))})",
        ) from exc
    bad = _bad_p_value(upgraded)
    if bad is not None:
        raise _error(name, f"this is not a fairscan JSON report ({bad})")
    try:
        return AuditReport.model_validate(upgraded)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "top level"
        raise _error(
            name,
            f"this is not a fairscan JSON report ({truncate(where)}: {truncate(first['msg'])})",
        ) from exc
    except (RecursionError, ValueError, TypeError) as exc:
        raise _error(name, f"this is not a fairscan JSON report: {truncate(str(exc))}") from exc
