"""Brute-force oracle results on COMPAS (FPR-Scan, TPR-Scan, Bias Scan).

Needs the derived table from ``python scripts/prepare_compas.py`` (default ``build/compas.csv``).
Reads it with the csv module and scores every rectangular subgroup with ``brute_force.py``
(no fairscan import).

Cases (attributes: sex, race, age_group, c_charge_degree, priors):

* FPR-Scan  — rows with ``two_year_recid == 0``; observed ``high_risk``; expectation = mean of
  ``high_risk`` over those rows (constant, closed form); positive direction.
* TPR-Scan  — same on rows with ``two_year_recid == 1``.
* Bias Scan — all rows; observed ``two_year_recid``; expectation ``prob_decile`` (numeric
  maximisation over log q); negative direction (over-estimated probabilities).

Usage::

    python tests/oracle/compas_fpr_oracle.py [--csv build/compas.csv]
        [--penalties 1 1e-17 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brute_force import brute_force_scan, score_records

REPO_ROOT = Path(__file__).resolve().parents[2]
ATTRIBUTES = ["sex", "race", "age_group", "c_charge_degree", "priors"]


def load(path: Path) -> dict[str, list[str]]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise SystemExit(f"{path}: empty")
    return {k: [r[k] for r in rows] for k in rows[0]}


def encode(cols: dict[str, list[str]], mask: np.ndarray):
    codes, labels = [], []
    for a in ATTRIBUTES:
        vals = np.asarray(cols[a])[mask]
        levels, inv = np.unique(vals, return_inverse=True)
        codes.append(inv.ravel())
        labels.append(levels.tolist())
    return np.column_stack(codes), labels


def rescore(codes, labels, obs, exp, subgroup, direction):
    """Re-score the reported subgroup from the raw records (independent of the aggregation)."""
    mask = np.ones(len(obs), dtype=bool)
    for j, a in enumerate(ATTRIBUTES):
        if a in subgroup:
            allowed = [labels[j].index(v) for v in subgroup[a]]
            mask &= np.isin(codes[:, j], allowed)
    F, _q = score_records(obs[mask], exp[mask], direction)
    return F, int(mask.sum())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=REPO_ROOT / "build" / "compas.csv")
    ap.add_argument("--penalties", type=float, nargs="+", default=[1.0, 1e-17, 0.0])
    ap.add_argument("--json", type=Path, default=None, help="also write results as JSON")
    args = ap.parse_args(argv)
    if not args.csv.is_file():
        print(
            f"{args.csv} not found; run `python scripts/prepare_compas.py` first",
            file=sys.stderr,
        )
        return 2

    cols = load(args.csv)
    y = np.asarray(cols["two_year_recid"], dtype=int)
    hr = np.asarray(cols["high_risk"], dtype=float)
    pdec = np.asarray(cols["prob_decile"], dtype=float)
    print(f"{args.csv}: {len(y)} rows")

    cases = []
    for name, keep in (("FPR-Scan", y == 0), ("TPR-Scan", y == 1)):
        obs = hr[keep]
        cases.append((name, keep, obs, np.full(obs.shape, obs.mean()), "positive"))
    allrows = np.ones(len(y), dtype=bool)
    cases.append(("BiasScan-neg", allrows, y.astype(float), pdec, "negative"))

    results = []
    for name, keep, obs, exp, direction in cases:
        codes, labels = encode(cols, keep)
        const = bool(np.all(exp == exp[0]))
        print(
            f"\n== {name}: n={len(obs)}, observed sum={obs.sum():g}, "
            f"expectation={f'{exp[0]:.10f} (constant)' if const else 'prob_decile'}, "
            f"direction={direction}, arities={[len(lv) for lv in labels]}"
        )
        for pen in args.penalties:
            t0 = time.perf_counter()
            res = brute_force_scan(codes, obs, exp, direction, pen, names=ATTRIBUTES, labels=labels)
            dt = time.perf_counter() - t0
            F_re, n_re = rescore(codes, labels, obs, exp, res.subgroup, direction)
            extra = {}
            if const:  # cross-check the closed form against the numeric path
                res_num = brute_force_scan(
                    codes,
                    obs,
                    exp,
                    direction,
                    pen,
                    names=ATTRIBUTES,
                    labels=labels,
                    method="numeric",
                )
                extra = {
                    "numeric_J": res_num.J,
                    "numeric_subgroup": res_num.subgroup,
                    "closed_vs_numeric_absdiff": abs(res_num.J - res.J),
                }
            print(f"  penalty={pen:g}: {res.describe()}  [{res.n_subgroups} subgroups, {dt:.3f}s]")
            print(f"     re-scored from records: F={F_re:.9f} n={n_re}")
            if extra:
                print(
                    f"     numeric path: J={extra['numeric_J']:.9f} "
                    f"{extra['numeric_subgroup']} |diff|={extra['closed_vs_numeric_absdiff']:.2e}"
                )
            if res.n_ties > 1:
                print(f"     {res.n_ties} tied subgroups (first {len(res.ties)}): {res.ties}")
            results.append(
                {
                    "case": name,
                    "penalty": pen,
                    "direction": direction,
                    "n_rows": len(obs),
                    "subgroup": {k: list(v) for k, v in res.subgroup.items()},
                    "J": res.J,
                    "F": res.F,
                    "complexity": res.complexity,
                    "n": res.n,
                    "observed_sum": res.observed_sum,
                    "expected_sum": res.expected_sum,
                    "q_hat": res.q_hat,
                    "n_ties": res.n_ties,
                    "n_subgroups": res.n_subgroups,
                    "rescored_F": F_re,
                    "seconds": dt,
                    **{k: v for k, v in extra.items() if k != "numeric_subgroup"},
                }
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
