"""IJDI-Scan benchmark (issue: IJDI-Scan, methods.md §4): Experiment 1 and speed on COMPAS.

Experiment 1 (sharp threshold, methods.md §4.7): the real COMPAS covariates (sex, race,
age_group, c_charge_degree, priors) with synthetic base rates. A true subgroup S gets
p_i ~ U[0.51 - 0.01k, 0.51 + 0.01k], everyone else U[0.49 - 0.01k, 0.49 + 0.01k]; the
prediction is p_i, the recommendation 1{p_i > 0.5}, y_i ~ Bernoulli(p_i), and the base rate
column is p_i itself. For k in {0, 1, 3, 10} and lambda on a grid around the theoretical
cut-off lambda*, the IJDI loop (`fairscan.engine.ijdi.ijdi_loop`, penalty 0) runs on the
negatives (and, for one k, the positives); reported: mean IoU of the detected subgroup's
records with S's records among the scanned rows (0 when F(S*) = 0), the share of runs with
F(S*) > 0, and the share of runs whose S* actually violates the IJDI criterion
FPR(S*) - FPR(~S*) > lambda * max(p(S*) - p(~S*), 0) (original p_i). Within one run the same
synthetic data are scanned at every lambda (common random numbers).

S: by default {race: African-American, sex: Male} in every run (`--subgroup fixed`);
`--subgroup random` draws per run two distinct attributes and one value of each, among the
combinations covering at least 5 % of the rows.

Speed: the full IJDI-Scan with 999 null replicates through `fairscan.api.run_audit` (temporary
spec, workers = default), negatives, threshold 0.45 (rule gt), lambda 1, penalty 1: base rate
prob_decile with 500 and 100 restarts, and the base rate estimated by logistic regression on
the 5 scan attributes (500 and 100 restarts).

Usage: .venv/bin/python benchmarks/bench_ijdi.py [--quick] [--runs N] [--restarts R]
       [--subgroup fixed|random] [--skip-speed] [--skip-experiment] [--write PATH]
`--write PATH` writes the raw tables; benchmarks/RESULTS_ijdi.md adds the analysis by hand.
The replicates use spawn-context process pools, hence the ``__main__`` guard.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from fairscan.engine.ijdi import IjdiCells, ijdi_loop
from fairscan.engine.mdss import ScanProblem

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "build" / "compas.csv"
ATTRIBUTES = ["sex", "race", "age_group", "c_charge_degree", "priors"]
FIXED_SUBGROUP = {"race": "African-American", "sex": "Male"}
KS = [0, 1, 3, 10]
LAMBDA_FACTORS = [0.25, 0.5, 0.8, 0.95, 1.05, 1.25, 2.0, 4.0]
POSITIVES_K = 3
MIN_SUBGROUP_SHARE = 0.05
# A fully censored subgroup (every expectation clipped to 1 - 1e-6, every recommendation 1)
# still scores about |S| * 1e-6 > 0; this threshold separates that artefact from real findings.
EPS_SCORE = 0.01


# --------------------------------------------------------------------------------------------
# machine / load


def load_average() -> tuple[float, float, float]:
    one, five, fifteen = (float(x) for x in Path("/proc/loadavg").read_text().split()[:3])
    return one, five, fifteen


def wait_for_quiet(limit: float = 1.0, max_wait: float = 300.0, poll: float = 15.0) -> str:
    """Poll the 1-minute load average until it is below ``limit`` (at most ``max_wait`` s)."""
    start = time.time()
    while True:
        one, five, fifteen = load_average()
        waited = time.time() - start
        if one < limit:
            return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (waited {waited:.0f} s)"
        if waited >= max_wait:
            return (
                f"{one:.2f} / {five:.2f} / {fifteen:.2f} (still >= {limit} after {waited:.0f} s;"
                " timed anyway)"
            )
        print(f"  load {one:.2f} >= {limit}, waiting ...", flush=True)
        time.sleep(poll)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nproc() -> int:
    try:
        return int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except (OSError, ValueError):
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------------
# Experiment 1


def lambda_star(k: int) -> float:
    """Theoretical cut-off (methods.md §4.7, exact form for k <= 1 per §8 I4)."""
    if k > 1:
        return 75.0 / k * (4999.0 - k * k) / (7497.0 - k * k)
    return 374850.0 / (7497.0 - k * k)


@dataclass
class Covariates:
    codes: np.ndarray  # (n, m) int codes over the whole table
    labels: list[np.ndarray]  # per attribute: label of each code


def load_covariates() -> Covariates:
    frame = pl.read_csv(DATA)
    codes = np.empty((frame.height, len(ATTRIBUTES)), np.int32)
    labels = []
    for j, name in enumerate(ATTRIBUTES):
        values = frame[name].cast(pl.Utf8).to_numpy()
        uniq, inverse = np.unique(values, return_inverse=True)
        codes[:, j] = inverse
        labels.append(uniq)
    return Covariates(codes, labels)


def subgroup_mask(cov: Covariates, subgroup: dict[str, str]) -> np.ndarray:
    mask = np.ones(cov.codes.shape[0], bool)
    for name, value in subgroup.items():
        j = ATTRIBUTES.index(name)
        code = int(np.flatnonzero(cov.labels[j] == value)[0])
        mask &= cov.codes[:, j] == code
    return mask


def random_subgroup(cov: Covariates, rng: np.random.Generator) -> dict[str, str]:
    n = cov.codes.shape[0]
    while True:
        a, b = rng.choice(len(ATTRIBUTES), size=2, replace=False)
        sub = {
            ATTRIBUTES[a]: str(rng.choice(cov.labels[a])),
            ATTRIBUTES[b]: str(rng.choice(cov.labels[b])),
        }
        if subgroup_mask(cov, sub).sum() >= MIN_SUBGROUP_SHARE * n:
            return sub


@dataclass
class RunResult:
    iou: float
    iou_eps: float  # IoU counting F(S*) <= EPS_SCORE as "nothing detected"
    detected: bool  # F(S*) > 0
    violated: bool  # S* violates the IJDI criterion (original base rates)
    score: float
    passes: int
    corrections: int
    converged: bool


def evaluate_side(
    codes: np.ndarray,
    in_s: np.ndarray,
    rec: np.ndarray,
    p: np.ndarray,
    lam: float,
    restarts: int,
    seed: int,
) -> RunResult:
    """IJDI loop on the scanned side's rows (already filtered), penalty 0."""
    problem = ScanProblem.build(codes, np.zeros(len(rec)), np.full(len(rec), 0.5))
    cells = IjdiCells.from_records(problem.codes, rec, p, problem.cardinality)
    out = ijdi_loop(cells, lam=lam, penalty=0.0, restarts=restarts, seed=seed)
    detected = out.best.llr > 0.0
    if detected:
        found = problem.members(out.best.selection)
        union = np.count_nonzero(found | in_s)
        iou = np.count_nonzero(found & in_s) / union if union else 0.0
        rest = ~found
        if rest.any():
            gap = rec[found].mean() - rec[rest].mean()
            allowed = lam * max(p[found].mean() - p[rest].mean(), 0.0)
            violated = bool(gap > allowed + 1e-12)
        else:
            violated = False
    else:
        iou, violated = 0.0, False
    return RunResult(
        iou=float(iou),
        iou_eps=float(iou) if out.best.llr > EPS_SCORE else 0.0,
        detected=bool(detected),
        violated=violated,
        score=float(out.best.score),
        passes=out.passes,
        corrections=len(out.corrections),
        converged=out.converged,
    )


@dataclass(frozen=True)
class ExperimentJob:
    codes: np.ndarray
    labels: tuple
    k: int
    lambdas: tuple
    sides: tuple  # ("negatives",) or ("negatives", "positives")
    restarts: int
    subgroup_mode: str
    entropy: int

    def __call__(self, run: int) -> dict:
        seq = np.random.SeedSequence(self.entropy, spawn_key=(self.k, run))
        rng = np.random.Generator(np.random.PCG64(seq))
        cov = Covariates(self.codes, list(self.labels))
        sub = FIXED_SUBGROUP if self.subgroup_mode == "fixed" else random_subgroup(cov, rng)
        in_s = subgroup_mask(cov, sub)
        n = len(in_s)
        centre = np.where(in_s, 0.51, 0.49)
        p = centre + 0.01 * self.k * rng.uniform(-1.0, 1.0, n)
        rec = (p > 0.5).astype(np.float64)
        y = rng.random(n) < p
        search = int(rng.integers(0, 2**62))
        results = {}
        for side in self.sides:
            rows = ~y if side == "negatives" else y
            for lam in self.lambdas:
                results[(side, lam)] = evaluate_side(
                    self.codes[rows], in_s[rows], rec[rows], p[rows], lam, self.restarts, search
                )
        return {"subgroup": sub, "size": int(in_s.sum()), "results": results}


def _job_chunk(job: ExperimentJob, runs: list[int]) -> list[dict]:
    return [job(r) for r in runs]


def run_experiment(
    cov: Covariates, runs: int, restarts: int, subgroup_mode: str, workers: int, entropy: int
) -> tuple[list[dict], float]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    started = time.perf_counter()
    for k in KS:
        lstar = lambda_star(k)
        lambdas = tuple(f * lstar for f in LAMBDA_FACTORS)
        sides = ("negatives", "positives") if k == POSITIVES_K else ("negatives",)
        job = ExperimentJob(
            cov.codes, tuple(cov.labels), k, lambdas, sides, restarts, subgroup_mode, entropy
        )
        t = time.perf_counter()
        if workers > 1:
            chunks = [list(range(i, runs, workers)) for i in range(workers)]
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                parts = list(pool.map(_job_chunk, [job] * workers, chunks))
            outputs = [o for part in parts for o in part]
        else:
            outputs = [job(r) for r in range(runs)]
        print(f"  k = {k}: {runs} runs in {time.perf_counter() - t:.1f} s", flush=True)
        sizes = [o["size"] for o in outputs]
        for side in sides:
            for f, lam in zip(LAMBDA_FACTORS, lambdas, strict=True):
                res = [o["results"][(side, lam)] for o in outputs]
                rows.append(
                    {
                        "k": k,
                        "side": side,
                        "lambda_star": lstar,
                        "factor": f,
                        "lambda": lam,
                        "iou": float(np.mean([r.iou for r in res])),
                        "iou_sd": float(np.std([r.iou for r in res])),
                        "iou_eps": float(np.mean([r.iou_eps for r in res])),
                        "detected": float(np.mean([r.detected for r in res])),
                        "violated": float(np.mean([r.violated for r in res])),
                        "score": float(np.median([r.score for r in res])),
                        "passes": float(np.mean([r.passes for r in res])),
                        "corrections": float(np.mean([r.corrections for r in res])),
                        "unconverged": int(sum(not r.converged for r in res)),
                        "size": float(np.mean(sizes)),
                        "runs": len(res),
                    }
                )
    return rows, time.perf_counter() - started


def experiment_table(rows: list[dict], side: str) -> str:
    lines = [
        "| k | λ* | λ/λ* | λ | mean IoU (sd) | F(S*) > 0 | IoU, F ≤ 0.01 as none | criterion violated | median F(S*) | mean passes | mean corrections | pass cap hit |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["side"] != side:
            continue
        lines.append(
            f"| {r['k']} | {r['lambda_star']:.3f} | {r['factor']:g} | {r['lambda']:.3f} | "
            f"{r['iou']:.3f} ({r['iou_sd']:.3f}) | {100 * r['detected']:.0f} % | "
            f"{r['iou_eps']:.3f} | {100 * r['violated']:.0f} % | {r['score']:.4g} | "
            f"{r['passes']:.2f} | {r['corrections']:.2f} | {r['unconverged']}/{r['runs']} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Speed


SPEC = """\
version: 1
name: bench-ijdi
data:
  path: {data}
columns:
  outcome: two_year_recid
  prediction: prob_decile
attributes: [sex, race, age_group, c_charge_degree, priors]
scans:
  - {scan}
significance: {{replicates: {replicates}, seed: 0}}
output: {{dir: out, formats: [json]}}
"""


def speed_case(label: str, scan: str, replicates: int, tmp: Path) -> dict:
    from fairscan.api import RunOptions, run_audit

    spec_path = tmp / f"{label.replace(' ', '_').replace(',', '')}.audit.yaml"
    spec_path.write_text(SPEC.format(data=DATA, scan=scan, replicates=replicates))
    load = wait_for_quiet()
    t = time.perf_counter()
    outcome = run_audit(spec_path, RunOptions(write=False))
    wall = time.perf_counter() - t
    one_after = load_average()[0]
    result = outcome.report.scans[0]
    finding = result.findings[0] if result.findings else None
    info = result.detail.get("ijdi")
    row = {
        "label": label,
        "wall": wall,
        "search": result.timing.search_seconds,
        "significance": result.timing.significance_seconds,
        "cells": result.parameters.get("cells"),
        "size": result.population.size,
        "passes": info["passes"] if info else None,
        "corrections": ", ".join(
            f"EC{c['edge_case']}@{c['scan_pass']}" for c in info["corrections"]
        )
        if info and info["corrections"]
        else "none",
        "score": finding.statistic.value if finding else 0.0,
        "p_value": finding.p_value if finding else None,
        "status": result.status,
        "subgroup": ", ".join(f"{k} ∈ {{{', '.join(v)}}}" for k, v in finding.subgroup.items())
        if finding and isinstance(finding.subgroup, dict)
        else (str(finding.subgroup) if finding else "—"),
        "null_q": result.null_distribution.quantile if result.null_distribution else None,
        "workers": outcome.report.provenance.workers,
        "load_before": load,
        "load_after": f"{one_after:.2f}",
        "warnings": result.warnings,
    }
    print(
        f"  {label}: wall {wall:.1f} s (search {row['search']:.2f} s, null {row['significance']:.1f} s),"
        f" cells {row['cells']}, passes {row['passes']}, p = {row['p_value']}, load {load}",
        flush=True,
    )
    return row


def run_speed(replicates: int) -> list[dict]:
    base = (
        "{{id: fpr, type: ijdi_scan, side: negatives, lambda: 1, {base}threshold: 0.45, "
        "threshold_rule: gt, "
        "penalty: 1, restarts: {restarts}}}"
    )
    cases = [
        ("prob_decile, 500 restarts", base.format(base="base_rate: prob_decile, ", restarts=500)),
        ("prob_decile, 100 restarts", base.format(base="base_rate: prob_decile, ", restarts=100)),
        ("estimated (LR), 500 restarts", base.format(base="", restarts=500)),
        ("estimated (LR), 100 restarts", base.format(base="", restarts=100)),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # warm-up: imports and first-call costs in this process (not timed)
        speed_case(
            "warm-up", base.format(base="base_rate: prob_decile, ", restarts=5), 0, Path(tmp)
        )
        for label, scan in cases:
            rows.append(speed_case(label, scan, replicates, Path(tmp)))
    return rows


def speed_table(rows: list[dict]) -> str:
    lines = [
        "| configuration | wall time | search | null replicates | cells | passes | corrections | F(S*) (J) | p-value | null 95 % quantile | S* | load before (1/5/15 min) | 1-min load after |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        p = "—" if r["p_value"] is None else f"{r['p_value']:.3f}"
        q = "—" if r["null_q"] is None else f"{r['null_q']:.2f}"
        lines.append(
            f"| {r['label']} | {r['wall']:.1f} s | {r['search']:.2f} s | {r['significance']:.1f} s | "
            f"{r['cells']} | {r['passes']} | {r['corrections']} | {r['score']:.2f} | {p} | {q} | "
            f"{r['subgroup']} | {r['load_before']} | {r['load_after']} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 runs, 199 replicates")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--restarts", type=int, default=20, help="restarts in Experiment 1")
    parser.add_argument("--subgroup", choices=["fixed", "random"], default="fixed")
    parser.add_argument("--workers", type=int, default=1, help="processes for Experiment 1")
    parser.add_argument("--replicates", type=int, default=None)
    parser.add_argument("--seed", type=int, default=20240)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-experiment", action="store_true")
    parser.add_argument("--write", type=Path, default=None, help="write Markdown results here")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 100)
    replicates = args.replicates or (199 if args.quick else 999)

    header = [
        f"machine: {nproc()} cores ({cpu_model()}), {platform.platform()}",
        f"date: {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')}",
    ]
    print("\n".join(header))
    sections = []
    if not args.skip_experiment:
        cov = load_covariates()
        one, five, fifteen = load_average()
        load = f"{one:.2f} / {five:.2f} / {fifteen:.2f}"
        print(
            f"Experiment 1: {runs} runs, restarts {args.restarts}, subgroup {args.subgroup}, load {load}"
        )
        rows, elapsed = run_experiment(
            cov, runs, args.restarts, args.subgroup, args.workers, args.seed
        )
        sections.append(
            f"### Experiment 1 — negatives (FPR side)\n\n{runs} runs per k, restarts "
            f"{args.restarts}, penalty 0, subgroup {args.subgroup}; {elapsed:.0f} s in total "
            f"({args.workers} process(es)); load at start {load}.\n\n"
            + experiment_table(rows, "negatives")
            + f"\n\n### Experiment 1 — positives (TPR side), k = {POSITIVES_K}\n\n"
            + experiment_table(rows, "positives")
        )
        print(sections[-1])
    if not args.skip_speed:
        print(f"Speed: {replicates} replicates")
        speed = run_speed(replicates)
        sections.append(f"### Speed ({replicates} replicates)\n\n" + speed_table(speed))
        print(sections[-1])
    if args.write:
        args.write.write_text("\n".join(header) + "\n\n" + "\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
