"""Interrupts and processes (issue 16): Ctrl-C and SIGTERM stop ``audit run`` promptly with exit
130/143 and no report, in every phase; a SIGKILLed parent leaves no worker processes behind.

The end-to-end tests run the real console script in a subprocess (its own session, so that a
signal to the process group reaches the workers as a terminal Ctrl-C would) on the sample credit
data with far more replicates than they let finish. Worker processes are found through /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairscan.engine.randomization import run_replicates
from fairscan.interrupts import interrupt_of

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs /proc and POSIX signals"
)

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
AUDIT = Path(sys.executable).with_name("audit")
# The budget of the issue, with the time a loaded runner takes to reap the process on top.
INTERRUPT_SECONDS = 2.0
KILL_SECONDS = 5.0

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
significance: {{replicates: 20000, alpha: 0.05, seed: 0}}
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


def _start(tmp_path: Path, workers: int) -> subprocess.Popen[str]:
    spec = tmp_path / "probe.audit.yaml"
    spec.write_text(SPEC.format(data=CREDIT.as_posix()), encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CI", None)
    return subprocess.Popen(
        [str(AUDIT), "run", str(spec), "--workers", str(workers), "--no-progress"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _wait_for_workers(
    process: subprocess.Popen[str], count: int, timeout: float = 30.0
) -> list[int]:
    """Poll until the worker pool of ``process`` is up (``count`` spawned workers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        found = _workers(process.pid)
        if sum(1 for pid in found if b"popen_loky" in _cmdline(pid)) >= count:
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


def _interrupt(process: subprocess.Popen[str], signum: int) -> tuple[int, str, float]:
    """Send ``signum`` to the process group (as a terminal does); exit code, stderr, seconds."""
    sent = time.monotonic()
    os.killpg(process.pid, signum)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"still running 30 s after signal {signum}")
    return process.returncode, stderr, time.monotonic() - sent


def _assert_clean_stop(
    tmp_path: Path, code: int, stderr: str, elapsed: float, expected: int
) -> None:
    assert code == expected, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert elapsed < INTERRUPT_SECONDS, f"took {elapsed:.2f} s to stop"
    reports = tmp_path / "reports"
    assert not reports.exists() or not any(reports.iterdir()), list(reports.iterdir())


@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_worker_replicates_stops_within_2s(
    tmp_path: Path, signum: int, expected: int
) -> None:
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)
    time.sleep(1.0)  # past the workers' start-up, into the replicate chunks
    code, stderr, elapsed = _interrupt(process, signum)
    _assert_clean_stop(tmp_path, code, stderr, elapsed, expected)
    assert _wait_gone(workers, KILL_SECONDS) == []


def test_ctrl_c_during_in_process_replicates_exits_130_not_2(tmp_path: Path) -> None:
    process = _start(tmp_path, workers=1)
    time.sleep(4.0)  # loading and the search take about 2 s here; then the replicates run
    assert process.poll() is None, process.communicate()
    code, stderr, elapsed = _interrupt(process, signal.SIGINT)
    _assert_clean_stop(tmp_path, code, stderr, elapsed, 130)


def test_sigkill_of_the_parent_leaves_no_workers(tmp_path: Path) -> None:
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)
    time.sleep(0.5)
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


def test_a_worker_killed_from_outside_exits_2_saying_what_was_lost(tmp_path: Path) -> None:
    """The out-of-memory killer's SIGKILL to one worker: the scan errors (exit 2) with what was
    lost and what to do; never an internal error, a traceback or a parent left waiting."""
    process = _start(tmp_path, workers=2)
    workers = _wait_for_workers(process, 2)
    time.sleep(1.0)  # into the replicate chunks
    worker = next(pid for pid in workers if b"popen_loky" in _cmdline(pid))
    os.kill(worker, signal.SIGKILL)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the parent hung after a worker was killed")
    assert process.returncode == 2, stderr
    assert "worker process of the null replicates ended unexpectedly" in stderr, stderr
    assert "replicates were lost" in stderr and "--workers 1" in stderr, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
