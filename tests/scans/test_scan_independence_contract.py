"""The import contract that keeps scan types independent lists every registered scan type's
package (issue 37): a new scan type added to the registry but not to pyproject.toml's
``[tool.importlinter]`` contract could import another type unnoticed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fairscan.scans import SCAN_TYPES

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _independence_modules() -> list[str]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    [independence] = [c for c in contracts if c["type"] == "independence"]
    return list(independence["modules"])


def _package(module: str) -> str:
    """``fairscan.scans.bias.spec`` -> ``fairscan.scans.bias``; a one-module type is its module."""
    return ".".join(module.split(".")[:3])


def test_the_independence_contract_lists_every_registered_scan_type() -> None:
    packages = {_package(entry.spec_model.__module__) for entry in SCAN_TYPES.values()}
    assert sorted(packages) == sorted(_independence_modules())


def test_every_package_of_the_contract_holds_a_registered_type() -> None:
    """No stale entry and no shared module listed as a scan type."""
    listed = _independence_modules()
    assert len(listed) == len(set(listed))
    assert all(module.startswith("fairscan.scans.") for module in listed)
