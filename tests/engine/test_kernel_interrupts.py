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
    # 3000 restarts take about 15 s on a 2-core runner: without the kernel's own signal checks
    # the interrupt would only be seen once the call returns
    elapsed = _assert_interrupted(lambda: kernels.coordinate_ascent(*args, 3000, 1))
    assert elapsed < BUDGET


def test_ctrl_c_inside_the_subroc_null_draws_raises_promptly() -> None:
    rng = np.random.default_rng(1)
    n = 50_000
    y = (rng.random(n) < 0.3).astype(np.int8)
    grp = np.arange(n, dtype=np.int32)
    pos = np.flatnonzero(y == 1).astype(np.int64)
    neg = np.flatnonzero(y == 0).astype(np.int64)
    replicates = 100_000  # about 14 s in one call on a 2-core runner
    up = rng.random((replicates, 40))
    un = rng.random((replicates, 60))
    elapsed = _assert_interrupted(
        lambda: subroc_kernels.null_measures(up, un, pos, neg, y, grp, 0, threads=2)
    )
    assert elapsed < BUDGET
