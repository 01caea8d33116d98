"""Randomization test with parametric Bernoulli null replicates (methods.md §1.5).

Each replicate redraws the observed indicator as ``Bernoulli(expected)`` per row (drawn per
cell as ``Binomial(weight, expected)``, the same law) and reruns the identical search; the
statistic is the maximised penalised objective J*. Replicate ``r`` draws from its own
``SeedSequence`` child, addressed by index, so results are bit-identical for a seed whatever
the number of worker processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from fairscan.engine.cells import Cells
from fairscan.engine.mdss import max_score
from fairscan.interrupts import interrupt_of

# null scores within this relative distance of the observed score count as ties
TIE_TOLERANCE = 1e-9
# Effective cost of starting the worker pool on 2 cores (spawn, imports, numba cache load),
# measured in benchmarks/RESULTS.md section 2: 999 cheap replicates took 2.5 s serially, 3.3 s
# on two workers.
WORKER_STARTUP_SECONDS = 2.0
# Replicates are sent to the workers in chunks of about this many seconds (estimated from
# replicate 0), so that progress moves and no chunk holds a worker for long.
CHUNK_SECONDS = 0.5
# How often a worker checks that its parent is still alive (it exits when the parent is gone).
PARENT_POLL_SECONDS = 0.5
PR_SET_PDEATHSIG = 1
# The parent waits for chunks in slices this long, so that it notices Ctrl-C promptly.
WAIT_POLL_SECONDS = 0.1


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


def _init_worker(job: ReplicateJob, parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; only the parent handles it (exit 130), so the
    # workers must not die printing tracebacks of their own: the parent terminates them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent_pid)
    _WORKER["job"] = job


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker when its parent dies, even by SIGKILL (no chance to shut the pool down):
    the kernel's parent-death signal on Linux, and a thread polling the parent's pid anywhere."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was set up
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="fairscan-parent-watch", daemon=True).start()


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Tear a pool down now: drop the queued chunks and kill the workers without waiting for
    the running ones (an interrupt must stop the run within a second or two)."""
    processes: list[multiprocessing.process.BaseProcess] = []
    for _ in range(10):  # the submitter thread may be adding a worker meanwhile
        with contextlib.suppress(RuntimeError):
            processes = list((getattr(pool, "_processes", None) or {}).values())
            break
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + 1.0
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(timeout=max(0.0, deadline - time.monotonic()))


def _result(future: Future[tuple[int, np.ndarray]]) -> tuple[int, np.ndarray]:
    """``future.result()``, waking every ``WAIT_POLL_SECONDS``: a signal delivered to another
    thread (polars, numba) only runs its Python handler once the main thread wakes up."""
    while True:
        try:
            return future.result(timeout=WAIT_POLL_SECONDS)
        except TimeoutError:
            continue


class _Submitter:
    """Submits the chunks, and so starts the workers, from a thread of its own that holds
    SIGINT and SIGTERM blocked: the workers inherit the block, so a Ctrl-C to the process group
    cannot kill one half-started (with a traceback of its own), while the main thread, which
    handles the signals, never waits on a worker's start-up (the spawn pipe blocks until the
    child has imported its modules: about half a second per worker). The thread lives as long
    as the pool: the workers' parent-death signal fires when the thread that started them ends.
    """

    def __init__(self, pool: ProcessPoolExecutor, bounds: np.ndarray) -> None:
        self._pool = pool
        self._bounds = bounds
        self._submitted: list[Future[tuple[int, np.ndarray]]] = []
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._released = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fairscan-pool", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with _signals_blocked():
            try:
                for a, b in itertools.pairwise(self._bounds):
                    if self._released.is_set():
                        break
                    self._submitted.append(self._pool.submit(_run_chunk, int(a), int(b)))
            except BaseException as exc:  # the pool was torn down meanwhile, or is broken
                self._error = exc
            finally:
                self._ready.set()
            self._released.wait()

    def futures(self) -> list[Future[tuple[int, np.ndarray]]]:
        while not self._ready.wait(WAIT_POLL_SECONDS):
            pass
        if self._error is not None:
            raise self._error
        return self._submitted

    def release(self) -> None:
        self._released.set()
        self._thread.join(timeout=1.0)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back from this thread (and the processes it starts) meanwhile."""
    mask = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _reraise_interrupt(exc: BaseException) -> None:
    """An interrupt inside a numba call arrives as a SystemError wrapping it: raise the interrupt."""
    interrupt = interrupt_of(exc)
    if interrupt is not None and interrupt is not exc:
        raise interrupt from None


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
    try:
        scores[0] = job(0)
    except SystemError as exc:
        _reraise_interrupt(exc)
        raise
    if on_progress is not None:
        on_progress(1)
    per_replicate = time.perf_counter() - started
    serial_estimate = per_replicate * (replicates - 1)
    # parallel time ~ startup + serial / workers: worth it only when serial > startup * w / (w - 1)
    if workers <= 1 or serial_estimate < WORKER_STARTUP_SECONDS * workers / (workers - 1):
        try:
            for r in range(1, replicates):
                scores[r] = job(r)
                if on_progress is not None:
                    on_progress(1)
        except SystemError as exc:
            _reraise_interrupt(exc)
            raise
        return scores
    n_chunks = max(workers * 16, math.ceil(serial_estimate / CHUNK_SECONDS))
    n_chunks = min(replicates - 1, n_chunks)
    bounds = np.linspace(1, replicates, n_chunks + 1).astype(int)
    # "spawn": the parent may hold polars/numba threads, which fork would copy in a bad state.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(job, os.getpid()),
    )
    submitter = _Submitter(pool, bounds)
    try:
        for future in submitter.futures():
            start, chunk = _result(future)
            scores[start : start + len(chunk)] = chunk
            if on_progress is not None:
                on_progress(len(chunk))
    except BaseException:
        # Ctrl-C, SIGTERM or a failing replicate: stop the workers now, not after their chunks
        _stop_pool(pool)
        submitter.release()
        _stop_pool(pool)  # a worker the submitter was still starting
        raise
    pool.shutdown(wait=True)
    submitter.release()
    pool.shutdown(wait=True)
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
