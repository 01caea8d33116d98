"""No import circle among fairscan's modules (issue 22), function-local and TYPE_CHECKING imports
included: grimp reads every import statement (scripts/import_cycles.py lists the circles)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "import_cycles", ROOT / "scripts" / "import_cycles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tarjan_finds_a_circle() -> None:
    script = _script()
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    components = script.strongly_connected(["a", "b", "c", "d"], edges)
    assert sorted(c for c in components if len(c) > 1) == [["a", "b", "c"]]


def test_no_import_circle_in_the_package() -> None:
    assert _script().import_circles("fairscan") == []
