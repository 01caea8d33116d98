"""The Bias Scan's render hooks: the analytic critical value above the findings."""

from __future__ import annotations

from fairscan.report.hooks import RenderHooks
from fairscan.report.models import ScanResult
from fairscan.scans.bias.spec import CriticalValue
from fairscan.scans.mdss_render import finding_html, finding_markdown_with_intervals


def critical_value_markdown(scan: ScanResult) -> list[str]:
    """The analytic critical value, a screening figure next to the randomization test."""
    if "critical_value" not in scan.detail:
        return []
    cv = CriticalValue.model_validate(scan.detail["critical_value"])
    note = (
        ""
        if cv.applicable
        else " (the theorem assumes penalty 0 and direction negative; indicative only)"
    )
    significant = any(f.significant for f in scan.findings)
    why = ""
    if not cv.exceeded and significant:
        why = (
            " The finding is significant all the same: the critical value is a conservative "
            "screening bound that holds for any data with this many profiles, while the "
            "verdict rests on the randomization test, which measures the null on this data."
        )
    return [
        f"Analytic critical value h({cv.alpha:g}) = {cv.h:.2f} for M = {cv.profiles} covariate "
        f"profiles: the score {'exceeds' if cv.exceeded else 'does not exceed'} it{note}.{why}",
        "",
    ]


def critical_value_html(scan: ScanResult) -> str:
    from fairscan.report.html import escape

    lines = critical_value_markdown(scan)
    return "" if not lines else f'<p class="muted">{escape(lines[0])}</p>'


BIAS_HOOKS = RenderHooks(
    markdown=critical_value_markdown,
    html=critical_value_html,
    finding_markdown=finding_markdown_with_intervals,
    finding_html=finding_html,
)
