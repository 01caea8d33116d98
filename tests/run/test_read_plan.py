"""The read plan (issue 37): built by the run layer from the spec, the roles and what each scan
type declares; no scan type is named outside ``fairscan.scans``; a file read into memory is
read once (hashed while it is read)."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from fairscan.data import load
from fairscan.run.plan import read_plan
from fairscan.run.specs import checked_roles, loaded_from_mapping
from fairscan.scans import SCAN_TYPES

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
BASE: dict[str, Any] = {
    "version": 1,
    "name": "plan",
    "data": {"path": str(CREDIT)},
    "columns": {"outcome": "default", "prediction": "score", "recommendation": "high_risk"},
    "attributes": ["sex", "ethnicity", "income"],
    "discretize": {"income": {"quantiles": 4}},
}


def _plan(scans: list[dict[str, Any]], **extra: Any) -> Any:
    loaded = loaded_from_mapping({**BASE, "scans": scans, **extra}, "<test>")
    roles, issues = checked_roles(loaded, loaded.spec)
    assert not issues
    return read_plan(loaded.spec, roles)


CALIBRATION = {"id": "c", "type": "bias_scan", "direction": "negative"}
CBS = {
    "id": "cbs",
    "type": "cbs",
    "metric": "fpr",
    "protected": {"column": "sex", "value": "Female"},
    "model_attributes": ["income"],
}


def test_a_calibration_scan_declares_its_probabilities_summable() -> None:
    plan = _plan([CALIBRATION])
    assert dict(plan.calibrations) == {"score": plan.calibrations["score"]}
    assert plan.calibrations["score"].directions == (-1,)
    # the fpr scan reads the score through its threshold only: collapsed to its sides
    columns = {"outcome": "default", "prediction": "score", "threshold": 0.5}
    cut = _plan([{"id": "f", "type": "fpr_scan"}], columns=columns)
    assert cut.cuts["score"].thresholds == (0.5,) and cut.cuts["score"].rule == "ge"


def test_a_column_read_by_value_is_never_summarised() -> None:
    """A second scan that reads the score's values (a Gaussian bias scan) keeps it per row."""
    plan = _plan([CALIBRATION, CBS | {"metric": "cal"}])
    assert "score" in plan.by_value and not plan.calibrations
    weighted = _plan([CALIBRATION], columns={**BASE["columns"], "weight": "score"})
    assert not weighted.calibrations


def test_model_covariates_are_read_by_value() -> None:
    """``income`` is a binned attribute and a covariate of CBS: the plan reads it by value too
    (the push-down then keeps its values beside its bins)."""
    plan = _plan([CBS])
    assert "income" in plan.by_value and "income" in plan.attributes
    assert "income" not in _plan([{"id": "f", "type": "fpr_scan"}]).by_value


def test_the_eager_read_hashes_the_bytes_it_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One read of the file: its SHA-256 is of the bytes parsed, and no second pass
    (``file_sha256``) runs."""
    from fairscan.api import RunOptions, prepare_audit

    data = tmp_path / "credit.csv"
    data.write_bytes(CREDIT.read_bytes())
    spec = tmp_path / "a.audit.yaml"
    spec.write_text(
        "version: 1\nname: a\ndata: {path: credit.csv}\n"
        "columns: {outcome: default, recommendation: high_risk}\nattributes: [sex]\n"
        "scans: [{id: f, type: fpr_scan}]\n"
    )

    def second_read(path: Path, **_: Any) -> str:
        raise AssertionError("the file was read a second time to hash it")

    monkeypatch.setattr(load, "file_sha256", second_read)
    prepared = prepare_audit(spec, RunOptions(write=False))
    assert prepared.data_sha256 == hashlib.sha256(CREDIT.read_bytes()).hexdigest()
    assert prepared.data.n_rows == pl.read_csv(CREDIT).height


def _named_types(path: Path, names: set[str]) -> list[str]:
    """Lines of ``path`` that name a registered scan type in code: a string constant equal to
    its name (docstrings aside), e.g. ``scan.type == "bias_scan"``."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
    ]


@pytest.mark.parametrize("package", ["data", "run"])
def test_no_scan_type_is_named_in_the_data_and_run_layers(package: str) -> None:
    """A scan type's rules live in its package behind a ScanType hook: the data and run layers
    name no type."""
    names = set(SCAN_TYPES)
    found = [
        line
        for path in sorted((ROOT / "src" / "fairscan" / package).rglob("*.py"))
        for line in _named_types(path, names)
    ]
    assert not found, "\n".join(found)


def test_fairscan_audit_of_a_file_path_reads_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fairscan.audit(path)`` hashes the bytes it parses too (no second pass to hash)."""
    import fairscan

    def second_read(path: Path, **_: Any) -> str:
        raise AssertionError("the file was read a second time to hash it")

    monkeypatch.setattr(load, "file_sha256", second_read)
    report = fairscan.audit(
        CREDIT,
        outcome="default",
        recommendation="high_risk",
        attributes=["sex"],
        scans=[{"type": "fpr_scan", "restarts": 2}],
        replicates=0,
    )
    assert report.provenance.data_sha256 == hashlib.sha256(CREDIT.read_bytes()).hexdigest()
