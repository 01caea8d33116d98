"""The committed JSON Schemas are up to date and every spec field is documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fairscan.schemas import (
    JSON_SCHEMA_DIALECT,
    REPORT_SCHEMA_FILE,
    SPEC_SCHEMA_FILE,
    expected_schema_files,
    main,
    report_json_schema,
    spec_json_schema,
    write_schemas,
)

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


@pytest.mark.parametrize("name", [SPEC_SCHEMA_FILE, REPORT_SCHEMA_FILE])
def test_committed_schemas_are_up_to_date(name: str) -> None:
    expected = expected_schema_files()[name]
    path = SCHEMA_DIR / name
    stale = not path.is_file() or path.read_text(encoding="utf-8") != expected
    if stale:
        pytest.fail(
            f"schemas/{name} is missing or out of date with the pydantic models: "
            "run `make schemas` (python -m fairscan.schemas) and commit the result",
            pytrace=False,
        )


def test_schema_headers() -> None:
    for schema in (spec_json_schema(), report_json_schema()):
        assert schema["$schema"] == JSON_SCHEMA_DIALECT
        assert schema["$id"].startswith("https://") and schema["$id"].endswith(".schema.json")
        assert schema["title"].startswith("fairscan ")
        assert schema["type"] == "object"


def _properties(node: Any, where: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every (location, property schema) in a JSON Schema, depth first."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            found.append((f"{where}/properties/{name}", prop))
        for key, value in node.items():
            found.extend(_properties(value, f"{where}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_properties(value, f"{where}/{i}"))
    return found


def test_every_spec_property_has_a_description() -> None:
    props = _properties(spec_json_schema())
    assert len(props) > 20  # the walk reaches into $defs (scan types, sections)
    undocumented = [where for where, prop in props if not str(prop.get("description", "")).strip()]
    assert not undocumented, (
        "spec fields without a description (add Field(description=...)): " + ", ".join(undocumented)
    )


def test_every_scan_type_is_in_the_spec_schema() -> None:
    from fairscan.scans import SCAN_TYPES

    mapping = spec_json_schema()["properties"]["scans"]["items"]["discriminator"]["mapping"]
    assert set(mapping) == set(SCAN_TYPES)


def test_write_schemas_and_entry_point(tmp_path: Path) -> None:
    written = write_schemas(tmp_path / "a")
    assert sorted(p.name for p in written) == sorted([SPEC_SCHEMA_FILE, REPORT_SCHEMA_FILE])
    text = (tmp_path / "a" / SPEC_SCHEMA_FILE).read_bytes().decode("utf-8")
    assert text.endswith("}\n") and "\r" not in text
    assert json.loads(text) == json.loads(json.dumps(spec_json_schema()))

    assert main([str(tmp_path / "b")]) == 0
    for name in (SPEC_SCHEMA_FILE, REPORT_SCHEMA_FILE):
        assert (tmp_path / "b" / name).read_text(encoding="utf-8") == expected_schema_files()[name]
