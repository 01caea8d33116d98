"""The third hostile-input round (issue 24): each shape ends in exit 2 with its message (and a
``help:`` line), never an internal error or a traceback. Network stalls, signals, memory limits,
full disks and injection payloads have their own tests (tests/data/test_data_netio.py,
tests/test_memory_budget.py, tests/report/test_report_atomic_write.py,
tests/report/test_report_sink_escape.py); these are the shapes a spec, a flag or a file gives."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from fairscan.cli import app

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

SPEC = """\
version: 1
name: fuzz3
data: {{path: '{data}'}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [{attributes}]
scans:
  - {scan}
significance: {{replicates: 9, seed: 0, workers: 1, alpha: 0.1}}
output: {{dir: out, formats: [json]}}
"""
FPR = "{id: s, type: fpr_scan, penalty: 1, restarts: 2}"
SHIFT = (
    "{{id: s, type: shift, metric: fpr, target: overall, features: [income], bootstrap: 20, "
    "kernel: {{type: gaussian, bandwidth: {bandwidth}, standardize: true}}}}"
)


def _credit(folder: Path) -> str:
    return CREDIT.as_posix()


def _huge_income(folder: Path) -> str:
    frame = pl.read_csv(CREDIT).with_columns(
        pl.when(pl.col("income") > 50_000).then(1e308).otherwise(pl.col("income")).alias("income")
    )
    frame.write_csv(folder / "huge.csv")
    return (folder / "huge.csv").as_posix()


def _duration_attribute(folder: Path) -> str:
    frame = pl.read_csv(CREDIT).with_columns(pl.duration(days=pl.col("default")).alias("sex"))
    frame.write_parquet(folder / "duration.parquet")
    return (folder / "duration.parquet").as_posix()


@dataclass(frozen=True)
class Case:
    name: str
    data: Callable[[Path], str] = _credit
    scan: str = FPR
    attributes: str = "sex, region"
    args: tuple[str, ...] = ()
    expect: str = ""


CASES = [
    Case("shift-bandwidth-1e-300", scan=SHIFT.format(bandwidth="1.0e-300"), expect="too small"),
    Case(
        "shift-feature-1e308",
        _huge_income,
        scan=SHIFT.format(bandwidth="0.5"),
        expect="values beyond 1e+150",
    ),
    Case(
        "duration-attribute",
        _duration_attribute,
        expect="has type Duration",
    ),
    Case("proc-glob", lambda folder: "/proc/**", expect="pseudo file system"),
    Case("overlong-out", args=("--out", "/tmp/" + "o" * 300), expect="File name too long"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_round3_spec_shapes_exit_2(tmp_path: Path, case: Case) -> None:
    spec = tmp_path / "fuzz3.audit.yaml"
    spec.write_text(
        SPEC.format(data=case.data(tmp_path), attributes=case.attributes, scan=case.scan),
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["run", str(spec), *case.args])
    output = result.stderr + result.stdout
    assert result.exit_code == 2, output
    assert case.expect in output, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert "help:" in output, output


SCAN = ["scan", str(CREDIT), "--outcome", "default", "--recommendation", "high_risk"]
SCAN += ["--attributes", "sex,region", "--type", "fpr_scan", "--replicates", "0"]


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--set", "a." * 3000 + "b=1"], "nested more than 20 levels"),
        (["--set", "penalty=" + "[" * 3000 + "]" * 3000], "nested more than 100 levels"),
        (["--save-spec", "/tmp/" + "s" * 300 + ".yaml"], "File name too long"),
    ],
    ids=["set-key-deep", "set-value-deep", "overlong-save-spec"],
)
def test_round3_flag_shapes_exit_2(args: list[str], expect: str) -> None:
    result = CliRunner().invoke(app, [*SCAN, *args])
    output = result.stderr + result.stdout
    assert result.exit_code == 2, output
    assert expect in output, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert len(output) < 2000, "the flag is echoed truncated"


@pytest.mark.parametrize("report", ["/dev/zero", "fifo", "deep", "old"])
def test_round3_reports_given_to_diff_exit_2(tmp_path: Path, report: str) -> None:
    path = Path(report)
    if report == "fifo":
        path = tmp_path / "r.json"
        os.mkfifo(path)
    elif report == "deep":
        path = tmp_path / "r.json"
        path.write_text("[" * 100_000, encoding="utf-8")
    elif report == "old":
        path = tmp_path / "r.json"
        path.write_text('{"schema_version": 1, "scans": [{"findings": 3}]}', encoding="utf-8")
    result = CliRunner().invoke(app, ["diff", str(path), str(path)])
    output = result.stderr + result.stdout
    assert result.exit_code == 2, output
    assert "internal error" not in output and "Traceback" not in output, output


def test_a_long_filter_is_not_echoed_whole(tmp_path: Path) -> None:
    spec = tmp_path / "fuzz3.audit.yaml"
    text = SPEC.format(data=CREDIT.as_posix(), attributes="sex", scan=FPR)
    long_filter = "sex == 'x' and " * 400 + "nocol > 1"
    spec.write_text(text.replace("data: {", f'data: {{filter: "{long_filter}", ', 1))
    result = CliRunner().invoke(app, ["validate", str(spec)])
    output = result.stderr + result.stdout
    assert result.exit_code == 2, output
    assert "unknown column 'nocol'" in output and "…sex == 'x'" in output, output
    assert len(output) < 1000, output


def test_ijdi_threshold_column_never_crossed_is_not_auditable(tmp_path: Path) -> None:
    """Every row's threshold lies above its prediction: every row has the same recommendation,
    so nothing can be found; the scan's status says so instead of a silent PASS."""
    data = tmp_path / "thr.csv"
    pl.read_csv(CREDIT).with_columns(pl.lit(2.0).alias("thr")).write_csv(data)
    spec = tmp_path / "ijdi.audit.yaml"
    scan = (
        "{id: s, type: ijdi_scan, side: negatives, lambda: 0, base_rate: score, "
        "threshold: thr, penalty: 1, restarts: 2}"
    )
    text = SPEC.format(data=data.as_posix(), attributes="sex, region", scan=scan)
    spec.write_text(text.replace(", recommendation: high_risk", ""), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    output = result.stderr + result.stdout
    assert "not auditable" in output, output
    assert "same recommendation" in output, output
    report = (tmp_path / "out" / "fuzz3.json").read_text(encoding="utf-8")
    assert '"status": "not_auditable"' in report


def test_a_poisson_expectation_of_1e300_is_a_scan_error(tmp_path: Path) -> None:
    data = tmp_path / "counts.csv"
    frame = pl.read_csv(CREDIT).with_columns(
        pl.col("income").cast(pl.Int64).alias("n"),
        pl.when(pl.col("applicant_id") < 4).then(1e300).otherwise(1000.0).alias("rate"),
    )
    frame.write_csv(data)
    scan = (
        "{id: s, type: bias_scan, outcome: n, prediction: rate, outcome_type: count, "
        "score: poisson, direction: positive, penalty: 0.5, restarts: 2}"
    )
    spec = tmp_path / "pois.audit.yaml"
    text = SPEC.format(data=data.as_posix(), attributes="sex, region", scan=scan)
    spec.write_text(text.replace(", recommendation: high_risk", ""), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    output = result.stderr + result.stdout
    assert result.exit_code == 2, output
    assert "expected count 1e+300 (column 'rate') is too large" in output, output
    assert "internal error" not in output
