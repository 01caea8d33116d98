"""Worker processes for null replicates: a spawned process pool that dies with its parent.

Loaded by :func:`fairscan.engine.randomization.run_replicates` only when worker processes pay
off, so that runs without them never import multiprocessing. Replicates are addressed by index,
so results do not depend on the number of workers or on which worker ran what.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fairscan.engine.randomization import ReplicateJob

# How often a worker checks that its parent is still alive (it exits when the parent is gone).
PARENT_POLL_SECONDS = 0.5
PR_SET_PDEATHSIG = 1
# The parent waits for chunks in slices this long, so that it notices Ctrl-C promptly.
WAIT_POLL_SECONDS = 0.1


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
    thread (polars, OpenMP) only runs its Python handler once the main thread wakes up."""
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


def _run_chunk(start: int, stop: int) -> tuple[int, np.ndarray]:
    job = _WORKER["job"]
    return start, np.array([job(r) for r in range(start, stop)], dtype=np.float64)


def run_chunks(
    job: ReplicateJob,
    scores: np.ndarray,
    bounds: np.ndarray,
    workers: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Fill ``scores[a:b]`` with ``job(r)`` for each chunk [a, b) of ``bounds``, in ``workers``
    spawned processes; an interrupt or a failing replicate stops every worker at once."""
    # "spawn": the parent may hold polars/OpenMP threads, which fork would copy in a bad state.
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
