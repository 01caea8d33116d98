"""Optional libraries imported when a test first uses them, not when the suite is collected
(issue 38: Ibis, DuckDB, pandas and Dask imported at collection cost every run, even one of a
single file, seconds). A missing library still skips the module, found without importing it."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

import pytest


def require(name: str, reason: str | None = None) -> None:
    """Skip the calling test module when ``name`` is not installed (without importing it)."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(reason or f"could not import {name!r}", allow_module_level=True)


class _Lazy(ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        # pytest's collector probes every module-level object (``__test__``, its fixture
        # markers, ``pytestmark``): those are not uses, and import nothing
        if attribute.startswith("_") or attribute.startswith("pytest"):
            raise AttributeError(attribute)
        module = pytest.importorskip(self.__name__)
        return getattr(module, attribute)


def lazy(name: str, reason: str | None = None) -> Any:
    """``name``, imported on its first use: ``duckdb = lazy("duckdb")`` at module level."""
    require(name, reason)
    return _Lazy(name)
