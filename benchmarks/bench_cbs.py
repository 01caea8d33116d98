"""CBS benchmark: COMPAS scan and permutation-test speed, semi-synthetic Jaccard accuracy.

    python benchmarks/bench_cbs.py [--replicates 999] [--workers 2] [--datasets 20]
        [--sigma 1|sd|<number>] [--regularization none|l2] [--C 1]

Needs build/compas.csv (python scripts/prepare_compas.py). Results go to the CBS section of
benchmarks/RESULTS.md by hand. The defaults are the scan's (sigma 1, unregularised logistic
models); ``--sigma sd --regularization l2`` gives the earlier defaults.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCANS = {
    "sep-pred-fpe": ("separation", "predictions", 0, 1),
    "sep-rec-fpr": ("separation", "recommendations", 0, 1),
    "suf-pred-cal": ("sufficiency", "predictions", None, -1),
    "suf-rec-ppv": ("sufficiency", "recommendations", 1, -1),
}


def compas():
    import polars as pl

    from fairscan.engine import cbs

    df = pl.read_csv(ROOT / "build" / "compas.csv")
    cols = ["sex", "age_group", "c_charge_degree", "priors"]
    codes = np.column_stack(
        [np.unique(df[c].to_numpy().astype(str), return_inverse=True)[1] for c in cols]
    ).astype(np.int32)
    features = np.hstack(
        [np.eye(codes[:, j].max() + 1)[codes[:, j]][:, 1:] for j in range(len(cols))]
    )
    data = cbs.CbsData(
        codes=codes,
        features=features,
        outcome=df["two_year_recid"].to_numpy().astype(float),
        prediction=df["prob_decile"].to_numpy().astype(float),
        recommendation=df["high_risk"].to_numpy().astype(float),
    )
    return data, df["race"].to_numpy() == "African-American"


def main() -> None:
    from cbs_synth import Injection, evaluate_once, generate

    from fairscan.engine import cbs
    from fairscan.engine.randomization import run_replicates, summarize
    from fairscan.engine.seeds import child_seed, search_seed

    ap = argparse.ArgumentParser()
    ap.add_argument("--replicates", type=int, default=999)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--sigma", default="1", help="1 (default), sd, or a positive number")
    ap.add_argument("--regularization", choices=["none", "l2"], default="none")
    ap.add_argument("--C", type=float, default=1.0, dest="c", help="with --regularization l2")
    args = ap.parse_args()
    sigma: float | str = args.sigma if args.sigma == "sd" else float(args.sigma)
    data, a = compas()
    out: dict[str, object] = {}
    root = np.random.SeedSequence(0)
    for name, (family, on, cond, direction) in SCANS.items():
        s = cbs.CbsSettings(
            family,
            on,
            cond,
            1,
            direction,
            1.0,
            500,
            sigma=sigma,
            regularization=args.regularization,
            l2_c=args.c,
        )
        cbs.run(data, s, a, 1)  # warm-up (JIT cache)
        t0 = time.perf_counter()
        res = cbs.run(data, s, a, search_seed(child_seed(root, 0)))
        t1 = time.perf_counter()
        row: dict[str, object] = {"scan_seconds": t1 - t0, "J": res.best.score, "F": res.best.llr}
        if args.replicates:
            job = cbs.CbsPermutation(data, a, s, child_seed(root, 1))
            t2 = time.perf_counter()
            scores = run_replicates(job, args.replicates, workers=args.workers)
            row["permutation_seconds"] = time.perf_counter() - t2
            row["p_value"] = summarize(res.best.score, scores, 0.05).p_value
        out[name] = row
        print(name, json.dumps(row), flush=True)
    # semi-synthetic: mu_sep = 0.5 on the COMPAS covariates (race included as a candidate A)
    import polars as pl

    df = pl.read_csv(ROOT / "build" / "compas.csv")
    cols = ["sex", "race", "age_group", "c_charge_degree", "priors"]
    codes = np.column_stack(
        [np.unique(df[c].to_numpy().astype(str), return_inverse=True)[1] for c in cols]
    )
    acc: dict[str, list[float]] = {"sep-rec": [], "sep-pred": []}
    t0 = time.perf_counter()
    for i, child in enumerate(np.random.SeedSequence(0).spawn(args.datasets)):
        ds = generate(codes, Injection(mu_sep=0.5), np.random.default_rng(child))
        for k, v in evaluate_once(
            ds,
            list(acc),
            50,
            1.0,
            seed=i,
            sigma=sigma,
            regularization=args.regularization,
            l2_c=args.c,
        ).items():
            acc[k].append(v)
    out["jaccard_mu_sep_0.5"] = {k: float(np.mean(v)) for k, v in acc.items()}
    out["jaccard_seconds"] = time.perf_counter() - t0
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
