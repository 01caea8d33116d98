"""Worker processes (issue 23): loky's executor never re-runs an unguarded script, and a worker
killed from outside is a clear scan error (exit 2 naming what was lost), never a hang or an
"internal error"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fairscan.engine.randomization import run_replicates
from fairscan.errors import ScanError

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")

# A plain script, no `if __name__ == "__main__":` guard, with a side effect at its top level.
UNGUARDED = """\
import json, pathlib, sys
import fairscan
import fairscan.engine.randomization as randomization

with open("top-level-runs.log", "a") as log:
    log.write("ran\\n")
workers = int(sys.argv[1])
randomization.WORKER_STARTUP_SECONDS = 0.0  # a pool even for this small job
report = fairscan.audit(
    {data!r},
    outcome="default",
    prediction="score",
    recommendation="high_risk",
    attributes=["sex", "ethnicity", "age_group", "region"],
    scans=[{{"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 20}}],
    significance={{"replicates": 99, "seed": 7, "workers": workers}},
)
finding = report.scans[0].findings[0]
pathlib.Path(f"result-{{workers}}.json").write_text(
    json.dumps({{"score": finding.statistic.value, "p": finding.p_value,
                "executor": report.provenance.workers}})
)
"""


def _run_script(tmp_path: Path, workers: int) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED.format(data=CREDIT.as_posix()), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), str(workers)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_an_unguarded_script_runs_its_top_level_once_and_gives_one_correct_report(
    tmp_path: Path,
) -> None:
    done = _run_script(tmp_path, workers=2)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "top-level-runs.log").read_text() == "ran\n"  # not once per worker
    assert "Error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    pooled = json.loads((tmp_path / "result-2.json").read_text())
    done = _run_script(tmp_path, workers=1)  # in-process: the reference
    assert done.returncode == 0, done.stderr
    serial = json.loads((tmp_path / "result-1.json").read_text())
    assert pooled["score"] == serial["score"] and pooled["p"] == serial["p"]
    assert list(tmp_path.glob("result-*.json")) and len(list(tmp_path.glob("*.json"))) == 2


class _SlowJob:
    """A picklable replicate job that takes a while, so a worker can be killed meanwhile."""

    def __call__(self, index: int) -> float:
        time.sleep(0.2)
        return float(index)


def _children() -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as handle:
            found += [int(pid) for pid in handle.read().split()]
    return [pid for pid in found if b"popen_loky" in Path(f"/proc/{pid}/cmdline").read_bytes()]


@pytest.mark.slow
def test_a_worker_killed_from_outside_is_a_scan_error_saying_what_was_lost(monkeypatch) -> None:
    """The fast suite's worker kill (the CLI's and the Dask cluster's are ``slow``)."""
    import threading

    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            workers = _children()
            if workers:
                time.sleep(0.5)  # into the chunks
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    with pytest.raises(ScanError) as caught:
        run_replicates(_SlowJob(), 400, workers=2)
    killer.join(timeout=5)
    assert killed
    (issue,) = caught.value.issues
    message = issue.message
    assert "worker process" in message and "ended unexpectedly" in message, message
    assert "of 399 replicates were lost" in message and "SIGKILL" in message, message
    assert issue.hint and "--workers" in issue.hint
    # the next run starts a fresh executor and is complete
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    again = run_replicates(_SlowJob(), 12, workers=2)
    assert np.array_equal(again, np.arange(12.0))
