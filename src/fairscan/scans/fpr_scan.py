"""FPR-Scan and TPR-Scan (methods.md §4.2): Bias Scan on the recommendations of one outcome class.

FPR-Scan keeps the true negatives (y = 0) and asks whether some subgroup is recommended
positive (flagged) more often than the overall false positive rate; TPR-Scan does the same
among the true positives. The expectation is constant (the overall rate), so the score has the
KL closed form and the search runs on cell counts alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from fairscan.errors import ScanError
from fairscan.metric_table import CATALOGUE
from fairscan.scans.base import (
    MonitorHook,
    RoleArrays,
    RunEvidence,
    ScanContext,
    ScanDocs,
    ScanType,
    replicate_floor,
)
from fairscan.scans.mdss_render import MDSS_HOOKS, MDSS_READING
from fairscan.spec.base import (
    ALPHA_DOC,
    DecisionOverrides,
    FixedSubgroups,
    MdssScanSpecBase,
    StrictModel,
    rule_error,
    score_rule_errors,
)

if TYPE_CHECKING:
    from fairscan.data.table import PreparedData
    from fairscan.engine.evidence import Profiles
    from fairscan.report.models import ScanResult


# The scores of the error-rate scans (gaussian and poisson are the Bias Scan's own)
SCORE_DOC = (
    "The scoring function: bernoulli (odds multiplier on the expectations, the default) or "
    "berk_jones (the nonparametric scan: rate against the constant level `alpha`)."
)


class ScoreOptions(StrictModel):
    """``score`` and ``alpha`` of an MDSS scan that scores binary indicators."""

    score: Literal["bernoulli", "berk_jones"] = Field(default="bernoulli", description=SCORE_DOC)
    alpha: float | list[float] | None = Field(default=None, description=ALPHA_DOC)

    @field_validator("score", mode="before")
    @classmethod
    def _bias_scan_scores(cls, value: object) -> object:
        if value in ("gaussian", "poisson"):
            raise rule_error(
                f"score {value} scores continuous or count outcomes: it is an option of "
                "bias_scan only (this scan counts binary recommendations)",
                hint=f"use score: bernoulli or berk_jones here, or a bias_scan with score: {value}",
            )
        return value

    @model_validator(mode="after")
    def _score_rules(self) -> ScoreOptions:
        score_rule_errors(self.score, self.alpha)
        return self

    def alpha_grid(self) -> tuple[float, ...]:
        """The Berk-Jones levels, in the order written (empty for other scores)."""
        if self.alpha is None:
            return ()
        return tuple(self.alpha) if isinstance(self.alpha, list) else (self.alpha,)


class FprScanSpec(DecisionOverrides, ScoreOptions, FixedSubgroups, MdssScanSpecBase):
    type: Literal["fpr_scan"] = Field(
        description="False-positive-rate scan among true negatives (y = 0)."
    )


class TprScanSpec(DecisionOverrides, ScoreOptions, FixedSubgroups, MdssScanSpecBase):
    type: Literal["tpr_scan"] = Field(
        description="True-positive-rate scan among true positives (y = 1)."
    )


def run_error_rate_scan(
    spec: FprScanSpec | TprScanSpec, ctx: ScanContext, outcome_class: int
) -> ScanResult:
    """Scan the rows with outcome == ``outcome_class`` for excess positive recommendations."""
    from fairscan.engine.mdss import SubgroupScore
    from fairscan.engine.scores import berk_jones
    from fairscan.report.text import percent
    from fairscan.scans.mdss_runner import MdssInputs, run_mdss
    from fairscan.scans.roles import outcome_text

    recommendation = ctx.role_names.get("recommendation", "recommendation")
    rows = ctx.outcome == outcome_class
    observed = ctx.recommendation[rows].astype(np.float64)
    # aggregated data (a streamed dataset): each row stands for this many data rows
    multiplicity = None if ctx.data.row_weight is None else ctx.data.row_weight[rows]
    overall = float(np.average(observed, weights=multiplicity))
    kind = "true negatives" if outcome_class == 0 else "true positives"
    rate_name = CATALOGUE["fpr" if outcome_class == 0 else "tpr"].words
    population = f"{kind} ({outcome_text(ctx.role_names, outcome_class)})"
    flagged = f"recommended positive ({recommendation})"
    if " " not in recommendation:
        flagged = f"recommended positive ({recommendation} = 1)"

    berk_jones_grid = spec.alpha_grid() if spec.score == "berk_jones" else ()

    def describe(
        who: str,
        best: SubgroupScore,
        observed_rate: float | None,
        expected_rate: float | None,
        outside_rate: float | None,
    ) -> str:
        outside = (
            f"{percent(outside_rate)} for the other {kind}"
            if outside_rate is not None
            else "no other rows"
        )
        level = (
            f"; Berk-Jones score against the level alpha = {expected_rate:g}"
            if berk_jones_grid
            else ""
        )
        return (
            f"Among {population}, the {round(best.size)} rows with {who} are {flagged} "
            f"{percent(observed_rate)} of the time ({rate_name}), vs {outside} and "
            f"{percent(overall)} overall (odds multiplier q = {best.q:.2f}{level})."
        )

    inputs = MdssInputs(
        rows=rows,
        observed=observed,
        expected=np.full(observed.shape[0], overall),
        direction=1,
        population=population,
        observed_label=flagged,
        metric=rate_name,
        reference="outside",
        reference_name=f"the other {kind}",
        describe=describe,
        multiplicity=multiplicity,
    )
    if berk_jones_grid:  # the null still flags every row with the overall rate
        inputs = replace(inputs, score=berk_jones(berk_jones_grid), score_name="berk_jones")
    parameters: dict[str, object] = {
        "direction": "positive",
        f"overall_{rate_name.replace(' ', '_')}": overall,
    }
    result = run_mdss(spec, ctx, inputs, parameters)
    if overall in (0.0, 1.0):
        result.warnings.append(
            f"every one of the {kind} has {recommendation} = {int(overall)}: the {rate_name} "
            "cannot differ between subgroups"
        )
    return result


def error_rate_evidence(outcome_class: int) -> MonitorHook:
    """Monitoring an FPR-Scan (outcome 0) or TPR-Scan (outcome 1): the overall rate is unknown,
    so the evidence conditions on the run's margins. Among the n rows of the outcome class, K
    are flagged; a subgroup holds m of the n rows and X of the flagged ones: under the null
    (every row flagged alike) X is hypergeometric, and a subgroup whose odds of being flagged
    are psi times the others' makes it Fisher's noncentral hypergeometric
    (:func:`fairscan.engine.evidence.hypergeometric_loglik`). Counts are whole rows, or a
    streamed dataset's distinct rows times their counts."""

    def hook(
        spec: FprScanSpec | TprScanSpec, data: PreparedData, roles: RoleArrays, profiles: Profiles
    ) -> RunEvidence:
        if roles.outcome is None or roles.recommendation is None:  # `needs` makes this unreachable
            raise ScanError("this scan needs an outcome and a recommendation column")
        counts = np.ones(roles.outcome.shape[0], dtype=np.int64)
        if data.row_weight is not None:
            counts = data.row_weight.astype(np.int64)
        in_class = np.where(roles.outcome == outcome_class, counts, 0)
        flagged = np.where(roles.recommendation == 1, in_class, 0)
        n, k = int(in_class.sum()), int(flagged.sum())
        # per profile, once: a subgroup's counts are then sums over its profiles (exact integers)
        class_by_profile = np.bincount(profiles.of_row, in_class, profiles.count).astype(np.int64)
        flagged_by_profile = np.bincount(profiles.of_row, flagged, profiles.count).astype(np.int64)

        def evidence(inside: np.ndarray) -> np.ndarray:
            from fairscan.engine.evidence import hypergeometric_loglik

            m, x = int(class_by_profile[inside].sum()), int(flagged_by_profile[inside].sum())
            return hypergeometric_loglik(x, n, k, m)

        return evidence

    return hook


def run_fpr_scan(spec: FprScanSpec, ctx: ScanContext) -> ScanResult:
    return run_error_rate_scan(spec, ctx, outcome_class=0)


def run_tpr_scan(spec: TprScanSpec, ctx: ScanContext) -> ScanResult:
    return run_error_rate_scan(spec, ctx, outcome_class=1)


FPR_SCAN = ScanType(
    type="fpr_scan",
    spec_model=FprScanSpec,
    runner=run_fpr_scan,
    needs=("outcome", "recommendation"),
    docs=ScanDocs(
        title="FPR-Scan",
        summary=(
            "Among true negatives (outcome = 0), finds the subgroup whose false positive rate "
            "(share recommended positive) most exceeds the overall false positive rate. "
            "Null hypothesis: every true negative is flagged with the overall FPR."
        ),
        reading=MDSS_READING,
    ),
    weights="counts",
    render=MDSS_HOOKS,
    p_value_floor=replicate_floor,
    monitor_evidence=error_rate_evidence(0),
)

TPR_SCAN = ScanType(
    type="tpr_scan",
    spec_model=TprScanSpec,
    runner=run_tpr_scan,
    needs=("outcome", "recommendation"),
    docs=ScanDocs(
        title="TPR-Scan",
        summary=(
            "Among true positives (outcome = 1), finds the subgroup whose true positive rate "
            "(share recommended positive) most exceeds the overall true positive rate. "
            "Null hypothesis: every true positive is flagged with the overall TPR."
        ),
        reading=MDSS_READING,
    ),
    weights="counts",
    render=MDSS_HOOKS,
    p_value_floor=replicate_floor,
    monitor_evidence=error_rate_evidence(1),
)
