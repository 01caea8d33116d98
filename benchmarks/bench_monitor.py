"""The monitor's must-show simulations (issue 35; docs/methods/monitoring.md).

Run by hand from the repository root (not collected by pytest; tests/engine/test_monitor_sim.py
runs a smaller version as a slow test)::

    .venv/bin/python benchmarks/bench_monitor.py --series 10000 --workers 2 --write benchmarks/RESULTS.md
    .venv/bin/python benchmarks/bench_monitor.py --series 200 --planted 200   # a quick look

The world: a calibrated model on rows with four attributes (4, 3, 5 and 2 values: 120
profiles); the model's probability takes two values in each profile (240 cells, between 0.05
and 0.6). A run draws its size uniformly in [--min-rows, --max-rows], the rows' cells from fixed
shares (multinomial) and each cell's positives as Binomial(rows, probability): exact for such a
model, and fast. The monitor follows 20 fixed subgroups (one or two attributes each, listed from
run 1) and the open scan: at each run the scan process bets on the subgroup that the project's
own MDSS search (engine.mdss.search, as the bias_scan runner calls it: Bernoulli score,
positive direction, penalty 0) chose on the previous run's data. K = 21 processes, alpha 0.05,
horizon 52, tolerance 1.25; thresholds from engine.evidence.thresholds.

(a) false alarms: calibrated model, --series series of --runs runs; a series has a false alarm
    when any process raises any alarm (evidence or onset) at any run. Side by side: today's
    weekly re-test, one randomization test of the scan per run at alpha 0.05 (19 null
    replicates: exact at 0.05), on the first --retest-series series.
(b) planted bias: from run --bias-start the cells of one subgroup (2% of rows, none of the 20
    monitored ones) have their odds multiplied by 1.5; 10^5 rows per run; delay = first alarm
    run - bias start (0 = the first biased run). And the onset detector alone under the null:
    its mean run length to a false alarm at low thresholds A, against the stated bound (>= A).
(c) the per-run update cost: 10^6 rows with their own probabilities, 21 processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.stats import beta

from fairscan.engine import evidence as ev
from fairscan.engine.cells import Cells
from fairscan.engine.mdss import max_score, members, search

CARDINALITY = np.array([4, 3, 5, 2], dtype=np.int32)
LEVELS = 2  # probability values per profile
ALPHA, HORIZON, TOLERANCE, MONITORED = 0.05, 52, 1.25, 20
K = 1 + MONITORED  # one scan: 20 subgroups + the scan process
THRESHOLD, ONSET_THRESHOLD = ev.thresholds(ALPHA, K, HORIZON)
RESTARTS = 20  # the scan-then-bet bound holds for any search; fewer restarts only cost power
POSITIVE = 1


@dataclass(frozen=True)
class World:
    codes: np.ndarray  # (cells, attributes) int32
    share: np.ndarray  # (cells,) probability a row falls in the cell
    p: np.ndarray  # (cells,) the model's probability
    monitored: np.ndarray  # (20, cells) bool
    planted: np.ndarray  # (cells,) bool: a=0, b=0, c in {0, 1}: 2% of rows


def make_world(seed: int = 2026) -> World:
    rng = np.random.default_rng(seed)
    profiles = np.array(np.meshgrid(*[np.arange(c) for c in CARDINALITY], indexing="ij"))
    profiles = profiles.reshape(len(CARDINALITY), -1).T.astype(np.int32)
    codes = np.repeat(profiles, LEVELS, axis=0)
    share = rng.dirichlet(np.full(len(codes), 5.0))
    planted = (codes[:, 0] == 0) & (codes[:, 1] == 0) & (codes[:, 2] <= 1)
    share[planted] *= 0.02 / share[planted].sum()
    share[~planted] *= 0.98 / share[~planted].sum()
    p = rng.uniform(0.05, 0.6, len(codes))
    monitored: list[np.ndarray] = []
    while len(monitored) < MONITORED:
        mask = np.ones(len(codes), bool)
        for j in rng.choice(len(CARDINALITY), size=rng.integers(1, 3), replace=False):
            values = rng.choice(CARDINALITY[j], size=rng.integers(1, CARDINALITY[j]), replace=False)
            mask &= np.isin(codes[:, j], values)
        if not np.array_equal(mask, planted) and not any(
            np.array_equal(mask, m) for m in monitored
        ):
            monitored.append(mask)
    return World(codes, share, p, np.array(monitored), planted)


@dataclass
class SeriesResult:
    first_alarm: int | None = None  # first run with any alarm (1-based)
    first_kind: str | None = None
    retest_first: int | None = None  # first run the weekly re-test rejects (when run)
    kinds: set[str] = field(default_factory=set)


def _cells(world: World, counts: np.ndarray, positives: np.ndarray) -> Cells:
    present = counts > 0
    return Cells(
        codes=np.ascontiguousarray(world.codes[present]),
        weight=counts[present].astype(np.float64),
        observed=positives[present].astype(np.float64),
        expected=world.p[present],
        row_cell=np.zeros(0, np.int64),
        cardinality=CARDINALITY,
        constant_expectation=False,
    )


def _retest_rejects(cells: Cells, rng: np.random.Generator, seed: int) -> bool:
    """Today's per-run test: the scan's score against 19 null replicates (exact at 0.05)."""

    def score(observed: np.ndarray, seed: int) -> float:
        null = replace(cells, observed=observed)
        return max_score(null, direction=POSITIVE, penalty=0.0, restarts=RESTARTS, seed=seed)

    observed = score(cells.observed, seed)
    for r in range(19):
        drawn = rng.binomial(cells.weight.astype(np.int64), cells.expected).astype(np.float64)
        if score(drawn, seed + r + 1) >= observed:
            return False
    return True


def simulate_series(
    world: World,
    seed: int,
    *,
    runs: int,
    rows: tuple[int, int],
    bias_start: int | None = None,
    odds: float = 1.5,
    retest: bool = False,
) -> SeriesResult:
    """One monitored series through the engine/evidence API; stops at its first alarm."""
    rng = np.random.default_rng(seed)
    biased_p = world.p * odds / (1 - world.p + world.p * odds)
    subgroups = [ev.ProcessState() for _ in range(MONITORED)]
    scan = ev.ProcessState()
    chosen: np.ndarray | None = (
        None  # the scan's subgroup on the previous run (local = global codes)
    )
    result = SeriesResult()
    for t in range(1, runs + 1):
        counts = rng.multinomial(rng.integers(rows[0], rows[1] + 1), world.share)
        truth = biased_p if bias_start is not None and t >= bias_start else world.p
        truth = np.where(world.planted, truth, world.p)
        positives = rng.binomial(counts, truth)
        alarms: list[str] = []
        for i, inside in enumerate(world.monitored):
            run = ev.bernoulli_loglik(positives[inside], world.p[inside], counts[inside])
            subgroups[i], kinds = _step(ev.update_subgroup(subgroups[i], run), t, TOLERANCE)
            alarms += kinds
        if chosen is not None:
            inside = members(world.codes, chosen)
            run = ev.bernoulli_loglik(positives[inside], world.p[inside], counts[inside])
            scan, kinds = _step(ev.update_scan(scan, run), t, None)
            alarms += kinds
        cells = _cells(world, counts, positives)
        search_seed = int(rng.integers(2**62))
        chosen = search(
            cells, direction=POSITIVE, penalty=0.0, restarts=RESTARTS, seed=search_seed
        ).selection
        if retest and result.retest_first is None and _retest_rejects(cells, rng, search_seed):
            result.retest_first = t
        if alarms and result.first_alarm is None:
            result.first_alarm, result.first_kind = t, alarms[0]
            result.kinds.update(alarms)
            if not retest or result.retest_first is not None:
                break
    return result


def _step(
    state: ev.ProcessState, t: int, tolerance: float | None
) -> tuple[ev.ProcessState, list[str]]:
    return ev.record_alarms(
        state,
        t,
        threshold=THRESHOLD,
        onset_threshold=ONSET_THRESHOLD,
        tolerance=tolerance,
        alpha=ALPHA,
    )


def _false_alarm_chunk(
    args: tuple[int, int, int, tuple[int, int], int],
) -> list[tuple[int | None, str | None, int | None]]:
    first, count, runs, rows, retest_series = args
    world = make_world()
    out = []
    for s in range(first, first + count):
        r = simulate_series(
            world, 1_000_003 * s + 17, runs=runs, rows=rows, retest=s < retest_series
        )
        out.append((r.first_alarm, r.first_kind, r.retest_first if s < retest_series else -1))
    return out


def false_alarms(
    series: int,
    runs: int,
    rows: tuple[int, int],
    retest_series: int,
    workers: int,
    progress: Path | None,
    start: int = 0,
) -> dict:
    chunk = 25
    jobs = [
        (f, min(chunk, series - f), runs, rows, retest_series) for f in range(start, series, chunk)
    ]
    results = []
    with ProcessPoolExecutor(workers) as pool:
        for job, part in zip(jobs, pool.map(_false_alarm_chunk, jobs), strict=True):
            results += part
            if progress is not None:  # one line per chunk: a long run can be stopped and tallied
                with progress.open("a") as f:
                    f.write(json.dumps({"first": job[0], "results": part}) + "\n")
    return tally(results)


def tally(results: list) -> dict:
    series = len(results)
    alarms = sum(first is not None for first, _, _ in results)
    kinds = {k: sum(kind == k for _, kind, _ in results) for k in ("evidence", "onset")}
    retested = [r for _, _, r in results if r != -1]
    return {
        "series": series,
        "alarms": alarms,
        "rate": alarms / series,
        "upper": clopper_pearson_upper(alarms, series),
        "kinds": kinds,
        "retest_series": len(retested),
        "retest_alarms": sum(r is not None for r in retested),
        "retest_upper": clopper_pearson_upper(
            sum(r is not None for r in retested), max(len(retested), 1)
        ),
        "retest_12": sum(r is not None and r <= 12 for r in retested),
    }


def clopper_pearson_upper(successes: int, trials: int, level: float = 0.95) -> float:
    """The upper end of the two-sided Clopper-Pearson interval at ``level`` (beta quantile 0.975)."""
    if successes >= trials:
        return 1.0
    return float(beta.ppf(1 - (1 - level) / 2, successes + 1, trials - successes))


def _planted_chunk(args: tuple[int, int, int, int]) -> list[int | None]:
    first, count, runs, bias_start = args
    world = make_world()
    return [
        simulate_series(
            world, 7_000_001 * s + 3, runs=runs, rows=(100_000, 100_000), bias_start=bias_start
        ).first_alarm
        for s in range(first, first + count)
    ]


def planted(series: int, runs: int, bias_start: int, workers: int) -> dict:
    jobs = [(f, min(10, series - f), runs, bias_start) for f in range(0, series, 10)]
    firsts: list[int | None] = []
    with ProcessPoolExecutor(workers) as pool:
        for part in pool.map(_planted_chunk, jobs):
            firsts += part
    early = sum(f is not None and f < bias_start for f in firsts)
    delays = np.array([f - bias_start for f in firsts if f is not None and f >= bias_start])
    missed = sum(f is None for f in firsts)
    return {"series": series, "early": early, "missed": missed, "delays": delays}


def onset_run_length(
    thresholds: tuple[float, ...], paths: int, cap: int, seed: int = 5
) -> dict[float, tuple[float, float]]:
    """One subgroup process's onset detector under the null: mean runs to its first alarm at
    each threshold A (censored at ``cap``: the mean of min(T, cap), a lower bound), and the
    fraction of paths censored. 2,000 rows a run in 8 cells."""
    world = make_world()
    rng = np.random.default_rng(seed)
    cells = np.flatnonzero(world.monitored[0])[:8]
    counts = np.maximum(1, np.round(2000 * world.share[cells] / world.share[cells].sum())).astype(
        np.int64
    )
    p = world.p[cells]
    out = {}
    for a in thresholds:
        lengths = []
        for _ in range(paths):
            state = ev.ProcessState()
            t = 0
            while t < cap and state.log_cusum < math.log(a):
                state = ev.update_subgroup(
                    state, ev.bernoulli_loglik(rng.binomial(counts, p), p, counts)
                )
                t += 1
            lengths.append(t)
        lengths_a = np.array(lengths)
        out[a] = (float(lengths_a.mean()), float(np.mean(lengths_a >= cap)))
    return out


def update_cost(rows: int = 1_000_000, repeats: int = 5, seed: int = 9) -> dict[str, float]:
    """Seconds for one run's update: 10^6 rows with their own probabilities in 120 profiles,
    20 subgroup processes and the scan process (median of ``repeats``)."""
    world = make_world()
    rng = np.random.default_rng(seed)
    profile = rng.integers(0, len(world.codes) // LEVELS, rows)
    p = rng.uniform(0.02, 0.9, rows)
    y = (rng.random(rows) < p).astype(np.int8)
    profile_codes = world.codes[::LEVELS]
    member = np.vstack([world.monitored[:, ::LEVELS], world.planted[None, ::LEVELS]])
    states = [ev.ProcessState() for _ in range(K)]
    timings: dict[str, list[float]] = {"cells": [], "processes": [], "cpu": []}
    for _ in range(repeats):
        cpu = time.process_time()
        start = time.perf_counter()
        per_cell = ev.bernoulli_cell_loglik(y, p, profile, len(profile_codes))
        middle = time.perf_counter()
        for i in range(K - 1):
            states[i] = ev.update_subgroup(states[i], per_cell[member[i]].sum(axis=0))
        states[-1] = ev.update_scan(states[-1], per_cell[member[-1]].sum(axis=0))
        for s in states:
            ev.label(
                s,
                threshold=THRESHOLD,
                onset_threshold=ONSET_THRESHOLD,
                tolerance=TOLERANCE,
                alpha=ALPHA,
            )
            s.to_json()
        end = time.perf_counter()
        timings["cells"].append(middle - start)
        timings["processes"].append(end - middle)
        timings["cpu"].append(time.process_time() - cpu)
    return {k: float(np.median(v)) for k, v in timings.items()}


def machine() -> list[tuple[str, str]]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "src"], capture_output=True, text=True
    ).stdout.strip()
    return [
        ("date (UTC)", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")),
        ("fairscan source", commit + (" + uncommitted changes under src/" if dirty else "")),
        ("nproc", str(os.cpu_count())),
        ("python", platform.python_version()),
        ("numpy", np.__version__),
        ("load average at start (1/5/15 min)", " / ".join(f"{v:.2f}" for v in os.getloadavg())),
    ]


def render(
    args: argparse.Namespace,
    info: list[tuple[str, str]],
    fa: dict | None,
    pl: dict | None,
    onset: dict | None,
    cost: dict | None,
    elapsed: float,
) -> str:
    lines = ["", "## Monitoring over a series of audits (issue 35, `bench_monitor.py`)", ""]
    lines += [
        f"`{' '.join(sys.argv)}`; {elapsed / 60:.1f} min wall with {args.workers} worker(s).",
        "",
    ]
    lines += ["|  |  |", "|---|---|"] + [f"| {k} | {v} |" for k, v in info]
    lines += [f"| load average at end | {' / '.join(f'{v:.2f}' for v in os.getloadavg())} |", ""]
    lines += [
        f"World: 4 attributes (4, 3, 5, 2 values), 240 cells, probabilities 0.05-0.6; K = {K} processes "
        f"(20 fixed subgroups + the scan, scan-then-bet with `engine.mdss.search`, {RESTARTS} restarts, "
        f"positive direction); alpha {ALPHA}, horizon {HORIZON}: evidence threshold {THRESHOLD:g}, "
        f"onset threshold {ONSET_THRESHOLD:g}.",
        "",
    ]
    if fa is not None:
        weekly = 1 - (1 - ALPHA) ** args.runs
        lines += [
            f"### (a) False alarms, calibrated model: {fa['series']:,} series of {args.runs} runs, "
            f"{args.min_rows:,}-{args.max_rows:,} rows per run",
            "",
            "| procedure | series with a false alarm | rate | upper 95% (Clopper-Pearson) |",
            "|---|---|---|---|",
            f"| monitor (any process, evidence or onset, any run) | {fa['alarms']:,} / {fa['series']:,} "
            f"(evidence {fa['kinds']['evidence']}, onset {fa['kinds']['onset']}) | **{fa['rate']:.4f}** | **{fa['upper']:.4f}** |",
            f"| weekly re-test at 0.05 (scan + 19 null replicates each run) | {fa['retest_alarms']} / "
            f"{fa['retest_series']} (by run 12: {fa['retest_12']}) | {fa['retest_alarms'] / max(fa['retest_series'], 1):.3f} "
            f"| {fa['retest_upper']:.3f} |",
            f"| weekly re-test, exact: 1 - 0.95^{args.runs} | | {weekly:.3f} | |",
            "",
        ]
    if pl is not None:
        d = pl["delays"]
        hist = (
            ", ".join(f"{k}: {int(np.sum(d == k))}" for k in range(int(d.max()) + 1))
            if d.size
            else "none"
        )
        lines += [
            f"### (b) Planted bias: 2% of rows, odds ratio 1.5, from run {args.bias_start}, 100,000 rows per run "
            f"({pl['series']} series of {args.runs} runs)",
            "",
            f"- delay to the first alarm (runs after the first biased run; 0 = that run): median **{np.median(d):.0f}**, "
            f"mean {d.mean():.2f}, max {d.max()}; distribution {{{hist}}}"
            if d.size
            else "- no alarm",
            f"- series with an alarm before the bias: {pl['early']}; series never alarming: {pl['missed']}",
            "",
        ]
    if onset is not None:
        lines += [
            "Onset detector alone under the null (one subgroup process, 2,000 rows a run): mean runs to a "
            f"false onset alarm at threshold A ({args.onset_paths} paths, censored at {args.onset_cap} runs: "
            "a lower bound of the mean); the stated bound is >= A.",
            "",
            "| A | mean run length (>=) | paths censored | bound |",
            "|---|---|---|---|",
        ]
        lines += [f"| {a:g} | {m:,.1f} | {c:.0%} | {a:g} |" for a, (m, c) in onset.items()]
        lines += [
            "",
            f"At the monitor's onset threshold ({ONSET_THRESHOLD:g}) the bound per process is {ONSET_THRESHOLD:,.0f} runs.",
            "",
        ]
    if cost is not None:
        lines += [
            "### (c) Per-run update cost, 10^6 new rows with their own probabilities, 21 processes",
            "",
            f"- per-cell log-likelihoods in one pass over the rows (`bernoulli_cell_loglik`): {cost['cells'] * 1e3:.0f} ms",
            f"- 21 process updates, labels and JSON states from the cells: {cost['processes'] * 1e3:.1f} ms",
            f"- total **{(cost['cells'] + cost['processes']) * 1e3:.0f} ms** wall, {cost['cpu'] * 1e3:.0f} ms of CPU "
            "time (medians of 5; the CPU time is what an idle core would take)",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=10_000, help="series for (a)")
    parser.add_argument("--runs", type=int, default=52)
    parser.add_argument("--min-rows", type=int, default=10_000)
    parser.add_argument("--max-rows", type=int, default=100_000)
    parser.add_argument("--retest-series", type=int, default=100)
    parser.add_argument("--planted", type=int, default=200, help="series for (b)")
    parser.add_argument("--bias-start", type=int, default=10)
    parser.add_argument("--onset-paths", type=int, default=100)
    parser.add_argument("--onset-cap", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--skip", default="", help="comma list of a,b,onset,c to skip")
    parser.add_argument("--write", type=Path, help="append the table to this markdown file")
    parser.add_argument(
        "--progress", type=Path, help="(a): append each chunk's results to this JSON-lines file"
    )
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        help="(a): first series to simulate (a multiple of 25: resume a --progress file)",
    )
    parser.add_argument(
        "--tally", type=Path, help="(a): tally a --progress file instead of simulating"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    info = machine()
    start = time.perf_counter()
    cost = None if "c" in skip else update_cost()
    onset = (
        None
        if "onset" in skip
        else onset_run_length((5.0, 10.0, 20.0, 50.0), args.onset_paths, args.onset_cap)
    )
    pl = None if "b" in skip else planted(args.planted, args.runs, args.bias_start, args.workers)
    if args.tally:
        lines = [json.loads(line) for line in args.tally.read_text().splitlines()]
        fa = tally([r for line in sorted(lines, key=lambda x: x["first"]) for r in line["results"]])
    elif "a" not in skip:
        fa = false_alarms(
            args.series,
            args.runs,
            (args.min_rows, args.max_rows),
            args.retest_series,
            args.workers,
            args.progress,
            args.start,
        )
    else:
        fa = None
    text = render(args, info, fa, pl, onset, cost, time.perf_counter() - start)
    print(text)
    if args.write:
        with args.write.open("a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
