"""Reports read back (``audit diff``, ``--baseline``, ``load_report``) obey the spec's file rules
and every malformed shape is a located usage error (issue 24)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from report_builders import finding, report, scan

from fairscan.api import load_report
from fairscan.errors import UsageError
from fairscan.report.formats import report_json
from fairscan.report.read import MAX_REPORT_BYTES


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "good.json"
    path.write_text(report_json(report(scan([finding()]))), encoding="utf-8")
    return path


def _fails(path: Path | str, match: str) -> UsageError:
    with pytest.raises(UsageError, match=match) as info:
        load_report(path)
    return info.value


def test_a_good_report_loads(tmp_path: Path) -> None:
    assert load_report(_good(tmp_path)).name == "compas-fpr"


def test_devices_and_fifos_are_refused_without_reading(tmp_path: Path) -> None:
    _fails("/dev/zero", "not a regular file")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    _fails(fifo, "not a regular file")  # opening it would block for ever


def test_a_huge_sparse_file_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_REPORT_BYTES + 1)  # sparse: no disk used
    _fails(big, "larger than the 256 MiB")


@pytest.mark.parametrize(
    ("text", "match", "line"),
    [
        ('{"name": 1,\n  oops}', "Expecting property name", 2),
        ("[" * 100_000, "nested more than 64 levels", 1),
        ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested more than 64 levels", 1),
        ("[1, 2]", "the top level is not an object", 1),
    ],
)
def test_malformed_json_is_located(tmp_path: Path, text: str, match: str, line: int) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    error = _fails(path, match)
    assert error.issues[0].line == line
    assert error.issues[0].file == str(path)


def test_not_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"name":\n "\xff"}')
    error = _fails(path, "not UTF-8 text")
    assert (error.issues[0].line, error.issues[0].col) == (2, 3)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(schema_version=1, scans=[{"findings": 3}]),
        lambda d: d.update(schema_version=1, scans=["x"]),
        lambda d: d.update(schema_version=1, scans=[{"cbs": 5, "findings": []}]),
        lambda d: d.update(scans=[{"id": None}]),
        lambda d: d.pop("provenance"),
        lambda d: d.update(schema_version="two"),
    ],
)
def test_old_and_foreign_shapes_are_usage_errors(tmp_path: Path, mutate: object) -> None:
    data = json.loads(_good(tmp_path).read_text(encoding="utf-8"))
    mutate(data)  # type: ignore[operator]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    _fails(path, "is not a fairscan JSON report")
