"""Null replicate of the IJDI-Scan (methods.md §4.6), kept tiny so worker processes import little."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairscan.engine.ijdi import IjdiCells, ijdi_loop, null_expectations
from fairscan.engine.seeds import replicate_rng, replicate_search_seed


@dataclass(frozen=True)
class IjdiReplicate:
    """Redraw the recommendations from the censored expectations of the *original* base rates,
    then rerun the whole edge-case loop (pbar_b recomputed from the replicate)."""

    cells: IjdiCells
    lam: float
    penalty: float
    restarts: int
    max_passes: int
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        rng = replicate_rng(self.seed, index)
        expected = null_expectations(self.cells, self.lam)
        observed = self.cells.draw(expected, rng)
        outcome = ijdi_loop(
            self.cells.with_observed(observed),
            lam=self.lam,
            penalty=self.penalty,
            restarts=self.restarts,
            seed=replicate_search_seed(self.seed, index),
            max_passes=self.max_passes,
        )
        return outcome.best.score
