"""Speed of the `flag` engine: COMPAS 73-group FPR flagging vs fairaudit 0.0.1, and a
10,000-group collection on 1,000,000 rows (B = 500).

    .venv/bin/python benchmarks/bench_certification.py [--fairaudit-python benchmarks/.venv-fairaudit/bin/python]
    .venv/bin/python benchmarks/bench_certification.py --simulate [--trials 500]  # §5.10 validity
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FAIRAUDIT_SNIPPET = r"""
import time, numpy as np, polars as pl
from fairaudit.auditor import Auditor
from fairaudit.groups import get_intersections
from fairaudit.metrics import Metric
df = pl.read_csv("{csv}")
X = np.stack([np.unique(df[c].to_numpy().astype(str), return_inverse=True)[1] for c in ["race","sex","age_cat"]], 1)
Y = df["two_year_recid"].to_numpy().astype(float)
Z = df["high_risk"].to_numpy().astype(float)
groups = get_intersections(X.copy())
a = Auditor(X, Y, Z, Metric("predictive_equality"))
t = time.perf_counter()
flags, vals = a.flag_groups(groups, "lower", 0.1, 0.05, {{"student": "mad", "student_threshold": -np.inf, "B": 500, "seed": 0}})
print(time.perf_counter() - t, int(flags.sum()), groups.shape[1])
np.savez("{npz}", flags=np.asarray(flags, bool), groups=np.asarray(groups, bool))
"""


def compas_problem():
    import polars as pl

    from fairscan.engine import audit_bootstrap as ab
    from fairscan.engine.audit_groups import intersections

    df = pl.read_csv(ROOT / "build" / "compas.csv")
    codes, labels = [], []
    for c in ("race", "sex", "age_cat"):
        u, inv = np.unique(df[c].to_numpy().astype(str), return_inverse=True)
        codes.append(inv)
        labels.append(tuple(u))
    gc = intersections(np.stack(codes, 1), labels, ["race", "sex", "age_cat"])
    y = df["two_year_recid"].to_numpy()
    f = df["high_risk"].to_numpy().astype(float)
    pop = y == 0
    prob = ab.AuditProblem(f, pop, gc.atom, gc.atom_groups, reference=pop.copy())
    return prob, gc


def bench_compas() -> tuple[float, object, object]:
    from fairscan.engine import audit_bootstrap as ab

    prob, gc = compas_problem()
    best = np.inf
    for _ in range(5):
        t = time.perf_counter()
        out = ab.flag(prob, B=500, alpha=0.1, seed=np.random.SeedSequence(0), tolerance=0.05)
        best = min(best, time.perf_counter() - t)
    print(
        f"fairscan COMPAS flag: {best:.4f} s, {int(out.flagged.sum())} flagged of {int(out.tested.sum())}"
    )
    return best, out, gc


def compare_flags(out, gc, npz: Path) -> None:
    """Match fairaudit's flagged columns to fairscan's groups by row membership."""
    fa = np.load(npz)
    M = gc.membership().toarray().astype(bool)
    key = {M[:, j].tobytes(): gc.names[j] for j in range(M.shape[1])}
    fa_names = {key.get(col.tobytes(), "?") for col in fa["groups"][:, fa["flags"]].T}
    ours = {gc.names[j] for j in np.flatnonzero(out.flagged)}
    print(f"flagged by both: {len(ours & fa_names)}")
    print(f"only fairscan: {sorted(ours - fa_names)}")
    print(f"only fairaudit: {sorted(fa_names - ours)}")
    for name in sorted(ours | fa_names):
        j = gc.names.index(name) if name in gc.names else None
        if j is not None and (name not in ours or name not in fa_names):
            print(
                f"  {name}: gap {out.moments.eps[j]:+.4f}, p {out.p_value[j]:.4f}, "
                f"adj {out.adjusted[j]:.4f}, n {int(out.moments.count[j])}"
            )


def simulations(trials_cov: int, trials_fdr: int) -> None:
    """methods.md §5.10 items 5-6 at full size (B = 500); helpers in tests/engine."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    import test_audit_simulation as sim

    t = time.perf_counter()
    res = sim.coverage_simulation(trials_cov, n=1600, B=500, alpha=0.1, seed=2025)
    print(f"coverage simulation: {trials_cov} datasets, n=1600, B=500, alpha=0.1, 55 intervals")
    for variant, kinds in res.items():
        cells = ", ".join(f"{k} {c:.3f} (SE {se:.3f})" for k, (c, se) in kinds.items())
        print(f"  {variant}: {cells}")
    res = sim.fdr_simulation(trials_fdr, B=500, alpha=0.1, seed=2026)
    print(f"FDR simulation ({trials_fdr} datasets, {sim.FDR_SETTING}, B=500, alpha=0.1):")
    print(
        f"  FDR {res['fdr'][0]:.4f} (SE {res['fdr'][1]:.4f}), "
        f"power {res['power'][0]:.4f} (SE {res['power'][1]:.4f}), "
        f"P(null p <= 0.1) {res['null_p_below_alpha']:.4f} over {res['null_p_count']}"
    )
    print(f"  simulations took {time.perf_counter() - t:.0f} s")


def bench_large(binary: bool) -> float:
    from fairscan.engine import audit_bootstrap as ab
    from fairscan.engine.audit_groups import intersections

    rng = np.random.default_rng(0)
    n = 1_000_000
    codes = rng.integers(0, 9, size=(n, 4))
    L = (rng.random(n) < 0.3).astype(float) if binary else rng.exponential(size=n)
    t0, c0 = time.perf_counter(), time.process_time()
    gc = intersections(codes, [tuple(str(i) for i in range(9))] * 4, list("abcd"), include_all=True)
    prob = ab.AuditProblem(L, np.ones(n, bool), gc.atom, gc.atom_groups, reference=np.ones(n, bool))
    out = ab.flag(prob, B=500, alpha=0.1, seed=np.random.SeedSequence(0), tolerance=0.0)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    kind = "binary L" if binary else "continuous L"
    print(
        f"fairscan 1e6 rows x {gc.n_groups} groups, B=500, {kind}: {dt:.1f} s wall, {cpu:.1f} s CPU ({out.info.path} path)"
    )
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--fairaudit-python", default=str(ROOT / "benchmarks/.venv-fairaudit/bin/python")
    )
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--skip-fairaudit", action="store_true")
    ap.add_argument("--simulate", action="store_true", help="run the §5.10 simulations")
    ap.add_argument("--trials", type=int, default=500)
    args = ap.parse_args()
    print("load:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if args.simulate:
        simulations(args.trials, args.trials)
        return
    ours, out, gc = bench_compas()
    if Path(args.fairaudit_python).exists() and not args.skip_fairaudit:
        npz = Path(tempfile.mkdtemp()) / "fairaudit_flags.npz"
        code = FAIRAUDIT_SNIPPET.format(csv=ROOT / "build" / "compas.csv", npz=npz)
        res = subprocess.run([args.fairaudit_python, "-c", code], capture_output=True, text=True)
        if res.returncode == 0:
            secs, flagged, groups = res.stdout.split()
            print(
                f"fairaudit 0.0.1 COMPAS flag: {float(secs):.2f} s, {flagged} flagged of {groups} groups"
            )
            print(f"speed-up: {float(secs) / ours:.0f}x")
            compare_flags(out, gc, npz)
        else:
            print("fairaudit failed:", res.stderr[-2000:], file=sys.stderr)
    if not args.skip_large:
        bench_large(True)
        bench_large(False)


if __name__ == "__main__":
    main()
