"""Issue 28, the notebook display: the report's ``_repr_html_`` is a card with the overview
chart and the top findings with full labels, styled inline so that it looks the same in a bare
browser, under JupyterLab's table rules (every cell right-aligned, no borders) and under a dark
theme; ``report.findings`` has ``subgroup`` as a struct and shows its text in full."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from report_builders import finding, null, report, scan
from test_report_html import chromium  # noqa: F401  (fixture)
from test_report_print import PAGE

from fairscan.report.view import ReportView

LONG = "occupation = Machine-op-inspct and native_country = United-States and race = White"

# JupyterLab's rules for output tables (@jupyterlab/rendermime's base.css: every cell
# right-aligned, no borders, fixed centred tables, striped rows), under a dark theme
NOTEBOOK_CSS = (
    ".jp-RenderedHTMLCommon table{border:none;table-layout:fixed;margin-left:auto;"
    "margin-right:auto;color:#eee}"
    ":not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td,"
    ":not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon th,"
    ":not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon tr{text-align:right}"
    ".jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon tr"
    "{vertical-align:middle;padding:0.5em;border:none}"
    ".jp-RenderedHTMLCommon tbody tr:nth-child(odd){background:#333}"
    "body{background:#111;color:#eee;font-family:serif}"
)


def _view() -> ReportView:
    zero = finding(
        {"sex": ["Female"]},
        metric="rate of default = 1",
        inside=0.0,
        size=12,
        reference=0.1107,
        reference_count=7000,
        expected=None,
        p_value=0.4,
    )
    zero.effect.inside_count = 12
    long = finding(
        {
            "occupation": ["Machine-op-inspct"],
            "native_country": ["United-States"],
            "race": ["White"],
        },
        label=LONG,
        p_value=0.001,
    )
    rep = report(
        scan([long, zero], null_distribution=null(999)),
        attributes={
            "occupation": ["Machine-op-inspct", "Sales"],
            "native_country": ["United-States", "Mexico"],
            "race": ["White", "Black"],
            "sex": ["Female", "Male"],
        },
    )
    return ReportView.of(rep)


def test_display_has_the_overview_chart_full_labels_and_honest_effects():
    html = _view()._repr_html_()
    assert 'data-chart="overview"' in html
    assert f">{LONG}<" in html  # the full label, not cut
    assert "rate of default = 1: 0.0% (0 of 12) vs 11.1% (n = 7000)" in html
    assert "1 0 vs" not in html
    assert "<style" not in html and "<script" not in html and 'class="n"' not in html
    assert len(html) < 20_000


def test_every_cell_carries_its_own_alignment_and_border():
    html = _view()._repr_html_()
    cells = re.findall(r"<t([dh]) style=\"([^\"]*)\">([^<]*)<", html)
    assert cells
    for _, style, _ in cells:
        assert "border:1px solid" in style and "color:#1d2330" in style
        assert "text-align:left" in style or "text-align:right" in style
    aligned = {text: style for _, style, text in cells}
    assert "text-align:left" in aligned[LONG]
    assert "text-align:right" in aligned["349"]  # a size


def test_findings_table_has_subgroup_as_a_struct_and_full_text():
    pytest.importorskip("polars")
    table = _view().findings
    assert str(table.schema["subgroup"]).startswith("Struct")
    row = table.row(0, named=True)
    assert row["subgroup"] == {
        "occupation": ["Machine-op-inspct"],
        "native_country": ["United-States"],
        "race": ["White"],
        "sex": None,
    }
    assert LONG in table._repr_html_() and LONG in str(table)
    # still a polars DataFrame for every operation
    import polars as pl

    assert isinstance(table.head(1), pl.DataFrame)


@pytest.mark.slow
def test_display_looks_the_same_in_a_bare_browser_and_under_notebook_css(
    chromium,  # noqa: F811
    tmp_path: Path,
):
    body = _view()._repr_html_()
    pages = {
        "bare": f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>",
        "notebook": (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{NOTEBOOK_CSS}</style>"
            f"</head><body><div class='jp-RenderedHTMLCommon'>{body}</div></body></html>"
        ),
    }
    probe = """(() => {
      const cell = [...document.querySelectorAll('td')].find(td => td.textContent.startsWith('occupation'));
      const size = [...document.querySelectorAll('td')].find(td => td.textContent === '349');
      const card = document.querySelector('.fairscan-report');
      const s = getComputedStyle;
      return {label: s(cell).textAlign, size: s(size).textAlign, border: s(cell).borderTopWidth,
              color: s(cell).color, card: s(card).backgroundColor,
              svg: document.querySelectorAll('svg circle').length};
    })()"""
    seen = {}
    with PAGE.Browser(chromium, tmp_path / "profile") as browser:
        for name, text in pages.items():
            page = tmp_path / f"{name}.html"
            page.write_text(text, encoding="utf-8")
            browser.open(page, width=1000)
            seen[name] = browser.evaluate(probe)
    bare = seen["bare"]
    assert bare == {
        "label": "left",
        "size": "right",
        "border": "1px",
        "color": "rgb(29, 35, 48)",
        "card": "rgb(255, 255, 255)",
        "svg": 4,
    }
    # under JupyterLab's rules and a dark theme: the same alignment, borders and colours
    assert seen["notebook"] == bare
