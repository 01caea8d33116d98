"""Profile summaries from per-profile sums taken where the rows are (issue 27: a database sums
log(1 - p + p e^u) at the expansion nodes, and returns the probabilities in bins).

* coefficients from node sums equal the kernel's coefficients from rows;
* the search and the score from the sums equal the row-level ones (1e-9 relative);
* null replicates drawn per probability bin (Binomial(count, bin mean)) give the p-values of
  the row-level replicates (Bernoulli per row) within simulation error, and hold their level
  under the null (a fast version here; the long simulation is marked slow).
"""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine import expectation_kernels
from fairscan.engine.cells import compress
from fairscan.engine.expectation_cells import (
    ExpectationCells,
    ExpectationReplicate,
    ProfileSums,
    coefficients_from_nodes,
    from_profile_sums,
    nodes,
    pieces,
    profiles_of,
    score_subgroup,
    search,
    summarise,
)
from fairscan.engine.mdss import EPSILON, ScanProblem
from fairscan.engine.mdss import score_subgroup as row_score_subgroup
from fairscan.engine.randomization import NullSettings, p_value, run_replicates
from fairscan.engine.seeds import child_seed

REL = 1e-9
CARD = np.array([4, 3, 5], np.int32)


def _data(rng: np.random.Generator, n: int, effect: float) -> tuple[np.ndarray, ...]:
    codes = np.stack([rng.integers(0, k, n) for k in CARD], axis=1).astype(np.int32)
    p = np.clip(rng.beta(2.0, 3.0, n), EPSILON, 1.0 - EPSILON)
    inside = (codes[:, 0] == 0) & (codes[:, 1] == 1)
    y = (rng.random(n) < np.clip(p + effect * inside, 0.0, 1.0)).astype(np.float64)
    return codes, y, p


def _node_values(p: np.ndarray, direction: int) -> np.ndarray:
    """log(1 - p + p e^u) at the nodes, per row (as a database computes it)."""
    u = nodes(direction)
    x = p[:, None] * np.expm1(u)[None, :]
    far = np.log((1.0 - p)[:, None] + p[:, None] * np.exp(u)[None, :])
    return np.where(x < -0.5, far, np.log1p(x))


def _sums(codes: np.ndarray, p: np.ndarray, direction: int) -> tuple[np.ndarray, ProfileSums]:
    """Per-profile sums of the rows (what fairscan.data.pushdown asks the database for)."""
    keys, row_profile = np.unique(codes, axis=0, return_inverse=True)
    n = keys.shape[0]
    row_profile = row_profile.reshape(-1)

    def add(values: np.ndarray) -> np.ndarray:
        return np.bincount(row_profile, weights=values, minlength=n)

    values = np.zeros((n, nodes(direction).shape[0]))
    np.add.at(values, row_profile, _node_values(p, direction))
    sums = ProfileSums(
        weight=add(np.ones_like(p)),
        expected=add(p),
        k2=add(p * (1 - p)),
        k3=add(p * (1 - p) * (1 - 2 * p)),
        values={direction: values},
    )
    return row_profile, sums


def _binned(
    codes: np.ndarray, y: np.ndarray, p: np.ndarray, direction: int, bins: int
) -> ExpectationCells:
    """The summary a database returns: (profile, outcome, probability bin) cells with the
    bin's mean probability, and the exact per-profile sums."""
    row_profile, sums = _sums(codes, p, direction)
    b = np.minimum(np.floor(p * bins), bins - 1).astype(np.int64)
    key = (row_profile * 2 + y.astype(np.int64)) * bins + b
    uniq, inverse = np.unique(key, return_inverse=True)
    count = np.bincount(inverse)
    mean = np.bincount(inverse, weights=p) / count
    first = np.zeros(uniq.shape[0], np.int64)
    first[inverse[::-1]] = np.arange(inverse.shape[0])[::-1]
    cells = compress(codes[first], y[first] * count, mean, CARD, count.astype(np.float64))
    cell_profile = np.zeros(cells.n_cells, np.int64)
    cell_profile[cells.row_cell] = row_profile[first]
    return from_profile_sums(cells, profiles_of(cells), cell_profile, sums, direction)


@pytest.mark.parametrize("direction", [1, -1])
def test_coefficients_from_node_sums_are_the_kernels(direction: int) -> None:
    rng = np.random.default_rng(5)
    codes, _y, p = _data(rng, 3000, 0.0)
    row_profile, sums = _sums(codes, p, direction)
    breaks, offsets = pieces(direction)
    kernel = expectation_kernels.fit_coefficients(
        row_profile, np.ones_like(p), p, sums.weight.shape[0], breaks, offsets
    )
    ours = coefficients_from_nodes(sums.values[direction], sums.k2, sums.k3, direction)
    scale = np.abs(kernel).max(axis=1, keepdims=True)
    assert np.abs(ours - kernel).max() <= 1e-13 * scale.max()


@pytest.mark.parametrize("direction", [1, -1])
def test_summary_from_sums_finds_and_scores_as_the_rows(direction: int) -> None:
    rng = np.random.default_rng(11 + direction)
    codes, y, p = _data(rng, 20000, 0.08 * direction)
    problem = ScanProblem.build(codes, y, p)
    rows = problem.cells()
    in_memory = summarise(rows, direction)
    pushed = _binned(codes, y, p, direction, 1000)
    found_memory = search(in_memory, penalty=1.0, restarts=5, seed=3)
    found = search(pushed, penalty=1.0, restarts=5, seed=3)
    assert np.array_equal(found.selection, found_memory.selection)
    exact = row_score_subgroup(rows, found.selection, direction, 1.0)
    assert found.score == pytest.approx(exact.score, rel=REL)
    assert found.llr == pytest.approx(exact.llr, rel=REL)
    assert (found.size, found.observed) == (exact.size, exact.observed)
    assert found.expected == pytest.approx(exact.expected, rel=1e-12)
    whole = np.ones((3, int(CARD.max())), bool)
    assert score_subgroup(pushed, whole, 0.0).llr == pytest.approx(
        row_score_subgroup(rows, whole, direction, 0.0).llr, rel=REL, abs=1e-9
    )


def _p_values(
    codes: np.ndarray, y: np.ndarray, p: np.ndarray, direction: int, bins: int, replicates: int
) -> tuple[float, float]:
    """p-values of the observed maximum: row-level replicates, binned replicates."""
    settings = NullSettings(direction, 1.0, 3)
    rows = summarise(ScanProblem.build(codes, y, p).cells(), direction)
    binned = _binned(codes, y, p, direction, bins)
    observed = search(rows, penalty=1.0, restarts=3, seed=1).score
    out = []
    for summary, stream in ((rows, 1), (binned, 2)):
        job = ExpectationReplicate(summary, settings, child_seed(np.random.SeedSequence(9), stream))
        out.append(p_value(observed, run_replicates(job, replicates))[0])
    return out[0], out[1]


@pytest.mark.parametrize("bins", [1000, 10])
def test_binned_replicates_give_the_row_level_p_values(bins: int) -> None:
    """Bins of width 1/bins: the row-level and binned p-values differ by no more than two
    independent estimates of one p-value do (4 standard errors of the difference)."""
    rng = np.random.default_rng(21)
    codes, y, p = _data(rng, 8000, 0.05)
    replicates = 300
    rows, binned = _p_values(codes, y, p, 1, bins, replicates)
    mid = 0.5 * (rows + binned)
    se = np.sqrt(2.0 * max(mid * (1.0 - mid), 0.01) / replicates)
    assert abs(rows - binned) <= 4.0 * se, (rows, binned)


def _type1(datasets: int, replicates: int, bins: int, seed: int) -> np.ndarray:
    """p-values of binned replicates on data drawn under the null (y ~ Bernoulli(p))."""
    rng = np.random.default_rng(seed)
    out = np.empty(datasets)
    for d in range(datasets):
        codes, y, p = _data(rng, 3000, 0.0)
        summary = _binned(codes, y, p, 1, bins)
        observed = search(summary, penalty=1.0, restarts=3, seed=d).score
        job = ExpectationReplicate(
            summary, NullSettings(1, 1.0, 3), child_seed(np.random.SeedSequence(d), 1)
        )
        out[d] = p_value(observed, run_replicates(job, replicates))[0]
    return out


@pytest.mark.slow
def test_binned_replicates_hold_the_level_fast() -> None:
    """60 null datasets, 19 replicates: rejections at 0.05 and 0.1 within the binomial
    range of a valid test (the slow test below measures the level itself)."""
    p = _type1(60, 19, 10, 4)
    assert np.mean(p <= 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 60)
    assert np.mean(p <= 0.1) <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / 60)


@pytest.mark.slow
@pytest.mark.parametrize("bins", [1000, 10])
def test_binned_replicates_hold_the_level(bins: int) -> None:
    """1,000 null datasets, 99 replicates each: the type-I error at alpha 0.05 and 0.1 is
    the level (within 3 Monte-Carlo standard errors: 0.021 and 0.028)."""
    datasets = 1000
    p = _type1(datasets, 99, bins, 40 + bins)
    for alpha in (0.05, 0.1):
        rate = float(np.mean(p <= alpha))
        assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / datasets), (alpha, rate)
