"""Given subgroups (``subgroups:``) outside the Bernoulli MDSS runner: what every scan type's
fixed-subgroup test reports, in one place (issue 26).

Each scan type computes, for each given subgroup, its own statistic and a p-value for that one
subgroup under its own null (no search, so no search correction). This module turns those
figures into the finding's ``detail.given_subgroup`` block and the scan's ``mode`` parameters,
the same for every type, so the report, the baseline re-test (:mod:`fairscan.run.retest`) and
the labels (:mod:`fairscan.report.baseline`) read one shape:

* ``index``: the subgroup's position in ``subgroups:``;
* ``test``: the test in words; ``replicates`` and ``exceed_count`` where it is simulated;
* ``effect_size``: the scan's effect on a scale where 0 is no effect (log odds multiplier,
  mean shift, AUC gap, metric gap), which the re-test compares with the baseline's;
* ``power``, ``power_at``, ``baseline_effect_size`` and ``power_method``: only in a re-test,
  the power of this test at the run's level to detect the baseline finding's effect, and how
  it was computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.data.table import EncodedAttribute
from fairscan.report.models import Finding, ScanResult, scan_status
from fairscan.report.text import p_equals

GIVEN_NOTE = (
    "given subgroup tested alone under the scan's null model: no search, so no search "
    "correction applies"
)


def monte_carlo_p(observed: float, null: np.ndarray) -> tuple[float, int]:
    """(1 + #{null >= observed}) / (1 + R) with a relative tie tolerance, and the count."""
    tol = 1e-9 * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(null >= observed - tol))
    return (1 + exceed) / (1 + len(null)), exceed


def simulated_power(null: np.ndarray, alternative: np.ndarray, alpha: float) -> float:
    """Share of the alternative's statistics whose Monte Carlo p-value against ``null`` is at
    most ``alpha`` (the same rule as the observed test)."""
    ordered = np.sort(null)
    tol = 1e-9 * np.maximum(1.0, np.abs(alternative))
    exceed = len(ordered) - np.searchsorted(ordered, alternative - tol, side="left")
    return float(np.mean((1 + exceed) / (1 + len(ordered)) <= alpha))


def given_finding(
    finding: Finding,
    *,
    subgroup: dict[str, list[str]],
    attributes: Sequence[EncodedAttribute],
    index: int,
    p_value: float | None,
    alpha: float,
    test: str,
    effect_size: float | None,
    replicates: int = 0,
    exceed_count: int | None = None,
    power: tuple[float | None, float, float] | None = None,
    power_method: str | None = None,
    max_replicates: int | None = None,
) -> Finding:
    """``finding`` as given subgroup ``index``: its subgroup and label, its p-value (no search
    correction), and the ``given_subgroup`` block. ``power``: (power, the baseline effect as the
    test's parameter, the baseline effect size) where a re-test asked for it."""
    figures: dict[str, Any] = {
        "index": index,
        "test": test,
        "replicates": replicates,
        "exceed_count": exceed_count,
        "effect_size": effect_size,
        "note": GIVEN_NOTE,
    }
    if max_replicates is not None:  # the sequential rule stopped the draws (issue 36)
        figures["max_replicates"] = max_replicates
    if power is not None:
        figures["power"], figures["power_at"], figures["baseline_effect_size"] = power
        figures["power_method"] = power_method
    p_text = p_equals(p_value, "untested", precise=True)
    return finding.model_copy(
        update={
            "subgroup": subgroup,
            "group": None,
            "label": subgroup_label(subgroup, attributes),
            "p_value": p_value,
            "adjusted_p_value": None,
            "significant": None if p_value is None else p_value <= alpha,
            "description": f"{finding.description} Given subgroup ({test}, {p_text}; no "
            "search, so no search correction).",
            "detail": {**finding.detail, "given_subgroup": figures},
        }
    )


def given_result(result: ScanResult, findings: list[Finding], tests: Sequence[str]) -> ScanResult:
    """The scan result of given subgroups: its findings in the order given, the status from
    them, and the tests used named in the parameters."""
    tested = all(f.p_value is not None for f in findings)
    return result.model_copy(
        update={
            "findings": findings,
            "status": scan_status(findings, tested=tested, found=bool(findings)),
            "null_distribution": None,
            "parameters": {
                **result.parameters,
                "mode": "given subgroups",
                "given_subgroup_tests": sorted(set(tests)),
            },
            "warnings": [
                *result.warnings,
                *(
                    f"the given subgroup {f.label} has no rows among the scanned ones"
                    for f in findings
                    if f.size == 0
                ),
            ],
        }
    )


__all__ = ["GIVEN_NOTE", "given_finding", "given_result", "monte_carlo_p", "simulated_power"]
