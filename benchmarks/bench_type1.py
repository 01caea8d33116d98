"""Type-I error of the scores beyond Bernoulli, by simulation under a true null.

Run by hand from the repository root (not collected by pytest; tests/engine/test_type1_scores.py
runs a smaller version as slow tests)::

    .venv/bin/python benchmarks/bench_type1.py --sims 500 --replicates 99 --json build/type1.json
    .venv/bin/python benchmarks/bench_type1.py --path engine ...   # the engine API directly

Every scenario draws a table whose outcomes follow the model's own distribution (no subgroup
differs from what the scan's null hypothesis says), audits it with the scan, and records the
randomization p-value of the top finding (1 when there is none). A scan is not
anti-conservative at level a when its rejection rate P(p <= a) stays within the binomial
sampling error of a: rate <= a + 2.5 * sqrt(a (1 - a) / sims). Replicate counts R with
a (R + 1) an integer (19, 39, 99, 199, ...) make the Monte-Carlo test exact at a = 0.05, 0.1.

Scenarios (attributes a: 3 values, b: 4, c: 2; ``--rows`` rows; penalty 0; ``--restarts``):

* ``poisson``: ``outcome_type: count, score: poisson``; y ~ Poisson(lam_i), lam_i in [0.3, 4]
  depending on a, b and a per-row factor; prediction = lam.
* ``ordinal-binomial``: ``outcome_type: ordinal, score: poisson``, no prediction (the overall
  mean); codes y ~ Binomial(4, 0.5) iid (0..4: less dispersed than Poisson).
* ``ordinal-uniform``: the same with y uniform on 1..10, iid (decile scores: more dispersed than
  Poisson, variance 8.25 against mean 5.5): Poisson(mean) draws would not be the data's law.
* ``gaussian-pooled``: ``outcome_type: continuous, score: gaussian`` (one pooled variance);
  y = prediction + N(0, 2^2).
* ``gaussian-per-row``: the same with ``variance_column``: y = prediction + N(0, s_i^2),
  s_i in [0.5, 3] per row.
* ``berk-jones``: ``type: fpr_scan, score: berk_jones, alpha: 0.3``; recommendations of true
  negatives ~ Bernoulli(0.25) iid (the FPR-Scan null: one overall FPR).
* ``berk-jones-grid``: the same with ``alpha: [0.01, 0.05, 0.1]`` and an FPR of 0.06 (every
  level below the FPR: the whole population dominates the statistic).
* ``nominal``: ``outcome_type: nominal`` with ``class_probabilities`` of three classes (varying
  by a, c and per row); the class drawn from them.
* ``berk-jones-grid-above``: ``alpha: [0.05, 0.1, 0.2]`` and an FPR of 0.04 (every level above).
* ``berk-jones-bias``: ``type: bias_scan, score: berk_jones, alpha: 0.3`` on a binary outcome
  y ~ Bernoulli(p_i) with the prediction p_i (the null redraws from the predictions).

``--path spec`` (the default) runs each simulation through the public API
(``fairscan.audit(frame, scans=[...])``, the same validation and runner as ``audit run``);
``--path engine`` calls ``fairscan.engine.scores`` / ``randomization`` directly, which is what
the spec path does underneath. The ordinal scan's null permutes the residuals (outcome -
expectation) over the rows, as the scan does; ``--ordinal-null poisson`` (engine path only)
draws Poisson(expectation) per row instead, the null law of counts, to show what that law does
to ordinal codes. The machine may be shared: run one process at a time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
ATTRS = ("a", "b", "c")
CARD = (3, 4, 2)
LEVELS = (0.05, 0.1)


@dataclass(frozen=True)
class Scenario:
    name: str
    make: Callable[[np.random.Generator, int], pl.DataFrame]
    columns: dict
    scan: dict
    note: str


def _attributes(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {a: rng.integers(0, k, n) for a, k in zip(ATTRS, CARD, strict=True)}


def _frame(codes: dict[str, np.ndarray], **columns: np.ndarray) -> pl.DataFrame:
    data = {a: np.array([f"{a}{v}" for v in codes[a]]) for a in ATTRS}
    return pl.DataFrame({**data, **columns})


def make_poisson(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    lam = 0.3 + 0.5 * x["a"] + 0.3 * x["b"]
    lam = np.round(lam * rng.choice([0.8, 1.0, 1.25], n), 6)
    return _frame(x, y=rng.poisson(lam), lam=lam)


def make_ordinal_binomial(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    return _frame(x, y=rng.binomial(4, 0.5, n))


def make_ordinal_uniform(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    return _frame(x, y=rng.integers(1, 11, n))


def make_gaussian_pooled(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    pred = 10.0 + 1.5 * x["a"] - 0.7 * x["b"] + rng.normal(0.0, 1.0, n)
    return _frame(x, y=pred + rng.normal(0.0, 2.0, n), pred=pred)


def make_gaussian_per_row(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    pred = 10.0 + 1.5 * x["a"] - 0.7 * x["b"] + rng.normal(0.0, 1.0, n)
    sd = 0.5 + 0.6 * x["b"] + rng.uniform(0.0, 0.7, n)  # depends on an attribute
    return _frame(x, y=pred + rng.normal(0.0, sd), pred=pred, var=sd**2)


def _fpr_frame(rng: np.random.Generator, n: int, fpr: float) -> pl.DataFrame:
    x = _attributes(rng, n)
    y = (rng.random(n) < 0.4).astype(np.int64)
    rec = np.where(y == 1, rng.random(n) < 0.7, rng.random(n) < fpr).astype(np.int64)
    return _frame(x, y=y, rec=rec)


def make_berk_jones(rng: np.random.Generator, n: int) -> pl.DataFrame:
    return _fpr_frame(rng, n, 0.25)


def make_berk_jones_grid(rng: np.random.Generator, n: int) -> pl.DataFrame:
    return _fpr_frame(rng, n, 0.06)


def make_berk_jones_grid_above(rng: np.random.Generator, n: int) -> pl.DataFrame:
    return _fpr_frame(rng, n, 0.04)


def make_berk_jones_bias(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    p = np.round(0.1 + 0.08 * x["a"] + 0.04 * x["b"] + rng.uniform(0.0, 0.1, n), 6)
    return _frame(x, y=(rng.random(n) < p).astype(np.int64), p=p)


def make_nominal(rng: np.random.Generator, n: int) -> pl.DataFrame:
    x = _attributes(rng, n)
    eta = np.column_stack(
        [0.4 * x["a"] - 0.3 + rng.normal(0, 0.5, n), 0.5 * x["c"] + rng.normal(0, 0.5, n)]
    )
    eta = np.column_stack([eta, np.zeros(n)])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p_a = np.round(p[:, 0], 6)
    p_b = np.round(p[:, 1], 6)
    p_c = np.round(1.0 - p_a - p_b, 6)
    probs = np.column_stack([p_a, p_b, p_c])
    u = rng.random(n)
    cls = (u[:, None] > np.cumsum(probs, axis=1)[:, :2]).sum(axis=1)
    return _frame(x, g=np.array(["A", "B", "C"])[cls], p_A=p_a, p_B=p_b, p_C=p_c)


BIAS = {"type": "bias_scan", "direction": "positive"}
SCENARIOS = [
    Scenario(
        "poisson",
        make_poisson,
        {},
        {**BIAS, "outcome": "y", "prediction": "lam", "outcome_type": "count", "score": "poisson"},
        "y ~ Poisson(lam_i)",
    ),
    Scenario(
        "ordinal-binomial",
        make_ordinal_binomial,
        {},
        {**BIAS, "outcome": "y", "outcome_type": "ordinal", "score": "poisson"},
        "codes ~ Binomial(4, 0.5) iid; prediction: overall mean",
    ),
    Scenario(
        "ordinal-uniform",
        make_ordinal_uniform,
        {},
        {**BIAS, "outcome": "y", "outcome_type": "ordinal", "score": "poisson"},
        "codes ~ uniform 1..10 iid (decile-like); prediction: overall mean",
    ),
    Scenario(
        "gaussian-pooled",
        make_gaussian_pooled,
        {},
        {
            **BIAS,
            "outcome": "y",
            "prediction": "pred",
            "outcome_type": "continuous",
            "score": "gaussian",
        },
        "y = pred + N(0, 4), pooled variance",
    ),
    Scenario(
        "gaussian-per-row",
        make_gaussian_per_row,
        {},
        {
            **BIAS,
            "outcome": "y",
            "prediction": "pred",
            "outcome_type": "continuous",
            "score": "gaussian",
            "variance_column": "var",
        },
        "y = pred + N(0, s_i^2), variance_column",
    ),
    Scenario(
        "berk-jones",
        make_berk_jones,
        {"outcome": "y", "recommendation": "rec"},
        {"type": "fpr_scan", "score": "berk_jones", "alpha": 0.3},
        "fpr_scan, FPR 0.25, alpha 0.3",
    ),
    Scenario(
        "berk-jones-grid",
        make_berk_jones_grid,
        {"outcome": "y", "recommendation": "rec"},
        {"type": "fpr_scan", "score": "berk_jones", "alpha": [0.01, 0.05, 0.1]},
        "fpr_scan, FPR 0.06, alpha [0.01, 0.05, 0.1]",
    ),
    Scenario(
        "nominal",
        make_nominal,
        {},
        {
            **BIAS,
            "outcome": "g",
            "outcome_type": "nominal",
            "class_probabilities": {"A": "p_A", "B": "p_B", "C": "p_C"},
        },
        "3 classes drawn from class_probabilities",
    ),
    Scenario(
        "berk-jones-grid-above",
        make_berk_jones_grid_above,
        {"outcome": "y", "recommendation": "rec"},
        {"type": "fpr_scan", "score": "berk_jones", "alpha": [0.05, 0.1, 0.2]},
        "fpr_scan, FPR 0.04, alpha [0.05, 0.1, 0.2]",
    ),
    Scenario(
        "berk-jones-bias",
        make_berk_jones_bias,
        {"outcome": "y", "prediction": "p"},
        {**BIAS, "score": "berk_jones", "alpha": 0.3},
        "bias_scan, y ~ Bernoulli(p_i), p_i in [0.1, 0.48], alpha 0.3",
    ),
]


# --------------------------------------------------------------------------------------------
# One simulation: the spec path and the engine path
# --------------------------------------------------------------------------------------------


def p_spec(sc: Scenario, frame: pl.DataFrame, seed: int, args) -> float:
    import fairscan

    report = fairscan.audit(
        frame,
        columns=sc.columns,
        attributes=list(ATTRS),
        scans=[{"id": "s", **sc.scan, "penalty": 0, "restarts": args.restarts}],
        significance={"replicates": args.replicates, "alpha": 0.05, "seed": seed, "workers": 1},
    )
    scan = report.scans[0]
    if getattr(scan, "error", None):
        raise RuntimeError(f"{sc.name}: scan error {scan.error}")
    if not scan.findings:
        return 1.0
    p = scan.findings[0].p_value
    return 1.0 if p is None else float(p)


def _codes(frame: pl.DataFrame) -> np.ndarray:
    return np.column_stack(
        [np.unique(frame[a].to_numpy(), return_inverse=True)[1].reshape(-1) for a in ATTRS]
    ).astype(np.int32)


def p_engine(sc: Scenario, frame: pl.DataFrame, seed: int, args) -> float:
    from fairscan.engine import scores
    from fairscan.engine.cells import compress
    from fairscan.engine.mdss import ScanProblem
    from fairscan.engine.randomization import (
        NominalReplicate,
        NullSettings,
        null_scores,
        p_value,
        run_replicates,
    )
    from fairscan.engine.seeds import child_seed, search_seed

    root = np.random.SeedSequence(seed)
    search_s = search_seed(child_seed(root, 0))
    null_seed = child_seed(root, 1)
    settings = NullSettings(1, 0.0, args.restarts)
    codes = _codes(frame)
    scan = sc.scan

    def test(cells, score, draw, residuals=None) -> float:
        best = scores.best_subgroup(
            cells, score, direction=1, penalty=0.0, restarts=args.restarts, seed=search_s
        ).best
        if best.score <= 0.0:
            return 1.0
        null = null_scores(
            cells,
            settings,
            null_seed,
            args.replicates,
            draw=draw,
            score=score,
            workers=1,
            residuals=residuals,
        )
        return p_value(best.score, null)[0]

    if scan.get("score") == "poisson":
        y = frame["y"].to_numpy().astype(np.float64)
        expected = (
            frame[scan["prediction"]].to_numpy().astype(np.float64)
            if "prediction" in scan
            else np.full(y.shape, y.mean())
        )
        cells = ScanProblem.build(codes, y, expected, clip=False).cells()
        if scan["outcome_type"] == "ordinal" and args.ordinal_null == "permutation":
            # as the scan does: the residuals (outcome - expectation) permuted over the rows
            return test(cells, scores.POISSON, "permutation", residuals=y - expected)
        return test(cells, scores.POISSON, "poisson")
    if scan.get("score") == "gaussian":
        delta = (frame["y"] - frame["pred"]).to_numpy()
        if "variance_column" in scan:
            var = frame[scan["variance_column"]].to_numpy()
        else:
            var = np.full(delta.shape, float(np.mean(delta**2)))
        problem = ScanProblem.build(codes, delta / var, np.zeros(delta.shape), clip=False)
        cells = compress(
            problem.codes, delta / var, np.zeros(delta.shape), problem.cardinality, weight=1 / var
        )
        return test(cells, scores.gaussian(), "gaussian")
    if scan.get("score") == "berk_jones" and scan["type"] == "bias_scan":
        y = frame["y"].to_numpy().astype(np.float64)
        cells = ScanProblem.build(codes, y, frame["p"].to_numpy()).cells()
        return test(cells, scores.berk_jones(scan["alpha"]), "binomial")
    if scan.get("score") == "berk_jones":
        rows = frame["y"].to_numpy() == 0
        rec = frame["rec"].to_numpy()[rows].astype(np.float64)
        cells = ScanProblem.build(codes[rows], rec, np.full(rec.shape, rec.mean())).cells()
        return test(cells, scores.berk_jones(scan["alpha"]), "binomial")
    if scan.get("outcome_type") == "nominal":
        labels = list(scan["class_probabilities"])
        probs = np.column_stack([frame[scan["class_probabilities"][k]].to_numpy() for k in labels])
        g = frame["g"].to_numpy()
        class_cells, best = [], 0.0
        for k, label in enumerate(labels):
            obs = (g == label).astype(np.float64)
            cells = ScanProblem.build(codes, obs, probs[:, k]).cells()
            class_cells.append(cells)
            found = scores.best_subgroup(
                cells,
                scores.BERNOULLI,
                direction=1,
                penalty=0.0,
                restarts=args.restarts,
                seed=search_seed(child_seed(root, 0, k)),
            )
            best = max(best, found.best.score)
        if best <= 0.0:
            return 1.0
        job = NominalReplicate(tuple(class_cells), probs, settings, null_seed)
        return p_value(best, run_replicates(job, args.replicates, workers=1))[0]
    raise ValueError(sc.name)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def bound(level: float, sims: int) -> float:
    return level + 2.5 * math.sqrt(level * (1 - level) / sims)


def simulate(sc: Scenario, args) -> dict:
    run = p_spec if args.path == "spec" else p_engine
    p_values = []
    t0 = time.perf_counter()
    for k in range(args.sims):
        rng = np.random.default_rng([args.seed, SCENARIOS.index(sc), k])
        frame = sc.make(rng, args.rows)
        p_values.append(run(sc, frame, 1_000_000 * SCENARIOS.index(sc) + k, args))
    seconds = time.perf_counter() - t0
    p = np.array(p_values)
    rec = {
        "scenario": sc.name,
        "note": sc.note,
        "scan": sc.scan,
        "sims": args.sims,
        "seconds": seconds,
        "p_values": p.tolist(),
    }
    for level in LEVELS:
        rate = float(np.mean(p <= level + 1e-12))
        rec[f"rate_{level}"] = rate
        rec[f"bound_{level}"] = bound(level, args.sims)
        rec[f"ok_{level}"] = rate <= bound(level, args.sims)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", choices=["spec", "engine"], default="spec")
    ap.add_argument("--sims", type=int, default=500)
    ap.add_argument("--replicates", type=int, default=99)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--only", nargs="+", default=None, help="scenario names")
    ap.add_argument(
        "--ordinal-null",
        choices=["permutation", "poisson"],
        default="permutation",
        help="engine path: null draws of the ordinal scenarios (the scan permutes residuals)",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.ordinal_null != "permutation" and args.path != "engine":
        ap.error("--ordinal-null poisson needs --path engine")
    chosen = [s for s in SCENARIOS if args.only is None or s.name in args.only]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    env = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "commit": commit,
        "python": platform.python_version(),
        "nproc": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "settings": {k: v for k, v in vars(args).items() if k != "json"} | {"json": None},
    }
    print(f"environment: {env}")
    print("| scenario | null | sims | P(p <= 0.05) | bound | P(p <= 0.1) | bound | ok | time |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = []
    for sc in chosen:
        rec = simulate(sc, args)
        results.append(rec)
        ok = "yes" if rec["ok_0.05"] and rec["ok_0.1"] else "**no**"
        print(
            f"| `{sc.name}` | {sc.note} | {rec['sims']} | {rec['rate_0.05']:.3f} | "
            f"{rec['bound_0.05']:.3f} | {rec['rate_0.1']:.3f} | {rec['bound_0.1']:.3f} | {ok} | "
            f"{rec['seconds']:.0f} s |",
            flush=True,
        )
    env["loadavg_end"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "results": results}, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
