"""Interrupt benchmark (issues 11, 16, 38): wall-clock seconds from Ctrl-C to exit.

The promise: ``audit run`` stops within 2 seconds of Ctrl-C or SIGTERM, whatever it is doing.
The fast test suite checks promptness as CPU time after the signal (a loaded machine does not
inflate it: tests/support/signal_probe.py); this script reports what a user sees, the wall time,
with the CPU time beside it, on this machine as it is (run it on an idle one; ``uptime`` is
printed). The ``slow`` tests assert the same 2 seconds.

Cases, each ``--repeat`` times (median and maximum):

* ``run-1``: ``audit run`` on the sample credit data, replicates in the process (``--workers 1``);
* ``run-2``: the same with 2 worker processes (their CPU is counted too);
* ``coordinate-ascent`` and ``subroc-cover``: one long call of a compiled kernel in a child
  interpreter (tests/engine/test_kernel_interrupts.py).

    python benchmarks/bench_interrupts.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "cli")]
sys.path.insert(0, str(ROOT / "tests" / "engine"))

import signal_probe  # noqa: E402

PROMISE_SECONDS = 2.0


def _run_case(workers: int, folder: Path) -> signal_probe.Stopped:
    import test_interrupts  # the spec and the worker discovery of the CLI's interrupt tests

    process = test_interrupts._start(folder, workers=workers)
    found = test_interrupts._wait_for_workers(process, 2) if workers > 1 else []
    if workers == 1:
        signal_probe.wait_for_cpu(process, 4.0)  # past start-up, loading and the search
    return signal_probe.stop(process, signal.SIGINT, also=tuple(found))


def _kernel_case(setup: str) -> signal_probe.Stopped:
    import test_kernel_interrupts as kernel

    process = subprocess.Popen(
        [sys.executable, "-c", kernel.PRELUDE + setup + kernel.CALL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "calling\n"
    signal_probe.wait_for_cpu(
        process, (signal_probe.cpu_seconds(process.pid) or 0.0) + kernel.IN_CALL_CPU
    )
    return signal_probe.stop(process, signal.SIGINT, group=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import test_kernel_interrupts as kernel

    cases = {
        "run-1": lambda folder: _run_case(1, folder),
        "run-2": lambda folder: _run_case(2, folder),
        "coordinate-ascent": lambda folder: _kernel_case(kernel.COORDINATE_ASCENT),
        "subroc-cover": lambda folder: _kernel_case(kernel.SUBROC_COVER),
    }
    print(f"load: {os.getloadavg()}, {os.cpu_count()} CPUs")
    print("| case | wall median (s) | wall max (s) | CPU after the signal, max (s) | within 2 s |")
    print("|---|---|---|---|---|")
    for name, case in cases.items():
        stops = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as folder:
                stopped = case(Path(folder))
            if stopped.returncode not in (0, 130):
                raise SystemExit(f"{name}: exit {stopped.returncode}: {stopped.stderr}")
            stops.append(stopped)
            time.sleep(0.5)
        walls = [s.wall for s in stops]
        ok = "yes" if max(walls) < PROMISE_SECONDS else "NO"
        print(
            f"| {name} | {statistics.median(walls):.2f} | {max(walls):.2f} "
            f"| {max(s.cpu for s in stops):.2f} | {ok} |"
        )


if __name__ == "__main__":
    main()
