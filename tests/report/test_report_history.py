"""The history page in headless Chromium (like the HTML report's browser test)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from test_report_html import _has_colour, chromium, decode_png, load_in_chromium

from fairscan.report.history_html import history_html

__all__ = ["chromium"]  # the session fixture, shared with the HTML report's tests


@dataclass(frozen=True)
class _Point:
    utc_time: str
    p_value: float | None
    significant: bool | None
    inside: float | None
    reference: float | None
    baseline_label: str | None = None


@dataclass(frozen=True)
class _Trend:
    name: str
    scan_id: str
    label: str
    metric: str | None
    points: tuple[_Point, ...]


TRENDS = [
    _Trend(
        "credit",
        "fpr",
        "sex = male & <b>",
        "false positive rate",
        (
            _Point("2026-01-01T00:00:00Z", 1e-8, True, 0.26, 0.15),
            _Point("2026-02-01T00:00:00Z", 1e-6, True, 0.25, 0.15, "persists"),
            _Point("2026-03-01T00:00:00Z", 0.7, False, 0.15, 0.15, "resolved"),
        ),
    )
]


def test_history_page_escapes_and_marks_significance():
    html = history_html(TRENDS)
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert html.count('class="significant"') == 4  # two runs, two panels
    assert html.count('class="not-significant"') == 2


def test_history_page_renders_in_headless_chromium(chromium, tmp_path):
    page = tmp_path / "history.html"
    page.write_text(history_html(TRENDS), encoding="utf-8")
    png = tmp_path / "history.png"
    console = load_in_chromium(chromium, page, png, tmp_path / "profile", "800,600")
    assert console == [], "console messages:\n" + "\n".join(console)
    _, _, pixels = decode_png(png.read_bytes())
    assert pixels.astype(np.float64).mean(axis=2).std() > 5, "screenshot is blank"
    assert _has_colour(pixels, "#c0392b") > 20  # the significant runs' red dots painted
    assert _has_colour(pixels, "#1f5fa8") > 20  # the trend lines painted
