"""``output.mlflow`` in ``audit run`` (issue 26): each run logged to a real tracking server and
read back with the MLflow client; a tracking server that is down, fails or stalls exits 2 with
the reason after the reports are written (nothing lost), never hangs, and Ctrl-C still stops it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_support import FAST, Invoke, Project, line_of, spec_text, strict_json

pytestmark = pytest.mark.slow

SECRET = "pw-Zq81-secret"


def _spec(project: Project, experiment: str, name: str = "synthetic") -> tuple[Path, str]:
    project.data(bias=True)
    text = spec_text(name).replace(
        "output: {dir: reports}",
        f"output:\n  dir: reports\n  formats: [json, markdown]\n  mlflow:\n"
        f"    experiment: {experiment}\n    run_name: nightly\n    tags: {{model: gbm-v3}}",
    )
    return project.spec(text), text


def _run_id(stderr: str) -> str:
    found = re.search(r"MLflow: run ([0-9a-f]+) \(experiment", stderr)
    assert found is not None, stderr
    return found.group(1)


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    pytest.importorskip("mlflow", reason="the MLflow client is not installed (fairscan[mlflow])")
    for name in list(os.environ):
        if name.startswith("MLFLOW_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.mlflow_server
def test_audit_run_logs_each_run_and_its_baseline_labels(
    cli: Invoke, project: Project, mlflow_server: Any, client_env: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    # credentials in the URI (a proxy's basic auth) never reach a param, tag, report or message
    uri = mlflow_server.uri.replace("http://", f"http://auditor:{SECRET}@")
    client_env.setenv("MLFLOW_TRACKING_URI", uri)
    experiment = f"cli-{uuid.uuid4().hex[:8]}"
    spec, _ = _spec(project, experiment)
    first = cli("run", spec, *FAST, "--no-progress", code=1)
    baseline = project.root / "reports" / "synthetic.json"
    second = cli("run", spec, *FAST, "--no-progress", "--baseline", baseline, code=1)
    client = MlflowClient(tracking_uri=mlflow_server.uri)
    for outcome in (first, second):
        assert SECRET not in outcome.output
        assert f"at {mlflow_server.uri}" in outcome.stderr
    run = client.get_run(_run_id(second.stderr))
    assert run.info.status == "FINISHED" and run.info.run_name == "nightly"
    assert client.get_experiment(run.info.experiment_id).name == experiment
    report = strict_json(baseline.read_text())  # the second run's report (same folder)
    assert isinstance(report, dict)
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert params["fairscan.spec_name"] == "synthetic"
    assert params["fairscan.spec_sha256"] == report["provenance"]["spec_sha256"]
    assert params["fairscan.data_sha256"] == report["provenance"]["data_sha256"]
    assert params["fpr.type"] == "fpr_scan" and params["fairscan.replicates"] == "19"
    fpr = report["scans"][0]
    assert metrics["fpr.p_value"] == pytest.approx(fpr["findings"][0]["p_value"], rel=1e-12)
    assert metrics["fpr.statistic"] == pytest.approx(
        fpr["findings"][0]["statistic"]["value"], rel=1e-12
    )
    assert metrics["fpr.significant"] == 1.0
    counts = report["baseline"]["counts"]
    assert counts["persists"] >= 1
    for label, count in counts.items():
        assert metrics[f"baseline.{label}"] == count
    assert metrics["fpr.baseline.persists"] >= 1
    assert tags["fairscan.verdict"] == "findings" and tags["model"] == "gbm-v3"
    assert tags["fairscan.version"] == report["provenance"]["tool_version"]
    listed = {a.path for a in client.list_artifacts(run.info.run_id, "fairscan")}
    assert listed == {f"fairscan/synthetic{ext}" for ext in (".json", ".md", ".html")}
    stored = json.dumps([params, tags])
    folder = Path(client.download_artifacts(run.info.run_id, "fairscan", str(project.root / "dl")))
    stored += "".join(p.read_text(encoding="utf-8") for p in folder.iterdir())
    assert SECRET not in stored


# --- tracking servers that fail ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Failing(BaseHTTPRequestHandler):
    def _fail(self) -> None:
        self.send_response(503)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"tracking store unavailable")

    do_GET = do_POST = do_PUT = _fail

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _failing_server() -> Iterator[str]:
    """Answers every request with 503."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _stalled_server(accepted: threading.Event | None = None) -> Iterator[str]:
    """Accepts connections and never answers (a hung proxy)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)
            if accepted is not None:
                accepted.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        for connection in held:
            connection.close()
        listener.close()


@contextmanager
def _dripping_server(drip_bytes: int = 60, every: float = 0.25) -> Iterator[str]:
    """Reads each request, then sends its answer one byte every ``every`` s: each read comes
    well within MLflow's request timeout, the answer never ends. Bounded: after ``drip_bytes``
    bytes it closes the connection (a run that did not give up earlier then fails otherwise)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def drip(connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            try:
                connection.recv(65536)
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"[:drip_bytes]:
                    if stop.wait(every):
                        return
                    connection.sendall(bytes([byte]))
            except OSError:
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=drip, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        listener.close()


def test_a_tracking_server_dripping_bytes_is_given_up_at_the_deadline(
    cli: Invoke, project: Project, client_env: pytest.MonkeyPatch
) -> None:
    """A server sending a byte at a time held the run past 400 s (every read came within the
    request timeout): the whole delivery has a deadline (FAIRSCAN_MLFLOW_TIMEOUT), after the
    reports are written, and the run exits 2 as for any failing server."""
    client_env.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    client_env.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "600")  # never reached by a drip
    client_env.setenv("FAIRSCAN_MLFLOW_TIMEOUT", "2")
    spec, text = _spec(project, "dripping")
    with _dripping_server() as uri:
        client_env.setenv("MLFLOW_TRACKING_URI", uri)
        outcome = cli("run", spec, *FAST, "--no-progress", code=2)
    assert (project.root / "reports" / "synthetic.json").is_file()  # written first
    where = f"{spec}:{line_of(text, '  mlflow:')}"
    stderr = " ".join(outcome.stderr.split())
    assert (
        f"{where}:3: output.mlflow: cannot log to MLflow at {uri}: the tracking server did "
        "not finish answering within 2 s (the reports are written)" in stderr
    ), stderr
    assert "FAIRSCAN_MLFLOW_TIMEOUT" in stderr


@contextmanager
def _unreachable() -> Iterator[str]:
    """A port nothing listens on."""
    yield f"http://127.0.0.1:{_free_port()}"


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        (_unreachable, r"onnection refused|Max retries exceeded"),
        (_failing_server, r"503|unavailable|too many 503"),
        (_stalled_server, r"timed? ?out|Read timed out|timeout"),
    ],
    ids=["unreachable", "failing", "stalled"],
)
def test_a_failing_tracking_server_exits_2_after_the_reports(
    cli: Invoke,
    project: Project,
    client_env: pytest.MonkeyPatch,
    server: Callable[[], Any],
    reason: str,
) -> None:
    client_env.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    client_env.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    spec, text = _spec(project, "down")
    with server() as uri:
        client_env.setenv("MLFLOW_TRACKING_URI", uri.replace("http://", f"http://a:{SECRET}@"))
        outcome = cli("run", spec, *FAST, "--no-progress", code=2)
    reports = project.root / "reports"
    report = strict_json((reports / "synthetic.json").read_text())  # written whole, first
    assert isinstance(report, dict) and report["verdict"]["exit_code"] == 1
    assert (reports / "synthetic.md").is_file()
    stderr = outcome.stderr
    assert "FAIL: " in stderr  # the summary came first: nothing of the run is lost
    where = f"{spec}:{line_of(text, '  mlflow:')}"
    assert f"{where}:3: output.mlflow: cannot log to MLflow at {uri}" in stderr, stderr
    assert re.search(reason, stderr, re.IGNORECASE), stderr
    assert "check MLFLOW_TRACKING_URI" in stderr and "the reports are written" in stderr
    assert SECRET not in outcome.output


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_a_run_stalled_on_the_tracking_server(
    project: Project, client_env: pytest.MonkeyPatch, signum: int, code: int
) -> None:
    spec, _ = _spec(project, "stalled")
    accepted = threading.Event()
    with _stalled_server(accepted) as uri:
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_HTTP_REQUEST_TIMEOUT": "600"}
        process = subprocess.Popen(
            [sys.executable, "-m", "fairscan.cli", "run", str(spec), *FAST, "--no-progress"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            # the run is waiting on the server (a bounded wait for a busy runner)
            assert accepted.wait(timeout=300), "the run never reached the tracking server"
            process.send_signal(signum)
            _, stderr = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    assert process.returncode == code, stderr.decode(errors="replace")
    assert (project.root / "reports" / "synthetic.json").is_file()  # written before


# --- the spec block ------------------------------------------------------------------------------


def test_output_mlflow_is_checked_where_it_is_written(cli: Invoke, project: Project) -> None:
    project.data()
    text = spec_text().replace(
        "output: {dir: reports}",
        "output:\n  dir: reports\n  mlflow:\n    tracking_uri: http://x\n    tags: {'bad:key?': v}",
    )
    spec = project.spec(text)
    outcome = cli("validate", spec, "--no-data", code=2)
    block = line_of(text, "  mlflow:")
    assert f"{spec}:{block}:3: output.mlflow.experiment: missing required key" in outcome.stderr
    assert f"{spec}:{block + 1}:5: output.mlflow.tracking_uri: unknown key" in outcome.stderr
    assert "MLflow does not accept the tag key 'bad:key?'" in outcome.stderr


def test_the_json_schema_agrees(project: Project) -> None:
    import jsonschema
    import yaml
    from cli_support import SCHEMAS

    schema = json.loads((SCHEMAS / "audit-spec.schema.json").read_text(encoding="utf-8"))
    spec, _ = _spec(project, "credit-model-fairness")
    good = yaml.safe_load(spec.read_text(encoding="utf-8"))
    jsonschema.validate(good, schema)
    bad = {**good, "output": {"mlflow": {"experiment": "x", "tags": {"bad:key?": "v"}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "output": {"mlflow": {"run_name": "n"}}}, schema)


@pytest.mark.parametrize("key", ["a//b", "/a", "a/../b", "a/"])
def test_tag_keys_a_path_would_change_are_refused(cli: Invoke, project: Project, key: str) -> None:
    project.data()
    text = spec_text().replace(
        "output: {dir: reports}",
        f"output:\n  dir: reports\n  mlflow:\n    experiment: x\n    tags: {{'{key}': v}}",
    )
    outcome = cli("validate", project.spec(text), "--no-data", code=2)
    assert f"MLflow does not accept the tag key {key!r}" in outcome.stderr


def test_a_run_without_output_mlflow_keeps_its_report_keys(cli: Invoke, project: Project) -> None:
    """The resolved spec in a report names output.mlflow only when it is set (the shipped
    audits' report digests are unchanged)."""
    project.data()
    spec = project.spec(spec_text())
    cli("run", spec, *FAST, "--no-progress", code=None)
    report = strict_json((project.root / "reports" / "synthetic.json").read_text())
    assert isinstance(report, dict)
    assert "mlflow" not in report["provenance"]["parameters"]["output"]
