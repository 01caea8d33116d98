# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Compiled kernels of the SubROC search (methods.md §6), built ahead of time (Cython).

Data is sorted once by score (ascending) and tie groups are numbered, so every subgroup
measure is one pass over the subgroup's rows in that order with running per-value counts:

* ROC AUC / ARL: ``U2`` = twice the Mann-Whitney count (positive above negative = 2, tie = 1),
  accumulated per tie group from the running count of negatives strictly below;
* PR AUC: a descending pass over the tie groups (one PR point per distinct score present);
* the optimistic estimates need only the lowest-scored positive of each subgroup: the
  negatives strictly below it and tied with it (Theorems 1, 3, 5 of the SubROC paper).

``evaluate_children`` computes these for *every value* of one attribute inside one parent
cover in a single pass, i.e. for all children of a parent that add a selector on that
attribute. Parents are processed by ``threads`` OpenMP threads in chunks; every parent writes
its own output slots, so results do not depend on the thread count.

Sample weights (``columns.weight``): every pass takes an optional weight pointer ``wt`` (rows in
score order); NULL means unit weights. Every count is then a sum of the rows' weights, held as a
double. With unit weights the doubles hold whole numbers, exact below 2^53 (twice the
Mann-Whitney count, the largest, stays below it up to about 1.3e8 rows in a subgroup), and every
operation is the one the counts went through, so an unweighted run returns the bits it returned
when these were int64 counts.
Rows read their weight through :func:`_weight`, an inline whose NULL test is the same for the
whole pass (always predicted; ``-O3`` may move it out of the loop): the unweighted passes read no
weight array and measure as fast as the count passes they replace (benchmarks/bench_subroc.py).

Ctrl-C: both parallel entry points work in batches and check for pending signals between
batches (holding the GIL), so an interrupt raises within a fraction of a second.
"""

from cython.parallel cimport parallel, prange
from libc.math cimport NAN
from libc.stdlib cimport malloc, calloc, free, qsort
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t

import numpy as np




cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


MEASURE_ROC = 0
MEASURE_PR = 1
MEASURE_ARL = 2
cdef enum:
    C_ROC = 0
    C_PR = 1
    C_ARL = 2

# parents (or null subsets) handled between two checks for Ctrl-C, per thread
cdef int64_t BATCH_PER_THREAD = 64


cdef inline int _lowest_bit(uint64_t t) noexcept nogil:
    """Position of the only set bit of ``t`` (binary search, as the numba kernel did)."""
    cdef int b = 0
    if t >> 32:
        b += 32
        t >>= 32
    if t >> 16:
        b += 16
        t >>= 16
    if t >> 8:
        b += 8
        t >>= 8
    if t >> 4:
        b += 4
        t >>= 4
    if t >> 2:
        b += 2
        t >>= 2
    if t >> 1:
        b += 1
    return b


cdef int64_t _cover_rows(const int32_t* parent, int64_t plen, const uint64_t* bits,
                         int64_t nwords, int64_t* out) noexcept nogil:
    """Rows (ascending = score order) in the AND of the parents' selector bitsets."""
    cdef int64_t c = 0
    cdef int64_t w, k, base
    cdef uint64_t word, low
    for w in range(nwords):
        word = bits[parent[0] * nwords + w]
        for k in range(1, plen):
            word &= bits[parent[k] * nwords + w]
        base = w * 64
        while word != 0:
            low = word & (~word + 1)  # lowest set bit
            out[c] = base + _lowest_bit(low)
            c += 1
            word ^= low
    return c


cdef inline double _weight(const double* wt, int64_t r) noexcept nogil:
    """The weight of row ``r``: 1 without weights (``wt`` NULL)."""
    return 1.0 if wt == NULL else wt[r]


cdef const double* _weights_or_null(const double[::1] wt, int64_t n) except? NULL:
    """The caller's weights ``wt`` (one per row) as a pointer, or NULL for None (unit weights)."""
    if wt is None:
        return NULL
    if wt.shape[0] != n:
        raise ValueError("wt must have one weight per row")
    return &wt[0] if n > 0 else NULL


cdef struct Outputs:
    double* pos
    double* neg
    double* u2
    double* negbelow
    double* negtied
    double* area


cdef struct Scratch:
    int64_t* rows
    double* tmp
    double* cum
    double* group  # PR pass: TP and FP of the current tie group, interleaved per value
    uint8_t* seen
    double* prev


cdef void _pass_attribute(const int64_t* rows, int64_t c, const int32_t* codes_a,
                          const int8_t* y, const double* wt, const int32_t* grp, int64_t k,
                          bint do_pr, int64_t out, Outputs* o, Scratch* s) noexcept nogil:
    cdef int64_t v, i, j, t, r, g
    cdef double w, prec, tpg, fpg
    for v in range(k):
        s.tmp[v] = 0.0
        s.cum[v] = 0.0
        s.seen[v] = 0
        o.pos[out + v] = 0.0
        o.neg[out + v] = 0.0
        o.u2[out + v] = 0.0
        o.negbelow[out + v] = 0.0
        o.negtied[out + v] = 0.0
        o.area[out + v] = 0.0
    i = 0
    while i < c:
        g = grp[rows[i]]
        j = i
        while j < c and grp[rows[j]] == g:
            j += 1
        for t in range(i, j):
            r = rows[t]
            if y[r] == 0:
                s.tmp[codes_a[r]] += _weight(wt, r)
        for t in range(i, j):
            r = rows[t]
            if y[r] == 1:
                v = codes_a[r]
                w = _weight(wt, r)
                o.u2[out + v] += w * (2.0 * s.cum[v] + s.tmp[v])
                o.pos[out + v] += w
                if not s.seen[v]:
                    s.seen[v] = 1
                    o.negbelow[out + v] = s.cum[v]
                    o.negtied[out + v] = s.tmp[v]
        for t in range(i, j):
            v = codes_a[rows[t]]
            if s.tmp[v] > 0.0:  # weights are positive (data/weights.py drops weight 0)
                s.cum[v] += s.tmp[v]
                o.neg[out + v] += s.tmp[v]
                s.tmp[v] = 0.0
        i = j
    if not do_pr:
        return
    # descending pass: PR curve points at each distinct score present in the subgroup
    for v in range(k):
        s.tmp[v] = 0.0  # TP so far
        s.cum[v] = 0.0  # FP so far
        s.group[2 * v] = 0.0
        s.group[2 * v + 1] = 0.0
        s.prev[v] = 1.0  # precision at the origin (methods.md S2)
    i = c - 1
    while i >= 0:
        g = grp[rows[i]]
        j = i
        while j >= 0 and grp[rows[j]] == g:
            j -= 1
        for t in range(j + 1, i + 1):
            r = rows[t]
            s.group[2 * codes_a[r] + (y[r] == 0)] += _weight(wt, r)  # TP, or FP
        for t in range(j + 1, i + 1):
            v = codes_a[rows[t]]
            tpg = s.group[2 * v]
            fpg = s.group[2 * v + 1]
            if tpg + fpg > 0.0:
                s.tmp[v] += tpg
                s.cum[v] += fpg
                prec = s.tmp[v] / (s.tmp[v] + s.cum[v])
                o.area[out + v] += tpg * (prec + s.prev[v]) * 0.5
                s.prev[v] = prec
                s.group[2 * v] = 0.0
                s.group[2 * v + 1] = 0.0
        i = j
    for v in range(k):
        if o.pos[out + v] > 0:
            o.area[out + v] /= o.pos[out + v]


cdef Scratch* _scratch_new(int64_t n, int64_t kmax) noexcept nogil:
    """Per-thread buffers (NULL when memory is short)."""
    cdef Scratch* s = <Scratch*>calloc(1, sizeof(Scratch))
    if s == NULL:
        return NULL
    s.rows = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    s.tmp = <double*>calloc(kmax, sizeof(double))
    s.cum = <double*>calloc(kmax, sizeof(double))
    s.group = <double*>calloc(2 * kmax, sizeof(double))
    s.seen = <uint8_t*>calloc(kmax, sizeof(uint8_t))
    s.prev = <double*>malloc(kmax * sizeof(double))
    if (s.rows == NULL or s.tmp == NULL or s.cum == NULL or s.group == NULL or s.seen == NULL
            or s.prev == NULL):
        _scratch_free(s)
        return NULL
    return s


cdef void _scratch_free(Scratch* s) noexcept nogil:
    if s == NULL:
        return
    free(s.rows)
    free(s.tmp)
    free(s.cum)
    free(s.group)
    free(s.seen)
    free(s.prev)
    free(s)


def evaluate_children(
    const int32_t[:, ::1] parents,  # (n_parents, L) selector ids (row `root` of bits = all rows)
    const uint64_t[:, ::1] bits,  # (n_selectors + 1, n_words) bitsets in score order
    const int64_t[::1] task_ptr,  # (n_parents + 1,): tasks of parent p are task_ptr[p]:task_ptr[p+1]
    const int32_t[::1] task_attr,  # (n_tasks,) attribute of each task
    const int64_t[::1] task_out,  # (n_tasks,) first output slot (one slot per value)
    int64_t n_out,
    const int32_t[:, ::1] codes_t,  # (m, n) codes in score order
    const int32_t[::1] card,  # (m,)
    const int8_t[::1] y,  # (n,) in score order
    const int32_t[::1] grp,  # (n,) tie group of each row (ascending)
    bint do_pr,
    int64_t n_chunks,
    int threads=1,
    const double[::1] wt=None,  # (n,) sample weights in score order; None: unit weights
):
    """Counts (sums of weights) and measures of every child (parent x attribute value), see the
    module doc.

    Returns ``pos, neg, u2, negbelow, negtied, area`` (float64) arrays of length ``n_out``."""
    cdef int64_t n_parents = parents.shape[0]
    cdef int64_t plen = parents.shape[1]
    cdef int64_t nwords = bits.shape[1]
    cdef int64_t n = y.shape[0]
    cdef int64_t kmax = 1
    cdef int64_t a
    for a in range(card.shape[0]):
        kmax = max(kmax, <int64_t>card[a])
    if task_ptr.shape[0] != n_parents + 1:
        raise ValueError("task_ptr must have n_parents + 1 entries")
    cdef const double* w = _weights_or_null(wt, n)
    outs = [np.zeros(n_out, np.float64) for _ in range(6)]
    if n_parents == 0 or n_out == 0 or plen == 0:
        return tuple(outs)
    cdef double[::1] pos = outs[0]
    cdef double[::1] neg = outs[1]
    cdef double[::1] u2 = outs[2]
    cdef double[::1] negbelow = outs[3]
    cdef double[::1] negtied = outs[4]
    cdef double[::1] area = outs[5]
    cdef Outputs o
    o.pos = &pos[0]
    o.neg = &neg[0]
    o.u2 = &u2[0]
    o.negbelow = &negbelow[0]
    o.negtied = &negtied[0]
    o.area = &area[0]
    cdef int nthreads = max(1, threads)
    cdef int64_t chunks = max(1, min(n_chunks, n_parents))
    cdef int64_t per_batch = max(<int64_t>1, BATCH_PER_THREAD * nthreads)
    cdef int64_t batch_lo = 0
    cdef int64_t batch_hi, chunk, lo, hi, p, t, c
    cdef int failed[1]
    cdef Scratch* s
    failed[0] = 0
    # Parents are split into `chunks` contiguous chunks (as before); chunks run in parallel
    # batches, with a Ctrl-C check between batches.
    while batch_lo < chunks:
        batch_hi = min(chunks, batch_lo + per_batch)
        with nogil, parallel(num_threads=nthreads):
            s = _scratch_new(n, kmax)
            if s == NULL:
                failed[0] = 1
            else:
                for chunk in prange(batch_lo, batch_hi, schedule="dynamic"):
                    lo = chunk * n_parents // chunks
                    hi = (chunk + 1) * n_parents // chunks
                    for p in range(lo, hi):
                        if task_ptr[p + 1] == task_ptr[p]:
                            continue
                        c = _cover_rows(&parents[p, 0], plen, &bits[0, 0], nwords, s.rows)
                        for t in range(task_ptr[p], task_ptr[p + 1]):
                            a = task_attr[t]
                            _pass_attribute(s.rows, c, &codes_t[a, 0], &y[0], w, &grp[0],
                                            card[a], do_pr, task_out[t], &o, s)
            _scratch_free(s)
        if failed[0]:
            raise MemoryError("not enough memory for the SubROC search buffers")
        PyErr_CheckSignals()
        batch_lo = batch_hi
    return tuple(outs)


cdef double _measure_sorted(const int64_t* rows, int64_t c, const int8_t* y, const double* wt,
                            const int32_t* grp, int measure) noexcept nogil:
    cdef double p = 0.0
    cdef double nneg = 0.0
    cdef double u2 = 0.0
    cdef int64_t i = 0
    cdef int64_t j, t, g
    cdef double tn, tp, tpc, fpc, tpg, fpg, prec, prev, total
    while i < c:
        g = grp[rows[i]]
        j = i
        while j < c and grp[rows[j]] == g:
            j += 1
        tn = 0.0
        tp = 0.0
        for t in range(i, j):
            if y[rows[t]] == 0:
                tn += _weight(wt, rows[t])
            else:
                tp += _weight(wt, rows[t])
        u2 += tp * (2.0 * nneg + tn)
        p += tp
        nneg += tn
        i = j
    if measure == C_ROC:
        if p <= 0.0 or nneg <= 0.0:
            return NAN
        return u2 / (2.0 * p * nneg)
    if p <= 0.0:
        return NAN
    if measure == C_ARL:
        return nneg - u2 / (2.0 * p)
    # PR AUC, descending
    tpc = 0.0
    fpc = 0.0
    prev = 1.0
    total = 0.0
    i = c - 1
    while i >= 0:
        g = grp[rows[i]]
        j = i
        while j >= 0 and grp[rows[j]] == g:
            j -= 1
        tpg = 0.0
        fpg = 0.0
        for t in range(j + 1, i + 1):
            if y[rows[t]] == 1:
                tpg += _weight(wt, rows[t])
            else:
                fpg += _weight(wt, rows[t])
        tpc += tpg
        fpc += fpg
        prec = tpc / (tpc + fpc)
        total += tpg * (prec + prev) * 0.5
        prev = prec
        i = j
    return total / p


def measure_sorted(const int64_t[::1] rows, const int8_t[::1] y, const int32_t[::1] grp,
                   int measure, const double[::1] wt=None):
    """The measure of the rows ``rows`` (ascending positions in score order); NaN if undefined.
    ``wt``: float64 sample weights of all rows in score order (None: unit weights)."""
    if measure not in (C_ROC, C_PR, C_ARL):
        raise ValueError(f"unknown measure code {measure}")
    cdef const double* w = _weights_or_null(wt, y.shape[0])
    if rows.shape[0] == 0:
        return NAN
    return _measure_sorted(&rows[0], rows.shape[0], &y[0], w, &grp[0], measure)


cdef void _floyd(const double* u, int64_t k, const int64_t* pool, int64_t n, int64_t* chosen,
                 int64_t* picked, uint8_t* mark) noexcept nogil:
    """Floyd's sampling of k distinct items of ``pool`` into ``chosen`` (mark: n zeros)."""
    cdef int64_t m, jj, t, q
    if k == 0:
        return
    for m in range(k):
        jj = n - k + m
        t = <int64_t>(u[m] * (jj + 1))
        if t > jj:
            t = jj
        if mark[t]:
            t = jj
        mark[t] = 1
        picked[m] = t
    for q in range(k):
        chosen[q] = pool[picked[q]]
        mark[picked[q]] = 0  # leave the marks clean for the next draw


cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


def null_measures(
    uniforms_pos,  # (R, n_pos_draw) uniforms in [0, 1)
    uniforms_neg,  # (R, n_neg_draw)
    pos_rows,  # positions (score order) of the validation positives
    neg_rows,  # positions of the validation negatives
    y,
    grp,
    int measure,
    int threads=1,
    wt=None,  # sample weights of the rows in score order; None: unit weights
):
    """Measure of R random subsets with exactly n_pos_draw positives and n_neg_draw negatives,
    drawn without replacement (Floyd's algorithm driven by the given uniforms). With weights
    ``wt`` the subsets are the same rows, each carrying its weight into the measure."""
    return _null_measures(
        np.ascontiguousarray(uniforms_pos, dtype=np.float64),
        np.ascontiguousarray(uniforms_neg, dtype=np.float64),
        np.ascontiguousarray(pos_rows, dtype=np.int64),
        np.ascontiguousarray(neg_rows, dtype=np.int64),
        np.ascontiguousarray(y, dtype=np.int8),
        np.ascontiguousarray(grp, dtype=np.int32),
        None if wt is None else np.ascontiguousarray(wt, dtype=np.float64),
        measure,
        threads,
    )


cdef _null_measures(
    const double[:, ::1] uniforms_pos,
    const double[:, ::1] uniforms_neg,
    const int64_t[::1] pos_rows,
    const int64_t[::1] neg_rows,
    const int8_t[::1] y,
    const int32_t[::1] grp,
    const double[::1] wt,
    int measure,
    int threads,
):
    if measure not in (C_ROC, C_PR, C_ARL):
        raise ValueError(f"unknown measure code {measure}")
    cdef int64_t r_total = uniforms_pos.shape[0]
    cdef int64_t kp = uniforms_pos.shape[1]
    cdef int64_t kn = uniforms_neg.shape[1]
    cdef int64_t n = y.shape[0]
    cdef int64_t n_pos = pos_rows.shape[0]
    cdef int64_t n_neg = neg_rows.shape[0]
    if uniforms_neg.shape[0] != r_total:
        raise ValueError("uniforms_pos and uniforms_neg need the same number of rows")
    if kp > n_pos or kn > n_neg:
        raise ValueError("cannot draw more rows than the pools hold")
    cdef const double* w = _weights_or_null(wt, n)
    out_a = np.empty(r_total, np.float64)
    if r_total == 0:
        return out_a
    cdef double[::1] out = out_a
    cdef int nthreads = max(1, threads)
    cdef int64_t per_batch = max(<int64_t>1, BATCH_PER_THREAD * nthreads)
    cdef int64_t batch_lo = 0
    cdef int64_t batch_hi, r, k, q, cnt
    cdef int failed[1]
    cdef int64_t* chosen
    cdef int64_t* picked
    cdef uint8_t* mark
    cdef uint8_t* flag
    cdef const double* up = &uniforms_pos[0, 0] if kp > 0 else NULL
    cdef const double* un = &uniforms_neg[0, 0] if kn > 0 else NULL
    cdef const int64_t* prow = &pos_rows[0] if n_pos > 0 else NULL
    cdef const int64_t* nrow = &neg_rows[0] if n_neg > 0 else NULL
    k = kp + kn
    failed[0] = 0
    while batch_lo < r_total:
        batch_hi = min(r_total, batch_lo + per_batch)
        with nogil, parallel(num_threads=nthreads):
            chosen = <int64_t*>malloc((k + 1) * sizeof(int64_t))
            picked = <int64_t*>malloc((k + 1) * sizeof(int64_t))
            mark = <uint8_t*>calloc(max(n_pos, n_neg) + 1, sizeof(uint8_t))
            flag = <uint8_t*>calloc(n + 1, sizeof(uint8_t))
            if chosen == NULL or picked == NULL or mark == NULL or flag == NULL:
                failed[0] = 1
            else:
                for r in prange(batch_lo, batch_hi, schedule="static"):
                    _floyd(up + r * kp, kp, prow, n_pos, chosen, picked, mark)
                    _floyd(un + r * kn, kn, nrow, n_neg, chosen + kp, picked, mark)
                    if k * 16 < n:
                        qsort(chosen, k, sizeof(int64_t), _cmp_int64)
                    else:  # large subsets: mark and read back in order, O(n), not O(k log k)
                        for q in range(k):
                            flag[chosen[q]] = 1
                        cnt = 0
                        for q in range(n):
                            if flag[q]:
                                chosen[cnt] = q
                                cnt = cnt + 1
                                flag[q] = 0
                    out[r] = _measure_sorted(chosen, k, &y[0], w, &grp[0], measure)
            free(chosen)
            free(picked)
            free(mark)
            free(flag)
        if failed[0]:
            raise MemoryError("not enough memory for the SubROC null draws")
        PyErr_CheckSignals()
        batch_lo = batch_hi
    return out_a
