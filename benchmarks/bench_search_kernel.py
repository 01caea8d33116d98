"""The MDSS search kernels alone (issue 22: one search for both likelihood paths), one case a process.

Run by hand from the repository root (not collected by pytest); compare two builds of the kernels
by pointing ``PYTHONPATH`` at each tree's ``src`` (e.g. a copy of main with its built ``.so``
files) and running the same case side by side, alternating, as whole processes::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_search_kernel.py fpr --repeat 40

Cases (inputs and settings of the existing benchmarks, so the numbers line up with them):

* ``fpr``: the COMPAS FPR-Scan search of ``bench_mdss.py`` section 1 (``kernels.pyx``, Bernoulli,
  100 restarts, penalties 1 and 1e-17, the CLI's seed);
* ``bias``: the COMPAS Bias Scan search of ``bench_mdss.py`` section 4 (two_year_recid vs
  prob_decile, negative, penalty 1, 100 restarts);
* ``gauss``: the Gaussian likelihood (``kernels.pyx``) over the FPR cells, c = observed minus
  expected sums, sigma 0.5, 100 restarts;
* ``profiles``: ``bench_bias_probabilities.py``'s 1M-row table with per-row probabilities: the
  search over profile summaries (``expectation_kernels.pyx``) and 20 of its null replicates;
* ``fpr1m``: ``bench_mdss.py`` section 3's 1M-row, 8-attribute FPR table (61,420 cells, constant
  expectation; ``kernels.pyx``): the FPR-Scan search, penalty 1, 50 restarts;
* ``many``: ``bench_bias_many_profiles.py``'s table (69,120 profiles, ~14 rows each): the search
  over profile summaries and 20 of its null replicates (issue 29).

Each case runs ``--repeat`` times after one warm-up call and prints the in-process median of a
call and a digest of the result (the same bits before and after a refactoring must print the same
digest).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_bias_probabilities as bp
import bench_mdss as bm


def median_call(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compas_cases(case: str, repeat: int) -> dict[str, tuple[float, str]]:
    from fairscan.engine import kernels
    from fairscan.engine.mdss import ScanProblem, search

    data = bm.load_compas()
    codes, observed, expected = bm.fpr_inputs(data)
    seed, _ = bm.seeds()
    cells = ScanProblem.build(codes, observed, expected).cells()
    out: dict[str, tuple[float, str]] = {}
    if case == "fpr":
        for penalty in bm.PENALTIES:

            def fpr(penalty: float = penalty) -> object:
                return search(cells, direction=1, penalty=penalty, restarts=bm.RESTARTS, seed=seed)

            out[f"fpr penalty {penalty:g}"] = (median_call(fpr, repeat), repr(fpr().score))
    elif case == "bias":
        bias_cells = ScanProblem.build(
            np.ascontiguousarray(data.codes),
            data.outcome.astype(np.float64),
            np.asarray(data.prediction, np.float64),
        ).cells()

        def bias() -> object:
            return search(bias_cells, direction=-1, penalty=1.0, restarts=bm.RESTARTS, seed=seed)

        out["bias negative"] = (median_call(bias, repeat), repr(bias().score))
    else:
        args = (
            cells.codes,
            np.ascontiguousarray(cells.observed - cells.weight * cells.expected),
            cells.weight,
            cells.expected,
            True,
            np.asarray(cells.cardinality, np.int32),
            1,
            1.0,
            bm.RESTARTS,
            seed,
            kernels.GAUSSIAN,
            0.5,
        )

        def gauss() -> tuple[np.ndarray, float]:
            return kernels.coordinate_ascent_lik(*args)

        out["gaussian positive"] = (median_call(gauss, repeat), repr(gauss()[1]))
    return out


def profile_case(repeat: int) -> dict[str, tuple[float, str]]:
    from fairscan.engine import expectation_cells as ec
    from fairscan.engine.mdss import ScanProblem
    from fairscan.engine.randomization import NullSettings
    from fairscan.engine.seeds import search_seed

    table = bp.make_table()
    cells = ScanProblem.build(table["codes"], table["y"].astype(np.float64), table["p"]).cells()
    summary = ec.summarise(cells, -1, ec.profiles_of(cells))
    seed = search_seed(np.random.SeedSequence(bp.SEED))

    def profiles() -> np.ndarray:
        return ec.search_selection(summary, penalty=bp.PENALTY, restarts=bp.RESTARTS, seed=seed)

    job = ec.ExpectationReplicate(
        summary, NullSettings(-1, bp.PENALTY, bp.RESTARTS), np.random.SeedSequence(bp.SEED)
    )

    def replicates() -> list[float]:
        return [job(r) for r in range(20)]

    return {
        "profiles search": (median_call(profiles, repeat), profiles().tobytes().hex()),
        "profiles 20 replicates": (
            median_call(replicates, max(1, repeat // 4)),
            repr(replicates()),
        ),
    }


def fpr1m_case(repeat: int) -> dict[str, tuple[float, str]]:
    from fairscan.engine.mdss import ScanProblem, search

    codes, outcome, flagged, _ = bm.make_synthetic(1_000_000)
    rows = outcome == 0
    observed = flagged[rows].astype(np.float64)
    expected = np.full(observed.shape[0], observed.mean())
    cells = ScanProblem.build(np.ascontiguousarray(codes[rows]), observed, expected).cells()

    def fpr1m() -> object:
        return search(cells, direction=1, penalty=1.0, restarts=bm.SYN_RESTARTS, seed=7)

    return {"fpr 1M rows search": (median_call(fpr1m, repeat), repr(fpr1m().score))}


def many_case(repeat: int) -> dict[str, tuple[float, str]]:
    import bench_bias_many_profiles as bmp

    from fairscan.engine import expectation_cells as ec
    from fairscan.engine.mdss import ScanProblem
    from fairscan.engine.randomization import NullSettings
    from fairscan.engine.seeds import search_seed

    table = bmp.make_table()
    cells = ScanProblem.build(table["codes"], table["y"].astype(np.float64), table["p"]).cells()
    summary = ec.summarise(cells, -1, ec.profiles_of(cells))
    seed = search_seed(np.random.SeedSequence(bmp.SEED))

    def profiles() -> np.ndarray:
        return ec.search_selection(summary, penalty=bmp.PENALTY, restarts=bmp.RESTARTS, seed=seed)

    job = ec.ExpectationReplicate(
        summary, NullSettings(-1, bmp.PENALTY, bmp.RESTARTS), np.random.SeedSequence(bmp.SEED)
    )

    def replicates() -> list[float]:
        return [job(r) for r in range(20)]

    return {
        "many profiles search": (median_call(profiles, repeat), profiles().tobytes().hex()),
        "many profiles 20 replicates": (
            median_call(replicates, max(1, repeat // 4)),
            repr(replicates()),
        ),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=["fpr", "bias", "gauss", "profiles", "fpr1m", "many"])
    ap.add_argument("--repeat", type=int, default=20, help="timed calls after one warm-up")
    args = ap.parse_args()
    if args.case == "profiles":
        results = profile_case(args.repeat)
    elif args.case == "fpr1m":
        results = fpr1m_case(args.repeat)
    elif args.case == "many":
        results = many_case(args.repeat)
    else:
        results = compas_cases(args.case, args.repeat)
    for name, (seconds, digest) in results.items():
        print(f"{name}\t{seconds * 1000:.3f} ms\t{digest[:80]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
