"""docs/install.md's "Install sizes" table (scripts/install_sizes.py, issue 38) names the base
install and every extra pyproject.toml declares, and no extra that it does not."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_every_extra_has_its_size_in_the_install_docs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    section = _section((ROOT / "docs" / "install.md").read_text(encoding="utf-8"), "Install sizes")
    rows = re.findall(r"^\| `fairscan(?:\[([a-z0-9_-]+)\])?`[^|]*\| *(\d+) *\|", section, re.M)
    named = [extra for extra, _ in rows]
    assert "" in named, "the base install's row"
    assert sorted(e for e in named if e) == sorted(project["optional-dependencies"])
    assert len(named) == len(set(named))
