"""The history page (``audit history PATH --html OUT``): one small SVG trend per finding.

Self-contained (inline SVG and CSS, no script, no external resource), like the HTML report.
Each finding gets two panels over its runs: -log10 p (the dashed line is the level alpha) and
its effect (the metric inside the subgroup, with the reference as a grey line); a significant
run is a filled red dot, a non-significant one an open dot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from fairscan.report.text import P_TEXT_FLOOR

WIDTH, HEIGHT, PAD = 300, 90, 24
P_FLOOR = P_TEXT_FLOOR  # the plot floors -log10 p where the text does


def _x(i: int, n: int) -> float:
    return PAD + (WIDTH - 2 * PAD) * (i / (n - 1) if n > 1 else 0.5)


def _panel(
    values: list[float | None],
    significant: list[bool | None],
    title: str,
    line: float | None = None,
    reference: list[float | None] | None = None,
) -> str:
    shown = [v for v in values if v is not None] + [v for v in reference or [] if v is not None]
    if line is not None:
        shown.append(line)
    low, high = (min(shown), max(shown)) if shown else (0.0, 1.0)
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5

    def y(v: float) -> float:
        return HEIGHT - PAD / 2 - (HEIGHT - PAD) * (v - low) / (high - low)

    n = len(values)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<text x="4" y="12" font-size="10">{escape(title)}</text>',
    ]
    if line is not None:
        parts.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(line):.1f}" y2="{y(line):.1f}" '
            'stroke="#888" stroke-dasharray="4 3"/>'
        )
    for series, colour in ((reference, "#bbb"), (values, "#1f5fa8")):
        if series is None:
            continue
        pts = [f"{_x(i, n):.1f},{y(v):.1f}" for i, v in enumerate(series) if v is not None]
        if len(pts) > 1:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(pts)}"/>'
            )
    for i, (v, sig) in enumerate(zip(values, significant, strict=True)):
        if v is None:
            continue
        fill = "#c0392b" if sig else "white"
        parts.append(
            f'<circle class="{"significant" if sig else "not-significant"}" cx="{_x(i, n):.1f}" '
            f'cy="{y(v):.1f}" r="3.5" fill="{fill}" stroke="#c0392b"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def history_html(trends: Sequence[Any], alpha: float = 0.05) -> str:
    """The page of every finding's trend (``fairscan.run.history.Trend`` objects)."""
    blocks = []
    for t in trends:
        sig = [p.significant for p in t.points]
        logp = [
            None if p.p_value is None else -math.log10(max(p.p_value, P_FLOOR)) for p in t.points
        ]
        runs = ", ".join(
            escape(p.utc_time[:19]) + (f" ({escape(p.baseline_label)})" if p.baseline_label else "")
            for p in t.points
        )
        blocks.append(
            '<section class="finding">'
            f"<h2>{escape(t.name)} · {escape(t.scan_id)}: {escape(t.label)}</h2>"
            + _panel(logp, sig, "-log10 p (dashed: alpha)", line=-math.log10(alpha))
            + _panel(
                [p.inside for p in t.points],
                sig,
                f"{t.metric or 'effect'} inside (grey: reference)",
                reference=[p.reference for p in t.points],
            )
            + f'<p class="runs">{len(t.points)} run(s): {runs}</p></section>'
        )
    body = "".join(blocks) or "<p>No finding in the history.</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>fairscan audit history</title><style>"
        "body{font-family:sans-serif;margin:2em}section{margin-bottom:1.5em}"
        "h2{font-size:1em}svg{margin-right:1em;border:1px solid #eee}.runs{font-size:.8em}"
        "</style></head><body><h1>fairscan audit history</h1>"
        "<p>Per finding: its p-value (as -log10 p; above the dashed line = significant at "
        f"alpha {alpha:g}) and its effect over the runs; red dots: significant runs.</p>"
        f"{body}</body></html>\n"
    )


__all__ = ["history_html"]
