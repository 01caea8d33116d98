"""lambda elicitation (App. C) and the detectability threshold (methods.md §2.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairscan.engine.critical import critical_value, detectability_threshold, unconstrained_llr
from fairscan.engine.elicitation import ElicitationError, disparity_cost_ratio, elicit_lambda


def test_single_answer_ratio():
    # x = 20, y = 55 - 50 = 5 -> 4 * 5 / 20 = 1
    assert disparity_cost_ratio([(40, 60, 55)]) == pytest.approx(1.0)
    est = elicit_lambda(2.0, [(40, 60, 55)])
    assert est.lam == pytest.approx(3.0)
    assert elicit_lambda(2.0, [(40, 60, 55)], side="positives").lam == pytest.approx(1.5)


@st.composite
def answers(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        z1 = draw(st.integers(0, 100))
        z2 = draw(st.integers(0, 100).filter(lambda z, z1=z1: z != z1 and (z + z1) % 2 == 0))
        z3 = draw(st.integers(math.ceil((z1 + z2) / 2), 100))
        out.append((z1, z2, z3))
    return out


@given(answers())
def test_multi_answer_formula_is_a_weighted_average_of_single_ratios(ans):
    """OLS through the origin = average of the single-answer ratios 4y/x weighted by x^2.

    (methods.md §4.10.7 says weights |z1 - z2|; the OLS formula it gives implies x^2.)
    """
    xs = [abs(a - b) for a, b, _ in ans]
    singles = [disparity_cost_ratio([a]) for a in ans]
    weighted = sum(x * x * r for x, r in zip(xs, singles, strict=True)) / sum(x * x for x in xs)
    assert disparity_cost_ratio(ans) == pytest.approx(weighted)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((40, 40, 50), "must differ"),
        ((41, 60, 55), "even"),
        ((40, 60, 45), "below the midpoint"),
        ((40, 60, 101), "between 0 and 100"),
    ],
)
def test_invalid_answers(answer, message):
    with pytest.raises(ElicitationError, match=message):
        disparity_cost_ratio([answer])


def test_detectability_threshold_solves_the_equation():
    """Invariant §2.7.8: F_old + Q(Delta_thresh) = h(alpha) when Delta_thresh > 1."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.6, 400)
    y = (rng.random(400) < p).astype(float)
    result = detectability_threshold(y, p, 0.05, profiles=50)
    assert result.delta_thresh > 1
    d = result.delta_thresh
    q = np.sum(np.log(d * p + 1 - p) - y * np.log(d))
    assert result.f_old + q == pytest.approx(critical_value(0.05, 50), rel=1e-8)
    f_old, u = unconstrained_llr(y, p)
    assert f_old >= 0 and result.q_mle == pytest.approx(math.exp(u))
    # Theorem 1: with probabilities inflated by Delta the subgroup's score reaches h(alpha)
    tilde = d * p / (d * p + 1 - p)
    score_at = max(0.0, f_old - np.sum(y) * np.log(d) + np.sum(np.log(d * p + 1 - p)))
    assert score_at == pytest.approx(critical_value(0.05, 50), rel=1e-8)
    assert np.all(tilde >= p)
