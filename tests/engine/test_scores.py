"""Poisson, Gaussian (heteroscedastic) and Berk-Jones scores against brute force; their nulls.

Each score is checked three ways: the score of a given set against an independent closed form
(or a numerical maximisation of the likelihood ratio), the search against brute force over
every rectangular subgroup (which is what the LTSS property of each score guarantees), and the
null draws against their law and for bit-identical results whatever the worker count.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute_force import brute_force_scan
from scipy.optimize import minimize_scalar
from score_brute import brute_force
from score_brute import poisson_score as _poisson_score

from fairscan.engine import kernels
from fairscan.engine.cells import compress
from fairscan.engine.mdss import ScanProblem, score_subgroup
from fairscan.engine.randomization import (
    MdssReplicate,
    NominalReplicate,
    NullSettings,
    null_scores,
    run_replicates,
)
from fairscan.engine.scores import (
    POISSON,
    at_alpha,
    berk_jones,
    best_subgroup,
    draw_cells,
    draw_classes,
    gaussian,
    pooled_means,
    profile_cells,
)


def _brute(codes, cardinality, set_score, penalty):
    return brute_force(codes, cardinality, set_score, penalty)[0]


def _gaussian_score(delta: np.ndarray, var: np.ndarray, direction: int) -> float:
    """The heteroscedastic mean-shift LLR, maximised numerically over mu on the direction's side."""
    if delta.size == 0:
        return 0.0

    def minus_llr(mu: float) -> float:
        return -float(np.sum((2 * mu * delta - mu * mu) / (2 * var)))

    bounds = (0.0, 1e3) if direction > 0 else (-1e3, 0.0)
    res = minimize_scalar(minus_llr, bounds=bounds, method="bounded", options={"xatol": 1e-12})
    return max(0.0, -float(res.fun))


def _codes(rng: np.random.Generator, n: int, cardinality: list[int]) -> np.ndarray:
    return np.column_stack([rng.integers(0, k, n) for k in cardinality]).astype(np.int32)


CASES = [
    (seed, direction, penalty)
    for seed in range(4)
    for direction in (1, -1)
    for penalty in (0.0, 0.7)
]


@pytest.mark.parametrize(("seed", "direction", "penalty"), CASES)
def test_poisson_search_matches_brute_force(seed, direction, penalty):
    rng = np.random.default_rng(seed)
    cardinality = [3, 2, 3]
    codes = _codes(rng, 300, cardinality)
    mean = rng.uniform(0.5, 4.0, 300)
    shift = np.where(codes[:, 0] == 1, 1.8 if direction > 0 else 0.5, 1.0)
    counts = rng.poisson(mean * shift).astype(float)
    problem = ScanProblem.build(codes, counts, mean, clip=False)
    got = best_subgroup(
        problem.cells(), POISSON, direction=direction, penalty=penalty, restarts=50, seed=seed
    ).best

    def score(inside):
        return _poisson_score(counts[inside].sum(), mean[inside].sum(), direction)

    want = _brute(codes, cardinality, score, penalty)
    assert got.score == pytest.approx(want, rel=1e-9, abs=1e-9)
    inside = problem.members(got.selection)
    assert got.observed == pytest.approx(counts[inside].sum())
    assert got.expected == pytest.approx(mean[inside].sum())
    assert got.size == inside.sum()


@pytest.mark.parametrize(("seed", "direction", "penalty"), CASES)
def test_heteroscedastic_gaussian_search_matches_brute_force(seed, direction, penalty):
    rng = np.random.default_rng(100 + seed)
    cardinality = [2, 3, 3]
    codes = _codes(rng, 240, cardinality)
    var = rng.uniform(0.5, 3.0, 240)
    delta = rng.normal(np.where(codes[:, 1] == 2, 0.6 * direction, 0.0), np.sqrt(var))
    cells = compress(codes, delta / var, np.zeros(240), np.array(cardinality), weight=1 / var)
    got = best_subgroup(
        cells, gaussian(), direction=direction, penalty=penalty, restarts=50, seed=seed
    ).best

    def closed_form(inside):
        s, n = (delta[inside] / var[inside]).sum(), (1 / var[inside]).sum()
        return s * s / (2 * n) if s * direction > 0 else 0.0

    want = _brute(codes, cardinality, closed_form, penalty)
    assert got.score == pytest.approx(want, rel=1e-9, abs=1e-12)
    # the closed form is the likelihood-ratio maximum itself (independent numerical check)
    inside = np.ones(240, bool)
    for j in range(3):
        inside &= got.selection[j, codes[:, j]]
    assert got.llr == pytest.approx(
        _gaussian_score(delta[inside], var[inside], direction), rel=1e-6
    )
    # mu-hat is the precision-weighted mean shift
    if got.llr > 0:
        w = 1 / var[inside]
        assert got.log_q == pytest.approx(np.sum(w * delta[inside]) / w.sum())


@pytest.mark.parametrize(("seed", "direction", "penalty"), CASES)
def test_berk_jones_grid_matches_brute_force(seed, direction, penalty):
    rng = np.random.default_rng(200 + seed)
    cardinality = [3, 3, 2]
    codes = _codes(rng, 400, cardinality)
    p = rng.uniform(0.1, 0.5, 400)
    flagged = (rng.random(400) < np.where(codes[:, 2] == 0, p + 0.2 * direction, p)).astype(float)
    problem = ScanProblem.build(codes, flagged, p)
    grid = (0.1, 0.3, 0.45)
    found = best_subgroup(
        problem.cells(), berk_jones(grid), direction=direction, penalty=penalty, restarts=50, seed=1
    )
    dname = "positive" if direction > 0 else "negative"
    per_alpha = [brute_force_scan(codes, flagged, a, dname, penalty).J for a in grid]
    assert found.best.score == pytest.approx(max(per_alpha), rel=1e-9, abs=1e-9)
    assert found.alpha == grid[int(np.argmax(per_alpha))]
    single = best_subgroup(
        problem.cells(), berk_jones(0.3), direction=direction, penalty=penalty, restarts=50, seed=1
    )
    assert single.best.score == pytest.approx(per_alpha[1], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("c", "n", "alpha", "direction"), [(30, 50, 0.3, 1), (5, 60, 0.3, -1), (12, 40, 0.3, 1)]
)
def test_berk_jones_is_the_aif360_formula(c, n, alpha, direction):
    """AIF360 BerkJones: C log(q / alpha) + (N - C) log((1 - q) / (1 - alpha)), q = C / N
    clamped to the direction (so 0 when the rate is on the other side of alpha)."""
    codes = np.zeros((n, 1), np.int32)
    flagged = np.r_[np.ones(c), np.zeros(n - c)]
    cells = at_alpha(profile_cells(compress(codes, flagged, np.full(n, 0.5), np.array([1]))), alpha)
    got = score_subgroup(cells, np.ones((1, 1), bool), direction, 0.0).llr
    q = c / n
    q = max(q, alpha) if direction > 0 else min(q, alpha)
    want = c * math.log(q / alpha) + (n - c) * math.log((1 - q) / (1 - alpha))
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_berk_jones_rejects_bad_alphas():
    with pytest.raises(ValueError, match="at least one alpha"):
        berk_jones(())
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        berk_jones((0.1, 1.0))


@pytest.mark.slow
def test_null_draws_follow_their_laws():
    rng = np.random.default_rng(0)
    codes = np.zeros((4, 1), np.int32)
    cells = compress(codes, np.zeros(4), np.array([0.2, 1.5, 3.0, 7.0]), np.array([1]))
    cells = compress(
        np.zeros((4, 1), np.int32),
        np.zeros(4),
        cells.expected,
        np.array([1]),
        weight=np.array([2.0, 3, 4, 5]),
    )
    draws = np.array([draw_cells(cells, "poisson", rng).observed for _ in range(20000)])
    rate = cells.weight * cells.expected
    assert draws.mean(axis=0) == pytest.approx(rate, rel=0.03)
    assert draws.var(axis=0) == pytest.approx(rate, rel=0.06)
    assert np.all(draws == np.round(draws))
    normal = np.array([draw_cells(cells, "gaussian", rng).observed for _ in range(20000)])
    assert normal.mean(axis=0) == pytest.approx(np.zeros(4), abs=0.1)
    assert normal.var(axis=0) == pytest.approx(cells.weight, rel=0.05)


def test_class_draws_follow_the_row_probabilities():
    rng = np.random.default_rng(1)
    probabilities = np.tile([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]], (5000, 1))
    classes = draw_classes(probabilities, rng)
    first, second = classes[0::2], classes[1::2]
    assert np.bincount(first, minlength=3) / first.size == pytest.approx([0.2, 0.5, 0.3], abs=0.02)
    assert np.all(second == 2)


def _nominal_job(seed: int) -> NominalReplicate:
    rng = np.random.default_rng(seed)
    codes = _codes(rng, 300, [3, 2])
    probabilities = rng.dirichlet([2.0, 2.0, 2.0], 300)
    cells = tuple(
        ScanProblem.build(codes, np.zeros(300), probabilities[:, k]).cells() for k in range(3)
    )
    return NominalReplicate(
        cells, probabilities, NullSettings(1, 0.0, 5), np.random.SeedSequence(seed)
    )


def test_nominal_replicate_is_the_max_over_its_class_scans():
    job = _nominal_job(3)
    stat = job(4)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3, spawn_key=(4,))))
    drawn = draw_classes(job.probabilities, rng)
    codes = job.class_cells[0].codes[job.class_cells[0].row_cell]
    per_class = [
        brute_force_scan(
            codes, (drawn == k).astype(float), job.probabilities[:, k], "positive", 0.0
        ).J
        for k in range(3)
    ]
    assert stat == pytest.approx(max(per_class), rel=1e-7)


def _worker_jobs() -> list:
    rng = np.random.default_rng(5)
    codes = _codes(rng, 200, [3, 3])
    mean = rng.uniform(0.5, 3.0, 200)
    cells = ScanProblem.build(codes, rng.poisson(mean).astype(float), mean, clip=False).cells()
    settings = NullSettings(direction=1, penalty=0.0, restarts=5)
    seed = np.random.SeedSequence(9)
    residuals = rng.normal(0, 1, 200)  # per row, as the permutation draw reads them
    binary = ScanProblem.build(codes, rng.integers(0, 2, 200), np.full(200, 0.3)).cells()
    return [
        MdssReplicate(cells, settings, seed, "poisson", POISSON),
        _nominal_job(7),
        MdssReplicate(cells, settings, seed, "gaussian", gaussian()),
        MdssReplicate(cells, settings, seed, "permutation", POISSON, residuals),
        MdssReplicate(binary, settings, seed, "binomial", berk_jones((0.2, 0.4))),
    ]


@pytest.mark.parametrize(
    "which",
    [
        0,
        1,
        pytest.param(2, marks=pytest.mark.slow),
        pytest.param(3, marks=pytest.mark.slow),
        pytest.param(4, marks=pytest.mark.slow),
    ],
    ids=["poisson", "nominal", "gaussian", "permutation", "berk_jones"],
)
def test_replicates_are_bit_identical_whatever_the_worker_count(monkeypatch, which):
    """Replicate r depends on (seed, r) only: the same scores on 1 and 2 worker processes."""
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    job = _worker_jobs()[which]
    one = run_replicates(job, 12, workers=1)
    assert np.array_equal(one, run_replicates(job, 12, workers=2))
    if which == 0:  # the public entry point runs the same job
        cells, settings, seed = job.cells, job.settings, job.seed
        again = null_scores(cells, settings, seed, 12, draw="poisson", score=POISSON)
        assert np.array_equal(one, again)


def test_default_replicate_is_the_bernoulli_one():
    """Defaults keep the Bernoulli replicate bit-identical (draw binomial, Bernoulli score)."""
    rng = np.random.default_rng(6)
    codes = _codes(rng, 200, [3, 3])
    p = rng.uniform(0.1, 0.9, 200)
    cells = ScanProblem.build(codes, (rng.random(200) < p).astype(float), p).cells()
    settings = NullSettings(direction=-1, penalty=0.2, restarts=5)
    seed = np.random.SeedSequence(2)
    plain = MdssReplicate(cells, settings, seed)
    explicit = MdssReplicate(cells, settings, seed, "binomial", berk_jones(0.5))
    assert [plain(r) for r in range(3)] != [explicit(r) for r in range(3)]
    assert plain(1) == MdssReplicate(cells, settings, seed, "binomial")(1)


@pytest.mark.slow
def test_gaussian_replicates_have_the_known_null_maximum_law():
    """With one cell per profile and no attributes to search, the Gaussian null statistic is
    max(Z, 0)^2 / 2 for Z standard normal: check its mean (1/4) and P(T = 0) (1/2)."""
    cells = compress(np.zeros((50, 1), np.int32), np.zeros(50), np.zeros(50), np.array([1]))
    job = MdssReplicate(
        cells, NullSettings(1, 0.0, 1), np.random.SeedSequence(0), "gaussian", gaussian()
    )
    stats = np.array([job(r) for r in range(4000)])
    assert stats.mean() == pytest.approx(0.25, abs=0.03)
    assert (stats == 0).mean() == pytest.approx(0.5, abs=0.03)
    assert kernels.GAUSSIAN == 1


@pytest.mark.parametrize("direction", [1, -1])
def test_poisson_cells_pooled_by_profile_score_the_same(direction):
    """Pooling Poisson cells by profile keeps every set's sums, so the scores and the search."""
    rng = np.random.default_rng(11)
    codes = _codes(rng, 400, [3, 2, 3])
    mean = rng.uniform(0.2, 3.0, 400)
    counts = rng.poisson(mean * np.where(codes[:, 2] == 1, 1.5, 0.8)).astype(float)
    raw = ScanProblem.build(codes, counts, mean, clip=False).cells()
    pooled = pooled_means(raw)
    assert pooled.n_cells <= 18 < raw.n_cells
    assert np.array_equal(pooled.codes[pooled.row_cell], codes)
    kwargs = {"direction": direction, "penalty": 0.3, "restarts": 30, "seed": 4}
    a = best_subgroup(raw, POISSON, **kwargs).best
    b = best_subgroup(pooled, POISSON, **kwargs).best
    assert b.score == pytest.approx(a.score, rel=1e-10)
    assert np.array_equal(a.selection, b.selection)
    assert (pooled.weight * pooled.expected).sum() == pytest.approx(mean.sum())


def test_permutation_draw_permutes_the_residuals():
    """Ordinal codes: with a constant expectation the replicate is a permutation of the codes."""
    rng = np.random.default_rng(12)
    codes = _codes(rng, 300, [3, 2])
    levels = rng.integers(0, 5, 300).astype(float)
    expected = np.full(300, levels.mean())
    cells = ScanProblem.build(codes, levels, expected, clip=False).cells()
    drawn = draw_cells(cells, "permutation", np.random.default_rng(0), levels - expected)
    assert drawn.observed.sum() == pytest.approx(levels.sum())
    assert np.allclose(drawn.observed, np.round(drawn.observed))  # sums of codes
    permuted = np.random.default_rng(0).permutation(levels - expected) + expected
    assert drawn.observed == pytest.approx(np.bincount(cells.row_cell, weights=permuted))
    with pytest.raises(ValueError, match="residuals"):
        draw_cells(cells, "permutation", rng)
    pooled = pooled_means(cells)
    again = draw_cells(pooled, "permutation", np.random.default_rng(0), levels - expected)
    assert again.observed == pytest.approx(np.bincount(pooled.row_cell, weights=permuted))
