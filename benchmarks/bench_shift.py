"""The `shift` engine (methods.md §5.8): coverage of the simultaneous bounds by simulation, and
speed (COMPAS exact kernel, B = 500; a large synthetic table with Nystroem rank 500).

    .venv/bin/python benchmarks/bench_shift.py --simulate [--trials 200]
    .venv/bin/python benchmarks/bench_shift.py --compas
    .venv/bin/python benchmarks/bench_shift.py --large [--rows 1000000 --rank 500 --bootstrap 500]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from fairscan.engine import rkhs

ROOT = Path(__file__).resolve().parent.parent


def _p(x: np.ndarray) -> np.ndarray:
    """P(L = 1 | X = x) of the synthetic design."""
    return 0.2 + 0.5 * x


def simulate(trials: int, n: int, B: int, alpha: float, bandwidth: float) -> None:
    """X ~ U(0, 1), L ~ Bernoulli(0.2 + 0.5 X), theta = E L estimated (Algorithm 8); tilts
    h_c = k(., c) at five centers; the true eps(h_c) by quadrature on a fine grid."""
    centers = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    grid = (np.arange(200_000) + 0.5) / 200_000
    theta = float(_p(grid).mean())
    Hg = rkhs.gaussian_kernel(grid[:, None], centers[:, None], bandwidth)  # (grid, 5)
    truth = ((_p(grid) - theta)[:, None] * Hg).mean(0) / Hg.mean(0)
    root = np.random.SeedSequence(2026)
    results = {side: {"cover": 0, "slack": [], "width": []} for side in ("lower", "upper")}
    started = time.perf_counter()
    for trial in range(trials):
        rng = np.random.default_rng(root.spawn(1)[0])
        x = rng.random(n)
        L = (rng.random(n) < _p(x)).astype(float)
        X = x[:, None]
        H = rkhs.gaussian_kernel(X, centers[:, None], bandwidth)
        for side in ("lower", "upper"):
            boot = rkhs.shift_bootstrap(
                X,
                L,
                bandwidth=bandwidth,
                B=B,
                alpha=alpha,
                side=side,
                seed=np.random.SeedSequence([2026, trial]),
            )
            ok = True
            for j in range(len(centers)):
                tb = rkhs.tilt_bound(H[:, j], boot.L, 1.0, boot.t_star, boot.t_star)
                bound = tb.lower if side == "lower" else tb.upper
                ok &= bound <= truth[j] if side == "lower" else bound >= truth[j]
                results[side]["slack"].append(abs(truth[j] - bound))
                results[side]["width"].append(abs(tb.estimate - bound))
            results[side]["cover"] += int(ok)
    elapsed = time.perf_counter() - started
    print(f"design: n = {n}, B = {B}, alpha = {alpha}, bandwidth = {bandwidth}, {trials} trials")
    print("true eps(h_c), c = 0.1..0.9:", np.round(truth, 4).tolist())
    for side, r in results.items():
        print(
            f"{side}: simultaneous coverage {r['cover'] / trials:.3f} (target >= {1 - alpha}); "
            f"mean half-width {np.mean(r['width']):.4f}, mean distance bound-truth "
            f"{np.mean(r['slack']):.4f}"
        )
    print(f"{elapsed:.1f} s")


def compas(B: int) -> None:
    import polars as pl

    df = pl.read_csv(ROOT / "build" / "compas.csv")
    y = df["two_year_recid"].to_numpy()
    f = df["high_risk"].to_numpy().astype(float)
    Xall = np.stack([df["age"].to_numpy(), df["priors_count"].to_numpy()], 1).astype(float)
    for what, pop in (("all rows, L = error", np.ones(len(y), bool)), ("FPR, y = 0", y == 0)):
        L = (f != y).astype(float) if pop.all() else f
        X = Xall[pop]
        X = (X - X.mean(0)) / X.std(0)
        t = time.perf_counter()
        boot = rkhs.shift_bootstrap(
            X, L[pop], bandwidth=0.5, B=B, alpha=0.1, side="lower", seed=np.random.SeedSequence(0)
        )
        print(
            f"COMPAS {what}: n = {len(X)}, exact, B = {B}: {time.perf_counter() - t:.2f} s, "
            f"t* = {boot.t_star:.4g}"
        )


def large(rows: int, rank: int, B: int) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 2))
    L = (rng.random(rows) < 0.3 + 0.2 * (X[:, 0] > 0)).astype(float)
    t = time.perf_counter()
    approx = rkhs.nystroem(X, rank, 0.5, np.random.SeedSequence(1))
    t1 = time.perf_counter()
    boot = rkhs.shift_bootstrap(
        X,
        L,
        bandwidth=0.5,
        B=B,
        alpha=0.1,
        side="lower",
        seed=np.random.SeedSequence(0),
        approx=approx,
    )
    t2 = time.perf_counter()
    print(
        f"{rows} rows, rank {rank}, B = {B}: landmarks {t1 - t:.2f} s, bootstrap + worst case "
        f"{t2 - t1:.2f} s, total {t2 - t:.2f} s; t* = {boot.t_star:.4g}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--compas", action="store_true")
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rank", type=int, default=500)
    ap.add_argument("--bootstrap", type=int, default=500)
    a = ap.parse_args()
    if a.simulate:
        simulate(a.trials, a.n, 200, 0.1, 0.2)
    if a.compas:
        compas(a.bootstrap)
    if a.large:
        large(a.rows, a.rank, a.bootstrap)


if __name__ == "__main__":
    main()
