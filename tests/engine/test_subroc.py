"""SubROC engine: exact measures, bounds, search = brute force, pruning, significance (§6.8)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import auc, precision_recall_curve, roc_auc_score

from fairscan.engine.multiple_testing import adjust_p_values
from fairscan.engine.subroc import (
    SearchConfig,
    lower_bound,
    measure,
    search,
    significance,
    weight,
    weight_bound,
)

small_sets = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(0, 6), min_size=n, max_size=n),  # few values: many ties
    )
)


def mann_whitney(y, s):
    y, s = np.asarray(y), np.asarray(s, float)
    pos, neg = s[y == 1], s[y == 0]
    return ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
        len(pos) * len(neg)
    )


@settings(max_examples=200, deadline=None)
@given(small_sets)
def test_roc_auc_equals_mann_whitney_and_sklearn(data):
    y, s = np.array(data[0]), np.array(data[1], float) / 3.0
    value = measure(y, s, "roc_auc")
    if y.min() == y.max():
        assert np.isnan(value)
        return
    assert value == pytest.approx(mann_whitney(y, s), abs=1e-12)
    assert value == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(small_sets)
def test_pr_auc_is_trapezoid_over_sklearn_curve(data):
    y, s = np.array(data[0]), np.array(data[1], float) - 2.5  # any real score
    value = measure(y, s, "pr_auc")
    if y.sum() == 0:
        assert np.isnan(value)
        return
    precision, recall, _ = precision_recall_curve(y, s)
    assert value == pytest.approx(auc(recall, precision), abs=1e-12)


@pytest.mark.parametrize("p", [1, 2, 5, 9])
def test_pr_auc_hand_example(p):
    # one negative above p positives, no ties
    y = np.array([0] + [1] * p)
    s = np.array([10.0, *list(range(p, 0, -1))], float)
    expected = sum(0.5 * ((k - 1) / k + k / (k + 1)) for k in range(1, p + 1)) / p
    assert measure(y, s, "pr_auc") == pytest.approx(expected, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(small_sets)
def test_arl_identity_and_definition(data):
    y, s = np.array(data[0]), np.array(data[1], float)
    value = measure(y, s, "ranking_loss")
    if y.sum() == 0:
        assert np.isnan(value)
        return
    neg = s[y == 0]
    pen = [(neg > si).sum() + 0.5 * (neg == si).sum() for si in s[y == 1]]
    assert value == pytest.approx(np.mean(pen), abs=1e-12)
    if (y == 0).any():
        assert value == pytest.approx((y == 0).sum() * (1 - measure(y, s, "roc_auc")), abs=1e-9)


def test_all_scores_equal():
    y = np.array([0, 1, 1, 0, 1])
    s = np.full(5, 0.3)
    assert measure(y, s, "roc_auc") == 0.5
    assert lower_bound(y, s, "roc_auc") == 0.5


def _subsets(n):
    for r in range(1, n + 1):
        yield from itertools.combinations(range(n), r)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=9).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
        )
    )
)
def test_lower_bounds_are_tight(data):
    """b_ROC, b_PR = min over valid subsets; ARL bound = max (methods §6.8.4, Theorem 1)."""
    y, s = np.array(data[0]), np.array(data[1], float)
    for name, need_neg, worst in (
        ("roc_auc", True, min),
        ("pr_auc", False, min),
        ("ranking_loss", False, max),
    ):
        values = []
        for sub in _subsets(len(y)):
            idx = list(sub)
            ys = y[idx]
            if ys.sum() == 0 or (need_neg and ys.min() == 1):
                continue
            values.append(measure(ys, s[idx], name))
        bound = lower_bound(y, s, name)
        if not values:
            continue
        assert bound == pytest.approx(worst(values), abs=1e-12), name


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 1), min_size=1, max_size=9),
    st.sampled_from([(0.0, 0.0), (0.0, 1.0), (0.5, 1.0), (1.0, 1.0), (1.0, 0.0), (1.0, 2.0)]),
)
def test_weight_bound(y, ab):
    """b_w(I) >= w(J) for all J in I (Lemma 6; alpha_s <= beta), tight for alpha_s <= beta."""
    y = np.array(y)
    a, b = ab
    bw = weight_bound(len(y), y.sum(), (1 - y).sum(), a, b)
    ws = []
    for sub in _subsets(len(y)):
        ys = y[list(sub)]
        ws.append(float(weight(len(ys), ys.sum(), (1 - ys).sum(), a, b)))
    assert max(ws) <= bw + 1e-12
    if 0 < a <= b and y.min() != y.max():
        assert max(ws) == pytest.approx(bw)


# ------------------------------------------------------------------ brute-force search


def brute_force(codes, y, s, card, cfg):
    """Every pattern, scored from scratch with the definitions of §6.3 (no shared code path
    with the search besides the exact measures tested above)."""
    n, m = codes.shape
    overall = measure(y, s, cfg.measure)
    scored = {}
    for length in range(1, cfg.max_length + 1):
        for attrs in itertools.combinations(range(m), length):
            for vals in itertools.product(*[range(card[a]) for a in attrs]):
                pat = tuple(zip(attrs, vals, strict=True))
                mask = np.ones(n, bool)
                for a, v in pat:
                    mask &= codes[:, a] == v
                ys, ss = y[mask], s[mask]
                p, ng = int(ys.sum()), int(len(ys) - ys.sum())
                if len(ys) < cfg.min_cover or p == 0 or (cfg.measure == "roc_auc" and ng == 0):
                    continue
                value = measure(ys, ss, cfg.measure)
                rel = value - overall if cfg.measure == "ranking_loss" else overall - value
                pos_frac = min(p, ng) / max(p, ng) if p and ng else 0.0
                w = len(ys) ** cfg.size_weight * pos_frac**cfg.balance_weight
                scored[pat] = (w * rel, mask)
    final = {}
    for pat, (wsc, _) in scored.items():
        if cfg.generalization_aware:
            gens = [0.0]
            for r in range(1, len(pat)):
                for sub in itertools.combinations(pat, r):
                    gens.append(scored[sub][0])
            final[pat] = wsc - max(gens)
        else:
            final[pat] = wsc
    return final, scored


def random_problem(seed, n=80, card=(3, 2, 4, 2)):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, n) for k in card], axis=1).astype(np.int32)
    y = (rng.random(n) < 0.45).astype(np.int8)
    s = np.round(rng.normal(y * 0.8 + 0.2 * codes[:, 0], 1.0), 1)  # rounded: ties
    return codes, y, s, np.array(card)


CONFIGS = [
    ("roc_auc", 0.0, 0.0, False),
    ("roc_auc", 1.0, 1.0, True),
    ("roc_auc", 0.5, 1.0, False),
    ("pr_auc", 1.0, 1.0, True),
    ("pr_auc", 0.0, 0.0, True),
    ("ranking_loss", 1.0, 1.0, False),
    ("ranking_loss", 0.0, 0.0, True),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("measure_name", "a", "b", "ga"), CONFIGS)
def test_search_matches_brute_force(seed, measure_name, a, b, ga):
    codes, y, s, card = random_problem(seed)
    base = {
        "measure": measure_name,
        "size_weight": a,
        "balance_weight": b,
        "generalization_aware": ga,
        "max_length": 3,
        "min_cover": 3,
    }
    final, _ = brute_force(codes, y, s, card, SearchConfig(**base))
    ranked = sorted(final.values(), reverse=True)
    # unpruned with k' = everything: every pattern and score
    full = search(codes, y, s, card, SearchConfig(**base, candidates=10**6, prune=False))
    got = {p.selectors: p.score for p in full.patterns}
    assert set(got) == set(final)
    for pat, sc in final.items():
        assert got[pat] == pytest.approx(sc, abs=1e-9)
    # pruned top-k' = unpruned top-k' (same scores and the same patterns)
    for k in (1, 5, 20):
        pruned = search(codes, y, s, card, SearchConfig(**base, candidates=k, prune=True))
        unpruned = search(codes, y, s, card, SearchConfig(**base, candidates=k, prune=False))
        assert [p.selectors for p in pruned.patterns] == [p.selectors for p in unpruned.patterns]
        assert [p.score for p in pruned.patterns] == [p.score for p in unpruned.patterns]
        assert [p.score for p in pruned.patterns] == pytest.approx(ranked[:k], abs=1e-9)


@pytest.mark.parametrize(("measure_name", "a", "b", "ga"), CONFIGS)
def test_optimistic_estimate_bounds_every_specialisation(measure_name, a, b, ga):
    codes, y, s, card = random_problem(7, n=60)
    cfg = SearchConfig(
        measure=measure_name,
        size_weight=a,
        balance_weight=b,
        generalization_aware=ga,
        max_length=3,
        min_cover=1,
        candidates=10**6,
        prune=False,
    )
    final, _ = brute_force(codes, y, s, card, cfg)
    res = search(codes, y, s, card, cfg)
    oe = {p.selectors: p.optimistic for p in res.patterns}
    checked = 0
    for pat, bound in oe.items():
        for spec_pat, sc in final.items():
            if len(spec_pat) > len(pat) and set(pat) <= set(spec_pat):
                assert sc <= bound + 1e-9, (pat, spec_pat)
                checked += 1
    assert checked > 50


def test_empty_and_generalisation_properties():
    codes, y, s, card = random_problem(3)
    cfg = {"max_length": 3, "min_cover": 2, "candidates": 10**6, "prune": False}
    ga = search(codes, y, s, card, SearchConfig(generalization_aware=True, **cfg))
    plain = search(codes, y, s, card, SearchConfig(generalization_aware=False, **cfg))
    by_pat = {p.selectors: p for p in plain.patterns}
    for p in ga.patterns:
        assert p.score <= by_pat[p.selectors].score + 1e-12  # GA score <= weighted score
    # a pattern on the whole data (an attribute with one value) has relative score 0
    one = np.zeros((len(y), 1), np.int32)
    res = search(one, y, s, [1], SearchConfig(max_length=1, min_cover=1))
    assert res.patterns[0].relative == pytest.approx(0.0, abs=1e-12)


def test_min_cover_larger_than_data_gives_no_patterns():
    codes, y, s, card = random_problem(0)
    res = search(codes, y, s, card, SearchConfig(min_cover=10_000))
    assert res.patterns == [] and res.valid == 0


def test_workers_do_not_change_results():
    codes, y, s, card = random_problem(4, n=300)
    cfg = {"max_length": 4, "min_cover": 5, "candidates": 30}
    one = search(codes, y, s, card, SearchConfig(workers=1, **cfg))
    two = search(codes, y, s, card, SearchConfig(workers=2, **cfg))
    assert [(p.selectors, p.score) for p in one.patterns] == [
        (p.selectors, p.score) for p in two.patterns
    ]


# ------------------------------------------------------------------ significance


def test_adjusted_p_values_order_and_closed_form():
    rng = np.random.default_rng(0)
    p = rng.random(30) ** 2
    bh = adjust_p_values(p, "bh")
    by = adjust_p_values(p, "by")
    assert np.all(by >= bh - 1e-15) and np.all(bh >= p - 1e-15)
    m = len(p)
    order = np.argsort(p)
    ps = p[order]
    expected = [min(1.0, min(m * ps[j] / (j + 1) for j in range(i, m))) for i in range(m)]
    assert bh[order] == pytest.approx(expected)
    assert adjust_p_values(p, "bonferroni") == pytest.approx(np.minimum(1, m * p))


def test_significance_random_subsets():
    rng = np.random.default_rng(1)
    n = 400
    codes = rng.integers(0, 3, (n, 2)).astype(np.int32)
    y = (rng.random(n) < 0.5).astype(np.int8)
    s = rng.normal(y * 1.5, 1.0)
    s[codes[:, 0] == 2] = rng.normal(0, 1, (codes[:, 0] == 2).sum())  # uninformative there
    pats = [((0, 2),), ((0, 0),), ((0, 2), (1, 1)), ((0, 1),)]
    res = significance(codes, y, s, pats, "roc_auc", 300, np.random.SeedSequence(5), "by")
    ps = np.array([t.p_value for t in res.tests])
    assert np.all((ps > 0) & (ps <= 1))
    assert ps[0] < 0.01  # the uninformative group is worse than random subsets
    assert np.all(res.adjusted >= ps - 1e-15)
    for t, pat in zip(res.tests, pats, strict=True):
        mask = np.ones(n, bool)
        for a, v in pat:
            mask &= codes[:, a] == v
        assert (t.positives, t.negatives) == (int(y[mask].sum()), int((1 - y[mask]).sum()))
        assert t.value == pytest.approx(roc_auc_score(y[mask], s[mask]))
    # reproducible
    again = significance(codes, y, s, pats, "roc_auc", 300, np.random.SeedSequence(5), "by")
    assert [t.p_value for t in again.tests] == list(ps)


def test_null_subsets_have_the_pattern_class_counts():
    """A subset with all positives and all negatives is the whole set: null = overall."""
    from fairscan.engine.subroc import _sorted_inputs
    from fairscan.engine.subroc_kernels import null_measures

    rng = np.random.default_rng(2)
    y = (rng.random(50) < 0.4).astype(np.int8)
    s = rng.normal(size=50)
    _, ys, grp = _sorted_inputs(y, s)
    pos_rows = np.flatnonzero(ys == 1).astype(np.int64)
    neg_rows = np.flatnonzero(ys == 0).astype(np.int64)
    up, un = rng.random((20, len(pos_rows))), rng.random((20, len(neg_rows)))
    vals = null_measures(up, un, pos_rows, neg_rows, ys, grp, 0)
    assert vals == pytest.approx(np.full(20, roc_auc_score(y, s)))
    # smaller draws: values within [0, 1] and every draw distinct rows (AUC defined)
    vals = null_measures(up[:, :3], un[:, :4], pos_rows, neg_rows, ys, grp, 0)
    assert np.all((vals >= 0) & (vals <= 1))


def test_undefined_validation_cover_gets_p_one():
    y = np.array([1, 1, 0, 0, 1, 0] * 5, np.int8)
    codes = np.zeros((30, 1), np.int32)
    codes[y == 1, 0] = 1  # value 1 = positives only: ROC undefined
    s = np.arange(30, dtype=float)
    res = significance(codes, y, s, [((0, 1),)], "roc_auc", 50, np.random.SeedSequence(0), "by")
    assert res.tests[0].p_value == 1.0 and np.isnan(res.tests[0].statistic)
