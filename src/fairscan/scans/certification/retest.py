"""The baseline re-test of a ``flag`` finding (issue 26): the baseline's flagged group read
again in this run, which evaluates the same named group on the new data.

A re-test asks about one group chosen before the new data were seen, so its p-value is the
group's own App. C p-value (methods.md §5.6 step 3), not the BH-adjusted one of the whole
collection: p = 1 - Phi((eps_hat - eps_0) / s*) (side above; below and two-sided mirrored).
Its power to detect the baseline gap g at level alpha, with this run's MAD scale s*, is
1 - Phi(z_{1 - alpha} - (g - eps_0) / s*) (above; mirrored for below and two-sided).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

from fairscan.report.models import Finding, ScanResult
from fairscan.report.text import p_equals

TEST = "the group's App. C p-value in this run (one named group: no BH/BY over the collection)"
POWER = "normal approximation at this run's MAD scale s*"


def _power(gap: float, tolerance: float, scale: float, side: str, alpha: float) -> float:
    normal = NormalDist()
    z = normal.inv_cdf(1.0 - alpha)
    if side == "below" or (side not in ("above", "below") and gap < 0):
        bound = tolerance if side == "below" else -abs(tolerance)
        return normal.cdf((bound - gap) / scale - z)
    bound = tolerance if side == "above" else abs(tolerance)
    return 1.0 - normal.cdf(z - (gap - bound) / scale)


def retest_flag(before: Finding, scan: ScanResult) -> tuple[Finding | None, str]:
    """(the re-test of ``before`` in this run's ``scan``, at its alpha, or None and why)."""
    detail: dict[str, Any] = scan.detail.get("certification", {})
    alpha = float(detail.get("alpha", scan.parameters.get("alpha", 0.05)))
    name = before.detail.get("name", before.group or before.label)
    group = next((g for g in detail.get("groups", []) if g.get("name") == name), None)
    if group is None:
        return None, f"the group {name!r} is not in this run's collection"
    p, scale, gap = group.get("p_value"), group.get("scale"), group.get("gap")
    if p is None or scale is None or gap is None or not scale > 0:
        return None, f"the group {name!r} is not tested now ({group.get('status')})"
    old_gap = before.detail.get("gap")
    given: dict[str, Any] = {
        "index": 0,
        "test": TEST,
        "replicates": detail.get("bootstrap"),
        "effect_size": gap,
    }
    if isinstance(old_gap, int | float):
        given["power"] = _power(
            float(old_gap), float(detail["tolerance"]), float(scale), str(detail["side"]), alpha
        )
        given.update(power_at=old_gap, baseline_effect_size=old_gap, power_method=POWER)
    estimate = group.get("estimate")
    after = before.model_copy(
        update={
            "size": int(group.get("size", 0)),
            "p_value": float(p),
            "adjusted_p_value": None,
            "significant": float(p) <= alpha,
            "statistic": before.statistic.model_copy(update={"value": gap}),
            "effect": before.effect.model_copy(
                update={"inside": estimate, "inside_count": int(group.get("size", 0))}
            ),
            "description": f"{name}: gap {gap:+.4g} now, {p_equals(float(p), precise=True)} ({TEST}).",
            "detail": {**group, "given_subgroup": given},
        }
    )
    return after, ""
