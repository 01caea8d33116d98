"""Randomization test with parametric Bernoulli null replicates (methods.md §1.5).

Each replicate redraws the observed indicator as ``Bernoulli(expected)`` per row (drawn per
cell as ``Binomial(weight, expected)``, the same law) and reruns the identical search; the
statistic is the maximised penalised objective J*. Replicate ``r`` draws from its own
``SeedSequence`` child, addressed by index, so results are bit-identical for a seed whatever
the number of worker processes.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from fairscan.engine.cells import Cells
from fairscan.engine.mdss import max_score

# null scores within this relative distance of the observed score count as ties
TIE_TOLERANCE = 1e-9
# Effective cost of starting the worker pool on 2 cores (spawn, imports, numba cache load),
# measured in benchmarks/RESULTS.md section 2: 999 cheap replicates took 2.5 s serially, 3.3 s
# on two workers.
WORKER_STARTUP_SECONDS = 2.0


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


class ReplicateJob(Protocol):
    """A picklable callable: replicate index -> the null statistic of that replicate."""

    def __call__(self, index: int) -> float: ...


@dataclass(frozen=True)
class MdssReplicate:
    """Parametric Bernoulli replicate of a plain MDSS scan."""

    cells: Cells
    settings: NullSettings
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        rng = np.random.Generator(np.random.PCG64(child_seed(self.seed, index)))
        observed = rng.binomial(self.cells.weight.astype(np.int64), self.cells.expected)
        null_cells = replace(self.cells, observed=observed.astype(np.float64))
        return max_score(
            null_cells,
            direction=self.settings.direction,
            penalty=self.settings.penalty,
            restarts=self.settings.restarts,
            seed=search_seed(child_seed(self.seed, index, 0)),
        )


def replicate_score(
    cells: Cells, settings: NullSettings, seed: np.random.SeedSequence, index: int
) -> float:
    return MdssReplicate(cells, settings, seed)(index)


# Worker-process state, set once per process by the pool initializer.
_WORKER: dict[str, ReplicateJob] = {}


def _init_worker(job: ReplicateJob) -> None:
    # Ctrl-C reaches the whole process group; only the parent handles it (exit 130), so the
    # workers must not die printing tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER["job"] = job


def _run_chunk(start: int, stop: int) -> tuple[int, np.ndarray]:
    job = _WORKER["job"]
    return start, np.array([job(r) for r in range(start, stop)], dtype=np.float64)


def default_workers() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def run_replicates(
    job: ReplicateJob,
    replicates: int,
    *,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """``job(r)`` for r = 0..replicates-1, in parallel processes; results in replicate order."""
    scores = np.empty(replicates)
    if replicates == 0:
        return scores
    # Replicate 0 runs here: it warms the kernels and tells whether worker processes pay off
    # (each costs about a second to start: interpreter, numpy, the JIT cache). Replicates are
    # addressed by index, so the results do not depend on where each one runs.
    started = time.perf_counter()
    scores[0] = job(0)
    if on_progress is not None:
        on_progress(1)
    serial_estimate = (time.perf_counter() - started) * (replicates - 1)
    # parallel time ~ startup + serial / workers: worth it only when serial > startup * w / (w - 1)
    if workers <= 1 or serial_estimate < WORKER_STARTUP_SECONDS * workers / (workers - 1):
        for r in range(1, replicates):
            scores[r] = job(r)
            if on_progress is not None:
                on_progress(1)
        return scores
    n_chunks = min(replicates - 1, workers * 16)
    bounds = np.linspace(1, replicates, n_chunks + 1).astype(int)
    # "spawn": the parent may hold polars/numba threads, which fork would copy in a bad state.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(job,)
    ) as pool:
        futures = [pool.submit(_run_chunk, int(a), int(b)) for a, b in itertools.pairwise(bounds)]
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


def null_scores(
    cells: Cells,
    settings: NullSettings,
    seed: np.random.SeedSequence,
    replicates: int,
    *,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Scores of ``replicates`` parametric Bernoulli null replicates of a plain MDSS scan."""
    return run_replicates(
        MdssReplicate(cells, settings, seed), replicates, workers=workers, on_progress=on_progress
    )


def p_value(observed: float, scores: np.ndarray) -> tuple[float, int]:
    """Monte-Carlo p-value (1 + #{null >= observed}) / (1 + R) and the exceed count."""
    threshold = observed - TIE_TOLERANCE * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(scores >= threshold))
    return (1.0 + exceed) / (1.0 + len(scores)), exceed


def summarize(observed_score: float, scores: np.ndarray, alpha: float) -> NullResult:
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
    scores = null_scores(
        cells, settings, seed, replicates, workers=workers, on_progress=on_progress
    )
    return summarize(observed_score, scores, alpha)
