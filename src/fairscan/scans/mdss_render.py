"""The finding detail of the subset scans and its render hook (shared by fpr/tpr/bias/ijdi/cbs).

Kept apart from :mod:`fairscan.scans.mdss_runner` so that the registry, which needs the hooks,
does not import the numba kernels at start-up.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fairscan.report.hooks import RenderHooks
from fairscan.report.models import Finding, ScanResult
from fairscan.report.text import fmt_p


class MdssFindingDetail(BaseModel):
    """``findings[].detail`` of the subset scans: the search's own figures."""

    model_config = ConfigDict(extra="allow")  # IJDI and CBS add their own blocks

    score: float  # penalised objective J(S) = F(S) - penalty * c(S)
    llr: float  # unpenalised log-likelihood ratio F(S)
    penalty_cost: float  # penalty * c(S)
    q: float  # direction-constrained MLE of the odds multiplier in the subgroup
    observed_count: float  # sum of the observed indicator inside
    expected_count: float  # sum of the expectations inside
    null_quantile: float | None  # (1 - alpha) quantile of the null maxima; null when untested


def finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures of a subset-scan finding, under its common table."""
    d = finding.detail
    if "llr" not in d:
        return []
    return [
        f"Search figures: odds multiplier q = {d['q']:.3f}; log-likelihood ratio {d['llr']:.2f}, "
        f"minus a complexity penalty of {d['penalty_cost']:.2f}, gives the score "
        f"{d['score']:.2f}; {d['observed_count']:g} observed vs {d['expected_count']:.1f} expected "
        f"events inside (p = {fmt_p(finding.p_value)}).",
        "",
    ]


MDSS_HOOKS = RenderHooks(finding_markdown=finding_markdown)
