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
from fairscan.report.models import ScanResult, count_significant, finite_or_none
from fairscan.report.text import fmt_p

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
        if corrected[i] > alpha and count_significant(scan.findings):
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
