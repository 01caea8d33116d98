"""SubROC search benchmark on the Adult search split with xgboost scores (issue 6).

Depth-4 exhaustive ROC AUC search, min cover 20, top-5 (k' = 100), for
alpha_s = beta = 0 (with and without generalisation awareness) and alpha_s = beta = 1 with
generalisation awareness, and the full-framework ranking-loss search (only 3 patterns score > 0
there, so k' is never filled and pruning relies on "no specialisation can score > 0");
pruned and unpruned; 1 and 2 worker threads. Numeric attributes are binned with the shared
discretiser (5 quantile bins) on the search split only, as in the paper. "candidates" is the
number of positive-score patterns kept (at most k'; methods.md §6.6 step 1).

Usage: .venv/bin/python benchmarks/bench_subroc.py [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl

from fairscan.data.prepare import prepare_data
from fairscan.data.table import RoleColumn
from fairscan.engine.subroc import SearchConfig, search
from fairscan.spec.models import DiscretizeSpec

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult" / "adult_search_xgb.csv"
ATTRIBUTES = [
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "hours-per-week",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    frame = pl.read_csv(DATA)
    y_role = RoleColumn("y", "outcome", "columns.outcome")
    score_role = RoleColumn("score", "score", "columns.prediction")
    data = prepare_data(
        frame,
        roles=[y_role, score_role],
        attributes=ATTRIBUTES,
        discretize={
            "age": DiscretizeSpec(quantiles=5),
            "hours-per-week": DiscretizeSpec(quantiles=5),
        },
        max_categories=50,
        filter=None,
    )
    card = np.array([a.cardinality for a in data.attributes])
    args_ = (data.codes, data.role(y_role), data.role(score_role), card)
    t = time.perf_counter()
    search(*args_, SearchConfig(max_length=1))  # JIT load / compile
    print(f"first call (compile or cache load): {time.perf_counter() - t:.2f} s")
    print(f"rows {data.n_rows}, selectors {int(card.sum())}, attributes {len(card)}")
    settings = [
        ("0/0 basic", "roc_auc", 0.0, 0.0, False),
        ("0/0 GA", "roc_auc", 0.0, 0.0, True),
        ("1/1 GA", "roc_auc", 1.0, 1.0, True),
        ("ARL 1/1 GA", "ranking_loss", 1.0, 1.0, True),
    ]
    for label, measure, a, b, ga in settings:
        results = {}
        for prune in (True, False):
            for workers in sorted({1, args.workers}):
                cfg = SearchConfig(
                    measure=measure,
                    size_weight=a,
                    balance_weight=b,
                    generalization_aware=ga,
                    max_length=4,
                    min_cover=20,
                    candidates=100,
                    prune=prune,
                    workers=workers,
                )
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    res = search(*args_, cfg)
                    times.append(time.perf_counter() - t)
                results[(prune, workers)] = res
                print(
                    f"{label:10s} prune={prune!s:5s} workers={workers}: "
                    f"best {min(times):.3f} s (median {np.median(times):.3f}); "
                    f"evaluated {res.evaluated}, valid {res.valid}, pruned {res.pruned}, "
                    f"skipped {res.skipped}, candidates {len(res.patterns)}"
                )
        ref = results[(False, 1)]
        for key, res in results.items():
            same = [(p.selectors, p.score) for p in res.patterns] == [
                (p.selectors, p.score) for p in ref.patterns
            ]
            assert same, f"{label}: {key} differs from the unpruned single-thread search"
        print(f"  overall {measure} {ref.overall:.6f}; top-5 (identical in all runs):")
        for p in ref.patterns[:5]:
            words = " & ".join(
                f"{data.attributes[j].name} = {data.attributes[j].labels[v]}"
                for j, v in p.selectors
            )
            print(
                f"    score {p.score:11.4f}  {measure} {p.value:.4f}  n={p.size:5d} "
                f"(neg {p.negatives})  {words}"
            )


if __name__ == "__main__":
    main()
