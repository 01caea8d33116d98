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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def skewed_problem(seed, n=80, card=(3, 2, 4, 2)):
    """Most negatives where the score is uninformative (attribute 0 = 0): some patterns have
    a positive ranking-loss score (which grows with the negatives in the pattern), few with
    generalisation awareness, so k' is often not filled."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, n) for k in card], axis=1).astype(np.int32)
    hard = codes[:, 0] == 0
    y = (rng.random(n) < np.where(hard, 0.25, 0.85)).astype(np.int8)
    s = np.round(rng.normal(np.where(hard, 0.0, 2.0) * y + 0.2 * codes[:, 1], 1.0), 1)
    return codes, y, s, np.array(card)


def reference_oe(y, s, cfg, scored):
    """OE of every valid pattern from the definitions of §6.4 (bounds, weight bound, GA),
    independent of the search: the search prunes non-candidates with it too."""
    overall = measure(y, s, cfg.measure)
    out = {}
    for pat, (_, mask) in scored.items():
        ys, ss = y[mask], s[mask]
        b = lower_bound(ys, ss, cfg.measure)
        raw = b - overall if cfg.measure == "ranking_loss" else overall - b
        p, ng = int(ys.sum()), int(len(ys) - ys.sum())
        bw = float(weight_bound(len(ys), p, ng, cfg.size_weight, cfg.balance_weight))
        oe = bw * max(raw, 0.0)
        if cfg.generalization_aware:  # every h subset of p (p itself and the empty pattern)
            gens = [0.0]
            for r in range(1, len(pat) + 1):
                gens += [scored[sub][0] for sub in itertools.combinations(pat, r)]
            oe -= max(gens)
        out[pat] = oe
    return out


CONFIGS = [
    ("roc_auc", 0.0, 0.0, False),
    ("roc_auc", 1.0, 1.0, True),
    ("roc_auc", 0.5, 1.0, False),
    ("pr_auc", 1.0, 1.0, True),
    ("pr_auc", 0.0, 0.0, True),
    ("ranking_loss", 1.0, 1.0, False),
    ("ranking_loss", 0.0, 0.0, False),
    ("ranking_loss", 0.0, 0.0, True),
    ("ranking_loss", 1.0, 1.0, True),
]


def _top(patterns):
    return [(p.selectors, p.score) for p in patterns]


@pytest.mark.parametrize("problem", [random_problem, skewed_problem])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("measure_name", "a", "b", "ga"), CONFIGS)
def test_search_matches_brute_force(problem, seed, measure_name, a, b, ga):
    codes, y, s, card = problem(seed)
    base = {
        "measure": measure_name,
        "size_weight": a,
        "balance_weight": b,
        "generalization_aware": ga,
        "max_length": 3,
        "min_cover": 3,
    }
    final, _ = brute_force(codes, y, s, card, SearchConfig(**base))
    positive = {pat: sc for pat, sc in final.items() if sc > 0}
    ranked = sorted(positive.values(), reverse=True)
    # unpruned with k' = everything: exactly the patterns with a positive score (§6.6 step 1)
    full = search(codes, y, s, card, SearchConfig(**base, candidates=10**6, prune=False))
    got = {p.selectors: p.score for p in full.patterns}
    assert set(got) == set(positive)
    for pat, sc in positive.items():
        assert got[pat] == pytest.approx(sc, abs=1e-9)
    assert [p.score for p in full.patterns] == sorted(got.values(), reverse=True)
    # pruned top-k' = unpruned top-k' (same scores and the same patterns), also when fewer
    # than k' patterns score > 0
    for k in (1, 5, 20, len(positive) + 3):
        pruned = search(codes, y, s, card, SearchConfig(**base, candidates=k, prune=True))
        unpruned = search(codes, y, s, card, SearchConfig(**base, candidates=k, prune=False))
        assert _top(pruned.patterns) == _top(unpruned.patterns)
        assert len(pruned.patterns) == min(k, len(positive))
        assert [p.score for p in pruned.patterns] == pytest.approx(ranked[:k], abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    skewed=st.booleans(),
    config=st.sampled_from(CONFIGS),
    n=st.integers(20, 90),
    min_cover=st.integers(1, 10),
    max_length=st.integers(1, 4),
    k=st.integers(1, 60),
)
def test_pruned_search_is_the_unpruned_top_k_of_positive_patterns(
    seed, skewed, config, n, min_cover, max_length, k
):
    """§6.8.7 with §6.6 step 1: pruning (by the k'-th score, or because no specialisation can
    score > 0) returns exactly the unpruned top-k' among positive-score patterns."""
    measure_name, a, b, ga = config
    codes, y, s, card = (skewed_problem if skewed else random_problem)(seed, n=n)
    if y.min() == y.max():
        return  # the measures are undefined on the whole set
    cfg = {
        "measure": measure_name,
        "size_weight": a,
        "balance_weight": b,
        "generalization_aware": ga,
        "max_length": max_length,
        "min_cover": min_cover,
        "candidates": k,
    }
    pruned = search(codes, y, s, card, SearchConfig(**cfg, prune=True))
    unpruned = search(codes, y, s, card, SearchConfig(**cfg, prune=False))
    assert _top(pruned.patterns) == _top(unpruned.patterns)
    assert all(p.score > 0 for p in pruned.patterns)
    assert pruned.evaluated <= unpruned.evaluated and unpruned.pruned == 0
    final, _ = brute_force(codes, y, s, card, SearchConfig(**cfg))
    ranked = sorted((sc for sc in final.values() if sc > 0), reverse=True)
    assert [p.score for p in pruned.patterns] == pytest.approx(ranked[:k], abs=1e-9)


@pytest.mark.parametrize("problem", [random_problem, skewed_problem])
@pytest.mark.parametrize(("measure_name", "a", "b", "ga"), CONFIGS)
def test_optimistic_estimate_bounds_every_specialisation(problem, measure_name, a, b, ga):
    codes, y, s, card = problem(7, n=60)
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
    final, scored = brute_force(codes, y, s, card, cfg)
    oe = reference_oe(y, s, cfg, scored)
    # the search's estimates are these (it lists them for its candidates)
    res = search(codes, y, s, card, cfg)
    for p in res.patterns:
        assert p.optimistic == pytest.approx(oe[p.selectors], abs=1e-9)
    # and they bound every specialisation's score, candidate or not (Lemma 6 needs a <= b)
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
    for p in ga.patterns:  # GA score <= weighted score, so a GA candidate is a plain one
        assert p.score <= by_pat[p.selectors].score + 1e-12
    # a pattern on the whole data (an attribute with one value) has relative score 0: valid,
    # but not a candidate (score <= 0)
    one = np.zeros((len(y), 1), np.int32)
    for ga_flag in (True, False):
        res = search(
            one, y, s, [1], SearchConfig(max_length=1, min_cover=1, generalization_aware=ga_flag)
        )
        assert res.valid == 1 and res.patterns == []
    _, scored = brute_force(one, y, s, [1], SearchConfig(max_length=1, min_cover=1))
    assert scored[((0, 0),)][0] == pytest.approx(0.0, abs=1e-12)


def test_no_positive_pattern_gives_no_candidates():
    """A perfect ranking: no subgroup can be worse than the whole set, nothing to test."""
    codes, y, _, card = random_problem(5)
    s = y + np.linspace(0, 0.5, len(y))  # every positive above every negative
    for name in ("roc_auc", "pr_auc", "ranking_loss"):
        for prune in (True, False):
            res = search(codes, y, s, card, SearchConfig(measure=name, min_cover=1, prune=prune))
            assert res.patterns == [] and res.valid > 0, name


@pytest.mark.parametrize("ga", [True, False])
def test_pruning_works_before_k_prime_candidates_are_held(ga):
    """k' = 100 is never filled (few patterns score > 0), yet patterns none of whose
    specialisations can score > 0 are not expanded, and the result is the unpruned one."""
    codes, y, s, card = skewed_problem(0)
    cfg = {"measure": "ranking_loss", "generalization_aware": ga, "min_cover": 3}
    pruned = search(codes, y, s, card, SearchConfig(**cfg))
    unpruned = search(codes, y, s, card, SearchConfig(**cfg, prune=False))
    assert len(unpruned.patterns) < 100 and _top(pruned.patterns) == _top(unpruned.patterns)
    assert pruned.pruned > 0 and pruned.evaluated < unpruned.evaluated / 2


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


# --- one pass per measure, with or without sample weights (issue 37) -------------------------


def _weighted_oracle(y, s, w):
    """Brute force over (positive, negative) pairs and score thresholds of one subgroup: the
    kernel's outputs pos, neg, u2 (twice the weighted Mann-Whitney count), the negatives' weight
    strictly below and tied with the lowest positive, and the PR AUC (precision 1 at the origin)."""
    pos, neg = y == 1, y == 0
    pairs = 2 * (s[pos][:, None] > s[neg][None, :]) + (s[pos][:, None] == s[neg][None, :])
    u2 = float((w[pos][:, None] * w[neg][None, :] * pairs).sum())
    lowest = s[pos].min() if pos.any() else np.inf
    below = float(w[neg & (s < lowest)].sum()) if pos.any() else 0.0
    tied = float(w[neg & (s == lowest)].sum()) if pos.any() else 0.0
    area, prev, tp, fp = 0.0, 1.0, 0.0, 0.0
    for t in np.unique(s)[::-1]:
        d_tp, d_fp = float(w[pos & (s == t)].sum()), float(w[neg & (s == t)].sum())
        tp, fp = tp + d_tp, fp + d_fp
        area += d_tp * (tp / (tp + fp) + prev) / 2
        prev = tp / (tp + fp)
    area = area / w[pos].sum() if pos.any() else 0.0
    return [float(w[pos].sum()), float(w[neg].sum()), u2, below, tied, area]


def _children_inputs(seed, n=160, card=(3, 4)):
    """A tied problem sorted by score, and the kernel's inputs for two parents (all rows, and
    value 0 of attribute 0) each with one task per attribute."""
    from fairscan.engine.subroc import _bitsets, _selector_tables, _sorted_inputs

    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k, n) for k in card], 1).astype(np.int32)
    y = (rng.random(n) < 0.4).astype(np.int8)
    score = np.round(rng.random(n), 1)  # about ten tie groups
    order, ys, grp = _sorted_inputs(y, score)
    card_a = np.array(card, np.int32)
    offsets, _ = _selector_tables(codes, card_a)
    codes_sorted = np.ascontiguousarray(codes[order])
    root = int(offsets[-1])
    parents = np.array([[root], [0]], np.int32)
    tasks = np.array([0, 1, 0, 1], np.int32)
    sizes = card_a[tasks].astype(np.int64)
    task_out = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    args = (
        parents,
        _bitsets(codes_sorted, offsets),
        np.array([0, 2, 4], np.int64),
        tasks,
        task_out,
        int(sizes.sum()),
        np.ascontiguousarray(codes_sorted.T),
        card_a,
        ys,
        grp,
        True,
        1,
    )
    return args, codes_sorted, ys, np.sort(score), task_out


def test_evaluate_children_weighted_against_brute_force():
    """Fractional weights: every child's sums, Mann-Whitney count, lowest-positive neighbours
    and PR AUC as a brute force over pairs and thresholds gives them."""
    from fairscan.engine.subroc_kernels import evaluate_children

    args, codes, ys, s, task_out = _children_inputs(3)
    w = np.random.default_rng(4).uniform(0.05, 5.0, len(ys))
    outs = evaluate_children(*args, threads=2, wt=w)
    for t, (parent_rows, a) in enumerate(
        [(None, 0), (None, 1), (codes[:, 0] == 0, 0), (codes[:, 0] == 0, 1)]
    ):
        for v in range(int(codes[:, a].max()) + 1):
            rows = codes[:, a] == v
            if parent_rows is not None:
                rows &= parent_rows
            got = [float(o[task_out[t] + v]) for o in outs]
            assert got == pytest.approx(_weighted_oracle(ys[rows], s[rows], w[rows]), rel=1e-12)


def test_evaluate_children_without_weights_is_unit_weights_bit_for_bit():
    """No weights (a NULL pointer) and weights of 1 give the same bits, and whole counts equal
    to the brute force's."""
    from fairscan.engine.subroc_kernels import evaluate_children

    args, codes, ys, s, _ = _children_inputs(5)
    plain = evaluate_children(*args)
    ones = evaluate_children(*args, wt=np.ones(len(ys)))
    for a, b in zip(plain, ones, strict=True):
        assert a.dtype == np.float64 and np.array_equal(a, b)
    for v in range(3):
        rows = codes[:, 0] == v
        want = _weighted_oracle(ys[rows], s[rows], np.ones(int(rows.sum())))
        assert [float(o[v]) for o in plain[:5]] == want[:5]  # exact whole numbers
    with pytest.raises(ValueError, match="one weight per row"):
        evaluate_children(*args, wt=np.ones(len(ys) - 1))


def _floyd_subset(u, pool):
    """Floyd's sampling as the kernel does it: ``len(u)`` distinct items of ``pool``."""
    n, k, marked = len(pool), len(u), set()
    for m in range(k):
        jj = n - k + m
        t = min(int(u[m] * (jj + 1)), jj)
        marked.add(jj if t in marked else t)
    return pool[sorted(marked)]


@pytest.mark.parametrize("mcode", [0, 1, 2])
def test_null_measures_weighted_against_the_drawn_subsets(mcode):
    """Each null value is the weighted measure of the very rows the uniforms draw, recomputed by
    brute force; unit weights give the unweighted values bit for bit."""
    from fairscan.engine.subroc import _sorted_inputs
    from fairscan.engine.subroc_kernels import measure_sorted, null_measures

    rng = np.random.default_rng(6)
    y = (rng.random(120) < 0.4).astype(np.int8)
    _, ys, grp = _sorted_inputs(y, np.round(rng.random(120), 1))
    s = grp.astype(float)  # the score rank: ties kept
    w = rng.uniform(0.1, 3.0, 120)
    pos_rows, neg_rows = np.flatnonzero(ys == 1), np.flatnonzero(ys == 0)
    up, un = rng.random((15, 9)), rng.random((15, 13))
    vals = null_measures(up, un, pos_rows, neg_rows, ys, grp, mcode, wt=w)
    name = ["roc_auc", "pr_auc", "ranking_loss"][mcode]
    for r in range(15):
        rows = np.sort(np.r_[_floyd_subset(up[r], pos_rows), _floyd_subset(un[r], neg_rows)])
        oracle = _weighted_oracle(ys[rows], s[rows], w[rows])
        p, n_, u2, area = oracle[0], oracle[1], oracle[2], oracle[5]
        want = {"roc_auc": u2 / (2 * p * n_), "pr_auc": area, "ranking_loss": n_ - u2 / (2 * p)}
        assert vals[r] == pytest.approx(want[name], rel=1e-12)
        assert measure_sorted(rows, ys, grp, mcode, w) == vals[r]
    plain = null_measures(up, un, pos_rows, neg_rows, ys, grp, mcode)
    ones = null_measures(up, un, pos_rows, neg_rows, ys, grp, mcode, wt=np.ones(120))
    assert np.array_equal(plain, ones)
