"""What a scan module provides to the registry, and what a runner receives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fairscan.progress import NullProgress, Progress
from fairscan.spec.base import ScanSpecBase

if TYPE_CHECKING:
    from fairscan.data.table import PreparedData
    from fairscan.report.models import ScanResult


@dataclass
class ScanContext:
    """Everything a runner needs besides its own spec."""

    data: PreparedData
    alpha: float
    replicates: int
    seed: np.random.SeedSequence  # this scan's own stream (spawned from the run's root)
    workers: int = 1
    progress: Progress = field(default_factory=NullProgress)
    role_names: dict[str, str] = field(default_factory=dict)  # role -> column name, for wording


Runner = Callable[[Any, ScanContext], "ScanResult"]


@dataclass(frozen=True)
class ScanType:
    """Registry entry: a scan ``type`` with its spec model, runner and documentation."""

    type: str
    spec_model: type[ScanSpecBase]
    runner: Runner
    # column roles required: "outcome", "prediction", "recommendation", "score"
    needs: tuple[str, ...]
    title: str
    summary: str
    # further data columns a scan spec names: spec -> {column: field path within the scan spec}
    extra_columns: Callable[[Any], dict[str, str]] | None = None
    # `audit explain`: how to read a result (fairscan.explain has the defaults when None)
    reading: str | None = None
