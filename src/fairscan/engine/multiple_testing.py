"""Multiple-testing corrections (methods.md §1.5): Bonferroni, Holm, Benjamini-Hochberg,
Benjamini-Yekutieli."""

from __future__ import annotations

import numpy as np


def adjust_p_values(p: np.ndarray, method: str) -> np.ndarray:
    """BH, BY, Holm or Bonferroni adjusted p-values (methods.md §1.5); ``none`` returns them."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, m * p)
    if method == "holm":  # step-down: max_{j <= i} (m - j + 1) p_(j)
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
        out = np.empty(m)
        out[order] = np.minimum(1.0, stepped)
        return out
    if method not in ("bh", "by"):
        raise ValueError(f"unknown correction {method!r}")
    c = float(np.sum(1.0 / np.arange(1, m + 1))) if method == "by" else 1.0
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m * c / np.arange(1, m + 1)
    adj = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(1.0, adj)
    return out
