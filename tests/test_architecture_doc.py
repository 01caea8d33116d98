"""docs/architecture.md lists every module of the package (issue 37): a new module comes with
its line there, so the map never falls behind the code."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "fairscan"
DOC = ROOT / "docs" / "architecture.md"
SOURCES = ("*.py", "*.pyx", "*.pxd")


def _modules() -> list[str]:
    """Every module's dotted name; a package by its own name (its ``__init__``)."""
    names = set()
    for pattern in SOURCES:
        for path in PACKAGE.rglob(pattern):
            parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.add(".".join(parts))
    return sorted(names)


def test_every_module_is_in_the_architecture_document() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in _modules() if f"`{name}`" not in text]
    assert not missing, f"add a line for each to docs/architecture.md: {missing}"


def test_the_document_names_no_module_that_is_gone() -> None:
    import re

    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`(fairscan(?:\.\w+)*)`", text))
    known = set(_modules())
    # a name may also be a module's attribute (fairscan.scans.AUDIT_SPEC, a function)
    gone = sorted(n for n in named if n not in known and n.rsplit(".", 1)[0] not in known)
    assert not gone, gone


def test_the_document_is_in_the_site_and_the_readme() -> None:
    assert "architecture.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")
