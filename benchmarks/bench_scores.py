"""Scores beyond Bernoulli on COMPAS, side by side with AIF360 0.6.1: Poisson and Berk-Jones.

Run by hand from the repository root (not collected by pytest)::

    .venv/bin/python scripts/prepare_compas.py                    # once: build/compas.csv
    benchmarks/.venv-aif360/bin/python benchmarks/aif360_baseline.py --scan poisson berk_jones \\
        --penalties 1 1e-17 --directions positive negative --json build/aif360_scores.json
    .venv/bin/python benchmarks/bench_scores.py --aif360-json build/aif360_scores.json \\
        --json build/fairscan_scores.json [--spec]

The two scans (attributes ``sex, race, age_group, c_charge_degree, priors``, as in
``aif360_baseline.py``; 100 restarts; penalties 1 and 1e-17):

* ``poisson``: all 6172 rows, observed = ``decile_score`` (1-10, an ordinal outcome scored as
  AIF360 does: Poisson on the codes), expectation = the overall mean of ``decile_score``
  (AIF360's default when no expectations are given); direction positive (scores above the mean)
  and negative. Engine: ``kernels.POISSON`` on ``ScanProblem.build(..., clip=False)``.
* ``berk_jones``: the FPR-Scan population (``two_year_recid == 0``), observed = ``high_risk``,
  alpha 0.3, positive direction. AIF360's Berk-Jones score C log(q/alpha) + (N-C)
  log((1-q)/(1-alpha)) at q = C/N is the maximum of the Bernoulli log-likelihood ratio with the
  constant expectation alpha, so the engine runs its Bernoulli score with expectation 0.3.

Engine path (the scans' building blocks called directly):

* search: ``ScanProblem.build(...).cells()`` + ``search(...)``, median of ``--runs`` warm runs
  after a warm-up, and the search alone on prebuilt cells;
* p-value: ``--replicates`` (999) null replicates through ``randomization.run_replicates``
  (one worker): for ``poisson`` the observed decile scores permuted over the rows (the ordinal
  scan's null: with a constant expectation, permuting the residuals outcome - mean is permuting
  the codes), or with ``--ordinal-null poisson`` Poisson(mean) per row (drawn per cell as
  ``Poisson(weight * mean)``, the null law of counts; decile scores are more dispersed than
  Poisson, variance 8.06 against mean 4.42); for ``berk_jones`` Bernoulli draws at the
  population's own flag rate (the FPR-Scan null: every true negative flagged with the overall
  FPR) scored with Berk-Jones at alpha 0.3; p = (1 + #{null >= observed}) / (1 + R);
* whole process: a fresh interpreter (``--one``) that imports the engine, loads the data,
  searches and runs the replicates, timed from outside.

AIF360's subgroup is re-scored exactly with the engine (``mdss.score_subgroup``) because AIF360
rounds its scores to 4 decimals and uses its own q bracket [1e-3, 1e3] (Berk-Jones: [alpha, 1])
with a bisection tolerance of 1e-3.

``--spec`` also runs each scan through ``audit run`` on a generated spec with the issue's keys
(``outcome_type: ordinal``, ``score: poisson``; ``type: fpr_scan``, ``score: berk_jones``,
``alpha: 0.3``) with 999 replicates and one worker, and times the whole command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
COMPAS_CSV = REPO / "build" / "compas.csv"
AUDIT_CLI = Path(sys.executable).parent / "audit"
ATTRIBUTES = ["sex", "race", "age_group", "c_charge_degree", "priors"]
RESTARTS = 100
SEED = 20261123

DEFAULT_CONFIGS = [
    {"scan": "poisson", "direction": d, "penalty": p}
    for p in (1.0, 1e-17)
    for d in ("positive", "negative")
] + [
    {"scan": "berk_jones", "direction": "positive", "penalty": p, "alpha": 0.3}
    for p in (1.0, 1e-17)
]


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    codes: np.ndarray  # (n, m) int32 codes into labels
    labels: list[np.ndarray]  # per attribute: the sorted labels
    observed: np.ndarray
    expected: np.ndarray  # the expectation the score uses
    null_mean: float  # the null model's per-row mean (Poisson mean or Bernoulli rate)
    likelihood: int
    clip: bool
    description: str


def load_table():
    import polars as pl

    if not COMPAS_CSV.is_file():
        sys.exit(f"{COMPAS_CSV} not found: run `.venv/bin/python scripts/prepare_compas.py` first")
    # every column as text first: the priors label "None" must stay a label
    frame = pl.read_csv(COMPAS_CSV, infer_schema=False)
    return frame


def inputs(frame, config: dict) -> Inputs:
    from fairscan.engine import kernels

    if config["scan"] == "berk_jones":
        frame = frame.filter(frame["two_year_recid"].cast(int) == 0)
    labels, cols = [], []
    for a in ATTRIBUTES:
        values, codes = np.unique(frame[a].to_numpy().astype(str), return_inverse=True)
        labels.append(values)
        cols.append(codes.reshape(-1))
    codes = np.ascontiguousarray(np.column_stack(cols).astype(np.int32))
    if config["scan"] == "poisson":
        observed = frame["decile_score"].cast(float).to_numpy()
        mean = float(observed.mean())
        return Inputs(
            codes,
            labels,
            observed,
            np.full(observed.shape, mean),
            mean,
            kernels.POISSON,
            False,
            f"all {len(observed)} rows; decile_score vs its mean {mean:.10f}",
        )
    observed = frame["high_risk"].cast(float).to_numpy()
    rate = float(observed.mean())
    return Inputs(
        codes,
        labels,
        observed,
        np.full(observed.shape, float(config["alpha"])),
        rate,
        kernels.BERNOULLI,
        True,
        f"{len(observed)} true negatives, {int(observed.sum())} high_risk (FPR {rate:.10f}); "
        f"alpha {config['alpha']}",
    )


def subgroup_of(inp: Inputs, problem, selection) -> dict[str, list[str]]:
    out = {}
    for j, a in enumerate(ATTRIBUTES):
        k = int(problem.cardinality[j])
        chosen = np.flatnonzero(selection[j, :k])
        if len(chosen) < k:
            out[a] = sorted(str(inp.labels[j][problem.value_index[j][c]]) for c in chosen)
    return out


def selection_of(inp: Inputs, problem, subgroup: dict[str, list[str]]) -> np.ndarray:
    kmax = int(problem.cardinality.max())
    sel = np.zeros((len(ATTRIBUTES), kmax), dtype=bool)
    for j, a in enumerate(ATTRIBUTES):
        k = int(problem.cardinality[j])
        local_labels = [str(inp.labels[j][problem.value_index[j][c]]) for c in range(k)]
        if a in subgroup:
            sel[j, :k] = [lab in set(subgroup[a]) for lab in local_labels]
        else:
            sel[j, :k] = True
    return sel


# --------------------------------------------------------------------------------------------
# Null replicates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreReplicate:
    """A parametric null replicate: Poisson(weight * mean) or Binomial(weight, rate) per cell."""

    cells: object
    likelihood: int
    null_mean: float
    direction: int
    penalty: float
    restarts: int
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        from fairscan.engine import kernels
        from fairscan.engine.mdss import max_score
        from fairscan.engine.randomization import child_seed, search_seed

        rng = np.random.Generator(np.random.PCG64(child_seed(self.seed, index)))
        weight = self.cells.weight
        if self.likelihood == kernels.POISSON:
            observed = rng.poisson(weight * self.null_mean)
        else:
            observed = rng.binomial(weight.astype(np.int64), self.null_mean)
        null_cells = replace(self.cells, observed=observed.astype(np.float64))
        return max_score(
            null_cells,
            direction=self.direction,
            penalty=self.penalty,
            restarts=self.restarts,
            seed=search_seed(child_seed(self.seed, index, 0)),
            likelihood=self.likelihood,
        )


@dataclass(frozen=True)
class PermutationReplicate:
    """``--ordinal-null permutation``: the observed codes permuted over the rows (exact when
    every row has the same law, as under the ordinal scan's null without prediction)."""

    cells: object
    y: np.ndarray
    direction: int
    penalty: float
    restarts: int
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        from fairscan.engine import kernels
        from fairscan.engine.mdss import max_score
        from fairscan.engine.randomization import child_seed, search_seed

        rng = np.random.Generator(np.random.PCG64(child_seed(self.seed, index)))
        observed = np.bincount(
            self.cells.row_cell, weights=rng.permutation(self.y), minlength=self.cells.n_cells
        )
        return max_score(
            replace(self.cells, observed=observed),
            direction=self.direction,
            penalty=self.penalty,
            restarts=self.restarts,
            seed=search_seed(child_seed(self.seed, index, 0)),
            likelihood=kernels.POISSON,
        )


# --------------------------------------------------------------------------------------------
# One configuration
# --------------------------------------------------------------------------------------------


def run_config(frame, config: dict, args, aif: dict | None) -> dict:
    from fairscan.engine.mdss import ScanProblem, direction_code, score_subgroup, search
    from fairscan.engine.randomization import child_seed, p_value, run_replicates, search_seed

    inp = inputs(frame, config)
    direction = direction_code(config["direction"])
    penalty = float(config["penalty"])
    root = np.random.SeedSequence(SEED)
    seed = search_seed(child_seed(root, 0))

    def full():
        problem = ScanProblem.build(inp.codes, inp.observed, inp.expected, clip=inp.clip)
        cells = problem.cells()
        best = search(
            cells,
            direction=direction,
            penalty=penalty,
            restarts=RESTARTS,
            seed=seed,
            likelihood=inp.likelihood,
        )
        return problem, cells, best

    problem, cells, best = full()  # warm-up (JIT cache load)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        problem, cells, best = full()
        times.append(time.perf_counter() - t0)
    search_times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        search(
            cells,
            direction=direction,
            penalty=penalty,
            restarts=RESTARTS,
            seed=seed,
            likelihood=inp.likelihood,
        )
        search_times.append(time.perf_counter() - t0)

    job = ScoreReplicate(
        cells, inp.likelihood, inp.null_mean, direction, penalty, RESTARTS, child_seed(root, 1)
    )
    if (
        config["scan"] == "poisson"
        and getattr(args, "ordinal_null", "permutation") == "permutation"
    ):
        job = PermutationReplicate(
            cells, inp.observed, direction, penalty, RESTARTS, child_seed(root, 1)
        )
    t0 = time.perf_counter()
    scores = run_replicates(job, args.replicates, workers=1) if args.replicates else np.empty(0)
    null_seconds = time.perf_counter() - t0
    p, exceed = p_value(best.score, scores) if args.replicates else (None, None)

    rec = {
        **config,
        "population": inp.description,
        "cells": cells.n_cells,
        "restarts": RESTARTS,
        "fairscan_subgroup": subgroup_of(inp, problem, best.selection),
        "fairscan_J": best.score,
        "fairscan_F": best.llr,
        "fairscan_log_q": best.log_q,
        "fairscan_size": best.size,
        "warm_full_s": statistics.median(times) if times else None,
        "warm_search_s": statistics.median(search_times) if search_times else None,
        "replicates": args.replicates,
        "null_seconds": null_seconds,
        "null_q95": float(np.quantile(scores, 0.95, method="higher")) if len(scores) else None,
        "null_max": float(scores.max()) if len(scores) else None,
        "p_value": p,
        "exceed": exceed,
        "null": "permutation"
        if config["scan"] == "poisson"
        and getattr(args, "ordinal_null", "permutation") == "permutation"
        else "parametric",
    }
    if aif is not None:
        sel = selection_of(inp, problem, aif["subgroup"])
        rescored = score_subgroup(cells, sel, direction, penalty, likelihood=inp.likelihood)
        rec.update(
            {
                "aif360_subgroup": aif["subgroup"],
                "aif360_score": aif["aif360_score"],
                "aif360_rescored_J": rescored.score,
                "aif360_best_s": aif["best_s"],
                "aif360_median_s": aif["median_s"],
                "aif360_num_iters": aif["num_iters"],
                "same_subgroup": {k: set(v) for k, v in aif["subgroup"].items()}
                == {k: set(v) for k, v in rec["fairscan_subgroup"].items()},
            }
        )
    return rec


def match_aif(aif_results: list[dict], config: dict) -> dict | None:
    for r in aif_results:
        if (
            r["scan"] == config["scan"]
            and r["direction"] == config["direction"]
            and float(r["penalty"]) == float(config["penalty"])
        ):
            return r
    return None


def configs_from(aif_results: list[dict] | None) -> list[dict]:
    if not aif_results:
        return DEFAULT_CONFIGS
    out = []
    for r in aif_results:
        c = {"scan": r["scan"], "direction": r["direction"], "penalty": float(r["penalty"])}
        if r["scan"] == "berk_jones":
            c["alpha"] = r["alpha"]
        out.append(c)
    return out


# --------------------------------------------------------------------------------------------
# The spec path: `audit run` with the issue's keys
# --------------------------------------------------------------------------------------------


def spec_text(config: dict, replicates: int) -> str:
    penalty = config["penalty"]
    if config["scan"] == "poisson":
        scan = (
            f"{{id: poisson, type: bias_scan, outcome: decile_score, outcome_type: ordinal, "
            f"score: poisson, direction: {config['direction']}, penalty: {penalty:.1e}, "
            f"restarts: {RESTARTS}}}"
        )
        columns = "columns: {}\n"
    else:
        scan = (
            f"{{id: berk-jones, type: fpr_scan, score: berk_jones, alpha: {config['alpha']}, "
            f"penalty: {penalty:.1e}, restarts: {RESTARTS}}}"
        )
        columns = "columns: {outcome: two_year_recid, recommendation: high_risk}\n"
    return (
        "version: 1\n"
        f"name: bench-{config['scan']}\n"
        f"data: {{path: {COMPAS_CSV}}}\n"
        f"{columns}"
        f"attributes: [{', '.join(ATTRIBUTES)}]\n"
        f"scans:\n  - {scan}\n"
        f"significance: {{replicates: {replicates}, alpha: 0.05, seed: 0}}\n"
        "output: {dir: reports, formats: [json]}\n"
    )


def run_spec(config: dict, replicates: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.audit.yaml"
        spec.write_text(spec_text(config, replicates), encoding="utf-8")
        out = Path(tmp) / "out"
        cmd = [str(AUDIT_CLI), "run", str(spec), "--out", str(out), "--workers", "1"]
        cmd += ["--no-progress"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        wall = time.perf_counter() - t0
        reports = sorted(out.glob("*.json")) if out.is_dir() else []
        if proc.returncode not in (0, 1) or not reports:
            return {"ok": False, "exit_code": proc.returncode, "stderr": proc.stderr[-2000:]}
        report = json.loads(reports[0].read_text(encoding="utf-8"))
    scan = report["scans"][0]
    top = scan["findings"][0] if scan["findings"] else None
    return {
        "ok": True,
        "exit_code": proc.returncode,
        "wall_s": wall,
        "status": scan["status"],
        "timing": scan["timing"],
        "subgroup": None if top is None else top["subgroup"],
        "statistic": None if top is None else top["statistic"]["value"],
        "p_value": None if top is None else top["p_value"],
        "size": None if top is None else top["size"],
    }


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def one(index: int, replicates: int, ordinal_null: str) -> None:
    """``--one``: the whole job for one configuration in this (fresh) process."""
    frame = load_table()
    config = DEFAULT_CONFIGS[index]
    ns = argparse.Namespace(runs=0, replicates=replicates, ordinal_null=ordinal_null)
    rec = run_config(frame, config, ns, None)
    print(json.dumps({"J": rec["fairscan_J"], "p_value": rec["p_value"]}))


def fmt_s(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def show(subgroup: dict[str, list[str]] | None) -> str:
    if subgroup is None:
        return "none"
    if not subgroup:
        return "{} (everyone)"
    return "{" + "; ".join(f"{k}: [{', '.join(v)}]" for k, v in subgroup.items()) + "}"


def markdown(results: list[dict]) -> str:
    """The RESULTS.md tables of a run (``--markdown JSON`` prints them for an earlier run)."""
    same = [
        "| scan | direction | penalty | fairscan subgroup | fairscan J | AIF360 subgroup "
        "| AIF360 J re-scored (AIF360's own) | same | p (R) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    speed = [
        "| scan | direction | penalty | cells | fairscan search (warm, build+cells+search) "
        "| search only | 999 replicates | whole process (search + replicates) "
        "| `audit run` (whole command) | AIF360 `bias_scan` (median of 3) "
        "| speed-up, search | speed-up, whole process |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        spec = r.get("spec") or {}
        same.append(
            f"| {r['scan']} | {r['direction']} | {r['penalty']:g} | "
            f"{show(r['fairscan_subgroup'])} | {r['fairscan_J']:.6f} | "
            f"{show(r.get('aif360_subgroup'))} | {r.get('aif360_rescored_J', float('nan')):.6f} "
            f"({r.get('aif360_score')}) | {'yes' if r.get('same_subgroup') else '**no**'} | "
            f"{r['p_value']} ({r['replicates']}) |"
        )
        aif_s = r.get("aif360_median_s")
        up_search = f"{aif_s / r['warm_full_s']:,.0f}x" if aif_s else "-"
        up_process = f"{aif_s / r['process_s']:,.1f}x" if aif_s and "process_s" in r else "-"
        speed.append(
            f"| {r['scan']} | {r['direction']} | {r['penalty']:g} | {r['cells']} | "
            f"{fmt_s(r['warm_full_s'])} | {fmt_s(r['warm_search_s'])} | "
            f"{fmt_s(r['null_seconds'])} | "
            f"{fmt_s(r['process_s']) if 'process_s' in r else '-'} | "
            f"{fmt_s(spec['wall_s']) if spec.get('ok') else '-'} | "
            f"{f'{aif_s:.2f} s' if aif_s else '-'} | "
            f"{up_search} | {up_process} |"
        )
    spec_rows = [
        "| scan | direction | penalty | `audit run` subgroup | statistic | p | exit code "
        "| report: search | report: significance |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        spec = r.get("spec")
        if not spec:
            continue
        if not spec.get("ok"):
            spec_rows.append(
                f"| {r['scan']} | {r['direction']} | {r['penalty']:g} | failed: exit "
                f"{spec.get('exit_code')} | | | | | |"
            )
            continue
        spec_rows.append(
            f"| {r['scan']} | {r['direction']} | {r['penalty']:g} | {show(spec['subgroup'])} | "
            f"{spec['statistic']:.6f} | {spec['p_value']} | {spec['exit_code']} | "
            f"{fmt_s(spec['timing']['search_seconds'])} | "
            f"{fmt_s(spec['timing']['significance_seconds'])} |"
        )
    return "\n".join([*same, "", *speed, "", *spec_rows]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aif360-json", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=20, help="warm timing runs per configuration")
    ap.add_argument("--replicates", type=int, default=999)
    ap.add_argument("--spec", action="store_true", help="also run the spec path (audit run)")
    ap.add_argument(
        "--ordinal-null",
        choices=["permutation", "poisson"],
        default="permutation",
        help="null draws of the engine path's ordinal Poisson scan",
    )
    ap.add_argument("--no-process", action="store_true", help="skip the whole-process timing")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--markdown", type=Path, default=None, help="print the tables of a JSON run")
    args = ap.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text())["results"]))
        return 0
    if args.one is not None:
        one(args.one, args.replicates, args.ordinal_null)
        return 0

    aif = json.loads(args.aif360_json.read_text()) if args.aif360_json else None
    aif_results = aif["results"] if aif else None
    configs = configs_from(aif_results)
    frame = load_table()
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True, cwd=REPO
    ).stdout.splitlines()
    env = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "commit": git
        + (f" + uncommitted changes in {len(dirty)} files under src/" if dirty else ""),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "nproc": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "aif360_environment": aif["environment"] if aif else None,
    }
    print(f"environment: {env}")
    results = []
    for config in configs:
        rec = run_config(frame, config, args, match_aif(aif_results or [], config))
        if not args.no_process and config in DEFAULT_CONFIGS:
            cmd = [sys.executable, __file__, "--one", str(DEFAULT_CONFIGS.index(config))]
            cmd += ["--replicates", str(args.replicates), "--ordinal-null", args.ordinal_null]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=True)
            rec["process_s"] = time.perf_counter() - t0
            rec["process_result"] = json.loads(proc.stdout.strip().splitlines()[-1])
        if args.spec:
            rec["spec"] = run_spec(config, args.replicates)
        results.append(rec)
        print(
            f"\n{config}: {rec['population']}, {rec['cells']} cells\n"
            f"  fairscan: {show(rec['fairscan_subgroup'])} J={rec['fairscan_J']:.6f} "
            f"F={rec['fairscan_F']:.6f} log q={rec['fairscan_log_q']:.6f} n={rec['fairscan_size']:.0f}\n"
            f"  warm build+cells+search {fmt_s(rec['warm_full_s'])}, search only "
            f"{fmt_s(rec['warm_search_s'])}; {rec['replicates']} replicates "
            f"{fmt_s(rec['null_seconds'])}: p = {rec['p_value']} (null q95 {rec['null_q95']}, "
            f"max {rec['null_max']})"
            + (f"; whole process {fmt_s(rec['process_s'])}" if "process_s" in rec else "")
        )
        if "aif360_subgroup" in rec:
            print(
                f"  AIF360: {show(rec['aif360_subgroup'])} score {rec['aif360_score']} "
                f"(re-scored J={rec['aif360_rescored_J']:.6f}); median {rec['aif360_median_s']:.3f} s; "
                f"same subgroup: {rec['same_subgroup']}"
            )
        if "spec" in rec:
            print(f"  spec path: {rec['spec']}")
    env["loadavg_end"] = os.getloadavg()
    print()
    print(markdown(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "results": results}, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
