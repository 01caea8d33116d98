"""Randomization test with parametric Bernoulli null replicates (methods.md §1.5).

Each replicate redraws the observed indicator as ``Bernoulli(expected)`` per row (drawn per
cell as ``Binomial(weight, expected)``, the same law) and reruns the identical search; the
statistic is the maximised penalised objective J*. Replicate ``r`` draws from its own
``SeedSequence`` child, addressed by index, so results are bit-identical for a seed whatever
the number of worker processes.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from fairscan.engine.cells import Cells
from fairscan.engine.mdss import max_score

TIE_TOLERANCE = 1e-9  # null scores within this relative distance of the observed count as ties


def child_seed(seed: np.random.SeedSequence, *path: int) -> np.random.SeedSequence:
    """The child of ``seed`` at ``path``: independent streams addressed by index, not call order."""
    return np.random.SeedSequence(entropy=seed.entropy, spawn_key=(*seed.spawn_key, *path))


def search_seed(seed: np.random.SeedSequence) -> int:
    """A 63-bit integer seed for the compiled search, derived from a SeedSequence."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@dataclass(frozen=True)
class NullSettings:
    direction: int
    penalty: float
    restarts: int


@dataclass(frozen=True)
class NullResult:
    scores: np.ndarray  # (R,) max penalised score of each replicate, replicate order
    observed_score: float
    exceed_count: int
    p_value: float
    quantile: float  # empirical (1 - alpha) quantile of the null maxima
    alpha: float

    @property
    def significant(self) -> bool:
        return self.p_value <= self.alpha


def replicate_score(
    cells: Cells, settings: NullSettings, seed: np.random.SeedSequence, index: int
) -> float:
    rng = np.random.Generator(np.random.PCG64(child_seed(seed, index)))
    observed = rng.binomial(cells.weight.astype(np.int64), cells.expected).astype(np.float64)
    null_cells = replace(cells, observed=observed)
    return max_score(
        null_cells,
        direction=settings.direction,
        penalty=settings.penalty,
        restarts=settings.restarts,
        seed=search_seed(child_seed(seed, index, 0)),
    )


# Worker-process state, set once per process by the pool initializer.
_WORKER: dict[str, object] = {}


def _init_worker(cells: Cells, settings: NullSettings, seed: np.random.SeedSequence) -> None:
    _WORKER.update(cells=cells, settings=settings, seed=seed)


def _run_chunk(start: int, stop: int) -> tuple[int, np.ndarray]:
    cells = _WORKER["cells"]
    settings = _WORKER["settings"]
    seed = _WORKER["seed"]
    assert isinstance(cells, Cells) and isinstance(settings, NullSettings)
    assert isinstance(seed, np.random.SeedSequence)
    out = np.array([replicate_score(cells, settings, seed, r) for r in range(start, stop)])
    return start, out


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def null_scores(
    cells: Cells,
    settings: NullSettings,
    seed: np.random.SeedSequence,
    replicates: int,
    *,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Scores of ``replicates`` null replicates, in replicate order."""
    scores = np.empty(replicates)
    if replicates == 0:
        return scores
    # Process start-up (interpreter, numpy, cached kernels) costs ~1 s; not worth it for tiny runs.
    if workers <= 1 or replicates < 4 * workers:
        for r in range(replicates):
            scores[r] = replicate_score(cells, settings, seed, r)
            if on_progress is not None:
                on_progress(1)
        return scores
    n_chunks = min(replicates, workers * 16)
    bounds = np.linspace(0, replicates, n_chunks + 1).astype(int)
    # "spawn": the parent may hold polars/numba threads, which fork would copy in a bad state.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(cells, settings, seed),
    ) as pool:
        futures = [
            pool.submit(_run_chunk, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        try:
            for future in futures:
                start, chunk = future.result()
                scores[start : start + len(chunk)] = chunk
                if on_progress is not None:
                    on_progress(len(chunk))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return scores


def p_value(observed: float, scores: np.ndarray) -> tuple[float, int]:
    """Monte-Carlo p-value (1 + #{null >= observed}) / (1 + R) and the exceed count."""
    threshold = observed - TIE_TOLERANCE * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(scores >= threshold))
    return (1.0 + exceed) / (1.0 + len(scores)), exceed


def randomization_test(
    cells: Cells,
    settings: NullSettings,
    observed_score: float,
    seed: np.random.SeedSequence,
    replicates: int,
    alpha: float,
    *,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> NullResult:
    scores = null_scores(cells, settings, seed, replicates, workers=workers, on_progress=on_progress)
    p, exceed = p_value(observed_score, scores)
    quantile = float(np.quantile(scores, 1.0 - alpha, method="higher"))
    return NullResult(
        scores=scores,
        observed_score=observed_score,
        exceed_count=exceed,
        p_value=p,
        quantile=quantile,
        alpha=alpha,
    )
