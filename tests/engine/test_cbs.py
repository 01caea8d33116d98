"""CBS engine invariants (methods.md §3.11) on simulated data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairscan.engine import cbs
from fairscan.engine.seeds import child_seed


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
    hard = cbs.fit_predict("logistic", x, label, w, x_new).predicted
    soft = cbs.fit_predict("logistic", x, label, w, x_new, soft=True).predicted
    np.testing.assert_allclose(soft, hard, atol=1e-5)


def test_expectations_are_probabilities_and_gaussian_sigma_rule():
    data, a = simulate(seed=3, bias=0.5)
    s = settings(on="predictions", condition=0)
    est = cbs.estimate(data, s, a)
    assert est.auditable
    assert np.all((est.expected >= 0) & (est.expected <= 1))
    delta = cbs.logit(data.prediction[est.protected]) - cbs.logit(est.expected)
    np.testing.assert_allclose(est.observed, delta)
    assert est.sigma == 1.0  # the default: the paper's reported scores (methods.md §3.5)
    sd = cbs.estimate(data, settings(on="predictions", condition=0, sigma="sd"), a)
    np.testing.assert_allclose(sd.observed, delta)
    assert sd.sigma == pytest.approx(np.std(delta, ddof=1))
    assert cbs.estimate(data, settings(on="predictions", condition=0, sigma=0.5), a).sigma == 0.5
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


def test_gaussian_score_is_the_closed_form_for_any_sigma_rule():
    """F(S) = (sum Delta)^2 / (2 sigma^2 |S|) in the positive direction, whatever the rule."""
    data, a = simulate(seed=3, bias=0.8)
    for rule in (1.0, "sd", 0.3):
        out = cbs.run(data, settings(on="predictions", condition=0, restarts=20, sigma=rule), a, 1)
        assert out.best is not None and out.problem is not None
        inside = out.problem.members(out.best.selection)
        delta = out.estimate.observed[inside]
        closed = delta.sum() ** 2 / (2 * out.estimate.sigma**2 * len(delta))
        assert out.best.llr == pytest.approx(closed, rel=1e-9)
        assert out.best.log_q == pytest.approx(delta.mean(), rel=1e-9)


def test_sd_rule_with_constant_delta_is_degenerate_but_a_fixed_sigma_is_not():
    """methods.md §3.5: all Delta equal makes the SD rule degenerate (not auditable, F = 0);
    a fixed sigma scores the same data."""
    data, a = simulate(seed=7)
    constant = cbs.CbsData(
        codes=data.codes,
        features=data.features,
        outcome=data.outcome,
        prediction=np.where(a, 0.3, data.prediction),  # constant on the protected rows
        expectations=np.full(len(a), 0.2),
    )
    s = settings(on="predictions", condition=0, direction=1)
    out = cbs.run(constant, settings(on="predictions", condition=0, sigma="sd"), a, 0)
    assert not out.estimate.auditable and "SD rule of sigma is degenerate" in out.estimate.reason
    assert out.statistic == 0.0
    fixed = cbs.run(constant, s, a, 0)
    assert fixed.estimate.auditable and fixed.estimate.sigma == 1.0
    n = int(fixed.estimate.protected.sum())
    delta = cbs.logit(np.array([0.3]))[0] - cbs.logit(np.array([0.2]))[0]
    assert fixed.best.llr == pytest.approx(n * delta**2 / 2, rel=1e-9)  # the full set


def _irls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Unregularised weighted logistic MLE by Newton's method (an independent reference)."""
    design = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(design.shape[1])
    for _ in range(100):
        prob = 1 / (1 + np.exp(-(design @ beta)))
        grad = design.T @ (w * (y - prob))
        hess = (design * (w * prob * (1 - prob))[:, None]).T @ design
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return beta


def test_default_logistic_fit_is_unregularised_and_l2_is_an_option():
    rng = np.random.default_rng(11)
    x = np.eye(4)[rng.integers(0, 4, 300)][:, 1:]
    label = (rng.random(300) < 1 / (1 + np.exp(-(x @ np.array([1.5, -1.0, 0.5]) - 0.2)))).astype(
        float
    )
    w = rng.uniform(0.2, 3.0, 300)
    beta = _irls(x, label, w)
    want = 1 / (1 + np.exp(-(np.column_stack([np.ones(300), x]) @ beta)))
    fit = cbs.fit_predict("logistic", x, label, w, x)
    assert fit.note is None
    np.testing.assert_allclose(fit.predicted, want, atol=1e-6)
    l2 = cbs.fit_predict("logistic", x, label, w, x, regularization="l2", c=0.05).predicted
    assert np.max(np.abs(l2 - want)) > 0.02  # a strong ridge shrinks towards the mean
    # the ridge fallback applies to regularization "none" only
    assert cbs.fit_predict("logistic", x, label, w, x, regularization="l2", c=1.0).note is None


def test_separation_falls_back_to_a_tiny_ridge_with_a_note():
    """A profile whose rows all have label 0 has no finite MLE: the unregularised fit diverges,
    the ridge refit keeps the predictions finite (and close to 0 there), and says so."""
    rng = np.random.default_rng(12)
    codes = rng.integers(0, 4, 400)
    x = np.eye(4)[codes][:, 1:]
    label = (rng.random(400) < 0.4).astype(float)
    label[codes == 3] = 0.0
    fit = cbs.fit_predict("logistic", x, label, np.ones(400), x)
    assert fit.note is not None and "tiny ridge" in fit.note and "separation" in fit.note
    assert np.all(np.isfinite(fit.predicted))
    assert 0 < fit.predicted[codes == 3].max() < 1e-3
    # the other profiles keep (almost) their unregularised fit: the observed rates
    for level in range(3):
        assert fit.predicted[codes == level][0] == pytest.approx(
            label[codes == level].mean(), abs=1e-3
        )
    # through the pipeline: the note reaches the estimate
    data, a = simulate(seed=13)
    rec = data.recommendation.copy()
    rec[(data.codes[:, 1] == 2) & ~a] = 0.0  # one profile all 0 among the comparison rows
    sep = cbs.CbsData(data.codes, data.features, data.outcome, data.prediction, rec)
    est = cbs.estimate(sep, settings(), a)
    assert est.auditable and any("outcome model" in n and "ridge" in n for n in est.notes)


@pytest.mark.slow
def test_gradient_boosting_with_too_few_rows_of_a_class_is_not_auditable():
    """Platt scaling on 3 folds needs 3 rows of each class: fewer is the paper's "-", a
    not-auditable run with its reason, never an exception; in a permutation replicate it
    scores 0 and the replicate is counted."""
    rng = np.random.default_rng(14)
    n = 240
    codes = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n)]).astype(np.int32)
    features = np.column_stack([codes[:, 0], codes[:, 1] == 1, codes[:, 1] == 2]).astype(float)
    a = rng.random(n) < 0.5
    y = np.zeros(n)  # condition 0 keeps every row
    rec = np.zeros(n)
    comparison_rows = np.flatnonzero(~a)
    protected_rows = np.flatnonzero(a)
    rec[comparison_rows[:2]] = 1.0  # two positives among the comparison rows
    rec[protected_rows[:3]] = 1.0
    data = cbs.CbsData(codes, features, y, None, rec)
    gb = settings(restarts=5, outcome_model="gradient_boosting")
    out = cbs.run(data, gb, a, 0)
    assert not out.estimate.auditable and out.statistic == 0.0
    assert "outcome model" in out.estimate.reason and "3 calibration folds" in out.estimate.reason
    # auditable with 3 of each class; some permutation replicates then degenerate
    rec[comparison_rows[2]] = 1.0
    data = cbs.CbsData(codes, features, y, None, rec)
    assert cbs.run(data, gb, a, 0).estimate.auditable
    job = cbs.CbsPermutation(data, a, gb, np.random.SeedSequence(3))
    scores = [job(i) for i in range(8)]
    degenerate = 0
    for i in range(8):
        rng_i = np.random.Generator(np.random.PCG64(child_seed(job.seed, i)))
        est = cbs.estimate(data, gb, rng_i.permutation(a))
        if not est.auditable:
            degenerate += 1
            assert scores[i] == 0.0
    assert 0 < degenerate < 8  # both kinds of replicate occur
    assert all(np.isfinite(scores)) and min(scores) >= 0.0


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
    from fairscan.engine.randomization import summarize
    from fairscan.engine.seeds import child_seed, search_seed

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
    from cbs_synth import Injection, evaluate_once, generate

    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, k, 3000) for k in (2, 3, 4, 3)])
    for seed in range(2):
        dataset = generate(codes, Injection(mu_sep=1.0), np.random.default_rng(seed))
        accuracy = evaluate_once(dataset, ["sep-rec", "sep-pred"], 20, 1.0, seed=0)
        assert accuracy == {"sep-rec": 1.0, "sep-pred": 1.0}


def test_gaussian_sigma_with_unit_weights_is_the_sample_sd_to_the_bit():
    """The SD rule has one formula, weighted; unit weights give numpy's ddof-1 SD exactly, and
    whole-number weights the SD of the rows repeated."""
    rng = np.random.default_rng(3)
    delta = rng.normal(size=999) * 7.0
    sd = cbs.gaussian_sigma(delta, cbs.SIGMA_SD, np.ones(len(delta)))
    assert sd == max(float(np.std(delta, ddof=1)), cbs.SIGMA_FLOOR)
    counts = rng.integers(1, 4, len(delta))
    repeated = float(np.std(np.repeat(delta, counts), ddof=1))
    weighted = cbs.gaussian_sigma(delta, cbs.SIGMA_SD, counts.astype(np.float64))
    assert weighted == pytest.approx(repeated, rel=1e-12)
