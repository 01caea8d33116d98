"""The history page (``audit history PATH --html OUT``): the series of audits of each spec name.

Self-contained (inline SVG and CSS, no script, no external resource), like the HTML report;
every text from the history goes through the HTML report's :func:`~fairscan.report.html.escape`.
Per spec name, in order:

* a table of runs (date, data hash, rows audited, verdict);
* with a ``monitor:`` block, one chart per monitored process (keyed by its identity: scan and
  subgroup mapping): its evidence over the runs on a log scale, the alarm threshold as a
  dashed red line, alarms as red triangles, each run's label under its point;
* one chart pair per finding (keyed by scan and subgroup, never by its label text): its
  p-value (as the report shows it; the dashed line is alpha) and its effect over the runs.

Every series is drawn on the runs of its spec: a run where the series has no record is a gap
(a grey tick on the axis), and lines never join across it. Both axes carry values (p-values,
evidence, rates; run dates).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fairscan.report.html import _nice_ticks, escape, html_table
from fairscan.report.monitor_view import fmt_evidence, mapping_text
from fairscan.report.text import P_TEXT_FLOOR, fmt_p

P_FLOOR = P_TEXT_FLOOR  # the plot floors -log10 p where the text does
HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 180, 58, 16, 26, 40
# pixels per run on the x axis: wide enough for a date and a label under each run, narrower
# for long series (a year of weekly runs fits PLOT_WIDTH; labels then only in tooltips)
STEP, MIN_STEP, PLOT_WIDTH, MIN_WIDTH = 72, 12, 900, 320
MAX_DATE_LABELS = 12  # dates under the x axis at most (every k-th run beyond)
LINE, SIGNIFICANT, THRESHOLD, GAP = "#1f5fa8", "#c0392b", "#c0392b", "#9aa0a6"


@dataclass(frozen=True)
class _RunAxis:
    """The runs of one spec name, in order: a series' point sits at its run's position."""

    run_ids: tuple[int, ...]
    dates: tuple[str, ...]

    @property
    def step(self) -> int:
        return max(MIN_STEP, min(STEP, PLOT_WIDTH // max(1, len(self.run_ids))))

    @property
    def width(self) -> int:
        return max(MIN_WIDTH, LEFT + RIGHT + self.step * len(self.run_ids))

    def x(self, run_id: int) -> float:
        i = self.run_ids.index(run_id)
        return LEFT + self.step / 2 + self.step * i


@dataclass(frozen=True)
class _Mark:
    """One run of a series: its value (None: recorded, nothing to plot), label and style."""

    run_id: int
    value: float | None
    label: str
    css: str  # class of its marker
    tip: str  # tooltip text


@dataclass(frozen=True)
class _Scale:
    """The y axis: value -> plotted coordinate, its ticks with labels, and its title."""

    low: float
    high: float
    ticks: list[tuple[float, str]]
    title: str

    def y(self, v: float) -> float:
        span = self.high - self.low or 1.0
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (v - self.low) / span)


def _n(x: float) -> str:
    return f"{x:.1f}"


def _decade_scale(values: Sequence[float], title: str, fmt: Callable[[int], str]) -> _Scale:
    """A log10 axis with a tick at each decade (every k-th one when there are many)."""
    low = math.floor(min(values))
    high = max(math.ceil(max(values)), low + 1)
    every = max(1, math.ceil((high - low) / 6))
    ticks = [(float(k), fmt(k)) for k in range(low, high + 1) if (k - low) % every == 0]
    return _Scale(float(low), float(high), ticks, title)


def _power_text(k: int) -> str:
    return f"{10.0**k:g}" if -3 <= k <= 4 else f"1e{k}"


def _linear_scale(values: Sequence[float], title: str) -> _Scale:
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5
    ticks = _nice_ticks(low, high, 4)
    low, high = min(low, *ticks), max(high, *ticks)
    return _Scale(low, high, [(t, f"{t:.4g}") for t in ticks], title)


def _axes(axis: _RunAxis, scale: _Scale) -> list[str]:
    """Both axes with their values: the y ticks and title, the runs' dates under x."""
    right, bottom = axis.width - RIGHT, HEIGHT - BOTTOM
    parts = [
        f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}" stroke="#555"/>',
        f'<line class="axis" x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#555"/>',
        f'<text x="4" y="12" font-size="10" fill="#333">{escape(scale.title)}</text>',
    ]
    for value, text in scale.ticks:
        y = _n(scale.y(value))
        parts.append(
            f'<line x1="{LEFT - 4}" x2="{right}" y1="{y}" y2="{y}" stroke="#eee"/>'
            f'<text class="ytick" x="{LEFT - 6}" y="{y}" dy="3" font-size="10" '
            f'text-anchor="end">{escape(text)}</text>'
        )
    every = max(1, math.ceil(len(axis.run_ids) / MAX_DATE_LABELS))
    for i, (run_id, date) in enumerate(zip(axis.run_ids, axis.dates, strict=True)):
        x = _n(axis.x(run_id))
        parts.append(f'<line x1="{x}" x2="{x}" y1="{bottom}" y2="{bottom + 4}" stroke="#555"/>')
        if i % every == 0:
            parts.append(
                f'<text class="xtick" x="{x}" y="{bottom + 15}" font-size="9" '
                f'text-anchor="middle">{escape(date[:10])}</text>'
            )
    return parts


def _threshold(axis: _RunAxis, scale: _Scale, value: float, text: str) -> list[str]:
    y = _n(scale.y(value))
    return [
        f'<line class="threshold" x1="{LEFT}" x2="{axis.width - RIGHT}" y1="{y}" y2="{y}" '
        f'stroke="{THRESHOLD}" stroke-width="1.5" stroke-dasharray="6 4"/>',
        # named above the plot, where no point can hide it
        f'<text x="{axis.width - RIGHT}" y="12" font-size="10" fill="{THRESHOLD}" '
        f'text-anchor="end">dashed: {escape(text)}</text>',
    ]


def _segments(axis: _RunAxis, marks: Sequence[_Mark], scale: _Scale) -> list[str]:
    """The line through consecutive runs with a value, broken at every run without one (a
    gap), and a grey tick at each gap between the series' first and last run."""
    by_run = {m.run_id: m for m in marks if m.value is not None}
    parts: list[str] = []
    stretch: list[str] = []
    first = min(axis.run_ids.index(m.run_id) for m in marks)
    last = max(axis.run_ids.index(m.run_id) for m in marks)
    for i, run_id in enumerate(axis.run_ids):
        mark = by_run.get(run_id)
        if mark is not None and mark.value is not None:
            stretch.append(f"{_n(axis.x(run_id))},{_n(scale.y(mark.value))}")
            continue
        if len(stretch) > 1:
            parts.append(_polyline(stretch))
        stretch = []
        if first < i < last:
            x = _n(axis.x(run_id))
            bottom = HEIGHT - BOTTOM
            parts.append(
                f'<line class="gap" x1="{x}" x2="{x}" y1="{bottom - 10}" y2="{bottom}" '
                f'stroke="{GAP}" stroke-width="3"><title>no record in this run</title></line>'
            )
    if len(stretch) > 1:
        parts.append(_polyline(stretch))
    return parts


def _polyline(points: list[str]) -> str:
    return (
        f'<polyline class="segment" fill="none" stroke="{LINE}" stroke-width="2" '
        f'points="{" ".join(points)}"/>'
    )


def _markers(axis: _RunAxis, marks: Sequence[_Mark], scale: _Scale, labels: bool) -> list[str]:
    parts = []
    for m in marks:
        x = axis.x(m.run_id)
        title = f"<title>{escape(m.tip)}</title>"
        if m.value is None:  # recorded without a figure (not re-testable): on the axis
            y = float(HEIGHT - BOTTOM)
            parts.append(
                f'<rect class="{m.css} no-value" x="{_n(x - 3.5)}" y="{_n(y - 3.5)}" '
                f'width="7" height="7" fill="white" stroke="{GAP}">{title}</rect>'
            )
        elif "alarm" in m.css.split():
            y = scale.y(m.value)
            parts.append(
                f'<path class="{m.css}" d="M{_n(x)},{_n(y - 7)} l6,11 h-12 z" '
                f'fill="{SIGNIFICANT}">{title}</path>'
            )
        else:
            y = scale.y(m.value)
            fill = SIGNIFICANT if "significant" in m.css.split() else "white"
            parts.append(
                f'<circle class="{m.css}" cx="{_n(x)}" cy="{_n(y)}" r="4" fill="{fill}" '
                f'stroke="{SIGNIFICANT}">{title}</circle>'
            )
        if labels and m.label and axis.step == STEP:
            parts.append(
                f'<text class="point-label" x="{_n(x)}" y="{HEIGHT - 4}" font-size="9" '
                f'text-anchor="middle" fill="#555">{escape(m.label)}</text>'
            )
    return parts


def _chart(
    axis: _RunAxis,
    marks: Sequence[_Mark],
    scale: _Scale,
    *,
    kind: str,
    threshold: tuple[float, str] | None = None,
    reference: Sequence[tuple[int, float]] = (),
    labels: bool = True,
) -> str:
    body = _axes(axis, scale)
    if threshold is not None:
        body += _threshold(axis, scale, *threshold)
    for run_id, value in reference:  # the reference rate: a short grey bar per run
        x, y = axis.x(run_id), _n(scale.y(value))
        body.append(
            f'<line class="reference" x1="{_n(x - 8)}" x2="{_n(x + 8)}" y1="{y}" y2="{y}" '
            'stroke="#8c8c8c" stroke-width="2"/>'
        )
    if marks:
        body += _segments(axis, marks, scale) + _markers(axis, marks, scale, labels)
    width = axis.width
    return (
        f'<svg class="chart" data-chart="{escape(kind)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" role="img" '
        f'aria-label="{escape(scale.title)}">' + "".join(body) + "</svg>"
    )


# --- findings --------------------------------------------------------------------------------


def _finding_word(p: Any) -> str:
    """A run's label: the re-test label where the run had a baseline, else its significance."""
    if p.baseline_label:
        return str(p.baseline_label)
    if p.significant is None:
        return "not tested"
    return "significant" if p.significant else "not significant"


def _finding_block(t: Any, axis: _RunAxis, alpha: float) -> str:
    words = [_finding_word(p) for p in t.points]
    logp = [None if p.p_value is None else -math.log10(max(p.p_value, P_FLOOR)) for p in t.points]
    marks = [
        _Mark(
            p.run_id,
            lp,
            word,
            "significant" if p.significant else "not-significant",
            f"{p.utc_time[:19]}: {word}, p {fmt_p(p.p_value)}",
        )
        for p, lp, word in zip(t.points, logp, words, strict=True)
    ]
    shown = [v for v in logp if v is not None] + [0.0, -math.log10(alpha)]
    p_scale = _decade_scale(shown, "p-value (log scale)", lambda k: _power_text(-k))
    p_chart = _chart(
        axis, marks, p_scale, kind="p", threshold=(-math.log10(alpha), f"alpha {alpha:g}")
    )
    inside = [
        _Mark(m.run_id, p.inside, m.label, m.css, m.tip)
        for m, p in zip(marks, t.points, strict=True)
    ]
    reference = [(p.run_id, p.reference) for p in t.points if p.reference is not None]
    values = [p.inside for p in t.points if p.inside is not None] + [v for _, v in reference]
    scale = _linear_scale(values, f"{t.metric or 'effect'} inside (grey: reference)")
    effect_chart = _chart(axis, inside, scale, kind="effect", reference=reference, labels=False)
    key = getattr(t, "subgroup_key", "")
    return (
        f'<section class="series finding" data-key="{_key_digest(f"{t.scan_id}|{key}")}">'
        f"<h4>{escape(t.scan_id)}: {escape(t.label)}</h4>"
        f'<div class="charts">{p_chart}{effect_chart}</div></section>'
    )


def _key_digest(identity: str) -> str:
    """A series' identity in the page's markup: a digest, so no data value sits in a tag (the
    visible text escapes them; a tag carries none)."""
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]


# --- monitor ---------------------------------------------------------------------------------


def _monitor_block(s: Any, axis: _RunAxis) -> str:
    """One monitored process: its evidence over the runs (log scale), the alarm threshold, its
    alarms and labels."""
    marks = []
    for p in s.points:
        css = "alarm" if p.alarm else ("significant" if p.label == "persists" else "evidence")
        tip = (
            f"{p.utc_time[:19]}: {p.label}, evidence {fmt_evidence(p.e_value)}, anytime "
            f"p-value {fmt_p(p.p_value_anytime)}" + (f", alarm ({p.alarm})" if p.alarm else "")
        )
        log_e = math.log10(max(p.e_value, 1e-300))
        marks.append(_Mark(p.run_id, log_e, p.label, css, tip))
    threshold = s.points[-1].threshold
    log_t = math.log10(max(threshold, 1e-300))
    shown = [m.value for m in marks if m.value is not None] + [0.0, log_t]
    scale = _decade_scale(shown, "evidence (log scale)", _power_text)
    chart = _chart(
        axis,
        marks,
        scale,
        kind="evidence",
        threshold=(log_t, f"alarm threshold {fmt_evidence(threshold)}"),
    )
    what = (
        "any subgroup the scan finds (open search)"
        if s.kind == "scan"
        else mapping_text(s.subgroup)
    )
    last = s.points[-1]
    alarms = sum(1 for p in s.points if p.alarm)
    return (
        f'<section class="series monitor" data-key="{_key_digest(s.process_key)}">'
        f"<h4>{escape(s.scan_id)}: {escape(what)}</h4>{chart}"
        f'<p class="note">Now: {escape(last.label)}, evidence {escape(fmt_evidence(last.e_value))}'
        f", anytime p-value {escape(fmt_p(last.p_value_anytime))}; {alarms} alarm(s).</p>"
        "</section>"
    )


# --- page ------------------------------------------------------------------------------------


def _runs_table(runs: Sequence[Any]) -> str:
    rows = [
        [
            str(i),
            r.utc_time[:19].replace("T", " "),
            r.data_sha256[:12],
            "-" if r.rows is None else f"{r.rows:,}",
            r.verdict,
        ]
        for i, r in enumerate(runs, 1)
    ]
    return html_table(["run", "date (UTC)", "data hash", "rows", "verdict"], rows, {0, 3})


def _axis_for(runs: Sequence[Any], series: Sequence[Any]) -> _RunAxis:
    """The x axis: the spec's runs; without a table of runs, the runs the series name."""
    if runs:
        return _RunAxis(tuple(r.run_id for r in runs), tuple(r.utc_time for r in runs))
    seen = {p.run_id: p.utc_time for s in series for p in s.points}
    ordered = sorted(seen)
    return _RunAxis(tuple(ordered), tuple(seen[i] for i in ordered))


def _audit_section(
    name: str, runs: Sequence[Any], trends: Sequence[Any], monitor: Sequence[Any], alpha: float
) -> str:
    axis = _axis_for(runs, [*trends, *monitor])
    parts = [f'<section class="audit"><h2>{escape(name)}</h2>']
    if runs:
        parts.append(f'<h3>Runs</h3><div class="runs">{_runs_table(runs)}</div>')
    if monitor:
        parts.append(
            "<h3>Evidence per monitored subgroup</h3><p>Each chart is one monitored subgroup "
            "(or a scan's open search) over the runs. Evidence starts at 1 and grows when the "
            "data keep showing bias; an alarm (red triangle) is raised when it reaches the "
            "alarm threshold (dashed red line), which keeps the chance of any false alarm, "
            "over every run and every monitored subgroup, at most the monitor's alpha. The "
            "anytime p-value (1 / highest evidence so far) stays valid however long the "
            "series runs.</p>"
        )
        parts += [_monitor_block(s, axis) for s in monitor]
    if trends:
        parts.append(
            "<h3>Findings over the runs</h3><p>Each finding's p-value as the report shows it "
            "(adjusted where the scan adjusts; the dashed line is alpha) and its effect. Filled "
            "dots: significant runs; under each run its label (the re-test label against the "
            "baseline). A grey tick is a run without a record of the finding: lines never join "
            "across it.</p>"
        )
        parts += [_finding_block(t, axis, alpha) for t in trends]
    parts.append("</section>")
    return "".join(parts)


def history_html(
    trends: Sequence[Any],
    alpha: float = 0.05,
    runs: Sequence[Any] = (),
    monitor: Sequence[Any] = (),
) -> str:
    """The history page: per spec name its runs (``fairscan.run.history.Run``), monitored
    processes (``MonitorSeries``) and findings (``Trend``)."""
    names: list[str] = []
    for item in [*runs, *monitor, *trends]:
        if item.name not in names:
            names.append(item.name)
    sections = [
        _audit_section(
            name,
            [r for r in runs if r.name == name],
            [t for t in trends if t.name == name],
            [s for s in monitor if s.name == name],
            alpha,
        )
        for name in names
    ]
    body = "".join(sections) or "<p>No run in the history.</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>fairscan audit history</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        "section.series{margin-bottom:1.2em}h2{font-size:1.3em}h3{font-size:1.1em}"
        "h4{font-size:1em;margin:.4em 0}svg{margin-right:1em;border:1px solid #eee}"
        ".charts{display:flex;flex-wrap:wrap}.note{font-size:.85em;margin:.2em 0}"
        "table{border-collapse:collapse;font-size:.9em}th,td{padding:2px 10px;"
        "border-bottom:1px solid #ddd;text-align:left}td.n,th.n{text-align:right;"
        "font-variant-numeric:tabular-nums}"
        "</style></head><body><h1>fairscan audit history</h1>"
        f"{body}</body></html>\n"
    )


__all__ = ["history_html"]
