"""Interrupts and processes (issue 16): Ctrl-C and SIGTERM stop ``audit run`` promptly with exit
130/143 and no report, in every phase; a SIGKILLed parent leaves no worker processes behind.

The end-to-end tests run the real console script in a subprocess (its own session, so that a
signal to the process group reaches the workers as a terminal Ctrl-C would) on the sample credit
data with far more replicates than they let finish. Worker processes are found through /proc.
Promptness is CPU time after the signal (tests/support/signal_probe.py), which a loaded machine
does not inflate; the 2 seconds of wall-clock time are the ``slow`` tests' (issue 38).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from signal_probe import (
    HANG_GUARD_SECONDS,
    PROMPT_CPU_SECONDS,
    Stopped,
    cpu_seconds,
    finish,
    kill_group,
    stop,
    wait_for_cpu,
)

from fairscan.engine.randomization import run_replicates
from fairscan.interrupts import interrupt_of

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs /proc and POSIX signals"
)

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
AUDIT = Path(sys.executable).with_name("audit")
# The wall-clock limit from the signal to the exit (the ``slow`` tests: an idle machine)
INTERRUPT_SECONDS = 2.0
# Workers leave once their parent is gone (they poll for it); a leak would stay for ever.
KILL_SECONDS = 60.0
# CPU seconds a worker has used once it is past its start-up (~0.5 s: interpreter, numpy,
# the engine) and into the replicate chunks
WORKER_BUSY_CPU = 1.0
# CPU seconds past the end of a one-replicate run: into the in-process replicates
INTO_REPLICATES_CPU = 1.0

SPEC = """\
version: 1
name: interrupt-probe
data:
  path: {data}
columns:
  outcome: default
  prediction: score
  recommendation: high_risk
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: calibration, type: bias_scan, direction: negative, penalty: 1, restarts: 50}}
significance: {{replicates: 20000, alpha: 0.05, seed: 0, sequential: false}}
output: {{dir: reports, formats: [json, markdown]}}
"""


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process, None once it is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[1]), fields[0]) if fields[0] not in ("Z", "X") else None


def _workers(parent: int) -> list[int]:
    """The worker children of ``parent``: loky's workers and resource trackers."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is None or stat[0] != parent:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if b"loky" in cmdline or b"multiprocessing" in cmdline:
            found.append(int(entry))
    return found


def _start(tmp_path: Path, workers: int, *options: str) -> subprocess.Popen[str]:
    spec = tmp_path / "probe.audit.yaml"
    spec.write_text(SPEC.format(data=CREDIT.as_posix()), encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CI", None)
    return subprocess.Popen(
        [str(AUDIT), "run", str(spec), "--workers", str(workers), "--no-progress", *options],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _wait_for_workers(
    process: subprocess.Popen[str], count: int, timeout: float = HANG_GUARD_SECONDS
) -> list[int]:
    """Poll until the worker pool of ``process`` is up (``count`` spawned workers) and each
    worker is past its start-up, into the replicate chunks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        found = _workers(process.pid)
        spawned = [pid for pid in found if b"popen_loky" in _cmdline(pid)]
        if len(spawned) >= count and all(
            (cpu_seconds(pid) or 0.0) >= WORKER_BUSY_CPU for pid in spawned
        ):
            return found
        time.sleep(0.05)
    process.kill()
    pytest.fail(f"no worker pool within {timeout} s: {process.communicate()}")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _stat(pid) is not None]
    return alive


def _assert_clean_stop(tmp_path: Path, stopped: Stopped, expected: int) -> None:
    assert stopped.returncode == expected, stopped.stderr
    assert "interrupted" in stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert "internal error" not in stopped.stderr, stopped.stderr
    # the run stopped instead of going on: CPU time, which a loaded machine does not inflate
    assert stopped.cpu < PROMPT_CPU_SECONDS, f"{stopped.cpu:.2f} s of CPU after the signal"
    reports = tmp_path / "reports"
    assert not reports.exists() or not any(reports.iterdir()), list(reports.iterdir())


@pytest.fixture(scope="module")
def setup_cpu(tmp_path_factory: pytest.TempPathFactory) -> float:
    """CPU seconds of a whole one-replicate run of the probe (start-up, load, search, replicate 0,
    reports), measured on this machine: past it, a run of many replicates is in them."""
    done = finish(_start(tmp_path_factory.mktemp("calibration"), 1, "--replicates", "1"))
    assert "interrupt-probe.json" in done.stderr, done.stderr  # ran to its reports (untested)
    return done.cpu


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_worker_replicates_stops_promptly(
    tmp_path: Path, signum: int, expected: int
) -> None:
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)
    stopped = stop(process, signum, also=tuple(workers))
    _assert_clean_stop(tmp_path, stopped, expected)
    assert _wait_gone(workers, KILL_SECONDS) == []


def test_ctrl_c_during_in_process_replicates_exits_130_not_2(
    tmp_path: Path, setup_cpu: float
) -> None:
    process = _start(tmp_path, workers=1)
    wait_for_cpu(process, setup_cpu + INTO_REPLICATES_CPU)
    _assert_clean_stop(tmp_path, stop(process, signal.SIGINT), 130)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_the_run_within_2s_of_wall_time(tmp_path: Path, workers: int) -> None:
    """The issue's promise as a user sees it, on an idle machine (``make test-slow``; the fast
    tests above measure CPU time instead); benchmarks/bench_interrupts.py reports it."""
    process = _start(tmp_path, workers=workers)
    found = _wait_for_workers(process, 2) if workers > 1 else []
    if workers == 1:
        wait_for_cpu(process, 4.0)  # past start-up, loading and the search (~2 s idle)
    stopped = stop(process, signal.SIGINT, also=tuple(found))
    _assert_clean_stop(tmp_path, stopped, 130)
    assert stopped.wall < INTERRUPT_SECONDS, f"took {stopped.wall:.2f} s to stop"


@pytest.mark.slow
def test_sigkill_of_the_parent_leaves_no_workers(tmp_path: Path) -> None:
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)
    process.kill()
    process.communicate()
    alive = _wait_gone(workers, KILL_SECONDS)
    for pid in alive:  # do not leave them running after a failure
        os.kill(pid, signal.SIGKILL)
    assert alive == [], [_cmdline(pid) for pid in alive]


class _WrappedInterrupt:
    """A replicate job that fails as a C extension may when Ctrl-C lands inside its call (as
    numba's dispatcher did before the kernels were compiled ahead of time)."""

    def __call__(self, index: int) -> float:
        if index == 3:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise SystemError(
                    "<built-in function> returned a result with an exception set"
                ) from exc
        return float(index)


def test_interrupt_wrapped_in_system_error_surfaces_as_keyboard_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt):
        run_replicates(_WrappedInterrupt(), 10, workers=1)
    assert run_replicates(_WrappedInterrupt(), 3, workers=1).tolist() == [0.0, 1.0, 2.0]
    error = SystemError("x")
    assert interrupt_of(error) is None
    error.__context__ = KeyboardInterrupt()
    assert isinstance(interrupt_of(error), KeyboardInterrupt)
    assert interrupt_of(ValueError()) is None


@pytest.mark.slow
def test_a_worker_killed_from_outside_exits_2_saying_what_was_lost(tmp_path: Path) -> None:
    """The out-of-memory killer's SIGKILL to one worker: the scan errors (exit 2) with what was
    lost and what to do; never an internal error, a traceback or a parent left waiting."""
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)  # into the replicate chunks
    worker = next(pid for pid in workers if b"popen_loky" in _cmdline(pid))
    os.kill(worker, signal.SIGKILL)
    try:
        _, stderr = process.communicate(timeout=HANG_GUARD_SECONDS)
    except subprocess.TimeoutExpired:
        kill_group(process)
        pytest.fail("the parent hung after a worker was killed")
    assert process.returncode == 2, stderr
    assert "worker process of the null replicates ended unexpectedly" in stderr, stderr
    assert "replicates were lost" in stderr and "--workers 1" in stderr, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
