"""The finding detail of the subset scans and its render hook (shared by fpr/tpr/bias/ijdi/cbs).

Kept apart from :mod:`fairscan.scans.mdss_runner` so that the registry, which needs the hooks,
does not import the compiled kernels at start-up.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from fairscan.report.hooks import RenderHooks
from fairscan.report.models import Finding, ScanResult
from fairscan.report.sink_escape import md_text
from fairscan.report.text import is_rate, p_equals, percent, wilson_interval

# `audit explain`: how to read a subset scan's result (fpr/tpr/bias/ijdi/cbs add their own words)
MDSS_READING = (
    "The report gives the top subgroup (attributes and values), its size, observed and "
    "expected rates, the odds multiplier q and the penalised score. The p-value is a "
    "randomization test: the share of null replicates (data redrawn under the null hypothesis) "
    "whose best score reaches the observed one; the finding is significant when p <= alpha. "
    "With replicates 0 the scan is not tested. A larger penalty favours simpler subgroups."
)


class MdssFindingDetail(BaseModel):
    """``findings[].detail`` of the subset scans: the search's own figures."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # IJDI and CBS add blocks

    score: float  # penalised objective J(S) = F(S) - penalty * c(S)
    llr: float  # unpenalised log-likelihood ratio F(S)
    penalty_cost: float  # penalty * c(S)
    # direction-constrained MLE of the odds (Poisson: rate) multiplier in the subgroup; null for
    # the Gaussian score, whose parameter is the mean shift (the `mean_shift` extra)
    q: float | None
    observed_count: float  # sum of the observed indicator (outcome) inside
    expected_count: float  # sum of the expectations inside
    null_quantile: float | None  # (1 - alpha) quantile of the null maxima; null when untested


def _parameter_text(d: dict[str, Any]) -> str:
    """The fitted parameter in words, by scoring function (Bernoulli when not stated)."""
    score = d.get("score_function", "bernoulli")
    if score == "gaussian":
        return f"mean shift {float(d['mean_shift']):+.4g}"
    if score == "poisson":
        return f"rate multiplier q = {float(d['q']):.3f}"
    if score == "berk_jones":
        return f"Berk-Jones level alpha = {float(d['alpha']):g}, odds multiplier q = {float(d['q']):.3f}"
    return f"odds multiplier q = {float(d['q']):.3f}"


def finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
    """The search figures of a subset-scan finding, under its common table."""
    d = finding.detail
    if "llr" not in d:
        return []
    binary = d.get("score_function", "bernoulli") in ("bernoulli", "berk_jones")
    totals = (
        f"{d['observed_count']:g} observed vs {d['expected_count']:.1f} expected events inside"
        if binary
        else f"outcome total {d['observed_count']:.6g} observed vs {d['expected_count']:.6g} "
        "expected inside"
    )
    klass = f"class {md_text(str(d['class']))}: " if "class" in d else ""  # an outcome value
    return [
        f"Search figures: {klass}{_parameter_text(d)}; log-likelihood ratio {d['llr']:.2f}, "
        f"minus a complexity penalty of {d['penalty_cost']:.2f}, gives the score "
        f"{d['score']:.2f}; {totals} ({p_equals(finding.p_value)}).",
        "",
    ]


SEARCH_CAVEAT = (
    "95% Wilson intervals, each rate on its own: they account for sampling noise in a group "
    "fixed in advance, not for the search that picked this subgroup as the most extreme of many "
    "(so the inside interval is too narrow for it); the randomization test's p-value is the "
    "figure that accounts for the search."
)


def rate_intervals(finding: Finding) -> str | None:
    """The inside and reference rates with 95% Wilson intervals and what they do not account
    for; None unless the effect is a rate with counts."""
    e = finding.effect
    if e.inside is None or not is_rate(e.metric, e.inside, e.reference):
        return None
    lo, hi = wilson_interval(e.inside * e.inside_count, e.inside_count)
    text = f"Inside: {percent(e.inside, 1)} (95% interval {percent(lo, 1)} to {percent(hi, 1)})"
    if e.reference is not None and e.reference_count and e.expected != e.reference:
        rlo, rhi = wilson_interval(e.reference * e.reference_count, e.reference_count)
        text += (
            f"; reference: {percent(e.reference, 1)} (95% interval {percent(rlo, 1)} to "
            f"{percent(rhi, 1)})"
        )
    elif e.reference is not None:
        text += (
            f"; reference: {percent(e.reference, 1)}, the expectation inside the subgroup (a "
            "given figure, not a sampled rate: no interval)"
        )
    return f"{text}. {SEARCH_CAVEAT}"


def finding_markdown_with_intervals(scan: ScanResult, finding: Finding) -> list[str]:
    """The rates with their intervals, then the search figures."""
    intervals = rate_intervals(finding)
    lines = [] if intervals is None else [intervals, ""]
    return lines + finding_markdown(scan, finding)


def finding_html(scan: ScanResult, finding: Finding) -> str:
    """The rates with their intervals and the search caveat, under the finding's charts."""
    from fairscan.report.html import escape

    intervals = rate_intervals(finding)
    return "" if intervals is None else f'<p class="intervals">{escape(intervals)}</p>'


MDSS_HOOKS = RenderHooks(
    finding_markdown=finding_markdown_with_intervals, finding_html=finding_html
)
