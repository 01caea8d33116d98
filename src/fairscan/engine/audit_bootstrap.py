"""Simultaneous inference over a fixed group collection (methods.md §5.1-§5.6, §5.9).

Cherian & Candès' audit: for every group ``G`` of a finite collection, the metric gap
``eps(G) = E[L | G] - theta`` gets a lower/upper bound or interval valid simultaneously over all
groups (FWER), a Boolean certificate, or an FDR-controlled flag.

Rationale of the rescaled process (Algorithm 2, eq. 9), kept here as §5.3 asks: the bootstrap
process is multiplied by ``P(G) P_n(G)`` ("product form"), which stabilises small groups and makes
a group absent from a resample contribute 0 instead of 0/0. Theorem 4 needs a collection of finite
VC dimension, bounded ``L`` and ``L - theta`` non-constant on some non-empty group. Unscaled
(Algorithm 1, ``s = 1``), the bound behaves like ``eps_hat - C / sqrt(|G| P_n(G)^3)``: far too wide
for small groups, which is why the rescaled version (``s(G) = max(P_n(G), p*)^{3/2} * sd``, a
Wald-like width for groups above ``p*``) is the default. The Boolean process of Algorithm 7 has no
extra ``P_n(G)`` factor (its sd is of order ``P_n(G)^{1/2} / sqrt(n)``), so it is studentised with
exponent 1/2 (methods.md §5.5 erratum; fairaudit's ``student='prob_bool'``): with 3/2 the smallest
groups dominate the maximum and nothing can be certified.

Data layout (vectorised, no per-group Python loop): rows are mapped to *atoms*, the distinct
group-membership patterns, with an ``atoms x groups`` sparse 0/1 matrix. A bootstrap resample is a
multinomial count vector over rows; its per-atom totals of ``w`` and ``w L`` times the membership
matrix give every group's ``sum w`` and ``sum w L`` in one sparse product. When ``L`` takes few
values, rows with the same (atom, L, reference flag) are exchangeable and the per-row multinomial
is drawn directly on those cells (the identical law, ``Mult(n; size_e / n)``); otherwise ``n``
uniform row indices are drawn per resample (again ``Mult(n; 1/n, ...)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr, ndtri

from fairscan.engine.multiple_testing import adjust_p_values
from fairscan.engine.seeds import replicate_rng

MAD_CONSTANT = float(ndtri(0.75))  # Phi^{-1}(3/4) = 0.6744897...: erratum A1 (not Phi(3/4))
ROW_BLOCK_ELEMENTS = 10_000_000  # resamples per block x rows (row path); bounds memory
COMPRESS_RATIO = 4  # draw on (atom, L, ref) cells when there are at most n / 4 of them


@dataclass(frozen=True)
class AuditProblem:
    """The per-row data of one audit.

    ``L`` is the per-record metric (ignored outside ``population``), ``reference`` the rows the
    target is estimated on (``None`` with a known ``theta``), ``atom`` each row's membership
    pattern index (rows outside the population or in no group carry a pattern with no group)
    and ``atom_groups`` the ``atoms x groups`` 0/1 matrix.
    """

    L: np.ndarray
    population: np.ndarray
    atom: np.ndarray
    atom_groups: sp.csr_matrix
    reference: np.ndarray | None = None
    theta: float | None = None
    # sample weights (columns.weight, fractional): every sum is weighted, n is their total, and
    # a bootstrap resample draws rows that carry their weights; None: one per row
    weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        if (self.reference is None) == (self.theta is None):
            raise ValueError("give exactly one of reference (estimated target) and theta (known)")

    @property
    def n(self) -> int:
        return int(self.L.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.atom_groups.shape[1])

    @property
    def row_weight(self) -> np.ndarray:
        """Each row's sample weight (1 without weights)."""
        return np.ones(self.n) if self.weight is None else self.weight.astype(np.float64)

    @property
    def total_weight(self) -> float:
        """n: the rows, or the sum of their weights."""
        return float(self.n) if self.weight is None else float(self.weight.sum())


@dataclass(frozen=True)
class Moments:
    """Full-sample quantities of §5.1-§5.3."""

    n: float  # rows (an int), or the sum of the sample weights
    theta: float
    psi: np.ndarray  # (n,) influence function values
    count: np.ndarray  # (g,) |G| (rows of G within the population)
    sum_L: np.ndarray  # (g,) sum_{i in G} L_i
    share: np.ndarray  # (g,) P_n(G)
    mean: np.ndarray  # (g,) mean of L in G (NaN if empty)
    eps: np.ndarray  # (g,) eps_hat(G) (NaN if empty)
    sigma2: np.ndarray  # (g,) sigma_hat^2_G of eq. (9) (NaN if empty)
    var_L: float  # plug-in variance of L over the population


def _known_theta(problem: AuditProblem) -> float:
    """The given target (no reference set): a number, checked here for the type checker."""
    if problem.theta is None:
        raise ValueError("give either a reference set or a known target theta")
    return float(problem.theta)


def group_sums(problem: AuditProblem, values: np.ndarray) -> np.ndarray:
    """``sum_{i in G} values_i`` for every group (rows outside the population count 0), each
    row times its sample weight when weighted."""
    n_atoms = problem.atom_groups.shape[0]
    values = values * problem.row_weight  # exact for unit weights
    per_atom = np.bincount(
        problem.atom, weights=np.where(problem.population, values, 0.0), minlength=n_atoms
    )
    return np.asarray(problem.atom_groups.T @ per_atom).ravel()


def moments(problem: AuditProblem) -> Moments:
    """theta_hat, psi, P_n(G), eps_hat(G) and sigma_hat^2_G (plug-in moments, eq. 9); with
    sample weights, of the weighted empirical measure (whole-number weights: exactly the moments
    of the rows repeated)."""
    n: float | int = problem.n
    pop = problem.population
    L = np.where(pop, problem.L.astype(np.float64), 0.0)
    w = problem.row_weight
    if problem.weight is not None:
        n = problem.total_weight
    if problem.reference is not None:
        ref = problem.reference & pop
        if not ref.any():
            raise ValueError("the reference set has no rows")
        n_ref = float(w[ref].sum())  # a whole number, exact, for unit weights
        theta = float((w[ref] * L[ref]).sum() / n_ref)
        psi = np.where(ref, (L - theta) / (n_ref / n), 0.0)
    else:
        theta = _known_theta(problem)
        psi = np.zeros(problem.n)
    ones = pop.astype(np.float64)
    count = group_sums(problem, ones)
    sum_L = group_sums(problem, L)
    sum_L2 = group_sums(problem, L * L)
    sum_psi = group_sums(problem, psi)
    sum_Lpsi = group_sums(problem, L * psi)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, sum_L / count, np.nan)
        var_g = np.maximum(sum_L2 / count - mean**2, 0.0)
        cov_g = sum_Lpsi / count - mean * (sum_psi / count)
    share = count / n
    # weighted averages with unit weights are the plain means (and variances) to the bit
    var_psi = float(np.average(psi**2, weights=w) - np.average(psi, weights=w) ** 2)
    sigma2 = var_g + share * (var_psi - 2.0 * cov_g)
    sigma2 = np.where(count > 0, np.maximum(sigma2, 0.0), np.nan)  # >= 0 up to rounding
    n_pop = int(pop.sum())
    mean_pop = float(np.average(L[pop], weights=w[pop])) if n_pop else 0.0
    var_L = float(np.average((L[pop] - mean_pop) ** 2, weights=w[pop])) if n_pop else 0.0
    return Moments(
        n=n,
        theta=theta,
        psi=psi,
        count=count,
        sum_L=sum_L,
        share=share,
        mean=mean,
        eps=mean - theta,
        sigma2=sigma2,
        var_L=var_L,
    )


BOUND_EXPONENT = 1.5  # eq. (9): the bound process carries an extra P_n(G)
BOOLEAN_EXPONENT = 0.5  # Algorithm 7 (§5.5): the Boolean process does not


def scale(
    m: Moments, p_star: float | None, w0: float, exponent: float = BOUND_EXPONENT
) -> np.ndarray:
    """s_hat(G) of Algorithm 2 (eq. 9) or 7 (``exponent=BOOLEAN_EXPONENT``); ``p_star=None``
    means Algorithm 1/3 (s = 1).

    ``w0 = inf`` is the explicit limit ``max(P_n, p*)^{exponent} sd(L)``.
    """
    if p_star is None:
        return np.where(m.count > 0, 1.0, np.nan)
    base = np.maximum(m.share, p_star) ** exponent
    sd = math.sqrt(max(m.var_L, 0.0))
    if math.isinf(w0):
        mix = np.full_like(m.share, sd)
    else:
        sigma = np.sqrt(m.sigma2)
        mix = (m.share * sigma + w0 * sd) / (m.share + w0)
    return np.where(m.count > 0, base * mix, np.nan)


@dataclass
class Resamples:
    """Per-resample group totals of one block: counts ``C``, sums ``S`` (b x g), theta* (b,)."""

    counts: np.ndarray
    sums: np.ndarray
    theta: np.ndarray


@dataclass
class BootstrapInfo:
    B: int
    redraws: int = 0  # resamples redrawn because they had no reference row
    path: str = "rows"  # "cells" (multinomial over exchangeable cells) or "rows"


class _Sampler:
    """Draws blocks of multinomial resamples and aggregates them to group totals."""

    def __init__(self, problem: AuditProblem) -> None:
        self.problem = problem
        n = problem.n
        pop = problem.population
        L = np.where(pop, problem.L.astype(np.float64), 0.0)
        ref = (
            (problem.reference & pop) if problem.reference is not None else np.zeros(n, dtype=bool)
        )
        self.L, self.ref = L, ref
        self.n_atoms = problem.atom_groups.shape[0]
        self.MA = problem.atom_groups.tocsr().astype(np.float64)
        # rows outside the population: their own atom-level flag so they never count in a group
        atom_eff = np.where(pop, problem.atom, self.n_atoms)  # extra "nowhere" atom
        self.atom_eff = atom_eff
        uniq_L, L_code = np.unique(L, return_inverse=True)
        cell_key = (atom_eff.astype(np.int64) * len(uniq_L) + L_code) * 2 + ref
        keys, sizes = np.unique(cell_key, return_counts=True)
        # weighted rows are resampled as rows, each carrying its weight
        self.weight = None if problem.weight is None else problem.weight.astype(np.float64)
        if self.weight is None and len(keys) * COMPRESS_RATIO <= n:
            self.path = "cells"
            self.cell_prob = sizes / n
            ref_c = (keys % 2).astype(bool)
            rest = keys // 2
            self.cell_L = uniq_L[rest % len(uniq_L)]
            self.cell_atom = rest // len(uniq_L)
            self.cell_ref = ref_c
            n_cells = len(keys)
            rows = self.cell_atom
            keep = rows < self.n_atoms
            self.cell_to_atom = sp.csr_matrix(
                (np.ones(int(keep.sum())), (np.flatnonzero(keep), rows[keep])),
                shape=(n_cells, self.n_atoms),
            )
            self.cell_to_group = (self.cell_to_atom @ self.MA).tocsr()
        else:
            self.path = "rows"

    def block(self, rng: np.random.Generator, b: int, info: BootstrapInfo) -> Resamples:
        problem = self.problem
        n = problem.n
        if self.path == "cells":
            W = rng.multinomial(n, self.cell_prob, size=b).astype(np.float64)
            if problem.reference is not None:
                for r in range(b):  # redraw resamples without reference rows (§5.2 [REC])
                    while W[r, self.cell_ref].sum() == 0:
                        info.redraws += 1
                        W[r] = rng.multinomial(n, self.cell_prob)
            WL = W * self.cell_L
            C = np.asarray(self.cell_to_group.T @ W.T).T
            S = np.asarray(self.cell_to_group.T @ WL.T).T
            if problem.reference is not None:
                theta = (WL[:, self.cell_ref].sum(axis=1)) / W[:, self.cell_ref].sum(axis=1)
            else:
                theta = np.full(b, _known_theta(problem))
            return Resamples(C, S, theta)
        A1 = self.n_atoms + 1
        idx = rng.integers(0, n, size=(b, n))
        if problem.reference is not None:
            for r in range(b):
                while not self.ref[idx[r]].any():
                    info.redraws += 1
                    idx[r] = rng.integers(0, n, size=n)
        key = self.atom_eff[idx] + (np.arange(b) * A1)[:, None]
        Lw = self.L[idx]
        sw = None if self.weight is None else self.weight[idx]
        if sw is not None:
            Lw = Lw * sw
        CA = np.bincount(
            key.ravel(), weights=None if sw is None else sw.ravel(), minlength=b * A1
        ).reshape(b, A1)[:, : self.n_atoms]
        SA = np.bincount(key.ravel(), weights=Lw.ravel(), minlength=b * A1).reshape(b, A1)
        SA = SA[:, : self.n_atoms]
        C = np.asarray(self.MA.T @ CA.T.astype(np.float64)).T
        S = np.asarray(self.MA.T @ SA.T).T
        if problem.reference is not None:
            refw = self.ref[idx] if sw is None else self.ref[idx] * sw
            theta = (
                (Lw * refw).sum(axis=1) / refw.sum(axis=1)
                if sw is None
                else ((Lw * self.ref[idx]).sum(axis=1) / refw.sum(axis=1))
            )
        else:
            theta = np.full(b, _known_theta(problem))
        return Resamples(C, S, theta)


def iter_resamples(
    problem: AuditProblem, B: int, seed: np.random.SeedSequence, info: BootstrapInfo
):
    """Yield blocks of resample totals; block ``k`` draws from ``replicate_rng(seed, k)``.

    The block size depends only on ``n`` (and the sampling path), so a seed gives bit-identical
    results on every machine and thread count.
    """
    sampler = _Sampler(problem)
    info.path = sampler.path
    if sampler.path == "cells":
        size = 100
    else:
        size = max(1, min(100, ROW_BLOCK_ELEMENTS // max(problem.n, 1)))
    k = 0
    done = 0
    while done < B:
        b = min(size, B - done)
        rng = replicate_rng(seed, k)
        yield sampler.block(rng, b, info)
        done += b
        k += 1


def critical_value(stats: np.ndarray, alpha: float) -> float:
    """Quantile(1 - alpha) = the ceil((1 - alpha) B)-th order statistic (§5.3 step 4)."""
    B = len(stats)
    k = min(max(math.ceil((1.0 - alpha) * B - 1e-9), 1), B)
    return float(np.sort(stats)[k - 1])


# --- bound and Boolean certification (§5.3-§5.5) ---------------------------------------------


@dataclass
class CertifyOutput:
    moments: Moments
    scale: np.ndarray  # s_hat(G) of the bounds (exponent 3/2)
    scale_boolean: np.ndarray  # s_hat(G) of the Boolean certificates (exponent 1/2)
    valid: np.ndarray  # groups entering the maxima
    # per-resample maxima: lower, upper, abs (bounds); above, below (Boolean at +eps0),
    # both_upper (null eps >= eps0) / both_lower (null eps <= -eps0)
    stats: dict[str, np.ndarray]
    t: dict[str, float]
    info: BootstrapInfo
    degenerate: bool


def _masked_max(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    if not valid.any():
        return np.zeros(x.shape[0])
    return x[:, valid].max(axis=1)


def certify(
    problem: AuditProblem,
    *,
    B: int,
    alpha: float,
    seed: np.random.SeedSequence,
    p_star: float | None = 0.01,
    w0: float = math.inf,
    tolerance: float = 0.0,
    min_size: int = 1,
) -> CertifyOutput:
    """Bootstrap critical values for bounds (Algorithms 1, 2), mirrored upper bounds, two-sided
    intervals (§5.4) and Boolean certificates (Algorithms 3, 7, all three null forms of §5.5)."""
    m = moments(problem)
    s = scale(m, p_star, w0)
    s_bool = scale(m, p_star, w0, BOOLEAN_EXPONENT)
    valid = (m.count >= max(min_size, 1)) & np.isfinite(s) & (s > 0)
    info = BootstrapInfo(B=B)
    degenerate = m.var_L <= 0.0
    keys = ("lower", "upper", "abs", "above", "below", "both_upper", "both_lower")
    if degenerate or not valid.any():
        stats = {k: np.zeros(B) for k in keys}
        t0 = dict.fromkeys(keys, 0.0)
        return CertifyOutput(m, s, s_bool, valid, stats, t0, info, degenerate)
    n = m.n
    eps = np.where(valid, m.eps, 0.0)
    share = m.share
    s_safe = np.where(valid, s, 1.0)
    sb_safe = np.where(valid, s_bool, 1.0)
    base_lin = m.sum_L - m.count * m.theta  # sum_{G}(L - theta_hat)
    chunks: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    for res in iter_resamples(problem, B, seed, info):
        C, S, th = res.counts, res.sums, res.theta[:, None]
        lin = S - C * th  # sum_G w (L - theta*)
        Z = share * lin / n - share * (C / n) * eps
        Zs = Z / s_safe
        chunks["lower"].append(_masked_max(Zs, valid))
        chunks["upper"].append(_masked_max(-Zs, valid))
        chunks["abs"].append(_masked_max(np.abs(Zs), valid))
        d0 = (lin - base_lin) / n  # numerator without the tolerance terms
        dC = (C - m.count) / n
        num_plus = (d0 - tolerance * dC) / sb_safe  # numerator at +eps0
        num_minus = (d0 + tolerance * dC) / sb_safe  # numerator at -eps0
        chunks["above"].append(_masked_max(num_plus, valid))
        chunks["below"].append(_masked_max(-num_plus, valid))
        chunks["both_upper"].append(_masked_max(-num_plus, valid))
        chunks["both_lower"].append(_masked_max(num_minus, valid))
    stats = {k: np.concatenate(v) for k, v in chunks.items()}
    t = {k: critical_value(v, alpha) for k, v in stats.items()}
    return CertifyOutput(m, s, s_bool, valid, stats, t, info, degenerate)


@dataclass
class BoundResult:
    lower: np.ndarray
    upper: np.ndarray
    certified: np.ndarray  # bool


def bounds(
    out: CertifyOutput,
    bound: str,
    side: str,
    tolerance: float,
    limits: tuple[float, float] | None = None,
) -> BoundResult:
    """Bounds / intervals / Boolean certificates per group from the critical values.

    ``bound``: lower | upper | two_sided | boolean. For bounds, ``certified`` is the claim the
    bound proves about ``tolerance`` (lower: eps > tol; upper: eps < tol; two_sided: per
    ``side``, above: eps > tol, below: eps < tol, both: |eps| < tol). For ``boolean``, the
    certificates of §5.5: above: eps > tol, below: eps < tol, both: |eps| < tol (IUT).
    Non-valid groups get NaN bounds and ``certified = False``. ``limits``: the range the gap
    can take (the metric's range minus the target's); every bound is intersected with it (a
    gap of two rates is never beyond +-1), and the claims of the bounds read the clipped ones.
    """
    m, s, v = out.moments, out.scale, out.valid
    g = len(m.eps)
    lower = np.full(g, np.nan)
    upper = np.full(g, np.nan)
    certified = np.zeros(g, dtype=bool)
    if out.degenerate:
        lower = np.where(m.count > 0, m.eps, np.nan)
        upper = lower.copy()
        v = m.count > 0
        s = np.zeros(g)

    def clip(x: np.ndarray) -> np.ndarray:
        return x if limits is None else np.clip(x, *limits)  # NaN stays NaN

    with np.errstate(invalid="ignore", divide="ignore"):
        P2 = m.share**2
        P = m.share
        if bound == "lower":
            lower = clip(np.where(v, m.eps - out.t["lower"] * s / P2, np.nan))
            certified = v & (lower > tolerance)
        elif bound == "upper":
            upper = clip(np.where(v, m.eps + out.t["upper"] * s / P2, np.nan))
            certified = v & (upper < tolerance)
        elif bound == "two_sided":
            half = out.t["abs"] * s / P2
            lower = clip(np.where(v, m.eps - half, np.nan))
            upper = clip(np.where(v, m.eps + half, np.nan))
            if side == "above":
                certified = v & (lower > tolerance)
            elif side == "below":
                certified = v & (upper < tolerance)
            else:
                certified = v & (lower > -tolerance) & (upper < tolerance)
        elif bound == "boolean":
            s = out.scale_boolean if not out.degenerate else s
            if side == "above":  # null eps <= tol
                lower = clip(np.where(v, m.eps - out.t["above"] * s / P, np.nan))
                certified = v & (m.eps >= tolerance + out.t["above"] * s / P)
            elif side == "below":  # null eps >= tol
                upper = clip(np.where(v, m.eps + out.t["below"] * s / P, np.nan))
                certified = v & (m.eps <= tolerance - out.t["below"] * s / P)
            else:  # |eps| < tol: both one-sided nulls rejected
                upper = clip(np.where(v, m.eps + out.t["both_upper"] * s / P, np.nan))
                lower = clip(np.where(v, m.eps - out.t["both_lower"] * s / P, np.nan))
                certified = (
                    v
                    & (m.eps <= tolerance - out.t["both_upper"] * s / P)
                    & (m.eps >= -tolerance + out.t["both_lower"] * s / P)
                )
        else:
            raise ValueError(f"unknown bound {bound!r}")
    return BoundResult(lower, upper, np.asarray(certified, dtype=bool))


# --- flagging (§5.6) -------------------------------------------------------------------------


@dataclass
class FlagOutput:
    moments: Moments
    s_star: np.ndarray  # MAD scale per group (NaN when not estimable)
    present_share: np.ndarray  # share of resamples in which the group is present
    p_value: np.ndarray  # NaN for untested groups
    adjusted: np.ndarray  # NaN for untested groups
    flagged: np.ndarray
    tested: np.ndarray
    constant: np.ndarray  # s* = 0 (p set to 0/1)
    info: BootstrapInfo
    deviations: np.ndarray | None = field(default=None, repr=False)  # (B, g) |t_b(G)|


def flag_p_values(eps: np.ndarray, s_star: np.ndarray, tolerance: float, side: str) -> np.ndarray:
    """App. C p-values; ``s* = 0`` gives 0 on the alternative side of ``tolerance``, else 1."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if side == "above":
            p = ndtr(-(eps - tolerance) / s_star)
            alt = eps > tolerance
        elif side == "below":
            p = ndtr((eps - tolerance) / s_star)
            alt = eps < tolerance
        elif side == "both":
            p = np.minimum(ndtr((eps + tolerance) / s_star), ndtr(-(eps - tolerance) / s_star))
            alt = np.abs(eps) > tolerance
        else:
            raise ValueError(f"unknown side {side!r}")
    zero = s_star == 0
    return np.where(zero, np.where(alt, 0.0, 1.0), p)


def flag(
    problem: AuditProblem,
    *,
    B: int,
    alpha: float,
    seed: np.random.SeedSequence,
    tolerance: float,
    side: str = "above",
    correction: str = "bh",
    min_size: int = 1,
    keep_deviations: bool = False,
) -> FlagOutput:
    """Algorithm 4 (MAD scale with Phi^{-1}(3/4)), App. C p-values and BH/BY over tested groups."""
    m = moments(problem)
    g = len(m.eps)
    info = BootstrapInfo(B=B)
    eligible = m.count >= max(min_size, 1)
    dev = np.empty((B, g))
    r0 = 0
    for res in iter_resamples(problem, B, seed, info):
        with np.errstate(invalid="ignore", divide="ignore"):
            eps_b = np.where(res.counts > 0, res.sums / res.counts, np.nan) - res.theta[:, None]
        b = eps_b.shape[0]
        dev[r0 : r0 + b] = np.abs(eps_b - m.eps)
        r0 += b
    finite = np.isfinite(dev)
    present = finite.mean(axis=0)
    enough = present >= 0.5
    s_star = np.full(g, np.nan)
    cols = eligible & enough
    if cols.any():
        s_star[cols] = np.nanmedian(dev[:, cols], axis=0) / MAD_CONSTANT
    p = np.where(cols, flag_p_values(m.eps, s_star, tolerance, side), np.nan)
    tested = cols & np.isfinite(p)
    adjusted = np.full(g, np.nan)
    if tested.any():
        adjusted[tested] = adjust_p_values(p[tested], correction)
    flagged = tested & (adjusted <= alpha)
    constant = tested & (s_star == 0)
    return FlagOutput(
        moments=m,
        s_star=s_star,
        present_share=present,
        p_value=p,
        adjusted=adjusted,
        flagged=flagged,
        tested=tested,
        constant=constant,
        info=info,
        deviations=dev if keep_deviations else None,
    )
