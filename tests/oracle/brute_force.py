"""Independent brute-force oracle for the MDSS Bernoulli scans (methods.md §1.2, §1.4.1, §4.2).

Pure numpy; deliberately does **not** import ``fairscan`` so that it can serve as a reference
for the engine. It enumerates *every* rectangular subgroup

    S = (S_1, ..., S_m),  0 != S_j ⊆ V_j,

(``prod_j (2^|V_j| - 1)`` of them) and returns the maximiser of the penalised objective

    J(S) = F(S) - penalty * c(S),   c(S) = sum_{j: S_j != V_j} |S_j|,

where ``F`` is the direction-constrained Bernoulli log-likelihood ratio

    F(S) = max_{q in Q_d} sum_{i in D_S} [ I_i log q - log(1 - E_i + q E_i) ],
    Q_pos = [1, 1e6],  Q_neg = [1e-6, 1]

(the bracket ``[1e-6, 1e6]`` of methods.md §1.4.1 is part of the definition of F).

How it stays fast: rows are first aggregated into the cells of the full cross-product of the
attributes (and, for non-constant expectations, into distinct expectation values), then the
per-subgroup sums are obtained with one tensor contraction per attribute against the 0/1
membership matrix of that attribute's non-empty value subsets.  For COMPAS FPR-Scan (arities
2, 6, 2, 2, 3 -> 3*63*3*3*7 = 11907 subgroups) this takes milliseconds.

Score evaluation:

* constant expectation ``p``: closed form ``F = n KL(c/n || p)`` when ``c/n`` lies on the
  constrained side of ``p`` and the unconstrained MLE ``q* = c(1-p)/((n-c)p)`` lies inside the
  bracket; otherwise the value at the bracket end (e.g. ``c == n`` in the positive direction
  gives the value at ``q = 1e6``); 0 when the deviation is in the other direction.
* general expectations: vectorised bisection on the (monotone) derivative in ``u = log q`` over
  ``[log 1e-6, log 1e6]`` until the bracket is narrower than ``1e-13`` (about 48 halvings), then the
  root is clipped to the direction's half of the bracket (the objective is concave in ``u``).

Expectations are clipped to ``[1e-6, 1 - 1e-6]`` (methods.md §1.4.1 [REC]); a warning is issued
when clipping changes a value.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Q_LO = 1e-6
Q_HI = 1e6
EPS = 1e-6
U_TOL = 1e-13  # bisection stops when the bracket in log q is narrower than this

__all__ = [
    "Q_HI",
    "Q_LO",
    "BruteForceResult",
    "brute_force_scan",
    "score_constant",
    "score_records",
]


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x * log(y) with the convention 0 * log(0) = 0."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    out = np.zeros(np.broadcast(x, y).shape)
    pos = np.broadcast_to(x != 0, out.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = x * np.log(y)
    out[pos] = np.broadcast_to(val, out.shape)[pos]
    return out


def _value_at_u_const(n, c, p, u):
    """sum_i f_i(q) with q = e^u for constant expectation p (vectorised)."""
    return c * u - n * np.log1p(p * np.expm1(u))


def score_constant(n, c, p: float, direction: str):
    """Vectorised F for constant expectation ``p``; returns ``(F, u_hat)`` with ``u_hat = log q``.

    ``n`` = records in the subgroup, ``c`` = sum of observed indicators. Closed form
    ``n KL(c/n || p)`` inside the bracket, bracket-end value outside it, 0 on the wrong side.
    """
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    shape = np.broadcast(n, c).shape
    n = np.broadcast_to(n, shape)
    c = np.broadcast_to(c, shape)
    F = np.zeros(shape)
    u = np.zeros(shape)
    nonempty = n > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        if direction == "positive":
            side = nonempty & (c > n * p)
            # log q* = log(c (1-p)) - log((n-c) p); +inf when c == n
            logq = np.where(side & (c < n), np.log(c * (1 - p)) - np.log((n - c) * p), np.inf)
            inside = side & (logq <= math.log(Q_HI))
            outside = side & ~inside
            u_end = math.log(Q_HI)
        elif direction == "negative":
            side = nonempty & (c < n * p)
            logq = np.where(side & (c > 0), np.log(c * (1 - p)) - np.log((n - c) * p), -np.inf)
            inside = side & (logq >= math.log(Q_LO))
            outside = side & ~inside
            u_end = math.log(Q_LO)
        else:
            raise ValueError(f"direction must be 'positive' or 'negative', got {direction!r}")
        kl = _xlogy(c, c / (n * p)) + _xlogy(n - c, (n - c) / (n * (1 - p)))
    F[inside] = kl[inside]
    u[inside] = logq[inside]
    F[outside] = _value_at_u_const(n[outside], c[outside], p, u_end)
    u[outside] = u_end
    return F, u


def _score_grouped(N: np.ndarray, C: np.ndarray, pvals: np.ndarray, direction: str):
    """Vectorised F for general expectations.

    ``N``: (G, K) record counts per subgroup and distinct expectation value ``pvals[k]``;
    ``C``: (G,) observed sums. Returns ``(F, u_hat)``.
    """
    G = N.shape[0]
    logit = np.log(pvals) - np.log1p(-pvals)  # (K,)
    lo = np.full(G, math.log(Q_LO))
    hi = np.full(G, math.log(Q_HI))
    # g(u) = sum_k N_k * expit(u + logit_k) - C is strictly increasing in u; the objective's
    # derivative in u is -g(u).  Root of g -> unconstrained maximiser; bracket ends otherwise.
    while np.max(hi - lo) > U_TOL:
        mid = 0.5 * (lo + hi)
        g = (N / (1.0 + np.exp(-(mid[:, None] + logit[None, :])))).sum(axis=1) - C
        up = g < 0  # objective still increasing -> maximiser above mid
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    u = 0.5 * (lo + hi)
    if direction == "positive":
        u = np.maximum(u, 0.0)
    elif direction == "negative":
        u = np.minimum(u, 0.0)
    else:
        raise ValueError(f"direction must be 'positive' or 'negative', got {direction!r}")
    F = C * u - (N * np.log1p(pvals[None, :] * np.expm1(u)[:, None])).sum(axis=1)
    F = np.where(N.sum(axis=1) > 0, F, 0.0)
    # u == 0 gives exactly 0; guard tiny negative round-off
    F = np.maximum(F, 0.0)
    return F, u


def score_records(
    observed: np.ndarray, expected: np.ndarray, direction: str
) -> tuple[float, float]:
    """Direct per-record F of one record set (no aggregation): independent re-scoring helper.

    Bisection on log q to 1e-13 over the bracket, clipped to the direction side. Returns
    ``(F, q_hat)``.
    """
    obs = np.asarray(observed, dtype=float)
    e = np.clip(np.asarray(expected, dtype=float), EPS, 1 - EPS)
    if obs.size == 0:
        return 0.0, 1.0
    c = obs.sum()
    lo, hi = math.log(Q_LO), math.log(Q_HI)
    while hi - lo > U_TOL:
        mid = 0.5 * (lo + hi)
        q = math.exp(mid)
        g = float((q * e / (1 - e + q * e)).sum()) - c
        if g < 0:
            lo = mid
        else:
            hi = mid
    u = 0.5 * (lo + hi)
    u = max(u, 0.0) if direction == "positive" else min(u, 0.0)
    F = c * u - float(np.log1p(e * math.expm1(u)).sum())
    return max(F, 0.0), math.exp(u)


# --------------------------------------------------------------------------------------------
# Enumeration
# --------------------------------------------------------------------------------------------


def _subset_matrix(k: int) -> np.ndarray:
    """(2^k - 1, k) 0/1 matrix; row r is the bit pattern of r+1 (value v included iff bit v)."""
    r = np.arange(1, 2**k, dtype=np.int64)
    return ((r[:, None] >> np.arange(k)[None, :]) & 1).astype(float)


def _contract(T: np.ndarray, mats: Sequence[np.ndarray]) -> np.ndarray:
    """Replace each leading axis j of T (size k_j) by the subset axis (size 2^k_j - 1)."""
    for j, M in enumerate(mats):
        T = np.moveaxis(np.tensordot(M, T, axes=([1], [j])), 0, j)
    return T


@dataclass
class BruteForceResult:
    """Best rectangular subgroup and its scores.

    ``subgroup`` maps attribute name -> tuple of selected value labels for *constrained*
    attributes only (unconstrained attributes are omitted, as in methods.md §1.2).
    """

    subgroup: dict[str, tuple]
    J: float
    F: float
    complexity: int
    n: int
    observed_sum: float
    expected_sum: float
    q_hat: float
    n_subgroups: int
    n_ties: int
    ties: list[dict[str, tuple]] = field(default_factory=list)
    all_J: np.ndarray | None = field(default=None, repr=False)

    def describe(self) -> str:
        sg = "{" + ", ".join(f"{k}: [{', '.join(map(str, v))}]" for k, v in self.subgroup.items())
        sg += "}"
        return (
            f"{sg if self.subgroup else '{} (all records)'}  J={self.J:.6f}  F={self.F:.6f}  "
            f"c(S)={self.complexity}  n={self.n}  observed={self.observed_sum:g}  "
            f"expected={self.expected_sum:.6f}  q={self.q_hat:.6f}  ties={self.n_ties}"
        )


def brute_force_scan(
    codes: np.ndarray,
    observed: np.ndarray,
    expected: np.ndarray | float,
    direction: str,
    penalty: float,
    *,
    names: Sequence[str] | None = None,
    labels: Sequence[Sequence] | None = None,
    method: str = "auto",
    tie_tol: float = 1e-9,
    max_ties: int = 20,
    max_subgroups: int = 20_000_000,
    keep_all: bool = False,
) -> BruteForceResult:
    """Exhaustively maximise ``J(S) = F(S) - penalty * c(S)`` over all rectangular subgroups.

    Parameters
    ----------
    codes : (n, m) integer array
        Attribute codes. ``V_j`` is the set of codes of column ``j`` present in ``codes``
        (methods.md §1.2 [REC]); codes need not be contiguous.
    observed : (n,) 0/1 array
    expected : (n,) array in [0, 1] or a scalar (constant expectation)
    direction : "positive" (observed above expectation, q >= 1) or "negative" (q <= 1)
    penalty : float >= 0
    names : attribute names (default ``x0, x1, ...``)
    labels : per attribute, the label of each code (``labels[j][code]``); default the code
    method : "auto" (closed form iff the expectation is constant), "closed" or "numeric"
    tie_tol : subgroups with ``J >= J_max - tie_tol * max(1, |J_max|)`` count as ties; the
        reported best among ties is the one with the smallest c(S), then the first in
        enumeration order (attribute-wise ascending bit pattern)
    keep_all : also return the full J tensor (shape ``(2^|V_1|-1, ..., 2^|V_m|-1)``)
    """
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError("codes must be a 2-D (n, m) array")
    n_rows, m = codes.shape
    obs = np.asarray(observed, dtype=float)
    if obs.shape != (n_rows,):
        raise ValueError("observed must have one entry per row")
    if not np.isin(obs, (0.0, 1.0)).all():
        raise ValueError("observed must be 0/1")
    if penalty < 0:
        raise ValueError("penalty must be >= 0")
    if direction not in ("positive", "negative"):
        raise ValueError(f"direction must be 'positive' or 'negative', got {direction!r}")
    names = list(names) if names is not None else [f"x{j}" for j in range(m)]

    exp = np.broadcast_to(np.asarray(expected, dtype=float), (n_rows,))
    clipped = np.clip(exp, EPS, 1 - EPS)
    if np.any(clipped != exp):
        warnings.warn(
            f"{int(np.sum(clipped != exp))} expectation(s) clipped to [{EPS}, {1 - EPS}]",
            stacklevel=2,
        )
    exp = clipped
    constant = bool(np.all(exp == exp[0])) if n_rows else True
    if method == "auto":
        method = "closed" if constant else "numeric"
    if method == "closed" and not constant:
        raise ValueError("method='closed' requires a constant expectation")

    # V_j = values present; local codes 0..k_j-1
    present, local = [], np.empty_like(codes, dtype=np.int64)
    for j in range(m):
        vals, inv = np.unique(codes[:, j], return_inverse=True)
        present.append(vals)
        local[:, j] = inv.ravel()
    arity = [len(v) for v in present]
    n_sub = math.prod(2**k - 1 for k in arity)
    if n_sub > max_subgroups:
        raise ValueError(f"{n_sub} subgroups exceed max_subgroups={max_subgroups}")

    mats = [_subset_matrix(k) for k in arity]
    cell = np.ravel_multi_index(local.T, arity) if m else np.zeros(n_rows, dtype=np.int64)
    n_cells = math.prod(arity)

    Ccell = np.bincount(cell, weights=obs, minlength=n_cells).reshape(arity)
    Ecell = np.bincount(cell, weights=exp, minlength=n_cells).reshape(arity)
    Ncell = np.bincount(cell, minlength=n_cells).astype(float).reshape(arity)
    C = _contract(Ccell, mats).ravel()
    E = _contract(Ecell, mats).ravel()
    N = _contract(Ncell, mats).ravel()

    if method == "closed":
        F, u = score_constant(N, C, float(exp[0]), direction)
    elif method == "numeric":
        pvals, pinv = np.unique(exp, return_inverse=True)
        K = len(pvals)
        if n_sub * K > 200_000_000:
            raise ValueError(
                f"{n_sub} subgroups x {K} distinct expectations is too large for the oracle"
            )
        NK = np.zeros((n_cells, K))
        np.add.at(NK, (cell, pinv.ravel()), 1.0)
        NK = _contract(NK.reshape([*arity, K]), mats).reshape(n_sub, K)
        F, u = _score_grouped(NK, C, pvals, direction)
    else:
        raise ValueError(f"unknown method {method!r}")

    # complexity c(S): |S_j| unless S_j is the full value set (last row of each subset matrix)
    comp = np.zeros([2**k - 1 for k in arity])
    for j, M in enumerate(mats):
        size = M.sum(axis=1)
        size[-1] = 0.0  # all values selected -> unconstrained, costs nothing
        shape = [1] * m
        shape[j] = len(size)
        comp = comp + size.reshape(shape)
    comp = comp.ravel()

    J = F - penalty * comp
    J_max = float(J.max())
    tol = tie_tol * max(1.0, abs(J_max))
    tie_idx = np.flatnonzero(J_max - tol <= J)
    # canonical choice among ties: smallest complexity, then enumeration order
    order = np.lexsort((tie_idx, comp[tie_idx]))
    tie_idx = tie_idx[order]
    best = int(tie_idx[0])

    def decode(flat: int) -> dict[str, tuple]:
        idx = np.unravel_index(flat, [2**k - 1 for k in arity])
        out = {}
        for j, r in enumerate(idx):
            if r == 2 ** arity[j] - 2:  # full set
                continue
            sel = np.flatnonzero(mats[j][r]).tolist()
            vals = present[j][sel]
            if labels is not None:
                out[names[j]] = tuple(labels[j][int(v)] for v in vals)
            else:
                out[names[j]] = tuple(v.item() for v in vals)
        return out

    return BruteForceResult(
        subgroup=decode(best),
        J=float(J[best]),
        F=float(F[best]),
        complexity=int(comp[best]),
        n=int(N[best]),
        observed_sum=float(C[best]),
        expected_sum=float(E[best]),
        q_hat=float(math.exp(u[best])),
        n_subgroups=int(n_sub),
        n_ties=len(tie_idx),
        ties=[decode(int(t)) for t in tie_idx[:max_ties]],
        all_J=J.reshape([2**k - 1 for k in arity]) if keep_all else None,
    )


def naive_scan(codes, observed, expected, direction, penalty):
    """Slow reference: itertools over subgroups, per-record masks, scalar bisection.

    Only for tiny inputs (used by the oracle's own tests). Returns ``(J_max, best dict)``.
    """
    codes = np.asarray(codes)
    obs = np.asarray(observed, dtype=float)
    exp = np.broadcast_to(np.asarray(expected, dtype=float), obs.shape)
    m = codes.shape[1]
    values = [np.unique(codes[:, j]).tolist() for j in range(m)]
    per_attr = [
        [frozenset(s) for r in range(1, len(v) + 1) for s in itertools.combinations(v, r)]
        for v in values
    ]
    best_J, best = -math.inf, None
    for combo in itertools.product(*per_attr):
        mask = np.ones(len(obs), dtype=bool)
        cost = 0
        for j, s in enumerate(combo):
            if len(s) < len(values[j]):
                cost += len(s)
                mask &= np.isin(codes[:, j], list(s))
        F, _ = score_records(obs[mask], exp[mask], direction)
        J = F - penalty * cost
        if best_J < J:
            best_J, best = J, {j: s for j, s in enumerate(combo) if len(s) < len(values[j])}
    return best_J, best
