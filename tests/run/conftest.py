"""Shared by the re-audit and history tests: the seeded data generator of scripts/."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def reaudit_data() -> ModuleType:
    """``scripts/make_reaudit_data.py`` as a module (its ``write`` makes the data and specs)."""
    spec = importlib.util.spec_from_file_location(
        "make_reaudit_data", ROOT / "scripts" / "make_reaudit_data.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
