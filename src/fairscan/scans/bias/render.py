"""The Bias Scan's render hooks: the analytic critical value above the findings."""

from __future__ import annotations

from fairscan.report.hooks import RenderHooks
from fairscan.report.models import ScanResult
from fairscan.scans.bias.spec import CriticalValue
from fairscan.scans.mdss_render import finding_markdown


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
    return [
        f"Analytic critical value h({cv.alpha:g}) = {cv.h:.2f} for M = {cv.profiles} covariate "
        f"profiles: the score {'exceeds' if cv.exceeded else 'does not exceed'} it{note}.",
        "",
    ]


BIAS_HOOKS = RenderHooks(markdown=critical_value_markdown, finding_markdown=finding_markdown)
