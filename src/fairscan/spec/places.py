"""Where each scan of a spec file is written: the file (a parent's, for a scan that ``extends``
brings), line and column of each item of the merged ``scans`` list.

The one home of that lookup for the GitHub annotations (``fairscan.cli.github``) and the SARIF
report's regions (``fairscan.report.sarif``). It reads the YAML and the ``extends`` chain
only, without validating the spec, so a renderer can call it without the scan registry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from fairscan.errors import SpecError, truncate
from fairscan.spec.loader import UnreadableSpec, load_spec_text, read_spec_bytes
from fairscan.spec.resolve import resolve_extends


@dataclass(frozen=True)
class ScanPlace:
    """Where a scan is written in its spec file (for an annotation's or a result's location)."""

    file: str
    line: int | None
    col: int | None


def scan_places(path: Path | str, sha256: str | None = None) -> list[ScanPlace]:
    """The place of each scan of the spec at ``path``, in the order of its ``scans`` list.

    Empty when the file (or a file it extends) cannot be read or parsed, when it has no scan
    list, or when ``sha256`` is given and the file's bytes no longer hash to it (a report read
    back after its spec was edited: its lines would point at other text)."""
    path = Path(path)
    name = truncate(str(path), 200)
    try:
        data = read_spec_bytes(path)
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            return []
        raw, positions = load_spec_text(data.decode("utf-8").removeprefix("\ufeff"), name)
        if not isinstance(raw, dict):
            return []
        raw, positions, origins, _ = resolve_extends(raw, positions, path, name)
    except (OSError, UnreadableSpec, UnicodeDecodeError, SpecError):
        return []
    scans = positions.values.get("scans")
    if not isinstance(raw.get("scans"), list) or scans is None:
        return []
    return [
        ScanPlace(file=origins.get(id(item), name), line=item.line, col=item.col)
        for item in scans.items
    ]
