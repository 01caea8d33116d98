"""Audits under distribution shift: RKHS tilts (methods.md §5.8-§5.10; Cherian & Candès Section 5,
Algorithms 5 and 8).

For a non-negative tilt ``h`` of the covariates, ``eps(h) = E[(L - theta) h(X)] / E[h(X)]`` is
the metric gap on the population reweighted by ``h``. The bootstrap process over the non-negative
part of the unit ball of a Gaussian-kernel RKHS is

    h' A h,   A = ((w * L) 1' - w L' - t 1 1') / n^2,   L = L - theta_hat,

with ``t = mean((w - 1) psi)`` (Algorithm 8; ``t = 0`` with a known theta, Algorithm 5). The
all-ones term is the corrected one of §5.8 (the paper prints ``t I_n``). Its supremum over the
unit ball is ``max(lambda_max(K^1/2 sym(A) K^1/2), 0)`` (``h = 0`` is feasible), and because
``2 n^2 sym(A) = U M U'`` with ``U = [w * L, 1, w, L]`` the non-zero eigenvalues are those of the
4x4 matrix ``M (U' K U) / (2 n^2)``: no ``K^1/2`` and no n x n eigen-decomposition.

Kernel access, both streamed over row blocks so that memory stays bounded:

* exact (``approx=None``): ``U' K U`` from ``K @ U`` computed one block of kernel rows at a time
  (O(n^2 B) flops; meant for n up to a few thousand);
* Nystroem: ``K ~ C W^+ C'`` with ``C = k(X, Z)`` for ``rank`` landmark rows ``Z``; then
  ``U' K U = (C' U)' W^+ (C' U)``, O(n rank) per replicate, never O(n^2).

The multinomial resample counts ``w ~ Mult(n; 1/n, ...)`` are drawn block by block (the count of
each block is binomial given the earlier blocks, then uniform within the block): the exact law,
vectorised over replicates, and identical for both kernel routes at the same seed.

Named tilts ``h = sum_j a_j k(., z_j)`` (a >= 0) get ``eps_hat(h) -/+ t* ||h||^2 / mean(h)^2`` with
``||h||^2 = a' K_zz a`` (``eps_hat`` is scale invariant). Numpy only (import-linter).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

BLOCK_ELEMENTS = 4_000_000  # replicates x rows per block of resample counts (bounds memory)
KERNEL_BLOCK_ELEMENTS = 8_000_000  # rows x columns per block of kernel evaluations
PINV_RTOL = 1e-10  # eigenvalues of W below this fraction of the largest are dropped (W^+)

Side = str  # "lower" | "upper" | "both"


# --- kernel --------------------------------------------------------------------------------


def gaussian_kernel(X: np.ndarray, Z: np.ndarray, bandwidth: float) -> np.ndarray:
    """``k(x, z) = exp(-|x - z|^2 / (2 bandwidth^2))`` for every row pair, shape (len X, len Z)."""
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    sq = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * (X @ Z.T)
    np.maximum(sq, 0.0, out=sq)
    sq *= -1.0 / (2.0 * bandwidth * bandwidth)
    return np.exp(sq, out=sq)


def _row_blocks(n: int, width: int, budget: int) -> Iterator[tuple[int, int]]:
    step = max(1, budget // max(width, 1))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def kernel_apply(X: np.ndarray, Z: np.ndarray, coef: np.ndarray, bandwidth: float) -> np.ndarray:
    """``k(X, Z) @ coef`` without holding the whole kernel matrix (``coef``: (len Z,) or (len Z, m))."""
    out = np.empty((len(X), *coef.shape[1:]))
    for a, b in _row_blocks(len(X), len(Z), KERNEL_BLOCK_ELEMENTS):
        out[a:b] = gaussian_kernel(X[a:b], Z, bandwidth) @ coef
    return out


@dataclass(frozen=True)
class Nystroem:
    """``K ~ C W^+ C'`` with ``C = k(X, landmarks)``; ``root @ root' = W^+``."""

    landmarks: np.ndarray  # (r, d)
    root: np.ndarray  # (r, r') W^{+1/2}: eigenvectors / sqrt(eigenvalues), small ones dropped
    index: np.ndarray  # (r,) the landmark rows

    @property
    def rank(self) -> int:
        return int(self.landmarks.shape[0])


def nystroem(X: np.ndarray, rank: int, bandwidth: float, seed: np.random.SeedSequence) -> Nystroem:
    """``rank`` landmark rows drawn without replacement from ``seed`` (all rows if rank >= n)."""
    n = len(X)
    rng = np.random.default_rng(seed)
    index = np.sort(rng.choice(n, size=min(rank, n), replace=False))
    Z = X[index]
    W = gaussian_kernel(Z, Z, bandwidth)
    vals, vecs = np.linalg.eigh((W + W.T) / 2.0)
    keep = vals > PINV_RTOL * max(float(vals[-1]), 1e-300)
    root = vecs[:, keep] / np.sqrt(vals[keep])
    return Nystroem(landmarks=Z, root=root, index=index)


# --- multinomial resample counts -----------------------------------------------------------


def multinomial_blocks(
    rng: np.random.Generator, n: int, B: int, block: int
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Rows ``[a, b)`` and their (B, b - a) counts of ``B`` resamples ``w ~ Mult(n; 1/n, ...)``.

    A block's total is ``Binomial(remaining draws, block rows / remaining rows)``; the draws are
    then spread uniformly over its rows: the multinomial law, exactly.
    """
    remaining = np.full(B, n, dtype=np.int64)
    rows_left = n
    for a in range(0, n, block):
        b = min(n, a + block)
        m = b - a
        total = remaining if b == n else rng.binomial(remaining, m / rows_left)
        remaining = remaining - total
        rows_left -= m
        which = np.repeat(np.arange(B, dtype=np.int64) * m, total)
        which += rng.integers(0, m, size=int(total.sum()))
        counts = np.bincount(which, minlength=B * m).reshape(B, m).astype(np.float64)
        yield a, b, counts


def resample_counts(n: int, B: int, seed: np.random.SeedSequence) -> np.ndarray:
    """All (B, n) counts at once (the same draws :func:`bootstrap_forms` uses)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([c for _, _, c in multinomial_blocks(rng, n, B, _block(n, B))], axis=1)


def _block(n: int, B: int) -> int:
    return max(1, min(n, BLOCK_ELEMENTS // max(B, 1)))


# --- the 4x4 route -------------------------------------------------------------------------


@dataclass
class Forms:
    """Per-replicate ``Q_b = U_b' K U_b`` (B, 4, 4), column order ``[w*L, 1, w, L]``."""

    Q: np.ndarray
    sum_wL: np.ndarray  # (B,) sum_i w_i L_i (gives t when theta is estimated)
    # Nystroem: C' U_b for the two replicate columns (B, r, 2) and C'1, C'L (r, 2)
    coef: np.ndarray | None = None
    fixed: np.ndarray | None = None
    # exact: the counts (B, n) (times the sample weights)
    weights: np.ndarray | None = None
    # the sample weights of the rows (mean 1; None: 1 each), the columns "1" and "L" times them
    base: np.ndarray | None = None


def bootstrap_forms(
    X: np.ndarray,
    L: np.ndarray,
    bandwidth: float,
    B: int,
    seed: np.random.SeedSequence,
    approx: Nystroem | None = None,
    weight: np.ndarray | None = None,
) -> Forms:
    """``Q_b`` for ``B`` multinomial resamples of the rows; ``L`` is already centred (L - theta).

    ``weight``: sample weights of the rows (mean 1): a resampled row carries its weight (the
    resample's counts are multiplied by it) and the sample means are weighted, i.e. the columns
    become ``[w s L, s, w s, s L]``."""
    n = len(L)
    rng = np.random.default_rng(seed)
    block = _block(n, B)
    sum_wL = np.zeros(B)
    if approx is None:
        W = np.empty((B, n))
        for a, b, counts in multinomial_blocks(rng, n, B, block):
            W[:, a:b] = counts if weight is None else counts * weight[a:b]
        sum_wL = W @ L
        Q = exact_forms(X, L, bandwidth, W, weight)
        return Forms(Q=Q, sum_wL=sum_wL, weights=W, base=weight)
    r = approx.rank
    coef = np.zeros((B, r, 2))
    fixed = np.zeros((r, 2))
    for a, b, counts in multinomial_blocks(rng, n, B, block):
        C = gaussian_kernel(X[a:b], approx.landmarks, bandwidth)  # (m, r)
        Lb = L[a:b]
        if weight is None:
            coef[:, :, 0] += (counts * Lb) @ C
            coef[:, :, 1] += counts @ C
            fixed[:, 0] += C.sum(0)
            fixed[:, 1] += Lb @ C
            sum_wL += counts @ Lb
            continue
        sb = weight[a:b]
        counts = counts * sb
        coef[:, :, 0] += (counts * Lb) @ C
        coef[:, :, 1] += counts @ C
        fixed[:, 0] += sb @ C
        fixed[:, 1] += (sb * Lb) @ C
        sum_wL += counts @ Lb
    return Forms(
        Q=nystroem_forms(approx.root, coef, fixed),
        sum_wL=sum_wL,
        coef=coef,
        fixed=fixed,
        base=weight,
    )


def _stack(coef: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """(B, r, 4) ``C' U_b`` in column order ``[w*L, 1, w, L]``."""
    B = coef.shape[0]
    G = np.empty((B, coef.shape[1], 4))
    G[:, :, 0] = coef[:, :, 0]
    G[:, :, 1] = fixed[None, :, 0]
    G[:, :, 2] = coef[:, :, 1]
    G[:, :, 3] = fixed[None, :, 1]
    return G


def nystroem_forms(root: np.ndarray, coef: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """``(C'U)' W^+ (C'U)`` per replicate."""
    P = np.einsum("rk,brq->bkq", root, _stack(coef, fixed))
    return np.einsum("bkp,bkq->bpq", P, P)


def exact_forms(
    X: np.ndarray, L: np.ndarray, bandwidth: float, W: np.ndarray, base: np.ndarray | None = None
) -> np.ndarray:
    """``U_b' K U_b`` with the exact kernel, for the (B, n) counts ``W``; K in row blocks.
    ``base``: the rows' sample weights (the columns ``1`` and ``L`` become ``s`` and ``s L``)."""
    B, n = W.shape
    one = np.ones(n) if base is None else base
    cols = np.empty((n, 2 * B + 2))
    cols[:, :B] = (W * L).T
    cols[:, B : 2 * B] = W.T
    cols[:, 2 * B] = one
    cols[:, 2 * B + 1] = L if base is None else base * L
    KU = kernel_apply(X, X, cols, bandwidth)
    U = [cols[:, :B].T, one[None, :], W, cols[:, 2 * B + 1][None, :]]
    KUs = [KU[:, :B].T, KU[:, 2 * B][None, :], KU[:, B : 2 * B].T, KU[:, 2 * B + 1][None, :]]
    Q = np.empty((B, 4, 4))
    for p in range(4):
        for q in range(4):
            Q[:, p, q] = (U[p] * KUs[q]).sum(axis=1)
    return Q


def middle(t: np.ndarray) -> np.ndarray:
    """The (B, 4, 4) matrices ``M``: M12 = M21 = 1, M34 = M43 = -1, M22 = -2t."""
    M = np.zeros((len(t), 4, 4))
    M[:, 0, 1] = M[:, 1, 0] = 1.0
    M[:, 2, 3] = M[:, 3, 2] = -1.0
    M[:, 1, 1] = -2.0 * t
    return M


def small_products(Q: np.ndarray, t: np.ndarray, n: int) -> np.ndarray:
    """``M (U'KU) / (2 n^2)`` per replicate; its eigenvalues are the non-zero eigenvalues of
    ``K^1/2 sym(A) K^1/2``."""
    Qs = (Q + np.swapaxes(Q, 1, 2)) / 2.0
    return np.asarray(middle(t) @ Qs / (2.0 * n * n))


def extreme_eigenvalues(Q: np.ndarray, t: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(lambda_min, lambda_max) per replicate: the real parts of the 4x4 eigenvalues (the
    product is similar to a symmetric matrix, so imaginary parts are rounding)."""
    vals = np.linalg.eigvals(small_products(Q, t, n)).real
    return vals.min(axis=1), vals.max(axis=1)


def side_statistic(lam_min: np.ndarray, lam_max: np.ndarray, side: Side) -> np.ndarray:
    """``t^(b)``: max(lambda_max, 0) (lower), max(-lambda_min, 0) (upper), the larger (both)."""
    lower = np.maximum(lam_max, 0.0)
    upper = np.maximum(-lam_min, 0.0)
    if side == "lower":
        return lower
    if side == "upper":
        return upper
    if side == "both":
        return np.maximum(lower, upper)
    raise ValueError(f"unknown side {side!r}")


def quantile(values: np.ndarray, level: float) -> float:
    """``inf{x: level <= F(x)}``: the ceil(level * B)-th order statistic (methods.md §5.3)."""
    s = np.sort(values)
    k = min(len(s), max(1, math.ceil(level * len(s) - 1e-12)))
    return float(s[k - 1])


# --- the procedure -------------------------------------------------------------------------


@dataclass(frozen=True)
class WorstCase:
    """The top eigen-direction of the median replicate: ``h(x) = sum_j coef_j k(x, centers_j)``."""

    centers: np.ndarray  # (m, d) standardized feature points
    coef: np.ndarray  # (m,)
    replicate: int
    eigenvalue: float


@dataclass(frozen=True)
class ShiftBootstrap:
    n: int
    theta: float
    estimated: bool  # theta estimated (Algorithm 8) or known (Algorithm 5)
    L: np.ndarray  # (n,) L - theta_hat
    t: np.ndarray  # (B,) t^(b) for the side asked
    t_star: float
    lam_min: np.ndarray
    lam_max: np.ndarray
    degenerate: bool
    worst: WorstCase | None


def shift_bootstrap(
    X: np.ndarray,
    L: np.ndarray,
    *,
    bandwidth: float,
    B: int,
    alpha: float,
    side: Side,
    seed: np.random.SeedSequence,
    theta: float | None = None,
    approx: Nystroem | None = None,
    weight: np.ndarray | None = None,
) -> ShiftBootstrap:
    """t* of Algorithm 8 (``theta=None``: theta = mean L, psi = L - mean L) or 5 (known theta).

    ``L`` constant (Var(L) = 0): every process is 0; t* = 0 and ``degenerate`` (§5.9).
    ``weight``: sample weights of the rows, mean 1 (every mean of the process weighted, and
    each resampled row carries its weight); None: 1 each.
    """
    n = len(L)
    L = np.asarray(L, dtype=np.float64)
    estimated = theta is None
    # np.average without weights is the plain mean and variance, to the bit
    mean = float(np.average(L, weights=weight))
    theta_hat = mean if theta is None else float(theta)
    Lc = L - theta_hat
    var = float(np.average((L - mean) ** 2, weights=weight))
    if var <= 0.0:
        zeros = np.zeros(B)
        return ShiftBootstrap(n, theta_hat, estimated, Lc, zeros, 0.0, zeros, zeros, True, None)
    forms = bootstrap_forms(X, Lc, bandwidth, B, seed, approx, weight)
    # t = mean((w - 1) psi) with psi = L - theta_hat (sum psi = 0): sum(w L) / n
    t_b = forms.sum_wL / n if estimated else np.zeros(B)
    lam_min, lam_max = extreme_eigenvalues(forms.Q, t_b, n)
    stat = side_statistic(lam_min, lam_max, side)
    t_star = quantile(stat, 1.0 - alpha)
    worst = _worst_case(X, Lc, forms, t_b, stat, lam_min, lam_max, side, approx)
    return ShiftBootstrap(n, theta_hat, estimated, Lc, stat, t_star, lam_min, lam_max, False, worst)


def _worst_case(
    X: np.ndarray,
    L: np.ndarray,
    forms: Forms,
    t_b: np.ndarray,
    stat: np.ndarray,
    lam_min: np.ndarray,
    lam_max: np.ndarray,
    side: Side,
    approx: Nystroem | None,
) -> WorstCase:
    """The extreme eigen-direction of the replicate whose t^(b) is closest to the median.

    With ``c`` an eigenvector of the 4x4 product, ``beta = U_b c`` and ``h = K beta`` is the
    corresponding direction of ``K^1/2 sym(A) K^1/2`` as a function of x.
    """
    n = len(L)
    b = int(np.argmin(np.abs(stat - np.median(stat))))
    P = small_products(forms.Q[b : b + 1], t_b[b : b + 1], n)[0]
    vals, vecs = np.linalg.eig(P)
    upper = side == "upper" or (side == "both" and -lam_min[b] > lam_max[b])
    k = int(np.argmin(vals.real)) if upper else int(np.argmax(vals.real))
    c = vecs[:, k].real
    if approx is None:
        assert forms.weights is not None
        w = forms.weights[b]
        if forms.base is None:
            beta = c[0] * w * L + c[1] + c[2] * w + c[3] * L
        else:  # sample weights: the columns "1" and "L" are s and s L
            beta = c[0] * w * L + c[1] * forms.base + c[2] * w + c[3] * forms.base * L
        centers, coef = X, beta
    else:
        assert forms.coef is not None and forms.fixed is not None
        G = _stack(forms.coef[b : b + 1], forms.fixed)[0]  # (r, 4) = C' U_b
        coef = approx.root @ (approx.root.T @ (G @ c))
        centers = approx.landmarks
    return WorstCase(centers=centers, coef=coef, replicate=b, eigenvalue=float(vals[k].real))


# --- named tilts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TiltBound:
    estimate: float  # eps_hat(h)
    lower: float
    upper: float
    norm2: float  # ||h||^2 = a' K_zz a
    mean_h: float  # E_n h
    effective_sample_size: float  # (sum h)^2 / sum h^2


def tilt_norm2(Z: np.ndarray, a: np.ndarray, bandwidth: float) -> float:
    """``||h||^2 = a' K_zz a`` for ``h = sum_j a_j k(., z_j)``."""
    return float(a @ kernel_apply(Z, Z, a, bandwidth))


def tilt_bound(
    h: np.ndarray, L: np.ndarray, norm2: float, t_star_lower: float, t_star_upper: float
) -> TiltBound:
    """``eps_hat(h) -/+ t* ||h||^2 / mean(h)^2`` (``L`` centred: L - theta_hat)."""
    mean_h = float(h.mean())
    est = float((L * h).sum() / h.sum()) if mean_h > 0 else math.nan
    width = norm2 / mean_h**2 if mean_h > 0 else math.inf
    ess = float(h.sum() ** 2 / (h * h).sum()) if mean_h > 0 else 0.0
    return TiltBound(
        estimate=est,
        lower=est - t_star_lower * width,
        upper=est + t_star_upper * width,
        norm2=norm2,
        mean_h=mean_h,
        effective_sample_size=ess,
    )


PROJECTION_ITERATIONS = 60
PROJECTION_TOLERANCE = 1e-6
DENSE_PROJECTION_CENTERS = 5000


def nonnegative_projection(
    Z: np.ndarray, beta: np.ndarray, bandwidth: float
) -> tuple[np.ndarray, int]:
    """The non-negative coefficients ``a`` closest to ``beta`` in the RKHS norm:
    ``argmin_{a >= 0} (a - beta)' K_zz (a - beta)``, so that ``sum_j a_j k(., z_j)`` is the valid
    tilt (a non-negative reweighting) nearest to the direction ``sum_j beta_j k(., z_j)``.

    Accelerated projected gradient (FISTA) from the clipped coefficients, step ``1 / lambda_max``
    (power iteration), with ``K_zz`` applied in blocks; returns (a, iterations).
    """
    beta = np.asarray(beta, dtype=np.float64)
    m = len(beta)
    if m <= DENSE_PROJECTION_CENTERS:  # one kernel matrix (float32: <= 100 MB), fast products
        dense = np.empty((m, m), dtype=np.float32)
        for a0, b0 in _row_blocks(m, m, KERNEL_BLOCK_ELEMENTS):
            dense[a0:b0] = gaussian_kernel(Z[a0:b0], Z, bandwidth)

        def K(v: np.ndarray) -> np.ndarray:
            return np.asarray(dense @ v.astype(np.float32), dtype=np.float64)

    else:

        def K(v: np.ndarray) -> np.ndarray:
            return kernel_apply(Z, Z, v, bandwidth)

    v = np.ones_like(beta) / math.sqrt(len(beta))
    lam = 1.0
    for _ in range(20):  # lambda_max of K_zz (K is positive semi-definite)
        w = K(v)
        lam = float(np.linalg.norm(w))
        if lam <= 0:
            return np.maximum(beta, 0.0), 0
        v = w / lam
    step = 1.0 / (lam * 1.01)
    a = np.maximum(beta, 0.0)
    y, t = a.copy(), 1.0
    it = 0
    for it in range(1, PROJECTION_ITERATIONS + 1):  # noqa: B007 - reported
        a_next = np.maximum(y - step * K(y - beta), 0.0)
        t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
        y = a_next + ((t - 1.0) / t_next) * (a_next - a)
        change = float(np.linalg.norm(a_next - a))
        a, t = a_next, t_next
        if change <= PROJECTION_TOLERANCE * max(float(np.linalg.norm(a)), 1e-300):
            break
    return a, it


def weighted_quantiles(x: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Quantiles of ``x`` under non-negative ``weights`` (inverse of the weighted CDF)."""
    order = np.argsort(x, kind="stable")
    cw = np.cumsum(weights[order])
    if cw[-1] <= 0:
        return np.full(len(levels), np.nan)
    idx = np.searchsorted(cw, levels * cw[-1], side="left")
    return np.asarray(x[order][np.minimum(idx, len(x) - 1)])
