"""Markdown section of the `certify` and `flag` scans (methods.md §5)."""

from __future__ import annotations

from functools import partial

from fairscan.report.models import CertificationResult
from fairscan.report.text import fmt_number, fmt_p

_f = partial(fmt_number, signed=True)
_p = partial(fmt_p, missing="n/a")

MAX_ROWS = 25  # hits are always shown; other groups up to this many rows (all are in the JSON)


def render_certification(result: CertificationResult) -> list[str]:
    flag = result.mode == "flag"
    lines = [
        f"{result.metric_description}; target theta = {result.theta:.4f} ({result.target}); "
        f"n = {result.rows} rows resampled, {result.population_rows} in the population; "
        f"B = {result.bootstrap}, alpha = {result.alpha:g}.",
        "",
    ]
    if flag:
        what = {"above": "exceeds", "below": "falls short of", "both": "differs from"}[result.side]
        lines += [
            f"Flagged: groups whose gap {what} {result.tolerance:+g}, "
            f"{result.correction.upper() if result.correction else ''} at FDR {result.alpha:g}: "
            f"**{result.hits}** of {result.groups_tested} tested groups "
            f"({result.groups_total} in the collection). Interval columns: marginal "
            f"{100 * (1 - result.alpha):g}% Wald intervals from the MAD scale.",
            "",
        ]
    else:
        crit = ", ".join(f"t*_{k} = {v:.4g}" for k, v in result.critical_values.items())
        scaling = (
            f"rescaled (p* = {result.p_star:g}, w0 = {result.w0})"
            if result.p_star is not None
            else "unscaled (s = 1)"
        )
        lines += [
            f"{result.bound} certification, simultaneous at {100 * (1 - result.alpha):g}%, "
            f"{scaling}; {crit}. Certified: **{result.hits}** of {result.groups_tested} tested "
            f"groups; {result.failed} not certified (tolerance {result.tolerance:+g}, "
            f"side {result.side}).",
            "",
        ]
    head = "| group | n | estimate | gap | lower | upper |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if flag:
        head += " p | adjusted p | flagged | status |"
        rule += "---:|---:|:---:|---|"
    else:
        head += " certified | status |"
        rule += ":---:|---|"
    lines += [head, rule]
    shown = 0
    for g in result.groups:
        hit = g.flagged if flag else g.certified
        if not hit and shown >= MAX_ROWS:
            continue
        shown += 1
        est = "n/a" if g.estimate is None else f"{g.estimate:.3f}"
        row = f"| {g.name} | {g.size} | {est} | {_f(g.gap)} | {_f(g.lower)} | {_f(g.upper)} |"
        mark = "yes" if hit else ("no" if hit is not None else "-")
        if flag:
            row += f" {_p(g.p_value)} | {_p(g.adjusted_p_value)} | {mark} | {g.status} |"
        else:
            row += f" {mark} | {g.status} |"
        lines.append(row)
    if shown < len(result.groups):
        lines.append(f"\n{len(result.groups) - shown} more groups in the JSON report.")
    lines.append("")
    return lines
