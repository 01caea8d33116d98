"""Self-contained HTML report: inline CSS and inline SVG charts drawn here, no script, no
external resource (it opens offline). Every data string goes through ``html.escape``.

Charts: per MDSS finding, a bar chart of the rate inside vs outside the subgroup (with counts)
and the null distribution of the maximum score with the observed score marked; a forest plot of
the bounds per group for certify/flag; ROC curves of each reported SubROC pattern vs the whole
search set (when the report carries the curve points).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from fairscan.report.markdown import STATUS_TEXT, _verdict_line
from fairscan.report.models import (
    AuditReport,
    CertificationResult,
    Finding,
    NullDistribution,
    Population,
    ScanResult,
    SubrocResult,
)
from fairscan.report.text import describe_subgroup, fmt_number, fmt_p, percent

_f = fmt_number
_p = fmt_p

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
.v-error{background:#fff1cc;color:#7a5300}
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
"""


# --- helpers ---------------------------------------------------------------------------------


def _e(x: object) -> str:
    return escape(str(x), quote=True)


def _n(x: float) -> str:
    """Coordinates: short, locale-free."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, label: str, anchor: str = "start", **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{_e(v)}"' for k, v in attrs.items())
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="11"{extra}>'
        f"{_e(label)}</text>"
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
        f'role="img" aria-label="{_e(label)}">' + "".join(body) + "</svg>"
    )


def _figure(svg: str, caption: str, kind: str) -> str:
    return (
        f'<figure class="chart" data-chart="{_e(kind)}">{svg}'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


# --- charts ----------------------------------------------------------------------------------


def bar_chart(finding: Finding, population: Population | None) -> str:
    """Observed rate inside the subgroup vs outside it (and the null expectation inside)."""
    rows: list[tuple[str, float | None, str, str]] = []
    inside_n = finding.size
    rows.append(
        (
            "inside subgroup",
            finding.observed_rate,
            f"{finding.observed_count:g} of {inside_n}",
            INSIDE,
        )
    )
    if finding.expected_rate is not None:
        rows.append(
            (
                "expected inside",
                finding.expected_rate,
                f"{finding.expected_count:.1f} of {inside_n}",
                EXPECTED,
            )
        )
    outside_label = ""
    if population is not None:
        out_n = population.size - inside_n
        if population.observed_rate is not None and out_n > 0:
            out_count = population.observed_rate * population.size - finding.observed_count
            outside_label = f"{out_count:.0f} of {out_n}"
        elif out_n >= 0:
            outside_label = f"n = {out_n}"
    rows.append(("outside subgroup", finding.outside_rate, outside_label, OUTSIDE))
    values = [v for _, v, _, _ in rows if v is not None]
    hi = max([*values, 0.0])
    lo = min([*values, 0.0])
    if hi <= lo:
        hi = lo + 1.0
    ticks = _nice_ticks(lo, hi * 1.05 if hi > 0 else hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    left, right, top, row_h = 112, 128, 10, 30
    plot_w = 420 - left - right
    width = left + plot_w + right
    height = top + row_h * len(rows) + 26

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    body = []
    for t in ticks:
        body.append(
            f'<line x1="{_n(x(t))}" y1="{top}" x2="{_n(x(t))}" y2="{top + row_h * len(rows)}" '
            'stroke="#e3e6ea"/>'
        )
        body.append(_text(x(t), top + row_h * len(rows) + 14, f"{t:g}", "middle", fill="#555"))
    for i, (label, value, counts, color) in enumerate(rows):
        y0 = top + i * row_h
        body.append(_text(left - 6, y0 + 19, label, "end"))
        if value is None:
            body.append(_text(left + 4, y0 + 19, "n/a", fill="#777"))
            continue
        x0, x1 = sorted((x(0.0), x(value)))
        body.append(
            f'<rect class="bar" x="{_n(x0)}" y="{y0 + 6}" width="{_n(max(x1 - x0, 1.0))}" '
            f'height="{row_h - 10}" fill="{color}"><title>{_e(label)}: {_e(percent(value, 1))}'
            f" ({_e(counts)})</title></rect>"
        )
        body.append(_text(x1 + 5, y0 + 19, f"{percent(value, 1)}  {counts}".rstrip()))
    body.append(
        f'<line x1="{_n(x(0.0))}" y1="{top}" x2="{_n(x(0.0))}" '
        f'y2="{top + row_h * len(rows)}" stroke="#333"/>'
    )
    label = population.observed_label if population is not None else "observed rate"
    svg = _svg(width, height, body, f"bar chart: {label} inside vs outside the subgroup")
    return _figure(svg, f"Rate ({label}) inside vs outside the subgroup, with counts.", "bars")


def null_histogram(null: NullDistribution, observed: float, caption: str | None = None) -> str:
    """Histogram of the null maxima with the observed score (and the 1 - alpha quantile)."""
    scores = [s for s in null.scores if s is not None and math.isfinite(s)]
    width, height = 420, 190
    left, right, top, bottom = 40, 14, 22, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    lo = min([*scores, observed, 0.0])
    hi = max([*scores, observed])
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
    ox = x(observed)
    body.append(
        f'<line class="observed" x1="{_n(ox)}" y1="{top - 8}" x2="{_n(ox)}" y2="{top + plot_h}" '
        f'stroke="{INSIDE}" stroke-width="2.5"><title>observed score {observed:.3f}</title></line>'
    )
    anchor = "end" if ox > left + plot_w * 0.7 else "start"
    shift = -4 if anchor == "end" else 4
    body.append(
        _text(
            ox + shift, top + 12, f"observed {observed:.2f}", anchor, fill=INSIDE, font_weight="600"
        )
    )
    body.append(_text(left + plot_w / 2, height - 2, "maximum score per null replicate", "middle"))
    svg = _svg(width, height, body, "null distribution of the maximum score")
    text = caption or (
        f"Null distribution of the maximum score ({null.replicates} replicates, "
        f"{null.exceed_count} at or above the observed {observed:.2f})."
    )
    return _figure(svg, text, "null")


def forest_plot(result: CertificationResult) -> str:
    """Gap estimate and bounds (lower/upper) per group, with 0 and the tolerance marked."""
    flag = result.mode == "flag"

    def hit(g) -> bool:
        return bool(g.flagged) if flag else bool(g.certified)

    groups = [g for g in result.groups if g.gap is not None or g.lower is not None]
    ordered = [g for g in groups if hit(g)] + [g for g in groups if not hit(g)]
    shown = ordered[:FOREST_MAX_GROUPS]
    values = [0.0, result.tolerance]
    if result.side == "both":
        values.append(-result.tolerance)
    for g in shown:
        values += [v for v in (g.gap, g.lower, g.upper) if v is not None and math.isfinite(v)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.06 or 0.05
    lo, hi = lo - pad, hi + pad
    label_w = max(120, min(440, int(6.4 * max([len(g.name) for g in shown] + [10]))))
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
    tols = [result.tolerance] + ([-result.tolerance] if result.side == "both" else [])
    for tol in tols:
        if tol != 0:
            body.append(
                f'<line x1="{_n(x(tol))}" y1="{top - 6}" x2="{_n(x(tol))}" y2="{bottom}" '
                'stroke="#e0a800" stroke-dasharray="5 3"/>'
            )
    body.append(_text(x(0), top - 10, "gap 0", "middle", fill="#333"))
    if result.tolerance != 0:
        body.append(
            _text(
                x(result.tolerance),
                top - 24,
                f"tolerance {result.tolerance:+g}",
                "middle",
                fill="#8a6d00",
            )
        )
    for i, g in enumerate(shown):
        yc = top + i * row_h + row_h / 2
        color = INSIDE if hit(g) else OUTSIDE
        body.append(_text(left - 8, yc + 4, g.name, "end"))
        lower = g.lower if g.lower is not None else lo
        upper = g.upper if g.upper is not None else hi
        body.append(
            f'<line class="interval" x1="{_n(x(lower))}" y1="{_n(yc)}" x2="{_n(x(upper))}" '
            f'y2="{_n(yc)}" stroke="{color}" stroke-width="2"><title>{_e(g.name)}: '
            f"[{_e(_f(g.lower))}, {_e(_f(g.upper))}]</title></line>"
        )
        for end, given in ((lower, g.lower), (upper, g.upper)):
            if given is not None:
                body.append(
                    f'<line x1="{_n(x(end))}" y1="{_n(yc - 5)}" x2="{_n(x(end))}" '
                    f'y2="{_n(yc + 5)}" stroke="{color}" stroke-width="2"/>'
                )
        if g.gap is not None:
            body.append(
                f'<circle class="point" cx="{_n(x(g.gap))}" cy="{_n(yc)}" r="4.5" fill="{color}">'
                f"<title>{_e(g.name)}: gap {g.gap:+.4f} (n = {g.size})</title></circle>"
            )
    what = "flagged" if flag else "certified"
    svg = _svg(width, height, body, f"forest plot of the gap bounds per group ({what} in red)")
    more = (
        f" Showing {len(shown)} of {len(groups)} groups ({what} first)."
        if len(shown) < len(groups)
        else ""
    )
    caption = (
        f"Gap of {result.metric} per group (point) with its bounds (line; open ends reach the "
        f"edge); red = {what}, dashed = tolerance.{more}"
    )
    return _figure(svg, caption, "forest")


def roc_chart(
    overall: tuple[Sequence[float], Sequence[float]],
    subgroup: tuple[Sequence[float], Sequence[float]] | None,
    label: str,
) -> str:
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
            f'stroke-width="2"><title>{_e(name)}</title></polyline>'
        )
        ly = pad_t + 14 + 18 * i
        body.append(
            f'<line x1="{pad_l + size + 10}" y1="{ly - 4}" x2="{pad_l + size + 28}" '
            f'y2="{ly - 4}" stroke="{color}" stroke-width="3"/>'
        )
        body.append(_text(pad_l + size + 32, ly, name))
    svg = _svg(width, height, body, f"ROC curves: {label}")
    return _figure(svg, f"ROC curve of {label} vs the whole search set.", "roc")


# --- sections --------------------------------------------------------------------------------


def _table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric: set[int]) -> str:
    cls = [' class="n"' if i in numeric else "" for i in range(len(head))]
    out = ["<table><thead><tr>"]
    out += [f"<th{cls[i]}>{_e(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td{cls[i]}>{_e(v)}</td>" for i, v in enumerate(row)))
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _finding_null(scan: ScanResult, finding: Finding) -> NullDistribution | None:
    if scan.null_distribution is not None:
        return scan.null_distribution
    if scan.cbs is not None and finding.cbs is not None:
        for run in scan.cbs.runs:
            if run.protected == finding.cbs.protected and run.null is not None:
                return run.null
    return None


def _finding_html(scan: ScanResult, index: int, finding: Finding) -> str:
    parts = [
        f'<div class="finding" id="{_e(scan.id)}-finding-{index}">',
        f"<h3>Finding {index}: {_e(describe_subgroup(finding.subgroup))}</h3>",
        f"<p>{_e(finding.description)}</p>",
        _table(
            ["size", "observed", "expected", "outside", "q", "score", "LLR", "p-value"],
            [
                [
                    finding.size,
                    percent(finding.observed_rate, 1),
                    percent(finding.expected_rate, 1),
                    percent(finding.outside_rate, 1),
                    f"{finding.q:.3f}",
                    f"{finding.score:.2f}",
                    f"{finding.llr:.2f}",
                    _p(finding.p_value),
                ]
            ],
            set(range(8)),
        ),
        '<div class="charts">',
        bar_chart(finding, scan.population),
    ]
    null = _finding_null(scan, finding)
    if null is not None and null.scores:
        parts.append(null_histogram(null, finding.score))
    parts.append("</div></div>")
    return "".join(parts)


def _subroc_html(result: SubrocResult) -> str:
    over_val = (
        f"; {_f(result.overall_validation)} on the validation set ({result.validation_rows} rows)"
        if result.overall_validation is not None
        else ""
    )
    parts = [
        f"<p>{_e(result.measure)} overall: {_e(_f(result.overall_search))} on the search set "
        f"({result.search_rows} rows){_e(over_val)}. {result.reported} pattern(s) reported of "
        f"{len(result.patterns)} candidates tested ({_e(result.correction.upper())}, alpha "
        f"{result.alpha:g}).</p>"
    ]
    reported = [p for p in result.patterns if p.reported]
    if reported:
        parts.append('<div class="finding"><h3>Reported patterns</h3><ol>')
        parts += [
            f'<li id="pattern-{p.rank}">{_e(p.description)} (adjusted p = '
            f"{_e(_p(p.adjusted_p_value))})</li>"
            for p in reported
        ]
        parts.append("</ol>")
        if result.roc is not None:
            parts.append('<div class="charts">')
            for p in reported:
                sub = (p.roc.fpr, p.roc.tpr) if p.roc is not None else None
                overall = (result.roc.fpr, result.roc.tpr)
                parts.append(roc_chart(overall, sub, describe_subgroup(p.subgroup)))
            parts.append("</div>")
        parts.append("</div>")
    rows = [
        [
            p.rank,
            describe_subgroup(p.subgroup),
            p.search.size,
            _f(p.search.measure),
            _f(p.validation.measure) if p.validation else "n/a",
            f"{p.score:.4f}",
            _p(p.adjusted_p_value),
            "yes" if p.reported else "no",
        ]
        for p in result.patterns[:15]
    ]
    parts.append(
        _table(
            [
                "rank",
                "pattern",
                "search rows",
                "search",
                "validation",
                "score",
                "adj. p",
                "reported",
            ],
            rows,
            {0, 2, 3, 4, 5, 6},
        )
    )
    if len(result.patterns) > 15:
        parts.append(
            f'<p class="muted">Top 15 of {len(result.patterns)} candidates (all are in the JSON '
            "report).</p>"
        )
    return "".join(parts)


def _certification_html(result: CertificationResult) -> str:
    flag = result.mode == "flag"
    hits = "flagged" if flag else "certified"
    summary = (
        f"{result.metric_description}; target theta = {result.theta:.4f} ({result.target}); "
        f"{result.hits} of {result.groups_tested} tested groups {hits} "
        f"({result.groups_total} in the collection); tolerance {result.tolerance:+g}, "
        f"side {result.side}, alpha {result.alpha:g}, B = {result.bootstrap}."
    )
    head = ["group", "n", "estimate", "gap", "lower", "upper"]
    head += ["adj. p", "flagged", "status"] if flag else ["certified", "status"]
    rows = []
    for g in result.groups[:40]:
        row = [g.name, g.size, _f(g.estimate), _f(g.gap), _f(g.lower), _f(g.upper)]
        if flag:
            row += [_p(g.adjusted_p_value), "yes" if g.flagged else "no", g.status]
        else:
            row += ["n/a" if g.certified is None else ("yes" if g.certified else "no"), g.status]
        rows.append(row)
    return (
        f"<p>{_e(summary)}</p>"
        + '<div class="charts">'
        + forest_plot(result)
        + "</div>"
        + _table(head, rows, {1, 2, 3, 4, 5, 6})
        + (
            f'<p class="muted">First 40 of {len(result.groups)} groups (all are in the JSON '
            "report).</p>"
            if len(result.groups) > 40
            else ""
        )
    )


def _scan_html(scan: ScanResult) -> str:
    status_cls = (
        "b-significant"
        if scan.status == "significant"
        else ("b-error" if scan.status == "error" else "")
    )
    parts = [
        f'<section class="scan" id="scan-{_e(scan.id)}">',
        f"<h2>{_e(scan.id)} <span class='badge'>{_e(scan.type)}</span>"
        f'<span class="badge {status_cls}">{_e(STATUS_TEXT.get(scan.status, scan.status))}'
        "</span></h2>",
    ]
    if scan.error:
        parts.append(f"<pre>{_e(scan.error)}</pre></section>")
        return "".join(parts)
    if scan.population is not None:
        pop = scan.population
        parts.append(
            f"<p>Scanned population: {_e(pop.description)}, {pop.size} rows; "
            f"{_e(pop.observed_label)}: {_e(percent(pop.observed_rate, 1))}.</p>"
        )
    for i, finding in enumerate(scan.findings, start=1):
        parts.append(_finding_html(scan, i, finding))
    if scan.subroc is not None:
        parts.append(_subroc_html(scan.subroc))
    if scan.certification is not None:
        parts.append(_certification_html(scan.certification))
    if scan.cbs is not None:
        rows = [
            [r.protected, r.status, _f(r.score, 2), _p(r.p_value), r.reason or ""]
            for r in scan.cbs.runs
        ]
        parts.append(f"<p>{_e(scan.cbs.cell)}</p>")
        parts.append(_table(["protected", "status", "score", "p-value", "note"], rows, {2, 3}))
    for warning in scan.warnings:
        parts.append(f'<div class="warn">Warning: {_e(warning)}</div>')
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
    rows = [
        [
            e.scan_id,
            e.label,
            e.match,
            describe_subgroup((e.after or e.before).subgroup) if (e.after or e.before) else "",
        ]
        for e in base.entries
    ]
    return (
        '<section class="box"><h2>Comparison with the baseline</h2>'
        f"<p>Baseline {_e(base.baseline_name)} ({_e(base.baseline_utc_time)}); "
        f"{base.new_significant} new significant finding(s).</p>"
        + _table(["scan", "label", "match", "subgroup"], rows, set())
        + "</section>"
    )


def render_html(report: AuditReport) -> str:
    prov = report.provenance
    v = report.verdict
    verdict = _verdict_line(report).replace("**", "")
    summary_rows = []
    for scan in report.scans:
        top = scan.headline()
        summary_rows.append(
            [
                scan.id,
                scan.type,
                STATUS_TEXT.get(scan.status, scan.status),
                describe_subgroup(top[0]) if top else "-",
                _f(top[1], 2) if top else "-",
                _p(top[2]) if top else "-",
            ]
        )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Fairness audit: {_e(report.name)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>Fairness audit: {_e(report.name)}</h1>",
        f'<p><span class="verdict v-{_e(v.status)}">{_e(verdict)}</span></p>',
    ]
    if report.description:
        parts.append(f"<p>{_e(report.description)}</p>")
    parts.append(
        '<section class="box"><h2>Summary</h2>'
        + _table(
            ["scan", "type", "status", "top subgroup", "score", "p-value"], summary_rows, {4, 5}
        )
        + "</section>"
    )
    parts.append(_baseline_html(report))
    parts += [_scan_html(scan) for scan in report.scans]
    if report.data_warnings:
        parts.append('<section class="box"><h2>Data warnings</h2><ul>')
        parts += [f"<li>{_e(w)}</li>" for w in report.data_warnings]
        parts.append("</ul></section>")
    seed = prov.seed if prov.seed is not None else f"none (entropy {prov.seed_entropy})"
    parts.append(
        '<section class="box"><h2>Provenance</h2>'
        + _table(
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
            ],
            set(),
        )
        + "</section>"
    )
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"
