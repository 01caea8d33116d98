"""Self-contained HTML report: inline CSS and inline SVG charts drawn here, no script, no
external resource (it opens offline). Every data string goes through :func:`escape`.

The page reads only the result contract: per finding, its common table, a bar chart of its
effect (inside / expected / reference, with row counts) and, when the scan ran a randomization
test, the null distribution of the maximum statistic with the observed value marked. What a scan
type shows beyond that comes from its render hooks, which build their markup with the public
primitives below (:func:`escape`, :func:`html_table`, :func:`figure`, :func:`null_histogram`,
:func:`forest_plot`, :func:`roc_chart`, :func:`bar_chart`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

from fairscan.data.labels import subgroup_label
from fairscan.report.hooks import NO_HOOKS, HookMap, RenderHooks
from fairscan.report.markdown import (
    COMPACT_HEAD,
    CONSTRAINED_HEAD,
    FULL_FINDINGS,
    MAX_FINDINGS,
    OVERVIEW_PER_SCAN,
    SUMMARY_HEAD,
    compact_row,
    constrained_row,
    expected_shown,
    finding_columns,
    null_sentence,
    scan_labels,
    summary_rows,
    verdict_line,
)
from fairscan.report.models import (
    AuditReport,
    Effect,
    Finding,
    MonitorSummary,
    NullDistribution,
    ScanResult,
)
from fairscan.report.monitor_view import SUBGROUP_HEAD, alarm_text, subgroup_row, summary_sentence
from fairscan.report.overview import (
    audited_items,
    constrained_attributes,
    containers,
    effect_size,
    model_text,
    nested_note,
)
from fairscan.report.text import (
    findings_tally,
    fmt_number,
    fmt_value,
    is_rate,
    percent,
    rate_with_count,
)
from fairscan.report.verdict import status_text

FOREST_MAX_GROUPS = 60  # hits first, then the other groups up to this many rows

INSIDE = "#c0392b"
OUTSIDE = "#2e6db4"
EXPECTED = "#8c8c8c"
NULL_BARS = "#b8c4d6"

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
margin:0;background:#f5f6f8;color:#1d2330;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:1.6em;margin:0 0 .3em}h2{font-size:1.25em;margin:1.6em 0 .4em}
h3{font-size:1.02em;margin:1.2em 0 .3em}
section.scan,section.box{background:#fff;border:1px solid #dde1e8;border-radius:8px;
padding:12px 18px;margin:16px 0}
.verdict{display:inline-block;padding:4px 10px;border-radius:6px;font-weight:600}
.v-clean{background:#dff3e4;color:#17622e}.v-findings{background:#fde2e1;color:#8d1d16}
.v-error,.v-untested{background:#fff1cc;color:#7a5300}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:.82em;
background:#e8ebf0;margin-left:6px}
.b-significant{background:#fde2e1;color:#8d1d16}.b-error{background:#fff1cc;color:#7a5300}
table{border-collapse:collapse;font-size:.88em;margin:.5em 0}
th,td{border:1px solid #dde1e8;padding:3px 8px;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.finding{border-top:1px solid #eceff3;padding-top:6px;margin-top:10px}
.charts{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
.chart{background:#fbfcfd;border:1px solid #eceff3;border-radius:6px;padding:6px}
.chart figcaption{font-size:.8em;color:#555;max-width:400px}
figure{margin:0}svg text{font-family:inherit}svg.plot{max-width:100%;height:auto}
section>h2:first-child{margin-top:.2em}
.warn{background:#fff8e1;border-left:4px solid #e0a800;padding:4px 10px;margin:6px 0}
pre{background:#f0f2f5;padding:8px;overflow:auto}
.muted{color:#666;font-size:.85em}
.tw{overflow-x:auto;max-width:100%}
.nested{border-left:4px solid #2e6db4;padding:2px 10px;margin:6px 0;font-size:.9em}
.model{font-size:.95em}
.intervals{font-size:.85em;color:#444}
@page{size:auto;margin:12mm}
@media print{
body{background:#fff;font-size:10pt;line-height:1.35}
main{max-width:none;padding:0}
section.scan,section.box{background:none;border:none;border-radius:0;padding:0;margin:0 0 12px}
.chart,pre,.warn,.badge{background:none}
.chart{border:none;padding:0}
.badge{border:1px solid #999}
pre{white-space:pre-wrap;border:1px solid #ccc}
.tw{overflow:visible}
table{width:100%;font-size:8pt}
th,td{padding:2px 4px;overflow-wrap:anywhere}
td.n,th.n{overflow-wrap:normal}
.charts{display:block}
figure.chart{display:block;margin:4px 0}
svg.plot{max-width:100%;height:auto}
.finding,.charts,figure,tr,.overview{break-inside:avoid}
h1,h2,h3{break-after:avoid}
}
"""


# --- primitives (public: scan render hooks build their markup with them) --------------------


def escape(x: object) -> str:
    """Any value as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape(str(x), quote=True)


def _n(x: float) -> str:
    """Coordinates: short, locale-free."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, label: str, anchor: str = "start", **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{escape(v)}"' for k, v in attrs.items())
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="11"{extra}>'
        f"{escape(label)}</text>"
    )


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = start
    while t <= hi + 1e-9 * step:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _svg(width: int, height: int, body: Sequence[str], label: str) -> str:
    return (
        f'<svg class="plot" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def figure(svg: str, caption: str, kind: str, style: str = "") -> str:
    """A chart with its caption; ``kind`` goes to ``data-chart`` (bars, null, forest, roc...);
    ``style``: inline styles of the figure and its caption (``(figure, caption)`` joined by
    ``|``), for pages without the report's stylesheet."""
    figure_style, _, caption_style = style.partition("|")
    fs = f' style="{escape(figure_style)}"' if figure_style else ""
    cs = f' style="{escape(caption_style)}"' if caption_style else ""
    return (
        f'<figure class="chart" data-chart="{escape(kind)}"{fs}>{svg}'
        f"<figcaption{cs}>{escape(caption)}</figcaption></figure>"
    )


def html_table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int]) -> str:
    """A table with escaped cells; columns whose index is in ``numeric`` are right-aligned."""
    cls = [' class="n"' if i in numeric else "" for i in range(len(head))]
    out = ['<div class="tw"><table><thead><tr>']
    out += [f"<th{cls[i]}>{escape(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = "".join(
            f"<td{cls[i] if i < len(cls) else ''}>{escape(v)}</td>" for i, v in enumerate(row)
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# --- charts ----------------------------------------------------------------------------------


def bar_chart(effect: Effect, caption: str | None = None) -> str:
    """The effect's metric inside, expected inside (when it differs from the reference) and in
    the reference, with row counts; rates as percentages. Empty when none is defined."""
    rate = is_rate(effect.metric, effect.inside, effect.reference, effect.expected)

    def shown(value: float | None, count: int | None) -> str:
        if rate:
            return rate_with_count(value, count)
        return f"{fmt_value(value)}  n = {count}" if count is not None else fmt_value(value)

    rows: list[tuple[str, float | None, str, str]] = [
        ("inside", effect.inside, shown(effect.inside, effect.inside_count), INSIDE)
    ]
    if expected_shown(effect):
        rows.append(("expected inside", effect.expected, shown(effect.expected, None), EXPECTED))
    ref_name = "reference" if expected_shown(effect) or effect.expected is None else "expected"
    rows.append(
        (ref_name, effect.reference, shown(effect.reference, effect.reference_count), OUTSIDE)
    )
    values = [v for _, v, _, _ in rows if v is not None and math.isfinite(v)]
    if not values:
        return ""
    hi = max([*values, 0.0])
    lo = min([*values, 0.0])
    if hi <= lo:
        hi = lo + 1.0
    ticks = _nice_ticks(lo, hi * 1.05 if hi > 0 else hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    left, right, top, row_h = 112, 150, 10, 30
    plot_w = 440 - left - right
    width = left + plot_w + right
    height = top + row_h * len(rows) + 26

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    def tick(t: float) -> str:
        return f"{100 * t:g}%" if rate else f"{t:g}"

    body = []
    for t in ticks:
        body.append(
            f'<line x1="{_n(x(t))}" y1="{top}" x2="{_n(x(t))}" y2="{top + row_h * len(rows)}" '
            'stroke="#e3e6ea"/>'
        )
        body.append(_text(x(t), top + row_h * len(rows) + 14, tick(t), "middle", fill="#555"))
    for i, (label, value, text, color) in enumerate(rows):
        y0 = top + i * row_h
        body.append(_text(left - 6, y0 + 19, label, "end"))
        if value is None or not math.isfinite(value):
            body.append(_text(left + 4, y0 + 19, "n/a", fill="#777"))
            continue
        x0, x1 = sorted((x(0.0), x(value)))
        body.append(
            f'<rect class="bar" x="{_n(x0)}" y="{y0 + 6}" width="{_n(max(x1 - x0, 1.0))}" '
            f'height="{row_h - 10}" fill="{color}"><title>{escape(label)}: '
            f"{escape(text)}</title></rect>"
        )
        body.append(_text(x1 + 5, y0 + 19, text))
    body.append(
        f'<line x1="{_n(x(0.0))}" y1="{top}" x2="{_n(x(0.0))}" '
        f'y2="{top + row_h * len(rows)}" stroke="#333"/>'
    )
    svg = _svg(width, height, body, f"bar chart: {effect.metric} inside vs the reference")
    same = (
        ""
        if expected_shown(effect) or effect.expected is None
        else " The reference here is what is expected inside the subgroup itself."
    )
    text = caption or (
        f"{effect.metric}: inside vs the reference ({effect.reference_name}), with row "
        f"counts.{same}"
    )
    return figure(svg, text, "bars")


def null_histogram(null: NullDistribution, observed: float, caption: str | None = None) -> str:
    """Histogram of the null maxima with the observed value (and the 1 - alpha quantile)."""
    scores = [s for s in null.scores if s is not None and math.isfinite(s)]
    width, height = 420, 190
    left, right, top, bottom = 40, 14, 22, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    lo = min([*scores, observed, 0.0])
    null_hi = max([*scores, null.quantile or 0.0, 0.0])
    # an observed score far beyond every null maximum would squash the null into one bar at 0:
    # the axis then spans the null and the observed score is marked at its right edge
    off_scale = bool(scores) and observed - lo > 3.0 * max(null_hi - lo, 1e-12)
    hi = null_hi if off_scale else max(null_hi, observed)
    if hi <= lo:
        hi = lo + 1.0
    hi += (hi - lo) * 0.04
    bins = max(5, min(30, int(math.sqrt(len(scores))) + 1)) if scores else 1
    counts = [0] * bins
    step = (hi - lo) / bins
    for s in scores:
        counts[min(bins - 1, int((s - lo) / step))] += 1
    peak = max(counts) or 1

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    def y(c: float) -> float:
        return top + plot_h - c / peak * plot_h

    body = []
    for t in _nice_ticks(lo, hi):
        body.append(_text(x(t), top + plot_h + 14, f"{t:g}", "middle", fill="#555"))
    for t in _nice_ticks(0, peak, 3):
        body.append(_text(left - 4, y(t) + 4, f"{t:g}", "end", fill="#555"))
    for i, c in enumerate(counts):
        if c:
            body.append(
                f'<rect class="bar" x="{_n(x(lo + i * step) + 0.5)}" y="{_n(y(c))}" '
                f'width="{_n(max(plot_w / bins - 1, 0.5))}" height="{_n(top + plot_h - y(c))}" '
                f'fill="{NULL_BARS}"><title>{c} replicate(s)</title></rect>'
            )
    body.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#333"/>'
    )
    if null.quantile is not None:
        qx = x(null.quantile)
        body.append(
            f'<line class="quantile" x1="{_n(qx)}" y1="{top}" x2="{_n(qx)}" y2="{top + plot_h}" '
            'stroke="#555" stroke-dasharray="4 3"/>'
        )
        body.append(
            _text(qx, top - 4, f"{100 * (1 - null.alpha):g}% quantile", "middle", fill="#555")
        )
    ox = left + plot_w if off_scale else x(observed)
    body.append(
        f'<line class="observed" x1="{_n(ox)}" y1="{top - 8}" x2="{_n(ox)}" y2="{top + plot_h}" '
        f'stroke="{INSIDE}" stroke-width="2.5"'
        + (' stroke-dasharray="6 3"' if off_scale else "")
        + f"><title>observed {observed:.3f}</title></line>"
    )
    anchor = "end" if ox > left + plot_w * 0.7 else "start"
    shift = -4 if anchor == "end" else 4
    mark = f"observed {observed:.2f}" + (" (off scale) →" if off_scale else "")
    body.append(_text(ox + shift, top + 12, mark, anchor, fill=INSIDE, font_weight="600"))
    body.append(_text(left + plot_w / 2, height - 2, "maximum score per null replicate", "middle"))
    svg = _svg(width, height, body, "null distribution of the maximum score")
    beyond = (
        f" The observed {observed:.2f} lies far beyond the largest null maximum "
        f"({null_hi:.2f}): it is marked at the right edge, off the scale."
        if off_scale
        else ""
    )
    text = caption or (
        f"Null distribution of the maximum score ({null.replicates} replicates, "
        f"{null.exceed_count} at or above the observed {observed:.2f}).{beyond}"
    )
    return figure(svg, text, "null")


def _forest_row(
    row: tuple[str, float | None, float | None, float | None, bool],
    yc: float,
    left: int,
    x: Callable[[float], float],
    edges: tuple[float, float],
) -> list[str]:
    """One group of the forest plot: its name, its bounds (a missing one reaches the plot's
    edge) and its gap."""
    name, g, low, up, hit = row
    color = INSIDE if hit else OUTSIDE
    parts = [_text(left - 8, yc + 4, name, "end")]
    a = low if low is not None else edges[0]
    b = up if up is not None else edges[1]
    parts.append(
        f'<line class="interval" x1="{_n(x(a))}" y1="{_n(yc)}" x2="{_n(x(b))}" '
        f'y2="{_n(yc)}" stroke="{color}" stroke-width="2"><title>{escape(name)}: '
        f"[{escape(fmt_number(low))}, {escape(fmt_number(up))}]</title></line>"
    )
    for end, given in ((a, low), (b, up)):
        if given is not None:
            parts.append(
                f'<line x1="{_n(x(end))}" y1="{_n(yc - 5)}" x2="{_n(x(end))}" '
                f'y2="{_n(yc + 5)}" stroke="{color}" stroke-width="2"/>'
            )
    if g is not None:
        parts.append(
            f'<circle class="point" cx="{_n(x(g))}" cy="{_n(yc)}" r="4.5" fill="{color}">'
            f"<title>{escape(name)}: gap {g:+.4f}</title></circle>"
        )
    return parts


def forest_plot(
    names: Sequence[str],
    gap: Sequence[float | None],
    lower: Sequence[float | None],
    upper: Sequence[float | None],
    hits: Sequence[bool],
    tolerance: float,
    two_sided: bool,
    *,
    hit_label: str = "hit",
    metric: str | None = None,
    max_groups: int = FOREST_MAX_GROUPS,
    untested: Sequence[tuple[str, str]] = (),
) -> str:
    """Gap (point) and bounds (line) per group, with 0 and the tolerance (both signs when
    ``two_sided``) marked; hits first, in red. A missing bound reaches the plot's edge.

    ``untested`` groups ((name, reason), e.g. too small) are not plotted: they are listed
    below the plot."""
    rows = [
        (names[i], gap[i], lower[i], upper[i], bool(hits[i]))
        for i in range(len(names))
        if gap[i] is not None or lower[i] is not None or upper[i] is not None
    ]
    ordered = [r for r in rows if r[4]] + [r for r in rows if not r[4]]
    shown = ordered[:max_groups]
    values = [0.0, tolerance] + ([-tolerance] if two_sided else [])
    for _, g, lo_, up_, _ in shown:
        values += [v for v in (g, lo_, up_) if v is not None and math.isfinite(v)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.06 or 0.05
    lo, hi = lo - pad, hi + pad
    label_w = max(120, min(440, int(6.4 * max([len(r[0]) for r in shown] + [10]))))
    left, right, top, row_h = label_w + 10, 24, 38, 20
    plot_w = max(360, 1000 - left - right)
    width = left + plot_w + right
    height = top + row_h * max(len(shown), 1) + 30

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    bottom = top + row_h * max(len(shown), 1)
    body = []
    for t in _nice_ticks(lo, hi, 8):
        body.append(
            f'<line x1="{_n(x(t))}" y1="{top}" x2="{_n(x(t))}" y2="{bottom}" stroke="#eceff3"/>'
        )
        body.append(_text(x(t), bottom + 14, f"{t:g}", "middle", fill="#555"))
    body.append(
        f'<line x1="{_n(x(0))}" y1="{top - 6}" x2="{_n(x(0))}" y2="{bottom}" stroke="#333"/>'
    )
    for tol in [tolerance] + ([-tolerance] if two_sided else []):
        if tol != 0:
            body.append(
                f'<line x1="{_n(x(tol))}" y1="{top - 6}" x2="{_n(x(tol))}" y2="{bottom}" '
                'stroke="#e0a800" stroke-dasharray="5 3"/>'
            )
    body.append(_text(x(0), top - 10, "gap 0", "middle", fill="#333"))
    if tolerance != 0:
        body.append(
            _text(x(tolerance), top - 24, f"tolerance {tolerance:+g}", "middle", fill="#8a6d00")
        )
    for i, row in enumerate(shown):
        body += _forest_row(row, top + i * row_h + row_h / 2, left, x, (lo, hi))
    svg = _svg(width, height, body, f"forest plot of the gap bounds per group ({hit_label} in red)")
    more = (
        f" Showing {len(shown)} of {len(rows)} groups ({hit_label} first)."
        if len(shown) < len(rows)
        else ""
    )
    of = f" of {metric}" if metric else ""
    caption = (
        f"Gap{of} per group (point) with its bounds (line; open ends reach the edge); "
        f"red = {hit_label}, dashed = tolerance.{more}"
    )
    listed = ""
    if untested:
        items = "; ".join(f"{escape(name)} ({escape(reason)})" for name, reason in untested)
        listed = (
            f'<p class="muted untested">Not tested, so not plotted ({len(untested)}): {items}.</p>'
        )
    return figure(svg, caption, "forest") + listed


def roc_chart(
    overall: tuple[Sequence[float], Sequence[float]],
    subgroup: tuple[Sequence[float], Sequence[float]] | None,
    label: str,
) -> str:
    """ROC curve (fpr, tpr points) of a subgroup against the whole set."""
    size, pad_l, pad_b, pad_t, pad_r = 220, 38, 30, 10, 10
    width, height = pad_l + size + pad_r + 120, pad_t + size + pad_b

    def pt(fx: float, ty: float) -> str:
        return f"{_n(pad_l + fx * size)},{_n(pad_t + (1 - ty) * size)}"

    body = [
        f'<rect x="{pad_l}" y="{pad_t}" width="{size}" height="{size}" fill="none" stroke="#999"/>',
        f'<line x1="{pad_l}" y1="{pad_t + size}" x2="{pad_l + size}" y2="{pad_t}" '
        'stroke="#ccc" stroke-dasharray="4 3"/>',
    ]
    for t in (0, 0.5, 1):
        body.append(_text(pad_l + t * size, pad_t + size + 13, f"{t:g}", "middle", fill="#555"))
        body.append(_text(pad_l - 4, pad_t + (1 - t) * size + 4, f"{t:g}", "end", fill="#555"))
    body.append(_text(pad_l + size / 2, height - 3, "false positive rate", "middle"))
    body.append(
        f'<text x="10" y="{_n(pad_t + size / 2)}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 10 {_n(pad_t + size / 2)})">true positive rate</text>'
    )
    curves = [(overall, OUTSIDE, "all (search set)")]
    if subgroup is not None:
        curves.append((subgroup, INSIDE, "subgroup"))
    for i, ((fpr, tpr), color, name) in enumerate(curves):
        points = " ".join(pt(f, t) for f, t in zip(fpr, tpr, strict=False))
        body.append(
            f'<polyline class="roc" points="{points}" fill="none" stroke="{color}" '
            f'stroke-width="2"><title>{escape(name)}</title></polyline>'
        )
        ly = pad_t + 14 + 18 * i
        body.append(
            f'<line x1="{pad_l + size + 10}" y1="{ly - 4}" x2="{pad_l + size + 28}" '
            f'y2="{ly - 4}" stroke="{color}" stroke-width="3"/>'
        )
        body.append(_text(pad_l + size + 32, ly, name))
    svg = _svg(width, height, body, f"ROC curves: {label}")
    return figure(svg, f"ROC curve of {label} vs the whole search set.", "roc")


def _short(label: str, limit: int = 52) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def overview_chart(
    rows: Sequence[tuple[str, Finding]], caption: str | None = None, style: str = ""
) -> str:
    """Each finding's rate inside (red dot) against its reference (blue dot) on one 0-100%
    axis, the difference as the line between them; significant findings in bold. Findings
    whose metric is not a rate are left out (the overview table lists them). Empty when none
    is left."""
    shown = [
        (name, f)
        for name, f in rows
        if f.effect.inside is not None
        and f.effect.reference is not None
        and is_rate(f.effect.metric, f.effect.inside, f.effect.reference)
    ]
    if not shown:
        return ""
    hi_value = max(max(f.effect.inside or 0.0, f.effect.reference or 0.0) for _, f in shown)
    ticks = _nice_ticks(0.0, max(hi_value * 1.05, 0.01), 5)
    hi = max(ticks[-1], hi_value)
    label_w = max(140, min(370, int(7.0 * max(len(_short(n)) for n, _ in shown))))
    left, right, top, row_h = label_w + 12, 150, 24, 26
    plot_w = max(220, 720 - left - right)
    width = left + plot_w + right
    bottom = top + row_h * len(shown)
    height = bottom + 34

    def x(v: float) -> float:
        return left + v / hi * plot_w

    body = []
    for t in ticks:
        body.append(
            f'<line x1="{_n(x(t))}" y1="{top - 4}" x2="{_n(x(t))}" y2="{bottom}" stroke="#e3e6ea"/>'
        )
        body.append(_text(x(t), bottom + 14, f"{100 * t:g}%", "middle", fill="#555"))
    body.append(_text(left, top - 10, "● inside", fill=INSIDE, font_weight="600"))
    body.append(_text(left + 70, top - 10, "● reference", fill=OUTSIDE, font_weight="600"))
    for i, (name, f) in enumerate(shown):
        e = f.effect
        assert e.inside is not None and e.reference is not None
        yc = top + i * row_h + row_h / 2
        weight = {"font_weight": "600"} if f.significant else {}
        body.append(_text(left - 8, yc + 4, _short(name), "end", **weight))
        body.append(
            f'<line class="difference" x1="{_n(x(e.reference))}" y1="{_n(yc)}" '
            f'x2="{_n(x(e.inside))}" y2="{_n(yc)}" stroke="#999" stroke-width="3">'
            f"<title>{escape(name)}: {escape(effect_size(f))}</title></line>"
        )
        for value, count, color, what in (
            (e.reference, e.reference_count, OUTSIDE, "reference"),
            (e.inside, e.inside_count, INSIDE, "inside"),
        ):
            body.append(
                f'<circle class="{what}" cx="{_n(x(value))}" cy="{_n(yc)}" r="5" '
                f'fill="{color}"><title>{escape(name)} {what}: '
                f"{escape(rate_with_count(value, count))}</title></circle>"
            )
        body.append(
            _text(left + plot_w + 10, yc + 4, f"{effect_size(f)}, {percent(e.inside, 1)}", **weight)
        )
    body.append(_text(left + plot_w / 2, height - 4, "rate (inside vs reference)", "middle"))
    svg = _svg(width, height, body, "overview: each top finding's rate inside vs its reference")
    text = caption or (
        "The top findings of each scan: the rate inside the group (red) against its reference "
        "(blue), significant findings in bold, the difference in percentage points and the "
        "rate inside on the right; [scan id] when several scans report findings."
    )
    return figure(svg, text, "overview", style)


def overview_rows(report: AuditReport) -> list[tuple[str, Finding]]:
    rows = []
    several = sum(1 for scan in report.scans if scan.findings) > 1
    for scan in report.scans:
        labels = scan_labels(report, scan)
        for i, finding in enumerate(scan.findings[:OVERVIEW_PER_SCAN]):
            rows.append((f"{labels[i]} [{scan.id}]" if several else labels[i], finding))
    return rows


def _overview_html(report: AuditReport) -> str:
    """Before the scans: the effects of every scan's top findings and the attributes they
    constrain."""
    rows = overview_rows(report)
    if not rows:
        return ""
    parts = ['<section class="box overview" id="overview"><h2>Overview</h2>']
    chart = overview_chart(rows)
    if chart:
        parts.append(f'<div class="charts">{chart}</div>')
    attrs = constrained_attributes(report, OVERVIEW_PER_SCAN)
    if attrs:
        parts.append("<p>Attributes the top findings constrain:</p>")
        parts.append(html_table(CONSTRAINED_HEAD, [constrained_row(a) for a in attrs], {2}))
    parts.append("</section>")
    return "".join(parts)


def _audited_html(report: AuditReport) -> str:
    rows = [[item, value] for item, value in audited_items(report)]
    return (
        '<section class="box" id="audited"><h2>What was audited</h2>'
        + html_table(["item", "value"], rows, set())
        + "</section>"
    )


# --- sections --------------------------------------------------------------------------------


def _finding_html(
    scan: ScanResult,
    index: int,
    finding: Finding,
    hooks: RenderHooks | None,
    labels: Sequence[str],
) -> str:
    label = labels[index - 1]
    head, row, numeric = finding_columns(finding, label)
    parts = [
        f'<div class="finding" id="{escape(scan.id)}-finding-{index}">',
        f"<h3>Finding {index}: {escape(label)}</h3>",
        f"<p>{escape(finding.description)}</p>",
        html_table(head, [row], numeric),
    ]
    note = nested_note(scan.findings, index - 1, labels)
    if note is not None:
        parts.append(f'<p class="nested">{escape(note)}</p>')
    charts = [bar_chart(finding.effect)]
    null = scan.null_distribution
    observed = finding.statistic.value
    if null is not None and null.scores and observed is not None and math.isfinite(observed):
        charts.append(null_histogram(null, observed))
    charts = [c for c in charts if c]
    if charts:
        parts += ['<div class="charts">', *charts, "</div>"]
    sentence = null_sentence(scan, finding)
    if sentence is not None:
        parts.append(f'<p class="muted">{escape(sentence)}</p>')
    if hooks is not None and hooks.finding_html is not None:
        parts.append(hooks.finding_html(scan, finding))
    parts.append("</div>")
    return "".join(parts)


def _further_html(scan: ScanResult, labels: Sequence[str]) -> str:
    """The findings after the first :data:`FULL_FINDINGS`, collapsed into one table."""
    shown = scan.findings[FULL_FINDINGS:MAX_FINDINGS]
    if not shown:
        return ""
    nested = containers(scan.findings)
    numeric = {0, 2, 3, 4, 5, 6, 7}
    cls = [' class="n"' if i in numeric else "" for i in range(len(COMPACT_HEAD))]
    out = [
        f'<div class="further"><h3>Further findings ({len(shown)})</h3>'
        '<p class="muted">One row each, with its sentence under the label.</p>'
        '<div class="tw"><table><thead><tr>',
        *(f"<th{cls[i]}>{escape(h)}</th>" for i, h in enumerate(COMPACT_HEAD)),
        "</tr></thead><tbody>",
    ]
    for i, finding in enumerate(shown, start=FULL_FINDINGS):
        label = labels[i] + (f" (inside #{nested[i] + 1})" if i in nested else "")
        row = compact_row(i + 1, finding, label)
        cells = []
        for j, value in enumerate(row):
            text = escape(value)
            if j == 1:  # the label, then the finding's sentence
                text = f'<strong>{text}</strong><br><span class="muted">{escape(finding.description)}</span>'
            cells.append(f"<td{cls[j]}>{text}</td>")
        out.append(f'<tr id="{escape(scan.id)}-finding-{i + 1}">{"".join(cells)}</tr>')
    out.append("</tbody></table></div></div>")
    return "".join(out)


def _scan_html(
    scan: ScanResult, hooks: RenderHooks | None, labels: Sequence[str] | None = None
) -> str:
    labels = list(labels) if labels is not None else [f.label for f in scan.findings]
    status_cls = {"significant": "b-significant", "error": "b-error"}.get(scan.status, "")
    parts = [
        f'<section class="scan" id="scan-{escape(scan.id)}">',
        f"<h2>{escape(scan.id)} <span class='badge'>{escape(scan.type)}</span>"
        f'<span class="badge {status_cls}">{escape(status_text(scan.status))}'
        "</span></h2>",
    ]
    if scan.error:
        parts.append(f"<pre>{escape(scan.error)}</pre></section>")
        return "".join(parts)
    if scan.population is not None:
        pop = scan.population
        # a rate (binary outcomes); scans of means (continuous, counts) leave it None
        rate = (
            ""
            if pop.observed_rate is None
            else f"; {escape(pop.observed_label)}: "
            f"{escape(rate_with_count(pop.observed_rate, pop.size))}"
        )
        parts.append(
            f"<p>Scanned population: {escape(pop.description)}, {pop.size} rows{rate}.</p>"
        )
    if hooks is not None and hooks.lead_html is not None:
        parts.append(hooks.lead_html(scan))
    if scan.findings:
        parts.append(f"<p>{escape(findings_tally(scan))}.</p>")
    for i, finding in enumerate(scan.findings[:FULL_FINDINGS], start=1):
        parts.append(_finding_html(scan, i, finding, hooks, labels))
    parts.append(_further_html(scan, labels))
    if len(scan.findings) > MAX_FINDINGS:
        parts.append(
            f'<p class="muted">{len(scan.findings) - MAX_FINDINGS} more findings in the JSON '
            "report.</p>"
        )
    if hooks is not None and hooks.html is not None:
        parts.append(hooks.html(scan))
    for warning in scan.warnings:
        parts.append(f'<div class="warn">Warning: {escape(warning)}</div>')
    t = scan.timing
    parts.append(
        f'<p class="muted">search {t.search_seconds:.2f} s, significance '
        f"{t.significance_seconds:.2f} s</p></section>"
    )
    return "".join(parts)


def _baseline_html(report: AuditReport) -> str:
    base = report.baseline
    if base is None:
        return ""
    rows = []
    for e in base.entries:
        side = e.after or e.before
        label = "" if side is None else (side.label or subgroup_label(side.subgroup))
        rows.append([e.scan_id, e.label, e.match, label])
    return (
        '<section class="box"><h2>Comparison with the baseline</h2>'
        f"<p>Baseline {escape(base.baseline_name)} ({escape(base.baseline_utc_time)}); "
        f"{base.new_significant} new significant finding(s).</p>"
        + html_table(["scan", "label", "match", "finding"], rows, set())
        + "</section>"
    )


def _monitor_html(monitor: MonitorSummary) -> str:
    """The monitor over the series of audits: the alarms, then each monitored subgroup."""
    alarms = "".join(f'<li class="alarm">{escape(alarm_text(a))}</li>' for a in monitor.alarms)
    rows = [subgroup_row(s) for s in monitor.subgroups]
    return (
        '<section class="box monitor"><h2>Monitoring over the runs</h2>'
        f"<p>{escape(summary_sentence(monitor))}</p>"
        + (f"<ul>{alarms}</ul>" if alarms else "")
        + (html_table(SUBGROUP_HEAD, rows, {3, 4, 5}) if rows else "")
        + '<p class="muted">Evidence starts at 1 and grows while the data show bias; an alarm '
        "is raised when it reaches the alarm threshold. The anytime p-value (1 / the highest "
        "evidence so far) stays valid whenever the series of audits stops.</p></section>"
    )


def render_html(report: AuditReport, hooks: HookMap = NO_HOOKS) -> str:
    prov = report.provenance
    v = report.verdict
    verdict = verdict_line(report).replace("**", "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Fairness audit: {escape(report.name)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>Fairness audit: {escape(report.name)}</h1>",
        f'<p><span class="verdict v-{escape(v.status)}">{escape(verdict)}</span></p>',
    ]
    if report.description:
        parts.append(f"<p>{escape(report.description)}</p>")
    model = model_text(report)
    if model is not None:
        parts.append(f'<p class="model"><strong>Model:</strong> {escape(model)}</p>')
    parts.append(
        '<section class="box"><h2>Summary</h2>'
        + html_table(SUMMARY_HEAD, summary_rows(report), {3, 5, 6})
        + "</section>"
    )
    parts.append(_overview_html(report))
    parts.append(_audited_html(report))
    parts.append(_baseline_html(report))
    if report.monitor is not None:
        parts.append(_monitor_html(report.monitor))
    parts += [
        _scan_html(scan, hooks.get(scan.type), scan_labels(report, scan)) for scan in report.scans
    ]
    if report.data_warnings:
        parts.append('<section class="box"><h2>Data warnings</h2><ul>')
        parts += [f"<li>{escape(w)}</li>" for w in report.data_warnings]
        parts.append("</ul></section>")
    seed = prov.seed if prov.seed is not None else f"none (entropy {prov.seed_entropy})"
    if prov.seed_origin not in (None, "significance.seed"):
        seed = f"{seed} ({prov.seed_origin})"
    parts.append(
        '<section class="box"><h2>Provenance</h2>'
        + html_table(
            ["item", "value"],
            [
                ["fairscan", prov.tool_version],
                ["started (UTC)", prov.utc_time],
                ["duration", f"{prov.total_seconds:.2f} s, {prov.workers} worker(s)"],
                ["spec", f"{prov.spec_path} (sha256 {prov.spec_sha256[:16]}...)"],
                ["data", f"{prov.data_path} (sha256 {prov.data_sha256[:16]}...)"],
                ["rows", f"{prov.data_rows} ({prov.rows_after_filter} after filter)"],
                ["filter", prov.filter or "none"],
                ["seed", seed],
                # settings not written in the spec ([tool.fairscan], FAIRSCAN_*, flags)
                *(["setting", o.text()] for o in prov.overrides),
            ],
            set(),
        )
        + "</section>"
    )
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"
