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

Ctrl-C: the coordinate ascent checks for pending signals once per restart, so an interrupt
raises promptly (KeyboardInterrupt) instead of waiting for the search to end.
"""

from libc.math cimport exp, expm1, log, log1p, sqrt, fabs, INFINITY
from libc.stdlib cimport calloc, malloc, free, qsort
from libc.string cimport memcmp, memcpy, memset
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

import numpy as np




cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef double _U_LO = log(1e-6)
cdef double _U_HI = log(1e6)
cdef double _TOL_U = 1e-12  # convergence in log q (methods.md asks for < 1e-10)
cdef int _MAX_ITER = 200
# coordinate ascent accepts J(S') > J(S) + 1e-9 * max(1, |J(S)|)
cdef double _REL_IMPROVEMENT = 1e-9

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
# Random numbers: splitmix64, so a search is a pure function of its 64-bit seed.
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
    const int32_t* codes  # (n_cells, m) row-major
    const double* c
    const double* w
    const double* p
    const int32_t* card
    int64_t n_cells
    int64_t m
    int64_t kmax
    bint const_p
    int direction
    int likelihood
    double sigma2


# The LTSS step for attribute j is a function of j and the selection of the other attributes
# only (the mismatch counts derive from it): within one search, the restarts keep reaching the
# same (j, other attributes) states, so each step is computed once and looked up afterwards.
# The ascent's random draws never depend on how a step's result was obtained, so every search
# visits the same states and returns the same bits as without the memo.
cdef struct StepMemo:
    int64_t capacity  # slots, a power of two (0: no memo)
    int64_t key_len  # m * kmax bytes: the selection with attribute j's row cleared
    int64_t kmax
    int64_t filled
    uint8_t* used  # capacity
    int64_t* attribute  # capacity: j
    uint8_t* keys  # capacity * key_len
    uint8_t* rows  # capacity * kmax: the step's chosen values of j
    double* parts  # capacity: the step's value
    uint8_t* key  # key_len: the key being looked up


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
    double* umin  # kmax
    double* umax
    double* ends  # 2 kmax
    uint8_t* keep  # kmax
    uint8_t* chosen  # kmax
    StepMemo memo  # the coordinate ascent's LTSS steps already taken (empty: not used)


# memory of the memo at most (it is an optimisation: smaller problems use less)
cdef int64_t _MEMO_BYTES = 32 * 1024 * 1024
cdef int64_t _MEMO_MAX_SLOTS = 1 << 18


cdef int _memo_alloc(StepMemo* memo, int64_t m, int64_t kmax) except -1:
    """An empty memo for the steps of one search (it grows as they come)."""
    memset(memo, 0, sizeof(StepMemo))
    memo.key_len = m * kmax
    memo.kmax = kmax
    memo.key = <uint8_t*>malloc(memo.key_len + 1)
    if memo.key != NULL:
        _memo_resize(memo, 256)
    return 0


cdef bint _memo_resize(StepMemo* memo, int64_t capacity) noexcept nogil:
    """Move the entries into ``capacity`` slots; False (the memo unchanged) when that is over
    the memory budget or cannot be allocated: the search then stops adding steps."""
    cdef int64_t n = memo.key_len
    cdef int64_t kmax = memo.kmax
    cdef int64_t entry = n + kmax + 2 * sizeof(int64_t) + 1
    cdef int64_t old, slot
    cdef bint found
    cdef StepMemo grown
    if capacity > _MEMO_MAX_SLOTS or capacity * entry > _MEMO_BYTES:
        return False
    grown = memo[0]
    grown.capacity = capacity
    grown.filled = 0
    grown.used = <uint8_t*>calloc(capacity, sizeof(uint8_t))
    grown.attribute = <int64_t*>malloc(capacity * sizeof(int64_t))
    grown.keys = <uint8_t*>malloc(capacity * n + 1)
    grown.rows = <uint8_t*>malloc(capacity * kmax + 1)
    grown.parts = <double*>malloc(capacity * sizeof(double))
    if (grown.used == NULL or grown.attribute == NULL or grown.keys == NULL
            or grown.rows == NULL or grown.parts == NULL):
        free(grown.used)
        free(grown.attribute)
        free(grown.keys)
        free(grown.rows)
        free(grown.parts)
        return False
    for old in range(memo.capacity):
        if memo.used[old]:
            slot = _memo_find(&grown, &memo.keys[old * n], memo.attribute[old], &found)
            _memo_put(&grown, slot, &memo.keys[old * n], memo.attribute[old],
                      &memo.rows[old * kmax], memo.parts[old])
    free(memo.used)
    free(memo.attribute)
    free(memo.keys)
    free(memo.rows)
    free(memo.parts)
    grown.key = memo.key
    memo[0] = grown
    return True


cdef void _memo_free(StepMemo* memo) noexcept:
    free(memo.used)
    free(memo.attribute)
    free(memo.keys)
    free(memo.rows)
    free(memo.parts)
    free(memo.key)
    memo.used = NULL
    memo.attribute = NULL
    memo.keys = NULL
    memo.rows = NULL
    memo.parts = NULL
    memo.key = NULL
    memo.capacity = 0


cdef int64_t _memo_find(const StepMemo* memo, const uint8_t* key, int64_t j,
                        bint* found) noexcept nogil:
    """The slot holding (j, key), or the free slot where it goes (the memo is never full:
    it grows, or stops adding, at half its slots)."""
    cdef int64_t n = memo.key_len
    cdef int64_t i, slot
    cdef uint64_t h = 1469598103934665603ULL ^ <uint64_t>j
    for i in range(n):
        h = (h ^ key[i]) * 1099511628211ULL
    slot = <int64_t>(h & <uint64_t>(memo.capacity - 1))
    while memo.used[slot]:
        if memo.attribute[slot] == j and memcmp(&memo.keys[slot * n], key, n) == 0:
            found[0] = True
            return slot
        slot = (slot + 1) & (memo.capacity - 1)
    found[0] = False
    return slot


cdef void _memo_put(StepMemo* memo, int64_t slot, const uint8_t* key, int64_t j,
                    const uint8_t* row, double part) noexcept nogil:
    memo.used[slot] = 1
    memo.attribute[slot] = j
    memcpy(&memo.keys[slot * memo.key_len], key, memo.key_len)
    memcpy(&memo.rows[slot * memo.kmax], row, memo.kmax)
    memo.parts[slot] = part
    memo.filled += 1


cdef void _memo_keep(StepMemo* memo, int64_t slot, int64_t j, const uint8_t* row,
                     double part) noexcept nogil:
    """Store the result for ``memo.key`` at ``slot`` (its free slot from :func:`_memo_find`),
    growing the memo first when it is half full; over budget, the result is not kept."""
    cdef bint found
    if 2 * (memo.filled + 1) > memo.capacity:
        if not _memo_resize(memo, 2 * memo.capacity):
            return
        slot = _memo_find(memo, memo.key, j, &found)
    _memo_put(memo, slot, memo.key, j, row, part)


cdef inline void _refresh_mismatch(const Problem* pr, const uint8_t* sel, int32_t* mismatch,
                                   bint* mismatch_ok) noexcept nogil:
    if not mismatch_ok[0]:
        _compute_mismatch_c(pr, sel, mismatch)
        mismatch_ok[0] = True


cdef double _memo_step(const Problem* pr, Workspace* ws, const uint8_t* sel,
                       int32_t* mismatch, bint* mismatch_ok, int64_t j, double penalty,
                       uint8_t* out_row) noexcept nogil:
    """:func:`_ltss_step`, computed once per (j, selection of the other attributes).

    ``mismatch`` is brought up to date (``mismatch_ok``) only when a step is computed: the
    ascent skips that O(cells) bookkeeping while its steps are looked up."""
    cdef StepMemo* memo = &ws.memo
    cdef bint found = False
    cdef int64_t slot, v
    cdef int64_t kmax = memo.kmax
    cdef double part
    if memo.capacity == 0:
        _refresh_mismatch(pr, sel, mismatch, mismatch_ok)
        return _ltss_step(pr, ws, sel, mismatch, j, penalty, out_row)
    memcpy(memo.key, sel, memo.key_len)
    for v in range(kmax):
        memo.key[j * kmax + v] = 0
    slot = _memo_find(memo, memo.key, j, &found)
    if found:
        for v in range(pr.card[j]):
            out_row[v] = memo.rows[slot * kmax + v]
        return memo.parts[slot]
    _refresh_mismatch(pr, sel, mismatch, mismatch_ok)
    part = _ltss_step(pr, ws, sel, mismatch, j, penalty, out_row)
    _memo_keep(memo, slot, j, out_row, part)
    return part


cdef double _memo_start_score(const Problem* pr, Workspace* ws,
                              const uint8_t* sel) noexcept nogil:
    """F of a restart's random start, computed once per selection (attribute -1 in the memo:
    the random starts of one search repeat when the attributes have few values)."""
    cdef StepMemo* memo = &ws.memo
    cdef bint found = False
    cdef int64_t slot
    cdef double score5[5]
    if memo.capacity > 0:
        memcpy(memo.key, sel, memo.key_len)
        slot = _memo_find(memo, memo.key, -1, &found)
        if found:
            return memo.parts[slot]
    _score_set(pr, sel, ws.bc, ws.bw, ws.bp, score5)
    if memo.capacity > 0:
        _memo_keep(memo, slot, -1, ws.chosen, score5[0])
    return score5[0]


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
    ws.umin = <double*>malloc((kmax + 1) * sizeof(double))
    ws.umax = <double*>malloc((kmax + 1) * sizeof(double))
    ws.ends = <double*>malloc((2 * kmax + 2) * sizeof(double))
    ws.keep = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    ws.chosen = <uint8_t*>malloc((kmax + 1) * sizeof(uint8_t))
    memset(&ws.memo, 0, sizeof(StepMemo))  # no memo: the coordinate ascent adds its own
    if (ws.counts == NULL or ws.offsets == NULL or ws.fill == NULL or ws.gc == NULL
            or ws.gw == NULL or ws.gp == NULL or ws.ac == NULL or ws.aw == NULL
            or ws.ap == NULL or ws.bc == NULL or ws.bw == NULL or ws.bp == NULL
            or ws.umin == NULL or ws.umax == NULL or ws.ends == NULL or ws.keep == NULL
            or ws.chosen == NULL):
        _workspace_free(ws)
        raise MemoryError("not enough memory for the subset-scan workspace")
    return 0


cdef void _workspace_free(Workspace* ws) noexcept:
    _memo_free(&ws.memo)
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
    free(ws.umin)
    free(ws.umax)
    free(ws.ends)
    free(ws.keep)
    free(ws.chosen)
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
    ws.umin = NULL
    ws.umax = NULL
    ws.ends = NULL
    ws.keep = NULL
    ws.chosen = NULL


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x > y) - (x < y)


# --------------------------------------------------------------------------------------------
# Exact attribute step (LTSS over q-intervals, methods.md §1.4.3)
# --------------------------------------------------------------------------------------------


cdef void _score_selection(const Problem* pr, Workspace* ws, const double* gc, const double* gw,
                           const double* gp, const int64_t* offsets, const uint8_t* chosen,
                           int64_t k, double* f_out, double* u_out) noexcept nogil:
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


cdef bint _value_interval(const Problem* pr, const double* gc, const double* gw,
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


cdef int64_t _group_relaxed(const Problem* pr, Workspace* ws, const uint8_t* sel,
                            const int32_t* mismatch, int64_t j) noexcept nogil:
    """Cells of the relaxed subgroup R (matching S on every attribute but j), grouped by value
    of j into gc/gw/gp with ``offsets``; pseudo-cells per value when sums suffice.
    Returns the number of values k of attribute j."""
    cdef int64_t k = pr.card[j]
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef int64_t i, v, t, total, miss, used
    cdef int64_t* counts = ws.counts
    cdef int64_t* offsets = ws.offsets
    for v in range(k + 1):
        counts[v] = 0
    for i in range(pr.n_cells):
        v = pr.codes[i * m + j]
        miss = mismatch[i] - (0 if sel[j * kmax + v] else 1)
        if miss == 0:
            counts[v + 1] += 1
    offsets[0] = 0
    for v in range(k):
        offsets[v + 1] = offsets[v] + counts[v + 1]
    total = offsets[k]
    for v in range(k):
        ws.fill[v] = offsets[v]
    for i in range(pr.n_cells):
        v = pr.codes[i * m + j]
        miss = mismatch[i] - (0 if sel[j * kmax + v] else 1)
        if miss == 0:
            t = ws.fill[v]
            ws.gc[t] = pr.c[i]
            ws.gw[t] = pr.w[i]
            ws.gp[t] = pr.p[i]
            ws.fill[v] = t + 1
    if not pr.const_p:
        return k
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
            counts[v] = 1
            used += 1
        else:
            counts[v] = 0
    offsets[0] = 0
    for v in range(k):
        offsets[v + 1] = offsets[v] + counts[v]
    return k


cdef double _ltss_step(const Problem* pr, Workspace* ws, const uint8_t* sel,
                       const int32_t* mismatch, int64_t j, double penalty,
                       uint8_t* out_row) noexcept nogil:
    """Best choice of S_j given the other attributes (exact, methods.md §1.4.3).

    Returns ``F(S') - penalty * |S'_j|`` (no penalty when S'_j is all values) and writes the
    chosen value set of attribute ``j`` into ``out_row``. The penalty of the other attributes
    is the caller's constant."""
    cdef int64_t k = _group_relaxed(pr, ws, sel, mismatch, j)
    cdef int64_t* offsets = ws.offsets
    cdef uint8_t* chosen = ws.chosen
    cdef uint8_t* keep = ws.keep
    cdef int64_t v, e, t, size, n_keep
    cdef double best, unused, f_k, j_k, mid
    cdef bint best_is_all = True

    # candidate 0: attribute unconstrained (no penalty for j)
    for v in range(k):
        chosen[v] = 1 if offsets[v + 1] > offsets[v] else 0
    _score_selection(pr, ws, ws.gc, ws.gw, ws.gp, offsets, chosen, k, &best, &unused)
    for v in range(k):
        out_row[v] = 1

    # per-value intervals {u : F_v(u) > penalty}, clipped to the direction
    n_keep = 0
    for v in range(k):
        keep[v] = 0
        if offsets[v + 1] == offsets[v]:
            continue
        if _value_interval(pr, ws.gc, ws.gw, ws.gp, offsets[v], offsets[v + 1], penalty,
                           &ws.umin[v], &ws.umax[v]):
            keep[v] = 1
            n_keep += 1
    if n_keep == 0:
        return best

    e = 0
    for v in range(k):
        if keep[v]:
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
            chosen[v] = 1 if (keep[v] and ws.umin[v] < mid and mid < ws.umax[v]) else 0
            if chosen[v]:
                size += 1
        if size == 0:
            continue
        _score_selection(pr, ws, ws.gc, ws.gw, ws.gp, offsets, chosen, k, &f_k, &unused)
        j_k = f_k - penalty * size
        if j_k > best:
            best = j_k
            best_is_all = False
            for v in range(k):
                out_row[v] = chosen[v]
    if best_is_all:
        for v in range(k):
            out_row[v] = 1
    return best


# --------------------------------------------------------------------------------------------
# Coordinate ascent with random restarts (methods.md §1.4.4)
# --------------------------------------------------------------------------------------------


cdef int64_t _penalty_units(const uint8_t* sel, const int32_t* card, int64_t m, int64_t kmax,
                            int64_t skip) noexcept nogil:
    """c(S) without attribute ``skip``: selected values summed over constrained attributes."""
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


cdef void _score_set(const Problem* pr, const uint8_t* sel, double* bc, double* bw, double* bp,
                     double* out) noexcept nogil:
    """F, u = log q (or mu), size (sum w), observed and expected sums of the subgroup ``sel``."""
    cdef int64_t n = 0
    cdef int64_t i, a
    cdef int64_t m = pr.m
    cdef double size = 0.0
    cdef double obs = 0.0
    cdef double exp_ = 0.0
    cdef double f, u
    cdef bint inside
    for a in range(5):
        out[a] = 0.0
    for i in range(pr.n_cells):
        inside = True
        for a in range(m):
            if not sel[a * pr.kmax + pr.codes[i * m + a]]:
                inside = False
                break
        if inside:
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


cdef int64_t _compute_mismatch_c(const Problem* pr, const uint8_t* sel,
                                 int32_t* mismatch) noexcept nogil:
    """Fill mismatch[i] = #attributes where cell i is outside S; return the number of cells in S."""
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


cdef bint _any_inside(const Problem* pr, const uint8_t* sel) noexcept nogil:
    """Whether some cell lies in the subgroup ``sel``."""
    cdef int64_t i, a
    cdef int64_t m = pr.m
    cdef bint inside
    for i in range(pr.n_cells):
        inside = True
        for a in range(m):
            if not sel[a * pr.kmax + pr.codes[i * m + a]]:
                inside = False
                break
        if inside:
            return True
    return False


cdef void _random_start(const Problem* pr, uint8_t* sel, uint64_t* state) noexcept nogil:
    """A random non-empty initial subgroup (10 tries), else all values (the caller's mismatch
    counts are then stale)."""
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
        if _any_inside(pr, sel):
            return
    _select_all(pr, sel)


cdef inline void _select_all(const Problem* pr, uint8_t* sel) noexcept nogil:
    cdef int64_t a, v
    for a in range(pr.m * pr.kmax):
        sel[a] = 0
    for a in range(pr.m):
        for v in range(pr.card[a]):
            sel[a * pr.kmax + v] = 1


cdef double _ascend(const Problem* pr, Workspace* ws, uint8_t* sel, int32_t* mismatch,
                    bint mismatch_ok, uint8_t* row, uint8_t* visited, double penalty,
                    uint64_t* state) noexcept nogil:
    """One coordinate-ascent run from ``sel`` to a local optimum; returns its objective."""
    cdef int64_t m = pr.m
    cdef int64_t kmax = pr.kmax
    cdef double cur, part, cand
    cdef int64_t n_unvisited, pick, j, a, v
    cur = _memo_start_score(pr, ws, sel) - penalty * _penalty_units(sel, pr.card, m, kmax, -1)
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
        part = _memo_step(pr, ws, sel, mismatch, &mismatch_ok, j, penalty, row)
        cand = part - penalty * _penalty_units(sel, pr.card, m, kmax, j)
        if cand > cur + _REL_IMPROVEMENT * max(1.0, fabs(cur)):
            mismatch_ok = False  # recounted when a step next needs it (most are looked up)
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


cdef int _cells_view(Problem* pr, const int32_t[:, ::1] codes, const double[::1] c,
                     const double[::1] w, const double[::1] p, int direction, int likelihood,
                     double sigma) except -1:
    """Point ``pr`` at the cells (checked) and set the score; attributes come from the caller."""
    cdef int64_t n_cells = codes.shape[0]
    if likelihood not in (C_BERNOULLI, C_GAUSSIAN, C_POISSON):
        raise ValueError(f"unknown likelihood code {likelihood}")
    if c.shape[0] != n_cells or w.shape[0] != n_cells or p.shape[0] != n_cells:
        raise ValueError("cells: codes, c, w and p must have the same length")
    pr.codes = &codes[0, 0] if codes.shape[0] > 0 and codes.shape[1] > 0 else NULL
    pr.c = &c[0] if n_cells > 0 else NULL
    pr.w = &w[0] if n_cells > 0 else NULL
    pr.p = &p[0] if n_cells > 0 else NULL
    pr.n_cells = n_cells
    pr.m = codes.shape[1]
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
    pr.card = &card[0] if card.shape[0] > 0 else NULL
    pr.kmax = 1
    for a in range(pr.m):
        pr.kmax = max(pr.kmax, <int64_t>card[a])
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
    cdef Workspace ws
    _problem(&pr, codes, c, w, p, const_p, card, direction, likelihood, sigma)
    if not 0 <= j < pr.m:
        raise ValueError(f"attribute index {j} out of range")
    if mismatch.shape[0] != pr.n_cells:
        raise ValueError("mismatch must have one entry per cell")
    cdef uint8_t[:, ::1] sel_v = _bool_view(sel, pr.m, pr.kmax, "sel")
    row_arr = np.asarray(out_row)
    if row_arr.dtype != np.bool_ or row_arr.ndim != 1 or row_arr.shape[0] < card[j]:
        raise ValueError("out_row must be a boolean row of length >= card[j]")
    cdef uint8_t[::1] row_v = row_arr.view(np.uint8)
    # the kernels index sel with a row stride of kmax: copy into that layout
    cdef uint8_t[:, ::1] sel_c = np.ascontiguousarray(np.asarray(sel_v)[:, : pr.kmax])
    cdef double result
    _workspace_alloc(&ws, pr.n_cells, pr.kmax)
    try:
        result = _ltss_step(&pr, &ws, &sel_c[0, 0], &mismatch[0] if pr.n_cells else NULL, j,
                            penalty, &row_v[0])
    finally:
        _workspace_free(&ws)
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
    pr.card = NULL  # scoring a given subgroup needs no cardinalities
    pr.kmax = sel_c.shape[1]
    pr.const_p = False
    cdef double[::1] bc = np.empty(n_cells + 1)
    cdef double[::1] bw = np.empty(n_cells + 1)
    cdef double[::1] bp = np.empty(n_cells + 1)
    cdef double out[5]
    _score_set(&pr, &sel_c[0, 0] if sel_c.shape[0] > 0 and sel_c.shape[1] > 0 else NULL,
               &bc[0], &bw[0], &bp[0], out)
    return out[0], out[1], out[2], out[3], out[4]


def _compute_mismatch(const int32_t[:, ::1] codes, sel, int32_t[::1] mismatch):
    """Fill mismatch[i] = #attributes where cell i is outside S; return the number of cells in S."""
    cdef Problem pr
    sel_arr = np.ascontiguousarray(np.asarray(sel))
    if sel_arr.dtype != np.bool_ or sel_arr.ndim != 2 or sel_arr.shape[0] != codes.shape[1]:
        raise ValueError("sel must be a 2-d boolean array with one row per attribute")
    if mismatch.shape[0] != codes.shape[0]:
        raise ValueError("mismatch must have one entry per cell")
    cdef uint8_t[:, ::1] sel_c = sel_arr.view(np.uint8)
    pr.codes = &codes[0, 0] if codes.shape[0] > 0 and codes.shape[1] > 0 else NULL
    pr.n_cells = codes.shape[0]
    pr.m = codes.shape[1]
    pr.kmax = sel_c.shape[1]
    return _compute_mismatch_c(&pr, &sel_c[0, 0] if pr.m else NULL,
                               &mismatch[0] if pr.n_cells else NULL)


def coordinate_ascent(codes, c, w, p, bint const_p, card, int direction, double penalty,
                      int restarts, seed):
    """Best penalised objective J* over ``restarts`` coordinate-ascent runs and its subgroup."""
    return coordinate_ascent_lik(codes, c, w, p, const_p, card, direction, penalty, restarts,
                                 seed, BERNOULLI, 1.0)


def coordinate_ascent_lik(const int32_t[:, ::1] codes, const double[::1] c,
                          const double[::1] w, const double[::1] p, bint const_p,
                          const int32_t[::1] card, int direction, double penalty, int restarts,
                          seed, int likelihood, double sigma):
    """As :func:`coordinate_ascent` for any likelihood (``sigma``: Gaussian only).

    Returns ``(best_sel, best_j)``: a boolean (m, kmax) selection and its objective."""
    cdef Problem pr
    cdef Workspace ws
    _problem(&pr, codes, c, w, p, const_p, card, direction, likelihood, sigma)
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
    best_arr[:, :] = False
    for r in range(m):
        best_arr[r, : card[r]] = True
    if m == 0:
        return best_arr, 0.0
    _workspace_alloc(&ws, pr.n_cells, kmax)
    try:
        _memo_alloc(&ws.memo, m, kmax)
        for r in range(restarts):
            PyErr_CheckSignals()  # Ctrl-C between restarts raises here
            if r == 0:
                _select_all(&pr, &sel[0])
                _compute_mismatch_c(&pr, &sel[0], &mismatch[0])
            else:
                _random_start(&pr, &sel[0], &state)
            cur = _ascend(&pr, &ws, &sel[0], &mismatch[0], r == 0, &row[0], &visited[0], penalty,
                          &state)
            if cur > best_j:
                best_j = cur
                for i in range(m * kmax):
                    best_sel[i // kmax, i % kmax] = sel[i]
    finally:
        _workspace_free(&ws)
    return best_arr, best_j
