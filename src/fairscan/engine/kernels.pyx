# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Compiled kernels of the MDSS core: scores, exact LTSS attribute step, coordinate ascent.

Built ahead of time (Cython, by the package build), so no compiler runs when fairscan does.

Everything works on *cells*: rows compressed by (attribute profile, expectation), each with a
weight ``w`` (row count), an observed sum ``c`` and the shared expectation ``p``
(methods.md §1.4). The free parameter is handled as ``u = log q`` on the bracket
``[log 1e-6, log 1e6]``; F is defined as the maximum over that bracket everywhere.

Direction codes: ``+1`` = positive (observed above expectation, q >= 1),
``-1`` = negative (observed below expectation, q <= 1).

Likelihood codes:

* ``BERNOULLI`` (0, the default of the public entry points):
  ``F(u) = sum c*u - w*log(1 - p + p*e^u)``, concave in u;
* ``GAUSSIAN`` (1, methods.md §1.4.2: CBS separation scans, regression mean shifts): a cell's
  ``c`` is the sum of Delta_i over its rows, ``w`` its row count (or the sum of inverse
  variances), ``p`` is unused, and the free parameter is the mean shift mu (reported in place
  of u = log q); the score of a set with ``s = sum Delta`` over ``n`` is ``s^2 / (2 sigma^2 n)``
  when the sign of ``s`` matches the direction, else 0; the per-value intervals
  {mu : F_v(mu) > penalty} have closed-form ends ``(s_v -+ sqrt(s_v^2 - 2 n_v sigma^2 penalty)) / n_v``;
* ``POISSON`` (2, counts and ordinal codes): expectations are means; a set with observed sum
  ``C`` and expected sum ``E = sum w*p`` scores ``F(u) = C*u - E*(e^u - 1)``, concave in u.

The Gaussian and Poisson scores depend on the sums only, so their steps always aggregate cells
per value (the constant-expectation path). The arithmetic follows the numba kernels it
replaced operation for operation, so results are bitwise the same.

The search itself (random restarts, coordinate ascent, the exact LTSS attribute step, its memo)
is ``search_core.pxd``, shared with expectation_kernels.pyx; this module gives it a score table
over the cells. Ctrl-C: the search checks for pending signals once per restart, so an interrupt
raises promptly (KeyboardInterrupt) instead of waiting for the search to end.
"""

from libc.math cimport exp, expm1, floor, log, log1p, sqrt, fabs
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from fairscan.engine.search_core cimport (
    Grid, GridIndex, ScoreTable, SearchWork, compute_mismatch, grid_index_close, grid_index_open,
    grid_index_cube, in_subgroup, CUBE_ENTRIES_PER_KEY, CUBE_MAX_ENTRIES, subgroup_cells, ltss_step as core_ltss_step,
    search, search_work_alloc, search_work_free, REL_IMPROVEMENT as _REL_IMPROVEMENT,
)

import numpy as np


cdef double _U_LO = log(1e-6)
cdef double _U_HI = log(1e6)
cdef double _TOL_U = 1e-12  # convergence in log q (methods.md asks for < 1e-10)
cdef int _MAX_ITER = 200

U_LO = _U_LO
U_HI = _U_HI
TOL_U = _TOL_U
MAX_ITER = _MAX_ITER
REL_IMPROVEMENT = _REL_IMPROVEMENT
BERNOULLI = 0
GAUSSIAN = 1
POISSON = 2
cdef enum:
    C_BERNOULLI = 0
    C_GAUSSIAN = 1
    C_POISSON = 2




# --------------------------------------------------------------------------------------------
# Bernoulli score over a run of pseudo-cells [lo, hi) of (c, w, p)
# --------------------------------------------------------------------------------------------


cdef double _f(const double* c, const double* w, const double* p, int64_t lo, int64_t hi,
               double u) noexcept nogil:
    cdef double em1 = expm1(u)
    cdef double s = 0.0
    cdef int64_t t
    for t in range(lo, hi):
        s += c[t] * u - w[t] * log1p(p[t] * em1)
    return s


cdef void _f_df(const double* c, const double* w, const double* p, int64_t lo, int64_t hi,
                double u, double* f_out, double* d1_out) noexcept nogil:
    """F(u) and F'(u) in one pass."""
    cdef double em1 = expm1(u)
    cdef double eu = em1 + 1.0
    cdef double f = 0.0
    cdef double d1 = 0.0
    cdef double den
    cdef int64_t t
    for t in range(lo, hi):
        den = 1.0 + p[t] * em1
        f += c[t] * u - w[t] * log1p(p[t] * em1)
        d1 += c[t] - w[t] * p[t] * eu / den
    f_out[0] = f
    d1_out[0] = d1


cdef void _df_d2f(const double* c, const double* w, const double* p, int64_t lo, int64_t hi,
                  double u, double* d1_out, double* d2_out) noexcept nogil:
    """F'(u) and F''(u) in one pass."""
    cdef double eu = exp(u)
    cdef double d1 = 0.0
    cdef double d2 = 0.0
    cdef double den, r
    cdef int64_t t
    for t in range(lo, hi):
        den = 1.0 - p[t] + p[t] * eu
        r = p[t] * eu / den
        d1 += c[t] - w[t] * r
        d2 -= w[t] * r * (1.0 - p[t]) / den
    d1_out[0] = d1
    d2_out[0] = d2


cdef double _argmax_u(const double* c, const double* w, const double* p, int64_t lo, int64_t hi,
                      double a, double b) noexcept nogil:
    """Maximiser of the concave F on [a, b] (a <= 0 <= b or a, b the full bracket).

    Safeguarded Newton on F', started from the pooled closed form (exact when all
    expectations are equal, a good start otherwise)."""
    cdef double sc = 0.0
    cdef double sw = 0.0
    cdef double se = 0.0
    cdef int64_t t
    cdef int it
    cdef double pbar, x, nx, d1, d2, db, da, unused
    cdef bint checked_a = False
    cdef bint checked_b = False
    for t in range(lo, hi):
        sc += c[t]
        sw += w[t]
        se += w[t] * p[t]
    if sc <= 0.0:
        return a
    if sc >= sw:
        return b
    # F'(0) = sum c - sum w p: settles a direction-constrained maximiser at 0 without a pass
    if a == 0.0 and sc - se <= 0.0:
        return 0.0
    if b == 0.0 and sc - se >= 0.0:
        return 0.0
    pbar = se / sw
    x = log(sc * (1.0 - pbar) / ((sw - sc) * pbar))
    if hi - lo == 1:
        return min(max(x, a), b)  # one pseudo-cell: the closed form is exact
    if not (a < x < b):
        x = 0.5 * (a + b)
    for it in range(_MAX_ITER):
        _df_d2f(c, w, p, lo, hi, x, &d1, &d2)
        if d1 > 0.0:
            a = x
        else:
            b = x
        nx = x - d1 / d2 if d2 < 0.0 else 0.5 * (a + b)
        if nx >= b:
            if not checked_b:
                checked_b = True
                _df_d2f(c, w, p, lo, hi, b, &db, &unused)
                if db >= 0.0:
                    return b
            nx = 0.5 * (a + b)
        elif nx <= a:
            if not checked_a:
                checked_a = True
                _df_d2f(c, w, p, lo, hi, a, &da, &unused)
                if da <= 0.0:
                    return a
            nx = 0.5 * (a + b)
        if fabs(nx - x) < _TOL_U or b - a < _TOL_U:
            return nx
        x = nx
    return x


cdef double _root_u(const double* c, const double* w, const double* p, int64_t lo, int64_t hi,
                    double target, double a, double b, double x) noexcept nogil:
    """Root of F(u) = target in [a, b] (F - target changes sign there, F monotone), Newton from x."""
    cdef double ha, unused, f, d1, h, nx
    cdef int it
    _f_df(c, w, p, lo, hi, a, &ha, &unused)
    cdef bint increasing = ha - target < 0.0
    if not (a < x < b):
        x = 0.5 * (a + b)
    for it in range(_MAX_ITER):
        _f_df(c, w, p, lo, hi, x, &f, &d1)
        h = f - target
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


cdef inline double _constrained_argmax(const double* c, const double* w, const double* p,
                                       int64_t lo, int64_t hi, int direction) noexcept nogil:
    if direction > 0:
        return _argmax_u(c, w, p, lo, hi, 0.0, _U_HI)
    return _argmax_u(c, w, p, lo, hi, _U_LO, 0.0)


cdef inline void _gauss_score(double s, double n, int direction, double sigma2,
                              double* f_out, double* mu_out) noexcept nogil:
    """Direction-constrained Gaussian score of a set with sum ``s`` over ``n`` rows, and mu-hat."""
    if n <= 0.0 or not s * direction > 0.0:
        f_out[0] = 0.0
        mu_out[0] = 0.0
        return
    f_out[0] = s * s / (2.0 * sigma2 * n)
    mu_out[0] = s / n


# --------------------------------------------------------------------------------------------
# Poisson score of a set with observed sum s and expected sum e:  s*u - e*(e^u - 1)
# --------------------------------------------------------------------------------------------


cdef inline double _poisson_f(double s, double e, double u) noexcept nogil:
    return s * u - e * expm1(u)


cdef inline double _poisson_argmax(double s, double e, double a, double b) noexcept nogil:
    """Maximiser of the concave Poisson score on [a, b]: log(s / e), clipped."""
    if s <= 0.0:
        return a
    return min(max(log(s / e), a), b)


cdef inline void _poisson_score(double s, double e, int direction,
                                double* f_out, double* u_out) noexcept nogil:
    """Direction-constrained Poisson score of a set and its u = log q (0, 0 when none)."""
    cdef double u
    f_out[0] = 0.0
    u_out[0] = 0.0
    if e <= 0.0:
        return
    if direction > 0:
        u = _poisson_argmax(s, e, 0.0, _U_HI)
    else:
        u = _poisson_argmax(s, e, _U_LO, 0.0)
    if u == 0.0:
        return
    f_out[0] = _poisson_f(s, e, u)
    u_out[0] = u


cdef double _poisson_root(double s, double e, double target, double a, double b) noexcept nogil:
    """Root of the Poisson score = target in [a, b], where score - target changes sign."""
    cdef bint increasing = _poisson_f(s, e, a) - target < 0.0
    cdef double x = 0.5 * (a + b)
    cdef double h, d1, nx
    cdef int it
    for it in range(_MAX_ITER):
        h = _poisson_f(s, e, x) - target
        if (h < 0.0) == increasing:
            a = x
        else:
            b = x
        d1 = s - e * exp(x)
        nx = x - h / d1 if d1 != 0.0 else 0.5 * (a + b)
        if not (a < nx < b):
            nx = 0.5 * (a + b)
        if fabs(nx - x) < _TOL_U or b - a < _TOL_U:
            return nx
        x = nx
    return x


cdef void _poisson_interval(double s, double e, double penalty,
                            double* left_out, double* right_out) noexcept nogil:
    """{u : score(u) > penalty} on the bracket (empty: left >= right)."""
    cdef double uhat = _poisson_argmax(s, e, _U_LO, _U_HI)
    cdef double fmax = _poisson_f(s, e, uhat)
    cdef double left, right
    if not fmax > penalty:
        left_out[0] = 0.0
        right_out[0] = 0.0
        return
    if penalty == 0.0 and uhat > 0.0:
        left = 0.0
    elif _poisson_f(s, e, _U_LO) - penalty >= 0.0:
        left = _U_LO
    else:
        left = _poisson_root(s, e, penalty, _U_LO, uhat)
    if penalty == 0.0 and uhat < 0.0:
        right = 0.0
    elif _poisson_f(s, e, _U_HI) - penalty >= 0.0:
        right = _U_HI
    else:
        right = _poisson_root(s, e, penalty, uhat, _U_HI)
    left_out[0] = left
    right_out[0] = right


cdef inline void _clip_to_direction(double* left, double* right, int direction) noexcept nogil:
    """Step 2 of methods.md §1.4.3: keep the part of (left, right) on the scan's side of 0
    (log q or mu). An interval entirely on the other side comes back empty (left >= right)."""
    if direction > 0:
        left[0] = max(left[0], 0.0)
    else:
        right[0] = min(right[0], 0.0)


# --------------------------------------------------------------------------------------------
# Problem and workspace: raw views of the cells and buffers reused by every attribute step
# --------------------------------------------------------------------------------------------


cdef struct Problem:
    Grid g  # codes (n_cells, m), cardinalities, n_cells, m, kmax
    const double* c
    const double* w
    const double* p
    bint const_p
    int direction
    int likelihood
    double sigma2


cdef struct Workspace:
    int64_t* counts  # kmax + 1
    int64_t* offsets  # kmax + 1
    int64_t* fill  # kmax
    double* gc  # n_cells (>= kmax)
    double* gw
    double* gp
    double* ac  # kmax
    double* aw
    double* ap
    double* bc  # n_cells (>= kmax)
    double* bw
    double* bp
    int64_t* inside  # n_cells: a subgroup's cells (a restart's start)


cdef struct Table:
    # the score table the shared search works on: the problem and the step's value groups
    const Problem* pr
    Workspace ws


cdef int _workspace_alloc(Workspace* ws, int64_t n_cells, int64_t kmax) except -1:
    cdef int64_t nb = max(n_cells, kmax) + 1
    ws.counts = <int64_t*>malloc((kmax + 1) * sizeof(int64_t))
    ws.offsets = <int64_t*>malloc((kmax + 1) * sizeof(int64_t))
    ws.fill = <int64_t*>malloc((kmax + 1) * sizeof(int64_t))
    ws.gc = <double*>malloc(nb * sizeof(double))
    ws.gw = <double*>malloc(nb * sizeof(double))
    ws.gp = <double*>malloc(nb * sizeof(double))
    ws.ac = <double*>malloc((kmax + 1) * sizeof(double))
    ws.aw = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ap = <double*>malloc((kmax + 1) * sizeof(double))
    ws.bc = <double*>malloc(nb * sizeof(double))
    ws.bw = <double*>malloc(nb * sizeof(double))
    ws.bp = <double*>malloc(nb * sizeof(double))
    ws.inside = <int64_t*>malloc(nb * sizeof(int64_t))
    if (ws.counts == NULL or ws.offsets == NULL or ws.fill == NULL or ws.gc == NULL
            or ws.inside == NULL or ws.gw == NULL or ws.gp == NULL or ws.ac == NULL or ws.aw == NULL
            or ws.ap == NULL or ws.bc == NULL or ws.bw == NULL or ws.bp == NULL):
        _workspace_free(ws)
        raise MemoryError("not enough memory for the subset-scan workspace")
    return 0


cdef void _workspace_free(Workspace* ws) noexcept:
    free(ws.counts)
    free(ws.offsets)
    free(ws.fill)
    free(ws.gc)
    free(ws.gw)
    free(ws.gp)
    free(ws.ac)
    free(ws.aw)
    free(ws.ap)
    free(ws.bc)
    free(ws.bw)
    free(ws.bp)
    free(ws.inside)
    ws.counts = NULL
    ws.offsets = NULL
    ws.fill = NULL
    ws.gc = NULL
    ws.gw = NULL
    ws.gp = NULL
    ws.ac = NULL
    ws.aw = NULL
    ws.ap = NULL
    ws.bc = NULL
    ws.bw = NULL
    ws.bp = NULL
    ws.inside = NULL


# --------------------------------------------------------------------------------------------
# The score table of the cells (search_core.ScoreTable)
# --------------------------------------------------------------------------------------------


cdef void _score_set(const Problem* pr, const uint8_t* sel, double* bc, double* bw, double* bp,
                     double* out, int64_t* inside) noexcept nogil:
    """F, u = log q (or mu), size (sum w), observed and expected sums of the subgroup ``sel``.

    ``inside`` (n_cells, or NULL): a buffer to list the subgroup's cells from the grid's key
    index (search_core.subgroup_cells: the same cells in the same order as a pass over them,
    so the same sums), else each cell is tested."""
    cdef int64_t n = 0
    cdef int64_t n_inside = pr.g.n_cells
    cdef int64_t i, a, s
    cdef double size = 0.0
    cdef double obs = 0.0
    cdef double exp_ = 0.0
    cdef double f, u
    for a in range(5):
        out[a] = 0.0
    if inside != NULL:
        n_inside = subgroup_cells(&pr.g, sel, inside)
    for s in range(n_inside):
        i = s
        if inside != NULL:
            i = inside[s]
        elif not in_subgroup(&pr.g, sel, i):
            continue
        bc[n] = pr.c[i]
        bw[n] = pr.w[i]
        bp[n] = pr.p[i]
        size += pr.w[i]
        obs += pr.c[i]
        exp_ += pr.w[i] * pr.p[i]
        n += 1
    if n == 0:
        return
    if pr.likelihood == C_GAUSSIAN:
        _gauss_score(obs, size, pr.direction, pr.sigma2, &f, &u)
        out[0] = f
        out[1] = u
        out[2] = size
        out[3] = obs
        return
    if pr.likelihood == C_POISSON:
        _poisson_score(obs, exp_, pr.direction, &f, &u)
    else:
        u = _constrained_argmax(bc, bw, bp, 0, n, pr.direction)
        f = 0.0 if u == 0.0 else _f(bc, bw, bp, 0, n, u)
        if f == 0.0:
            u = 0.0
    out[0] = f
    out[1] = u
    out[2] = size
    out[3] = obs
    out[4] = exp_



cdef inline void _score_selection(const Problem* pr, Workspace* ws, const double* gc,
                                  const double* gw, const double* gp, const int64_t* offsets,
                                  const uint8_t* chosen, int64_t k, double* f_out,
                                  double* u_out) noexcept nogil:
    """Score the union of the value groups flagged in ``chosen`` (buffers bc/bw/bp reused)."""
    cdef int64_t n = 0
    cdef int64_t v, t
    cdef double sc, sw, pv, u
    f_out[0] = 0.0
    u_out[0] = 0.0
    if pr.const_p:
        sc = 0.0
        sw = 0.0
        pv = 0.0
        for v in range(k):
            if chosen[v]:
                for t in range(offsets[v], offsets[v + 1]):
                    sc += gc[t]
                    sw += gw[t]
                    pv = gp[t]
        if sw == 0.0:
            return
        if pr.likelihood == C_GAUSSIAN:
            _gauss_score(sc, sw, pr.direction, pr.sigma2, f_out, u_out)
            return
        if pr.likelihood == C_POISSON:  # pseudo-cells hold expected sums in place of row counts
            _poisson_score(sc, sw, pr.direction, f_out, u_out)
            return
        ws.bc[0] = sc
        ws.bw[0] = sw
        ws.bp[0] = pv
        n = 1
    else:
        for v in range(k):
            if chosen[v]:
                for t in range(offsets[v], offsets[v + 1]):
                    ws.bc[n] = gc[t]
                    ws.bw[n] = gw[t]
                    ws.bp[n] = gp[t]
                    n += 1
        if n == 0:
            return
    u = _constrained_argmax(ws.bc, ws.bw, ws.bp, 0, n, pr.direction)
    if u == 0.0:
        return
    f_out[0] = _f(ws.bc, ws.bw, ws.bp, 0, n, u)
    u_out[0] = u


cdef inline bint _value_interval(const Problem* pr, const double* gc, const double* gw,
                          const double* gp, int64_t lo, int64_t hi, double penalty,
                          double* left_out, double* right_out) noexcept nogil:
    """{u : F_v(u) > penalty} of one value's cells, clipped to the direction; False if empty."""
    cdef double sv, nv, disc, root, left, right, uhat, fmax, unused, curv, half_width
    if pr.likelihood == C_GAUSSIAN:
        # one pseudo-cell per value: closed-form roots of F_v(mu) = penalty (§1.4.2)
        sv = gc[lo]
        nv = gw[lo]
        disc = sv * sv - 2.0 * nv * pr.sigma2 * penalty
        if not disc > 0.0:
            return False
        root = sqrt(disc)
        left = (sv - root) / nv
        right = (sv + root) / nv
        if penalty == 0.0:  # one root is exactly mu = 0
            if sv > 0.0:
                left = 0.0
            else:
                right = 0.0
    elif pr.likelihood == C_POISSON:
        _poisson_interval(gc[lo], gw[lo], penalty, &left, &right)
    else:
        uhat = _argmax_u(gc, gw, gp, lo, hi, _U_LO, _U_HI)
        fmax = _f(gc, gw, gp, lo, hi, uhat)
        if not fmax > penalty:
            return False
        # starting points: roots of the quadratic approximation of F_v at its maximum
        _df_d2f(gc, gw, gp, lo, hi, uhat, &unused, &curv)
        half_width = sqrt(2.0 * (fmax - penalty) / -curv) if curv < 0.0 else 1.0
        if penalty == 0.0 and uhat > 0.0:
            left = 0.0  # F_v(0) = 0 exactly
        elif _f(gc, gw, gp, lo, hi, _U_LO) - penalty >= 0.0:
            left = _U_LO
        else:
            left = _root_u(gc, gw, gp, lo, hi, penalty, _U_LO, uhat, uhat - half_width)
        if penalty == 0.0 and uhat < 0.0:
            right = 0.0
        elif _f(gc, gw, gp, lo, hi, _U_HI) - penalty >= 0.0:
            right = _U_HI
        else:
            right = _root_u(gc, gw, gp, lo, hi, penalty, uhat, _U_HI, uhat + half_width)
    _clip_to_direction(&left, &right, pr.direction)
    left_out[0] = left
    right_out[0] = right
    return left < right



cdef void _group(void* table, const int64_t* cells, int64_t n, int64_t j,
                 const int64_t* counts) noexcept nogil:
    """The relaxed subgroup's cells grouped by value of j into gc/gw/gp with ``offsets``;
    pseudo-cells per value when sums suffice."""
    cdef Table* tb = <Table*>table
    cdef const Problem* pr = tb.pr
    cdef Workspace* ws = &tb.ws
    cdef int64_t k = pr.g.card[j]
    cdef int64_t m = pr.g.m
    cdef int64_t i, v, t, s, used
    cdef int64_t* offsets = ws.offsets
    offsets[0] = 0
    for v in range(k):
        offsets[v + 1] = offsets[v] + counts[v]
    for v in range(k):
        ws.fill[v] = offsets[v]
    for s in range(n):
        i = cells[s]
        v = pr.g.codes[i * m + j]
        t = ws.fill[v]
        ws.gc[t] = pr.c[i]
        ws.gw[t] = pr.w[i]
        ws.gp[t] = pr.p[i]
        ws.fill[v] = t + 1
    if not pr.const_p:
        return
    # one pseudo-cell per value
    for v in range(k):
        ws.ac[v] = 0.0
        ws.aw[v] = 0.0
        ws.ap[v] = 0.0
        for t in range(offsets[v], offsets[v + 1]):
            ws.ac[v] += ws.gc[t]
            if pr.likelihood == C_POISSON:
                ws.aw[v] += ws.gw[t] * ws.gp[t]
            else:
                ws.aw[v] += ws.gw[t]
            ws.ap[v] = ws.gp[t]
    used = 0
    for v in range(k):
        if offsets[v + 1] > offsets[v]:
            ws.gc[used] = ws.ac[v]
            ws.gw[used] = ws.aw[v]
            ws.gp[used] = ws.ap[v]
            ws.counts[v] = 1
            used += 1
        else:
            ws.counts[v] = 0
    offsets[0] = 0
    for v in range(k):
        offsets[v + 1] = offsets[v] + ws.counts[v]


cdef void _load_sums(void* table, int64_t j, const double* c_sums, const double* w_sums,
                     const int64_t* counts) noexcept nogil:
    """A step's pseudo-cells from the per-value sums the search took from the data cube
    (search_core.grid_index_cube): what :func:`_group` makes of the listed cells when the
    expectation is constant."""
    cdef Table* tb = <Table*>table
    cdef const Problem* pr = tb.pr
    cdef Workspace* ws = &tb.ws
    cdef int64_t k = pr.g.card[j]
    cdef int64_t v
    cdef int64_t used = 0
    for v in range(k):
        if counts[v] > 0:
            ws.gc[used] = c_sums[v]
            ws.gw[used] = w_sums[v]
            ws.gp[used] = pr.p[0]
            ws.counts[v] = 1
            used += 1
        else:
            ws.counts[v] = 0
    ws.offsets[0] = 0
    for v in range(k):
        ws.offsets[v + 1] = ws.offsets[v] + ws.counts[v]


cdef void _score_chosen(void* table, const uint8_t* chosen, int64_t k, double* f_out,
                        double* u_out) noexcept nogil:
    cdef Table* tb = <Table*>table
    _score_selection(tb.pr, &tb.ws, tb.ws.gc, tb.ws.gw, tb.ws.gp, tb.ws.offsets, chosen, k,
                     f_out, u_out)


cdef bint _interval(void* table, int64_t v, double penalty, double* left_out,
                    double* right_out) noexcept nogil:
    cdef Table* tb = <Table*>table
    return _value_interval(tb.pr, tb.ws.gc, tb.ws.gw, tb.ws.gp, tb.ws.offsets[v],
                           tb.ws.offsets[v + 1], penalty, left_out, right_out)


cdef double _start_score(void* table, const uint8_t* sel) noexcept nogil:
    cdef Table* tb = <Table*>table
    cdef double out[5]
    _score_set(tb.pr, sel, tb.ws.bc, tb.ws.bw, tb.ws.bp, out, tb.ws.inside)
    return out[0]


cdef int _table_open(Table* tb, const Problem* pr, ScoreTable* st) except -1:
    """Point the shared search's score table ``st`` at ``tb`` (workspace allocated: free it with
    ``_workspace_free(&tb.ws)``)."""
    tb.pr = pr
    _workspace_alloc(&tb.ws, pr.g.n_cells, pr.g.kmax)
    st.table = tb
    st.group = _group
    st.score_chosen = _score_chosen
    st.value_interval = _interval
    st.score_set = _start_score
    return 0


# --------------------------------------------------------------------------------------------
# Python entry points
# --------------------------------------------------------------------------------------------


cdef int _cells_view(Problem* pr, const int32_t[:, ::1] codes, const double[::1] c,
                     const double[::1] w, const double[::1] p, int direction, int likelihood,
                     double sigma) except -1:
    """Point ``pr`` at the cells (checked) and set the score; attributes come from the caller."""
    cdef int64_t n_cells = codes.shape[0]
    if likelihood not in (C_BERNOULLI, C_GAUSSIAN, C_POISSON):
        raise ValueError(f"unknown likelihood code {likelihood}")
    if c.shape[0] != n_cells or w.shape[0] != n_cells or p.shape[0] != n_cells:
        raise ValueError("cells: codes, c, w and p must have the same length")
    pr.g.codes = &codes[0, 0] if codes.shape[0] > 0 and codes.shape[1] > 0 else NULL
    pr.c = &c[0] if n_cells > 0 else NULL
    pr.w = &w[0] if n_cells > 0 else NULL
    pr.p = &p[0] if n_cells > 0 else NULL
    pr.g.n_cells = n_cells
    pr.g.m = codes.shape[1]
    pr.g.index = NULL
    pr.direction = direction
    pr.likelihood = likelihood
    pr.sigma2 = sigma * sigma
    return 0


cdef int _problem(Problem* pr, const int32_t[:, ::1] codes, const double[::1] c,
                  const double[::1] w, const double[::1] p, bint const_p,
                  const int32_t[::1] card, int direction, int likelihood,
                  double sigma) except -1:
    cdef int64_t a
    _cells_view(pr, codes, c, w, p, direction, likelihood, sigma)
    if codes.shape[1] != card.shape[0]:
        raise ValueError("cells: one cardinality per attribute column is needed")
    pr.g.card = &card[0] if card.shape[0] > 0 else NULL
    pr.g.kmax = 1
    for a in range(pr.g.m):
        pr.g.kmax = max(pr.g.kmax, <int64_t>card[a])
    pr.const_p = const_p or likelihood != C_BERNOULLI
    return 0


cdef uint8_t[:, ::1] _bool_view(object array, int64_t rows, int64_t cols, str name):
    arr = np.asarray(array)
    if arr.dtype != np.bool_ or arr.ndim != 2 or not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous 2-d boolean array")
    if arr.shape[0] < rows or arr.shape[1] < cols:
        raise ValueError(f"{name} must have shape at least ({rows}, {cols})")
    return arr.view(np.uint8)


def ltss_step(codes, c, w, p, bint const_p, sel, card, mismatch, int j, double penalty,
              int direction, out_row):
    """Bernoulli attribute step (see :func:`ltss_step_lik`)."""
    return ltss_step_lik(codes, c, w, p, const_p, sel, card, mismatch, j, penalty, direction,
                         out_row, BERNOULLI, 1.0)


def ltss_step_lik(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                  const double[::1] p, bint const_p, sel, const int32_t[::1] card,
                  const int32_t[::1] mismatch, int j, double penalty, int direction,
                  out_row, int likelihood, double sigma):
    """Best choice of S_j given the other attributes (exact, methods.md §1.4.3).

    Returns ``F(S') - penalty * |S'_j|`` (no penalty when S'_j is all values) and writes the
    chosen value set of attribute ``j`` into ``out_row`` (a boolean row of length >= card[j]).
    ``sigma`` is used by the Gaussian score only."""
    cdef Problem pr
    cdef Table tb
    cdef ScoreTable st
    cdef SearchWork sw
    _problem(&pr, codes, c, w, p, const_p, card, direction, likelihood, sigma)
    if not 0 <= j < pr.g.m:
        raise ValueError(f"attribute index {j} out of range")
    if mismatch.shape[0] != pr.g.n_cells:
        raise ValueError("mismatch must have one entry per cell")
    cdef uint8_t[:, ::1] sel_v = _bool_view(sel, pr.g.m, pr.g.kmax, "sel")
    row_arr = np.asarray(out_row)
    if row_arr.dtype != np.bool_ or row_arr.ndim != 1 or row_arr.shape[0] < card[j]:
        raise ValueError("out_row must be a boolean row of length >= card[j]")
    cdef uint8_t[::1] row_v = row_arr.view(np.uint8)
    # the kernels index sel with a row stride of kmax: copy into that layout
    cdef uint8_t[:, ::1] sel_c = np.ascontiguousarray(np.asarray(sel_v)[:, : pr.g.kmax])
    cdef double result
    _table_open(&tb, &pr, &st)
    try:
        search_work_alloc(&sw, pr.g.n_cells, pr.g.kmax)
        try:
            result = core_ltss_step(&pr.g, &st, &sw, &sel_c[0, 0],
                                    &mismatch[0] if pr.g.n_cells else NULL, j, penalty,
                                    &row_v[0])
        finally:
            search_work_free(&sw)
    finally:
        _workspace_free(&tb.ws)
    return result


def score_selection(codes, c, w, p, sel, int direction):
    """F, u = log q, size (sum w), observed and expected sums of the subgroup ``sel``."""
    return score_selection_lik(codes, c, w, p, sel, direction, BERNOULLI, 1.0)


def score_selection_lik(const int32_t[:, ::1] codes, const double[::1] c, const double[::1] w,
                        const double[::1] p, sel, int direction, int likelihood, double sigma):
    """As :func:`score_selection` for any likelihood; Gaussian: (F, mu, n, sum Delta, 0)."""
    cdef Problem pr
    cdef int64_t n_cells = codes.shape[0]
    _cells_view(&pr, codes, c, w, p, direction, likelihood, sigma)
    sel_arr = np.ascontiguousarray(np.asarray(sel))
    if sel_arr.dtype != np.bool_ or sel_arr.ndim != 2 or sel_arr.shape[0] != codes.shape[1]:
        raise ValueError("sel must be a 2-d boolean array with one row per attribute")
    cdef uint8_t[:, ::1] sel_c = sel_arr.view(np.uint8)
    pr.g.card = NULL  # scoring a given subgroup needs no cardinalities
    pr.g.kmax = sel_c.shape[1]
    pr.const_p = False
    cdef double[::1] bc = np.empty(n_cells + 1)
    cdef double[::1] bw = np.empty(n_cells + 1)
    cdef double[::1] bp = np.empty(n_cells + 1)
    cdef double out[5]
    _score_set(&pr, &sel_c[0, 0] if sel_c.shape[0] > 0 and sel_c.shape[1] > 0 else NULL,
               &bc[0], &bw[0], &bp[0], out, NULL)
    return out[0], out[1], out[2], out[3], out[4]


def _compute_mismatch(const int32_t[:, ::1] codes, sel, int32_t[::1] mismatch):
    """Fill mismatch[i] = #attributes where cell i is outside S; return the number of cells in S."""
    cdef Grid g
    sel_arr = np.ascontiguousarray(np.asarray(sel))
    if sel_arr.dtype != np.bool_ or sel_arr.ndim != 2 or sel_arr.shape[0] != codes.shape[1]:
        raise ValueError("sel must be a 2-d boolean array with one row per attribute")
    if mismatch.shape[0] != codes.shape[0]:
        raise ValueError("mismatch must have one entry per cell")
    cdef uint8_t[:, ::1] sel_c = sel_arr.view(np.uint8)
    g.codes = &codes[0, 0] if codes.shape[0] > 0 and codes.shape[1] > 0 else NULL
    g.card = NULL
    g.n_cells = codes.shape[0]
    g.m = codes.shape[1]
    g.kmax = sel_c.shape[1]
    g.index = NULL
    return compute_mismatch(&g, &sel_c[0, 0] if g.m else NULL,
                            &mismatch[0] if g.n_cells else NULL)


def coordinate_ascent(codes, c, w, p, bint const_p, card, int direction, double penalty,
                      int restarts, seed, bint index=True, bint cube=True):
    """Best penalised objective J* over ``restarts`` coordinate-ascent runs and its subgroup.

    ``index``: list rectangular sets from a profile-key index where cheaper (the same cells in
    the same order as a pass over them, so the same result; False only to check that).
    ``cube``: with the index and a constant expectation over whole-number counts, steps add
    the counts from a data cube instead of listing cells (the same sums, so the same result;
    False only to check that)."""
    return coordinate_ascent_lik(codes, c, w, p, const_p, card, direction, penalty, restarts,
                                 seed, BERNOULLI, 1.0, index, cube)


def coordinate_ascent_lik(const int32_t[:, ::1] codes, const double[::1] c,
                          const double[::1] w, const double[::1] p, bint const_p,
                          const int32_t[::1] card, int direction, double penalty, int restarts,
                          seed, int likelihood, double sigma, bint index=True,
                          bint cube=True):
    """As :func:`coordinate_ascent` for any likelihood (``sigma``: Gaussian only).

    Returns ``(best_sel, best_j)``: a boolean (m, kmax) selection and its objective."""
    cdef Problem pr
    cdef Table tb
    cdef ScoreTable st
    _problem(&pr, codes, c, w, p, const_p, card, direction, likelihood, sigma)
    cdef uint64_t state = <uint64_t>int(seed)
    cdef double best_j = 0.0
    best_arr = np.zeros((pr.g.m, pr.g.kmax), np.bool_)
    cdef uint8_t[:, ::1] best_sel = best_arr.view(np.uint8)
    if pr.g.m == 0:
        return best_arr, 0.0
    cdef GridIndex ix
    cdef int64_t[::1] buffer
    cdef bint borrowed = False
    cdef double entries
    global _cube_buffer, _cube_busy
    grid_index_open(&pr.g, &ix, index)
    try:
        if cube and ix.key_start != NULL and _cube_exact(c, w, p, const_p, likelihood):
            entries = _cube_entries(card)
            # a kept buffer unless another thread's search holds it (then a fresh cube)
            if (not _cube_busy and entries <= CUBE_MAX_ENTRIES
                    and entries <= CUBE_ENTRIES_PER_KEY * ix.n_keys):
                _cube_busy = borrowed = True
                buffer = _kept_cube_buffer(<int64_t>entries + 1)
                grid_index_cube(&pr.g, &c[0], &w[0], _load_sums, &buffer[0], buffer.shape[0])
            else:
                grid_index_cube(&pr.g, &c[0], &w[0], _load_sums, NULL, 0)
        _table_open(&tb, &pr, &st)
        try:
            search(&pr.g, &st, penalty, restarts, state, &best_sel[0, 0], &best_j)
        finally:
            _workspace_free(&tb.ws)
    finally:
        grid_index_close(&ix)
        if borrowed:
            _cube_busy = False
    return best_arr, best_j


# The data cube's memory, kept between the searches of a process (the null replicates' searches
# each need one of the same size) while no search uses it; None until one does.
_cube_buffer = None
cdef bint _cube_busy = False


cdef double _cube_entries(const int32_t[::1] card):
    cdef double entries = 1.0
    cdef int64_t a
    for a in range(card.shape[0]):
        entries *= card[a] + 1
    return entries


cdef int64_t[::1] _kept_cube_buffer(int64_t size):
    """The kept cube buffer, grown to ``size`` entries if smaller."""
    global _cube_buffer
    if _cube_buffer is None or _cube_buffer.shape[0] < size:
        _cube_buffer = None
        _cube_buffer = np.empty(size, np.int64)
    return _cube_buffer


def _cube_exact(const double[::1] c, const double[::1] w, const double[::1] p, bint const_p,
                int likelihood):
    """Whether steps can add the cells' counts from a data cube (search_core.grid_index_cube):
    a Bernoulli score with one expectation for every cell (a step needs only the sums) over
    whole-number counts (c >= 0, w >= 1) small enough that the packed sums are exact. One
    pass, no temporaries: it runs once per search, null replicates included."""
    cdef int64_t n = c.shape[0]
    cdef int64_t i
    cdef double c_total = 0.0
    cdef double w_total = 0.0
    cdef bint exact = True
    if likelihood != C_BERNOULLI or not const_p or n == 0:
        return False
    if w.shape[0] != n or p.shape[0] != n:
        raise ValueError("cells: c, w and p must have the same length")
    with nogil:
        for i in range(n):
            if (p[i] != p[0] or c[i] != floor(c[i]) or w[i] != floor(w[i]) or not c[i] >= 0.0
                    or not w[i] >= 1.0):
                exact = False
                break
            c_total += c[i]
            w_total += w[i]
    return exact and c_total < 2.0**31 and w_total < 2.0**31
