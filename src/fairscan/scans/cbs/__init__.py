"""Conditional Bias Scan (methods.md §3): separation/sufficiency violations of a protected class.

Compares each protected record's event I with I-hat = E[I | C, X] estimated from comparable
non-protected records (propensity-weighted outcome model) and scans the protected records for
the subgroup deviating most (Bernoulli score; Gaussian on Delta for separation-for-predictions).
Significance: permutation of the protected indicator, refitting everything per replicate.

The recommendation (cells on recommendations) follows the one rule of every scan
(:mod:`fairscan.scans.roles`): the scan's ``threshold``, else ``columns.recommendation``, else
``columns.threshold``.

Modules: :mod:`.spec` (spec models, harm direction, metric wording), :mod:`.runner`
(validate -> inputs -> one run per protected class -> result), :mod:`.models` (``detail``
models), :mod:`.render` (Markdown/HTML hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairscan.scans.base import (
    Retest,
    ScanDocs,
    ScanType,
    lazy_exports_of,
    lazy_hooks,
    lazy_runner,
    replicate_floor,
)
from fairscan.scans.cbs.spec import (
    METRICS,
    CbsModels,
    CbsSpec,
    MetricName,
    ProtectedSpec,
    Scalar,
    check,
    extra_columns,
    harm_direction,
    metric_name,
    needs,
)
from fairscan.scans.mdss_render import MDSS_READING

if TYPE_CHECKING:
    from fairscan.report.models import Finding


def _retest_effect(finding: Finding) -> float | None:
    """A CBS finding's effect for a re-test's power: q (Bernoulli) or mu (Gaussian)."""
    value = finding.detail.get("cbs", {}).get("value")
    return float(value) if isinstance(value, int | float) else None


def _retest_key(finding: Finding) -> str | None:
    """The protected class a CBS finding belongs to."""
    protected = finding.detail.get("cbs", {}).get("protected")
    return str(protected) if protected is not None else None


CBS = ScanType(
    type="cbs",
    spec_model=CbsSpec,
    runner=lazy_runner("fairscan.scans.cbs.runner", "run_cbs"),
    p_value_floor=replicate_floor,
    needs=needs,
    docs=ScanDocs(
        title="Conditional Bias Scan",
        summary=(
            "Scans the records of a protected class for the subgroup whose event (recommendation, "
            "prediction or outcome) deviates most from what comparable non-protected records imply "
            "(separation: given the outcome; sufficiency: given the prediction). Null hypothesis: "
            "the event is independent of the protected class given the conditioning value and the "
            "model attributes; tested by permuting the protected class and refitting everything. "
            "Note: the harm direction of the false omission rate / NPV cells concerns people who "
            "already received the favourable recommendation."
        ),
        reading=MDSS_READING
        + " Each protected class is a run (Bonferroni over runs); the finding compares the metric "
        "in the subgroup for protected and comparable non-protected records.",
        needs="outcome; plus the recommendation (on: recommendations) or the prediction as a "
        "probability in [0, 1] (on: predictions)",
    ),
    retest=Retest(effect=_retest_effect, key=_retest_key),
    extra_columns=extra_columns,
    check=check,
    render=lazy_hooks("fairscan.scans.cbs.render", "CBS_HOOKS"),
    weights="fractional",
)

__all__ = [
    "CBS",
    "CBS_HOOKS",
    "METRICS",
    "CbsCalibration",
    "CbsFindingDetail",
    "CbsInputs",
    "CbsModels",
    "CbsReliabilityBin",
    "CbsRun",
    "CbsRunOutput",
    "CbsScanDetail",
    "CbsSpec",
    "MetricName",
    "ProtectedSpec",
    "Scalar",
    "extra_columns",
    "harm_direction",
    "metric_name",
    "needs",
    "render_finding_html",
    "render_finding_markdown",
    "render_html",
    "render_markdown",
    "run_cbs",
]


# detail models, renderers and the runner load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.cbs.runner": ("CbsInputs", "CbsRunOutput", "run_cbs"),
        "fairscan.scans.cbs.models": (
            "CbsCalibration",
            "CbsFindingDetail",
            "CbsReliabilityBin",
            "CbsRun",
            "CbsScanDetail",
        ),
        "fairscan.scans.cbs.render": (
            "CBS_HOOKS",
            "render_finding_html",
            "render_finding_markdown",
            "render_html",
            "render_markdown",
        ),
    }
)
