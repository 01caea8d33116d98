"""The built documentation site works when opened from disk (file://), in headless Chromium.

The site is built once into a temporary folder (the pages `make docs` generates, then
``mkdocs build --strict``). Every page is opened from disk and every navigation link is followed:
each must lead to a page of the site (never a directory listing or a missing file), and the
internal links and images of every page must exist. Needs the docs extra (mkdocs, playwright)
and a Chromium (Debian's ``chromium`` on PATH, as for the HTML report test, or playwright's own);
skipped without them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for command in (
        [sys.executable, "scripts/build_docs.py", "--check"],
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
    ):
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"a": "href", "img": "src", "link": "href", "script": "src"}.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.links.append(value)


def _local_target(page: Path, link: str) -> Path | None:
    """The file a relative link of ``page`` points to, or None for external links and anchors."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("#") or not parts.path:
        return None
    return (page.parent / unquote(parts.path)).resolve()


def test_every_page_is_a_file_and_every_internal_link_exists(site: Path) -> None:
    """With use_directory_urls: false, pages are page.html and links name them: nothing points to
    a directory (a listing when opened from disk) or to a file that is not there."""
    # 404.html is for a web server (its links are absolute from the server's root)
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    assert len(pages) > 20
    for source in (ROOT / "docs").rglob("*.md"):
        page = site / source.relative_to(ROOT / "docs").with_suffix(".html")
        assert page.is_file(), f"{source.relative_to(ROOT)} was not written as {page.name}"
    bad = []
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            target = _local_target(page, link)
            if target is None:
                continue
            if target.is_dir() or not target.is_file():
                bad.append(f"{page.relative_to(site)} -> {link}")
    assert not bad, "links to missing files or folders:\n" + "\n".join(bad[:40])


def _browser() -> tuple[Any, Any]:
    """(playwright, browser) on the Chromium of the HTML report test, or skip."""
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = (
        os.environ.get("FAIRSCAN_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    manager = sync_api.sync_playwright().start()
    try:
        browser = manager.chromium.launch(executable_path=executable, args=["--no-sandbox"])
    except Exception as exc:  # no usable Chromium: skip, as the HTML report test does
        manager.stop()
        pytest.skip(f"no Chromium for playwright: {exc}")
    return manager, browser


def test_nav_links_opened_from_disk_lead_to_pages(site: Path) -> None:
    """Open site/index.html via file://, follow every navigation link by clicking it, and land on
    a rendered page of the site each time (its title and article), without script errors."""
    manager, browser = _browser()
    try:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        home = (site / "index.html").as_uri()
        page.goto(home)
        assert "fairscan" in page.title()
        # the primary navigation's links to pages (not the current page's table of contents)
        nav = "nav.md-nav--primary a.md-nav__link[href]:not([href^='#'])"
        hrefs = page.eval_on_selector_all(nav, "els => els.map(e => e.getAttribute('href'))")
        assert len(hrefs) >= 25, hrefs
        # the navigation is the same on every page (its links relative to that page): follow
        # link i of the page link i - 1 led to, so every page is reached by a click
        visited = set()
        for index, href in enumerate(hrefs):
            assert page.locator(nav).count() == len(hrefs), page.url
            link = page.locator(nav).nth(index)
            with page.expect_navigation(wait_until="load"):
                link.dispatch_event("click")  # a click, also on links of collapsed sections
            url = page.url
            assert url.startswith("file://") and url.split("#")[0].endswith(".html"), (href, url)
            target = Path(unquote(urlsplit(url).path))
            assert target.is_file() and site in target.parents, (href, url)
            assert page.locator("article.md-content__inner h1").count() >= 1, (href, url)
            assert "Index of" not in page.title(), (href, url)
            visited.add(target)
        assert len(visited) >= 25
        assert errors == [], errors
    finally:
        browser.close()
        manager.stop()


def test_the_home_page_shows_the_report_screenshot(site: Path) -> None:
    manager, browser = _browser()
    try:
        page = browser.new_page()
        page.goto((site / "index.html").as_uri())
        image = page.locator('img[src="images/report-sample.png"]')
        assert image.count() == 1
        width = image.evaluate("img => img.complete ? img.naturalWidth : 0")
        assert width >= 800, "the report screenshot did not load"
    finally:
        browser.close()
        manager.stop()


def test_search_index_is_embedded_for_file_urls(site: Path) -> None:
    """The offline plugin embeds the search index as a script (search_index.js), so a page opened
    from disk has it without a server. (Material then loads a small worker shim from unpkg.com
    on file:// pages: search from disk needs that one download; `make docs-serve` needs none.)"""
    manager, browser = _browser()
    try:
        page = browser.new_page()
        page.goto((site / "index.html").as_uri())
        docs = page.evaluate("typeof __index === 'object' ? __index.docs.length : 0")
        assert docs > 100, docs
        # no third-party fonts: the theme uses the system fonts
        assert "fonts.googleapis.com" not in (site / "index.html").read_text(encoding="utf-8")
    finally:
        browser.close()
        manager.stop()
