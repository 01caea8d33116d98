"""Semi-synthetic CBS evaluation (methods.md §3.8): Jaccard accuracy on any covariate table.

    python scripts/cbs_evaluate.py build/compas.csv --attributes sex race age_group \
        c_charge_degree priors --mu-sep 0.5 --datasets 20 --scans sep-rec sep-pred

Prints the mean (and SD) Jaccard accuracy per scan over the generated datasets, as JSON
with --json. Deterministic for a given --seed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    import polars as pl

    # the evaluation harness lives with the benchmarks, outside the installed package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from cbs_synth import SIM_SCANS, Injection, evaluate_once, generate

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("table", help="CSV with the covariates")
    ap.add_argument("--attributes", nargs="+", required=True, help="categorical covariates")
    ap.add_argument("--mu-sep", type=float, default=0.0)
    ap.add_argument("--mu-suf", type=float, default=0.0)
    ap.add_argument("--delta", type=float, default=0.0)
    ap.add_argument("--n-bias", type=int, default=2)
    ap.add_argument("--p-bias", type=float, default=0.5)
    ap.add_argument("--sigma-true", type=float, default=0.6)
    ap.add_argument("--sigma-predict", type=float, default=0.2)
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--restarts", type=int, default=50)
    ap.add_argument("--penalty", type=float, default=1.0)
    ap.add_argument("--scans", nargs="+", default=list(SIM_SCANS), choices=list(SIM_SCANS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sigma", default="1", help="Gaussian scans: 1 (default), sd, or a number")
    ap.add_argument("--regularization", choices=["none", "l2"], default="none")
    ap.add_argument("--C", type=float, default=1.0, dest="c", help="with --regularization l2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    frame = pl.read_csv(args.table, columns=args.attributes, infer_schema_length=0)
    codes = np.column_stack(
        [
            np.unique(frame[c].fill_null("(missing)").to_numpy().astype(str), return_inverse=True)[
                1
            ]
            for c in args.attributes
        ]
    )
    injection = Injection(
        mu_sep=args.mu_sep,
        mu_suf=args.mu_suf,
        delta=args.delta,
        n_bias=args.n_bias,
        p_bias=args.p_bias,
        sigma_true=args.sigma_true,
        sigma_predict=args.sigma_predict,
    )
    sigma: float | str = args.sigma if args.sigma == "sd" else float(args.sigma)
    root = np.random.SeedSequence(args.seed)
    started = time.perf_counter()
    scores: dict[str, list[float]] = {s: [] for s in args.scans}
    for i, child in enumerate(root.spawn(args.datasets)):
        rng = np.random.default_rng(child)
        dataset = generate(codes, injection, rng)
        for name, value in evaluate_once(
            dataset,
            args.scans,
            args.restarts,
            args.penalty,
            seed=i,
            sigma=sigma,
            regularization=args.regularization,
            l2_c=args.c,
        ).items():
            scores[name].append(value)
    result = {
        "table": args.table,
        "rows": int(codes.shape[0]),
        "injection": vars(injection),
        "datasets": args.datasets,
        "restarts": args.restarts,
        "penalty": args.penalty,
        "sigma": sigma,
        "regularization": args.regularization,
        "seed": args.seed,
        "seconds": time.perf_counter() - started,
        "jaccard_mean": {k: float(np.mean(v)) for k, v in scores.items()},
        "jaccard_sd": {k: float(np.std(v)) for k, v in scores.items()},
    }
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        for k in args.scans:
            print(
                f"{k:9s} mean Jaccard {result['jaccard_mean'][k]:.3f} "
                f"(sd {result['jaccard_sd'][k]:.3f}, {args.datasets} datasets)"
            )
        print(f"{result['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
