"""Render hooks of the ``shift`` scan: the tilt table, the critical value, and the worst-case tilt (an inline SVG
of its relative weight over the first feature in the HTML report)."""

from __future__ import annotations

from functools import partial

from fairscan.report.hooks import RenderHooks
from fairscan.report.markdown import cell
from fairscan.report.models import ScanResult
from fairscan.report.sink_escape import md_text
from fairscan.report.text import fmt_number
from fairscan.scans.shift.models import ShiftResult, TiltProfile

_f = partial(fmt_number, signed=True)


def _detail(scan: ScanResult) -> ShiftResult | None:
    if "t_star" not in scan.detail:
        return None
    return ShiftResult.model_validate(scan.detail)


def _summary(r: ShiftResult) -> str:
    kernel = "exact kernel" if r.exact else f"Nystroem approximation of rank {r.rank}"
    target = "estimated from the data" if r.algorithm == 8 else "given"
    return (
        f"Audited metric: {r.metric_description}; reference value "
        f"{r.theta:.4f} ({r.target}, {target}); {r.rows} rows. Shifts are reweightings by "
        f"a Gaussian kernel on {', '.join(r.features)} (bandwidth {r.bandwidth:g}"
        f"{', on standardized values' if r.standardize else ''}, {kernel}); {r.bootstrap} "
        f"bootstrap resamples, confidence {100 * (1 - r.alpha):g}%, side {r.side}. The bounds "
        "hold at once for every such shift, so each is wider than a bound for one shift alone "
        f"(critical value {r.t_star:.4g})."
    )


def _rows(r: ShiftResult) -> list[list[object]]:
    return [
        [
            t.name,
            f"{t.effective_sample_size:.0f}",
            fmt_number(t.metric_under_tilt),
            _f(t.estimate),
            _f(t.lower),
            _f(t.upper),
            "yes" if t.certified else "no",
            t.status,
        ]
        for t in r.tilts
    ]


HEAD = ["tilt", "eff. n", "metric", "gap", "lower", "upper", "certified", "status"]


def shift_markdown(scan: ScanResult) -> list[str]:
    r = _detail(scan)
    if r is None:
        return []
    lines = [md_text(_summary(r)), ""]  # names the data's columns
    if r.tilts:
        lines += ["| " + " | ".join(HEAD) + " |", "|---|---:|---:|---:|---:|---:|:---:|---|"]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in _rows(r)]
        lines.append("")
    else:
        lines += ["No named tilt was given: only the worst case is reported.", ""]
    if r.worst_case is not None:
        lines += [f"Worst case: {md_text(r.worst_case.description)}", ""]
    return lines


def _profile_svg(p: TiltProfile) -> str:
    from fairscan.report.html import escape, figure

    pts = [(x, y) for x, y in zip(p.x, p.ratio, strict=True) if y is not None]
    if len(pts) < 2:
        return ""
    width, height, left, right, top, bottom = 420, 200, 46, 14, 14, 34
    x0, x1 = pts[0][0], pts[-1][0]
    ys = [y for _, y in pts] + [0.0, 1.0]
    y0, y1 = min(ys), max(ys)
    y1 = y1 if y1 > y0 else y0 + 1.0

    def sx(x: float) -> float:
        return left + (x - x0) / ((x1 - x0) or 1.0) * (width - left - right)

    def sy(y: float) -> float:
        return top + (y1 - y) / (y1 - y0) * (height - top - bottom)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    body = [
        f'<line x1="{left}" x2="{width - right}" y1="{sy(1.0):.1f}" y2="{sy(1.0):.1f}" '
        'stroke="#8c8c8c" stroke-dasharray="4 3"/>',
        f'<line x1="{left}" x2="{width - right}" y1="{sy(0.0):.1f}" y2="{sy(0.0):.1f}" '
        'stroke="#ccc"/>',
        f'<polyline fill="none" stroke="#c0392b" stroke-width="2" points="{line}"/>',
        f'<text x="{left}" y="{height - 8}" font-size="11">{escape(f"{x0:.4g}")}</text>',
        f'<text x="{width - right}" y="{height - 8}" font-size="11" text-anchor="end">'
        f"{escape(f'{x1:.4g}')}</text>",
        f'<text x="{(left + width - right) / 2:.1f}" y="{height - 8}" font-size="11" '
        f'text-anchor="middle">{escape(p.feature)}</text>',
        f'<text x="4" y="{sy(y1) + 10:.1f}" font-size="11">{escape(f"{y1:.3g}")}</text>',
        f'<text x="4" y="{sy(1.0) + 4:.1f}" font-size="11">1</text>',
    ]
    svg = (
        f'<svg class="plot" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape("closest valid tilt over " + p.feature)}">'
        + "".join(body)
        + "</svg>"
    )
    caption = (
        f"Closest valid (non-negative) tilt to the worst-case direction, over {p.feature}: "
        "mean h per bin relative to its overall mean (1 = the unshifted population)."
    )
    return figure(svg, caption, "shift")


def shift_html(scan: ScanResult) -> str:
    from fairscan.report.html import escape, html_table

    r = _detail(scan)
    if r is None:
        return ""
    out = f"<p>{escape(_summary(r))}</p>"
    if r.tilts:
        out += html_table(HEAD, _rows(r), {1, 2, 3, 4, 5})
    if r.worst_case is not None:
        out += f"<p>{escape('Worst case: ' + r.worst_case.description)}</p>"
        if r.worst_case.profile is not None:
            out += f'<div class="charts">{_profile_svg(r.worst_case.profile)}</div>'
    return out


SHIFT_HOOKS = RenderHooks(markdown=shift_markdown, html=shift_html)
