"""SubROC (methods.md §6): exhaustive top-k' search for subgroups where a soft classifier
under-performs by ROC AUC, PR AUC or average ranking loss, and holdout significance filtering.

Search layout (level-wise, exact):

* rows are sorted once by score; every selector (attribute = value) is a bitset over that
  order; a parent's cover is the AND of its selectors' bitsets;
* level ``L`` evaluates, for every live parent of level ``L - 1`` and every attribute after the
  parent's last one, all children on that attribute in one compiled pass over the parent's
  cover (:func:`fairscan.engine.subroc_kernels.evaluate_children`);
* a child is only generated if every one of its ``L - 1``-selector generalisations is live
  (evaluated, valid, not pruned). A generalisation that is not live is invalid, too small, or
  was pruned with ``OE < threshold``; in each case the child is invalid, too small or cannot
  reach the top-k' either. Because of that rule, every generalisation of a candidate has been
  scored, which gives the generalisation-aware score exactly;
* candidates (methods.md §6.6 step 1): only patterns with a positive score are candidates; the
  top-k' holds at most k' of them (fewer when fewer patterns score > 0), and only they go on to
  the significance test and its multiple-testing correction;
* pruning: a pattern is not expanded when no specialisation can become a candidate: its
  optimistic estimate is below the k'-th best score once k' candidates are held, and below 0
  before that (strictly, with a 1e-12 relative slack for rounding); or every specialisation's
  weighted score is <= 0 for sure (the raw estimate is negative, or the weight bound is 0).
  Patterns that tie with the k'-th score are never pruned, so the pruned search returns exactly
  the unpruned top-k' (ties broken by pattern key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fairscan.engine.multiple_testing import adjust_p_values
from fairscan.engine.seeds import child_seed, replicate_rng
from fairscan.engine.subroc_kernels import (
    MEASURE_ARL,
    MEASURE_PR,
    MEASURE_ROC,
    evaluate_children,
    measure_sorted,
    null_measures,
)

MEASURES = {"roc_auc": MEASURE_ROC, "pr_auc": MEASURE_PR, "ranking_loss": MEASURE_ARL}
PRUNE_SLACK = 1e-12
TIE_TOLERANCE = 1e-12


# --------------------------------------------------------------------------------------------
# Exact measures on plain arrays (reference implementations used by the engine and tests)
# --------------------------------------------------------------------------------------------


def _sorted_inputs(y: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(score, kind="stable")
    s = np.asarray(score, dtype=np.float64)[order]
    grp = np.zeros(len(s), dtype=np.int32)
    if len(s) > 1:
        grp[1:] = np.cumsum(s[1:] != s[:-1])
    return order, np.asarray(y, dtype=np.int8)[order], grp


def measure(y: np.ndarray, score: np.ndarray, name: str, weight: np.ndarray | None = None) -> float:
    """ROC AUC, PR AUC (linear interpolation, precision 1 at the origin) or ARL of a multiset;
    NaN when undefined (ROC: both classes needed; PR, ARL: a positive needed). ``weight``:
    sample weights of the rows (every count a sum of weights)."""
    y = np.asarray(y)
    if len(y) == 0:
        return float("nan")
    order, ys, grp = _sorted_inputs(y, score)
    return _measure_rows(np.arange(len(ys), dtype=np.int64), ys, grp, MEASURES[name], weight, order)


def _measure_rows(
    rows: np.ndarray,
    ys: np.ndarray,
    grp: np.ndarray,
    mcode: int,
    weight: np.ndarray | None,
    order: np.ndarray | None = None,
) -> float:
    """The measure of ``rows`` (positions in score order); ``weight`` in the data's order
    (``order`` sorts it), or already sorted when ``order`` is None."""
    ws = weight if order is None else _sorted_weights(weight, order)
    return float(measure_sorted(rows, ys, grp, mcode, ws))


def _sorted_weights(weight: np.ndarray | None, order: np.ndarray) -> np.ndarray | None:
    """The rows' sample weights in score order, as the kernels take them; None stays None: the
    kernels' unweighted passes then read no weight array, and counts stay whole numbers."""
    return None if weight is None else np.ascontiguousarray(weight[order], np.float64)


def lower_bound(y: np.ndarray, score: np.ndarray, name: str) -> float:
    """Tight lower bound of the measure over subsets satisfying the class constraint
    (b_ROC, b_PR of Lemmas 2, 4); for ARL the tight *upper* bound max PEN (Theorem 1)."""
    y = np.asarray(y).astype(np.int8)
    score = np.asarray(score, dtype=np.float64)
    if not (y == 1).any():
        return float("nan")
    minpos = score[y == 1].min()
    neg = score[y == 0]
    above = int((neg > minpos).sum())
    tied = int((neg == minpos).sum())
    return float(_bound(name, above, tied))


def _bound(name: str, above, tied, weighted: bool = False):
    above = np.asarray(above, dtype=np.float64)
    tied = np.asarray(tied, dtype=np.float64)
    if name == "roc_auc":
        return np.where(above > 0, 0.0, np.where(tied > 0, 0.5, 1.0))
    if name == "pr_auc" and weighted:
        # weighted rows: a light positive among heavy negatives has a precision near 0, so
        # only "no negative at or above the lowest positive" (AP = 1 for every subset) bounds
        return np.where(above + tied > 0, 0.0, 1.0)
    if name == "pr_auc":
        geq = above + tied
        return 0.5 / (1.0 + geq) + np.where(above > 0, 0.0, 0.5)
    return above + 0.5 * tied  # ARL: penalty of the worst-ranked positive


def weight(size, positives, negatives, alpha_s: float, beta: float):
    """w = |sg|^alpha_s * cb^beta with cb = min(N/P, P/N) (0 for one class) and 0^0 = 1."""
    size = np.asarray(size, dtype=np.float64)
    p = np.asarray(positives, dtype=np.float64)
    n = np.asarray(negatives, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cb = np.where((p > 0) & (n > 0), np.minimum(p, n) / np.maximum(p, n), 0.0)
    return np.power(size, alpha_s) * np.power(cb, beta)


def weight_bound(size, positives, negatives, alpha_s: float, beta: float):
    """b_w(I) >= w(J) for every J subset of I (Lemma 6 and methods.md §6.4 [REC] cases)."""
    size = np.asarray(size, dtype=np.float64)
    if alpha_s == 0:
        return np.ones_like(size)
    if beta == 0 or beta < alpha_s:
        return np.power(size, alpha_s)
    smaller = np.minimum(np.asarray(positives, np.float64), np.asarray(negatives, np.float64))
    return np.power(2.0 * smaller, alpha_s)


# --------------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchConfig:
    measure: str = "roc_auc"
    size_weight: float = 1.0
    balance_weight: float = 1.0
    generalization_aware: bool = True
    max_length: int = 4
    min_cover: int = 20
    candidates: int = 100  # k'
    prune: bool = True
    workers: int = 1


@dataclass(frozen=True)
class Pattern:
    """One scored pattern: selectors as (attribute index, value code), in attribute order."""

    selectors: tuple[tuple[int, int], ...]
    score: float  # the ranking score (GA score if generalisation-aware, else weighted)
    weighted: float  # phi'_{alpha_s, beta}
    relative: float  # phi' unweighted (overall - subgroup for AUCs; subgroup - overall for ARL)
    value: float  # the measure in the subgroup
    size: float  # rows (an int), or the sum of their sample weights
    positives: float
    negatives: float
    optimistic: float  # optimistic estimate used for pruning (GA-adjusted if GA)
    key: int


@dataclass
class SearchResult:
    patterns: list[Pattern]  # the top-k' with a positive score, best first (at most k')
    overall: float  # the measure on the whole search set
    positives: float  # rows (an int), or the sum of their sample weights
    negatives: float
    evaluated: int  # candidate patterns scored
    valid: int  # of which satisfy min cover and the class constraint
    pruned: int  # valid patterns whose specialisations were skipped by the optimistic estimate
    skipped: int  # candidates not generated because a generalisation was pruned
    per_level: list[dict[str, int]] = field(default_factory=list)


def _selector_tables(codes: np.ndarray, card: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(card) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(card)
    sel_attr = np.repeat(np.arange(len(card), dtype=np.int32), card)
    return offsets, sel_attr


def _bitsets(codes_sorted: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    n, m = codes_sorted.shape
    n_sel = int(offsets[-1])
    n_words = max(1, (n + 63) // 64)
    padded = n_words * 64
    bits = np.zeros((n_sel + 1, n_words), dtype=np.uint64)
    for j in range(m):
        k = int(offsets[j + 1] - offsets[j])
        onehot = np.zeros((k, padded), dtype=bool)
        onehot[codes_sorted[:, j], np.arange(n)] = True
        packed = np.packbits(onehot, axis=1, bitorder="little")
        bits[offsets[j] : offsets[j + 1]] = packed.view(np.uint64).reshape(k, n_words)
    full = np.zeros(padded, dtype=bool)
    full[:n] = True
    bits[n_sel] = np.packbits(full, bitorder="little").view(np.uint64)
    return bits


def _keys(sel: np.ndarray, base: int) -> np.ndarray:
    """Integer key of each row of selector ids (ascending ids; digit = id + 1)."""
    key = np.zeros(sel.shape[0], dtype=np.int64)
    for i in range(sel.shape[1]):
        key = key * base + (sel[:, i].astype(np.int64) + 1)
    return key


def search(
    codes: np.ndarray,
    y: np.ndarray,
    score: np.ndarray,
    cardinality: np.ndarray | list[int],
    config: SearchConfig,
    sample_weight: np.ndarray | None = None,
) -> SearchResult:
    """Exhaustive top-k' SubROC search on one data set (methods.md §6.3–6.5); ``weight``: the
    rows' sample weights (every count, size and measure weighted)."""
    if config.measure not in MEASURES:
        raise ValueError(f"unknown measure {config.measure!r}")
    mcode = MEASURES[config.measure]
    codes = np.asarray(codes, dtype=np.int32)
    y = np.asarray(y, dtype=np.int8)
    n, m = codes.shape
    card = np.asarray(cardinality, dtype=np.int32)
    order, ys, grp = _sorted_inputs(y, score)
    codes_sorted = np.ascontiguousarray(codes[order])
    codes_t = np.ascontiguousarray(codes_sorted.T)
    offsets, sel_attr = _selector_tables(codes, card)
    n_sel = int(offsets[-1])
    base = n_sel + 1
    if config.max_length * math.log2(base) >= 62:
        raise ValueError(
            f"{n_sel} selectors and max_length {config.max_length} exceed the pattern key range; "
            "use fewer attributes/values or a shorter max_length"
        )
    bits = _bitsets(codes_sorted, offsets)
    root = n_sel
    ws = _sorted_weights(sample_weight, order)
    has_weights = ws is not None
    overall = _measure_rows(np.arange(n, dtype=np.int64), ys, grp, mcode, ws)
    n_pos: float = int(ys.sum()) if ws is None else float(ws[ys == 1].sum())
    n_neg: float = n - n_pos if ws is None else float(ws[ys == 0].sum())
    alpha_s, beta = float(config.size_weight), float(config.balance_weight)
    ga = config.generalization_aware
    k_prime = int(config.candidates)
    threads = max(1, int(config.workers))

    # held top-k' (arrays, best first)
    top_score = np.empty(0)
    top_key = np.empty(0, dtype=np.int64)
    top_rows: list[dict[str, np.ndarray]] = []  # per level, arrays of the level's candidates

    # previous level's table (sorted by key): key, live flag, G = max phi' over subsets
    prev_keys = np.zeros(1, dtype=np.int64)  # the empty pattern has key 0
    prev_live = np.ones(1, dtype=bool)
    prev_g = np.zeros(1)
    parents = np.full((1, 1), root, dtype=np.int32)  # level 0: the empty pattern (all rows)
    parent_sel = np.zeros((1, 0), dtype=np.int32)  # real selectors of each parent
    parent_last = np.full(1, -1, dtype=np.int32)

    evaluated = valid_total = pruned_total = skipped_total = 0
    per_level: list[dict[str, int]] = []
    for level in range(1, config.max_length + 1):
        if len(parents) == 0:
            break
        # candidate children: every parent x every selector on a later attribute
        sel_ok = sel_attr[None, :] > parent_last[:, None]  # (n_parents, n_sel)
        pi, si = np.nonzero(sel_ok)
        children = np.concatenate(
            [parent_sel[pi], si[:, None].astype(np.int32)], axis=1
        )  # ascending ids since attributes increase
        # Apriori: every (level-1)-subset must be live
        keep = np.ones(len(children), dtype=bool)
        gen = np.zeros(len(children))
        if level == 1:
            gen[:] = 0.0  # the only generalisation is the empty pattern (phi' = 0)
        else:
            for drop in range(level):
                sub = np.delete(children, drop, axis=1)
                sk = _keys(sub, base)
                idx = np.searchsorted(prev_keys, sk)
                idx_c = np.minimum(idx, len(prev_keys) - 1)
                found = (idx < len(prev_keys)) & (prev_keys[idx_c] == sk)
                live = found & prev_live[idx_c]
                keep &= live
                gen = np.maximum(gen, np.where(found, prev_g[idx_c], -np.inf))
        generated = len(children)
        skipped_total += int((~keep).sum())
        pi, si, children, gen = pi[keep], si[keep], children[keep], gen[keep]
        if len(children) == 0:
            per_level.append({"level": level, "generated": generated, "evaluated": 0})
            break
        # tasks: distinct (parent, attribute) pairs
        ca = sel_attr[si]
        pair = pi.astype(np.int64) * m + ca
        upair, _first = np.unique(pair, return_index=True)
        t_parent = (upair // m).astype(np.int64)
        t_attr = (upair % m).astype(np.int32)
        t_size = card[t_attr].astype(np.int64)
        t_out = np.zeros(len(upair), dtype=np.int64)
        t_out[1:] = np.cumsum(t_size)[:-1]
        n_out = int(t_size.sum())
        task_ptr = np.searchsorted(t_parent, np.arange(len(parents) + 1)).astype(np.int64)
        n_chunks = max(1, min(len(parents), threads * 8))
        pos, neg, u2, nb, nt, area = evaluate_children(
            parents,
            bits,
            task_ptr,
            t_attr,
            t_out,
            n_out,
            codes_t,
            card,
            ys,
            grp,
            mcode == MEASURE_PR,
            n_chunks,
            threads=threads,
            wt=ws,
        )
        slot = t_out[np.searchsorted(upair, pair)] + (si - offsets[ca])
        pos, neg, u2, nb, nt, area = (a[slot] for a in (pos, neg, u2, nb, nt, area))
        size = pos + neg
        evaluated += len(children)
        has_class = (pos > 0) & (neg > 0) if mcode == MEASURE_ROC else pos > 0
        valid = (size >= config.min_cover) & has_class
        # measure, relative score, optimistic estimate of the raw relative score
        with np.errstate(divide="ignore", invalid="ignore"):
            above = neg - nb - nt
            if mcode == MEASURE_ROC:
                value = u2 / (2.0 * pos * neg)
                relative = overall - value
                oe_raw = overall - _bound("roc_auc", above, nt)
            elif mcode == MEASURE_PR:
                value = area
                relative = overall - value
                oe_raw = overall - _bound("pr_auc", above, nt, has_weights)
            else:
                value = neg - u2 / (2.0 * pos)
                relative = value - overall
                oe_raw = _bound("ranking_loss", above, nt) - overall
        w = weight(size, pos, neg, alpha_s, beta)
        weighted = w * relative
        bw = weight_bound(size, pos, neg, alpha_s, beta)
        oe = bw * np.maximum(oe_raw, 0.0)
        g = np.maximum(gen, weighted)
        if ga:
            ranking = weighted - gen
            oe_used = oe - g
        else:
            ranking = weighted
            oe_used = oe
        keys = _keys(children, base)
        v_idx = np.flatnonzero(valid)
        valid_total += len(v_idx)
        # update the held top-k': candidates are the valid patterns with a positive score
        c_idx = v_idx[ranking[v_idx] > 0]
        all_score = np.concatenate([top_score, ranking[c_idx]])
        all_key = np.concatenate([top_key, keys[c_idx]])
        best = np.lexsort((all_key, -all_score))[:k_prime]
        top_score, top_key = all_score[best], all_key[best]
        top_rows.append(
            {
                "key": keys[c_idx],
                "children": children[c_idx],
                "score": ranking[c_idx],
                "weighted": weighted[c_idx],
                "relative": relative[c_idx],
                "value": value[c_idx],
                "size": size[c_idx],
                "pos": pos[c_idx],
                "neg": neg[c_idx],
                "oe": oe_used[c_idx],
            }
        )
        # live patterns for the next level: those with a specialisation that can still
        # enter the top-k' (score > 0, and >= the k'-th score once k' candidates are held)
        live = valid.copy()
        if config.prune:
            theta = float(top_score[-1]) if len(top_score) >= k_prime else 0.0
            slack = PRUNE_SLACK * max(1.0, abs(theta))
            raw_slack = PRUNE_SLACK * max(1.0, abs(overall))
            cut = valid & ((oe_used < theta - slack) | (oe_raw < -raw_slack) | (bw == 0))
            if level < config.max_length:
                pruned_total += int(cut.sum())
            live &= ~cut
        per_level.append(
            {
                "level": level,
                "generated": generated,
                "evaluated": len(children),
                "valid": len(v_idx),
                "live": int(live.sum()),
            }
        )
        order_k = np.argsort(keys[v_idx], kind="stable")
        prev_keys = keys[v_idx][order_k]
        prev_live = live[v_idx][order_k]
        prev_g = g[v_idx][order_k]
        nxt = v_idx[live[v_idx]]
        if level == config.max_length:
            break
        parent_sel = children[nxt]
        parents = np.ascontiguousarray(parent_sel.astype(np.int32))
        parent_last = sel_attr[children[nxt, -1]]

    patterns: list[Pattern] = []
    if top_rows:
        cat = {k: np.concatenate([r[k] for r in top_rows]) for k in top_rows[0] if k != "children"}
        kids = [r["children"] for r in top_rows]
        lens = np.concatenate([np.full(len(c), c.shape[1]) for c in kids])
        flat_children: list[np.ndarray] = [row for c in kids for row in c]
        where = {int(k): i for i, k in enumerate(cat["key"])}
        for k in top_key:
            i = where[int(k)]
            sel = flat_children[i][: lens[i]]
            patterns.append(
                Pattern(
                    selectors=tuple((int(sel_attr[s]), int(s - offsets[sel_attr[s]])) for s in sel),
                    score=float(cat["score"][i]),
                    weighted=float(cat["weighted"][i]),
                    relative=float(cat["relative"][i]),
                    value=float(cat["value"][i]),
                    size=_count(cat["size"][i], has_weights),
                    positives=_count(cat["pos"][i], has_weights),
                    negatives=_count(cat["neg"][i], has_weights),
                    optimistic=float(cat["oe"][i]),
                    key=int(k),
                )
            )
    return SearchResult(
        patterns=patterns,
        overall=overall,
        positives=n_pos,
        negatives=n_neg,
        evaluated=evaluated,
        valid=valid_total,
        pruned=pruned_total,
        skipped=skipped_total,
        per_level=per_level,
    )


def _count(value: float, weighted: bool) -> float:
    """A count as reported: rows (an int), or a sum of sample weights."""
    return float(value) if weighted else int(value)


# --------------------------------------------------------------------------------------------
# Significance filtering (methods.md §6.6)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatternTest:
    value: float  # measure of the pattern's validation cover (NaN if undefined)
    statistic: float  # relative score on the validation set (NaN if undefined)
    size: float  # rows (an int), or the sum of their sample weights
    positives: float
    negatives: float
    exceed: int  # null statistics >= observed
    p_value: float


@dataclass
class SignificanceResult:
    overall: float  # the measure on the whole validation set
    tests: list[PatternTest]
    adjusted: np.ndarray
    null_pairs: int  # distinct (positives, negatives) null distributions drawn


def covers(codes: np.ndarray, patterns: list[tuple[tuple[int, int], ...]]) -> np.ndarray:
    """Boolean (n_patterns, n) cover matrix of patterns given as (attribute, code) selectors."""
    out = np.ones((len(patterns), codes.shape[0]), dtype=bool)
    for i, pat in enumerate(patterns):
        for a, v in pat:
            out[i] &= codes[:, a] == v
    return out


class _SubsetNull:
    """The random-subset test of a set of rows (methods.md §6.6 steps 2-4) on rows sorted by
    score, with the null draws cached per (positives, negatives): the search's significance
    test and the given subgroups' test share it. ``ws``: the sorted rows' sample weights (the
    measures are weighted; a null subset has the rows' numbers of positive and negative rows,
    each drawn row carrying its weight)."""

    def __init__(
        self,
        ys: np.ndarray,
        grp: np.ndarray,
        mcode: int,
        ws: np.ndarray | None,
        subsets: int,
        seed: np.random.SeedSequence,
        threads: int,
    ) -> None:
        self.ys, self.grp, self.mcode, self.ws = ys, grp, mcode, ws
        self.subsets, self.seed, self.threads = subsets, seed, max(1, threads)
        self.overall = _measure_rows(np.arange(len(ys), dtype=np.int64), ys, grp, mcode, ws)
        self.pos_rows = np.flatnonzero(ys == 1).astype(np.int64)
        self.neg_rows = np.flatnonzero(ys == 0).astype(np.int64)
        self.sign = -1.0 if mcode == MEASURE_ARL else 1.0  # statistic: larger = worse subgroup
        self.cache: dict[tuple[int, int], np.ndarray] = {}

    def observed(self, rows: np.ndarray) -> tuple[float, float, tuple[float, float, float]]:
        """(measure, statistic, (size, positives, negatives)) of ``rows``; sizes are sums of
        sample weights when weighted."""
        ys, ws = self.ys, self.ws
        value = _measure_rows(rows, ys, self.grp, self.mcode, ws) if len(rows) else float("nan")
        stat = self.sign * (self.overall - value)
        p_c = int(ys[rows].sum())
        if ws is None:
            return value, stat, (len(rows), p_c, len(rows) - p_c)
        w_pos = float(ws[rows][ys[rows] == 1].sum())
        return value, stat, (float(ws[rows].sum()), w_pos, float(ws[rows].sum()) - w_pos)

    def null(self, rows: np.ndarray) -> np.ndarray:
        """The statistics of ``subsets`` random subsets with as many positives and negatives."""
        p_c = int(self.ys[rows].sum())
        pair = (p_c, len(rows) - p_c)
        if pair not in self.cache:
            rng = np.random.Generator(np.random.PCG64(child_seed(self.seed, *pair)))
            up = rng.random((self.subsets, pair[0]))
            un = rng.random((self.subsets, pair[1]))
            args = (up, un, self.pos_rows, self.neg_rows, self.ys)
            values = null_measures(*args, self.grp, self.mcode, threads=self.threads, wt=self.ws)
            self.cache[pair] = self.sign * (self.overall - values)
        return self.cache[pair]


def _exceedances(null: np.ndarray, stat: float) -> int:
    return int(np.count_nonzero(null >= stat - TIE_TOLERANCE * max(1.0, abs(stat))))


def significance(
    codes: np.ndarray,
    y: np.ndarray,
    score: np.ndarray,
    patterns: list[tuple[tuple[int, int], ...]],
    measure_name: str,
    subsets: int,
    seed: np.random.SeedSequence,
    correction: str,
    *,
    paper_pvalue: bool = False,
    workers: int = 1,
    sample_weight: np.ndarray | None = None,
) -> SignificanceResult:
    """Random-subset test of each pattern on the validation set, with cached null draws.

    ``sample_weight``: the rows' sample weights. The measures are weighted; a null subset has the
    pattern's numbers of positive and negative rows, each drawn row carrying its weight."""
    order, ys, grp = _sorted_inputs(np.asarray(y), score)
    codes_sorted = np.asarray(codes)[order]
    ws = _sorted_weights(sample_weight, order)
    tester = _SubsetNull(ys, grp, MEASURES[measure_name], ws, subsets, seed, workers)
    tests: list[PatternTest] = []
    cov = covers(codes_sorted, patterns)
    for i in range(len(patterns)):
        rows = np.flatnonzero(cov[i]).astype(np.int64)
        value, stat, counts = tester.observed(rows)
        if not np.isfinite(stat) or subsets == 0:
            tests.append(PatternTest(value, float("nan"), *counts, 0, 1.0))
            continue
        exceed = _exceedances(tester.null(rows), stat)
        p = exceed / subsets if paper_pvalue else (1 + exceed) / (1 + subsets)
        tests.append(PatternTest(value, float(stat), *counts, exceed, p))
    adjusted = adjust_p_values(np.array([t.p_value for t in tests]), correction)
    return SignificanceResult(
        overall=tester.overall, tests=tests, adjusted=adjusted, null_pairs=len(tester.cache)
    )


# --- given subgroups (issue 26): the random-subset test of one subgroup, no search -------------


@dataclass
class FixedSubsetTest:
    """The random-subset test of one given subgroup, and the null statistics it used."""

    test: PatternTest
    null: np.ndarray | None  # statistics of the random subsets (None: untested)


def fixed_subset_tests(
    y: np.ndarray,
    score: np.ndarray,
    masks: list[np.ndarray],
    measure_name: str,
    subsets: int,
    seed: np.random.SeedSequence,
    *,
    workers: int = 1,
    sample_weight: np.ndarray | None = None,
) -> tuple[float, list[FixedSubsetTest]]:
    """(the measure on all rows, each subgroup's test): the statistic of subgroup ``mask`` is
    its raw relative score (methods.md §6.6 step 2, larger = worse) and its null the same
    statistic over ``subsets`` random subsets with as many positives and negatives, drawn
    without replacement (§6.6 step 3); p = (1 + #{null >= observed}) / (1 + R). The rows are
    all the rows given: with no search there is nothing to hold out. ``sample_weight``: as in
    :func:`significance`."""
    order, ys, grp = _sorted_inputs(np.asarray(y), score)
    ws = _sorted_weights(sample_weight, order)
    tester = _SubsetNull(ys, grp, MEASURES[measure_name], ws, subsets, seed, workers)
    out: list[FixedSubsetTest] = []
    for mask in masks:
        rows = np.flatnonzero(np.asarray(mask)[order]).astype(np.int64)
        value, stat, counts = tester.observed(rows)
        if not np.isfinite(stat) or subsets == 0:
            out.append(FixedSubsetTest(PatternTest(value, stat, *counts, 0, 1.0), None))
            continue
        null = tester.null(rows)
        exceed = _exceedances(null, stat)
        test = PatternTest(value, stat, *counts, exceed, (1 + exceed) / (1 + subsets))
        out.append(FixedSubsetTest(test, null))
    return tester.overall, out


def alternative_statistics(
    y: np.ndarray,
    score: np.ndarray,
    positives: int,
    negatives: int,
    measure_name: str,
    gap: float,
    replicates: int,
    seed: np.random.SeedSequence,
) -> np.ndarray:
    """The relative score of random subsets (``positives`` and ``negatives`` drawn without
    replacement, as the null) in which each positive is, with probability pi, scored like a
    random negative: a subgroup the classifier ranks worse, with pi set so that the expected
    gap is ``gap`` (the baseline's): a positive scored like a negative ranks at chance, so the
    measure moves toward its chance value (ROC AUC 1/2, PR AUC the prevalence) by the share pi
    (ranking loss: by pi times the chance gap of its negatives). Used for a re-test's power."""
    y = np.asarray(y)
    score = np.asarray(score, dtype=np.float64)
    overall = measure(y, score, measure_name)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if measure_name == "roc_auc":
        room = overall - 0.5
    elif measure_name == "pr_auc":
        room = overall - positives / max(positives + negatives, 1)
    else:  # ranking loss N (1 - AUC): chance N / 2, so the room is N (AUC - 1/2)
        room = negatives * (measure(y, score, "roc_auc") - 0.5)
    share = float(np.clip(gap / room, 0.0, 1.0)) if room > 0 else 1.0
    sign = -1.0 if measure_name == "ranking_loss" else 1.0
    out = np.empty(replicates)
    labels = np.r_[np.ones(positives, np.int8), np.zeros(negatives, np.int8)]
    for r in range(replicates):
        rng = replicate_rng(seed, r)
        p_rows = rng.choice(pos, positives, replace=False)
        n_rows = rng.choice(neg, negatives, replace=False)
        p_scores = score[p_rows].copy()
        chance = rng.random(positives) < share
        p_scores[chance] = score[rng.choice(neg, int(chance.sum()))]
        value = measure(labels, np.r_[p_scores, score[n_rows]], measure_name)
        out[r] = sign * (overall - value)
    return out
