"""Scan type ``shift`` (methods.md §5.8-§5.10): bounds on a metric's gap under covariate shift,
valid simultaneously over every non-negative tilt in the unit ball of a Gaussian-kernel RKHS
(Cherian & Candès Section 5, Algorithms 5 and 8).

* :mod:`.spec`: the spec model (metric as ``certify``, features, kernel, tilts);
* :mod:`.runner`: validate -> inputs -> :mod:`fairscan.engine.rkhs` -> result;
* :mod:`.models`: the ``detail`` models (t*, kernel, tilts, worst case);
* :mod:`.render`: the Markdown and HTML render hooks (tilt table, worst-case plot).

Findings: one per named tilt (``group`` = its name), significant when its bound excludes 0 on
the harmful side (``side: lower``: lower bound > 0; ``upper``: upper bound < 0; ``both``:
either), i.e. a certified disparity under that shift. The statistic is the lower bound
(``lower``), the upper bound (``upper``) or the gap estimate (``both``; both bounds are in the
finding's detail). With no named tilt the scan reports t* and the worst case, status
``no_finding``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairscan.metric_table import NEEDS_DOC
from fairscan.scans.base import Retest, ScanDocs, ScanType, lazy_exports_of, lazy_hooks, lazy_runner
from fairscan.scans.metric_inputs import needs
from fairscan.scans.shift.spec import ShiftSpec, extra_columns

if TYPE_CHECKING:
    from fairscan.report.models import Finding


def _retest_effect(finding: Finding) -> float | None:
    """A shift finding's effect for a re-test's power: its gap (estimate)."""
    value = finding.detail.get("estimate")
    return float(value) if isinstance(value, int | float) else None


SHIFT = ScanType(
    type="shift",
    spec_model=ShiftSpec,
    runner=lazy_runner("fairscan.scans.shift.runner", "run_shift"),
    needs=needs,
    docs=ScanDocs(
        title="Bounds under distribution shift (RKHS tilts)",
        summary=(
            "Simultaneously valid bounds on a metric's gap under every non-negative covariate tilt "
            "in the unit ball of a Gaussian-kernel RKHS, for named shifts and the worst case "
            "(Cherian & Candès, Algorithms 5 and 8)."
        ),
        reading=(
            "Each named tilt reweights the audited rows toward its kernel centers. The lower (upper) "
            "bound holds simultaneously for every such shift at level 1 - alpha; a lower bound above "
            "0 (an upper bound below 0 for side upper) certifies a disparity under that shift. t* "
            "and the worst-case tilt (where the bootstrap's least favourable direction puts its "
            "weight) are in the scan's detail."
        ),
        null_hypothesis=(
            "none tested: confidence bounds, valid at once for every non-negative shift of the "
            "features in the kernel's unit ball; a named shift is a significant finding when its "
            "bound proves a gap (a lower bound above 0, or an upper bound below 0)."
        ),
        needs=NEEDS_DOC,
    ),
    retest=Retest(effect=_retest_effect),
    extra_columns=extra_columns,
    render=lazy_hooks("fairscan.scans.shift.render", "SHIFT_HOOKS"),
    weights="fractional",
)

__all__ = ["SHIFT", "ShiftResult", "ShiftSpec", "TiltResult"]

# detail models, renderers and the runner load on first use (start-up cost)
__getattr__ = lazy_exports_of(
    {
        "fairscan.scans.shift.models": (
            "ShiftResult",
            "TiltResult",
        ),
        "fairscan.scans.shift.render": ("SHIFT_HOOKS",),
    }
)
