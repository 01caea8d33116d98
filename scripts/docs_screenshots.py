"""Screenshots for the documentation, taken in headless Chromium (playwright).

    python scripts/docs_screenshots.py report [--out docs/images/report-sample.png]
    python scripts/docs_screenshots.py site   [--site site] [--out site/images/docs-home.png]

``report`` runs the demo audit (``audits/sample.audit.yaml``, the shipped sample data, with its own
seed and replicates) into a temporary folder with the HTML format, opens the report and saves the
top of the page: the home page of the site shows it. Re-run it when the HTML report changes.
``site`` opens the built site's home page from disk (``make docs`` first) and saves it.

Chromium: the ``chromium`` on PATH (Debian's package), or playwright's own browser
(``playwright install chromium``); ``FAIRSCAN_CHROMIUM`` names another executable.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1200, 900


def chromium_path() -> str | None:
    """The Chromium executable to drive, or None for playwright's bundled browser."""
    named = os.environ.get("FAIRSCAN_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(page_path: Path, out: Path, *, clip_height: int | None = None) -> None:
    """Open ``page_path`` (file://) and save a screenshot of its top ``clip_height`` pixels."""
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            page = browser.new_page(
                viewport={"width": WIDTH, "height": HEIGHT}, device_scale_factor=1
            )
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            height = clip_height or HEIGHT
            page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
        finally:
            browser.close()


def demo_report(folder: Path) -> Path:
    """The demo audit's HTML report, written into ``folder``."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    spec = (ROOT / "audits" / "sample.audit.yaml").read_text(encoding="utf-8")
    spec = spec.replace(
        "../sample_data/credit.csv", (ROOT / "sample_data" / "credit.csv").as_posix()
    )
    spec = re.sub(r"formats: \[[^]]*\]", "formats: [html]", spec)
    path = folder / "sample.audit.yaml"
    path.write_text(spec, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(folder), "-q"])
    if result.exit_code not in (0, 1):
        raise SystemExit(f"the demo audit failed (exit {result.exit_code}):\n{result.output}")
    return folder / "sample-credit.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["report", "site"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--site", type=Path, default=ROOT / "site")
    args = parser.parse_args(argv)
    if args.what == "report":
        out = args.out or ROOT / "docs" / "images" / "report-sample.png"
        with tempfile.TemporaryDirectory() as folder:
            screenshot(demo_report(Path(folder)), out, clip_height=1000)
    else:
        index = args.site / "index.html"
        if not index.is_file():
            raise SystemExit(f"{index} does not exist: build the site first (make docs)")
        out = args.out or args.site / "images" / "docs-home.png"
        screenshot(index, out)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
