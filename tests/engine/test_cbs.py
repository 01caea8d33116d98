"""CBS engine invariants (methods.md §3.11) on simulated data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairscan.engine import cbs


def simulate(n: int = 1500, seed: int = 0, bias: float = 0.0, independent: bool = False):
    """Covariates x (3 categorical), A depending on x (unless independent), Y, P, P_bin."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack(
        [rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)]
    ).astype(np.int32)
    onehot = np.column_stack([codes[:, 0], codes[:, 1] == 1, codes[:, 1] == 2, codes[:, 2]]).astype(
        float
    )
    lin = onehot @ np.array([0.6, -0.4, 0.5, 0.3]) - 0.3
    a_lin = 0.0 if independent else onehot @ np.array([0.8, 0.5, -0.5, 0.0]) - 0.5
    a = rng.random(n) < 1 / (1 + np.exp(-a_lin))
    y = (rng.random(n) < 1 / (1 + np.exp(-lin))).astype(float)
    pred_lin = lin + rng.normal(0, 0.5, n) + bias * (a & (codes[:, 0] == 1))
    p = 1 / (1 + np.exp(-pred_lin))
    data = cbs.CbsData(
        codes=codes,
        features=onehot,
        outcome=y,
        prediction=p,
        recommendation=(p >= 0.5).astype(float),
    )
    return data, a


def settings(**kw):
    base = {
        "family": "separation",
        "on": "recommendations",
        "condition": 0,
        "event": 1,
        "direction": 1,
        "penalty": 1.0,
        "restarts": 20,
    }
    base.update(kw)
    return cbs.CbsSettings(**base)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (
            {"condition": 0, "event": 1, "direction": 1},
            {"condition": 0, "event": 0, "direction": -1},
        ),  # 5/6
        (
            {"condition": 1, "event": 1, "direction": -1},
            {"condition": 1, "event": 0, "direction": 1},
        ),  # 2/3
        (
            {"family": "sufficiency", "condition": 1, "event": 1, "direction": -1},
            {"family": "sufficiency", "condition": 1, "event": 0, "direction": 1},
        ),  # 8/11
        (
            {
                "family": "sufficiency",
                "on": "predictions",
                "condition": None,
                "event": 1,
                "direction": -1,
            },
            {
                "family": "sufficiency",
                "on": "predictions",
                "condition": None,
                "event": 0,
                "direction": 1,
            },
        ),  # 7/10
    ],
)
def test_cell_pairs_are_identical_up_to_q_inverse(one, other):
    """§3.11 item 2: same S*, same F, q -> 1/q."""
    data, a = simulate(bias=1.0, seed=1)
    r1 = cbs.run(data, settings(**one), a, seed=5)
    r2 = cbs.run(data, settings(**other), a, seed=5)
    assert r1.best is not None and r2.best is not None
    assert np.array_equal(r1.best.selection, r2.best.selection)
    assert r1.best.llr == pytest.approx(r2.best.llr, rel=1e-7, abs=1e-9)
    assert r1.best.llr >= 0.0
    if r1.best.llr > 0:
        assert r1.best.log_q == pytest.approx(-r2.best.log_q, rel=1e-6, abs=1e-8)


def test_case_b_with_binary_labels_equals_case_a():
    """§3.11 item 3: soft (duplicated, weighted) rows with P in {0, 1} = the plain weighted fit."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 3))
    label = (rng.random(400) < 1 / (1 + np.exp(-x[:, 0]))).astype(float)
    w = rng.uniform(0.2, 3.0, 400)
    x_new = rng.normal(size=(50, 3))
    _, hard = cbs.fit_predict("logistic", x, label, w, x_new)
    _, soft = cbs.fit_predict("logistic", x, label, w, x_new, soft=True)
    np.testing.assert_allclose(soft, hard, atol=1e-5)


def test_expectations_are_probabilities_and_gaussian_sigma_rule():
    data, a = simulate(seed=3, bias=0.5)
    s = settings(on="predictions", condition=0)
    est = cbs.estimate(data, s, a)
    assert est.auditable
    assert np.all((est.expected >= 0) & (est.expected <= 1))
    delta = cbs.logit(data.prediction[est.protected]) - cbs.logit(est.expected)
    np.testing.assert_allclose(est.observed, delta)
    assert est.sigma == pytest.approx(np.std(delta, ddof=1))
    # ATT weights p/(1-p) of the propensity model on the comparison rows
    pa = np.clip(est.propensity, 1e-6, 1 - 1e-6)[est.comparison]
    np.testing.assert_allclose(est.weights, pa / (1 - pa))
    out = cbs.run(data, settings(on="predictions", condition=0, restarts=30), a, seed=1)
    # the biased subgroup (codes[:, 0] == 1) is what the Gaussian scan finds
    sel = out.best.selection
    assert out.best.llr > 10
    assert sel[0, 1] and not sel[0, 0]


def test_large_n_independent_a_recovers_the_true_conditional_mean():
    """§3.11 item 4: with A independent of everything and large n, I-hat ~ E[I | C, X]."""
    data, a = simulate(n=20000, seed=4, independent=True)
    # E[P_bin | Y = 0, X] per profile (the logistic model is saturated enough here)
    est = cbs.estimate(data, settings(), a)
    rows = est.protected
    key = data.codes[rows] @ np.array([6, 2, 1])
    truth = {}
    allkey = data.codes @ np.array([6, 2, 1])
    for k in np.unique(key):
        m = (allkey == k) & (data.outcome == 0)
        truth[k] = data.recommendation[m].mean()
    want = np.array([truth[k] for k in key])
    assert np.max(np.abs(est.expected - want)) < 0.05


def test_not_auditable_cases():
    data, a = simulate(seed=5)
    constant = cbs.CbsData(
        codes=data.codes,
        features=data.features,
        outcome=data.outcome,
        prediction=data.prediction,
        recommendation=np.zeros(len(a)),
    )
    out = cbs.run(constant, settings(), a, seed=0)
    assert not out.estimate.auditable and out.statistic == 0.0
    assert "constant" in out.estimate.reason
    out = cbs.run(data, settings(), np.zeros(len(a), bool), seed=0)
    assert not out.estimate.auditable and "no protected" in out.estimate.reason


def test_permutation_replicates_are_seeded_and_index_addressed():
    data, a = simulate(n=600, seed=6)
    job = cbs.CbsPermutation(data, a, settings(restarts=5), np.random.SeedSequence(9))
    first = [job(i) for i in range(4)]
    again = [job(i) for i in (3, 1, 0, 2)]
    assert first == [again[2], again[1], again[3], again[0]]
    assert all(v >= 0.0 for v in first)


@pytest.mark.slow
def test_permutation_p_values_are_roughly_uniform_under_independence():
    """§3.11 item 6: A independent of (X, Y, P) -> permutation p-values ~ U(0, 1)."""
    from fairscan.engine.randomization import child_seed, search_seed, summarize

    pvals = []
    for rep in range(30):
        data, a = simulate(n=300, seed=100 + rep, independent=True)
        # penalty 0: J* > 0 almost surely, so p-values have no atom at 1 from 0 = 0 ties
        s = settings(restarts=3, penalty=0.0)
        root = np.random.SeedSequence(rep)
        obs = cbs.run(data, s, a, search_seed(child_seed(root, 0))).statistic
        job = cbs.CbsPermutation(data, a, s, child_seed(root, 1))
        null = np.array([job(i) for i in range(19)])
        pvals.append(summarize(obs, null, 0.05).p_value)
    pvals = np.array(pvals)
    # discrete p-values on {k / 20}: compare with the uniform law on that grid
    assert stats.kstest(pvals - 0.025, "uniform").pvalue > 0.01
    assert 0.3 < pvals.mean() < 0.7


def test_semi_synthetic_detection_uses_whole_table_membership():
    """cbs_synth maps the detected subgroup back to all rows (ScanProblem.rows_in): a strong
    separation bias is recovered exactly."""
    from fairscan.engine.cbs_synth import Injection, evaluate_once, generate

    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, k, 3000) for k in (2, 3, 4, 3)])
    for seed in range(2):
        dataset = generate(codes, Injection(mu_sep=1.0), np.random.default_rng(seed))
        accuracy = evaluate_once(dataset, ["sep-rec", "sep-pred"], 20, 1.0, seed=0)
        assert accuracy == {"sep-rec": 1.0, "sep-pred": 1.0}
