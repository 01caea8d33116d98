"""Bias Scan with per-row probabilities on many small profiles (issue 29): fairscan vs AIF360.

1,000,000 seeded rows, 8 attributes with 2, 3, 4, 5, 6, 4, 3, 8 values (69,120 possible
profiles, about 14 rows each), continuous predicted probabilities, an injected over-predicted
subgroup. In one run of this script, side by side on the same table:

* AIF360 0.6.1 ``bias_scan`` (``num_iters`` 10, no significance test) in its own virtual
  environment (``benchmarks/.venv-aif360``, see ``benchmarks/aif360_baseline.py``; this file runs
  there with ``--aif360-child``, importing no fairscan);
* fairscan ``audit run`` of the same table (Parquet) in a fresh process: ``bias_scan``, 10
  restarts, 999 null replicates, 2 workers (whole process: read, search, replicates, report).

The script prints both, the ratio fairscan / AIF360 (wall and CPU), whether the subgroups agree
and the machine's load (``uptime``) before and after each run, since the machine is shared.
Run by hand from the repository root (not collected by pytest)::

    .venv/bin/python benchmarks/bench_bias_many_profiles.py              # AIF360, fairscan, AIF360
    .venv/bin/python benchmarks/bench_bias_many_profiles.py --rounds 2 --write /tmp/many.md

``--skip-aif360`` times fairscan alone, ``--skip-fairscan`` AIF360 alone (once).
``--aif360-python`` names AIF360's interpreter when its virtual environment is elsewhere.
``--aif360-encoding`` is how the attributes reach AIF360: ``strings`` (the default: one string
per row, as a CSV gives them), ``category`` (pandas categorical columns, AIF360's fastest: its
``isin`` and ``groupby`` work on the codes) or ``codes`` (the integer codes). The conversion is
made before the clock starts; the wall clock covers ``bias_scan`` alone. ``--parts`` also times
the engine's parts in this process (profile summary, search, one replicate) on the same table.
The table is written once to ``benchmarks/work/`` (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "benchmarks" / "work"
TABLE_NPZ = WORK / "bias_many_profiles_1m.npz"
TABLE_PARQUET = WORK / "bias_many_profiles_1m.parquet"
AIF360_PYTHON = REPO / "benchmarks" / ".venv-aif360" / "bin" / "python"

N_ROWS = 1_000_000
CARD = [2, 3, 4, 5, 6, 4, 3, 8]
ATTRS = [f"a{j}" for j in range(len(CARD))]
BIAS = {"a2": ["v1"], "a4": ["v0", "v3"]}  # the model over-predicts here: y ~ B(0.75 p)
BIAS_FACTOR = 0.75
RESTARTS = 10
REPLICATES = 999
WORKERS = 2
PENALTY = 0.0
SEED = 0


def make_table() -> dict[str, np.ndarray]:
    """The seeded synthetic table: attribute codes, continuous probabilities, outcome."""
    rng = np.random.default_rng(20261126)
    codes = np.column_stack([rng.integers(0, k, N_ROWS) for k in CARD]).astype(np.int32)
    logit = -0.9 + rng.normal(0.0, 0.8, N_ROWS)
    for j, k in enumerate(CARD):
        logit += rng.normal(0.0, 0.3, k)[codes[:, j]]
    p = 1.0 / (1.0 + np.exp(-logit))
    inside = np.ones(N_ROWS, bool)
    for attr, values in BIAS.items():
        j = ATTRS.index(attr)
        inside &= np.isin(codes[:, j], [int(v[1:]) for v in values])
    truth = np.where(inside, BIAS_FACTOR * p, p)
    y = (rng.random(N_ROWS) < truth).astype(np.int8)
    return {"codes": codes, "p": p, "y": y}


def write_table() -> dict[str, np.ndarray]:
    WORK.mkdir(parents=True, exist_ok=True)
    table = make_table()
    if not TABLE_NPZ.exists():
        np.savez(TABLE_NPZ, **table)
    if not TABLE_PARQUET.exists():
        import polars as pl

        columns = {
            a: pl.Series(a, [f"v{c}" for c in range(k)]).gather(table["codes"][:, j])
            for j, (a, k) in enumerate(zip(ATTRS, CARD, strict=True))
        }
        frame = pl.DataFrame({**columns, "y": table["y"].astype(np.int64), "p": table["p"]})
        frame.write_parquet(TABLE_PARQUET)
    return table


def load() -> str:
    """The 1/5/15-minute load averages, as ``uptime`` prints them."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def constrained(subgroup: dict[str, list[str]]) -> dict[str, list[str]]:
    """A subgroup without the attributes whose values are all selected (AIF360 lists them)."""
    out = {}
    for attr, values in subgroup.items():
        if len(set(values)) < CARD[ATTRS.index(attr)]:
            out[attr] = sorted(values)
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------------
# AIF360 (runs in benchmarks/.venv-aif360; no fairscan import)
# ------------------------------------------------------------------------------------------


ENCODINGS = ("strings", "category", "codes")


def aif360_child(encoding: str) -> None:
    import pandas as pd
    from aif360.detectors.mdss_detector import bias_scan

    table = np.load(TABLE_NPZ)
    codes = table["codes"]
    if encoding == "codes":
        data = pd.DataFrame({a: codes[:, j] for j, a in enumerate(ATTRS)})
    else:
        data = pd.DataFrame({a: [f"v{c}" for c in codes[:, j]] for j, a in enumerate(ATTRS)})
    if encoding == "category":
        data = data.astype("category")
    observations = pd.Series(table["y"].astype(int))
    expectations = pd.Series(table["p"])
    w0, c0 = time.perf_counter(), cpu_seconds()
    subgroup, score = bias_scan(
        data=data,
        observations=observations,
        expectations=expectations,
        overpredicted=True,
        scoring="Bernoulli",
        num_iters=RESTARTS,
        penalty=PENALTY if PENALTY > 0 else 1e-17,
        mode="binary",
    )
    run = {
        "wall_s": time.perf_counter() - w0,
        "cpu_s": cpu_seconds() - c0,
        "encoding": encoding,
        "pandas": pd.__version__,
        "subgroup": {
            k: sorted(f"v{x}" if encoding == "codes" else str(x) for x in v)
            for k, v in subgroup.items()
        },
        "score": float(score),
    }
    print(json.dumps(run))


def run_aif360(python: Path = AIF360_PYTHON, encoding: str = "strings") -> dict:
    before = load()
    out = subprocess.run(
        [str(python), __file__, "--aif360-child", "--aif360-encoding", encoding],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    run = json.loads(out.stdout.strip().splitlines()[-1])
    run["load_before"], run["load_after"] = before, load()
    return run


# ------------------------------------------------------------------------------------------
# fairscan
# ------------------------------------------------------------------------------------------

SPEC_TEXT = """version: 1
name: bias-many-profiles-1m
description: "1M rows, 8 attributes, 69,120 profiles; injected over-prediction in {bias}"
data:
  path: {parquet}
columns:
  outcome: y
  prediction: p
attributes: [{attrs}]
scans:
  - {{id: bias, type: bias_scan, direction: negative, penalty: {penalty}, restarts: {restarts}}}
significance: {{replicates: {replicates}, alpha: 0.05, seed: {seed}}}
output: {{dir: out, formats: [json]}}
"""


def run_cli(python: str, workers: int) -> dict:
    """``audit run`` in a fresh process: wall and CPU (the process and its workers)."""
    spec = WORK / "bias_many_profiles_1m.audit.yaml"
    spec.write_text(
        SPEC_TEXT.format(
            bias=BIAS,
            parquet=TABLE_PARQUET.name,
            attrs=", ".join(ATTRS),
            penalty=PENALTY,
            restarts=RESTARTS,
            replicates=REPLICATES,
            seed=SEED,
        )
    )
    out = WORK / "out_bias_many_profiles"
    for old in out.glob("*.json"):
        old.unlink()
    code = "import sys; from fairscan.cli import main; sys.exit(main())"
    before_load = load()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    args = ["run", str(spec), "-o", str(out), "--workers", str(workers)]
    proc = subprocess.run(
        [python, "-c", code, *args, "--no-progress", "--exit-zero", "-q"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout + proc.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(next(out.glob("*.json")).read_text())
    scan = report["scans"][0]
    finding = scan["findings"][0] if scan["findings"] else None
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "load_before": before_load,
        "load_after": load(),
        "timing": scan["timing"],
        "subgroup": finding["subgroup"] if finding else None,
        "score": finding["statistic"]["value"] if finding else None,
        "p_value": finding["p_value"] if finding else None,
        "null_max": max(scan["null_distribution"]["scores"]),
        "null_scores_head": scan["null_distribution"]["scores"][:5],
        "cells": scan["parameters"].get("cells"),
    }


def engine_parts(table: dict[str, np.ndarray], replicates: int) -> dict:
    """The engine's parts in this process (CPU): summary, search, replicates; the search
    over profiles against the row-level search (same subgroup, score)."""
    from fairscan.engine import expectation_cells as ec
    from fairscan.engine.mdss import ScanProblem, score_subgroup
    from fairscan.engine.mdss import search as row_search
    from fairscan.engine.randomization import NullSettings
    from fairscan.engine.seeds import search_seed

    problem = ScanProblem.build(table["codes"], table["y"].astype(np.float64), table["p"])
    cells = problem.cells()
    c0 = time.process_time()
    summary = ec.summarise(cells, -1, ec.profiles_of(cells))
    fit = time.process_time() - c0
    seed = search_seed(np.random.SeedSequence(SEED))
    c0 = time.process_time()
    selection = ec.search_selection(summary, penalty=PENALTY, restarts=RESTARTS, seed=seed)
    best = score_subgroup(cells, selection, -1, PENALTY)
    searched = time.process_time() - c0
    c0 = time.process_time()
    row = row_search(cells, direction=-1, penalty=PENALTY, restarts=RESTARTS, seed=seed)
    row_searched = time.process_time() - c0
    job = ec.ExpectationReplicate(
        summary, NullSettings(-1, PENALTY, RESTARTS), np.random.SeedSequence(SEED)
    )
    per, draws = [], []
    rng = np.random.default_rng(0)
    for r in range(replicates):
        c0 = time.process_time()
        job(r)
        per.append(time.process_time() - c0)
        c0 = time.process_time()
        summary.draw(rng)
        draws.append(time.process_time() - c0)
    return {
        "profiles": summary.n_cells,
        "numbers_per_profile": int(summary.coefficients.shape[1]),
        "summary_cpu_s": fit,
        "search_cpu_s": searched,
        "row_search_cpu_s": row_searched,
        "same_subgroup": bool(np.array_equal(selection, row.selection)),
        "score": best.score,
        "row_score": row.score,
        "replicate_cpu_median_s": statistics.median(per),
        "draw_cpu_median_s": statistics.median(draws),
    }


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def markdown(res: dict) -> str:
    lines = [
        "| run | wall | CPU | load before → after (1/5/15 min) | subgroup | score |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in res["runs"]:
        if name == "aif360":
            label = (
                f"AIF360 0.6.1 `bias_scan`, num_iters {RESTARTS}, no test, attributes as "
                f"{run.get('encoding', 'strings')} (pandas {run.get('pandas', '?')})"
            )
            score = f"{run['score']:.2f}"
        else:
            t = run["timing"]
            label = (
                f"fairscan `audit run`, {REPLICATES} replicates, {WORKERS} workers (search "
                f"{fmt(t['search_seconds'])}, replicates {fmt(t['significance_seconds'])})"
            )
            score = f"{run['score']:.4f} (p = {run['p_value']:.3g})"
        lines.append(
            f"| {label} | {fmt(run['wall_s'])} | {fmt(run['cpu_s'])} | {run['load_before']} → "
            f"{run['load_after']} | {constrained(run['subgroup'] or {})} | {score} |"
        )
    lines.append("")
    for key in ("ratio_wall", "ratio_cpu"):
        if key in res:
            lines.append(f"- {key.replace('_', ' ')} (fairscan / AIF360, medians): {res[key]:.2f}x")
    if "same_subgroup" in res:
        lines.append(
            f"- same subgroup (attributes with every value dropped): {res['same_subgroup']}"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--aif360-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-aif360", action="store_true")
    parser.add_argument("--skip-fairscan", action="store_true", help="AIF360 alone, once")
    parser.add_argument("--aif360-python", type=Path, default=AIF360_PYTHON)
    parser.add_argument("--aif360-encoding", choices=ENCODINGS, default="strings")
    parser.add_argument("--rounds", type=int, default=1, help="AIF360/fairscan pairs")
    parser.add_argument("--parts", type=int, default=0, help="replicates timed in-process")
    parser.add_argument("--python", default=sys.executable, help="interpreter for audit run")
    parser.add_argument("--write", type=Path, help="write the Markdown table here")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.aif360_child:
        aif360_child(args.aif360_encoding)
        return
    table = write_table()
    res: dict = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "runs": [],
    }
    print(res["uptime"], flush=True)
    aif360 = (args.aif360_python, args.aif360_encoding)
    for _ in range(args.rounds):
        if not args.skip_aif360:
            res["runs"].append(("aif360", run_aif360(*aif360)))
            print(json.dumps(res["runs"][-1]), flush=True)
        if args.skip_fairscan:
            break
        res["runs"].append(("fairscan", run_cli(args.python, WORKERS)))
        print(json.dumps(res["runs"][-1]), flush=True)
    if not args.skip_aif360 and not args.skip_fairscan and args.rounds == 1:  # AIF360 again
        res["runs"].append(("aif360", run_aif360(*aif360)))
        print(json.dumps(res["runs"][-1]), flush=True)
    aif = [r for name, r in res["runs"] if name == "aif360"]
    fair = [r for name, r in res["runs"] if name == "fairscan"]
    if aif and fair:
        for key in ("wall", "cpu"):
            res[f"ratio_{key}"] = statistics.median(
                r[f"{key}_s"] for r in fair
            ) / statistics.median(r[f"{key}_s"] for r in aif)
        res["same_subgroup"] = all(
            constrained(a["subgroup"]) == constrained(f["subgroup"] or {})
            for a in aif
            for f in fair
        )
    if args.parts:
        res["parts"] = engine_parts(table, args.parts)
        print(json.dumps(res["parts"]), flush=True)
    res["uptime_end"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    text = markdown(res)
    print(text)
    print(res["uptime_end"])
    if args.write:
        args.write.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
