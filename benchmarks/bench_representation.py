"""Row-level search or profile summary for a calibration scan (issue 29): what each costs.

For seeded Bias Scan tables with continuous probabilities over a grid of shapes (rows, attributes,
rows per profile), times in this process, on one core:

* ``build``: the profile summary of the rows (``expectation_cells.summarise``: one pass over the
  rows evaluating each row's g(u) at the expansion's nodes);
* ``row``: one null replicate of the row-level search (draw + search + re-score);
* ``summary``: one null replicate of the search over the profile summary.

and prints, per table, what ``expectation_cells.representation_costs`` estimates for the same
three and which representation it picks for 999 replicates and for the search alone, with the
measured winner (the summary's search is timed as one of its replicates). The
estimate's constants are fitted from this script's output (``--fit``): least squares of each
measured time on the cost terms of its model.

    python benchmarks/bench_representation.py [--replicates 5] [--fit]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fairscan.engine import expectation_cells as ec
from fairscan.engine.mdss import ScanProblem
from fairscan.engine.randomization import MdssReplicate, NullSettings

# (rows, cardinalities): from one row per profile to hundreds
SHAPES = [
    (2_000, (3, 4, 2)),
    (5_000, (2, 3, 4, 5)),
    (5_000, (4, 4, 4, 4, 4)),
    (20_000, (2, 3, 4, 5, 6)),
    (20_000, (2, 3, 4, 5, 6, 4, 3)),
    (100_000, (2, 3, 4, 5)),
    (100_000, (2, 3, 4, 5, 6, 4)),
    (100_000, (2, 3, 4, 5, 6, 4, 3, 8)),
    (300_000, (2, 3, 4, 5, 6, 4, 3, 8)),
    (300_000, (5, 5, 4)),
    (1_000_000, (2, 3, 4, 5, 6, 4, 3, 8)),
]
RESTARTS = 10


def table(n: int, card: tuple[int, ...], seed: int) -> ScanProblem:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in card])
    logit = -0.9 + rng.normal(0.0, 0.8, n)
    for j, k in enumerate(card):
        logit += rng.normal(0.0, 0.3, k)[codes[:, j]]
    p = 1.0 / (1.0 + np.exp(-logit))
    factor = np.where(codes[:, 0] == 1, 0.75, 1.0)
    y = (rng.random(n) < p * factor).astype(float)
    return ScanProblem.build(codes, y, p)


def _median_seconds(call, repeat: int) -> float:
    times = []
    for r in range(repeat):
        started = time.perf_counter()
        call(r)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(n: int, card: tuple[int, ...], replicates: int) -> dict[str, float]:
    problem = table(n, card, seed=n + len(card))
    cells = problem.cells()
    profiles = ec.profiles_of(cells)
    started = time.perf_counter()
    summary = ec.summarise(cells, -1, profiles)
    build = time.perf_counter() - started
    settings = NullSettings(-1, 0.0, RESTARTS)
    seed = np.random.SeedSequence(0)
    row_job = MdssReplicate(cells, settings, seed)
    summary_job = ec.ExpectationReplicate(summary, settings, seed)
    row = _median_seconds(row_job, replicates)
    summ = _median_seconds(summary_job, replicates)
    estimate = ec.representation_costs(cells.n_cells, profiles.n_cells, len(card), RESTARTS)
    return {
        "rows": cells.n_cells,
        "profiles": profiles.n_cells,
        "attributes": len(card),
        "build": build,
        "row": row,
        "summary": summ,
        "est_build": estimate.build,
        "est_row": estimate.row_replicate,
        "est_summary": estimate.summary_replicate,
        "picks_summary": float(estimate.summary_pays(999)),
        "picks_summary_alone": float(estimate.summary_pays(0)),
    }


def _name(summary: float) -> str:
    return "summary" if summary else "rows"


def fit(results: list[dict[str, float]]) -> None:
    """Least-squares constants of the cost model from the measured times."""
    n = np.array([r["rows"] for r in results])
    p = np.array([r["profiles"] for r in results])
    m = np.array([r["attributes"] for r in results])
    build = np.array([r["build"] for r in results])
    row = np.array([r["row"] for r in results])
    summ = np.array([r["summary"] for r in results])
    build_terms = np.column_stack([n, p])
    print("build ~ a rows + b profiles:", _fit(build_terms, build))
    # both replicates draw one uniform per row (the same a); the searches differ: the rows'
    # cost per restart follows the rows alone (fewer steps where more attributes shrink the
    # relaxed subgroups), the summary's the profiles times the attributes
    zero = np.zeros_like(n)
    terms = np.vstack(
        [
            np.column_stack([n, n * RESTARTS, zero]),
            np.column_stack([n, zero, p * m * RESTARTS]),
        ]
    )
    print(
        "replicates ~ a rows + (rows: b rows x restarts, summary: c profiles x attributes x "
        "restarts):",
        _fit(terms, np.concatenate([row, summ])),
    )


def _fit(terms: np.ndarray, seconds: np.ndarray) -> list[str]:
    """Least squares relative to each time (small tables count as much as large ones)."""
    scale = 1.0 / seconds
    coefficients = np.linalg.lstsq(terms * scale[:, None], np.ones_like(seconds), rcond=None)[0]
    return [f"{c:.3e}" for c in coefficients]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--fit", action="store_true")
    args = parser.parse_args()
    print(
        "| rows | profiles | attributes | build (est.) | row replicate (est.) "
        "| summary replicate (est.) | faster / picked, 999 replicates "
        "| faster / picked, search alone |"
    )
    print("|---|---|---|---|---|---|---|---|")
    results = []
    for n, card in SHAPES:
        r = measure(n, card, args.replicates)
        results.append(r)
        measured_summary = r["build"] + 1000 * r["summary"] < 1000 * r["row"]
        alone = r["build"] + r["summary"] < r["row"]
        print(
            f"| {r['rows']:,.0f} | {r['profiles']:,.0f} | {r['attributes']:.0f} "
            f"| {r['build'] * 1e3:.1f} ms ({r['est_build'] * 1e3:.1f}) "
            f"| {r['row'] * 1e3:.2f} ms ({r['est_row'] * 1e3:.2f}) "
            f"| {r['summary'] * 1e3:.2f} ms ({r['est_summary'] * 1e3:.2f}) "
            f"| {_name(measured_summary)} / {_name(r['picks_summary'])} "
            f"| {_name(alone)} / {_name(r['picks_summary_alone'])} |",
            flush=True,
        )
    if args.fit:
        fit(results)


if __name__ == "__main__":
    main()
