"""Issue 22: the refactored run path gives every shipped audit the report main 023942f gave it
before the refactor. ``shipped_audits.json`` holds, per audit, the sha256 of that report's
canonical JSON without the keys that vary between runs and machines (timings, clock times,
versions, where the spec and data files lie, the worker count, which never changes a seeded
result); the test runs the audit through :func:`fairscan.api.run_audit` and hashes its report
the same way. On a mismatch, ``scripts/compare_reports.py`` shows the first differing key.

The COMPAS and Adult audits read ``build/`` tables made from ``../shared/data`` (``make compas``,
``make adult``): they are skipped where those are absent."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fairscan.api import RunOptions, load_spec, run_audit
from fairscan.report.formats import report_json

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = json.loads((Path(__file__).with_name("shipped_audits.json")).read_text("utf-8"))
FAST = [
    "sample",
    "claims-regression",
    "grades-multiclass",
    "compas-certify-ppv",
    "compas-flag-fpr",
    "compas-flag-ppv",
    "compas-shift",
]
SLOW = ["compas-fpr", "compas-cbs", "compas-ijdi", "adult-subroc"]


def _compare_reports() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compare_reports", ROOT / "scripts" / "compare_reports.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COMPARE = _compare_reports()
IGNORED = COMPARE.VOLATILE_KEYS | {"workers", "data_path", "spec_path"}


def digest(report: dict[str, Any]) -> str:
    kept = COMPARE.strip_volatile(report, IGNORED)
    text = json.dumps(kept, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _run(name: str) -> dict[str, Any]:
    spec_path = Path("audits") / f"{name}.audit.yaml"
    cwd = os.getcwd()
    os.chdir(ROOT)  # the spec paths are relative to the repository, as `audit run` is called
    try:
        data = Path(load_spec(spec_path).spec.data.path)
        if not (spec_path.parent / data).exists():
            pytest.skip(f"{data} is absent: it is prepared from ../shared/data (make compas/adult)")
        outcome = run_audit(spec_path, RunOptions(write=False))
    finally:
        os.chdir(cwd)
    parsed: dict[str, Any] = json.loads(report_json(outcome.report))
    return parsed


def test_every_shipped_audit_has_an_expectation() -> None:
    shipped = {p.name.removesuffix(".audit.yaml") for p in (ROOT / "audits").glob("*.audit.yaml")}
    assert shipped == set(EXPECTED["digests"]) == set(FAST) | set(SLOW)


def test_the_digest_sees_a_changed_figure() -> None:
    report = {"provenance": {"utc_time": "x", "seed": 0}, "scans": [{"p": 0.05, "timing": {}}]}
    changed = {"provenance": {"utc_time": "y", "seed": 0}, "scans": [{"p": 0.0500001}]}
    assert digest(report) != digest(changed)
    same = {"provenance": {"utc_time": "y", "seed": 0}, "scans": [{"p": 0.05}]}
    assert digest(report) == digest(same)


@pytest.mark.parametrize("name", FAST)
def test_fast_audit_reports_are_unchanged(name: str) -> None:
    assert digest(_run(name)) == EXPECTED["digests"][name], (
        f"{name}: the report differs from main's; write it with `audit run "
        f"audits/{name}.audit.yaml --out DIR` and run scripts/compare_reports.py on the two"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_audit_reports_are_unchanged(name: str) -> None:
    assert digest(_run(name)) == EXPECTED["digests"][name]
