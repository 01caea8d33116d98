"""Adjusted p-values vs the step-up definitions of BH and BY (methods.md §1.5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.engine.multiple_testing import adjust_p_values


def _step_up_rejections(p: np.ndarray, alpha: float, c: float) -> set[int]:
    m = len(p)
    order = np.argsort(p, kind="stable")
    k = 0
    for i in range(1, m + 1):
        if p[order[i - 1]] <= i * alpha / (m * c):
            k = i
    return set(order[:k].tolist())


@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.sampled_from([0.01, 0.05, 0.1, 0.2])
)
def test_adjusted_p_values_reproduce_the_step_up_procedures(p, alpha):
    p = np.array(p)
    m = len(p)
    c_by = float(np.sum(1.0 / np.arange(1, m + 1)))
    for method, c in (("bh", 1.0), ("by", c_by)):
        adjusted = adjust_p_values(p, method)
        assert set(np.flatnonzero(adjusted <= alpha).tolist()) == _step_up_rejections(p, alpha, c)
        assert np.all(adjusted >= p - 1e-15) and np.all(adjusted <= 1.0)
    assert np.array_equal(adjust_p_values(p, "bonferroni"), np.minimum(1.0, m * p))


def test_known_values():
    # sorted 0.01, 0.03, 0.04, 0.5 -> m p / i = 0.04, 0.06, 0.0533, 0.5 -> step-down minimum
    p = np.array([0.01, 0.04, 0.03, 0.5])
    assert adjust_p_values(p, "bh") == pytest.approx([0.04, 4 * 0.04 / 3, 4 * 0.04 / 3, 0.5])
