"""``extends`` may switch the data source's kind (issue 38): a child naming ``data.connection``
replaces its parent's ``data.path`` (and back), a child's ``data.table`` replaces the parent's
``data.sql``; the rest of ``data`` (the filter) still merges. Real spec files, a real DuckDB file,
and the two audits compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairscan.api import load_spec
from fairscan.errors import SpecError

duckdb = pytest.importorskip("duckdb")

CREDIT = Path(__file__).resolve().parents[2] / "sample_data" / "credit.csv"

PARENT = f"""\
version: 1
name: credit
data:
  path: {CREDIT.as_posix()}
  filter: "age_group != 'unknown'"
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 5}}
significance: {{replicates: 19, seed: 0, workers: 1}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    con = duckdb.connect(str(tmp_path / "credit.duckdb"))
    con.execute(f"create table credit as select * from read_csv('{CREDIT.as_posix()}')")
    con.close()
    (tmp_path / "base.audit.yaml").write_text(PARENT, encoding="utf-8")
    return tmp_path


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_child_moves_the_parents_file_to_a_database_table(folder: Path) -> None:
    child = _write(
        folder,
        "warehouse.audit.yaml",
        "extends: base.audit.yaml\nversion: 1\nname: credit-warehouse\n"
        "data: {connection: credit.duckdb, table: credit}\n",
    )
    data = load_spec(child).spec.data
    assert (data.path, data.connection, data.table) == (None, "credit.duckdb", "credit")
    assert data.filter == "age_group != 'unknown'"  # the rest of data still merges


def test_a_grandchild_moves_it_back_to_a_file(folder: Path) -> None:
    _write(
        folder,
        "warehouse.audit.yaml",
        "extends: base.audit.yaml\nversion: 1\nname: w\n"
        "data: {connection: credit.duckdb, sql: select * from credit, allow_file_access: false}\n",
    )
    grandchild = _write(
        folder,
        "file.audit.yaml",
        f"extends: warehouse.audit.yaml\nversion: 1\nname: f\ndata: {{path: {CREDIT.as_posix()}}}\n",
    )
    data = load_spec(grandchild).spec.data
    assert data.path == CREDIT.as_posix()
    assert (data.connection, data.sql, data.table) == (None, None, None)


def test_a_table_replaces_the_parents_query(folder: Path) -> None:
    _write(
        folder,
        "query.audit.yaml",
        "extends: base.audit.yaml\nversion: 1\nname: q\n"
        "data: {connection: credit.duckdb, sql: select * from credit}\n",
    )
    child = _write(
        folder,
        "table.audit.yaml",
        "extends: query.audit.yaml\nversion: 1\nname: t\ndata: {table: credit}\n",
    )
    data = load_spec(child).spec.data
    assert (data.connection, data.table, data.sql) == ("credit.duckdb", "credit", None)


def test_both_kinds_in_one_file_are_still_an_error_at_that_file(folder: Path) -> None:
    child = _write(
        folder,
        "both.audit.yaml",
        "extends: base.audit.yaml\nversion: 1\nname: b\n"
        f"data: {{path: {CREDIT.as_posix()}, connection: credit.duckdb, table: credit}}\n",
    )
    with pytest.raises(SpecError) as caught:
        load_spec(child)
    (issue,) = caught.value.issues
    assert "not both" in issue.message
    assert issue.file is not None and issue.file.endswith("both.audit.yaml")
    assert issue.line == 4


def test_the_switched_audit_finds_what_the_parent_finds(folder: Path) -> None:
    """Same rows through the file and through DuckDB: the same findings and p-values."""
    from fairscan.api import RunOptions, run_audit

    child = _write(
        folder,
        "warehouse.audit.yaml",
        "extends: base.audit.yaml\nversion: 1\nname: credit-warehouse\n"
        "data: {connection: credit.duckdb, table: credit}\n",
    )
    reports = [
        json.loads(run_audit(path, RunOptions(write=False)).report.model_dump_json())
        for path in (folder / "base.audit.yaml", child)
    ]
    parent, switched = (
        [(f["subgroup"], f["p_value"]) for f in r["scans"][0]["findings"]] for r in reports
    )
    assert switched == parent and parent
