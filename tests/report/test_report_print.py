"""Issue 28: the HTML report printed to PDF (what reviewers file). Under print media, at the
printable width of A4 and Letter, no element of the demo report (or of a report with every
chart type) runs off the page; a finding and its charts are kept together; nothing has a grey
fill; and Chromium's own print (Page.printToPDF) gives A4 pages.

Chromium is driven over the DevTools protocol on a pipe (scripts/chromium_page.py); the
browser fixture installs or skips as the other browser tests do (test_report_html.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from test_report_html import (  # noqa: F401  (fixtures)
    HOOKS,
    _flag_scan,
    _mdss_scan,
    _report,
    _subroc_scan,
    chromium,
    sample_html,
)

from fairscan.report.html import render_html

ROOT = Path(__file__).resolve().parents[2]
MM_PER_INCH = 25.4
PAGE_MARGIN_MM = 12  # the report's @page margin


def _chromium_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "chromium_page", ROOT / "scripts" / "chromium_page.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chromium_page"] = module
    spec.loader.exec_module(module)
    return module


PAGE = _chromium_page()


def printable_width(paper: str) -> int:
    """CSS pixels between the @page margins of ``paper``."""
    inches = PAGE.PAPER[paper][0] - 2 * PAGE_MARGIN_MM / MM_PER_INCH
    return int(inches * PAGE.CSS_PX_PER_INCH)


# background colours of every element: a grey fill has equal-ish channels and is not white
FILLS_JS = """(() => {
  const out = [];
  for (const el of document.querySelectorAll('*')) {
    const m = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g);
    if (!m) continue;
    const [r, g, b, a] = [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1];
    if (a === 0) continue;
    const grey = Math.max(r, g, b) - Math.min(r, g, b) < 16 && Math.min(r, g, b) < 250;
    if (grey) out.push(`${el.tagName.toLowerCase()}.${el.getAttribute('class') || ''} rgb(${r},${g},${b})`);
  }
  return out;
})()"""

BREAKS_JS = """(() => [...document.querySelectorAll('.finding, .charts, figure')].map(
  el => getComputedStyle(el).breakInside))()"""


@pytest.fixture(scope="module")
def browser(chromium, tmp_path_factory):  # noqa: F811
    with PAGE.Browser(chromium, tmp_path_factory.mktemp("profile")) as b:
        yield b


@pytest.fixture(scope="module")
def contract_html(tmp_path_factory) -> Path:
    """A report with every chart type (bars, null histogram, forest plot, ROC) and long labels."""
    page = tmp_path_factory.mktemp("print") / "contract.html"
    page.write_text(
        render_html(_report(_mdss_scan(), _flag_scan(), _subroc_scan()), HOOKS), encoding="utf-8"
    )
    return page


def _overflowing(browser, page: Path, paper: str) -> dict:
    browser.open(page, width=printable_width(paper), height=1000, media="print")
    result = browser.evaluate(PAGE.OVERFLOW_JS)
    assert result["width"] == printable_width(paper)
    return result


@pytest.mark.slow
@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_demo_report_fits_the_printed_page(browser, sample_html, paper):  # noqa: F811
    result = _overflowing(browser, sample_html, paper)
    assert result["overflowing"] == [], result["overflowing"][:10]


@pytest.mark.parametrize("paper", ["a4", "letter"])
def test_every_chart_type_fits_the_printed_page(browser, contract_html, paper):
    result = _overflowing(browser, contract_html, paper)
    assert result["overflowing"] == [], result["overflowing"][:10]


def test_the_overflow_check_sees_a_wide_table(browser, tmp_path):
    """Control: a table wider than the page is reported (the checks above can fail)."""
    page = tmp_path / "wide.html"
    cells = "".join(f"<td>{'x' * 40}{i}</td>" for i in range(12))
    page.write_text(f"<!DOCTYPE html><table><tr>{cells}</tr></table>", encoding="utf-8")
    result = _overflowing(browser, page, "a4")
    assert any(line.startswith("table") for line in result["overflowing"]), result


def test_print_keeps_findings_whole_and_has_no_grey_fill(browser, sample_html):  # noqa: F811
    browser.open(sample_html, width=printable_width("a4"), media="print")
    breaks = browser.evaluate(BREAKS_JS)
    assert breaks and set(breaks) == {"avoid"}, breaks
    assert browser.evaluate(FILLS_JS) == []
    # control: on screen the page has its grey background and chart fills
    browser.open(sample_html, width=1100, media="")
    assert browser.evaluate(FILLS_JS) != []
    assert set(browser.evaluate(BREAKS_JS)) == {"auto"}


def test_demo_report_prints_to_a4_pdf(browser, sample_html, tmp_path):  # noqa: F811
    browser.open(sample_html, media="print")
    data = browser.pdf(tmp_path / "report.pdf", "a4")
    assert data.startswith(b"%PDF-")
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
    assert boxes, "no page in the PDF"
    for width, height in boxes:  # A4 = 595.3 x 841.9 points
        assert abs(float(width) - 595.3) < 2 and abs(float(height) - 841.9) < 2
    assert len(boxes) >= 2  # the demo report runs over several pages
