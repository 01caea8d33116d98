"""What a randomization test hands to whoever runs its replicates: the job (a picklable callable,
replicate index -> null statistic) and the executor interface. A leaf module, so that the test
(:mod:`~fairscan.engine.randomization`), the local worker processes
(:mod:`~fairscan.engine.workers`) and the cluster executors (:mod:`~fairscan.engine.executors`)
share these types without importing one another in a circle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

# significance.executor for this machine (its one home is the address rule)
from fairscan.engine.executor_address import LOCAL as LOCAL


class ReplicateJob(Protocol):
    """A picklable callable: replicate index -> the null statistic of that replicate."""

    def __call__(self, index: int) -> float: ...


class Executor(Protocol):
    """Runs replicates 1..R-1 of a job, once replicate 0 has run here."""

    @property
    def name(self) -> str:
        """``local`` or the ``dask://HOST:PORT`` address (the report's provenance)."""
        ...

    def run_rest(
        self,
        job: ReplicateJob,
        scores: np.ndarray,
        per_replicate: float,
        workers: int,
        on_progress: Callable[[int], None] | None,
        start: int = 1,
    ) -> None:
        """Fill ``scores[start:]`` with ``job(r)`` (``scores[:start]`` are done: a sequential
        test runs rounds); ``per_replicate`` is replicate 0's time."""
        ...
