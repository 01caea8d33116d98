"""RKHS shift engine (methods.md §5.8, §5.10 item 7): the 4x4 route, t >= 0, the process value,
Nystroem with rank = n, determinism, the degenerate case and the named-tilt bound."""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine import rkhs

# --- dense references of Algorithm 8, independent of the package's low-rank route ----------


def dense_sym_A(w: np.ndarray, L: np.ndarray, t: float) -> np.ndarray:
    """``sym(A)`` of Algorithm 8 as a dense n x n matrix."""
    n = len(L)
    one = np.ones(n)
    A = (np.outer(w * L, one) - np.outer(w, L) - t * np.outer(one, one)) / (n * n)
    return np.asarray((A + A.T) / 2.0)


def process_value(h: np.ndarray, w: np.ndarray, L: np.ndarray, t: float) -> float:
    """The bootstrap process at a tilt with values ``h`` at the rows:
    ``E*[L h] E_n[h] - E*[h] E_n[L h] - t E_n[h]^2`` (E* = the resample mean)."""
    n = len(L)
    Eh = h.sum() / n
    return float((w * L * h).sum() / n * Eh - (w * h).sum() / n * (L * h).sum() / n - t * Eh**2)


def _data(n: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    L = (rng.random(n) < 0.3 + 0.2 * (X[:, 0] > 0)).astype(float)
    return X, L


@pytest.mark.parametrize("estimated", [True, False])
def test_the_4x4_route_equals_the_dense_eigendecomposition(estimated: bool) -> None:
    X, L = _data()
    n, B, bw = len(L), 6, 0.8
    Lc = L - (L.mean() if estimated else 0.25)
    seed = np.random.SeedSequence(3)
    forms = rkhs.bootstrap_forms(X, Lc, bw, B, seed)
    assert forms.weights is not None
    np.testing.assert_array_equal(forms.weights, rkhs.resample_counts(n, B, seed))
    assert (forms.weights.sum(axis=1) == n).all()
    t = forms.sum_wL / n if estimated else np.zeros(B)
    lam_min, lam_max = rkhs.extreme_eigenvalues(forms.Q, t, n)
    vals, vecs = np.linalg.eigh(rkhs.gaussian_kernel(X, X, bw))
    root = vecs @ np.diag(np.sqrt(np.clip(vals, 0, None))) @ vecs.T
    for b in range(B):
        dense = np.linalg.eigvalsh(root @ dense_sym_A(forms.weights[b], Lc, t[b]) @ root)
        assert lam_max[b] == pytest.approx(dense.max(), rel=1e-8, abs=1e-12)
        assert lam_min[b] == pytest.approx(dense.min(), rel=1e-8, abs=1e-12)
    for side in ("lower", "upper", "both"):
        stat = rkhs.side_statistic(lam_min, lam_max, side)
        assert (stat >= 0).all()
    both = rkhs.side_statistic(lam_min, lam_max, "both")
    assert (both >= rkhs.side_statistic(lam_min, lam_max, "lower")).all()


def test_the_quadratic_form_equals_the_process_value() -> None:
    X, L = _data(40, seed=1)
    n = len(L)
    Lc = L - L.mean()
    rng = np.random.default_rng(5)
    w = rng.multinomial(n, np.full(n, 1 / n)).astype(float)
    t = float(np.mean((w - 1) * Lc))
    K = rkhs.gaussian_kernel(X, X, 0.7)
    S = dense_sym_A(w, Lc, t)
    U = np.stack([w * Lc, np.ones(n), w, Lc], axis=1)
    M = rkhs.middle(np.array([t]))[0]
    for _ in range(5):
        h = K @ rng.normal(size=n)  # an RKHS function at the rows
        value = process_value(h, w, Lc, t)
        assert h @ S @ h == pytest.approx(value, rel=1e-10, abs=1e-14)
        assert h @ U @ M @ U.T @ h / (2 * n * n) == pytest.approx(value, rel=1e-10, abs=1e-14)


def test_nystroem_with_rank_n_equals_exact() -> None:
    X, L = _data(30, seed=2)
    Lc = L - L.mean()
    seed = np.random.SeedSequence(9)
    exact = rkhs.bootstrap_forms(X, Lc, 1.0, 8, seed)
    approx = rkhs.nystroem(X, 30, 1.0, np.random.SeedSequence(4))
    ny = rkhs.bootstrap_forms(X, Lc, 1.0, 8, seed, approx)
    np.testing.assert_allclose(ny.Q, exact.Q, rtol=1e-6, atol=1e-8 * np.abs(exact.Q).max())
    np.testing.assert_allclose(ny.sum_wL, exact.sum_wL)


def test_deterministic_for_a_seed_and_degenerate_for_constant_L() -> None:
    X, L = _data(60, seed=3)
    kw = {"bandwidth": 0.5, "B": 50, "alpha": 0.1, "side": "lower"}
    a = rkhs.shift_bootstrap(X, L, seed=np.random.SeedSequence(1), **kw)  # type: ignore[arg-type]
    b = rkhs.shift_bootstrap(X, L, seed=np.random.SeedSequence(1), **kw)  # type: ignore[arg-type]
    c = rkhs.shift_bootstrap(X, L, seed=np.random.SeedSequence(2), **kw)  # type: ignore[arg-type]
    assert a.t_star == b.t_star and np.array_equal(a.t, b.t)
    assert a.t_star != c.t_star
    assert a.t_star == rkhs.quantile(a.t, 0.9) and a.t_star > 0
    d = rkhs.shift_bootstrap(X, np.ones(60), seed=np.random.SeedSequence(1), **kw)  # type: ignore[arg-type]
    assert d.degenerate and d.t_star == 0.0 and d.worst is None


def test_tilt_bound_is_scale_invariant_and_brackets_the_estimate() -> None:
    X, L = _data(80, seed=4)
    Lc = L - L.mean()
    Z, a = X[:3], np.array([1.0, 2.0, 0.5])
    bounds = []
    for scale in (1.0, 7.0):
        h = rkhs.kernel_apply(X, Z, a * scale, 0.6)
        tb = rkhs.tilt_bound(h, Lc, rkhs.tilt_norm2(Z, a * scale, 0.6), 0.01, 0.02)
        bounds.append((tb.estimate, tb.lower, tb.upper, tb.effective_sample_size))
        assert tb.lower <= tb.estimate <= tb.upper
        assert tb.estimate == pytest.approx(float((Lc * h).sum() / h.sum()))
    np.testing.assert_allclose(bounds[0], bounds[1])
