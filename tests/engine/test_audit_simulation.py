"""Statistical validity of the certify/flag engine by simulation (methods.md §5.10 items 5, 6).

* Simultaneous coverage of the bound certification over all sub-intervals of a grid in the
  heteroskedastic regression example of §5.10 item 5 (X ~ U(0, 1), Y ~ N(beta0 X, X),
  L = (Y - beta_hat X)^2, target = population mean of L, estimated). The true gaps are exact:
  E[L | X] = (beta0 - beta_hat)^2 X^2 + X.
* FDR of BH flagging (Algorithm 4) on disjoint groups with a known target, a mix of null groups
  sitting exactly on the tolerance (the least favourable null) and clearly non-null groups.

The full-size versions (more trials, B = 500) live in ``benchmarks/bench_certification.py``; the
helpers here are shared with it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairscan.engine import audit_bootstrap as ab
from fairscan.engine.audit_groups import intervals

BETA0, BETA_HAT = 2.0, 1.5
GRID = [k / 10 for k in range(11)]


def _interval_truth(grid: list[float]) -> np.ndarray:
    """eps(G) = E[L | X in [a, b]] - E[L] for every sub-interval, in audit_groups order."""
    d2 = (BETA0 - BETA_HAT) ** 2

    def mean_L(a: float, b: float) -> float:  # E[d2 X^2 + X | X ~ U(a, b)]
        return d2 * (a * a + a * b + b * b) / 3 + (a + b) / 2

    K = len(grid) - 1
    lo, hi = np.triu_indices(K + 1, k=1)
    overall = mean_L(grid[0], grid[-1])
    return np.array([mean_L(grid[i], grid[j]) - overall for i, j in zip(lo, hi, strict=True)])


def coverage_trial(
    rng: np.random.Generator, n: int, B: int, alpha: float, variants: dict
) -> dict[str, dict[str, bool]]:
    """One simulated holdout; for every variant, whether all lower / upper / two-sided bounds
    hold simultaneously over the 55 intervals."""
    x = rng.random(n)
    y = BETA0 * x + np.sqrt(x) * rng.standard_normal(n)
    L = (y - BETA_HAT * x) ** 2
    gc = intervals(x, GRID, "x")
    truth = _interval_truth(GRID)
    prob = ab.AuditProblem(L, np.ones(n, bool), gc.atom, gc.atom_groups, reference=np.ones(n, bool))
    seed = np.random.SeedSequence(int(rng.integers(2**63)))
    res = {}
    for name, (p_star, w0) in variants.items():
        out = ab.certify(prob, B=B, alpha=alpha, seed=seed, p_star=p_star, w0=w0)
        v = out.valid
        lo = ab.bounds(out, "lower", "above", 0.0).lower
        up = ab.bounds(out, "upper", "above", 0.0).upper
        two = ab.bounds(out, "two_sided", "both", 0.0)
        res[name] = {
            "lower": bool(np.all(lo[v] <= truth[v])),
            "upper": bool(np.all(up[v] >= truth[v])),
            "two_sided": bool(np.all((two.lower[v] <= truth[v]) & (truth[v] <= two.upper[v]))),
        }
    return res


VARIANTS = {
    "unscaled (Alg. 1)": (None, math.inf),
    "rescaled p*=0.01, w0=inf": (0.01, math.inf),
    "rescaled p*=0.01, w0=0.5": (0.01, 0.5),
}


def coverage_simulation(trials: int, n: int = 1600, B: int = 500, alpha: float = 0.1, seed=0):
    """{variant: {kind: (coverage, Monte-Carlo SE)}} over ``trials`` simulated datasets."""
    rng = np.random.default_rng(seed)
    hits: dict[str, dict[str, int]] = {v: {} for v in VARIANTS}
    for _ in range(trials):
        for v, r in coverage_trial(rng, n, B, alpha, VARIANTS).items():
            for k, ok in r.items():
                hits[v][k] = hits[v].get(k, 0) + int(ok)
    return {
        v: {
            k: (c / trials, math.sqrt((c / trials) * (1 - c / trials) / trials))
            for k, c in d.items()
        }
        for v, d in hits.items()
    }


def fdr_trial(
    rng: np.random.Generator,
    *,
    n_null: int,
    n_alt: int,
    size: int,
    theta: float,
    tol: float,
    alt_gap: float,
    B: int,
    alpha: float,
):
    """Disjoint groups, binary L, known theta. Null groups have eps = tol exactly, alternatives
    eps = alt_gap > tol. Returns (false discoveries, true discoveries, null p-values)."""
    g = n_null + n_alt
    atom = np.repeat(np.arange(g), size)
    rate = np.where(np.arange(g) < n_null, theta + tol, theta + alt_gap)
    L = (rng.random(g * size) < rate[atom]).astype(float)
    import scipy.sparse as sp

    M = sp.identity(g, format="csr")
    prob = ab.AuditProblem(L, np.ones(g * size, bool), atom, M, theta=theta)
    out = ab.flag(
        prob,
        B=B,
        alpha=alpha,
        seed=np.random.SeedSequence(int(rng.integers(2**63))),
        tolerance=tol,
    )
    null = np.arange(g) < n_null
    return int((out.flagged & null).sum()), int((out.flagged & ~null).sum()), out.p_value[null]


FDR_SETTING = {"n_null": 30, "n_alt": 10, "size": 200, "theta": 0.3, "tol": 0.05, "alt_gap": 0.17}


def fdr_simulation(trials: int, B: int = 500, alpha: float = 0.1, seed=1):
    """Empirical FDR, power (each with SE), and the level of single null p-values at alpha."""
    rng = np.random.default_rng(seed)
    fdp, power, nullp = [], [], []
    for _ in range(trials):
        fd, td, p = fdr_trial(rng, B=B, alpha=alpha, **FDR_SETTING)
        fdp.append(fd / max(fd + td, 1))
        power.append(td / FDR_SETTING["n_alt"])
        nullp.append(p)
    fdp, power = np.array(fdp), np.array(power)
    nullp = np.concatenate(nullp)
    se = lambda a: float(a.std(ddof=1) / math.sqrt(len(a)))  # noqa: E731
    return {
        "fdr": (float(fdp.mean()), se(fdp)),
        "power": (float(power.mean()), se(power)),
        "null_p_below_alpha": float(np.mean(nullp <= alpha)),
        "null_p_count": len(nullp),
    }


@pytest.mark.slow
def test_simultaneous_coverage_heteroskedastic_intervals():
    alpha = 0.1
    trials = 100
    res = coverage_simulation(trials, n=1600, B=200, alpha=alpha, seed=2024)
    for variant, kinds in res.items():
        for kind in ("lower", "two_sided"):  # the upper bound of a right-skewed L under-covers
            cov = kinds[kind][0]
            se0 = math.sqrt(alpha * (1 - alpha) / trials)  # SE at the nominal level
            # too-narrow bounds (e.g. a wrong power of P_n, no influence term) under-cover;
            # grossly wide ones (e.g. dividing by P_n^3) cover always
            assert cov >= 1 - alpha - 3 * se0, (variant, kind, cov)
            assert cov <= 0.99, (variant, kind, cov)


@pytest.mark.slow
def test_flagging_controls_fdr_on_disjoint_groups():
    alpha = 0.1
    res = fdr_simulation(150, B=300, alpha=alpha, seed=7)
    fdr, se = res["fdr"]
    assert fdr <= alpha + 3 * se
    # least favourable nulls: a single p-value rejects at alpha with probability ~alpha; the
    # wrong MAD constant Phi(3/4) (erratum A1) gives 0.124 here (this seed: 0.094 and FDR 0.077
    # vs 0.120 with it), a missing tolerance ~0.5
    assert 0.075 <= res["null_p_below_alpha"] <= 0.115, res
    assert res["power"][0] >= 0.5


# --- Boolean certificates (Algorithm 7, §5.5): family-wise error at the least favourable null ---

BOOL_SIZES = (30, 40, 60, 80, 120, 160, 240, 320, 480, 640)  # shares ~0.5% ... 11%
BOOL_THETA, BOOL_TOL = 0.4, 0.05


def boolean_fwer_trial(rng: np.random.Generator, *, side: str, estimated: bool, B: int, alpha):
    """Disjoint groups whose true gap sits exactly on the null boundary (eps = tol for
    ``above`` and ``below``; alternately +tol / -tol for ``both``), binary L. With
    ``estimated`` the target is the mean of a separate reference group (rate theta) that is not
    audited; otherwise theta is known. Returns whether any group was (falsely) certified."""
    import scipy.sparse as sp

    g = len(BOOL_SIZES)
    sign = {"above": np.ones(g), "below": np.ones(g), "both": (-1.0) ** np.arange(g)}[side]
    rate = BOOL_THETA + sign * BOOL_TOL
    sizes = list(BOOL_SIZES) + ([2000] if estimated else [])
    rates = list(rate) + ([BOOL_THETA] if estimated else [])
    atom = np.repeat(np.arange(len(sizes)), sizes)
    L = (rng.random(len(atom)) < np.asarray(rates)[atom]).astype(float)
    M = sp.vstack([sp.identity(g, format="csr"), sp.csr_matrix((1, g))]) if estimated else None
    kw = {"reference": atom == g} if estimated else {"theta": BOOL_THETA}
    prob = ab.AuditProblem(
        L,
        np.ones(len(atom), bool),
        atom,
        M if M is not None else sp.identity(g, format="csr"),
        **kw,
    )
    out = ab.certify(
        prob,
        B=B,
        alpha=alpha,
        seed=np.random.SeedSequence(int(rng.integers(2**63))),
        p_star=0.01,
        tolerance=BOOL_TOL,
    )
    return bool(ab.bounds(out, "boolean", side, BOOL_TOL).certified.any())


def boolean_fwer_simulation(trials: int, B: int = 200, alpha: float = 0.1, seed=11):
    """{(side, target): (FWER, Monte-Carlo SE)} at the least favourable null."""
    rng = np.random.default_rng(seed)
    res = {}
    for side in ("above", "below", "both"):
        for estimated in (False, True):
            hits = sum(
                boolean_fwer_trial(rng, side=side, estimated=estimated, B=B, alpha=alpha)
                for _ in range(trials)
            )
            f = hits / trials
            res[(side, "estimated" if estimated else "known")] = (
                f,
                math.sqrt(f * (1 - f) / trials),
            )
    return res


def _check_boolean_fwer(trials: int, B: int, alpha: float, seed: int, lower: float) -> None:
    se0 = math.sqrt(alpha * (1 - alpha) / trials)
    for key, (fwer, _se) in boolean_fwer_simulation(trials, B=B, alpha=alpha, seed=seed).items():
        # valid: at most alpha up to Monte-Carlo error. One-sided, every group on the boundary:
        # the level is nearly exhausted. Two-sided (intersection-union) it is conservative: a
        # group on one boundary must also clear the other, which small groups cannot.
        assert fwer <= alpha + 3 * se0, (key, fwer)
        if key[0] != "both":
            assert fwer >= lower, (key, fwer)


@pytest.mark.slow
def test_boolean_certificates_control_fwer_fast():
    _check_boolean_fwer(trials=60, B=100, alpha=0.1, seed=5, lower=0.0)


@pytest.mark.slow
def test_boolean_certificates_control_fwer():
    _check_boolean_fwer(trials=400, B=300, alpha=0.1, seed=2026, lower=0.03)
