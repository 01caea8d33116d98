"""Fuzz corpus of hostile data files (issue 16): each bad case is `audit run` exiting 2 with
the column (or file) named and a `help:` line, never an internal error; each legitimate but
suspicious case runs and carries the expected warning in its report."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from fairscan.cli import app
from fairscan.data import load

N = 200
SPEC = """\
version: 1
name: fuzz
data: {{path: {data}}}
columns: {{outcome: y, prediction: p}}
attributes: [{attributes}]
{discretize}scans:
  - {{id: s, type: ijdi_scan, side: negatives, lambda: 0, base_rate: p, threshold: {threshold}, penalty: 1, restarts: 2}}
significance: {{replicates: 0, seed: 0, workers: 1}}
output: {{dir: out, formats: [json]}}
"""


def base_rows() -> dict[str, list[object]]:
    rng = np.random.default_rng(0)
    return {
        "y": [int(v) for v in rng.integers(0, 2, N)],
        "p": [float(v) for v in rng.random(N)],
        "g": [str(v) for v in rng.choice(["A", "B", "C"], N)],
        "t": [0.5] * N,
        "z": [0.0] * (N - 16) + [float(i) for i in range(1, 17)],
    }


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], Path]  # writes the data into the folder, returns its path
    attributes: str = "g"
    threshold: str = "0.5"
    discretize: str = ""
    memory: int | None = None  # bytes available, monkeypatched
    error: str | None = None  # expected in the output (exit 2)
    column: str | None = None  # named in the error
    warning: str | None = None  # expected in the report's warnings (exit 0/1)


def _csv(**changes: list[object]) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        rows = base_rows()
        rows.update(changes)
        path = folder / "d.csv"
        pl.DataFrame(rows).write_csv(path)
        return path

    return write


def _ndjson(column: str, values: list[object]) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        rows = base_rows()
        rows[column] = values
        path = folder / "d.ndjson"
        with path.open("w") as fh:
            for i in range(N):
                fh.write(json.dumps({k: v[i] for k, v in rows.items()}) + "\n")
        return path

    return write


MIXED = [{"k": i} if i % 7 == 0 else "x" for i in range(N)]
CASES = [
    Case("nested-json-attribute-mixed", _ndjson("g", MIXED), error="nested", column="g"),
    Case(
        "nested-json-attribute-objects",
        _ndjson("g", [{"k": i % 2} for i in range(N)]),
        error="nested",
        column="g",
    ),
    Case(
        "nested-json-attribute-lists",
        _ndjson("g", [[i % 2] for i in range(N)]),
        error="nested",
        column="g",
    ),
    Case(
        "nested-json-outcome", _ndjson("y", [[i % 2] for i in range(N)]), error="nested", column="y"
    ),
    Case("too-big-for-memory", _csv(), memory=10, error="memory", column=None),
    Case(
        "missing-build-file",
        lambda folder: folder / "build" / "compas.csv",
        error="make compas",
    ),
    *(
        Case(
            f"discretize-edges-{edge}",
            _csv(),
            attributes="g, z",
            discretize=f"discretize: {{z: {{edges: [0.5, {edge}]}}}}\n",
            error="discretize.z.edges[1]",
        )
        for edge in (".nan", ".inf", "-.inf")
    ),
    Case(
        "whitespace-variants",
        _csv(g=["C", "C ", " C", "A"] * (N // 4)),
        warning="values that differ only by surrounding whitespace were merged",
    ),
    Case(
        "zero-inflated-quantiles",
        _csv(),
        attributes="g, z",
        discretize="discretize: {z: {quantiles: 5}}\n",
        warning="quantiles: 5 gave only 1 bin",
    ),
    Case(
        "threshold-column-never-crossed",
        _csv(t=[5.0] * N),
        threshold="t",
        warning="never reaches threshold column 't'",
    ),
    Case(
        "threshold-column-always-crossed",
        _csv(t=[-1.0] * N),
        threshold="t",
        warning="always reaches threshold column 't'",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_data(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = case.write(tmp_path)
    spec = tmp_path / "fuzz.audit.yaml"
    spec.write_text(
        SPEC.format(
            data=data.relative_to(tmp_path).as_posix(),
            attributes=case.attributes,
            discretize=case.discretize,
            threshold=case.threshold,
        )
    )
    if case.memory is not None:
        monkeypatch.setattr(load, "available_memory", lambda: case.memory)
    result = CliRunner().invoke(app, ["run", str(spec)])
    output = result.output
    assert "internal error" not in output and "Traceback" not in output, output
    if case.error is not None:
        assert result.exit_code == 2, output
        assert case.error in output, output
        assert "help:" in output, output
        if case.column is not None:
            assert f"'{case.column}'" in output, output
        return
    assert result.exit_code in (0, 1), output
    (report_path,) = (tmp_path / "out").glob("*.json")
    report = json.loads(report_path.read_text())
    warnings = [*report["data_warnings"], *(w for s in report["scans"] for w in s["warnings"])]
    assert any(case.warning in w for w in warnings), warnings
