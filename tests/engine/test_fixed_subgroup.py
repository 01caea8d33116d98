"""The test of one given subgroup (engine.fixed): exact tail, parametric draws, Type-I error."""

from __future__ import annotations

import numpy as np
import pytest
from brute_force import score_records
from scipy.stats import binom

from fairscan.engine.cells import compress
from fairscan.engine.fixed import EXACT, PARAMETRIC, fixed_test
from fairscan.engine.mdss import score_subgroup
from fairscan.engine.seeds import MdssStream, child_seed

CARD = np.array([4, 3], np.int32)


def _table(rng: np.random.Generator, n: int, constant: bool):
    codes = np.column_stack([rng.integers(0, k, n) for k in CARD]).astype(np.int32)
    p = np.full(n, 0.3) if constant else rng.uniform(0.1, 0.9, n).round(2)
    observed = (rng.random(n) < p).astype(np.float64)
    if constant:  # the FPR-Scan's expectation: the observed overall rate
        p = np.full(n, observed.mean())
    return codes, observed, p


def _selection(a: list[int], b: list[int]) -> np.ndarray:
    sel = np.zeros((2, 4), bool)
    sel[0, a] = True
    sel[1, b] = True
    return sel


def _p_value(codes, observed, expected, sel, direction=1, replicates=199, seed=0):
    cells = compress(codes, observed, expected, CARD)
    best = score_subgroup(cells, sel, direction, 0.0)
    return best, fixed_test(
        cells,
        sel,
        direction=direction,
        llr=best.llr,
        draw="binomial",
        seed=child_seed(np.random.SeedSequence(seed), MdssStream.FIXED, 0),
        replicates=replicates,
    )


def test_constant_expectation_is_the_exact_binomial_tail():
    rng = np.random.default_rng(1)
    codes, observed, expected = _table(rng, 3000, constant=True)
    sel = _selection([0], [0, 1])
    observed[(codes[:, 0] == 0) & (codes[:, 1] < 2)] = (
        rng.random(((codes[:, 0] == 0) & (codes[:, 1] < 2)).sum()) < 0.4
    )
    best, test = _p_value(codes, observed, expected, sel)
    inside = (codes[:, 0] == 0) & (codes[:, 1] < 2)
    n, c = int(inside.sum()), int(observed[inside].sum())
    assert test.method == EXACT
    assert test.p_value == pytest.approx(binom.sf(c - 1, n, expected[0]), rel=1e-12)
    # the statistic is the record-level likelihood ratio (the oracle's independent bisection)
    f, _ = score_records(observed[inside], expected[inside], "positive")
    assert best.llr == pytest.approx(f, rel=1e-7, abs=1e-9)


def test_per_row_probabilities_use_parametric_draws_restricted_to_the_subgroup():
    rng = np.random.default_rng(2)
    codes, observed, expected = _table(rng, 2000, constant=False)
    inside = codes[:, 0] == 1
    observed[inside] = (rng.random(inside.sum()) < np.minimum(expected[inside] + 0.08, 1)).astype(
        float
    )
    sel = _selection([1], [0, 1, 2])
    _, test = _p_value(codes, observed, expected, sel, replicates=999)
    assert test.method == PARAMETRIC and test.replicates == 999
    # independent: the Poisson-binomial tail by simulation of the rows themselves
    draws = (np.random.default_rng(9).random((20000, inside.sum())) < expected[inside]).sum(1)
    truth = (draws >= observed[inside].sum()).mean()
    assert test.p_value == pytest.approx(truth, abs=0.02)
    # seeded: the same seed gives the same p-value, another seed a different draw
    assert _p_value(codes, observed, expected, sel, replicates=999)[1] == test


def test_no_deviation_in_the_direction_is_p_one():
    rng = np.random.default_rng(3)
    codes, observed, expected = _table(rng, 1000, constant=True)
    inside = codes[:, 0] == 2
    observed[inside] = 0.0
    _, test = _p_value(codes, observed, expected, _selection([2], [0, 1, 2]))
    assert test.p_value == 1.0
    _, negative = _p_value(codes, observed, expected, _selection([2], [0, 1, 2]), direction=-1)
    assert negative.method == EXACT and negative.p_value < 1e-10


def _rejections(tables: int, constant: bool, seed: int) -> dict[float, float]:
    rng = np.random.default_rng(seed)
    sel = _selection([0, 1], [0])
    ps = []
    for t in range(tables):
        codes, observed, expected = _table(rng, 1500, constant)
        ps.append(_p_value(codes, observed, expected, sel, replicates=199, seed=t)[1].p_value)
    p = np.array(ps)
    return {alpha: float(np.mean(p <= alpha)) for alpha in (0.05, 0.1)}


@pytest.mark.slow
@pytest.mark.parametrize("constant", [True, False])
def test_type_one_error_fast(constant):
    """200 null tables: the rejection rate stays below alpha plus 3 standard errors."""
    rates = _rejections(200, constant, seed=11)
    for alpha, rate in rates.items():
        assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / 200), rates


@pytest.mark.slow
@pytest.mark.parametrize("constant", [True, False])
def test_type_one_error_over_1000_null_tables(constant):
    """1,000 null tables: within 3 simulation standard errors of alpha (methods: engine.fixed)."""
    rates = _rejections(1000, constant, seed=12)
    print(f"constant={constant}: rejection rates {rates}")
    for alpha, rate in rates.items():
        se = np.sqrt(alpha * (1 - alpha) / 1000)
        assert abs(rate - alpha) <= 3 * se, rates


def test_the_weighted_gap_bootstrap_with_unit_weights_is_the_unweighted_one() -> None:
    """Sample weights of 1 change nothing (same estimate, same resamples up to rounding);
    weights move the estimate to the weighted means."""
    import numpy as np

    from fairscan.engine.fixed import gap_bootstrap

    rng = np.random.default_rng(3)
    L = rng.random(400)
    inside = rng.random(400) < 0.3
    seed = np.random.SeedSequence(5)
    plain = gap_bootstrap(L, inside, theta=None, resamples=50, seed=seed)
    ones = gap_bootstrap(L, inside, theta=None, resamples=50, seed=seed, weight=np.ones(400))
    assert ones.estimate == pytest.approx(plain.estimate, rel=1e-12)
    assert ones.centred == pytest.approx(plain.centred, rel=1e-9, abs=1e-12)
    v = rng.uniform(0.2, 3.0, 400)
    weighted = gap_bootstrap(L, inside, theta=None, resamples=50, seed=seed, weight=v)
    want = np.average(L[inside], weights=v[inside]) - np.average(L, weights=v)
    assert weighted.estimate == pytest.approx(want, rel=1e-12)
