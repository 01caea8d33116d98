"""A base install (``pip install fairscan``, no extras) audits files (issue 38): the demo and a
streamed Parquet audit run with Ibis, DuckDB, pandas and pyarrow impossible to import
(scripts/without_extras.py refuses them) and give the reports a run with every extra gives;
what needs an extra says which one to install. The same in a real fresh environment:
scripts/check_lowest_versions.sh (``make test-lowest``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_EXTRAS = ROOT / "scripts" / "without_extras.py"
COMPARE = ROOT / "scripts" / "compare_reports.py"
STREAMED = """\
version: 1
name: streamed-parquet
data:
  path: parts
  filter: "region != 'East'"
columns:
  outcome: default
  prediction: score
  recommendation: high_risk
attributes: [sex, ethnicity, age_group, income]
discretize:
  income: {quantiles: 4}
scans:
  - {id: fpr, type: fpr_scan, restarts: 20}
  - {id: calibration, type: bias_scan, direction: negative, restarts: 10}
significance: {replicates: 19, seed: 7, workers: 1}
output: {formats: [json, markdown]}
"""


def _audit(base: bool, spec: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [str(WITHOUT_EXTRAS)] if base else ["-m", "fairscan.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, *command, "run", str(spec), "--out", str(out), "--no-progress", *options],
        capture_output=True,
        text=True,
        env=env,
        cwd=spec.parent,
    )


def _same_reports(full: Path, base: Path, *ignored: str) -> None:
    flags = [f"--ignore-key={key}" for key in ignored]
    compared = subprocess.run(
        [sys.executable, str(COMPARE), str(full), str(base), *flags], capture_output=True, text=True
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr


@pytest.mark.slow
def test_the_demo_runs_without_the_extras(tmp_path: Path) -> None:
    pytest.importorskip("ibis")  # the reference run: every extra installed
    spec = ROOT / "audits" / "sample.audit.yaml"
    full = _audit(False, spec, tmp_path / "full", "--replicates", "19")
    base = _audit(True, spec, tmp_path / "base", "--replicates", "19")
    assert full.returncode == 1, full.stderr  # the demo's injected bias is found
    assert base.returncode == full.returncode, base.stderr
    _same_reports(tmp_path / "full", tmp_path / "base")


@pytest.mark.slow
def test_a_streamed_parquet_audit_runs_without_the_extras(tmp_path: Path) -> None:
    """Without fairscan[sql] polars streams the folder; with it DuckDB prepares it: the
    same findings, statistics and p-values, the data source naming the engine."""
    pytest.importorskip("ibis")
    credit = pl.read_csv(ROOT / "sample_data" / "credit.csv")
    (tmp_path / "parts").mkdir()
    for i, part in enumerate(credit.iter_slices(5000)):
        part.write_parquet(tmp_path / "parts" / f"part-{i}.parquet")
    spec = tmp_path / "streamed.audit.yaml"
    spec.write_text(STREAMED)
    full = _audit(False, spec, tmp_path / "full")
    base = _audit(True, spec, tmp_path / "base")
    assert full.returncode in (0, 1), full.stderr
    assert base.returncode == full.returncode, base.stderr
    _same_reports(tmp_path / "full", tmp_path / "base", "data_source")
    full_source = json.loads((tmp_path / "full" / "streamed-parquet.json").read_text())
    base_source = json.loads((tmp_path / "base" / "streamed-parquet.json").read_text())
    assert full_source["provenance"]["data_source"]["engine"] == "duckdb"
    assert base_source["provenance"]["data_source"]["engine"] == "polars"


def test_a_database_table_names_the_extra_to_install(tmp_path: Path) -> None:
    spec = tmp_path / "db.audit.yaml"
    spec.write_text(
        STREAMED.replace("  path: parts\n", "  connection: duckdb://credit.duckdb\n  table: t\n")
    )
    (tmp_path / "credit.duckdb").write_bytes(b"")
    base = _audit(True, spec, tmp_path / "base")
    assert base.returncode == 2, base.stdout + base.stderr
    assert "pip install 'fairscan[sql]'" in base.stderr
    assert "Traceback" not in base.stderr
