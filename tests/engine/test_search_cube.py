"""Steps that add the cells' counts from a data cube (search_core.grid_index_cube, issue 36).

A constant-expectation scan (FPR-/TPR-Scan) over whole-number counts takes each attribute
step's per-value sums from the cube instead of listing the relaxed subgroup's cells. The
sums are exact integers, so the search must return the same bits as listing cells
(``cube=False``), and the optimum of the independent brute-force oracle where it is global.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from brute_force import brute_force_scan

from fairscan.engine import kernels
from fairscan.engine.cells import bernoulli_sums
from fairscan.engine.mdss import ScanProblem, search

GENERATOR = Path(__file__).resolve().parents[2] / "benchmarks" / "make_realistic.py"
_spec = importlib.util.spec_from_file_location("fairscan_bench_make_realistic", GENERATOR)
assert _spec is not None and _spec.loader is not None
make_realistic = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = make_realistic
_spec.loader.exec_module(make_realistic)


def _args(cells, direction: int, penalty: float, restarts: int, seed: int) -> tuple:
    return (
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        cells.constant_expectation,
        cells.cardinality,
        direction,
        penalty,
        restarts,
        np.uint64(seed),
    )


def _constant_table(rng: np.random.Generator, m: int, card: int, rows: int, rate: float):
    codes = rng.integers(0, card, (rows, m)).astype(np.int32)
    tilt = np.where(codes[:, 0] == 0, 0.15, 0.0)
    observed = (rng.random(rows) < rate + tilt).astype(np.float64)
    return codes, observed, np.full(rows, rate)


@pytest.mark.parametrize(
    ("m", "card", "rows"),
    [(8, 6, 3000), (5, 3, 400), (3, 5, 60), (6, 2, 2000), (4, 7, 30)],
)
def test_cube_steps_give_the_same_bits_as_listing_cells(m, card, rows):
    rng = np.random.default_rng(m * 100 + card)
    codes, observed, expected = _constant_table(rng, m, card, rows, 0.3)
    cells = ScanProblem.build(codes, observed, expected).cells()
    assert kernels._cube_exact(
        cells.observed, cells.weight, cells.expected, True, kernels.BERNOULLI
    )
    for direction in (1, -1):
        for penalty in (0.0, 1.0, 3.0):
            args = _args(cells, direction, penalty, 8, int(rng.integers(1 << 62)))
            cube = kernels.coordinate_ascent(*args)
            listed = kernels.coordinate_ascent(*args, cube=False)
            assert cube[0].tobytes() == listed[0].tobytes()
            assert cube[1] == listed[1]
            # a null replicate's counts (cells of several rows draw Binomial sums)
            null = bernoulli_sums(cells, np.random.default_rng(int(rng.integers(1 << 32))))
            null_args = (args[0], null, *args[2:])
            cube = kernels.coordinate_ascent(*null_args)
            listed = kernels.coordinate_ascent(*null_args, cube=False)
            assert cube[0].tobytes() == listed[0].tobytes()
            assert cube[1] == listed[1]


def test_cube_search_reaches_the_brute_force_optimum():
    rng = np.random.default_rng(36)
    for case in range(12):
        m = int(rng.integers(2, 4))
        card = int(rng.integers(2, 5))
        rows = int(rng.integers(50, 400))
        codes, observed, expected = _constant_table(rng, m, card, rows, 0.25)
        codes = np.repeat(codes, 2, axis=0)  # cells of several rows
        observed = np.repeat(observed, 2)
        expected = np.repeat(expected, 2)
        direction = 1 if case % 3 else -1
        penalty = float(rng.choice([0.0, 0.5, 1.0]))
        cells = ScanProblem.build(codes, observed, expected).cells()
        assert float(cells.weight.max()) >= 2.0
        got = search(cells, direction=direction, penalty=penalty, restarts=60, seed=case)
        name = "positive" if direction > 0 else "negative"
        want = brute_force_scan(codes, observed, expected, name, penalty)
        assert got.score == pytest.approx(want.J, rel=1e-8, abs=1e-8), (case, want.describe())


def test_only_exact_sums_take_the_cube():
    c = np.array([1.0, 0.0, 2.0])
    w = np.array([1.0, 1.0, 3.0])
    p = np.full(3, 0.2)
    assert kernels._cube_exact(c, w, p, True, kernels.BERNOULLI)
    assert not kernels._cube_exact(c + 0.5, w, p, True, kernels.BERNOULLI)  # fractional counts
    assert not kernels._cube_exact(c, w * 0.5, p, True, kernels.BERNOULLI)
    assert not kernels._cube_exact(c, w, np.array([0.2, 0.3, 0.2]), True, kernels.BERNOULLI)
    assert not kernels._cube_exact(c, w, p, False, kernels.BERNOULLI)
    assert not kernels._cube_exact(c, w, p, True, kernels.GAUSSIAN)
    assert not kernels._cube_exact(c, np.array([1.0, 0.0, 3.0]), p, True, kernels.BERNOULLI)


def test_realistic_table_finds_the_planted_subgroup_with_the_same_bits():
    """benchmarks/make_realistic.py at 1/100 of its size: cells about rows."""
    table = make_realistic.make_table(rows=20_000)
    negatives = table["defaulted"] == 0
    observed = table["flagged"][negatives].astype(np.float64)
    codes = table["codes"][negatives].astype(np.int32)
    cells = ScanProblem.build(codes, observed, np.full(observed.shape[0], observed.mean())).cells()
    assert cells.n_cells > 0.8 * observed.shape[0]
    args = _args(cells, 1, 1.0, 20, 5)
    cube = kernels.coordinate_ascent(*args)
    listed = kernels.coordinate_ascent(*args, cube=False)
    assert cube[0].tobytes() == listed[0].tobytes()
    assert cube[1] == listed[1]
    best = search(cells, direction=1, penalty=1.0, restarts=20, seed=5)
    inside = ScanProblem.build(codes, observed, observed).members(best.selection)
    planted = make_realistic.planted(codes)
    assert (inside & planted).sum() >= 0.8 * planted.sum()
    assert (inside & ~planted).sum() <= 0.2 * inside.sum()
