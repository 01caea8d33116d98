"""Invariants of methods.md §5.10 and closed forms for the certify/flag engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from fairscan.engine import audit_bootstrap as ab
from fairscan.engine.audit_groups import from_masks, intersections, intervals
from fairscan.engine.multiple_testing import adjust_p_values


def _problem(seed=0, n=400, binary=True, known=None):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, size=(n, 2))
    gc = intersections(codes, [("a", "b", "c"), ("x", "y", "z")], ["A", "B"])
    L = rng.integers(0, 2, n).astype(float) if binary else rng.normal(size=n) ** 2
    pop = rng.random(n) < 0.7
    ref = None if known is not None else pop.copy()
    return ab.AuditProblem(L, pop, gc.atom, gc.atom_groups, reference=ref, theta=known), gc


def test_mad_constant_is_inverse_normal_cdf():
    assert pytest.approx(0.6744897501960817, abs=1e-12) == ab.MAD_CONSTANT


@pytest.mark.parametrize("binary", [True, False])
def test_sigma2_equals_variance_of_z(binary):
    prob, gc = _problem(binary=binary)
    m = ab.moments(prob)
    M = gc.membership().toarray().astype(bool) & prob.population[:, None]
    L = np.where(prob.population, prob.L, 0.0)
    for j in range(M.shape[1]):
        G = M[:, j]
        P = G.mean()
        z = (L - L[G].mean()) * G / np.sqrt(P) - np.sqrt(P) * m.psi
        assert m.sigma2[j] == pytest.approx(np.var(z), rel=1e-9, abs=1e-12)
        assert m.sigma2[j] >= 0
        assert m.eps[j] == pytest.approx(L[G].mean() - L[prob.population].mean())


def test_membership_matches_bruteforce_intersections():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, size=(200, 3))
    gc = intersections(codes, [("0", "1", "2")] * 3, ["a", "b", "c"], max_order=2)
    M = gc.membership().toarray().astype(bool)
    for j, sub in enumerate(gc.subgroups):
        want = np.ones(200, dtype=bool)
        for k, name in enumerate("abc"):
            if name in sub:
                want &= codes[:, k] == int(sub[name][0])
        assert np.array_equal(M[:, j], want)
    n_present = sum(
        len({tuple(r) for r in codes[:, c]}) for c in ([0], [1], [2], [0, 1], [0, 2], [1, 2])
    )
    assert gc.n_groups == n_present


def test_intervals_membership():
    x = np.array([0.0, 0.05, 0.1, 0.55, 1.0, 1.2, -0.1])
    gc = intervals(x, [0.0, 0.5, 1.0], "x")
    M = gc.membership().toarray().astype(bool)
    assert gc.names == ("x in [0, 0.5)", "x in [0, 1]", "x in [0.5, 1]")
    assert M[:, 0].tolist() == [True, True, True, False, False, False, False]
    assert M[:, 1].tolist() == [True, True, True, True, True, False, False]
    assert M[:, 2].tolist() == [False, False, False, True, True, False, False]


def test_pstar_one_reproduces_algorithm_one():
    prob, _ = _problem(binary=False)
    seed = np.random.SeedSequence(7)
    a = ab.certify(prob, B=200, alpha=0.1, seed=seed, p_star=None)
    b = ab.certify(prob, B=200, alpha=0.1, seed=seed, p_star=1.0)
    for kind in ("lower", "upper", "two_sided"):
        ra, rb = ab.bounds(a, kind, "both", 0.0), ab.bounds(b, kind, "both", 0.0)
        np.testing.assert_allclose(ra.lower, rb.lower, rtol=1e-10, equal_nan=True)
        np.testing.assert_allclose(ra.upper, rb.upper, rtol=1e-10, equal_nan=True)


@given(st.integers(0, 10_000), st.booleans())
def test_bound_ordering_and_monotone_alpha(seed, binary):
    prob, _ = _problem(seed=seed, n=150, binary=binary)
    out = ab.certify(prob, B=60, alpha=0.1, seed=np.random.SeedSequence(seed))
    if out.degenerate:
        return
    t = out.t
    assert t["abs"] >= max(t["lower"], t["upper"]) - 1e-15
    lo = ab.bounds(out, "lower", "above", 0).lower
    up = ab.bounds(out, "upper", "above", 0).upper
    two = ab.bounds(out, "two_sided", "above", 0)
    v = out.valid
    if t["lower"] >= 0 and t["upper"] >= 0:
        assert np.all(lo[v] <= out.moments.eps[v] + 1e-12)
        assert np.all(up[v] >= out.moments.eps[v] - 1e-12)
    assert np.all(two.lower[v] <= lo[v] + 1e-12) and np.all(two.upper[v] >= up[v] - 1e-12)
    stats = out.stats["lower"]
    assert ab.critical_value(stats, 0.05) >= ab.critical_value(stats, 0.2)


def test_critical_value_is_order_statistic():
    x = np.arange(1, 501, dtype=float)[::-1]
    assert ab.critical_value(x, 0.1) == 450.0  # ceil(0.9 * 500) = 450th order statistic
    assert ab.critical_value(x, 0.101) == 450.0  # ceil(449.5) = 450
    assert ab.critical_value(np.array([3.0, 1.0, 2.0]), 0.5) == 2.0


def test_deterministic_and_seed_sensitive():
    prob, _ = _problem(binary=False)
    a = ab.flag(prob, B=100, alpha=0.1, seed=np.random.SeedSequence(1), tolerance=0.0)
    b = ab.flag(prob, B=100, alpha=0.1, seed=np.random.SeedSequence(1), tolerance=0.0)
    c = ab.flag(prob, B=100, alpha=0.1, seed=np.random.SeedSequence(2), tolerance=0.0)
    assert np.array_equal(a.p_value, b.p_value, equal_nan=True)
    assert not np.array_equal(a.p_value, c.p_value, equal_nan=True)


def test_bootstrap_totals_match_bruteforce_weights():
    """Both sampling paths give group totals equal to W @ M for their own count matrix (rows path
    checked by rebuilding W from the same draws) and theta* the weighted reference mean."""
    prob, gc = _problem(binary=False, n=120)
    sampler = ab._Sampler(prob)
    assert sampler.path == "rows"
    rng = np.random.Generator(np.random.PCG64(5))
    res = sampler.block(rng, 4, ab.BootstrapInfo(B=4))
    idx = np.random.Generator(np.random.PCG64(5)).integers(0, prob.n, size=(4, prob.n))
    W = np.stack([np.bincount(r, minlength=prob.n) for r in idx]).astype(float)
    M = gc.membership().toarray() * prob.population[:, None]
    L = np.where(prob.population, prob.L, 0.0)
    np.testing.assert_allclose(res.counts, W @ M)
    np.testing.assert_allclose(res.sums, (W * L) @ M)
    ref = prob.reference
    np.testing.assert_allclose(res.theta, (W[:, ref] @ L[ref]) / W[:, ref].sum(axis=1))


def test_cells_path_is_multinomial_with_right_means():
    prob, _gc = _problem(binary=True, n=4000)
    sampler = ab._Sampler(prob)
    assert sampler.path == "cells"
    res = sampler.block(np.random.default_rng(0), 2000, ab.BootstrapInfo(B=2000))
    m = ab.moments(prob)
    np.testing.assert_allclose(res.counts.mean(axis=0), m.count, rtol=0.02)
    np.testing.assert_allclose(res.sums.mean(axis=0), m.sum_L, rtol=0.03)
    # multinomial variance n p (1 - p) of a group's count
    p = m.count / prob.n
    np.testing.assert_allclose(res.counts.var(axis=0), prob.n * p * (1 - p), rtol=0.15)


def test_flag_p_values_closed_form():
    eps = np.array([0.2, -0.1, 0.0])
    s = np.array([0.1, 0.05, 0.0])
    np.testing.assert_allclose(
        ab.flag_p_values(eps[:2], s[:2], 0.05, "above"), 1 - norm.cdf((eps[:2] - 0.05) / s[:2])
    )
    np.testing.assert_allclose(
        ab.flag_p_values(eps[:2], s[:2], -0.05, "below"), norm.cdf((eps[:2] + 0.05) / s[:2])
    )
    two = ab.flag_p_values(eps[:2], s[:2], 0.05, "both")
    want = np.minimum(norm.cdf((eps[:2] + 0.05) / s[:2]), 1 - norm.cdf((eps[:2] - 0.05) / s[:2]))
    np.testing.assert_allclose(two, want)
    assert ab.flag_p_values(np.array([0.1, 0.0]), np.zeros(2), 0.05, "above").tolist() == [0.0, 1.0]


def test_flag_scale_is_mad_of_deviations():
    prob, _ = _problem(binary=False)
    out = ab.flag(
        prob, B=101, alpha=0.1, seed=np.random.SeedSequence(3), tolerance=0.0, keep_deviations=True
    )
    j = int(np.flatnonzero(out.tested)[0])
    d = out.deviations[:, j]
    assert out.s_star[j] == pytest.approx(np.nanmedian(d) / 0.6744897501960817)
    tested = out.tested
    np.testing.assert_allclose(out.adjusted[tested], adjust_p_values(out.p_value[tested], "bh"))


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.floats(0.01, 0.3))
def test_bh_nested_in_alpha(p, alpha):
    adj = adjust_p_values(np.array(p), "bh")
    assert set(np.flatnonzero(adj <= alpha)) <= set(np.flatnonzero(adj <= alpha + 0.1))


def test_degenerate_constant_L():
    rng = np.random.default_rng(0)
    gc = from_masks(rng.random((50, 3)) < 0.5, ["a", "b", "c"], ["", "", ""])
    prob = ab.AuditProblem(
        np.ones(50), np.ones(50, bool), gc.atom, gc.atom_groups, reference=np.ones(50, bool)
    )
    out = ab.certify(prob, B=20, alpha=0.1, seed=np.random.SeedSequence(0))
    assert out.degenerate
    r = ab.bounds(out, "lower", "above", 0.0)
    np.testing.assert_array_equal(r.lower, out.moments.eps)


def test_absent_group_contributes_zero_and_unstable_flag():
    n = 200
    tiny = np.zeros(n, bool)
    tiny[0] = True  # present in ~63% of resamples
    never = np.zeros(n, bool)
    L = np.random.default_rng(1).random(n)
    gc = from_masks(np.stack([tiny, ~tiny], 1), ["tiny", "rest"], ["", ""])
    prob = ab.AuditProblem(L, np.ones(n, bool), gc.atom, gc.atom_groups, theta=0.5)
    out = ab.flag(prob, B=200, alpha=0.1, seed=np.random.SeedSequence(0), tolerance=0.0)
    assert 0.5 < out.present_share[0] < 0.75
    assert out.present_share[1] == 1.0
    del never


def test_unweighted_moments_are_the_plain_moments_to_the_bit():
    """Without sample weights the weighted formulas (unit weights) give the plain mean and
    variances exactly: no separate unweighted branch is needed (issue 37)."""
    import scipy.sparse as sp

    from fairscan.engine.audit_bootstrap import AuditProblem, moments

    rng = np.random.default_rng(11)
    n = 2500
    L = rng.normal(size=n) * 1e3
    pop = rng.random(n) < 0.9
    ref = rng.random(n) < 0.5
    groups = sp.csr_matrix((rng.random((5, 3)) < 0.5).astype(float))
    problem = AuditProblem(L, pop, rng.integers(0, 5, n), groups, reference=ref)
    m = moments(problem)
    assert m.n == n and isinstance(m.n, int)
    assert m.theta == float(L[ref & pop].sum() / int((ref & pop).sum()))
    assert m.var_L == float(np.var(L[pop]))
    assert np.array_equal(m.count, groups.T @ np.bincount(problem.atom[pop], minlength=5))
