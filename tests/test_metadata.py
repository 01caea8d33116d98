"""Package metadata (issue 23): what a package index shows renders off the repository."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_index_description_has_no_relative_links_or_images() -> None:
    """The long description (pyproject's readme) renders off the repository: no link or image
    that points into the source tree, and the metadata a package index shows is there."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / project["readme"]["file"]).read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)", text) + re.findall(r"<img[^>]+src=\"([^\"]+)", text)
    assert all(t.startswith(("https://", "http://", "#")) for t in targets), targets
    assert "![" not in text or all(t.startswith("https://") for t in targets)
    assert project["license"] == "Apache-2.0"
    assert any(
        c.startswith("Programming Language :: Python :: 3.1") for c in project["classifiers"]
    )
    # no invented project URLs (issue 23): add [project.urls] once a public repository exists
    assert "OWNER" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
