"""``--executor dask://HOST:PORT`` and ``significance.executor`` (issue 12): an audit through a
real 2-worker ``distributed.LocalCluster`` gives the same null distributions and p-values as the
local run, and its provenance names the executor; a malformed or unreachable executor exits 2
with a message that says what to write."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import SAMPLE_DATA, Invoke, Project, spec_text

from fairscan.api import load_report


def _distributed() -> Any:
    """Imported by the tests that start a cluster (``slow``: issue 38), not at collection."""
    return pytest.importorskip("distributed", reason="needs fairscan[dask] (distributed)")


COMPAS_SPEC = """\
version: 1
name: compas-fpr
data: {{path: {data}}}
columns: {{outcome: two_year_recid, prediction: prob_decile, recommendation: high_risk}}
attributes: [sex, race, age_group, c_charge_degree, priors]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 100}}
  - {{id: tpr, type: tpr_scan, penalty: 1, restarts: 100}}
  - {{id: calibration, type: bias_scan, direction: negative, restarts: 100}}
significance: {{replicates: 99, alpha: 0.05, seed: 0}}
output: {{dir: reports, formats: [json]}}
"""


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    cluster = _distributed().LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
    )
    try:
        yield cluster.scheduler_address.replace("tcp://", "dask://")
    finally:
        cluster.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _report(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))


def _nulls_and_p_values(report: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {
        scan["id"]: (
            scan["null_distribution"],
            [(f["subgroup"], f["p_value"], f["adjusted_p_value"]) for f in scan["findings"]],
        )
        for scan in report["scans"]
    }


@pytest.mark.slow
@pytest.mark.shared_data
def test_compas_audit_on_a_2_worker_cluster_matches_the_local_run(
    cli: Invoke, compas_csv: Path, tmp_path: Path, dask_address: str
) -> None:
    spec = tmp_path / "compas.audit.yaml"
    spec.write_text(COMPAS_SPEC.format(data=compas_csv), encoding="utf-8")
    here, there = tmp_path / "local", tmp_path / "dask"
    cli("run", spec, "--workers", "1", "--out", here, code=1)
    cli("run", spec, "--executor", dask_address, "--out", there, code=1)
    local, remote = _report(here, "compas-fpr"), _report(there, "compas-fpr")
    assert local["provenance"]["executor"] == "local"
    assert remote["provenance"]["executor"] == dask_address
    assert remote["provenance"]["parameters"]["significance"]["executor"] == dask_address
    nulls = _nulls_and_p_values(local)
    assert set(nulls) == {"fpr", "tpr", "calibration"}
    for scan_id, (null, _) in nulls.items():
        # the sequential rule stops both runs at the same replicate (of at most 99)
        assert len(null["scores"]) == null["replicates"] <= 99, scan_id
    assert _nulls_and_p_values(remote) == nulls
    assert remote["verdict"] == local["verdict"]


@pytest.mark.slow
def test_spec_executor_and_audit_scan_on_the_cluster(
    cli: Invoke, project: Project, dask_address: str
) -> None:
    """No shared data needed: the synthetic spec with significance.executor set, and the same
    scan through `audit scan --executor`, against local runs."""
    project.data(bias=True)
    local_spec = project.spec(spec_text(name="here"), "here.audit.yaml")
    remote_spec = project.spec(
        spec_text(name="there").replace("seed: 7}", f"seed: 7, executor: '{dask_address}'}}"),
        "there.audit.yaml",
    )
    out = project.root / "reports"
    cli("run", local_spec, "--workers", "1", "--out", out, code=1)
    cli("run", remote_spec, "--out", out, code=1)
    local, remote = _report(out, "here"), _report(out, "there")
    assert remote["provenance"]["executor"] == dask_address
    assert _nulls_and_p_values(remote) == _nulls_and_p_values(local)
    # a report written before provenance.executor existed still loads (as a local run)
    del local["provenance"]["executor"]
    older = project.root / "older.json"
    older.write_text(json.dumps(local), encoding="utf-8")
    assert load_report(older).provenance.executor == "local"

    scan = ("scan", SAMPLE_DATA, "--type", "fpr_scan", "--outcome", "default")
    scan += ("--recommendation", "high_risk", "--attributes", "sex,ethnicity,age_group")
    scan += ("--replicates", "49", "--workers", "1")
    cli(*scan, "--out", project.root / "scan-here", code=1)
    cli(*scan, "--executor", dask_address, "--out", project.root / "scan-there", code=1)
    [here] = (project.root / "scan-here").glob("*.json")
    [there] = (project.root / "scan-there").glob("*.json")
    here_report, there_report = json.loads(here.read_text()), json.loads(there.read_text())
    assert there_report["provenance"]["executor"] == dask_address
    assert _nulls_and_p_values(there_report) == _nulls_and_p_values(here_report)


def test_a_malformed_executor_in_the_spec_says_what_to_write(cli: Invoke, project: Project) -> None:
    project.data()
    spec = project.spec(spec_text().replace("seed: 7}", "seed: 7, executor: 'tcp://h:8786'}"))
    outcome = cli("validate", "--no-data", spec, code=2)
    text = outcome.stderr
    assert "significance.executor" in text
    assert "not an executor: 'tcp://h:8786'" in text
    assert "dask://HOST:PORT" in text


def test_a_malformed_executor_flag_is_a_usage_error(cli: Invoke, project: Project) -> None:
    project.data()
    spec = project.spec(spec_text())
    outcome = cli("run", spec, "--executor", "dask://nowhere", code=2)
    assert "--executor: not an executor: 'dask://nowhere'" in outcome.stderr
    assert "dask://HOST:PORT" in outcome.stderr


def test_an_unreachable_scheduler_exits_2(
    cli: Invoke, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _distributed()
    monkeypatch.setattr("fairscan.engine.executors.CONNECT_TIMEOUT_SECONDS", 1.0)
    project.data()
    spec = project.spec(spec_text())
    port = _free_port()
    outcome = cli("run", spec, "--executor", f"dask://127.0.0.1:{port}", code=2)
    assert (
        f"cannot reach the Dask scheduler of the executor dask://127.0.0.1:{port}" in outcome.stderr
    )
    assert "dask scheduler" in outcome.stderr
    assert not (project.root / "reports").exists()  # nothing ran, nothing written


@pytest.mark.slow
def test_ctrl_c_cancels_the_chunks_on_the_cluster(project: Project, dask_address: str) -> None:
    """Ctrl-C during the replicates: exit 130 promptly (5 s, an idle machine: ``slow``), and
    the cluster is left idle."""
    distributed = _distributed()
    project.data()
    spec = project.spec(
        spec_text().replace("replicates: 19", "replicates: 200000, sequential: false")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRSCAN_")}
    address = dask_address.replace("dask://", "tcp://")
    with distributed.Client(address, timeout=10, set_as_default=False) as client:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fairscan.cli", "run", str(spec), "--executor", dask_address],
            cwd=project.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not any(client.processing().values()):  # the chunks have reached the workers
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "no chunk reached the cluster"
                time.sleep(0.05)
            interrupted = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=20)
            assert proc.returncode == 130, stderr
            assert time.monotonic() - interrupted < 5
            assert "Traceback" not in stderr
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        deadline = time.monotonic() + 10  # a chunk already running finishes (about a second)
        while any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(client.processing().values())


def _silent_service() -> tuple[socket.socket, int]:
    """A TCP service that accepts connections and never says a word (not Dask)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener, int(listener.getsockname()[1])


def test_a_service_that_is_not_a_dask_scheduler_is_refused_before_work_is_sent() -> None:
    _distributed()
    from fairscan.engine.executors import open_executor
    from fairscan.errors import ScanError

    listener, port = _silent_service()
    try:
        with (
            pytest.raises(ScanError, match="is not a Dask scheduler: it accepted the connection"),
            open_executor(f"dask://127.0.0.1:{port}", timeout=1.0),
        ):
            pass
    finally:
        listener.close()


def test_cluster_failures_are_executor_errors_not_bugs() -> None:
    _distributed()
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    from fairscan.engine.executors import _cluster_failure

    assert "killed its workers" in (_cluster_failure(KilledWorker("task", "worker", 3)) or "")
    assert "connection to the cluster was lost" in (_cluster_failure(CommClosedError("x")) or "")
    missing = ModuleNotFoundError("No module named 'fairscan'", name="fairscan")
    assert "cannot import fairscan" in (_cluster_failure(missing) or "")
    # a worker that cannot unpickle the scattered job: the scheduler relays only the repr
    relayed = Exception("ModuleNotFoundError(\"No module named 'fairscan'\")")
    assert "cannot import fairscan" in (_cluster_failure(relayed) or "")
    assert _cluster_failure(Exception("something else")) is None
    assert _cluster_failure(ValueError("a bug")) is None
    assert _cluster_failure(KeyboardInterrupt()) is None
