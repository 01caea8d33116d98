"""Error control across the scans of a spec (``gate.correction``, issue 25).

Each scan is one hypothesis ("no harmful subgroup in this scan"). Its p-value is its smallest
finding p-value, taken multiplicity-adjusted where the scan adjusts within itself (flag: BH/BY,
SubROC: the adjusted column), so it is a valid p-value for the scan's global null (for BH-adjusted
p-values, Simes' test). The scans' p-values are corrected together (Holm, Bonferroni or BH); a
scan whose corrected p-value exceeds alpha keeps its findings but none of them is significant.
Scans without any p-value (certify, shift) are neither counted nor changed. Kept free of the API so
that the verdict module calls it in one place.
"""

from __future__ import annotations

import numpy as np

from fairscan.engine.multiple_testing import adjust_p_values
from fairscan.report.models import Finding, ScanResult, count_significant, finite_or_none
from fairscan.report.text import fmt_p
from fairscan.report.verdict import exceeds, untested_reason

CORRECTIONS = ("none", "holm", "bonferroni", "bh")


def scan_p_value(scan: ScanResult) -> float | None:
    """The scan's own p-value: its smallest (within-scan adjusted) finding p-value, or None."""
    values = [
        f.adjusted_p_value if f.adjusted_p_value is not None else f.p_value for f in scan.findings
    ]
    finite = [v for v in values if v is not None]
    return min(finite) if finite else None


def correct_scans(scans: list[ScanResult], correction: str, alpha: float) -> list[ScanResult]:
    """The scans with ``p_value`` / ``corrected_p_value`` set and, where the corrected p-value
    exceeds ``alpha``, no significant finding (status recomputed). ``none``: unchanged."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown gate.correction {correction!r}")
    if correction == "none":
        return scans
    own = [scan_p_value(s) if s.status != "error" else None for s in scans]
    tested = [i for i, p in enumerate(own) if p is not None]
    corrected: dict[int, float] = {}
    if tested:
        adj = adjust_p_values(np.array([own[i] for i in tested], dtype=np.float64), correction)
        corrected = {i: float(a) for i, a in zip(tested, adj, strict=True)}
    out = []
    for i, scan in enumerate(scans):
        if i not in corrected:
            out.append(scan)
            continue
        update: dict[str, object] = {
            "p_value": finite_or_none(own[i]),
            "corrected_p_value": corrected[i],
        }
        if exceeds(corrected[i], alpha) and count_significant(scan.findings):
            update["findings"] = [
                f.model_copy(update={"significant": False}) if f.significant else f
                for f in scan.findings
            ]
            update["status"] = "not_significant"
            update["warnings"] = [
                *scan.warnings,
                f"not significant after gate.correction {correction} over {len(tested)} "
                f"scans: corrected p-value {fmt_p(corrected[i], precise=True)} > alpha "
                f"{alpha:g} (own p-value {fmt_p(own[i], precise=True)})",
            ]
        out.append(scan.model_copy(update=update))
    return out


# --- Untested scans (issue 34): a test that cannot reach alpha is no evidence of absence ------


def given_floor(finding: Finding) -> float | None:
    """The smallest p-value of a given subgroup's own test (None: not a given subgroup): 0 for
    an exact or analytic test, 1 / (R + 1) for R simulated draws, 1 when untested."""
    block = finding.detail.get("given_subgroup")
    if not isinstance(block, dict):
        return None
    if finding.p_value is None:
        return 1.0
    # the most draws the test could run (a sequential test stops early: `replicates` ran)
    draws = block.get("max_replicates", block.get("replicates"))
    if not isinstance(draws, int) or draws <= 0:
        return 0.0
    return 1.0 / (draws + 1)


def result_floor(scan: ScanResult, declared: float | None) -> float | None:
    """A scan's smallest reachable p-value: ``declared`` by its type for ``replicates`` (None:
    no randomization test), or, for given subgroups, the smallest of their own tests' floors."""
    if declared is None:
        return None
    floors = [given_floor(f) for f in scan.findings]
    if floors and all(f is not None for f in floors):
        return min(f for f in floors if f is not None)
    return declared


def mark_untested(scans: list[ScanResult], correction: str, alpha: float) -> list[ScanResult]:
    """The scans with status ``untested`` and an ``untested_reason`` where even their smallest
    possible p-values (every scan's ``p_value_floor``, exact tests at 0), corrected together
    as :func:`correct_scans` corrects them, exceed ``alpha``. A scan that found nothing, one
    that failed and one without a randomization test stay as they are."""
    counted = [
        i
        for i, s in enumerate(scans)
        if s.status != "error" and (s.p_value_floor is not None or scan_p_value(s) is not None)
    ]
    floors = np.array([scans[i].p_value_floor or 0.0 for i in counted], dtype=np.float64)
    best = dict(zip(counted, adjust_p_values(floors, correction), strict=True))
    out = []
    for i, scan in enumerate(scans):
        floor = scan.p_value_floor
        reachable = floor is None or i not in best or not exceeds(float(best[i]), alpha)
        if scan.status in ("error", "no_finding", "not_auditable") or reachable:
            out.append(scan)
            continue
        assert floor is not None
        reason = untested_reason(floor, float(best[i]), alpha, correction, len(counted))
        out.append(scan.model_copy(update={"status": "untested", "untested_reason": reason}))
    return out
