"""Generated documentation stays in sync with the code, and `audit explain` reads as words."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fairscan.explain import explain, explanation, parameters
from fairscan.scans import SCAN_TYPES

ROOT = Path(__file__).resolve().parent.parent


def _build_docs() -> ModuleType:
    """scripts/build_docs.py (a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "scripts" / "build_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_docs", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_docs() -> ModuleType:
    return _build_docs()


def test_generated_pages_are_up_to_date(build_docs: ModuleType) -> None:
    stale = build_docs.stale(ROOT)
    assert not stale, f"stale documentation pages {[str(p) for p in stale]}: run `make docs`"


def test_every_scan_type_has_a_page_in_the_site_navigation(build_docs: ModuleType) -> None:
    pages = build_docs.pages(ROOT)
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for type_ in SCAN_TYPES:
        assert Path(f"docs/scans/{type_}.md") in pages
        assert f"scans/{type_}.md" in nav, f"add scans/{type_}.md to the nav of mkdocs.yml"


def test_every_scan_type_is_explained_with_its_parameters() -> None:
    for type_, entry in SCAN_TYPES.items():
        text = explain(type_)
        assert entry.title in text and "Parameters:" in text
        for name, field in entry.spec_model.model_fields.items():
            if name != "type":
                assert f"  {field.alias or name}:" in text, (type_, name)


def test_explain_types_read_as_words() -> None:
    """No Python typing syntax: `number or null`, `one of: ge, gt`, never Optional[Literal[...]]."""
    for type_ in SCAN_TYPES:
        for param in parameters(type_):
            assert not re.search(
                r"Optional|Literal|Union|\[|\]|\bstr\b|\bfloat\b|\bint\b", param.type
            ), (
                type_,
                param.name,
                param.type,
            )
    by_name = {p.name: p for p in parameters("fpr_scan")}
    assert by_name["threshold"].type == "number or null"
    assert by_name["threshold_rule"].type == "one of: ge, gt or null"
    assert by_name["restarts"].type == "integer from 1 to 100000"
    assert by_name["penalty"].type == "number >= 0"
    assert by_name["id"].type == "string"


def test_explain_lists_nested_keys_and_spec_names() -> None:
    cbs = {p.name: p for p in parameters("cbs")}
    assert cbs["protected"].type == "mapping" and cbs["protected"].default == "required"
    assert cbs["protected.column"].type == "string"
    assert "Column defining the protected class." in cbs["protected.column"].description
    flag = {p.name: p for p in parameters("flag")}
    assert flag["groups"].type == "mapping or list of mappings"
    assert {"groups.attributes", "groups.intervals.grid", "groups[].filter"} <= set(flag)
    # a field with an alias is listed as a spec writes it
    ijdi = {p.name for p in parameters("ijdi_scan")}
    assert "lambda" in ijdi and "lam" not in ijdi
    assert "  lambda: number >= 0 or null (default: null)" in explain("ijdi_scan")


def test_scan_pages_carry_the_explain_text(build_docs: ModuleType) -> None:
    for type_ in SCAN_TYPES:
        page = build_docs.scan_page(type_)
        info = explanation(type_)
        assert info.what in page and (info.reading or "") in page
        for param in info.parameters:
            assert f"| `{param.name}` |" in page


def test_spec_reference_covers_every_top_level_key(build_docs: ModuleType) -> None:
    import json

    schema = json.loads((ROOT / "schemas" / "audit-spec.schema.json").read_text(encoding="utf-8"))
    page = build_docs.spec_reference(schema)
    for key in schema["properties"]:
        assert f"| `{key}` |" in page, key
    assert "| `significance.replicates` |" in page and "| `columns.threshold_rule` |" in page
    assert "Optional[" not in page and "anyOf" not in page


def test_api_reference_lists_the_public_api(build_docs: ModuleType) -> None:
    import fairscan

    page = build_docs.api_reference()
    for name in fairscan.__all__:
        if name != "__version__":
            assert re.search(rf"^::: fairscan\.[\w.]+\.{name}$", page, re.M), name
