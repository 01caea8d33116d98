"""sqlglot's allowed range (pyproject.toml) is the one Ibis 12 works with (issue 38): from 30.18
on, sqlglot compiles ``DROP VIEW IF EXISTS`` without the view's name, which Ibis sends when it
drops the temporary views and tables of DuckDB and PostgreSQL queries."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_sqlglot_compiles_the_drop_ibis_sends() -> None:
    sqlglot = pytest.importorskip("sqlglot", reason="fairscan[sql] is not installed")
    drop = sqlglot.expressions.Drop(kind="VIEW", this=sqlglot.table("v"), exists=True)
    assert drop.sql("duckdb") == "DROP VIEW IF EXISTS v"
    assert drop.sql("postgres") == "DROP VIEW IF EXISTS v"


def test_every_extra_excludes_the_sqlglot_releases_that_drop_no_name() -> None:
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    ranges = [
        Requirement(r).specifier
        for requirements in extras.values()
        for r in requirements
        if Requirement(r).name == "sqlglot"
    ]
    assert ranges, "the extras that bring Ibis bound sqlglot"
    for allowed in ranges:
        assert allowed.contains("29.0.0") and allowed.contains("30.17.0")
        assert not any(allowed.contains(v) for v in ("30.18.0", "30.19.0", "30.30.0"))
