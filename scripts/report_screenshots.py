"""Screenshots of the demo report (screen) and of its notebook display in a bare browser page,
for the docs (``docs/images/``) and reviews.

    python scripts/report_screenshots.py [--out docs/images]

Runs ``audits/sample.audit.yaml`` (the demo) with its own settings into a temporary folder,
then drives headless Chromium through scripts/chromium_page.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _chromium_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "chromium_page", ROOT / "scripts" / "chromium_page.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chromium_page"] = module
    spec.loader.exec_module(module)
    return module


def demo_report(folder: Path) -> Path:
    """The demo audit's JSON and HTML reports in ``folder``; the JSON path."""
    from fairscan.api import RunOptions, run_audit

    # the repository's layout (audits/, sample_data/), so the report names the data as
    # `audit run audits/sample.audit.yaml` does
    (folder / "audits").mkdir()
    (folder / "sample_data").mkdir()
    shutil.copyfile(ROOT / "sample_data" / "credit.csv", folder / "sample_data" / "credit.csv")
    text = (ROOT / "audits" / "sample.audit.yaml").read_text(encoding="utf-8")
    text = re.sub(r"formats: \[[^]]*\]", "formats: [json, html]", text)
    spec = folder / "audits" / "sample.audit.yaml"
    spec.write_text(text, encoding="utf-8")
    run_audit(spec, RunOptions(out_dir=folder))
    return folder / "sample-credit.json"


def display_page(report_json: Path, page: Path) -> Path:
    """The notebook display (``_repr_html_``) alone in a bare HTML page: no notebook CSS."""
    import fairscan

    body = fairscan.load_report(report_json)._repr_html_()
    page.write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>display</title>'
        f"</head><body>{body}</body></html>",
        encoding="utf-8",
    )
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    chromium_page = _chromium_page()
    chromium = chromium_page.find_chromium()
    if chromium is None:
        print("chromium is not on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        report_json = demo_report(folder)
        html = report_json.with_suffix(".html")
        display = display_page(report_json, folder / "display.html")
        with chromium_page.Browser(chromium, folder / "profile") as browser:
            browser.open(html, width=1100)
            browser.screenshot(args.out / "report.png", height=1500)
            browser.open(display, width=1000, height=300)
            browser.screenshot(args.out / "notebook-display.png")
    for name in ("report.png", "notebook-display.png"):
        print(args.out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
