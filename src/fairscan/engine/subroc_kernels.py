"""Compiled kernels of the SubROC search (methods.md §6).

Data is sorted once by score (ascending) and tie groups are numbered, so every subgroup
measure is one pass over the subgroup's rows in that order with running per-value counts:

* ROC AUC / ARL: ``U2`` = twice the Mann-Whitney count (positive above negative = 2, tie = 1),
  accumulated per tie group from the running count of negatives strictly below;
* PR AUC: a descending pass over the tie groups (one PR point per distinct score present);
* the optimistic estimates need only the lowest-scored positive of each subgroup: the
  negatives strictly below it and tied with it (Theorems 1, 3, 5 of the SubROC paper).

``evaluate_children`` computes these for *every value* of one attribute inside one parent
cover in a single pass, i.e. for all children of a parent that add a selector on that
attribute. Parents are processed in parallel (``prange`` over chunks; every parent writes its
own output slots, so results do not depend on the thread count).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

MEASURE_ROC = 0
MEASURE_PR = 1
MEASURE_ARL = 2


@njit(cache=True, nogil=True)
def _cover_rows(parent: np.ndarray, bits: np.ndarray, out: np.ndarray) -> int:
    """Rows (ascending = score order) in the AND of the parents' selector bitsets."""
    nwords = bits.shape[1]
    c = 0
    for w in range(nwords):
        word = bits[parent[0], w]
        for k in range(1, parent.shape[0]):
            word &= bits[parent[k], w]
        base = w * 64
        while word != 0:
            low = word & (~word + np.uint64(1))  # lowest set bit
            # position of the lowest set bit
            b = 0
            t = low
            if t >> np.uint64(32):
                b += 32
                t >>= np.uint64(32)
            if t >> np.uint64(16):
                b += 16
                t >>= np.uint64(16)
            if t >> np.uint64(8):
                b += 8
                t >>= np.uint64(8)
            if t >> np.uint64(4):
                b += 4
                t >>= np.uint64(4)
            if t >> np.uint64(2):
                b += 2
                t >>= np.uint64(2)
            if t >> np.uint64(1):
                b += 1
            out[c] = base + b
            c += 1
            word ^= low
    return c


@njit(cache=True, nogil=True)
def _pass_attribute(
    rows: np.ndarray,
    c: int,
    codes_a: np.ndarray,
    y: np.ndarray,
    grp: np.ndarray,
    k: int,
    do_pr: bool,
    out: int,
    pos: np.ndarray,
    neg: np.ndarray,
    u2: np.ndarray,
    negbelow: np.ndarray,
    negtied: np.ndarray,
    area: np.ndarray,
    tmp: np.ndarray,
    cum: np.ndarray,
    seen: np.ndarray,
    tmp2: np.ndarray,
    prev: np.ndarray,
) -> None:
    for v in range(k):
        tmp[v] = 0
        cum[v] = 0
        seen[v] = False
        pos[out + v] = 0
        neg[out + v] = 0
        u2[out + v] = 0
        negbelow[out + v] = 0
        negtied[out + v] = 0
        area[out + v] = 0.0
    i = 0
    while i < c:
        g = grp[rows[i]]
        j = i
        while j < c and grp[rows[j]] == g:
            j += 1
        for t in range(i, j):
            r = rows[t]
            if y[r] == 0:
                tmp[codes_a[r]] += 1
        for t in range(i, j):
            r = rows[t]
            if y[r] == 1:
                v = codes_a[r]
                u2[out + v] += 2 * cum[v] + tmp[v]
                pos[out + v] += 1
                if not seen[v]:
                    seen[v] = True
                    negbelow[out + v] = cum[v]
                    negtied[out + v] = tmp[v]
        for t in range(i, j):
            r = rows[t]
            v = codes_a[r]
            if tmp[v] > 0:
                cum[v] += tmp[v]
                neg[out + v] += tmp[v]
                tmp[v] = 0
        i = j
    if not do_pr:
        return
    # descending pass: PR curve points at each distinct score present in the subgroup
    for v in range(k):
        tmp[v] = 0  # TP so far
        cum[v] = 0  # FP so far
        tmp2[v] = 0  # packed per-group counts: tp in low 32 bits, fp in high bits
        prev[v] = 1.0  # precision at the origin (methods.md S2)
    i = c - 1
    while i >= 0:
        g = grp[rows[i]]
        j = i
        while j >= 0 and grp[rows[j]] == g:
            j -= 1
        for t in range(j + 1, i + 1):
            r = rows[t]
            v = codes_a[r]
            if y[r] == 1:
                tmp2[v] += 1
            else:
                tmp2[v] += 1 << 32
        for t in range(j + 1, i + 1):
            r = rows[t]
            v = codes_a[r]
            packed = tmp2[v]
            if packed != 0:
                tpg = packed & 0xFFFFFFFF
                fpg = packed >> 32
                tmp[v] += tpg
                cum[v] += fpg
                prec = tmp[v] / (tmp[v] + cum[v])
                area[out + v] += tpg * (prec + prev[v]) * 0.5
                prev[v] = prec
                tmp2[v] = 0
        i = j
    for v in range(k):
        if pos[out + v] > 0:
            area[out + v] /= pos[out + v]


@njit(cache=True, parallel=True)
def evaluate_children(
    parents: np.ndarray,  # (n_parents, L) int32 selector ids (row `root` of bits = all rows)
    bits: np.ndarray,  # (n_selectors + 1, n_words) uint64 bitsets in score order
    task_ptr: np.ndarray,  # (n_parents + 1,) int64: tasks of parent p are task_ptr[p]:task_ptr[p+1]
    task_attr: np.ndarray,  # (n_tasks,) int32 attribute of each task
    task_out: np.ndarray,  # (n_tasks,) int64 first output slot (one slot per value)
    n_out: int,
    codes_t: np.ndarray,  # (m, n) int32 codes in score order
    card: np.ndarray,  # (m,) int32
    y: np.ndarray,  # (n,) int8 in score order
    grp: np.ndarray,  # (n,) int32 tie group of each row (ascending)
    do_pr: bool,
    n_chunks: int,
):
    pos = np.zeros(n_out, np.int64)
    neg = np.zeros(n_out, np.int64)
    u2 = np.zeros(n_out, np.int64)
    negbelow = np.zeros(n_out, np.int64)
    negtied = np.zeros(n_out, np.int64)
    area = np.zeros(n_out, np.float64)
    n_parents = parents.shape[0]
    n = y.shape[0]
    kmax = 1
    for a in range(card.shape[0]):
        kmax = max(kmax, card[a])
    for chunk in prange(n_chunks):
        lo = chunk * n_parents // n_chunks
        hi = (chunk + 1) * n_parents // n_chunks
        rows = np.empty(n, np.int64)
        tmp = np.zeros(kmax, np.int64)
        cum = np.zeros(kmax, np.int64)
        seen = np.zeros(kmax, np.bool_)
        tmp2 = np.zeros(kmax, np.int64)
        prev = np.ones(kmax, np.float64)
        for p in range(lo, hi):
            if task_ptr[p + 1] == task_ptr[p]:
                continue
            c = _cover_rows(parents[p], bits, rows)
            for t in range(task_ptr[p], task_ptr[p + 1]):
                a = task_attr[t]
                _pass_attribute(
                    rows,
                    c,
                    codes_t[a],
                    y,
                    grp,
                    card[a],
                    do_pr,
                    task_out[t],
                    pos,
                    neg,
                    u2,
                    negbelow,
                    negtied,
                    area,
                    tmp,
                    cum,
                    seen,
                    tmp2,
                    prev,
                )
    return pos, neg, u2, negbelow, negtied, area


@njit(cache=True, nogil=True)
def measure_sorted(rows: np.ndarray, y: np.ndarray, grp: np.ndarray, measure: int) -> float:
    """The measure of the rows ``rows`` (ascending positions in score order); NaN if undefined."""
    c = rows.shape[0]
    p = 0
    nneg = 0
    u2 = 0
    i = 0
    while i < c:
        g = grp[rows[i]]
        j = i
        while j < c and grp[rows[j]] == g:
            j += 1
        tn = 0
        tp = 0
        for t in range(i, j):
            if y[rows[t]] == 0:
                tn += 1
            else:
                tp += 1
        u2 += tp * (2 * nneg + tn)
        p += tp
        nneg += tn
        i = j
    if measure == MEASURE_ROC:
        if p == 0 or nneg == 0:
            return np.nan
        return u2 / (2.0 * p * nneg)
    if p == 0:
        return np.nan
    if measure == MEASURE_ARL:
        return nneg - u2 / (2.0 * p)
    # PR AUC, descending
    tpc = 0
    fpc = 0
    prev = 1.0
    total = 0.0
    i = c - 1
    while i >= 0:
        g = grp[rows[i]]
        j = i
        while j >= 0 and grp[rows[j]] == g:
            j -= 1
        tpg = 0
        fpg = 0
        for t in range(j + 1, i + 1):
            if y[rows[t]] == 1:
                tpg += 1
            else:
                fpg += 1
        tpc += tpg
        fpc += fpg
        prec = tpc / (tpc + fpc)
        total += tpg * (prec + prev) * 0.5
        prev = prec
        i = j
    return total / p


@njit(cache=True, parallel=True)
def null_measures(
    uniforms_pos: np.ndarray,  # (R, n_pos_draw) uniforms in [0, 1)
    uniforms_neg: np.ndarray,  # (R, n_neg_draw)
    pos_rows: np.ndarray,  # positions (score order) of the validation positives
    neg_rows: np.ndarray,  # positions of the validation negatives
    y: np.ndarray,
    grp: np.ndarray,
    measure: int,
) -> np.ndarray:
    """Measure of R random subsets with exactly n_pos_draw positives and n_neg_draw negatives,
    drawn without replacement (Floyd's algorithm driven by the given uniforms)."""
    r_total = uniforms_pos.shape[0]
    kp = uniforms_pos.shape[1]
    kn = uniforms_neg.shape[1]
    out = np.empty(r_total, np.float64)
    for r in prange(r_total):
        chosen = np.empty(kp + kn, np.int64)
        _floyd(uniforms_pos[r], pos_rows, chosen, 0)
        _floyd(uniforms_neg[r], neg_rows, chosen, kp)
        k = kp + kn
        if k * 16 < y.shape[0]:
            chosen.sort()
        else:  # large subsets: mark and read back in order, O(n) instead of O(k log k)
            flag = np.zeros(y.shape[0], np.bool_)
            for q in range(k):
                flag[chosen[q]] = True
            c = 0
            for q in range(y.shape[0]):
                if flag[q]:
                    chosen[c] = q
                    c += 1
        out[r] = measure_sorted(chosen, y, grp, measure)
    return out


@njit(cache=True, nogil=True)
def _floyd(u: np.ndarray, pool: np.ndarray, chosen: np.ndarray, start: int) -> None:
    """Floyd's sampling of len(u) distinct items of ``pool`` into ``chosen[start:]``."""
    k = u.shape[0]
    n = pool.shape[0]
    if k == 0:
        return
    picked = np.empty(k, np.int64)
    mark = np.zeros(n, np.bool_)
    for m in range(k):
        jj = n - k + m
        t = int(u[m] * (jj + 1))
        if t > jj:
            t = jj
        if mark[t]:
            t = jj
        mark[t] = True
        picked[m] = t
    for q in range(k):
        chosen[start + q] = pool[picked[q]]
