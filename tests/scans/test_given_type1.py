"""Type-I error of the given-subgroup tests of ijdi_scan, cbs, subroc and shift (issue 26).

Each simulation draws null tables (the scan's own null hypothesis holds for the given subgroup)
and counts how often the subgroup's p-value is at most alpha = 0.05 and 0.1. The fast versions
(a few hundred tables) bound the rate from above by alpha + 3 standard errors; the slow ones
(1,000 tables; CBS 300 with 39 permutations: each refits two models) check it is within 3 standard
errors of alpha. benchmarks/given_type1.py prints the same rates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

ALPHAS = (0.05, 0.1)


def _rates(p_values: list[float]) -> dict[float, float]:
    p = np.asarray(p_values)
    return {alpha: float(np.mean(p <= alpha)) for alpha in ALPHAS}


# --- IJDI: recommendations redrawn from the censored expectations of the base rates -----------


def ijdi_p(rng: np.random.Generator, table: int, replicates: int = 199) -> float:
    from fairscan.engine.ijdi import IjdiCells, fixed_draws, fixed_score
    from fairscan.engine.mdss import ScanProblem
    from fairscan.scans.given import monte_carlo_p

    n, lam = 1500, 0.5
    codes = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n)])
    base_rate = rng.uniform(0.2, 0.6, n)
    expected = np.clip(0.3 + lam * (base_rate - base_rate.mean()), 0.0, 1.0)
    recommendation = (rng.random(n) < expected).astype(np.float64)
    problem = ScanProblem.build(codes, np.zeros(n), np.full(n, 0.5))
    cells = IjdiCells.from_records(problem.codes, recommendation, base_rate, problem.cardinality)
    selection = np.ones((2, 3), dtype=bool)
    selection[0, 1:] = False  # attribute 0 = its first value
    best = fixed_score(cells, selection, lam, 0.0)
    if best.llr <= 0:
        return 1.0
    seed = np.random.SeedSequence(table)
    null = fixed_draws(cells, selection, lam=lam, seed=seed, replicates=replicates)
    return monte_carlo_p(best.llr, null)[0]


# --- CBS: the protected class independent of everything; permutation with refits -------------


def cbs_p(rng: np.random.Generator, table: int, replicates: int = 39) -> float:
    from fairscan.engine import cbs as engine
    from fairscan.scans.given import monte_carlo_p

    n = 800
    codes = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n)]).astype(np.int32)
    features = np.column_stack([codes[:, 0] == 1, codes[:, 0] == 2, codes[:, 1] == 1]).astype(float)
    y = (rng.random(n) < 0.35).astype(np.float64)
    rec = (rng.random(n) < np.where(y == 1, 0.6, 0.2) + 0.1 * features[:, 0]).astype(float)
    a = rng.random(n) < 0.4
    data = engine.CbsData(
        codes=codes,
        features=features,
        outcome=y,
        prediction=None,
        recommendation=rec,
        expectations=None,
    )
    settings = engine.CbsSettings(
        family="separation",
        on="recommendations",
        condition=0,
        event=1,
        direction=1,
        penalty=0.0,
        restarts=1,
    )
    inside = codes[:, 0] == 0
    est = engine.estimate(data, settings, a)
    observed = engine.fixed_llr(est, inside, settings)
    if observed <= 0:
        return 1.0
    job = engine.CbsFixedPermutation(data, a, settings, inside, np.random.SeedSequence(table))
    null = np.array([job(r) for r in range(replicates)])
    return monte_carlo_p(observed, null)[0]


# --- SubROC: scores independent of the attributes; random subsets of equal class counts -------


def subroc_p(rng: np.random.Generator, table: int, subsets: int = 199) -> float:
    from fairscan.engine.subroc import fixed_subset_tests

    n = 1200
    y = (rng.random(n) < 0.3).astype(np.int8)
    score = 1.5 * y + rng.normal(0.0, 1.0, n)
    inside = rng.integers(0, 3, n) == 0
    _, (test,) = fixed_subset_tests(
        y, score, [inside], "roc_auc", subsets, np.random.SeedSequence(table)
    )
    return test.test.p_value


# --- shift: the metric independent of the attributes; bootstrap of one group's gap ------------


def shift_p(rng: np.random.Generator, table: int, side: str = "lower") -> float:
    from fairscan.engine.fixed import gap_bootstrap, gap_p_value

    n = 1200
    L = (rng.random(n) < 0.2).astype(np.float64)
    inside = rng.integers(0, 3, n) == 0
    boot = gap_bootstrap(L, inside, theta=None, resamples=199, seed=np.random.SeedSequence(table))
    return gap_p_value(boot, side)[0]


def shift_both_p(rng: np.random.Generator, table: int) -> float:
    return shift_p(rng, table, "both")


SIMULATIONS: dict[str, Callable[[np.random.Generator, int], float]] = {
    "ijdi_scan": ijdi_p,
    "cbs": cbs_p,
    "subroc": subroc_p,
    "shift": shift_p,
    "shift_two_sided": shift_both_p,
}


def simulate(name: str, tables: int, seed: int) -> dict[float, float]:
    rng = np.random.default_rng(seed)
    return _rates([SIMULATIONS[name](rng, t) for t in range(tables)])


FAST_TABLES = {"cbs": 30, "ijdi_scan": 100, "shift": 100, "shift_two_sided": 100}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIMULATIONS))
def test_type_one_error_fast(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """100-200 null tables (CBS 30 with 19 permutations): the rate stays below alpha + 3 SE."""
    tables = FAST_TABLES.get(name, 200)
    monkeypatch.setitem(SIMULATIONS, "cbs", lambda rng, t: cbs_p(rng, t, replicates=19))
    rates = simulate(name, tables, seed=26)
    for alpha, rate in rates.items():
        assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / tables), rates


SLOW_TABLES = {"cbs": 300}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIMULATIONS))
def test_type_one_error_slow(name: str) -> None:
    """1,000 null tables (CBS 300): within 3 simulation standard errors of alpha."""
    tables = SLOW_TABLES.get(name, 1000)
    rates = simulate(name, tables, seed=2026)
    print(f"{name}: {tables} tables, rejection rates {rates}")
    for alpha, rate in rates.items():
        assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / tables), rates


@pytest.mark.parametrize("measure", ["roc_auc", "pr_auc", "ranking_loss"])
def test_subroc_alternative_has_the_baseline_gap_in_expectation(measure: str) -> None:
    """The power's alternative: random subsets whose positives are partly scored like
    negatives; their mean relative score is the gap asked for (the null's is about 0)."""
    from fairscan.engine.subroc import alternative_statistics, fixed_subset_tests

    rng = np.random.default_rng(5)
    n = 4000
    y = (rng.random(n) < 0.3).astype(np.int8)
    score = 1.5 * y + rng.normal(0.0, 1.0, n)
    inside = rng.integers(0, 4, n) == 0
    _, (fixed,) = fixed_subset_tests(y, score, [inside], measure, 400, np.random.SeedSequence(1))
    t = fixed.test
    gap = {"roc_auc": 0.1, "pr_auc": 0.1, "ranking_loss": 40.0}[measure]
    alt = alternative_statistics(
        y, score, t.positives, t.negatives, measure, gap, 400, np.random.SeedSequence(2)
    )
    assert fixed.null is not None
    spread = max(fixed.null.std(), 1e-9)
    assert alt.mean() - fixed.null.mean() == pytest.approx(gap, abs=0.2 * gap + 3 * spread / 20)
