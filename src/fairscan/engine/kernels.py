"""Compiled kernels of the MDSS core: Bernoulli score, exact LTSS attribute step, coordinate ascent.

Everything works on *cells*: rows compressed by (attribute profile, expectation), each with a
weight ``w`` (row count), an observed sum ``c`` and the shared expectation ``p``
(methods.md §1.4). The free parameter is handled as ``u = log q`` on the bracket
``[log 1e-6, log 1e6]``; F is defined as the maximum over that bracket everywhere.

Why numba: one null replicate runs thousands of attribute steps over a few hundred cells,
where numpy's per-call overhead would dominate the arithmetic.

Direction codes: ``+1`` = positive (observed above expectation, q >= 1),
``-1`` = negative (observed below expectation, q <= 1).

Likelihood codes: ``BERNOULLI`` (0, the default of the public entry points) and ``GAUSSIAN``
(1, methods.md §1.4.2: CBS separation scans for predictions). For the Gaussian score a cell's
``c`` is the sum of Delta_i over its rows, ``w`` its row count, ``p`` is unused, and the free
parameter is the mean shift mu (reported in place of u = log q); the score of a set with
``s = sum Delta``, ``n`` rows is ``s^2 / (2 sigma^2 n)`` when the sign of ``s`` matches the
direction, else 0, and the per-value intervals {mu : F_v(mu) > penalty} have closed-form ends
``(s_v -+ sqrt(s_v^2 - 2 n_v sigma^2 penalty)) / n_v``. Only sums matter, so Gaussian steps
always aggregate cells per value (the constant-expectation path).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

U_LO = math.log(1e-6)
U_HI = math.log(1e6)
TOL_U = 1e-12  # convergence in log q (methods.md asks for < 1e-10)
MAX_ITER = 200
REL_IMPROVEMENT = 1e-9  # coordinate ascent accepts J(S') > J(S) + 1e-9 * max(1, |J(S)|)
BERNOULLI = 0
GAUSSIAN = 1


# --------------------------------------------------------------------------------------------
# Random numbers: splitmix64, so a search is a pure function of its 64-bit seed and does not
# touch numba's (per-thread, global) numpy random state.
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _next_u64(state: np.ndarray) -> np.uint64:
    z = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _uniform(state: np.ndarray) -> float:
    return float(_next_u64(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _randint(state: np.ndarray, n: int) -> int:
    k = int(_uniform(state) * n)
    return k if k < n else n - 1


# --------------------------------------------------------------------------------------------
# Bernoulli score over a run of pseudo-cells [lo, hi) of (c, w, p)
#   F(u) = sum c*u - w*log(1 - p + p*e^u)      (concave in u)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _f(c: np.ndarray, w: np.ndarray, p: np.ndarray, lo: int, hi: int, u: float) -> float:
    em1 = math.expm1(u)
    s = 0.0
    for t in range(lo, hi):
        s += c[t] * u - w[t] * math.log1p(p[t] * em1)
    return s


@njit(cache=True)
def _f_df(
    c: np.ndarray, w: np.ndarray, p: np.ndarray, lo: int, hi: int, u: float
) -> tuple[float, float]:
    """F(u) and F'(u) in one pass."""
    em1 = math.expm1(u)
    eu = em1 + 1.0
    f = 0.0
    d1 = 0.0
    for t in range(lo, hi):
        den = 1.0 + p[t] * em1
        f += c[t] * u - w[t] * math.log1p(p[t] * em1)
        d1 += c[t] - w[t] * p[t] * eu / den
    return f, d1


@njit(cache=True)
def _df_d2f(
    c: np.ndarray, w: np.ndarray, p: np.ndarray, lo: int, hi: int, u: float
) -> tuple[float, float]:
    """F'(u) and F''(u) in one pass."""
    eu = math.exp(u)
    d1 = 0.0
    d2 = 0.0
    for t in range(lo, hi):
        den = 1.0 - p[t] + p[t] * eu
        r = p[t] * eu / den
        d1 += c[t] - w[t] * r
        d2 -= w[t] * r * (1.0 - p[t]) / den
    return d1, d2


@njit(cache=True)
def _argmax_u(
    c: np.ndarray, w: np.ndarray, p: np.ndarray, lo: int, hi: int, a: float, b: float
) -> float:
    """Maximiser of the concave F on [a, b] (a <= 0 <= b or a, b the full bracket).

    Safeguarded Newton on F', started from the pooled closed form (exact when all
    expectations are equal, a good start otherwise).
    """
    sc = 0.0
    sw = 0.0
    se = 0.0
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
    x = math.log(sc * (1.0 - pbar) / ((sw - sc) * pbar))
    if hi - lo == 1:
        return min(max(x, a), b)  # one pseudo-cell: the closed form is exact
    checked_a = False
    checked_b = False
    if not (a < x < b):
        x = 0.5 * (a + b)
    for _ in range(MAX_ITER):
        d1, d2 = _df_d2f(c, w, p, lo, hi, x)
        if d1 > 0.0:
            a = x
        else:
            b = x
        nx = x - d1 / d2 if d2 < 0.0 else 0.5 * (a + b)
        if nx >= b:
            if not checked_b:
                checked_b = True
                db, _ = _df_d2f(c, w, p, lo, hi, b)
                if db >= 0.0:
                    return b
            nx = 0.5 * (a + b)
        elif nx <= a:
            if not checked_a:
                checked_a = True
                da, _ = _df_d2f(c, w, p, lo, hi, a)
                if da <= 0.0:
                    return a
            nx = 0.5 * (a + b)
        if abs(nx - x) < TOL_U or b - a < TOL_U:
            return nx
        x = nx
    return x


@njit(cache=True)
def _root_u(
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    lo: int,
    hi: int,
    target: float,
    a: float,
    b: float,
    x: float,
) -> float:
    """Root of F(u) = target in [a, b] (F - target changes sign there, F monotone), Newton from x."""
    ha, _ = _f_df(c, w, p, lo, hi, a)
    increasing = ha - target < 0.0
    if not (a < x < b):
        x = 0.5 * (a + b)
    for _ in range(MAX_ITER):
        f, d1 = _f_df(c, w, p, lo, hi, x)
        h = f - target
        if (h < 0.0) == increasing:
            a = x
        else:
            b = x
        nx = x - h / d1 if d1 != 0.0 else 0.5 * (a + b)
        if not (a < nx < b):
            nx = 0.5 * (a + b)
        if abs(nx - x) < TOL_U or b - a < TOL_U:
            return nx
        x = nx
    return x


@njit(cache=True)
def _constrained_argmax(
    c: np.ndarray, w: np.ndarray, p: np.ndarray, lo: int, hi: int, direction: int
) -> float:
    if direction > 0:
        return _argmax_u(c, w, p, lo, hi, 0.0, U_HI)
    return _argmax_u(c, w, p, lo, hi, U_LO, 0.0)


@njit(cache=True)
def _gauss_score(s: float, n: float, direction: int, sigma2: float) -> tuple[float, float]:
    """Direction-constrained Gaussian score of a set with sum ``s`` over ``n`` rows, and mu-hat."""
    if n <= 0.0 or not s * direction > 0.0:
        return 0.0, 0.0
    return s * s / (2.0 * sigma2 * n), s / n


@njit(cache=True)
def _clip_to_direction(left: float, right: float, direction: int) -> tuple[float, float]:
    """Step 2 of methods.md §1.4.3: keep the part of (left, right) on the scan's side of 0
    (log q or mu). An interval entirely on the other side comes back empty (left >= right)."""
    if direction > 0:
        return max(left, 0.0), right
    return left, min(right, 0.0)


# --------------------------------------------------------------------------------------------
# Exact attribute step (LTSS over q-intervals, methods.md §1.4.3)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _score_selection(
    gc: np.ndarray,
    gw: np.ndarray,
    gp: np.ndarray,
    offsets: np.ndarray,
    chosen: np.ndarray,
    const_p: bool,
    direction: int,
    bc: np.ndarray,
    bw: np.ndarray,
    bp: np.ndarray,
    likelihood: int,
    sigma2: float,
) -> tuple[float, float]:
    """Score the union of the value groups flagged in ``chosen`` (buffers bc/bw/bp reused)."""
    k = 0
    if const_p:
        sc = 0.0
        sw = 0.0
        pv = 0.0
        for v in range(chosen.shape[0]):
            if chosen[v]:
                for t in range(offsets[v], offsets[v + 1]):
                    sc += gc[t]
                    sw += gw[t]
                    pv = gp[t]
        if sw == 0.0:
            return 0.0, 0.0
        if likelihood == GAUSSIAN:
            return _gauss_score(sc, sw, direction, sigma2)
        bc[0] = sc
        bw[0] = sw
        bp[0] = pv
        k = 1
    else:
        for v in range(chosen.shape[0]):
            if chosen[v]:
                for t in range(offsets[v], offsets[v + 1]):
                    bc[k] = gc[t]
                    bw[k] = gw[t]
                    bp[k] = gp[t]
                    k += 1
        if k == 0:
            return 0.0, 0.0
    u = _constrained_argmax(bc, bw, bp, 0, k, direction)
    if u == 0.0:
        return 0.0, 0.0
    return _f(bc, bw, bp, 0, k, u), u


@njit(cache=True)
def ltss_step(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    sel: np.ndarray,
    card: np.ndarray,
    mismatch: np.ndarray,
    j: int,
    penalty: float,
    direction: int,
    out_row: np.ndarray,
) -> float:
    """Bernoulli attribute step (see :func:`_ltss_step_impl`)."""
    return _ltss_step_impl(
        codes, c, w, p, const_p, sel, card, mismatch, j, penalty, direction, out_row, BERNOULLI, 1.0
    )


@njit(cache=True)
def ltss_step_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    sel: np.ndarray,
    card: np.ndarray,
    mismatch: np.ndarray,
    j: int,
    penalty: float,
    direction: int,
    out_row: np.ndarray,
    likelihood: int,
    sigma: float,
) -> float:
    """Attribute step for either likelihood (``sigma`` is used by the Gaussian score only)."""
    return _ltss_step_impl(
        codes,
        c,
        w,
        p,
        const_p or likelihood == GAUSSIAN,
        sel,
        card,
        mismatch,
        j,
        penalty,
        direction,
        out_row,
        likelihood,
        sigma * sigma,
    )


@njit(cache=True)
def _ltss_step_impl(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    sel: np.ndarray,
    card: np.ndarray,
    mismatch: np.ndarray,
    j: int,
    penalty: float,
    direction: int,
    out_row: np.ndarray,
    likelihood: int,
    sigma2: float,
) -> float:
    """Best choice of S_j given the other attributes (exact, methods.md §1.4.3).

    Returns ``F(S') - penalty * |S'_j|`` (no penalty when S'_j is all values) and writes the
    chosen value set of attribute ``j`` into ``out_row`` (a boolean row of length >= card[j]).
    The penalty of the other attributes is the caller's constant.
    """
    n_cells = codes.shape[0]
    k = card[j]
    # relaxed subgroup R: cells matching S on every attribute except j
    counts = np.zeros(k + 1, np.int64)
    for i in range(n_cells):
        v = codes[i, j]
        miss = mismatch[i] - (0 if sel[j, v] else 1)
        if miss == 0:
            counts[v + 1] += 1
    offsets = np.zeros(k + 1, np.int64)
    for v in range(k):
        offsets[v + 1] = offsets[v] + counts[v + 1]
    total = offsets[k]
    gc = np.empty(total)
    gw = np.empty(total)
    gp = np.empty(total)
    fill = offsets[:k].copy()
    for i in range(n_cells):
        v = codes[i, j]
        miss = mismatch[i] - (0 if sel[j, v] else 1)
        if miss == 0:
            t = fill[v]
            gc[t] = c[i]
            gw[t] = w[i]
            gp[t] = p[i]
            fill[v] = t + 1
    if const_p:
        # one pseudo-cell per value
        ac = np.zeros(k)
        aw = np.zeros(k)
        ap = np.zeros(k)
        new_off = np.zeros(k + 1, np.int64)
        for v in range(k):
            for t in range(offsets[v], offsets[v + 1]):
                ac[v] += gc[t]
                aw[v] += gw[t]
                ap[v] = gp[t]
            new_off[v + 1] = new_off[v] + (1 if offsets[v + 1] > offsets[v] else 0)
        m_used = new_off[k]
        gc = np.empty(m_used)
        gw = np.empty(m_used)
        gp = np.empty(m_used)
        for v in range(k):
            if new_off[v + 1] > new_off[v]:
                gc[new_off[v]] = ac[v]
                gw[new_off[v]] = aw[v]
                gp[new_off[v]] = ap[v]
        offsets = new_off
    n_groups = offsets[k]
    bc = np.empty(max(n_groups, 1))
    bw = np.empty(max(n_groups, 1))
    bp = np.empty(max(n_groups, 1))

    # candidate 0: attribute unconstrained (no penalty for j)
    chosen = np.zeros(k, np.bool_)
    for v in range(k):
        chosen[v] = offsets[v + 1] > offsets[v]
    best, _ = _score_selection(
        gc, gw, gp, offsets, chosen, const_p, direction, bc, bw, bp, likelihood, sigma2
    )
    for v in range(k):
        out_row[v] = True
    best_is_all = True

    # per-value intervals {u : F_v(u) > penalty}, clipped to the direction
    umin = np.empty(k)
    umax = np.empty(k)
    keep = np.zeros(k, np.bool_)
    n_keep = 0
    for v in range(k):
        lo = offsets[v]
        hi = offsets[v + 1]
        if hi == lo:
            continue
        if likelihood == GAUSSIAN:
            # one pseudo-cell per value: closed-form roots of F_v(mu) = penalty (§1.4.2)
            sv = gc[lo]
            nv = gw[lo]
            disc = sv * sv - 2.0 * nv * sigma2 * penalty
            if not disc > 0.0:
                continue
            root = math.sqrt(disc)
            left = (sv - root) / nv
            right = (sv + root) / nv
            if penalty == 0.0:  # one root is exactly mu = 0
                if sv > 0.0:
                    left = 0.0
                else:
                    right = 0.0
            left, right = _clip_to_direction(left, right, direction)
            if left < right:
                umin[v] = left
                umax[v] = right
                keep[v] = True
                n_keep += 1
            continue
        uhat = _argmax_u(gc, gw, gp, lo, hi, U_LO, U_HI)
        fmax = _f(gc, gw, gp, lo, hi, uhat)
        if not fmax > penalty:
            continue
        # starting points: roots of the quadratic approximation of F_v at its maximum
        _, curv = _df_d2f(gc, gw, gp, lo, hi, uhat)
        half_width = math.sqrt(2.0 * (fmax - penalty) / -curv) if curv < 0.0 else 1.0
        if penalty == 0.0 and uhat > 0.0:
            left = 0.0  # F_v(0) = 0 exactly
        elif _f(gc, gw, gp, lo, hi, U_LO) - penalty >= 0.0:
            left = U_LO
        else:
            left = _root_u(gc, gw, gp, lo, hi, penalty, U_LO, uhat, uhat - half_width)
        if penalty == 0.0 and uhat < 0.0:
            right = 0.0
        elif _f(gc, gw, gp, lo, hi, U_HI) - penalty >= 0.0:
            right = U_HI
        else:
            right = _root_u(gc, gw, gp, lo, hi, penalty, uhat, U_HI, uhat + half_width)
        left, right = _clip_to_direction(left, right, direction)
        if left < right:
            umin[v] = left
            umax[v] = right
            keep[v] = True
            n_keep += 1
    if n_keep == 0:
        return best

    ends = np.empty(2 * n_keep)
    e = 0
    for v in range(k):
        if keep[v]:
            ends[e] = umin[v]
            ends[e + 1] = umax[v]
            e += 2
    ends.sort()
    for t in range(ends.shape[0] - 1):
        if not ends[t] < ends[t + 1]:
            continue
        mid = 0.5 * (ends[t] + ends[t + 1])
        size = 0
        for v in range(k):
            chosen[v] = keep[v] and umin[v] < mid < umax[v]
            if chosen[v]:
                size += 1
        if size == 0:
            continue
        f_k, _ = _score_selection(
            gc, gw, gp, offsets, chosen, const_p, direction, bc, bw, bp, likelihood, sigma2
        )
        j_k = f_k - penalty * size
        if j_k > best:
            best = j_k
            best_is_all = False
            for v in range(k):
                out_row[v] = chosen[v]
    if best_is_all:
        for v in range(k):
            out_row[v] = True
    return best


# --------------------------------------------------------------------------------------------
# Coordinate ascent with random restarts (methods.md §1.4.4)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _penalty_units(sel: np.ndarray, card: np.ndarray, skip: int) -> int:
    """c(S) without attribute ``skip``: selected values summed over constrained attributes."""
    total = 0
    for a in range(card.shape[0]):
        if a == skip:
            continue
        cnt = 0
        for v in range(card[a]):
            if sel[a, v]:
                cnt += 1
        if cnt < card[a]:
            total += cnt
    return total


@njit(cache=True)
def score_selection(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    sel: np.ndarray,
    direction: int,
) -> tuple[float, float, float, float, float]:
    """F, u = log q, size (sum w), observed and expected sums of the subgroup ``sel``."""
    return _score_selection_impl(codes, c, w, p, sel, direction, BERNOULLI, 1.0)


@njit(cache=True)
def score_selection_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    sel: np.ndarray,
    direction: int,
    likelihood: int,
    sigma: float,
) -> tuple[float, float, float, float, float]:
    """As :func:`score_selection` for either likelihood; Gaussian: (F, mu, n, sum Delta, 0)."""
    return _score_selection_impl(codes, c, w, p, sel, direction, likelihood, sigma * sigma)


@njit(cache=True)
def _score_selection_impl(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    sel: np.ndarray,
    direction: int,
    likelihood: int,
    sigma2: float,
) -> tuple[float, float, float, float, float]:
    n_cells = codes.shape[0]
    m = codes.shape[1]
    bc = np.empty(n_cells)
    bw = np.empty(n_cells)
    bp = np.empty(n_cells)
    k = 0
    size = 0.0
    obs = 0.0
    exp_ = 0.0
    for i in range(n_cells):
        inside = True
        for a in range(m):
            if not sel[a, codes[i, a]]:
                inside = False
                break
        if inside:
            bc[k] = c[i]
            bw[k] = w[i]
            bp[k] = p[i]
            size += w[i]
            obs += c[i]
            exp_ += w[i] * p[i]
            k += 1
    if k == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    if likelihood == GAUSSIAN:
        f, mu = _gauss_score(obs, size, direction, sigma2)
        return f, mu, size, obs, 0.0
    u = _constrained_argmax(bc, bw, bp, 0, k, direction)
    f = 0.0 if u == 0.0 else _f(bc, bw, bp, 0, k, u)
    return f, (0.0 if f == 0.0 else u), size, obs, exp_


@njit(cache=True)
def _compute_mismatch(codes: np.ndarray, sel: np.ndarray, mismatch: np.ndarray) -> int:
    """Fill mismatch[i] = #attributes where cell i is outside S; return the number of cells in S."""
    inside = 0
    for i in range(codes.shape[0]):
        cnt = 0
        for a in range(codes.shape[1]):
            if not sel[a, codes[i, a]]:
                cnt += 1
        mismatch[i] = cnt
        if cnt == 0:
            inside += 1
    return inside


@njit(cache=True)
def coordinate_ascent(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    card: np.ndarray,
    direction: int,
    penalty: float,
    restarts: int,
    seed: np.uint64,
) -> tuple[np.ndarray, float]:
    """Best penalised objective J* over ``restarts`` coordinate-ascent runs and its subgroup."""
    return _coordinate_ascent_impl(
        codes, c, w, p, const_p, card, direction, penalty, restarts, seed, BERNOULLI, 1.0
    )


@njit(cache=True)
def coordinate_ascent_lik(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    card: np.ndarray,
    direction: int,
    penalty: float,
    restarts: int,
    seed: np.uint64,
    likelihood: int,
    sigma: float,
) -> tuple[np.ndarray, float]:
    """As :func:`coordinate_ascent` for either likelihood (``sigma``: Gaussian only)."""
    return _coordinate_ascent_impl(
        codes,
        c,
        w,
        p,
        const_p or likelihood == GAUSSIAN,
        card,
        direction,
        penalty,
        restarts,
        seed,
        likelihood,
        sigma * sigma,
    )


@njit(cache=True)
def _coordinate_ascent_impl(
    codes: np.ndarray,
    c: np.ndarray,
    w: np.ndarray,
    p: np.ndarray,
    const_p: bool,
    card: np.ndarray,
    direction: int,
    penalty: float,
    restarts: int,
    seed: np.uint64,
    likelihood: int,
    sigma2: float,
) -> tuple[np.ndarray, float]:
    m = card.shape[0]
    kmax = 1
    for a in range(m):
        kmax = max(kmax, card[a])
    state = np.empty(1, np.uint64)
    state[0] = seed
    sel = np.zeros((m, kmax), np.bool_)
    best_sel = np.zeros((m, kmax), np.bool_)
    for a in range(m):
        for v in range(card[a]):
            best_sel[a, v] = True
    best_j = -np.inf
    mismatch = np.zeros(codes.shape[0], np.int32)
    row = np.zeros(kmax, np.bool_)
    visited = np.zeros(m, np.bool_)
    for r in range(restarts):
        # initial subgroup: all values first, then random non-empty value sets
        sel[:, :] = False
        if r == 0:
            for a in range(m):
                for v in range(card[a]):
                    sel[a, v] = True
            _compute_mismatch(codes, sel, mismatch)
        else:
            ok = False
            for _try in range(10):
                sel[:, :] = False
                rho = _uniform(state)
                for a in range(m):
                    any_v = False
                    for v in range(card[a]):
                        if _uniform(state) < rho:
                            sel[a, v] = True
                            any_v = True
                    if not any_v:
                        sel[a, _randint(state, card[a])] = True
                if _compute_mismatch(codes, sel, mismatch) > 0:
                    ok = True
                    break
            if not ok:
                sel[:, :] = False
                for a in range(m):
                    for v in range(card[a]):
                        sel[a, v] = True
                _compute_mismatch(codes, sel, mismatch)
        f0, _, _, _, _ = _score_selection_impl(codes, c, w, p, sel, direction, likelihood, sigma2)
        cur = f0 - penalty * _penalty_units(sel, card, -1)
        visited[:] = False
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
            part = _ltss_step_impl(
                codes,
                c,
                w,
                p,
                const_p,
                sel,
                card,
                mismatch,
                j,
                penalty,
                direction,
                row,
                likelihood,
                sigma2,
            )
            cand = part - penalty * _penalty_units(sel, card, j)
            if cand > cur + REL_IMPROVEMENT * max(1.0, abs(cur)):
                for i in range(codes.shape[0]):
                    v = codes[i, j]
                    old_out = 0 if sel[j, v] else 1
                    new_out = 0 if row[v] else 1
                    mismatch[i] += new_out - old_out
                for v in range(card[j]):
                    sel[j, v] = row[v]
                cur = cand
                visited[:] = False
                n_unvisited = m
            visited[j] = True
            n_unvisited -= 1
        if cur > best_j:
            best_j = cur
            best_sel[:, :] = sel
    return best_sel, best_j
