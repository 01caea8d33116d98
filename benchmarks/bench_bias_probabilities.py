"""Bias Scan with per-row probabilities on 1M rows: fairscan (search + 999 replicates) vs AIF360.

Issue 12: with continuous predicted probabilities no two rows share a (profile, expectation)
cell, so the row-level search costs a pass over the rows per score evaluation, and every null
replicate repeats it. fairscan now summarises each attribute profile's probabilities once
(piecewise Chebyshev expansions of g(u) = sum log(1 - p + p e^u), engine/expectation_cells.py)
so a replicate is one Bernoulli pass over the rows plus a search over profiles.

Run by hand from the repository root (not collected by pytest)::

    .venv/bin/python benchmarks/bench_bias_probabilities.py            # everything
    .venv/bin/python benchmarks/bench_bias_probabilities.py --skip-aif360
    .venv/bin/python benchmarks/bench_bias_probabilities.py --before   # + the old row-level path

The table (seeded; 1,000,000 rows, 5 attributes with 3-8 values, continuous probabilities,
an injected over-predicted subgroup) is written to ``benchmarks/work/`` (gitignored) as
``.npz`` (for AIF360) and Parquet (for ``audit run``). AIF360 0.6.1 runs in its own venv
(``benchmarks/.venv-aif360``; this file runs there with ``--aif360-child``, importing no
fairscan). ``--write PATH`` writes the Markdown section.
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
TABLE_NPZ = WORK / "bias_probabilities_1m.npz"
TABLE_PARQUET = WORK / "bias_probabilities_1m.parquet"
AIF360_PYTHON = REPO / "benchmarks" / ".venv-aif360" / "bin" / "python"

N_ROWS = 1_000_000
CARD = [3, 4, 5, 6, 8]
ATTRS = [f"a{j}" for j in range(len(CARD))]
BIAS = {"a1": ["v1"], "a3": ["v0", "v2"]}  # the model over-predicts here: y ~ B(0.7 p)
BIAS_FACTOR = 0.7
RESTARTS = 10
REPLICATES = 999
PENALTY = 0.0
SEED = 0


def make_table() -> dict[str, np.ndarray]:
    """The seeded synthetic table: attribute codes, continuous probabilities, outcome."""
    rng = np.random.default_rng(20261123)
    codes = np.column_stack([rng.integers(0, k, N_ROWS) for k in CARD]).astype(np.int32)
    logit = -0.9 + rng.normal(0.0, 0.8, N_ROWS)
    for j, k in enumerate(CARD):
        logit += rng.normal(0.0, 0.4, k)[codes[:, j]]
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

        frame = pl.DataFrame(
            {
                **{
                    a: pl.Series(a, [f"v{c}" for c in range(k)]).gather(table["codes"][:, j])
                    for j, (a, k) in enumerate(zip(ATTRS, CARD, strict=True))
                },
                "y": table["y"].astype(np.int64),
                "p": table["p"],
            }
        )
        frame.write_parquet(TABLE_PARQUET)
    return table


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# ------------------------------------------------------------------------------------------
# AIF360 (runs in benchmarks/.venv-aif360; no fairscan import)
# ------------------------------------------------------------------------------------------


def aif360_child(repeats: int) -> None:
    import pandas as pd
    from aif360.detectors.mdss_detector import bias_scan

    table = np.load(TABLE_NPZ)
    codes = table["codes"]
    data = pd.DataFrame({a: [f"v{c}" for c in codes[:, j]] for j, a in enumerate(ATTRS)})
    observations = pd.Series(table["y"].astype(int))
    expectations = pd.Series(table["p"])
    runs = []
    for _ in range(repeats):
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
        runs.append(
            {
                "wall_s": time.perf_counter() - w0,
                "cpu_s": cpu_seconds() - c0,
                "subgroup": {k: sorted(map(str, v)) for k, v in subgroup.items()},
                "score": float(score),
            }
        )
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"runs": runs}))


def run_aif360(repeats: int) -> dict:
    out = subprocess.run(
        [str(AIF360_PYTHON), __file__, "--aif360-child", "--repeats", str(repeats)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------
# fairscan
# ------------------------------------------------------------------------------------------

SPEC_TEXT = """version: 1
name: bias-probabilities-1m
description: "1M rows, continuous probabilities; injected over-prediction in {bias}"
data:
  path: bias_probabilities_1m.parquet
columns:
  outcome: y
  prediction: p
attributes: [{attrs}]
scans:
  - {{id: bias, type: bias_scan, direction: negative, penalty: {penalty}, restarts: {restarts}}}
significance: {{replicates: {replicates}, alpha: 0.05, seed: {seed}}}
output: {{dir: out, formats: [json]}}
"""


def run_cli(workers: int) -> dict:
    """``audit run`` in a fresh process: wall and CPU (the process and its workers)."""
    spec = WORK / "bias_probabilities_1m.audit.yaml"
    spec.write_text(
        SPEC_TEXT.format(
            bias=BIAS,
            attrs=", ".join(ATTRS),
            penalty=PENALTY,
            restarts=RESTARTS,
            replicates=REPLICATES,
            seed=SEED,
        )
    )
    out = WORK / "out_bias_probabilities"
    cli = Path(sys.executable).parent / "audit"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run(
        [
            str(cli),
            "run",
            str(spec),
            "-o",
            str(out),
            "--workers",
            str(workers),
            "--no-progress",
            "--exit-zero",
            "-q",
        ],
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
        "timing": scan["timing"],
        "subgroup": finding["subgroup"] if finding else None,
        "score": finding["statistic"]["value"] if finding else None,
        "p_value": finding["p_value"] if finding else None,
        "null_max": max(scan["null_distribution"]["scores"]),
        "cells": scan["parameters"].get("cells"),
    }


def before_numbers(table: dict[str, np.ndarray], replicates: int) -> dict:
    """The row-level path (the code before issue 12): search, and a few replicates timed."""
    from fairscan.engine.mdss import ScanProblem, search
    from fairscan.engine.randomization import MdssReplicate, NullSettings
    from fairscan.engine.seeds import search_seed

    w0, c0 = time.perf_counter(), time.process_time()
    problem = ScanProblem.build(table["codes"], table["y"].astype(np.float64), table["p"])
    cells = problem.cells()
    build = (time.perf_counter() - w0, time.process_time() - c0)
    seed = np.random.SeedSequence(SEED)
    w0, c0 = time.perf_counter(), time.process_time()
    best = search(cells, direction=-1, penalty=PENALTY, restarts=RESTARTS, seed=search_seed(seed))
    found = (time.perf_counter() - w0, time.process_time() - c0)
    job = MdssReplicate(cells, NullSettings(-1, PENALTY, RESTARTS), seed)
    per = []
    for r in range(replicates):
        w0, c0 = time.perf_counter(), time.process_time()
        job(r)
        per.append((time.perf_counter() - w0, time.process_time() - c0))
    return {
        "cells": cells.n_cells,
        "build_wall_s": build[0],
        "build_cpu_s": build[1],
        "search_wall_s": found[0],
        "search_cpu_s": found[1],
        "score": best.score,
        "replicate_wall_s": [w for w, _ in per],
        "replicate_cpu_s": [c for _, c in per],
    }


def after_parts(table: dict[str, np.ndarray], replicates: int) -> dict:
    """The new path's parts in this process: summary, search, replicates (CPU medians)."""
    from fairscan.engine import expectation_cells as ec
    from fairscan.engine.mdss import ScanProblem, score_subgroup, search
    from fairscan.engine.randomization import NullSettings
    from fairscan.engine.seeds import search_seed

    problem = ScanProblem.build(table["codes"], table["y"].astype(np.float64), table["p"])
    cells = problem.cells()
    c0 = time.process_time()
    profiles = ec.profiles_of(cells)
    summary = ec.summarise(cells, -1, profiles)
    fit = time.process_time() - c0
    seed = search_seed(np.random.SeedSequence(SEED))
    c0 = time.process_time()
    selection = ec.search_selection(summary, penalty=PENALTY, restarts=RESTARTS, seed=seed)
    best = score_subgroup(cells, selection, -1, PENALTY)
    searched = time.process_time() - c0
    row = search(cells, direction=-1, penalty=PENALTY, restarts=RESTARTS, seed=seed)
    job = ec.ExpectationReplicate(
        summary, NullSettings(-1, PENALTY, RESTARTS), np.random.SeedSequence(SEED)
    )
    per = []
    for r in range(replicates):
        c0 = time.process_time()
        job(r)
        per.append(time.process_time() - c0)
    # null replicates vs the row-level search of the same draws (3 replicates)
    from dataclasses import replace

    from fairscan.engine.mdss import max_score
    from fairscan.engine.seeds import child_seed

    null_rel = []
    root = np.random.SeedSequence(SEED)
    for r in range(3):
        rng = np.random.Generator(np.random.PCG64(child_seed(root, r)))
        drawn = (rng.random(cells.n_cells) < cells.expected).astype(np.float64)
        exact = max_score(
            replace(cells, observed=drawn),
            direction=-1,
            penalty=PENALTY,
            restarts=RESTARTS,
            seed=search_seed(child_seed(root, r, 0)),
        )
        null_rel.append(abs(job(r) - exact) / abs(exact))
    return {
        "null_max_rel_diff": max(null_rel),
        "profiles": summary.n_cells,
        "coefficients_per_profile": int(summary.coefficients.shape[1]),
        "summary_cpu_s": fit,
        "search_cpu_s": searched,
        "score": best.score,
        "row_score": row.score,
        "same_subgroup": bool(np.array_equal(selection, row.selection)),
        "replicate_cpu_median_s": statistics.median(per),
    }


def fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def markdown(res: dict) -> str:
    aif = res.get("aif360")
    cli = res["cli"]
    parts = res["parts"]
    lines = [
        "## Bias Scan with per-row probabilities: 999 null replicates (issue 12)",
        "",
        f"Date {res['date']}, commit `{res['commit']}` plus the working tree; "
        f"{res['cpu']}; 2 cores **shared with other work running at the same time** "
        f"(load average at start {res['load']}), so wall times are noisy; CPU times are given "
        "next to them. Command: `.venv/bin/python benchmarks/bench_bias_probabilities.py "
        f"{res['args']}`.",
        "",
        f"Table: {N_ROWS:,} seeded synthetic rows, attributes {', '.join(ATTRS)} with "
        f"{', '.join(map(str, CARD))} values ({int(np.prod(CARD))} profiles), continuous "
        f"predicted probabilities (logistic, no two rows alike), outcome drawn with the "
        f"probability multiplied by {BIAS_FACTOR} in {BIAS} (over-prediction). Scan: "
        f"`bias_scan`, direction negative, penalty {PENALTY:g}, {RESTARTS} restarts.",
        "",
        "| run | wall | CPU | subgroup | score |",
        "|---|---|---|---|---|",
    ]
    if aif:
        for i, run in enumerate(aif["runs"]):
            lines.append(
                f"| AIF360 0.6.1 `bias_scan`, num_iters {RESTARTS}, no test (run {i + 1}) | "
                f"{fmt(run['wall_s'])} | {fmt(run['cpu_s'])} | {run['subgroup']} | "
                f"{run['score']:.2f} |"
            )
    t = cli["timing"]
    lines.append(
        f"| **fairscan `audit run`, {REPLICATES} replicates, 2 workers** (whole process: "
        f"load, search {fmt(t['search_seconds'])}, replicates "
        f"{fmt(t['significance_seconds'])}) | **{fmt(cli['wall_s'])}** | {fmt(cli['cpu_s'])} | "
        f"{cli['subgroup']} | {cli['score']:.4f} (p = {cli['p_value']:.3g}) |"
    )
    before = res.get("before")
    if before:
        rw = statistics.median(before["replicate_wall_s"])
        rc = statistics.median(before["replicate_cpu_s"])
        lines.append(
            f"| before (row-level path): search | {fmt(before['search_wall_s'])} | "
            f"{fmt(before['search_cpu_s'])} | | {before['score']:.4f} |"
        )
        lines.append(
            f"| before: one replicate (median of {len(before['replicate_wall_s'])}) | "
            f"{fmt(rw)} | {fmt(rc)} | | |"
        )
        lines.append(
            f"| before: {REPLICATES} replicates on 2 workers, **extrapolated** "
            f"({REPLICATES} x CPU median / 2) | ~{fmt(REPLICATES * rc / 2)} | "
            f"~{fmt(REPLICATES * rc)} | | |"
        )
    lines += [
        "",
        f"Parts of the new path (in one process, CPU): profile summary of the "
        f"{N_ROWS:,} rows ({parts['profiles']} profiles x "
        f"{parts['coefficients_per_profile']} numbers) {fmt(parts['summary_cpu_s'])}; search "
        f"over profiles + row-level re-score {fmt(parts['search_cpu_s'])}; one replicate "
        f"(Bernoulli draw per row, bincount, search) {fmt(parts['replicate_cpu_median_s'])} "
        "(median). The profile search found the row-level search's subgroup: "
        f"{parts['same_subgroup']}; scores {parts['score']!r} (profile search, re-scored by "
        f"rows) vs {parts['row_score']!r} (row-level search). Null replicates 0-2 vs the row-level "
        "search of the same draws: largest relative difference "
        f"{parts['null_max_rel_diff']:.1e}.",
        "",
    ]
    if before:
        lines += [
            "The before numbers are the row-level path of the code before this change on the "
            "same table (one (profile, expectation) cell per row): its search, and "
            f"{len(before['replicate_wall_s'])} null replicates timed, **extrapolated** to "
            f"{REPLICATES} (not run). The new path gives the same subgroup and the same "
            "reported (row-level) score; its null replicates draw Bernoulli(p) per row instead "
            "of Binomial per cell (the same law, other random numbers).",
            "",
        ]
    if aif:
        lines += [
            "AIF360 returns every attribute it saw; with the attributes whose values are all "
            "selected dropped, its subgroup is fairscan's. AIF360 rounds its score to 2 "
            "decimals here.",
            "",
        ]
        aw = statistics.median(r["wall_s"] for r in aif["runs"])
        ac = statistics.median(r["cpu_s"] for r in aif["runs"])
        lines.append(
            f"Target: fairscan's search + {REPLICATES} replicates within 3x one AIF360 scan. "
            f"Wall: {fmt(cli['wall_s'])} vs 3 x {fmt(aw)} = {fmt(3 * aw)} "
            f"(ratio {cli['wall_s'] / aw:.2f}x); CPU: {fmt(cli['cpu_s'])} vs 3 x {fmt(ac)} "
            f"(ratio {cli['cpu_s'] / ac:.2f}x). "
            + ("**Met.**" if cli["wall_s"] <= 3 * aw and cli["cpu_s"] <= 3 * ac else "Not met.")
        )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--aif360-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--skip-aif360", action="store_true")
    parser.add_argument("--aif360-json", type=Path, help="reuse a saved AIF360 run")
    parser.add_argument("--before", action="store_true", help="also time the row-level path")
    parser.add_argument("--before-replicates", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--write", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.aif360_child:
        aif360_child(args.repeats)
        return
    table = write_table()
    if args.table_only:
        return
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    res: dict = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "cpu": f"{cpu}, {os.cpu_count()} logical CPUs",
        "load": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "args": " ".join(sys.argv[1:]),
    }
    res["cli"] = run_cli(workers=2)
    print(json.dumps(res["cli"], indent=1), flush=True)
    res["parts"] = after_parts(table, 9)
    print(json.dumps(res["parts"], indent=1), flush=True)
    if args.before:
        res["before"] = before_numbers(table, args.before_replicates)
        print(json.dumps(res["before"], indent=1), flush=True)
    if args.aif360_json:
        res["aif360"] = json.loads(args.aif360_json.read_text())
    elif not args.skip_aif360:
        res["aif360"] = run_aif360(args.repeats)
    text = markdown(res)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
