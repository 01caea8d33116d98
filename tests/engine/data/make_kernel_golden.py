"""Record what the compiled kernels must reproduce bit for bit (issue 11).

Run once, by hand, with the numba kernels the Cython port replaced (fairscan 0.1, commit
5d4c88c, plus the Poisson score added just before the port) importable as a file::

    <venv with numba and numpy>/bin/python tests/engine/data/make_kernel_golden.py \\
        /path/to/numba/kernels.py tests/engine/data/kernel_golden.json.gz

It draws seeded random cell tables (1-4 attributes, Bernoulli, Gaussian and Poisson
likelihoods, constant and varying expectations, both directions, penalties 0-5) and stores the
inputs with the results of ``coordinate_ascent(_lik)``, ``score_selection_lik`` and one
``ltss_step_lik`` each; floats as ``float.hex`` so the comparison is exact.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys

import numpy as np


def load(path: str):
    spec = importlib.util.spec_from_file_location("numba_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cells(rng: np.random.Generator, likelihood: int) -> dict:
    m = int(rng.integers(1, 5))
    card = rng.integers(1, 6, m).astype(np.int32)
    n = int(rng.integers(1, 120))
    codes = np.stack([rng.integers(0, k, n) for k in card], 1).astype(np.int32)
    const = bool(rng.random() < 0.3)
    w = rng.integers(1, 30, n).astype(np.float64)
    if likelihood == 0:
        p = np.full(n, 0.3) if const else np.round(rng.uniform(0.01, 0.99, n), 3)
        c = np.minimum(
            w, rng.binomial(w.astype(np.int64), np.clip(p * rng.uniform(0.5, 1.8), 0, 1))
        )
    elif likelihood == 2:
        p = np.full(n, 2.0) if const else np.round(rng.uniform(0.2, 4.0, n), 2)
        c = rng.poisson(w * p * rng.uniform(0.5, 1.8)).astype(np.float64)
    else:
        p = np.zeros(n)
        c = np.round(rng.normal(0.3, 2.0, n) * np.sqrt(w), 6)
    return {"codes": codes, "c": c.astype(np.float64), "w": w, "p": p, "card": card, "const": const}


def hexes(values) -> list[str]:
    return [float(v).hex() for v in np.asarray(values, dtype=np.float64).ravel()]


def main() -> None:
    k = load(sys.argv[1])
    rng = np.random.default_rng(20261123)
    cases = []
    for i in range(90):
        likelihood = (0, 1, 2)[i % 3]
        t = cells(rng, likelihood)
        direction = int(rng.choice([1, -1]))
        penalty = float(rng.choice([0.0, 0.3, 1.0, 5.0]))
        restarts = int(rng.integers(1, 25))
        seed = int(rng.integers(0, 2**63))
        sigma = float(np.round(rng.uniform(0.5, 2.0), 3))
        args = (
            t["codes"],
            t["c"],
            t["w"],
            t["p"],
            t["const"],
            t["card"],
            direction,
            penalty,
            restarts,
            np.uint64(seed),
        )
        sel, best = k.coordinate_ascent_lik(*args, likelihood, sigma)
        scored = k.score_selection_lik(
            t["codes"], t["c"], t["w"], t["p"], sel, direction, likelihood, sigma
        )
        # one attribute step from a random subgroup
        kmax = int(t["card"].max())
        start = np.zeros((len(t["card"]), kmax), np.bool_)
        for a, size in enumerate(t["card"]):
            start[a, :size] = rng.random(size) < 0.7
            start[a, 0] |= not start[a, :size].any()
        mismatch = np.zeros(len(t["c"]), np.int32)
        k._compute_mismatch(t["codes"], start, mismatch)
        j = int(rng.integers(0, len(t["card"])))
        row = np.zeros(kmax, np.bool_)
        step = k.ltss_step_lik(
            t["codes"],
            t["c"],
            t["w"],
            t["p"],
            t["const"],
            start,
            t["card"],
            mismatch,
            j,
            penalty,
            direction,
            row,
            likelihood,
            sigma,
        )
        cases.append(
            {
                "codes": t["codes"].tolist(),
                "c": hexes(t["c"]),
                "w": hexes(t["w"]),
                "p": hexes(t["p"]),
                "card": t["card"].tolist(),
                "const": t["const"],
                "likelihood": likelihood,
                "direction": direction,
                "penalty": penalty.hex(),
                "restarts": restarts,
                "seed": seed,
                "sigma": sigma.hex(),
                "best_selection": sel.astype(int).tolist(),
                "best": float(best).hex(),
                "scored": hexes(scored),
                "start": start.astype(int).tolist(),
                "j": j,
                "step": float(step).hex(),
                "step_row": row.astype(int).tolist(),
            }
        )
    with gzip.open(sys.argv[2], "wt", encoding="utf-8") as out:
        json.dump(
            {"source": "numba kernels of fairscan 0.1 (5d4c88c) + Poisson", "cases": cases}, out
        )


if __name__ == "__main__":
    main()
