"""CBS permutation fits on covariate patterns (issue 12): the same fits as scikit-learn on the
rows, to solver tolerance, and replicates that do not depend on where or when they run."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fairscan.engine import cbs
from fairscan.engine.seeds import child_seed, search_seed


def _categorical(rng: np.random.Generator, n: int, levels: tuple[int, ...]) -> np.ndarray:
    """One-hot columns (first level dropped) of independent categorical attributes."""
    blocks = [np.eye(k)[rng.integers(0, k, n)][:, 1:] for k in levels]
    return np.hstack(blocks)


def _problem(seed: int, n: int = 2000, soft: bool = False):
    """A well-conditioned weighted logistic problem on categorical patterns."""
    rng = np.random.default_rng(seed)
    x = _categorical(rng, n, (2, 3, 4))
    truth = 1 / (1 + np.exp(-(x @ rng.normal(0, 0.7, x.shape[1]) - 0.3)))
    label = truth if soft else (rng.random(n) < truth).astype(float)
    return x, label, rng.uniform(0.2, 3.0, n)


def _row_fit(x: np.ndarray, label: np.ndarray, w: np.ndarray) -> LogisticRegression:
    """scikit-learn's unregularised fit on the rows at a tight tolerance (Case B: each row as a
    label-1 row weighted w * label and a label-0 row weighted w * (1 - label))."""
    xs = np.vstack([x, x])
    ys = np.r_[np.ones(len(x)), np.zeros(len(x))]
    ws = np.r_[w * label, w * (1 - label)]
    model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000)
    return model.fit(xs[ws > 0], ys[ws > 0], sample_weight=ws[ws > 0])


def _pattern_predict(x, label, w, x_new, regularization="none", start=None):
    """The pattern fit on (x, label, w): predictions on x_new, coefficients, note."""
    patterns = cbs.Patterns.of(np.vstack([x, x_new]))
    train = np.r_[np.ones(len(x), bool), np.zeros(len(x_new), bool)]
    y = patterns.labels(train, label, w)
    beta, note = cbs.fit_logistic_patterns(patterns.design, y, regularization, 1.0, start)
    prob = cbs.expit(np.column_stack([np.ones(len(patterns.design)), patterns.design]) @ beta)
    return prob[patterns.of_row[~train]], beta, note


@pytest.mark.parametrize("soft", [False, True])
def test_pattern_fit_predicts_as_the_row_fit(soft):
    """The weighted log-likelihood summed over patterns is the rows': the same MLE."""
    x, label, w = _problem(1, soft=soft)
    x_new = _categorical(np.random.default_rng(2), 300, (2, 3, 4))
    want = _row_fit(x, label, w).predict_proba(x_new)[:, 1]
    got, _, note = _pattern_predict(x, label, w, x_new)
    assert note is None
    np.testing.assert_allclose(got, want, atol=1e-6)
    # the same from a warm start (the fit of other data)
    start = _pattern_predict(*_problem(3, soft=soft)[:3], x_new)[1]
    warm, _, _ = _pattern_predict(x, label, w, x_new, start=start)
    np.testing.assert_allclose(warm, got, atol=1e-9)


def test_pattern_fit_with_a_continuous_feature_and_fit_predict_agree():
    """A few-valued continuous column (as logit P in the calibration cell) next to categorical
    ones: patterns = distinct rows; the result equals :func:`cbs.fit_predict` on the rows."""
    rng = np.random.default_rng(4)
    x = np.column_stack([_categorical(rng, 3000, (2, 3)), rng.choice(np.linspace(-2, 2, 10), 3000)])
    label = (rng.random(3000) < 1 / (1 + np.exp(-(x @ np.array([0.5, -0.4, 0.3, 0.8]))))).astype(
        float
    )
    w = rng.uniform(0.5, 2.0, 3000)
    want = cbs.fit_predict("logistic", x, label, w, x).predicted
    got, _, _ = _pattern_predict(x, label, w, x)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_level_absent_from_training_gets_the_minimum_norm_fit():
    """Unregularised, a level with no training rows has no identified coefficient; lbfgs from 0
    keeps it at 0 and so does the pattern fit (from any start): equal predictions there."""
    x, label, w = _problem(5)
    x = x.copy()
    x[:, 4] = 0.0  # one level of the 4-level attribute never occurs in training
    x_new = np.eye(x.shape[1])[[4, 5, 0]]
    want = cbs.fit_predict("logistic", x, label, w, x_new).predicted
    got, beta, _ = _pattern_predict(x, label, w, x_new, start=np.full(x.shape[1] + 1, 0.3))
    assert beta[1 + 4] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_separation_and_l2_use_the_row_fits_rule_and_solver():
    """Separation: the ridge fallback with its note; L2: scikit-learn's fit on the merged rows,
    as the row fit (its default tolerance stops where lbfgs from 0 stops)."""
    rng = np.random.default_rng(12)
    codes = rng.integers(0, 4, 400)
    x = np.eye(4)[codes][:, 1:]
    label = (rng.random(400) < 0.4).astype(float)
    label[codes == 3] = 0.0
    row = cbs.fit_predict("logistic", x, label, np.ones(400), x)
    got, _, note = _pattern_predict(x, label, np.ones(400), x)
    assert note is not None and "tiny ridge" in note and "separation" in note
    np.testing.assert_allclose(got, row.predicted, rtol=1e-9, atol=1e-15)
    x, label, w = _problem(6)
    l2 = cbs.fit_predict("logistic", x, label, w, x, regularization="l2", c=0.05).predicted
    got, _, _ = _pattern_predict(x, label, w, x, regularization="l2")
    want = cbs.fit_predict("logistic", x, label, w, x, regularization="l2", c=1.0).predicted
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.max(np.abs(got - l2)) > 0.01  # c is used


def test_constant_label_is_degenerate():
    patterns = cbs.Patterns.of(np.eye(3))
    y = patterns.labels(np.ones(3, bool), np.ones(3), np.ones(3))
    with pytest.raises(cbs.ModelDegenerate, match="constant"):
        cbs.fit_logistic_patterns(patterns.design, y, "none", 1.0)


def _simulated(seed: int = 0, n: int = 1500):
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 2)]).astype(np.int32)
    x = np.column_stack([codes[:, 0], codes[:, 1] == 1, codes[:, 1] == 2, codes[:, 2]]).astype(
        float
    )
    lin = x @ np.array([0.6, -0.4, 0.5, 0.3]) - 0.3
    a = rng.random(n) < 1 / (1 + np.exp(-(x @ np.array([0.8, 0.5, -0.5, 0.0]) - 0.5)))
    y = (rng.random(n) < 1 / (1 + np.exp(-lin))).astype(float)
    p = 1 / (1 + np.exp(-(lin + rng.normal(0, 0.5, n) + 0.8 * (a & (codes[:, 0] == 1)))))
    p = np.round(p, 1).clip(0.05, 0.95)  # few values: suf-pred has patterns, not rows
    return cbs.CbsData(codes, x, y, p, (p >= 0.5).astype(float)), a


CELLS = [
    ("separation", "predictions", 0, 1, 1),
    ("separation", "recommendations", 0, 1, 1),
    ("separation", "recommendations", None, 1, 1),
    ("sufficiency", "predictions", None, 1, -1),
    ("sufficiency", "recommendations", 1, 0, 1),
]


@pytest.mark.parametrize("cell", CELLS)
def test_pattern_models_estimate_as_the_row_models(cell):
    """The whole estimate (weights, filter, both models, I-hat, Delta) on the real A and on a
    permuted A: pattern fits = scikit-learn's row fits to solver tolerance."""
    data, a = _simulated()
    settings = cbs.CbsSettings(*cell, restarts=20)
    models = cbs.PatternModels.build(data, settings, a)
    for protected in (a, np.random.default_rng(1).permutation(a)):
        rows = cbs.estimate(data, settings, protected)
        fast = cbs.estimate(data, settings, protected, models)
        assert fast.auditable and rows.auditable
        np.testing.assert_allclose(fast.expected, rows.expected, atol=1e-6)
        np.testing.assert_allclose(fast.observed, rows.observed, atol=1e-5)
        np.testing.assert_allclose(fast.propensity, rows.propensity, atol=1e-6)


def test_permutation_replicates_match_the_row_fits_and_do_not_depend_on_the_process():
    """A replicate's statistic equals the row-fit pipeline's (to solver tolerance) and is the
    same bits whether the job ran before, was pickled to a worker, or runs in another order."""
    data, a = _simulated(seed=2)
    settings = cbs.CbsSettings("separation", "recommendations", 0, 1, 1, restarts=10)
    job = cbs.CbsPermutation(data, a, settings, np.random.SeedSequence(7))
    fresh = pickle.loads(pickle.dumps(job))  # never ran: builds its own starts
    first = [job(i) for i in range(6)]
    shipped = pickle.loads(pickle.dumps(job))  # as sent to a worker after replicate 0
    assert [shipped(i) for i in (5, 3, 1)] == [first[5], first[3], first[1]]
    assert [fresh(i) for i in range(6)] == first
    for i in range(6):
        rng = np.random.Generator(np.random.PCG64(child_seed(job.seed, i)))
        permuted = rng.permutation(a)
        row = cbs.run(data, settings, permuted, search_seed(child_seed(job.seed, i, 0)))
        # J differs by the row fit's lbfgs tolerance (I-hat to ~1e-7)
        assert first[i] == pytest.approx(row.statistic, rel=1e-5, abs=1e-5)


def test_replicates_are_bit_identical_on_two_worker_processes():
    """Two spawned processes, sent the job after it ran (its starts built) or before: the same
    bits as one process."""
    data, a = _simulated(seed=3, n=800)
    settings = cbs.CbsSettings("sufficiency", "predictions", None, 1, -1, restarts=10)
    job = cbs.CbsPermutation(data, a, settings, np.random.SeedSequence(8))
    fresh = pickle.loads(pickle.dumps(job))
    serial = [job(i) for i in range(12)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        assert list(pool.map(job, range(12), chunksize=3)) == serial
        assert list(pool.map(fresh, range(12), chunksize=5)) == serial


@pytest.mark.slow
def test_gradient_boosting_stays_on_the_rows():
    """Trees and calibration folds count rows: a gradient boosting model is fitted on the rows
    in the permutation replicates too (the logistic one on patterns)."""
    data, a = _simulated(seed=4, n=600)
    mixed = cbs.CbsSettings(
        "separation", "recommendations", 0, 1, 1, restarts=5, outcome_model="gradient_boosting"
    )
    models = cbs.PatternModels.build(data, mixed, a)
    assert models.starts[1] is None  # no coefficients: the outcome model is not logistic
    fast = cbs.estimate(data, mixed, a, models)
    rows = cbs.estimate(data, mixed, a)
    np.testing.assert_allclose(fast.expected, rows.expected, atol=1e-5)
