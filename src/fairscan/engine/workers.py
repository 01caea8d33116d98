"""Worker processes for null replicates: joblib's loky reusable executor.

Loaded by :func:`fairscan.engine.randomization.run_local` only when worker processes pay off, so
that runs without them never import joblib or multiprocessing. Replicates are addressed by index,
so results do not depend on the number of workers or on which worker ran what.

Why loky rather than ``multiprocessing``'s spawn pool: a loky worker is a fresh interpreter that
never re-imports the parent's ``__main__`` (the job travels by value, through cloudpickle), so a
plain script that calls ``fairscan.audit()`` without ``if __name__ == "__main__":`` runs its top
level once, not once per worker; the executor is reused across the scans of a run (warm workers,
started once) and ends its idle workers after ``IDLE_SECONDS``; a worker killed from outside
breaks the executor with an error instead of leaving the parent waiting on it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from joblib.externals.loky import get_reusable_executor
from joblib.externals.loky.backend.reduction import dumps, loads
from joblib.externals.loky.process_executor import BrokenProcessPool, TerminatedWorkerError

from fairscan.errors import ScanError

if TYPE_CHECKING:
    from fairscan.engine.jobs import ReplicateJob

# How often a worker checks that its parent is still alive (it exits when the parent is gone,
# even when the parent was SIGKILLed and had no chance to shut the executor down).
PARENT_POLL_SECONDS = 0.5
# The parent waits for chunks in slices this long, so that it notices Ctrl-C promptly.
WAIT_POLL_SECONDS = 0.1
# Idle workers stay this long for the next scan of the run, then exit (and at the latest when
# the process exits: `_shutdown_at_exit`).
IDLE_SECONDS = 10
_AT_EXIT: list[Any] = []
# A job larger than this when pickled (a profile summary of 1M rows: ~100 MB) travels to the
# workers once, through a file each worker reads on its first chunk, instead of with every chunk
# (each submitted chunk pickles its arguments: 60 chunks would copy 6 GB through the pipes).
SHARE_JOB_BYTES = 4 * 1024 * 1024
# the job a worker process last read from a file: (its file, the job)
_READ_JOB: list[tuple[str, Any]] = []


@dataclass(frozen=True)
class FileJob:
    """A job pickled to ``path`` by the parent: the workers read it once and keep it."""

    path: str

    def __call__(self, index: int) -> float:
        if not _READ_JOB or _READ_JOB[0][0] != self.path:
            _READ_JOB[:] = []  # the previous scan's job goes first
            _READ_JOB.append((self.path, loads(Path(self.path).read_bytes())))
        job = _READ_JOB[0][1]
        return float(job(index))


@contextlib.contextmanager
def _sent_once(job: ReplicateJob) -> Iterator[ReplicateJob]:
    """``job`` itself when it is small, else a :class:`FileJob` for it (the file is removed when
    the replicates are done). Either way the workers compute the same numbers."""
    data = dumps(job)  # as loky pickles a submitted task
    if data.nbytes <= SHARE_JOB_BYTES:
        yield job
        return
    try:
        fd, path = tempfile.mkstemp(prefix="fairscan-job-", suffix=".pkl")
    except OSError:  # no writable temporary folder: the job goes with every chunk, as before
        yield job
        return
    try:
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        except OSError:  # e.g. the folder is full
            del data
            yield job
            return
        del data
        yield FileJob(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; only the parent handles it (exit 130), so the
    # workers must not die printing tracebacks of their own: the parent kills them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != parent_pid:  # the parent died before this worker was ready
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="fairscan-parent-watch", daemon=True).start()


def _run_chunk(job: ReplicateJob, start: int, stop: int) -> tuple[int, np.ndarray]:
    return start, np.array([job(r) for r in range(start, stop)], dtype=np.float64)


@contextlib.contextmanager
def _workers_start_ignoring_ctrl_c() -> Iterator[None]:
    """While workers are started: SIGINT ignored (a disposition a child keeps across exec, so a
    worker ignores Ctrl-C from its first instruction, not only once its initializer has run: a
    terminal's Ctrl-C reaches the whole process group, and a worker still importing would die
    with a traceback of its own) and blocked here, so that a Ctrl-C meanwhile is not lost: on
    Linux a blocked signal stays pending even while ignored, and is handled once unblocked.

    Only the main thread may change a handler; elsewhere (a notebook's thread) the workers are
    started as they are and ignore SIGINT from their initializer on."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def _submit_all(
    job: ReplicateJob, bounds: np.ndarray, workers: int
) -> tuple[Any, list[Future[tuple[int, np.ndarray]]]]:
    """Get the executor (loky starts its workers on the first submit, without waiting for them
    to import anything) and submit the chunks."""
    with _workers_start_ignoring_ctrl_c():
        executor = get_reusable_executor(
            max_workers=workers,
            timeout=IDLE_SECONDS,
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )
        if not _AT_EXIT:
            atexit.register(_shutdown_at_exit)
        _AT_EXIT[:] = [executor]
        try:
            futures = [
                executor.submit(_run_chunk, job, int(a), int(b))
                for a, b in itertools.pairwise(bounds)
            ]
        except BaseException:
            _kill(executor)
            raise
    return executor, futures


def _shutdown_at_exit() -> None:
    """Registered after multiprocessing's own exit handler, so it runs first: idle workers are
    told to stop before that handler joins them (the CLI runs the exit handlers itself and
    skips the interpreter's teardown, where loky would otherwise do this)."""
    for executor in _AT_EXIT:
        with contextlib.suppress(Exception):
            executor.shutdown(wait=True, kill_workers=True)


def _kill(executor: Any) -> None:
    """Stop the workers now, without waiting for their running chunks (an interrupt must stop
    the run within a second or two); the next run starts a new executor."""
    _quiet_manager_thread()
    with contextlib.suppress(Exception):
        executor.shutdown(wait=False, kill_workers=True)


def _quiet_manager_thread() -> None:
    """loky's manager thread can trip over a work item that the kill removed meanwhile (a
    KeyError in ``add_call_item_to_queue``) and print that thread's traceback; the run is being
    stopped on purpose, so such an error of that thread is not shown."""
    if getattr(threading.excepthook, "_fairscan_quiet", False):
        return
    shown = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.thread is not None and args.thread.name == "ExecutorManagerThread":
            return
        shown(args)

    hook._fairscan_quiet = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _result(future: Future[tuple[int, np.ndarray]]) -> tuple[int, np.ndarray]:
    """``future.result()``, waking every ``WAIT_POLL_SECONDS``: a signal delivered to another
    thread (polars, OpenMP) only runs its Python handler once the main thread wakes up."""
    while True:
        try:
            return future.result(timeout=WAIT_POLL_SECONDS)
        except TimeoutError:
            continue


def _lost_workers(exc: BrokenProcessPool, done: int, total: int, workers: int) -> ScanError:
    """A worker killed from outside (the OOM killer, `kill`): what was lost, and what to do."""
    found = re.search(r"exit codes of the workers are (\{[^}]*\})", str(exc))
    codes = f" (exit codes {found.group(1)})" if found else ""
    return ScanError(
        f"a worker process of the null replicates ended unexpectedly{codes}: {total - done} "
        f"of {total} replicates were lost, the scan has no p-value",
        hint="if the machine ran out of memory, run with fewer workers (--workers "
        f"{max(1, workers // 2)}, significance.workers) or on a Dask cluster "
        "(--executor dask://HOST:PORT); otherwise rerun: seeded results are identical",
    )


def run_chunks(
    job: ReplicateJob,
    scores: np.ndarray,
    bounds: np.ndarray,
    workers: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Fill ``scores[a:b]`` with ``job(r)`` for each chunk [a, b) of ``bounds``, in ``workers``
    worker processes; an interrupt or a failing replicate stops every worker at once, a worker
    killed from outside is a :class:`~fairscan.errors.ScanError` saying what was lost."""
    with _sent_once(job) as sent:
        _run_submitted(sent, scores, bounds, workers, on_progress)


def _run_submitted(
    job: ReplicateJob,
    scores: np.ndarray,
    bounds: np.ndarray,
    workers: int,
    on_progress: Callable[[int], None] | None,
) -> None:
    executor, futures = _submit_all(job, bounds, workers)
    done = 0
    try:
        for future in futures:
            start, chunk = _result(future)
            scores[start : start + len(chunk)] = chunk
            done += len(chunk)
            if on_progress is not None:
                on_progress(len(chunk))
    except (TerminatedWorkerError, BrokenProcessPool) as exc:
        _kill(executor)
        raise _lost_workers(exc, done, int(bounds[-1] - bounds[0]), workers) from None
    except BaseException:
        # Ctrl-C, SIGTERM or a failing replicate: stop the workers now, not after their chunks
        # (loky cancels the queued ones itself; cancelling them here races its manager thread)
        _kill(executor)
        raise
