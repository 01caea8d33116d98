"""Multiple-testing corrections (methods.md §1.5): Bonferroni, Benjamini-Hochberg, Benjamini-Yekutieli."""

from __future__ import annotations

import numpy as np


def adjust_p_values(p: np.ndarray, method: str) -> np.ndarray:
    """BH, BY or Bonferroni adjusted p-values (methods.md §1.5)."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, m * p)
    c = float(np.sum(1.0 / np.arange(1, m + 1))) if method == "by" else 1.0
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m * c / np.arange(1, m + 1)
    adj = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(1.0, adj)
    return out
