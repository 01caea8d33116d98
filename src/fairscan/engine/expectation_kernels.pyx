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

The search is the one of kernels.pyx (``search_core.pxd``: same restarts, same splitmix64
stream, same candidate sets, same acceptance rule) over a score table of profiles, whose Newton
solves follow the Bernoulli ones of kernels.pyx (tolerances 1e-12 in u), so it finds the same
subgroups as the row-level search, with scores equal up to the expansion's error (about 1e-14
of the largest |g| on a piece; pieces shrink geometrically towards u = 0, where small scores of
large sets are a difference of large terms).
"""

from libc.math cimport exp, expm1, log, log1p, fabs, sqrt, cos, isnan, NAN, M_PI
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from fairscan.engine.search_core cimport (
    Grid, GridIndex, ScoreTable, grid_index_close, grid_index_open, search, subgroup_cells,
)

import numpy as np


cdef double _U_HI = log(1e6)
cdef double _TOL_U = 1e-12
cdef int _MAX_ITER = 200

U_HI = _U_HI


# --------------------------------------------------------------------------------------------
# Piecewise Chebyshev expansions, summed piece by piece when first needed
# --------------------------------------------------------------------------------------------


cdef struct Cheb:
    const double* breaks  # n_pieces + 1
    const int64_t* offs  # n_pieces + 1
    int64_t n_pieces
    int64_t K  # numbers per cell: offs[n_pieces] coefficients, then the cumulants k2, k3
    double lo
    double hi


cdef inline int64_t _piece_of(const Cheb* ch, double u) noexcept nogil:
    cdef int64_t pc = 0
    while pc < ch.n_pieces - 1 and u > ch.breaks[pc + 1]:
        pc += 1
    return pc


cdef void _eval_piece(const double* c, int64_t n, double lo, double hi, double u, double* g,
                      double* d1, double* d2) noexcept nogil:
    """G(u), G'(u) and G''(u) of one piece's ``n`` coefficients ``c`` on [lo, hi] (forward
    recurrences of T_k, T'_k, T''_k)."""
    cdef double scale, x, t0, t1, t2, dt0, dt1, dt2, ddt0, ddt1, ddt2, s, sd, sdd
    cdef int64_t k
    scale = 2.0 / (hi - lo)
    x = (2.0 * u - lo - hi) / (hi - lo)
    if x > 1.0:
        x = 1.0
    elif x < -1.0:
        x = -1.0
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


cdef void _eval_row(const double* a, const Cheb* ch, double u, double* g, double* d1,
                    double* d2) noexcept nogil:
    """G(u), G'(u) and G''(u) of a whole coefficient row ``a``."""
    cdef int64_t pc = _piece_of(ch, u)
    _eval_piece(a + ch.offs[pc], ch.offs[pc + 1] - ch.offs[pc], ch.breaks[pc],
                ch.breaks[pc + 1], u, g, d1, d2)


# A set's expansion is the sum of its cells' coefficient rows, but a search step evaluates it
# on few of its pieces (the Newton solves stay next to the set's optimum), so each piece is
# summed when first evaluated: in the same order as a whole-row sum (cells ascending, then
# values ascending), so every number is the one a whole-row sum gives. The far end of the
# bracket, which the q-interval of a value checks, is decided from each cell's end value
# (one number per cell) where that settles it (see _value_interval).
cdef enum:
    EXP_VALUE = 0  # value ``v`` of the current step: the cells of the relaxed subgroup with v
    EXP_UNION = 1  # the union of the step's values flagged in ``chosen``
    EXP_CELLS = 2  # the cells listed in the workspace's ``inside`` (a subgroup)


cdef struct Exp:
    double* a  # K numbers: coefficients, then the cumulants (valid where ``ready``)
    uint8_t* ready  # n_pieces + 1 flags (the last one: the cumulants)
    int64_t kind
    int64_t v
    const uint8_t* chosen
    void* table  # the Table whose cells and value sums it draws on


cdef inline int64_t _first(const Cheb* ch, int64_t pc) noexcept nogil:
    """Index of piece ``pc``'s first number in a row (``pc == n_pieces``: the cumulants)."""
    return ch.offs[pc] if pc < ch.n_pieces else ch.K - 2


cdef inline const double* _piece(Exp* x, const Cheb* ch, int64_t pc) noexcept nogil:
    """Coefficients of piece ``pc`` (``pc == n_pieces``: the cumulants), summed if not yet."""
    if not x.ready[pc]:
        _fill(x, ch, pc)
        x.ready[pc] = 1
    return x.a + _first(ch, pc)


cdef inline void _eval(Exp* x, const Cheb* ch, double u, double* g, double* d1,
                       double* d2) noexcept nogil:
    cdef int64_t pc = _piece_of(ch, u)
    _eval_piece(_piece(x, ch, pc), ch.offs[pc + 1] - ch.offs[pc], ch.breaks[pc],
                ch.breaks[pc + 1], u, g, d1, d2)


cdef inline double _F(double C, Exp* A, const Cheb* ch, double u) noexcept nogil:
    cdef double g, d1, d2
    _eval(A, ch, u, &g, &d1, &d2)
    return C * u - g


cdef double _argmax_u(double C, double W, double E, Exp* A, const Cheb* ch,
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


cdef double _root_u(double C, Exp* A, const Cheb* ch, double target, double a, double b,
                    double x, bint increasing) noexcept nogil:
    """Root of F(u) = target in [a, b] (F - target changes sign there, rising from a when
    ``increasing``: the caller has F(a) - target < 0 at hand), Newton from x."""
    cdef double g, d1, d2, h, nx
    cdef int it
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


cdef double _small_root(double C, double E, Exp* A, const Cheb* ch,
                       double target) noexcept nogil:
    """Root of F(u) = target next to u = 0 from the Taylor expansion of F at 0, when it is so
    close to 0 that the expansion is exact to ~1e-16 of the target (else NaN).

    F(u) = (C - E) u - k2 u^2 / 2 - k3 u^3 / 6 - O(k4 u^4), |k4| <= k2: at tiny penalties
    (AIF360's default 1e-17) the ends next to q = 1 are ~ penalty / (C - E), far below what a
    uniform-error expansion resolves; their order decides the LTSS candidate sets."""
    cdef double d = C - E
    cdef const double* cumulants
    cdef double k2, k3
    cdef double u, f, df
    cdef int it
    if d == 0.0 or target <= 0.0:
        return NAN
    u = target / d
    if (u > 0.0) != (ch.hi > 0.0):
        return NAN
    cumulants = _piece(A, ch, ch.n_pieces)
    k2 = cumulants[0]
    k3 = cumulants[1]
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


cdef void _score(double C, double W, double E, Exp* A, const Cheb* ch, double* f_out,
                 double* u_out) noexcept nogil:
    """Direction-constrained score of a set (0, 0 when none)."""
    cdef double u, g, d1, d2
    f_out[0] = 0.0
    u_out[0] = 0.0
    if W <= 0.0:
        return
    u = _argmax_u(C, W, E, A, ch, ch.lo, ch.hi)
    if u == 0.0:
        return
    _eval(A, ch, u, &g, &d1, &d2)
    f_out[0] = C * u - g
    u_out[0] = u
    if f_out[0] == 0.0:
        u_out[0] = 0.0


# A far end's F(end) = C end - G(end) is computed from the expansion, within ~1e-14 of the
# set's summed end values (G <= 0 on the negative half and >= 0 on the positive one, so that
# sum has no cancellation); decided from the sum where it clears the penalty by more than this
# (relative), which leaves the decision exactly as the expansion takes it.
cdef double _END_MARGIN = 1e-6


cdef inline bint _end_below(double C, double g_end, double end, double penalty) noexcept nogil:
    """Whether F(end) - penalty < 0 for sure, from the set's summed end value ``g_end``."""
    cdef double f = C * end - g_end
    return f + _END_MARGIN * (fabs(C * end) + fabs(g_end) + penalty) < penalty


cdef bint _value_interval(double C, double W, double E, double g_end, Exp* A, const Cheb* ch,
                          double penalty, double* left_out, double* right_out) noexcept nogil:
    """{u : F_v(u) > penalty} on the direction's half-bracket; False if empty.

    The same interval as kernels.pyx computes on the full bracket and then clips to the
    direction (F_v(0) = 0, so an interval reaching the other side has 0 as its end).
    ``g_end``: the set's summed G at the far end of the half-bracket (lo or hi)."""
    cdef double uhat, fmax, g, d1, curv, half_width, left, right, h
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
                left = _root_u(C, A, ch, penalty, 0.0, uhat, uhat - half_width,
                               _F(C, A, ch, 0.0) - penalty < 0.0)
        if not _end_below(C, g_end, ch.hi, penalty) and _F(C, A, ch, ch.hi) - penalty >= 0.0:
            right = ch.hi
        else:
            right = _root_u(C, A, ch, penalty, uhat, ch.hi, uhat + half_width,
                            _F(C, A, ch, uhat) - penalty < 0.0)
    else:  # negative: [-U_HI, 0]
        if _end_below(C, g_end, ch.lo, penalty):
            h = -1.0  # F(lo) - penalty < 0
        else:
            h = _F(C, A, ch, ch.lo) - penalty
        if h >= 0.0:
            left = ch.lo
        else:
            left = _root_u(C, A, ch, penalty, ch.lo, uhat, uhat - half_width, h < 0.0)
        if penalty == 0.0:
            right = 0.0
        else:
            right = _small_root(C, E, A, ch, penalty)
            if isnan(right):
                right = _root_u(C, A, ch, penalty, uhat, 0.0, uhat + half_width,
                                _F(C, A, ch, uhat) - penalty < 0.0)
    left_out[0] = left
    right_out[0] = right
    return left < right


# --------------------------------------------------------------------------------------------
# Problem, workspace and the score table of the profiles (search_core.ScoreTable)
# --------------------------------------------------------------------------------------------


cdef struct Problem:
    Grid g  # codes (n_cells, m), cardinalities, n_cells, m, kmax
    const double* c
    const double* w
    const double* e
    const double* coef  # (n_cells, K)
    const double* g_end  # (n_cells,): each cell's G at the far end of the half-bracket
    Cheb ch


cdef struct Workspace:
    int64_t* vcells  # n_cells: the step's cells grouped by value (ascending within a value)
    int64_t* vstart  # kmax + 1: value v's cells are vcells[vstart[v]:vstart[v + 1]]
    int64_t* inside  # n_cells: the cells of the subgroup being scored (EXP_CELLS)
    int64_t n_inside
    double* agg  # kmax * K: the values' summed pieces (where ready)
    uint8_t* agg_ready  # kmax * (n_pieces + 1)
    double* ac  # kmax
    double* aw
    double* ae
    double* ag  # kmax: summed far-end values
    double* buf  # K: a union's or a subgroup's summed pieces
    uint8_t* buf_ready  # n_pieces + 1
    int64_t k  # values of the step's attribute


cdef struct Table:
    # the score table the shared search works on: the problem and the step's value aggregates
    const Problem* pr
    Workspace ws


cdef inline void _value_exp(Table* tb, int64_t v, Exp* x) noexcept nogil:
    """The expansion of value ``v`` of the current step (its sums live in the workspace)."""
    cdef int64_t K = tb.pr.ch.K
    x.a = tb.ws.agg + v * K
    x.ready = tb.ws.agg_ready + v * (tb.pr.ch.n_pieces + 1)
    x.kind = EXP_VALUE
    x.v = v
    x.chosen = NULL
    x.table = tb


cdef void _fill(Exp* x, const Cheb* ch, int64_t pc) noexcept nogil:
    """Sum piece ``pc`` of the coefficient rows of what ``x`` stands for, in the order of a
    whole-row sum: cells ascending (a value, a subgroup), values ascending (a union)."""
    cdef Table* tb = <Table*>x.table
    cdef const Problem* pr = tb.pr
    cdef Workspace* ws = &tb.ws
    cdef int64_t K = ch.K
    cdef int64_t lo_t = _first(ch, pc)
    cdef int64_t n = (ch.offs[pc + 1] if pc < ch.n_pieces else ch.K) - lo_t
    cdef int64_t t, s, v
    cdef double* a = x.a + lo_t
    cdef const double* row
    cdef Exp value
    for t in range(n):
        a[t] = 0.0
    if x.kind == EXP_VALUE:
        for s in range(ws.vstart[x.v], ws.vstart[x.v + 1]):
            row = pr.coef + ws.vcells[s] * K + lo_t
            for t in range(n):
                a[t] += row[t]
    elif x.kind == EXP_CELLS:
        for s in range(ws.n_inside):
            row = pr.coef + ws.inside[s] * K + lo_t
            for t in range(n):
                a[t] += row[t]
    else:  # EXP_UNION
        for v in range(ws.k):
            if not x.chosen[v]:
                continue
            _value_exp(tb, v, &value)
            row = _piece(&value, ch, pc)
            for t in range(n):
                a[t] += row[t]


cdef int _workspace_alloc(Workspace* ws, int64_t n_cells, int64_t kmax, int64_t K,
                          int64_t n_pieces) except -1:
    memset(ws, 0, sizeof(Workspace))
    ws.vcells = <int64_t*>malloc((n_cells + 1) * sizeof(int64_t))
    ws.vstart = <int64_t*>malloc((kmax + 2) * sizeof(int64_t))
    ws.inside = <int64_t*>malloc((n_cells + 1) * sizeof(int64_t))
    ws.agg = <double*>malloc((kmax * K + 1) * sizeof(double))
    ws.agg_ready = <uint8_t*>malloc(kmax * (n_pieces + 1) + 1)
    ws.ac = <double*>malloc((kmax + 1) * sizeof(double))
    ws.aw = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ae = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ag = <double*>malloc((kmax + 1) * sizeof(double))
    ws.buf = <double*>malloc((K + 1) * sizeof(double))
    ws.buf_ready = <uint8_t*>malloc(n_pieces + 2)
    if (ws.vcells == NULL or ws.vstart == NULL or ws.inside == NULL or ws.agg == NULL
            or ws.agg_ready == NULL or ws.ac == NULL or ws.aw == NULL or ws.ae == NULL
            or ws.ag == NULL or ws.buf == NULL or ws.buf_ready == NULL):
        _workspace_free(ws)
        raise MemoryError("not enough memory for the subset-scan workspace")
    return 0


cdef void _workspace_free(Workspace* ws) noexcept:
    free(ws.vcells)
    free(ws.vstart)
    free(ws.inside)
    free(ws.agg)
    free(ws.agg_ready)
    free(ws.ac)
    free(ws.aw)
    free(ws.ae)
    free(ws.ag)
    free(ws.buf)
    free(ws.buf_ready)
    memset(ws, 0, sizeof(Workspace))


cdef void _group(void* table, const int64_t* cells, int64_t n, int64_t j,
                 const int64_t* counts) noexcept nogil:
    """Sums C, W, E and the far-end value of the relaxed subgroup's cells per value of j, and
    its cells grouped by value (their coefficient pieces are summed when first needed)."""
    cdef Table* tb = <Table*>table
    cdef const Problem* pr = tb.pr
    cdef Workspace* ws = &tb.ws
    cdef int64_t k = pr.g.card[j]
    cdef int64_t m = pr.g.m
    cdef int64_t i, v, s, t
    ws.k = k
    ws.vstart[0] = 0
    for v in range(k):
        ws.ac[v] = 0.0
        ws.aw[v] = 0.0
        ws.ae[v] = 0.0
        ws.ag[v] = 0.0
        ws.vstart[v + 1] = ws.vstart[v] + counts[v]
    memset(ws.agg_ready, 0, k * (pr.ch.n_pieces + 1))
    # one pass: the sums, and a stable counting sort of the cells by value (vstart[v] runs
    # to the end of value v's cells, then moves back to its start)
    for s in range(n):
        i = cells[s]
        v = pr.g.codes[i * m + j]
        ws.ac[v] += pr.c[i]
        ws.aw[v] += pr.w[i]
        ws.ae[v] += pr.e[i]
        ws.ag[v] += pr.g_end[i]
        t = ws.vstart[v]
        ws.vcells[t] = i
        ws.vstart[v] = t + 1
    for v in range(k - 1, -1, -1):
        ws.vstart[v + 1] = ws.vstart[v]
    ws.vstart[0] = 0


cdef inline void _open_buf(Table* tb, Exp* x, int64_t kind, const uint8_t* chosen) noexcept nogil:
    x.a = tb.ws.buf
    x.ready = tb.ws.buf_ready
    memset(x.ready, 0, tb.pr.ch.n_pieces + 1)
    x.kind = kind
    x.v = -1
    x.chosen = chosen
    x.table = tb


cdef void _score_chosen(void* table, const uint8_t* chosen, int64_t k, double* f_out,
                        double* u_out) noexcept nogil:
    """Score the union of the values flagged in ``chosen`` (aggregates of the step)."""
    cdef Table* tb = <Table*>table
    cdef Workspace* ws = &tb.ws
    cdef double C = 0.0
    cdef double W = 0.0
    cdef double E = 0.0
    cdef int64_t v
    cdef Exp x
    for v in range(k):
        if chosen[v]:
            C += ws.ac[v]
            W += ws.aw[v]
            E += ws.ae[v]
    _open_buf(tb, &x, EXP_UNION, chosen)
    _score(C, W, E, &x, &tb.pr.ch, f_out, u_out)


cdef bint _interval(void* table, int64_t v, double penalty, double* left_out,
                    double* right_out) noexcept nogil:
    cdef Table* tb = <Table*>table
    cdef Workspace* ws = &tb.ws
    cdef Exp x
    _value_exp(tb, v, &x)
    return _value_interval(ws.ac[v], ws.aw[v], ws.ae[v], ws.ag[v], &x, &tb.pr.ch, penalty,
                           left_out, right_out)


cdef void _score_set(Table* tb, const uint8_t* sel, double* out) noexcept nogil:
    """F, u = log q, size, observed and expected sums of the subgroup ``sel``."""
    cdef const Problem* pr = tb.pr
    cdef Workspace* ws = &tb.ws
    cdef int64_t i, a
    cdef int64_t n = 0
    cdef double C = 0.0
    cdef double W = 0.0
    cdef double E = 0.0
    cdef double f, u
    cdef Exp x
    for a in range(5):
        out[a] = 0.0
    n = subgroup_cells(&pr.g, sel, ws.inside)
    for a in range(n):
        i = ws.inside[a]
        C += pr.c[i]
        W += pr.w[i]
        E += pr.e[i]
    ws.n_inside = n
    if n == 0:
        return
    _open_buf(tb, &x, EXP_CELLS, NULL)
    _score(C, W, E, &x, &pr.ch, &f, &u)
    out[0] = f
    out[1] = u
    out[2] = W
    out[3] = C
    out[4] = E


cdef double _start_score(void* table, const uint8_t* sel) noexcept nogil:
    cdef double out[5]
    _score_set(<Table*>table, sel, out)
    return out[0]


cdef int _table_open(Table* tb, const Problem* pr, ScoreTable* st) except -1:
    """Point the shared search's score table ``st`` at ``tb`` (workspace allocated: free it with
    ``_workspace_free(&tb.ws)``)."""
    tb.pr = pr
    _workspace_alloc(&tb.ws, pr.g.n_cells, pr.g.kmax, pr.ch.K, pr.ch.n_pieces)
    st.table = tb
    st.group = _group
    st.score_chosen = _score_chosen
    st.value_interval = _interval
    st.score_set = _start_score
    return 0


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
                  const double[::1] g_end, const double[::1] breaks,
                  const int64_t[::1] offs, const int32_t[::1] card) except -1:
    cdef int64_t n_cells = codes.shape[0]
    cdef int64_t a
    _cheb(&pr.ch, breaks, offs)
    if (c.shape[0] != n_cells or w.shape[0] != n_cells or e.shape[0] != n_cells
            or g_end.shape[0] != n_cells):
        raise ValueError("cells: codes, c, w, e and g_end must have the same length")
    if coef.shape[0] != n_cells or coef.shape[1] != pr.ch.K:
        raise ValueError("cells: one row of offs[-1] + 2 numbers per cell is needed")
    if codes.shape[1] != card.shape[0]:
        raise ValueError("cells: one cardinality per attribute column is needed")
    pr.g.codes = &codes[0, 0] if n_cells > 0 and codes.shape[1] > 0 else NULL
    pr.c = &c[0] if n_cells > 0 else NULL
    pr.w = &w[0] if n_cells > 0 else NULL
    pr.e = &e[0] if n_cells > 0 else NULL
    pr.coef = &coef[0, 0] if n_cells > 0 else NULL
    pr.g_end = &g_end[0] if n_cells > 0 else NULL
    pr.g.card = &card[0] if card.shape[0] > 0 else NULL
    pr.g.n_cells = n_cells
    pr.g.m = codes.shape[1]
    pr.g.index = NULL
    pr.g.kmax = 1
    for a in range(pr.g.m):
        pr.g.kmax = max(pr.g.kmax, <int64_t>card[a])
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


def count_below(const double[::1] u, const double[::1] p, const int64_t[::1] cell,
                int64_t n_cells):
    """Per cell, how many rows ``i`` of it have ``u[i] < p[i]`` (a null replicate's Bernoulli
    draws summed per profile in one pass: the counts ``np.bincount(cell, u < p)`` gives)."""
    cdef int64_t n = u.shape[0]
    cdef int64_t i, c
    cdef bint bad = False
    if p.shape[0] != n or cell.shape[0] != n:
        raise ValueError("u, p and cell must have the same length")
    counts_arr = np.zeros(n_cells, np.int64)
    cdef int64_t[::1] counts = counts_arr
    with nogil:
        for i in range(n):
            c = cell[i]
            if c < 0 or c >= n_cells:
                bad = True
                break
            counts[c] += u[i] < p[i]  # integers, no branch on the draw
    if bad:
        raise ValueError("cell index out of range")
    return counts_arr.astype(np.float64)


def evaluate(const double[::1] a, const double[::1] breaks, const int64_t[::1] offs, double u):
    """G(u), G'(u) and G''(u) of one coefficient row ``a`` (for tests and diagnostics)."""
    cdef Cheb ch
    _cheb(&ch, breaks, offs)
    if a.shape[0] != ch.K:
        raise ValueError("a must hold offs[-1] + 2 numbers")
    cdef double g, d1, d2
    _eval_row(&a[0], &ch, u, &g, &d1, &d2)
    return g, d1, d2


cdef uint8_t[:, ::1] _sel_view(object sel, int64_t m):
    arr = np.ascontiguousarray(np.asarray(sel))
    if arr.dtype != np.bool_ or arr.ndim != 2 or arr.shape[0] != m:
        raise ValueError("sel must be a 2-d boolean array with one row per attribute")
    return arr.view(np.uint8)


def score_selection(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                    const double[::1] e, const double[:, ::1] coef, const double[::1] g_end,
                    const double[::1] breaks, const int64_t[::1] offs, sel):
    """F, u = log q, size, observed and expected sums of the subgroup ``sel``."""
    cdef Problem pr
    cdef Table tb
    cdef int32_t[::1] card = np.zeros(codes.shape[1], np.int32)
    _problem(&pr, codes, c, w, e, coef, g_end, breaks, offs, card)
    cdef uint8_t[:, ::1] sel_c = _sel_view(sel, pr.g.m)
    pr.g.kmax = sel_c.shape[1]
    cdef double out[5]
    tb.pr = &pr
    _workspace_alloc(&tb.ws, pr.g.n_cells, 1, pr.ch.K, pr.ch.n_pieces)
    try:
        _score_set(&tb, &sel_c[0, 0] if sel_c.shape[0] > 0 and sel_c.shape[1] > 0 else NULL,
                   out)
    finally:
        _workspace_free(&tb.ws)
    return out[0], out[1], out[2], out[3], out[4]


def coordinate_ascent(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                      const double[::1] e, const double[:, ::1] coef,
                      const double[::1] g_end, const double[::1] breaks,
                      const int64_t[::1] offs, const int32_t[::1] card, double penalty,
                      int restarts, seed, bint index=True):
    """Best penalised objective over ``restarts`` coordinate-ascent runs and its subgroup.

    The direction is that of the pieces (breaks from 0 up: positive; up to 0: negative).
    Returns ``(best_sel, best_j)`` like kernels.coordinate_ascent (``index``: as there)."""
    cdef Problem pr
    cdef Table tb
    cdef ScoreTable st
    _problem(&pr, codes, c, w, e, coef, g_end, breaks, offs, card)
    cdef uint64_t state = <uint64_t>int(seed)
    cdef double best_j = 0.0
    best_arr = np.zeros((pr.g.m, pr.g.kmax), np.bool_)
    cdef uint8_t[:, ::1] best_sel = best_arr.view(np.uint8)
    if pr.g.m == 0:
        return best_arr, 0.0
    cdef GridIndex ix
    grid_index_open(&pr.g, &ix, index)
    try:
        _table_open(&tb, &pr, &st)
        try:
            search(&pr.g, &st, penalty, restarts, state, &best_sel[0, 0], &best_j)
        finally:
            _workspace_free(&tb.ws)
    finally:
        grid_index_close(&ix)
    return best_arr, best_j
