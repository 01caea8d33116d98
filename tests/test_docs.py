"""Generated documentation stays in sync with the code."""

from __future__ import annotations

from pathlib import Path

from fairscan.explain import explain, reference_markdown
from fairscan.scans import SCAN_TYPES

ROOT = Path(__file__).resolve().parent.parent


def test_scan_reference_is_up_to_date():
    committed = (ROOT / "docs" / "scans.md").read_text(encoding="utf-8")
    assert committed == reference_markdown(), "docs/scans.md is stale: run `make docs`"


def test_every_scan_type_is_explained_with_its_parameters():
    for type_, entry in SCAN_TYPES.items():
        text = explain(type_)
        assert entry.title in text and "Parameters:" in text
        for name in entry.spec_model.model_fields:
            if name != "type":
                alias = entry.spec_model.model_fields[name].alias or name
                assert f"  {name}:" in text or f"  {alias}:" in text, (type_, name)
