"""Scoring functions of the MDSS scans beyond the Bernoulli default (AIF360 ``bias_scan`` parity).

Every score is an exact LTSS-able likelihood ratio over cells (methods.md §1.4):

* **Bernoulli**: odds multiplier q on per-row probabilities (the default, methods.md §1.4.1).
* **Berk-Jones** at level alpha: the Bernoulli score with the constant expectation alpha,
  ``N KL(C/N || alpha)`` (the nonparametric scan statistic). A grid of alphas scores the maximum
  over the grid; the randomization test takes the same maximum in every replicate, so the
  p-value accounts for the choice of alpha. Constant expectation -> cells regrouped by profile.
* **Poisson**: rate multiplier q on per-row means, ``C log q - E (q - 1)`` (concave in log q,
  so the q-interval LTSS step is exact).
* **Gaussian**: mean shift mu of residuals with known per-row variances; with the observed
  ``Delta_i / sigma_i^2`` and weight ``1 / sigma_i^2`` the score is ``s^2 / (2 n)`` (sigma 1),
  the heteroscedastic mean-shift likelihood-ratio maximum (one interval in mu: exact LTSS).

No polars/pydantic here: the engine layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from fairscan.engine import kernels
from fairscan.engine.cells import Cells, bernoulli_sums, compress
from fairscan.engine.mdss import SubgroupScore, score_subgroup, search

# How a null replicate redraws a cell's observed sum (methods.md §1.5 generalised):
# binomial = Binomial(weight, expected); poisson = Poisson(weight * expected);
# gaussian = N(0, weight) (the sum of Delta_i / sigma_i^2 over the cell's rows);
# with fractional sample weights w_i every draw is per row times w_i (Bernoulli, Poisson, the
# permuted residuals), and the Gaussian cell sum sum_i w_i Delta_i / sigma_i^2 is drawn from its
# exact law N(0, sum_i w_i^2 / sigma_i^2) (``Cells.draw_variance``);
# permutation = the cell's expectation plus the residuals (outcome - expectation) of its rows
# permuted across all rows: keeps the outcome's own dispersion (ordinal codes, whose spread a
# Poisson null gets wrong: uniform deciles gave 11% rejections at level 5% under Poisson draws).
Draw = Literal["binomial", "poisson", "gaussian", "permutation"]


@dataclass(frozen=True)
class Score:
    """How a scan scores its cells: a kernel likelihood, and a Berk-Jones grid when not empty."""

    likelihood: int = kernels.BERNOULLI
    sigma: float = 1.0  # Gaussian only (the weighted formulation uses 1)
    alphas: tuple[float, ...] = ()  # Berk-Jones levels: Bernoulli against each constant alpha

    def __post_init__(self) -> None:
        if self.alphas and self.likelihood != kernels.BERNOULLI:
            raise ValueError("a Berk-Jones grid needs the Bernoulli likelihood")
        if any(not 0.0 < a < 1.0 for a in self.alphas):
            raise ValueError(f"Berk-Jones alphas must lie in (0, 1), got {self.alphas}")
        if not self.sigma > 0.0:
            raise ValueError(f"sigma must be positive, got {self.sigma}")


BERNOULLI = Score()
POISSON = Score(kernels.POISSON)


def berk_jones(alphas: tuple[float, ...] | float) -> Score:
    """The Berk-Jones score at one alpha, or the maximum over a grid of alphas."""
    grid = (alphas,) if isinstance(alphas, float | int) else tuple(alphas)
    if not grid:
        raise ValueError("a Berk-Jones grid needs at least one alpha")
    return Score(alphas=tuple(float(a) for a in grid))


def gaussian() -> Score:
    """The mean-shift score in the weighted formulation (cells carry Delta/sigma^2, 1/sigma^2)."""
    return Score(kernels.GAUSSIAN)


def profile_cells(cells: Cells) -> Cells:
    """Cells regrouped by attribute profile alone (for a score with a constant expectation)."""
    if cells.constant_expectation:
        return cells
    return compress(
        cells.codes,
        cells.observed,
        np.zeros(cells.n_cells),
        cells.cardinality,
        weight=cells.weight,
    )


def pooled_means(cells: Cells) -> Cells:
    """Cells regrouped by profile for the Poisson score, exactly: the score of a set depends on
    its sums of observed counts and of expectations only, and a sum of independent Poisson
    counts is Poisson with the summed mean, so a profile cell keeps its row count as weight and
    the mean expectation of its rows (weight * expected = the summed expectation)."""
    grouped = profile_cells(cells)
    if grouped is cells:
        return cells
    total = np.bincount(
        grouped.row_cell, weights=cells.weight * cells.expected, minlength=grouped.n_cells
    )
    return replace(
        grouped,
        expected=total / grouped.weight,
        row_cell=grouped.row_cell[cells.row_cell],
        constant_expectation=False,
    )


def at_alpha(cells: Cells, alpha: float) -> Cells:
    """Profile cells scored against the constant expectation ``alpha`` (Berk-Jones)."""
    return replace(cells, expected=np.full(cells.n_cells, alpha), constant_expectation=True)


@dataclass(frozen=True)
class ScoredSubgroup:
    """The best subgroup of a scan, and the Berk-Jones alpha that scored it (None otherwise)."""

    best: SubgroupScore
    alpha: float | None = None


def best_subgroup(
    cells: Cells, score: Score, *, direction: int, penalty: float, restarts: int, seed: int
) -> ScoredSubgroup:
    """The search under ``score``; for a Berk-Jones grid the best over the grid (ties: first)."""
    if not score.alphas:
        best = search(
            cells,
            direction=direction,
            penalty=penalty,
            restarts=restarts,
            seed=seed,
            likelihood=score.likelihood,
            sigma=score.sigma,
        )
        return ScoredSubgroup(best)
    grouped = profile_cells(cells)
    found: ScoredSubgroup | None = None
    for alpha in score.alphas:
        best = search(
            at_alpha(grouped, alpha),
            direction=direction,
            penalty=penalty,
            restarts=restarts,
            seed=seed,
        )
        if found is None or best.score > found.best.score:
            found = ScoredSubgroup(best, alpha)
    assert found is not None
    return found


def score_given(
    cells: Cells, score: Score, selection: np.ndarray, *, direction: int, penalty: float
) -> ScoredSubgroup:
    """A given subgroup scored as the search would score it (Berk-Jones: its best level)."""
    if not score.alphas:
        return ScoredSubgroup(
            score_subgroup(
                cells,
                selection,
                direction,
                penalty,
                likelihood=score.likelihood,
                sigma=score.sigma,
            )
        )
    grouped = profile_cells(cells)
    found: ScoredSubgroup | None = None
    for alpha in score.alphas:
        best = score_subgroup(at_alpha(grouped, alpha), selection, direction, penalty)
        if found is None or best.score > found.best.score:
            found = ScoredSubgroup(best, alpha)
    assert found is not None
    return found


def draw_cells(
    cells: Cells, draw: Draw, rng: np.random.Generator, residuals: np.ndarray | None = None
) -> Cells:
    """One null replicate of the cells' observed sums (the rows' null law, summed per cell).

    ``residuals`` (per row, in ``cells.row_cell`` order) are needed by the permutation draw.
    """
    if draw == "permutation":
        if residuals is None:
            raise ValueError("the permutation draw needs the rows' residuals")
        shuffled = rng.permutation(residuals)
        if cells.row_weight is not None:  # fractional weights: each row's draw times its weight
            shuffled = shuffled * cells.row_weight
        sums = np.bincount(cells.row_cell, weights=shuffled, minlength=cells.n_cells)
        return replace(cells, observed=cells.weight * cells.expected + sums)
    if draw == "binomial":
        observed = bernoulli_sums(cells, rng)
    elif draw == "poisson":
        observed = poisson_sums(cells, rng)
    elif draw == "gaussian":
        variance = cells.weight if cells.draw_variance is None else cells.draw_variance
        observed = rng.normal(0.0, np.sqrt(variance))
    else:
        raise ValueError(f"unknown null draw {draw!r}")
    return replace(cells, observed=np.asarray(observed, dtype=np.float64))


def poisson_sums(cells: Cells, rng: np.random.Generator) -> np.ndarray:
    """One null replicate of the cells' observed sums under Poisson(expected) rows: per unit of
    weight (``Poisson(weight * expected)`` per cell), or with fractional row weights per row,
    each row's draw times its weight (a weighted sum of Poisson counts is not Poisson)."""
    if cells.row_weight is None:
        return rng.poisson(cells.weight * cells.expected).astype(np.float64)
    drawn = rng.poisson(cells.expected[cells.row_cell])
    return np.bincount(
        cells.row_cell, weights=drawn * cells.row_weight, minlength=cells.n_cells
    ).astype(np.float64)


def draw_classes(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row from its class probabilities (rows sum to 1): class index."""
    cumulative = np.cumsum(probabilities, axis=1)
    u = rng.random(probabilities.shape[0]) * cumulative[:, -1]
    classes = (cumulative <= u[:, None]).sum(axis=1)
    return np.minimum(classes, probabilities.shape[1] - 1)


__all__ = [
    "BERNOULLI",
    "POISSON",
    "Draw",
    "Score",
    "ScoredSubgroup",
    "at_alpha",
    "berk_jones",
    "best_subgroup",
    "draw_cells",
    "draw_classes",
    "gaussian",
    "poisson_sums",
    "pooled_means",
    "profile_cells",
    "score_given",
]
