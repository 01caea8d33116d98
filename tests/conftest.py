"""Shared fixtures: hypothesis profiles, the ../shared data location, the oracle import path, a
real MLflow tracking server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """The tests start ``audit`` as a terminal would: SIGINT not ignored. A runner started in the
    background by a non-interactive shell (a CI script, ``make test &``) inherits SIGINT ignored,
    and every process it starts would too: its interpreter then drops a Ctrl-C that lands
    before fairscan's handlers are in place, and the run goes on (issue 38: "still running 30 s
    after signal 2" under load). A handler, unlike SIG_IGN, is reset to the default on exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # pytest-xdist registers it; without the plugin the marks below are inert
    config.addinivalue_line("markers", "xdist_group(name): the tests pytest-xdist runs together")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``: ``-n 2 --dist loadgroup``) the tests of one file run
    in one process, so that its module fixtures are built once, and the tests of a server
    fixture in one process: one PostgreSQL cluster and one MLflow server per run, not one per
    process (each starts its own, on a free port, in a temporary folder)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "mlflow_server" in fixtures:
            group = "mlflow-server"
        elif "postgres" in fixtures:
            group = "postgres"
        else:
            group = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real datasets not available: {SHARED_DATA} is absent (needs ../shared/data)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def compas_csv(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ProPublica-filtered COMPAS table (6172 rows) prepared by scripts/prepare_compas.py."""
    import subprocess

    out = tmp_path_factory.mktemp("compas") / "compas.csv"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "prepare_compas.py"),
            "--shared",
            str(shared_data.parent),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


# --- a real MLflow tracking server (report.to_mlflow, output.mlflow) ----------------------------

# The server is the full `mlflow` package in a venv of its own (`make mlflow-server`:
# .venv-mlflow); the tests use the client of the test venv (fairscan[mlflow]).
MLFLOW_SERVER_VARIABLE = "FAIRSCAN_MLFLOW_SERVER"  # the server's `mlflow` executable
MLFLOW_START_SECONDS = 300.0  # a bounded wait for the first start on a busy 2-core runner


@dataclass(frozen=True)
class MlflowServer:
    """A tracking server on 127.0.0.1 with an SQLite backend and a local artifact root."""

    uri: str
    root: Path  # its SQLite file, artifact folder and log


def _mlflow_executable() -> Path | None:
    given = os.environ.get(MLFLOW_SERVER_VARIABLE)
    if given:
        return Path(given)
    for venv in (ROOT / ".venv-mlflow", Path(sys.prefix).parent / ".venv-mlflow"):
        for name in ("bin/mlflow", "Scripts/mlflow.exe"):
            if (venv / name).is_file():
                return venv / name
    return None


def _healthy(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and every process it started (its own session: one process group): a
    polite SIGTERM, then SIGKILL for whatever is left of the group."""
    import contextlib
    import signal

    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """Start ``mlflow server`` once per session, wait until /health answers, stop it after."""
    import socket
    import time

    pytest.importorskip("mlflow", reason="the MLflow client is not installed (fairscan[mlflow])")
    executable = _mlflow_executable()
    if executable is None:
        pytest.fail(
            "no MLflow tracking server to start: run `make mlflow-server` (creates .venv-mlflow)"
            f" or set {MLFLOW_SERVER_VARIABLE} to the `mlflow` executable of an environment "
            "with the full mlflow package"
        )
    root = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    # the server venv is self-contained: none of the tests' MLflow settings or Python path
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_") and k not in ("PYTHONPATH", "PYTHONHOME")
    }
    # no background job runner (GenAI jobs): eight fewer processes on a 2-core runner
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(
        [
            str(executable),
            "server",
            "--backend-store-uri",
            f"sqlite:///{root / 'mlflow.db'}",
            "--artifacts-destination",
            str(root / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=root,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + MLFLOW_START_SECONDS
        while not _healthy(f"{uri}/health"):
            if process.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (root / "server.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"the MLflow tracking server did not start:\n{tail}")
            time.sleep(0.25)
        yield MlflowServer(uri=uri, root=root)
    finally:
        _stop_group(process)
        log.close()
