# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Compiled MDSS search over *profile* cells with per-row Bernoulli expectations (issue 12).

With continuous probabilities no two rows share a (profile, expectation) cell, so the row-level
kernels (kernels.pyx) evaluate ``sum log(1 - p + p e^u)`` over every row at every Newton step.
Here each attribute profile ``c`` keeps its row count ``w``, its observed sum ``C`` (the only
thing a null replicate changes), ``E = sum p`` and a piecewise Chebyshev expansion of

    g_c(u) = sum_{i in c} log(1 - p_i + p_i e^u),     u = log q,

on the scan direction's half of the bracket (``[0, log 1e6]`` positive, ``[-log 1e6, 0]``
negative; the row kernels clip every interval to that half, so nothing outside is needed).
Sums over cells are sums of coefficient vectors, so every set the LTSS step scores is one vector
``A`` and ``F(u) = C u - G_A(u)``. Pieces: ``breaks`` (P + 1 increasing ends) and ``offs``
(P + 1 offsets into a row of coefficients; piece ``k`` has degree ``offs[k+1] - offs[k] - 1``).

The search mirrors the Bernoulli path of kernels.pyx step for step (same restarts, same
splitmix64 stream, same candidate sets, same acceptance rule, Newton tolerances 1e-12 in u), so
it finds the same subgroups as the row-level search, with scores equal up to the expansion's
error (about 1e-14 of the largest |g| on a piece; pieces shrink geometrically towards u = 0,
where small scores of large sets are a difference of large terms).
"""

from libc.math cimport exp, expm1, log, log1p, fabs, sqrt, cos, isnan, INFINITY, NAN, M_PI
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

import numpy as np


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef double _U_HI = log(1e6)
cdef double _TOL_U = 1e-12
cdef int _MAX_ITER = 200
cdef double _REL_IMPROVEMENT = 1e-9

U_HI = _U_HI


# --------------------------------------------------------------------------------------------
# Random numbers: splitmix64, identical to kernels.pyx (same restarts for the same seed)
# --------------------------------------------------------------------------------------------


cdef inline uint64_t _next_u64(uint64_t* state) noexcept nogil:
    cdef uint64_t z = state[0] + <uint64_t>0x9E3779B97F4A7C15
    state[0] = z
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double _uniform(uint64_t* state) noexcept nogil:
    return <double>(_next_u64(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline int64_t _randint(uint64_t* state, int64_t n) noexcept nogil:
    cdef int64_t k = <int64_t>(_uniform(state) * n)
    return k if k < n else n - 1


# --------------------------------------------------------------------------------------------
# Piecewise Chebyshev expansions
# --------------------------------------------------------------------------------------------


cdef struct Cheb:
    const double* breaks  # n_pieces + 1
    const int64_t* offs  # n_pieces + 1
    int64_t n_pieces
    int64_t K  # numbers per cell: offs[n_pieces] coefficients, then the cumulants k2, k3
    double lo
    double hi


cdef void _eval(const double* a, const Cheb* ch, double u, double* g, double* d1,
                double* d2) noexcept nogil:
    """G(u), G'(u) and G''(u) of the expansion ``a`` (forward recurrences of T_k, T'_k, T''_k)."""
    cdef int64_t pc = 0
    cdef double lo, hi, scale, x, t0, t1, t2, dt0, dt1, dt2, ddt0, ddt1, ddt2, s, sd, sdd
    cdef int64_t n, k
    cdef const double* c
    while pc < ch.n_pieces - 1 and u > ch.breaks[pc + 1]:
        pc += 1
    lo = ch.breaks[pc]
    hi = ch.breaks[pc + 1]
    scale = 2.0 / (hi - lo)
    x = (2.0 * u - lo - hi) / (hi - lo)
    if x > 1.0:
        x = 1.0
    elif x < -1.0:
        x = -1.0
    c = a + ch.offs[pc]
    n = ch.offs[pc + 1] - ch.offs[pc]
    s = c[0]
    sd = 0.0
    sdd = 0.0
    if n > 1:
        s += c[1] * x
        sd += c[1]
    t0 = 1.0
    t1 = x
    dt0 = 0.0
    dt1 = 1.0
    ddt0 = 0.0
    ddt1 = 0.0
    for k in range(2, n):
        t2 = 2.0 * x * t1 - t0
        dt2 = 2.0 * t1 + 2.0 * x * dt1 - dt0
        ddt2 = 4.0 * dt1 + 2.0 * x * ddt1 - ddt0
        s += c[k] * t2
        sd += c[k] * dt2
        sdd += c[k] * ddt2
        t0 = t1
        t1 = t2
        dt0 = dt1
        dt1 = dt2
        ddt0 = ddt1
        ddt1 = ddt2
    g[0] = s
    d1[0] = sd * scale
    d2[0] = sdd * scale * scale


cdef inline double _F(double C, const double* A, const Cheb* ch, double u) noexcept nogil:
    cdef double g, d1, d2
    _eval(A, ch, u, &g, &d1, &d2)
    return C * u - g


cdef double _argmax_u(double C, double W, double E, const double* A, const Cheb* ch,
                      double a, double b) noexcept nogil:
    """Maximiser of the concave F(u) = C u - G(u) on [a, b] (kernels.pyx ``_argmax_u``)."""
    cdef int it
    cdef double pbar, x, nx, g, d1, d2, db, da, unused
    cdef bint checked_a = False
    cdef bint checked_b = False
    if C <= 0.0:
        return a
    if C >= W:
        return b
    if a == 0.0 and C - E <= 0.0:
        return 0.0
    if b == 0.0 and C - E >= 0.0:
        return 0.0
    pbar = E / W
    x = log(C * (1.0 - pbar) / ((W - C) * pbar))
    if not (a < x < b):
        x = 0.5 * (a + b)
    for it in range(_MAX_ITER):
        _eval(A, ch, x, &g, &d1, &d2)
        d1 = C - d1
        d2 = -d2
        if d1 > 0.0:
            a = x
        else:
            b = x
        nx = x - d1 / d2 if d2 < 0.0 else 0.5 * (a + b)
        if nx >= b:
            if not checked_b:
                checked_b = True
                _eval(A, ch, b, &g, &db, &unused)
                if C - db >= 0.0:
                    return b
            nx = 0.5 * (a + b)
        elif nx <= a:
            if not checked_a:
                checked_a = True
                _eval(A, ch, a, &g, &da, &unused)
                if C - da <= 0.0:
                    return a
            nx = 0.5 * (a + b)
        if fabs(nx - x) < _TOL_U or b - a < _TOL_U:
            return nx
        x = nx
    return x


cdef double _root_u(double C, const double* A, const Cheb* ch, double target, double a,
                    double b, double x) noexcept nogil:
    """Root of F(u) = target in [a, b] (F - target changes sign there), Newton from x."""
    cdef double g, d1, d2, h, nx
    cdef int it
    cdef bint increasing = _F(C, A, ch, a) - target < 0.0
    if not (a < x < b):
        x = 0.5 * (a + b)
    for it in range(_MAX_ITER):
        _eval(A, ch, x, &g, &d1, &d2)
        h = C * x - g - target
        d1 = C - d1
        if (h < 0.0) == increasing:
            a = x
        else:
            b = x
        nx = x - h / d1 if d1 != 0.0 else 0.5 * (a + b)
        if not (a < nx < b):
            nx = 0.5 * (a + b)
        if fabs(nx - x) < _TOL_U or b - a < _TOL_U:
            return nx
        x = nx
    return x


cdef double _small_root(double C, double E, const double* A, const Cheb* ch,
                       double target) noexcept nogil:
    """Root of F(u) = target next to u = 0 from the Taylor expansion of F at 0, when it is so
    close to 0 that the expansion is exact to ~1e-16 of the target (else NaN).

    F(u) = (C - E) u - k2 u^2 / 2 - k3 u^3 / 6 - O(k4 u^4), |k4| <= k2: at tiny penalties
    (AIF360's default 1e-17) the ends next to q = 1 are ~ penalty / (C - E), far below what a
    uniform-error expansion resolves; their order decides the LTSS candidate sets."""
    cdef double d = C - E
    cdef double k2 = A[ch.K - 2]
    cdef double k3 = A[ch.K - 1]
    cdef double u, f, df
    cdef int it
    if d == 0.0 or target <= 0.0:
        return NAN
    u = target / d
    if (u > 0.0) != (ch.hi > 0.0):
        return NAN
    for it in range(4):
        f = d * u - 0.5 * k2 * u * u - k3 * u * u * u / 6.0 - target
        df = d - k2 * u - 0.5 * k3 * u * u
        if df == 0.0:
            return NAN
        u = u - f / df
    if (u > 0.0) != (ch.hi > 0.0):
        return NAN
    # truncation: |k4| u^4 / 24 with |k4| = sum w p (1 - p) |1 - 6 p (1 - p)| <= k2
    if k2 * u * u * u * u / 24.0 > 1e-16 * target:
        return NAN
    return u


cdef void _score(double C, double W, double E, const double* A, const Cheb* ch,
                 double* f_out, double* u_out) noexcept nogil:
    """Direction-constrained score of a set (0, 0 when none)."""
    cdef double u
    f_out[0] = 0.0
    u_out[0] = 0.0
    if W <= 0.0:
        return
    u = _argmax_u(C, W, E, A, ch, ch.lo, ch.hi)
    if u == 0.0:
        return
    f_out[0] = C * u - _eval_g(A, ch, u)
    u_out[0] = u
    if f_out[0] == 0.0:
        u_out[0] = 0.0


cdef inline double _eval_g(const double* A, const Cheb* ch, double u) noexcept nogil:
    cdef double g, d1, d2
    _eval(A, ch, u, &g, &d1, &d2)
    return g


cdef bint _value_interval(double C, double W, double E, const double* A, const Cheb* ch,
                          double penalty, double* left_out, double* right_out) noexcept nogil:
    """{u : F_v(u) > penalty} on the direction's half-bracket; False if empty.

    The same interval as kernels.pyx computes on the full bracket and then clips to the
    direction (F_v(0) = 0, so an interval reaching the other side has 0 as its end)."""
    cdef double uhat, fmax, g, d1, curv, half_width, left, right
    uhat = _argmax_u(C, W, E, A, ch, ch.lo, ch.hi)
    if uhat == 0.0:
        return False
    _eval(A, ch, uhat, &g, &d1, &curv)
    fmax = C * uhat - g
    if not fmax > penalty:
        return False
    curv = -curv
    half_width = sqrt(2.0 * (fmax - penalty) / -curv) if curv < 0.0 else 1.0
    if ch.hi > 0.0:  # positive: [0, U_HI]
        if penalty == 0.0:
            left = 0.0
        else:
            left = _small_root(C, E, A, ch, penalty)
            if isnan(left):
                left = _root_u(C, A, ch, penalty, 0.0, uhat, uhat - half_width)
        if _F(C, A, ch, ch.hi) - penalty >= 0.0:
            right = ch.hi
        else:
            right = _root_u(C, A, ch, penalty, uhat, ch.hi, uhat + half_width)
    else:  # negative: [-U_HI, 0]
        if _F(C, A, ch, ch.lo) - penalty >= 0.0:
            left = ch.lo
        else:
            left = _root_u(C, A, ch, penalty, ch.lo, uhat, uhat - half_width)
        if penalty == 0.0:
            right = 0.0
        else:
            right = _small_root(C, E, A, ch, penalty)
            if isnan(right):
                right = _root_u(C, A, ch, penalty, uhat, 0.0, uhat + half_width)
    left_out[0] = left
    right_out[0] = right
    return left < right


# --------------------------------------------------------------------------------------------
# Problem, workspace and the exact attribute step
# --------------------------------------------------------------------------------------------


cdef struct Problem:
    const int32_t* codes  # (n_cells, m)
    const double* c
    const double* w
    const double* e
    const double* coef  # (n_cells, K)
    const int32_t* card
    int64_t n_cells
    int64_t m
    int64_t kmax
    Cheb ch


cdef struct Workspace:
    double* agg  # kmax * K
    double* ac  # kmax
    double* aw
    double* ae
    int64_t* counts  # kmax
    double* buf  # K
    double* umin  # kmax
    double* umax
    double* ends  # 2 kmax
    uint8_t* keep  # kmax
    uint8_t* chosen  # kmax


cdef int _workspace_alloc(Workspace* ws, int64_t kmax, int64_t K) except -1:
    ws.agg = <double*>malloc((kmax * K + 1) * sizeof(double))
    ws.ac = <double*>malloc((kmax + 1) * sizeof(double))
    ws.aw = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ae = <double*>malloc((kmax + 1) * sizeof(double))
    ws.counts = <int64_t*>malloc((kmax + 1) * sizeof(int64_t))
    ws.buf = <double*>malloc((K + 1) * sizeof(double))
    ws.umin = <double*>malloc((kmax + 1) * sizeof(double))
    ws.umax = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ends = <double*>malloc((2 * kmax + 2) * sizeof(double))
    ws.keep = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    ws.chosen = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    if (ws.agg == NULL or ws.ac == NULL or ws.aw == NULL or ws.ae == NULL or ws.counts == NULL
            or ws.buf == NULL or ws.umin == NULL or ws.umax == NULL or ws.ends == NULL
            or ws.keep == NULL or ws.chosen == NULL):
        _workspace_free(ws)
        raise MemoryError("not enough memory for the subset-scan workspace")
    return 0


cdef void _workspace_free(Workspace* ws) noexcept:
    free(ws.agg)
    free(ws.ac)
    free(ws.aw)
    free(ws.ae)
    free(ws.counts)
    free(ws.buf)
    free(ws.umin)
    free(ws.umax)
    free(ws.ends)
    free(ws.keep)
    free(ws.chosen)
    ws.agg = NULL
    ws.ac = NULL
    ws.aw = NULL
    ws.ae = NULL
    ws.counts = NULL
    ws.buf = NULL
    ws.umin = NULL
    ws.umax = NULL
    ws.ends = NULL
    ws.keep = NULL
    ws.chosen = NULL


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x > y) - (x < y)


cdef inline void _add(double* dst, const double* src, int64_t K) noexcept nogil:
    cdef int64_t t
    for t in range(K):
        dst[t] += src[t]


cdef void _score_chosen(const Problem* pr, Workspace* ws, int64_t k, double* f_out,
                        double* u_out) noexcept nogil:
    """Score the union of the values flagged in ``ws.chosen`` (aggregates of the step)."""
    cdef int64_t K = pr.ch.K
    cdef double C = 0.0
    cdef double W = 0.0
    cdef double E = 0.0
    cdef int64_t v
    memset(ws.buf, 0, K * sizeof(double))
    for v in range(k):
        if ws.chosen[v]:
            C += ws.ac[v]
            W += ws.aw[v]
            E += ws.ae[v]
            _add(ws.buf, ws.agg + v * K, K)
    _score(C, W, E, ws.buf, &pr.ch, f_out, u_out)


cdef double _ltss_step(const Problem* pr, Workspace* ws, const uint8_t* sel,
                       const int32_t* mismatch, int64_t j, double penalty,
                       uint8_t* out_row) noexcept nogil:
    """Best choice of S_j given the other attributes (kernels.pyx ``_ltss_step``)."""
    cdef int64_t k = pr.card[j]
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef int64_t K = pr.ch.K
    cdef int64_t i, v, e, t, size, n_keep, miss
    cdef double best, unused, f_k, j_k, mid
    cdef bint best_is_all = True
    memset(ws.agg, 0, k * K * sizeof(double))
    for v in range(k):
        ws.ac[v] = 0.0
        ws.aw[v] = 0.0
        ws.ae[v] = 0.0
        ws.counts[v] = 0
    for i in range(pr.n_cells):
        v = pr.codes[i * m + j]
        miss = mismatch[i] - (0 if sel[j * kmax + v] else 1)
        if miss == 0:
            ws.counts[v] += 1
            ws.ac[v] += pr.c[i]
            ws.aw[v] += pr.w[i]
            ws.ae[v] += pr.e[i]
            _add(ws.agg + v * K, pr.coef + i * K, K)

    # candidate 0: attribute unconstrained (no penalty for j)
    for v in range(k):
        ws.chosen[v] = 1 if ws.counts[v] > 0 else 0
    _score_chosen(pr, ws, k, &best, &unused)
    for v in range(k):
        out_row[v] = 1

    n_keep = 0
    for v in range(k):
        ws.keep[v] = 0
        if ws.counts[v] == 0:
            continue
        if _value_interval(ws.ac[v], ws.aw[v], ws.ae[v], ws.agg + v * K, &pr.ch, penalty,
                           &ws.umin[v], &ws.umax[v]):
            ws.keep[v] = 1
            n_keep += 1
    if n_keep == 0:
        return best

    e = 0
    for v in range(k):
        if ws.keep[v]:
            ws.ends[e] = ws.umin[v]
            ws.ends[e + 1] = ws.umax[v]
            e += 2
    qsort(ws.ends, e, sizeof(double), _cmp_double)
    for t in range(e - 1):
        if not ws.ends[t] < ws.ends[t + 1]:
            continue
        mid = 0.5 * (ws.ends[t] + ws.ends[t + 1])
        size = 0
        for v in range(k):
            ws.chosen[v] = 1 if (ws.keep[v] and ws.umin[v] < mid and mid < ws.umax[v]) else 0
            if ws.chosen[v]:
                size += 1
        if size == 0:
            continue
        _score_chosen(pr, ws, k, &f_k, &unused)
        j_k = f_k - penalty * size
        if j_k > best:
            best = j_k
            best_is_all = False
            for v in range(k):
                out_row[v] = ws.chosen[v]
    if best_is_all:
        for v in range(k):
            out_row[v] = 1
    return best


# --------------------------------------------------------------------------------------------
# Coordinate ascent with random restarts (kernels.pyx, same random stream)
# --------------------------------------------------------------------------------------------


cdef int64_t _penalty_units(const uint8_t* sel, const int32_t* card, int64_t m, int64_t kmax,
                            int64_t skip) noexcept nogil:
    cdef int64_t total = 0
    cdef int64_t a, v, cnt
    for a in range(m):
        if a == skip:
            continue
        cnt = 0
        for v in range(card[a]):
            if sel[a * kmax + v]:
                cnt += 1
        if cnt < card[a]:
            total += cnt
    return total


cdef void _score_set(const Problem* pr, const uint8_t* sel, double* buf,
                     double* out) noexcept nogil:
    """F, u = log q, size, observed and expected sums of the subgroup ``sel``."""
    cdef int64_t i, a
    cdef int64_t m = pr.m
    cdef int64_t K = pr.ch.K
    cdef int64_t n = 0
    cdef double C = 0.0
    cdef double W = 0.0
    cdef double E = 0.0
    cdef double f, u
    cdef bint inside
    for a in range(5):
        out[a] = 0.0
    memset(buf, 0, K * sizeof(double))
    for i in range(pr.n_cells):
        inside = True
        for a in range(m):
            if not sel[a * pr.kmax + pr.codes[i * m + a]]:
                inside = False
                break
        if inside:
            C += pr.c[i]
            W += pr.w[i]
            E += pr.e[i]
            _add(buf, pr.coef + i * K, K)
            n += 1
    if n == 0:
        return
    _score(C, W, E, buf, &pr.ch, &f, &u)
    out[0] = f
    out[1] = u
    out[2] = W
    out[3] = C
    out[4] = E


cdef int64_t _compute_mismatch_c(const Problem* pr, const uint8_t* sel,
                                 int32_t* mismatch) noexcept nogil:
    cdef int64_t inside = 0
    cdef int64_t i, a, cnt
    cdef int64_t m = pr.m
    for i in range(pr.n_cells):
        cnt = 0
        for a in range(m):
            if not sel[a * pr.kmax + pr.codes[i * m + a]]:
                cnt += 1
        mismatch[i] = <int32_t>cnt
        if cnt == 0:
            inside += 1
    return inside


cdef inline void _select_all(const Problem* pr, uint8_t* sel) noexcept nogil:
    cdef int64_t a, v
    for a in range(pr.m * pr.kmax):
        sel[a] = 0
    for a in range(pr.m):
        for v in range(pr.card[a]):
            sel[a * pr.kmax + v] = 1


cdef void _random_start(const Problem* pr, uint8_t* sel, int32_t* mismatch,
                        uint64_t* state) noexcept nogil:
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef int64_t a, v, attempt
    cdef double rho
    cdef bint any_v
    for attempt in range(10):
        for a in range(m * kmax):
            sel[a] = 0
        rho = _uniform(state)
        for a in range(m):
            any_v = False
            for v in range(pr.card[a]):
                if _uniform(state) < rho:
                    sel[a * kmax + v] = 1
                    any_v = True
            if not any_v:
                sel[a * kmax + _randint(state, pr.card[a])] = 1
        if _compute_mismatch_c(pr, sel, mismatch) > 0:
            return
    _select_all(pr, sel)
    _compute_mismatch_c(pr, sel, mismatch)


cdef double _ascend(const Problem* pr, Workspace* ws, uint8_t* sel, int32_t* mismatch,
                    uint8_t* row, uint8_t* visited, double penalty,
                    uint64_t* state) noexcept nogil:
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef double score5[5]
    cdef double cur, part, cand
    cdef int64_t n_unvisited, pick, j, a, i, v, old_out, new_out
    _score_set(pr, sel, ws.buf, score5)
    cur = score5[0] - penalty * _penalty_units(sel, pr.card, m, kmax, -1)
    for a in range(m):
        visited[a] = 0
    n_unvisited = m
    while n_unvisited > 0:
        pick = _randint(state, n_unvisited)
        j = -1
        for a in range(m):
            if not visited[a]:
                if pick == 0:
                    j = a
                    break
                pick -= 1
        part = _ltss_step(pr, ws, sel, mismatch, j, penalty, row)
        cand = part - penalty * _penalty_units(sel, pr.card, m, kmax, j)
        if cand > cur + _REL_IMPROVEMENT * max(1.0, fabs(cur)):
            for i in range(pr.n_cells):
                v = pr.codes[i * m + j]
                old_out = 0 if sel[j * kmax + v] else 1
                new_out = 0 if row[v] else 1
                mismatch[i] += <int32_t>(new_out - old_out)
            for v in range(pr.card[j]):
                sel[j * kmax + v] = row[v]
            cur = cand
            for a in range(m):
                visited[a] = 0
            n_unvisited = m
        visited[j] = 1
        n_unvisited -= 1
    return cur


# --------------------------------------------------------------------------------------------
# Python entry points
# --------------------------------------------------------------------------------------------


cdef int _cheb(Cheb* ch, const double[::1] breaks, const int64_t[::1] offs) except -1:
    cdef int64_t P = breaks.shape[0] - 1
    cdef int64_t k
    if P < 1 or offs.shape[0] != P + 1 or offs[0] != 0:
        raise ValueError("pieces: breaks and offsets must have the same length (>= 2), offs[0] 0")
    for k in range(P):
        if not breaks[k] < breaks[k + 1] or offs[k + 1] - offs[k] < 2:
            raise ValueError("pieces: increasing breaks, degree >= 1 per piece")
    if not (breaks[0] == 0.0 or breaks[P] == 0.0):
        raise ValueError("pieces must cover one half of the bracket, from or to u = 0")
    ch.breaks = &breaks[0]
    ch.offs = &offs[0]
    ch.n_pieces = P
    ch.K = offs[P] + 2
    ch.lo = breaks[0]
    ch.hi = breaks[P]
    return 0


cdef int _problem(Problem* pr, const int32_t[:, ::1] codes, const double[::1] c,
                  const double[::1] w, const double[::1] e, const double[:, ::1] coef,
                  const double[::1] breaks, const int64_t[::1] offs,
                  const int32_t[::1] card) except -1:
    cdef int64_t n_cells = codes.shape[0]
    cdef int64_t a
    _cheb(&pr.ch, breaks, offs)
    if c.shape[0] != n_cells or w.shape[0] != n_cells or e.shape[0] != n_cells:
        raise ValueError("cells: codes, c, w and e must have the same length")
    if coef.shape[0] != n_cells or coef.shape[1] != pr.ch.K:
        raise ValueError("cells: one row of offs[-1] + 2 numbers per cell is needed")
    if codes.shape[1] != card.shape[0]:
        raise ValueError("cells: one cardinality per attribute column is needed")
    pr.codes = &codes[0, 0] if n_cells > 0 and codes.shape[1] > 0 else NULL
    pr.c = &c[0] if n_cells > 0 else NULL
    pr.w = &w[0] if n_cells > 0 else NULL
    pr.e = &e[0] if n_cells > 0 else NULL
    pr.coef = &coef[0, 0] if n_cells > 0 else NULL
    pr.card = &card[0] if card.shape[0] > 0 else NULL
    pr.n_cells = n_cells
    pr.m = codes.shape[1]
    pr.kmax = 1
    for a in range(pr.m):
        pr.kmax = max(pr.kmax, <int64_t>card[a])
    return 0


def fit_coefficients(const int64_t[::1] cell, const double[::1] w, const double[::1] p,
                     int64_t n_cells, const double[::1] breaks, const int64_t[::1] offs):
    """Piecewise Chebyshev coefficients of g_c(u) = sum_{rows in c} w log(1 - p + p e^u).

    Node values use log1p(p (e^u - 1)), or log((1 - p) + p e^u) where p (e^u - 1) < -1/2
    (p near 1, u very negative: the log1p argument would lose digits to cancellation).

    ``cell[i]`` is the cell of input row ``i`` (weight ``w[i]``, probability ``p[i]``). Each
    piece interpolates at its Chebyshev extrema (ends included). Returns (n_cells, offs[-1] + 2):
    the coefficients, then the cumulants k2 = sum w p (1 - p) and k3 = sum w p (1 - p) (1 - 2 p)
    (the Taylor terms of g at u = 0, for the q-interval ends next to q = 1 at tiny penalties)."""
    cdef Cheb ch
    _cheb(&ch, breaks, offs)
    cdef int64_t n = cell.shape[0]
    cdef int64_t K = ch.K
    cdef int64_t nodes = K - 2
    cdef int64_t i, t, pc, N, j, k, base
    cdef double lo, hi, acc
    if w.shape[0] != n or p.shape[0] != n:
        raise ValueError("cell, w and p must have the same length")
    for i in range(n):
        if not 0 <= cell[i] < n_cells:
            raise ValueError("cell index out of range")
    tm1_arr = np.empty(nodes)
    eu_arr = np.empty(nodes)
    cdef double[::1] tm1 = tm1_arr
    cdef double[::1] eu = eu_arr
    cdef double u
    for pc in range(ch.n_pieces):
        lo = breaks[pc]
        hi = breaks[pc + 1]
        N = offs[pc + 1] - offs[pc] - 1
        for k in range(N + 1):
            if k == 0:
                u = hi
            elif k == N:
                u = lo
            else:
                u = 0.5 * (lo + hi) + 0.5 * (hi - lo) * cos(M_PI * k / N)
            tm1[offs[pc] + k] = expm1(u)
            eu[offs[pc] + k] = exp(u)
    values_arr = np.zeros((n_cells, nodes))
    cdef double[:, ::1] values = values_arr
    coef_arr = np.zeros((n_cells, K))
    cdef double[:, ::1] coef = coef_arr
    cdef double* row
    cdef double pi_, wi, x
    with nogil:
        for i in range(n):
            row = &values[cell[i], 0]
            pi_ = p[i]
            wi = w[i]
            coef[cell[i], nodes] += wi * pi_ * (1.0 - pi_)
            coef[cell[i], nodes + 1] += wi * pi_ * (1.0 - pi_) * (1.0 - 2.0 * pi_)
            for t in range(nodes):
                x = pi_ * tm1[t]
                if x < -0.5:  # 1 + p (e^u - 1) would cancel: (1 - p) + p e^u is exact-ish
                    row[t] += wi * log((1.0 - pi_) + pi_ * eu[t])
                else:
                    row[t] += wi * log1p(x)
    cdef double[::1] cosines
    for pc in range(ch.n_pieces):
        N = offs[pc + 1] - offs[pc] - 1
        base = offs[pc]
        cosines = np.empty((N + 1) * (N + 1))
        for j in range(N + 1):
            for k in range(N + 1):
                cosines[j * (N + 1) + k] = cos(M_PI * ((j * k) % (2 * N)) / N)
        with nogil:
            for i in range(n_cells):
                for j in range(N + 1):
                    acc = 0.5 * (values[i, base] * cosines[j * (N + 1)]
                                 + values[i, base + N] * cosines[j * (N + 1) + N])
                    for k in range(1, N):
                        acc = acc + values[i, base + k] * cosines[j * (N + 1) + k]
                    acc = acc * (2.0 / N)
                    if j == 0 or j == N:
                        acc = 0.5 * acc
                    coef[i, base + j] = acc
    return coef_arr


def evaluate(const double[::1] a, const double[::1] breaks, const int64_t[::1] offs, double u):
    """G(u), G'(u) and G''(u) of one coefficient row ``a`` (for tests and diagnostics)."""
    cdef Cheb ch
    _cheb(&ch, breaks, offs)
    if a.shape[0] != ch.K:
        raise ValueError("a must hold offs[-1] + 2 numbers")
    cdef double g, d1, d2
    _eval(&a[0], &ch, u, &g, &d1, &d2)
    return g, d1, d2


cdef uint8_t[:, ::1] _sel_view(object sel, int64_t m):
    arr = np.ascontiguousarray(np.asarray(sel))
    if arr.dtype != np.bool_ or arr.ndim != 2 or arr.shape[0] != m:
        raise ValueError("sel must be a 2-d boolean array with one row per attribute")
    return arr.view(np.uint8)


def score_selection(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                    const double[::1] e, const double[:, ::1] coef, const double[::1] breaks,
                    const int64_t[::1] offs, sel):
    """F, u = log q, size, observed and expected sums of the subgroup ``sel``."""
    cdef Problem pr
    cdef int32_t[::1] card = np.zeros(codes.shape[1], np.int32)
    _problem(&pr, codes, c, w, e, coef, breaks, offs, card)
    cdef uint8_t[:, ::1] sel_c = _sel_view(sel, pr.m)
    pr.kmax = sel_c.shape[1]
    cdef double[::1] buf = np.empty(pr.ch.K + 1)
    cdef double out[5]
    _score_set(&pr, &sel_c[0, 0] if sel_c.shape[0] > 0 and sel_c.shape[1] > 0 else NULL,
               &buf[0], out)
    return out[0], out[1], out[2], out[3], out[4]


def coordinate_ascent(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                      const double[::1] e, const double[:, ::1] coef,
                      const double[::1] breaks, const int64_t[::1] offs,
                      const int32_t[::1] card, double penalty, int restarts, seed):
    """Best penalised objective over ``restarts`` coordinate-ascent runs and its subgroup.

    The direction is that of the pieces (breaks from 0 up: positive; up to 0: negative).
    Returns ``(best_sel, best_j)`` like kernels.coordinate_ascent."""
    cdef Problem pr
    cdef Workspace ws
    _problem(&pr, codes, c, w, e, coef, breaks, offs, card)
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef int64_t r, i
    cdef uint64_t state = <uint64_t>int(seed)
    cdef double best_j = -INFINITY
    cdef double cur
    best_arr = np.zeros((m, kmax), np.bool_)
    cdef uint8_t[:, ::1] best_sel = best_arr.view(np.uint8)
    cdef uint8_t[::1] sel = np.zeros(m * kmax + 1, np.uint8)
    cdef int32_t[::1] mismatch = np.zeros(pr.n_cells + 1, np.int32)
    cdef uint8_t[::1] row = np.zeros(kmax + 1, np.uint8)
    cdef uint8_t[::1] visited = np.zeros(m + 1, np.uint8)
    for r in range(m):
        best_arr[r, : card[r]] = True
    if m == 0:
        return best_arr, 0.0
    _workspace_alloc(&ws, kmax, pr.ch.K)
    try:
        for r in range(restarts):
            PyErr_CheckSignals()  # Ctrl-C between restarts raises here
            if r == 0:
                _select_all(&pr, &sel[0])
                _compute_mismatch_c(&pr, &sel[0], &mismatch[0])
            else:
                _random_start(&pr, &sel[0], &mismatch[0], &state)
            with nogil:
                cur = _ascend(&pr, &ws, &sel[0], &mismatch[0], &row[0], &visited[0], penalty,
                              &state)
            if cur > best_j:
                best_j = cur
                for i in range(m * kmax):
                    best_sel[i // kmax, i % kmax] = sel[i]
    finally:
        _workspace_free(&ws)
    return best_arr, best_j
