"""SubROC (methods.md §6): top-k interpretable subgroups where a soft classifier under-performs
by ROC AUC, PR AUC or average ranking loss, found on a search split and filtered by a
random-subset significance test on a validation split.

Choices (documented in the scan's parameters and the report):

* ``split`` — ``{column, search, validation}`` reads a split column (rows with other values are
  ignored, with a warning); ``{fraction: f}`` draws a stratified (by outcome) random search set
  of share ``f`` from the scan's seed. No ``split`` = ``{fraction: 0.5}`` (methods.md §6.1 [REC]).
* Numeric attributes are binned by the shared data layer on all filtered rows (search and
  validation together). The paper bins on the search set; the bins depend on the attribute
  values only (never on outcomes or scores), so pooling leaks nothing the test relies on, and
  the same selector definitions apply to both splits as §6.6 requires.
* Only patterns with a (GA) score > 0 are candidates (methods.md §6.6 step 1): a pattern with
  score <= 0 does not under-perform (or is explained by a generalisation), so it is neither
  tested nor counted in the multiple-testing correction; the search keeps the top-k' of them
  (fewer when fewer score > 0; ``candidates_tested`` in the detail says how many). The
  reported patterns are the findings; every tested candidate stays in
  ``scans[].detail["subroc"]``.
* ``--replicates 0`` (top-level ``significance.replicates: 0``) also switches this scan's test off.

Modules: :mod:`.spec` (spec models), :mod:`.runner` (validate -> inputs -> engine -> result),
:mod:`.models` (``detail`` models), :mod:`.render` (Markdown/HTML hooks).
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
from fairscan.scans.subroc.spec import (
    SubrocSignificanceSpec,
    SubrocSpec,
    SubrocSplitSpec,
    extra_columns,
)

if TYPE_CHECKING:
    from fairscan.report.models import Finding


def _retest_effect(finding: Finding) -> float | None:
    """A SubROC finding's effect for a re-test's power: its raw relative score (the AUC gap),
    on the validation set for a searched pattern (the search set's is selected, so biased)."""
    given = finding.detail.get("given_subgroup")
    value = given.get("effect_size") if given else finding.detail.get("validation_statistic")
    return float(value) if isinstance(value, int | float) else None


def _p_value_floor(spec: SubrocSpec, replicates: int) -> float:
    """The holdout random-subset test's smallest p-value: its own ``significance.subsets``
    (``replicates`` 0 switches it off); the paper's #{null >= observed} / R can reach 0."""
    subsets = spec.significance.subsets if replicates > 0 else 0
    if spec.significance.paper_pvalue and subsets > 0:
        return 0.0
    return replicate_floor(spec, subsets)


SUBROC = ScanType(
    type="subroc",
    spec_model=SubrocSpec,
    runner=lazy_runner("fairscan.scans.subroc.runner", "run_subroc"),
    p_value_floor=_p_value_floor,
    needs=("outcome", "score"),
    docs=ScanDocs(
        title="SubROC",
        summary=(
            "Finds the top-k subgroups (conjunctions of attribute = value) where a soft classifier "
            "ranks worst by ROC AUC, PR AUC or average ranking loss, weighted by size and class "
            "balance and net of generalisations; keeps those whose performance on a validation "
            "split is significantly worse than random subsets with the same class counts."
        ),
        reading=(
            "The report lists the top-k patterns with their measure on the search and validation "
            "splits, the relative score (overall minus subgroup) and a p-value adjusted for "
            "multiple testing; a pattern is significant when the adjusted p-value <= alpha."
        ),
        null_hypothesis="the subgroup performs like a random subset of the same size and class balance.",
    ),
    retest=Retest(effect=_retest_effect),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.subroc.render", "SUBROC_HOOKS"),
    weights="fractional",
)

__all__ = [
    "SUBROC",
    "SubrocCover",
    "SubrocFindingDetail",
    "SubrocPattern",
    "SubrocResult",
    "SubrocRoc",
    "SubrocSignificanceSpec",
    "SubrocSpec",
    "SubrocSplitSpec",
    "reported_mask",
    "roc_points",
    "run_subroc",
]


# detail models, renderers and the runner load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.subroc.runner": ("reported_mask", "roc_points", "run_subroc"),
        "fairscan.scans.subroc.models": (
            "SubrocCover",
            "SubrocFindingDetail",
            "SubrocPattern",
            "SubrocResult",
            "SubrocRoc",
        ),
        "fairscan.scans.subroc.render": ("SUBROC_HOOKS",),
    }
)
