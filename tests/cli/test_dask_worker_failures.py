"""Issue 24: a cluster that fails under the audit is an environment error (exit 2, a message
that names the cause and the way out, no traceback), never a hang or a bug report. Two real
failures on real ``distributed.LocalCluster`` workers: a worker process killed with SIGKILL
while it runs replicates, and workers that cannot import fairscan (a worker preload hides the
package, as on a cluster whose image lacks it).

Both start clusters and kill processes: ``slow`` (issue 38; a worker kill once hit its time
limit on a loaded runner). The fast suite keeps the loky worker kill of
tests/engine/test_workers.py and the cluster of tests/engine/test_executors.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Project, spec_text

pytestmark = pytest.mark.slow
# far above any load: a hang, not a slow machine, fails the test
HANG_GUARD_SECONDS = 300


def _distributed() -> Any:
    """Imported by the tests that use it, not when the suite is collected."""
    return pytest.importorskip("distributed", reason="needs fairscan[dask] (distributed)")


# Run inside each worker process at start-up: imports of fairscan fail there, as they do on a
# worker whose environment does not have the package.
HIDE_FAIRSCAN = """\
import sys


class _NoFairscan:
    def find_spec(self, name, path=None, target=None):
        if name == "fairscan" or name.startswith("fairscan."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


for _name in [m for m in sys.modules if m == "fairscan" or m.startswith("fairscan.")]:
    del sys.modules[_name]
sys.meta_path.insert(0, _NoFairscan())
"""


def _audit(project: Project, spec: Path, address: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRSCAN_")}
    return subprocess.Popen(
        [sys.executable, "-m", "fairscan.cli", "run", str(spec), "--executor", address],
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, stderr = proc.communicate(timeout=HANG_GUARD_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


@pytest.fixture
def one_worker_cluster() -> Iterator[Any]:
    distributed = _distributed()
    dask = pytest.importorskip("dask", reason="needs fairscan[dask] (dask)")
    # allowed-failures 0: the first worker death marks its chunk as the culprit (KilledWorker)
    # instead of retrying it on the restarted worker
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(
            n_workers=1, processes=True, threads_per_worker=1, dashboard_address=":0"
        )
        try:
            yield cluster
        finally:
            cluster.close()


def test_a_worker_killed_during_the_replicates_exits_2_and_names_it(
    project: Project, one_worker_cluster: Any
) -> None:
    distributed = _distributed()
    project.data()
    spec = project.spec(
        spec_text().replace("replicates: 19", "replicates: 200000, sequential: false")
    )
    address = one_worker_cluster.scheduler_address
    with distributed.Client(address, timeout=10, set_as_default=False) as client:
        proc = _audit(project, spec, address.replace("tcp://", "dask://"))
        try:
            deadline = time.monotonic() + HANG_GUARD_SECONDS
            while not any(client.processing().values()):  # a chunk is running on the worker
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "no chunk reached the worker"
                time.sleep(0.05)
            [pid] = client.run(os.getpid).values()
            os.kill(pid, signal.SIGKILL)
        finally:
            code, stderr = _finish(proc)
    assert code == 2, stderr
    # the scheduler reports the death as the chunk's (KilledWorker) or, when the job scattered
    # to that worker went with it, as the chunks cancelled: both name the loss
    lost = ("killed its workers", "a worker or the scheduler was lost")
    assert any(words in stderr for words in lost), stderr
    assert "Traceback" not in stderr
    assert "--executor local" in stderr  # the way out
    # one failing scan never loses the others: the scan whose chunk died is an error in the
    # report, the next scan ran on the restarted worker
    report = json.loads((project.root / "reports" / "synthetic.json").read_text("utf-8"))
    statuses = {scan["id"]: scan["status"] for scan in report["scans"]}
    assert statuses["fpr"] == "error", statuses
    assert any(words in report["scans"][0]["error"] for words in lost)
    assert statuses["calibration"] != "error", statuses


def test_workers_without_fairscan_exit_2_and_say_what_to_install(
    project: Project, tmp_path: Path
) -> None:
    preload = tmp_path / "hide_fairscan.py"
    preload.write_text(HIDE_FAIRSCAN, encoding="utf-8")
    project.data()
    spec = project.spec(spec_text())
    cluster = _distributed().LocalCluster(
        n_workers=1,
        processes=True,
        threads_per_worker=1,
        dashboard_address=":0",
        preload=[str(preload)],
    )
    try:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        code, stderr = _finish(_audit(project, spec, address))
    finally:
        cluster.close()
    assert code == 2, stderr
    assert "a worker cannot import fairscan" in stderr, stderr
    assert "pip install 'fairscan[dask]==" in stderr
    assert "Traceback" not in stderr
