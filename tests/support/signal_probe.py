"""Signal tests that hold on a loaded machine (issue 38).

A stop measured in wall-clock seconds fails on a busy runner (2.80 s against a 2.0 s budget at
load 20) although nothing was slow but the machine. Promptness is measured here in CPU
seconds instead: the work a process (and the worker processes named with it) still did between
the signal and its exit. A process that ignores the signal keeps computing and burns the rest
of its run; one that stops promptly burns a fraction of a second, whatever the load, because
time spent waiting for a CPU is not CPU time. "Into the phase" waits are CPU-based too (the
stopped process has done so much work), never a fixed sleep, which a loaded machine spends
still starting up.

The 2-second promise itself, in wall-clock seconds, is kept in ``slow`` tests and in
benchmarks/bench_interrupts.py. Wall-clock waits here are hang guards only: minutes, far above
any plausible load, so that a test never hangs forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# A test never waits for ever: a process still running this long after its signal is hung, not
# slow (a stop takes ~0.1 s quiet, a few seconds at load 20).
HANG_GUARD_SECONDS = 300.0
# The 2 seconds, as CPU time spent after the signal by the stopped process and its
# workers together: quiet, a stop costs 0.02-0.3 s of CPU; a run that went on would burn
# seconds to minutes more.
PROMPT_CPU_SECONDS = 2.0
_TICK = os.sysconf("SC_CLK_TCK")
_POLL = 0.01


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads, not reaped children) of ``pid`` so far; a zombie
    still reports its final time. None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def handles_signals(pid: int) -> bool:
    """Whether ``pid`` catches both SIGINT and SIGTERM (``SigCgt`` in /proc/PID/status): the
    interpreter's own start-up catches only SIGINT (and ignores it when the parent did)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return False
    caught = next(
        (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0"
    )
    mask = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    return int(caught, 16) & mask == mask


def wait_for_cpu(process: subprocess.Popen[str], seconds: float) -> float:
    """Wait until ``process`` has used ``seconds`` of CPU (the point of a run that a fixed sleep
    meant to reach, on any load); its CPU time then."""
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while True:
        used = cpu_seconds(process.pid)
        if process.poll() is not None or used is None:
            pytest.fail(f"ended before using {seconds} s of CPU: {process.communicate()}")
        if used >= seconds:
            return used
        if time.monotonic() > deadline:
            kill_group(process)
            pytest.fail(f"used only {used:.2f} s of CPU in {HANG_GUARD_SECONDS:.0f} s")
        time.sleep(_POLL)


def wait_for_handlers(process: subprocess.Popen[str]) -> None:
    """Wait until ``process`` catches SIGINT and SIGTERM (fairscan's start-up handler)."""
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while not handles_signals(process.pid):
        if process.poll() is not None:
            pytest.fail(f"ended before catching signals: {process.communicate()}")
        if time.monotonic() > deadline:
            kill_group(process)
            pytest.fail(f"no signal handlers in {HANG_GUARD_SECONDS:.0f} s")
        time.sleep(0.002)


def kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


@dataclass(frozen=True)
class Stopped:
    returncode: int
    stdout: str
    stderr: str
    cpu: float  # CPU seconds used after the signal by the process and the ``also`` processes
    wall: float  # wall-clock seconds from the signal to the exit (reported, never asserted)


def _read(stream: object, into: list[str]) -> threading.Thread:
    def read() -> None:
        if stream is None:
            into.append("")
            return
        with stream:  # type: ignore[attr-defined]  # closed once read, as communicate() does
            into.append(stream.read())  # type: ignore[attr-defined]

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def stop(
    process: subprocess.Popen[str],
    signum: int,
    *,
    also: tuple[int, ...] = (),
    group: bool = True,
    guard: float = HANG_GUARD_SECONDS,
) -> Stopped:
    """Send ``signum`` to ``process`` (its process group, as a terminal does, unless ``group``
    is False), wait for it to exit; the CPU it and the processes ``also`` used meanwhile."""
    watched = (process.pid, *also)
    start = {pid: cpu_seconds(pid) or 0.0 for pid in watched}
    last = dict(start)
    sent = time.monotonic()
    if group:
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    out: list[str] = []
    err: list[str] = []
    readers = [_read(process.stdout, out), _read(process.stderr, err)]
    while True:
        for pid in watched:
            used = cpu_seconds(pid)
            if used is not None:
                last[pid] = used
        # exited (a zombie, not reaped yet: its CPU time above is final)?
        exited = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if exited is not None:
            break
        if time.monotonic() - sent > guard:
            kill_group(process)
            pytest.fail(f"still running {guard:.0f} s after signal {signum} (hung)")
        time.sleep(_POLL)
    wall = time.monotonic() - sent
    process.wait()
    for reader in readers:
        reader.join()
    cpu = sum(last[pid] - start[pid] for pid in watched)
    return Stopped(process.returncode, "".join(out), "".join(err), cpu, wall)


def finish(process: subprocess.Popen[str]) -> Stopped:
    """Wait for ``process`` to end by itself; the CPU it used in all (a calibration run)."""
    out: list[str] = []
    err: list[str] = []
    readers = [_read(process.stdout, out), _read(process.stderr, err)]
    started = time.monotonic()
    while os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() - started > HANG_GUARD_SECONDS:
            kill_group(process)
            pytest.fail(f"still running after {HANG_GUARD_SECONDS:.0f} s (hung)")
        time.sleep(_POLL)
    cpu = cpu_seconds(process.pid) or 0.0
    wall = time.monotonic() - started
    process.wait()
    for reader in readers:
        reader.join()
    return Stopped(process.returncode, "".join(out), "".join(err), cpu, wall)


def wait_for_open(process: subprocess.Popen[str], path: Path) -> None:
    """Wait until ``process`` holds ``path`` open (it reached the file: a database, a lock)."""
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"ended before opening {path}: {process.communicate()}")
        with contextlib.suppress(OSError):
            fds = os.listdir(f"/proc/{process.pid}/fd")
            if str(path) in (_link(process.pid, fd) for fd in fds):
                return
        time.sleep(_POLL)
    kill_group(process)
    pytest.fail(f"never opened {path} in {HANG_GUARD_SECONDS:.0f} s")


def _link(pid: int, fd: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ""
