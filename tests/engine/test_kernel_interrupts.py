"""Ctrl-C inside a compiled kernel (issue 11): the kernels check for pending signals while they
run, so a long call raises KeyboardInterrupt promptly instead of finishing first (or surfacing as
a SystemError, as numba's dispatcher did)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fairscan.engine import kernels, subroc_kernels
from fairscan.engine.cells import compress

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")

DELAY = 0.3
BUDGET = 2.0  # the limit from Ctrl-C to exit


def _interrupt_after(delay: float) -> subprocess.Popen[bytes]:
    """SIGINT from another process, as a terminal sends it: a thread of this process could not
    send it while a kernel holds the interpreter lock."""
    return subprocess.Popen(["sh", "-c", f"sleep {delay}; kill -INT {os.getpid()}"])


def _assert_interrupted(call: object) -> float:
    assert callable(call)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = _interrupt_after(DELAY)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        sender.kill()
        sender.wait()
        signal.signal(signal.SIGINT, previous)
    return time.monotonic() - started - DELAY


def test_ctrl_c_inside_the_coordinate_ascent_raises_promptly() -> None:
    rng = np.random.default_rng(0)
    card = np.array([8, 8, 6, 5], np.int32)
    n = 20_000
    codes = np.stack([rng.integers(0, k, n) for k in card], 1).astype(np.int32)
    expected = rng.uniform(0.05, 0.95, n)
    observed = (rng.random(n) < expected).astype(np.float64)
    cells = compress(codes, observed, expected, card)
    args = (cells.codes, cells.observed, cells.weight, cells.expected, False, card, 1, 1.0)
    # 30000 restarts take about 25 s on a 2-core runner (the step memo makes repeated LTSS
    # steps free, but every restart scores its random start): without the kernel's own signal
    # checks the interrupt would only be seen once the call returns
    elapsed = _assert_interrupted(lambda: kernels.coordinate_ascent(*args, 30000, 1))
    assert elapsed < BUDGET


def test_ctrl_c_inside_the_subroc_cover_passes_raises_promptly() -> None:
    # 6000 parents, each covering all 200,000 rows: about 10 s in one call on a 2-core runner
    # (0.35 s per 200 parents), little memory; without the checks between batches of parents
    # the interrupt would only be seen once the call returns
    n, parents = 200_000, 6000
    rng = np.random.default_rng(1)
    bits = np.full((1, (n + 63) // 64), np.iinfo(np.uint64).max, dtype=np.uint64)
    bits[0, -1] = np.uint64((1 << (n % 64)) - 1) if n % 64 else bits[0, -1]
    args = (
        np.zeros((parents, 1), np.int32),  # every parent is the root: all rows
        bits,
        np.arange(parents + 1, dtype=np.int64),  # one task per parent
        np.zeros(parents, np.int32),
        np.arange(parents, dtype=np.int64) * 4,
        parents * 4,
        rng.integers(0, 4, (1, n)).astype(np.int32),
        np.array([4], np.int32),
        (rng.random(n) < 0.3).astype(np.int8),
        np.arange(n, dtype=np.int32),
        True,
        parents,
    )
    elapsed = _assert_interrupted(lambda: subroc_kernels.evaluate_children(*args, threads=2))
    assert elapsed < BUDGET
