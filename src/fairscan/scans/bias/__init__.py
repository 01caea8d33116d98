"""Classic Bias Scan (methods.md §2): subgroups whose predicted probabilities are miscalibrated.

Modules: :mod:`.spec` (spec model, outcome types and their scores), :mod:`.runner` (the binary
Bernoulli calibration scan and the dispatch), :mod:`.scores` (Berk-Jones, Gaussian and Poisson
scores), :mod:`.nominal` (one-vs-all per class), :mod:`.render` (Markdown hooks).
"""

from __future__ import annotations

from fairscan.scans.base import (
    ScanDocs,
    ScanType,
    lazy_exports_of,
    lazy_hooks,
    lazy_runner,
    replicate_floor,
)
from fairscan.scans.bias.monitor import calibration_evidence
from fairscan.scans.bias.spec import (
    SCORES_FOR,
    BiasScanSpec,
    BiasScore,
    CriticalValue,
    OutcomeType,
    extra_columns,
    needs,
)
from fairscan.scans.mdss_render import MDSS_READING


def probability_summary(spec: BiasScanSpec, prediction_kind: str) -> int | None:
    """A calibration scan (binary outcome, Bernoulli score, probabilities) reads its prediction
    only as the rows' expectations, summed per profile: its direction; else None."""
    calibration = spec.outcome_type == "binary" and spec.score == "bernoulli"
    if not calibration or prediction_kind != "probability":
        return None
    return -1 if spec.direction == "negative" else 1


BIAS_SCAN = ScanType(
    type="bias_scan",
    spec_model=BiasScanSpec,
    runner=lazy_runner("fairscan.scans.bias.runner", "run_bias_scan"),
    needs=needs,
    docs=ScanDocs(
        title="Bias Scan",
        summary=(
            "Finds the subgroup whose predicted probabilities deviate most from the observed outcomes "
            "(over-estimated risk for direction negative, under-estimated for positive); with "
            "outcome_type/score also regression (Gaussian mean shift), count and ordinal (Poisson) "
            "and multi-class (one-vs-all per class) models. "
            "Null hypothesis: the predicted probabilities are correct for every row."
        ),
        reading=MDSS_READING,
        needs=(
            "outcome (binary, or of its outcome_type); prediction (a probability in [0, 1] for a "
            "binary outcome, else the expected value; optional: the outcome's overall mean when "
            "omitted, AIF360's default); nominal outcomes: class_probabilities"
        ),
    ),
    # the binary Bernoulli scan runs on a streamed dataset's counts; other scores need rows.
    # Fractional sample weights: weighted counts and likelihoods (a continuous outcome for
    # Berk-Jones binarised at its weighted quantile), null draws per row times its weight
    weights=lambda spec: (
        "counts" if spec.outcome_type == "binary" and spec.score == "bernoulli" else "fractional"
    ),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.bias.render", "BIAS_HOOKS"),
    p_value_floor=replicate_floor,
    monitor_evidence=calibration_evidence,
    probability_summary=probability_summary,
)

__all__ = [
    "BIAS_HOOKS",
    "BIAS_SCAN",
    "SCORES_FOR",
    "BiasScanSpec",
    "BiasScore",
    "CriticalValue",
    "OutcomeType",
    "critical_value_markdown",
    "extra_columns",
    "needs",
    "run_bias_scan",
    "run_calibration_scan",
]

# the runner (compiled kernels) and the renderers load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.bias.runner": ("run_bias_scan", "run_calibration_scan"),
        "fairscan.scans.bias.render": ("BIAS_HOOKS", "critical_value_markdown"),
    }
)
