"""Randomization test with parametric null replicates (methods.md §1.5).

Each replicate redraws the observed indicator as ``Bernoulli(expected)`` per row (drawn per
cell as ``Binomial(weight, expected)``, the same law) and reruns the identical search; the
statistic is the maximised penalised objective J*. Other scores draw from their own null law
(:func:`fairscan.engine.scores.draw_cells`: Poisson counts, Gaussian residuals, permuted
ordinal residuals) and a nominal outcome draws one class per row from its class probabilities
(:class:`NominalReplicate`). Replicate ``r`` draws from its own ``SeedSequence`` child,
addressed by index, so results are bit-identical for a seed whatever the number of worker
processes, and on a Dask cluster (:mod:`fairscan.engine.executors`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from fairscan.engine.cells import Cells, bernoulli_sums
from fairscan.engine.jobs import LOCAL, Executor, ReplicateJob
from fairscan.engine.mdss import max_score
from fairscan.engine.scores import BERNOULLI, Draw, Score, best_subgroup, draw_cells, draw_classes
from fairscan.engine.seeds import replicate_rng, replicate_search_seed
from fairscan.engine.sequential import StoppingRule, losses_of
from fairscan.interrupts import interrupt_of

# null scores within this relative distance of the observed score count as ties
TIE_TOLERANCE = 1e-9
# Effective cost of starting the worker pool (spawn, imports of numpy and the compiled engine):
# 0.14 s of wall for one worker, 0.30 s for two, about 0.5 s of CPU each, which a loaded machine
# pays in wall time too (benchmarks/RESULTS.md, issue 12; 2.0 s in the numba days, RESULTS.md §2).
WORKER_STARTUP_SECONDS = 1.0
# Replicates are sent to the workers in chunks of about this many seconds (estimated from
# replicate 0), so that progress moves and no chunk holds a worker for long.
CHUNK_SECONDS = 0.5


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
    # the sequential rule that stopped the replicates (None: the fixed count ran)
    rule: StoppingRule | None = None

    @property
    def significant(self) -> bool:
        return self.p_value <= self.alpha


@dataclass(frozen=True)
class MdssReplicate:
    """Parametric replicate of a plain MDSS scan: Bernoulli by default, else ``draw``/``score``."""

    cells: Cells
    settings: NullSettings
    seed: np.random.SeedSequence
    draw: Draw = "binomial"
    score: Score = BERNOULLI
    residuals: np.ndarray | None = None  # per row; the permutation draw only

    def __call__(self, index: int) -> float:
        rng = replicate_rng(self.seed, index)
        if self.draw == "binomial" and self.score == BERNOULLI:  # the original path, unchanged
            null_cells = replace(self.cells, observed=bernoulli_sums(self.cells, rng))
            return max_score(
                null_cells,
                direction=self.settings.direction,
                penalty=self.settings.penalty,
                restarts=self.settings.restarts,
                seed=replicate_search_seed(self.seed, index),
            )
        return best_subgroup(
            draw_cells(self.cells, self.draw, rng, self.residuals),
            self.score,
            direction=self.settings.direction,
            penalty=self.settings.penalty,
            restarts=self.settings.restarts,
            seed=replicate_search_seed(self.seed, index),
        ).best.score


@dataclass(frozen=True)
class NominalReplicate:
    """Replicate of a nominal (one-vs-all) scan: one class per row drawn from its class
    probabilities, jointly for all classes, then the maximum over the per-class scans.

    Taking the maximum over classes in every replicate is the multiplicity correction: the
    observed statistic is the best class's score, compared with the null law of the best.
    """

    class_cells: tuple[Cells, ...]  # per class: its cells (row_cell maps rows to them)
    probabilities: np.ndarray  # (n, K) null class probabilities per row
    settings: NullSettings
    seed: np.random.SeedSequence
    score: Score = BERNOULLI

    def __call__(self, index: int) -> float:
        rng = replicate_rng(self.seed, index)
        drawn = draw_classes(self.probabilities, rng)
        best = 0.0
        for k, cells in enumerate(self.class_cells):
            hits = (drawn == k).astype(np.float64)
            if cells.row_weight is not None:  # fractional sample weights: times the row's
                hits = hits * cells.row_weight
            observed = np.bincount(cells.row_cell, weights=hits, minlength=cells.n_cells)
            found = best_subgroup(
                replace(cells, observed=observed),
                self.score,
                direction=self.settings.direction,
                penalty=self.settings.penalty,
                restarts=self.settings.restarts,
                seed=replicate_search_seed(self.seed, index, k),
            )
            best = max(best, found.best.score)
        return best


@dataclass(frozen=True)
class LocalExecutor:
    """This machine: serially, or in ``workers`` worker processes when they pay off."""

    name: str = LOCAL

    def run_rest(
        self,
        job: ReplicateJob,
        scores: np.ndarray,
        per_replicate: float,
        workers: int,
        on_progress: Callable[[int], None] | None,
        start: int = 1,
    ) -> None:
        run_local(job, scores, per_replicate, workers, on_progress, start)


LOCAL_EXECUTOR = LocalExecutor()


def _reraise_interrupt(exc: BaseException) -> None:
    """An interrupt wrapped by a library call (e.g. a SystemError around it): raise the interrupt."""
    interrupt = interrupt_of(exc)
    if interrupt is not None and interrupt is not exc:
        raise interrupt from None


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
    executor: Executor | None = None,
    observed: float | None = None,
    rule: StoppingRule | None = None,
    on_estimate: Callable[[str], None] | None = None,
) -> np.ndarray:
    """``job(r)`` for r = 0..replicates-1, here (in parallel processes) or on the ``executor``'s
    cluster; results in replicate order, identical wherever they ran.

    With a stopping ``rule`` (and the ``observed`` statistic) the replicates run in rounds fixed
    by index and stop at the first replicate where the rule settles the decision: the scores
    returned are those up to it, the same for any worker count or executor."""
    scores = np.empty(replicates)
    if replicates == 0:
        return scores
    # Replicate 0 runs here: it warms the kernels and tells whether worker processes pay off
    # (each costs about half a second of CPU to start: interpreter, numpy, the engine). Its CPU
    # time, not its wall time, is the estimate: on a busy machine a preempted replicate 0 would
    # otherwise start a pool for a job that takes a second. Replicates are addressed by index,
    # so the results do not depend on where each one runs.
    started, wall = time.process_time(), time.perf_counter()
    try:
        scores[0] = job(0)
    except SystemError as exc:
        _reraise_interrupt(exc)
        raise
    if on_progress is not None:
        on_progress(1)
    per_replicate = time.process_time() - started
    # the estimate shown to the user is in wall time: what a loaded machine makes of a replicate
    per_replicate_wall = max(per_replicate, time.perf_counter() - wall)
    run = executor or LOCAL_EXECUTOR
    sequential = rule is not None and observed is not None and rule.applies
    if on_estimate is not None and replicates > 1:
        likely = None
        if sequential:
            assert rule is not None and observed is not None
            first = bool(losses_of(observed, scores[:1], TIE_TOLERANCE)[0])
            likely = rule.likely_replicates(first)
        on_estimate(cost_estimate(per_replicate_wall, replicates, workers, run.name, rule, likely))
    if not sequential:
        run.run_rest(job, scores, per_replicate, workers, on_progress)
        return scores
    assert rule is not None and observed is not None
    done = 1
    for end in rule.round_ends():
        if end <= done:
            continue
        # is the decision settled within the replicates run so far?
        stop = rule.outcome(losses_of(observed, scores[:done], TIE_TOLERANCE))
        if stop.decision != "open":
            return scores[: stop.replicates].copy()
        run.run_rest(job, scores[:end], per_replicate, workers, on_progress, start=done)
        done = end
    stop = rule.outcome(losses_of(observed, scores[:done], TIE_TOLERANCE))
    return scores[: stop.replicates].copy()


def _seconds(value: float) -> str:
    if value < 90:
        return f"{value:.0f} s" if value >= 1 else f"{value:.1g} s"
    if value < 5400:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def _lanes(per_replicate: float, replicates: int, workers: int, executor: str) -> int:
    """How many replicates run at once: the workers when :func:`run_local` starts them (the
    same break-even), one otherwise (a cluster's width is not known here)."""
    serial = per_replicate * (replicates - 1)
    if executor != LOCAL or workers <= 1:
        return 1
    return workers if serial >= WORKER_STARTUP_SECONDS * workers / (workers - 1) else 1


def _likely_seconds(
    per_replicate: float, likely: int, rule: StoppingRule, workers: int, executor: str
) -> float:
    """The time of replicates 0..likely - 1 as :func:`run_replicates` runs them: replicate 0,
    then round by round up to the round holding the likely stop, each round alone or on its
    lanes (:func:`run_local`'s choice: a round of one replicate never starts a pool)."""
    seconds, done = per_replicate, 1
    for end in rule.round_ends():
        if done >= likely:
            break
        if end <= done:
            continue
        size = end - done
        lanes = 1 if size < 2 else _lanes(per_replicate, size + 1, workers, executor)
        seconds += per_replicate * math.ceil(size / lanes)
        done = end
    return seconds


def cost_estimate(
    per_replicate: float,
    replicates: int,
    workers: int,
    executor: str,
    rule: StoppingRule | None,
    likely: int | None,
) -> str:
    """What the replicates will cost, in words, from replicate 0's time, with the ways out."""
    where = f"on {workers} worker{'s' if workers != 1 else ''}"
    if executor != LOCAL:
        where = f"on {executor}"
    lanes = _lanes(per_replicate, replicates, workers, executor)
    most = per_replicate * replicates / lanes
    if likely is not None and rule is not None:
        about = _likely_seconds(per_replicate, likely, rule, workers, executor)
        text = (
            f"replicates: about {_seconds(about)} (up to {replicates} replicates at "
            f"{per_replicate:.2g} s each {where}, at most {_seconds(most)}; stops early once "
            f"the answer at alpha {rule.alpha:.3g} is settled, likely after ~{likely})"
        )
    else:
        text = (
            f"replicates: about {_seconds(most)} ({replicates} replicates at "
            f"{per_replicate:.2g} s each {where})"
        )
    return (
        text + "; to go faster lower significance.replicates or restarts, or use "
        "--executor dask://HOST:PORT"
    )


def run_local(
    job: ReplicateJob,
    scores: np.ndarray,
    per_replicate: float,
    workers: int,
    on_progress: Callable[[int], None] | None,
    start: int = 1,
) -> None:
    """Replicates start..R-1 (R = len(scores)) on this machine: serially, or in ``workers``
    worker processes (loky) when that pays off (``per_replicate``: replicate 0's time)."""
    replicates = len(scores)
    if replicates <= start:
        return
    serial_estimate = per_replicate * (replicates - start)
    # parallel time ~ startup + serial / workers: worth it only when serial > startup * w / (w - 1);
    # never for one replicate (a round of the sequential rule), which a pool cannot split
    alone = replicates - start < 2
    if alone or workers <= 1 or serial_estimate < WORKER_STARTUP_SECONDS * workers / (workers - 1):
        try:
            for r in range(start, replicates):
                scores[r] = job(r)
                if on_progress is not None:
                    on_progress(1)
        except SystemError as exc:
            _reraise_interrupt(exc)
            raise
        return
    n_chunks = max(workers * 16, math.ceil(serial_estimate / CHUNK_SECONDS))
    n_chunks = min(replicates - start, n_chunks)
    bounds = np.linspace(start, replicates, n_chunks + 1).astype(int)
    # the worker processes (joblib's loky, signals) load only when they pay off
    from fairscan.engine.workers import run_chunks

    run_chunks(job, scores, bounds, workers, on_progress)


def null_scores(
    cells: Cells,
    settings: NullSettings,
    seed: np.random.SeedSequence,
    replicates: int,
    *,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
    draw: Draw = "binomial",
    score: Score = BERNOULLI,
    residuals: np.ndarray | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """Scores of ``replicates`` parametric null replicates of a plain MDSS scan."""
    job = MdssReplicate(cells, settings, seed, draw, score, residuals)
    return run_replicates(
        job, replicates, workers=workers, on_progress=on_progress, executor=executor
    )


def p_value(observed: float, scores: np.ndarray) -> tuple[float, int]:
    """Monte-Carlo p-value (1 + #{null >= observed}) / (1 + R) and the exceed count."""
    threshold = observed - TIE_TOLERANCE * max(1.0, abs(observed))
    exceed = int(np.count_nonzero(scores >= threshold))
    return (1.0 + exceed) / (1.0 + len(scores)), exceed


def summarize(
    observed_score: float, scores: np.ndarray, alpha: float, rule: StoppingRule | None = None
) -> NullResult:
    """The test's result from its replicates; with a ``rule`` that applies, its anytime-valid
    p-value at the replicates run (the rule stopped them), else (1 + exceed) / (1 + R)."""
    p, exceed = p_value(observed_score, scores)
    if rule is not None and rule.applies:
        p = rule.outcome(losses_of(observed_score, scores, TIE_TOLERANCE)).p_value
    else:
        rule = None
    quantile = float(np.quantile(scores, 1.0 - alpha, method="higher"))
    return NullResult(
        scores=scores,
        observed_score=observed_score,
        exceed_count=exceed,
        p_value=p,
        quantile=quantile,
        alpha=alpha,
        rule=rule,
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
    draw: Draw = "binomial",
    score: Score = BERNOULLI,
    residuals: np.ndarray | None = None,
    executor: Executor | None = None,
) -> NullResult:
    scores = null_scores(
        cells,
        settings,
        seed,
        replicates,
        workers=workers,
        on_progress=on_progress,
        draw=draw,
        score=score,
        residuals=residuals,
        executor=executor,
    )
    return summarize(observed_score, scores, alpha)
