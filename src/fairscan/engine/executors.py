"""Where null replicates run: this machine (``local``) or a Dask cluster (``dask://HOST:PORT``).

:func:`fairscan.engine.randomization.run_replicates` runs replicate 0 in-process, then hands the
rest to an executor:

* :data:`LOCAL` runs them here, serially or in worker processes (:mod:`fairscan.engine.workers`,
  loky) when that pays off; it lives in :mod:`fairscan.engine.randomization`, which imports
  this module only for its types (no import circle);
* :class:`DaskExecutor` sends the job once to every worker of a Dask distributed cluster, then
  submits chunks of replicate indices and gathers the scores in replicate order.

Replicate ``r`` is ``job(r)`` wherever it runs (its random stream is addressed by index), so the
scores are bit-identical to a local run for the same seed, given the same fairscan and numpy on
the workers. ``distributed`` (the ``fairscan[dask]`` extra) is imported only when a Dask
executor connects.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fairscan import __version__
from fairscan.engine.executor_address import EXECUTOR_HELP, parse_executor
from fairscan.engine.jobs import LOCAL, Executor, ReplicateJob
from fairscan.engine.randomization import LOCAL_EXECUTOR
from fairscan.errors import ScanError

# How long to wait for the Dask scheduler to answer when connecting.
CONNECT_TIMEOUT_SECONDS = 10.0
# Chunks of about this many seconds of replicates (estimated from replicate 0): long enough that
# the per-task overhead (a few milliseconds) does not count, short enough to balance the load.
DASK_CHUNK_SECONDS = 1.0
# At least this many chunks per worker thread, so that a slow worker does not hold the end back.
DASK_CHUNKS_PER_THREAD = 4
# The main thread checks the chunks this often, so that it notices Ctrl-C promptly.
POLL_SECONDS = 0.05


def client_name(client: Any) -> str:
    """The executor name of a ``distributed.Client`` (the report's provenance): its scheduler's
    address as ``dask://HOST:PORT`` (TCP) or ``tls://HOST:PORT``."""
    address = str(getattr(getattr(client, "scheduler", None), "address", "") or "")
    if address.startswith("tcp://"):
        return "dask://" + address.removeprefix("tcp://")
    return address if address.startswith("tls://") else "dask://client"


def _run_chunk(job: ReplicateJob, start: int, stop: int) -> np.ndarray:
    """On a Dask worker: the scores of replicates ``start..stop-1``."""
    return np.array([job(r) for r in range(start, stop)], dtype=np.float64)


class DaskExecutor:
    """A Dask distributed cluster; connected by :func:`open_executor`, closed when it exits.

    ``workers`` (the local process count) does not apply: the cluster's worker threads set the
    parallelism.
    """

    def __init__(self, name: str, client: Any, *, owned: bool = True) -> None:
        self.name = name
        self._client = client
        self._owned = owned  # False: the caller's Client (a notebook's), left open

    def threads(self) -> int:
        return max(1, sum(self._client.nthreads().values()))

    def run_rest(
        self,
        job: ReplicateJob,
        scores: np.ndarray,
        per_replicate: float,
        workers: int,
        on_progress: Callable[[int], None] | None,
        start: int = 1,
    ) -> None:
        replicates = len(scores)
        if replicates <= start:
            return
        serial_estimate = per_replicate * (replicates - start)
        n_chunks = max(
            self.threads() * DASK_CHUNKS_PER_THREAD, math.ceil(serial_estimate / DASK_CHUNK_SECONDS)
        )
        n_chunks = min(replicates - start, n_chunks)
        bounds = np.linspace(start, replicates, n_chunks + 1).astype(int)
        client = self._client
        futures: list[Any] = []
        try:
            # the job (the cells, the settings, the seed) travels once to every worker
            shared = client.scatter(job, broadcast=True, hash=False)
            # replicate 0 once more on the cluster: a worker with another fairscan or numpy
            # would give other scores, and the run must not mix them silently
            # (once per test: the first round only)
            check = client.submit(_run_chunk, shared, 0, 1, pure=False) if start == 1 else None
            futures = [check] if check is not None else []
            chunks = {}
            for a, b in itertools.pairwise(bounds):
                future = client.submit(_run_chunk, shared, int(a), int(b), pure=False)
                futures.append(future)
                chunks[future.key] = int(a)
            pending = list(futures)
            disconnected: float | None = None
            while pending:
                disconnected = self._check_connected(disconnected)
                still = []
                for future in pending:
                    if not future.done():
                        still.append(future)
                        continue
                    values = future.result()  # re-raises a failing replicate's error
                    if future is check:
                        if not np.array_equal(values, scores[:1]):
                            raise ScanError(
                                f"the Dask workers of {self.name} compute replicate 0 as "
                                f"{values[0]!r}, this machine as {scores[0]!r}",
                                hint="install the same fairscan version (and numpy) on the "
                                f"workers as here: pip install 'fairscan[dask]=={__version__}'",
                            )
                        continue
                    start = chunks[future.key]
                    scores[start : start + len(values)] = values
                    if on_progress is not None:
                        on_progress(len(values))
                pending = still
                if pending:
                    time.sleep(POLL_SECONDS)
        except BaseException as exc:
            # Ctrl-C, a failing replicate, a lost scheduler: drop the queued chunks now
            with contextlib.suppress(Exception):
                client.cancel(futures, force=True)
            lost = _cluster_failure(exc)
            if lost is not None:
                raise ScanError(
                    f"the Dask executor {self.name} failed: {lost}",
                    hint="check the cluster (the scheduler and worker logs); a worker needs "
                    f"the same fairscan as here (pip install 'fairscan[dask]=={__version__}'); "
                    "or run here (executor: local, --executor local)",
                ) from exc
            raise

    def _check_connected(self, since: float | None) -> float | None:
        """When the client lost its scheduler (None while connected): a :class:`ScanError` once
        it has not come back within the connect timeout (Dask reconnects meanwhile)."""
        status = str(getattr(self._client, "status", "running"))
        if status == "running":
            return None
        now = time.monotonic()
        since = now if since is None else since
        if status in ("closed", "closing", "failed") or now - since > CONNECT_TIMEOUT_SECONDS:
            raise ScanError(
                f"the Dask executor {self.name} lost its scheduler (client {status} for "
                f"{now - since:.0f} s); the replicates still running there are lost",
                hint="restart the scheduler and run again, or run here (executor: local, "
                "--executor local)",
            )
        return since

    def close(self) -> None:
        if not self._owned:
            return
        with contextlib.suppress(Exception):
            self._client.close(timeout=2)


_MISSING_MODULE = re.compile(r"ModuleNotFoundError\(\"No module named '([\w.]+)'")


def _cluster_failure(exc: BaseException) -> str | None:
    """What the cluster lost when ``exc`` is a failure of the cluster, not of fairscan: a killed
    worker, a closed connection, a cancelled chunk, a worker without fairscan; None otherwise."""
    import concurrent.futures

    if isinstance(exc, ScanError | KeyboardInterrupt) or not isinstance(exc, Exception):
        return None
    kind = type(exc).__name__
    if kind == "KilledWorker":
        return "a chunk of replicates killed its workers (the scheduler gave up after retrying it)"
    if isinstance(exc, ModuleNotFoundError | ImportError):
        return f"a worker cannot import {getattr(exc, 'name', None) or exc} (is fairscan installed there?)"
    missing = _MISSING_MODULE.search(str(exc)) if type(exc) is Exception else None
    if missing is not None:
        # the scheduler relays a worker's failure to unpickle the scattered job as a plain
        # Exception carrying only the original error's repr
        return f"a worker cannot import {missing.group(1)} (is fairscan installed there?)"
    if isinstance(exc, concurrent.futures.CancelledError) or kind.endswith("CancelledError"):
        return "the scheduler cancelled the replicate chunks (a worker or the scheduler was lost)"
    if isinstance(exc, OSError | TimeoutError) or kind in ("CommClosedError", "StreamClosedError"):
        return f"the connection to the cluster was lost ({kind}: {exc})"
    return None


# A Dask peer writes its handshake (a msgpack map with these keys) as soon as it accepts a
# connection; any other service (an HTTP server, a dashboard port) stays silent or says other.
_HANDSHAKE_KEYS = (b"compression", b"pickle-protocol")


def _handshake(name: str, host: str, port: int, timeout: float) -> None:
    """A :class:`ScanError` unless ``host:port`` answers as a Dask scheduler within ``timeout``
    (connect and first bytes): ``distributed.Client``'s timeout covers only the TCP connect, and
    a service that accepts but never speaks Dask would keep it waiting for ever."""
    address = f"tcp://{host}:{port}"
    hint = (
        f"check that {name} is the scheduler's address (`dask scheduler` listens on 8786; the "
        "dashboard port, 8787, is not it), or run here (executor: local, --executor local)"
    )
    received = b""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout) as sock:
            while time.monotonic() < deadline and not all(k in received for k in _HANDSHAKE_KEYS):
                sock.settimeout(max(0.05, min(POLL_SECONDS * 4, deadline - time.monotonic())))
                try:
                    chunk = sock.recv(4096)
                except TimeoutError:
                    continue  # wake up: Ctrl-C is handled between waits
                if not chunk:
                    break
                received += chunk
                if len(received) > 65536:
                    break
    except OSError as exc:
        why = "" if isinstance(exc, TimeoutError) else f": {exc.strerror or exc}"
        raise ScanError(
            f"cannot reach the Dask scheduler of the executor {name} ({address}) within "
            f"{timeout:g} s{why}",
            hint=f"start one there (`dask scheduler --port {port}`), check the address, or run "
            "here (executor: local, --executor local)",
        ) from None
    if not all(k in received for k in _HANDSHAKE_KEYS):
        what = "sent no Dask handshake" if not received else "answered, but not as Dask does"
        raise ScanError(
            f"{address} is not a Dask scheduler: it accepted the connection but {what} within "
            f"{timeout:g} s",
            hint=hint,
        )


def _connect(name: str, host: str, port: int, timeout: float) -> DaskExecutor:
    _handshake(name, host, port, timeout)
    try:
        import distributed
    except ImportError as exc:
        raise ScanError(
            f"the executor {name} needs the `distributed` package, which is not installed",
            hint="pip install 'fairscan[dask]' (or run here: executor: local, --executor local)",
        ) from exc
    protocol = "tls" if name.startswith("tls://") else "tcp"
    address = f"{protocol}://{host}:{port}"
    # a lost scheduler is reported once, as an executor error: not as distributed's tracebacks
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        why = "" if "timed out" in str(exc).lower() else f": {exc}"
        raise ScanError(
            f"cannot reach the Dask scheduler of the executor {name} ({address}) within "
            f"{timeout:g} s{why}",
            hint=f"start one there (`dask scheduler --port {port}`, then `dask worker "
            f"{address}` on each machine), check the address, or run here (executor: local, "
            "--executor local)",
        ) from None
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        client.close(timeout=2)
        raise ScanError(
            f"the Dask scheduler of the executor {name} ({address}) has no workers "
            f"(waited {timeout:g} s)",
            hint=f"start some: `dask worker {address} --nworkers N --nthreads 1` on each machine",
        ) from None
    return DaskExecutor(name, client)


@contextlib.contextmanager
def open_executor(
    text: str | Any = LOCAL, *, timeout: float | None = None, connect: bool = True
) -> Iterator[Executor]:
    """The executor ``text`` names (``local``, ``dask://HOST:PORT`` or ``tls://HOST:PORT``),
    connected while the block runs; ``connect=False`` (no replicate will run) never contacts a
    cluster. ``text`` may also be a connected ``distributed.Client`` (a notebook's, dask-gateway's,
    Coiled's): it is used as it is and left open."""
    if not isinstance(text, str):
        if not (hasattr(text, "submit") and hasattr(text, "scatter")):
            raise ScanError(
                f"not an executor: {type(text).__name__}",
                field="significance.executor",
                hint=f"pass a distributed.Client, or {EXECUTOR_HELP}",
            )
        yield DaskExecutor(client_name(text), text, owned=False)
        return
    try:
        address = parse_executor(text)
    except ValueError as exc:
        raise ScanError(str(exc), field="significance.executor") from None
    if address is None or not connect:
        yield LOCAL_EXECUTOR
        return
    executor = _connect(
        text, *address, timeout=CONNECT_TIMEOUT_SECONDS if timeout is None else timeout
    )
    try:
        yield executor
    finally:
        executor.close()
