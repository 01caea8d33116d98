"""Memory limits are errors the user can act on (issue 24): under ``prlimit --as`` (here the
same RLIMIT_AS set in the child before exec) the CLI exits 2 with the need, the limit and the
way out, or completes; never an internal error, a traceback, SIGABRT or a hang."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fairscan import memory_budget
from fairscan.memory_budget import is_resource_failure, resource_failure

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS"),
]

ROOT = Path(__file__).resolve().parents[1]
AUDIT = Path(sys.executable).with_name("audit")
COMPAS = ROOT / "build" / "compas.csv"


def _run_limited(
    tmp_path: Path, limit: int, *, streaming: bool = False
) -> subprocess.CompletedProcess[str]:
    spec_text = (ROOT / "audits" / "compas-fpr.audit.yaml").read_text(encoding="utf-8")
    spec_text = spec_text.replace("../build/compas.csv", COMPAS.as_posix())
    if streaming:
        spec_text = spec_text.replace("data:\n", "data:\n  streaming: true\n", 1)
    spec = tmp_path / "compas-fpr.audit.yaml"
    spec.write_text(spec_text, encoding="utf-8")

    def limit_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [
            str(AUDIT),
            "run",
            str(spec),
            "--replicates",
            "19",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_address_space,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "internal error" not in done.stderr and "bug in fairscan" not in done.stderr, done.stderr


def test_300_mb_is_refused_at_start_with_the_need_and_the_limit(tmp_path: Path) -> None:
    done = _run_limited(tmp_path, 300 << 20)
    _clean(done)
    assert done.returncode == 2
    assert "needs about 480 MiB" in done.stderr and "RLIMIT_AS) is 300 MiB" in done.stderr


@pytest.mark.skipif(not COMPAS.is_file(), reason="build/compas.csv not built (make compas)")
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("limit_mb", [500, 1024])
def test_compas_under_an_address_space_limit_is_clean(
    tmp_path: Path, limit_mb: int, streaming: bool
) -> None:
    done = _run_limited(tmp_path, limit_mb << 20, streaming=streaming)
    _clean(done)
    if done.returncode == 2:  # a scan ran out: it says so, with the way out
        assert "out of memory" in done.stderr and "data: {sample:" in done.stderr
    if limit_mb >= 1024:
        assert done.returncode == 1, done.stderr[-2000:]  # COMPAS has significant findings


def test_resource_failures_are_recognised_through_their_causes() -> None:
    assert is_resource_failure(MemoryError())
    assert is_resource_failure(RuntimeError("can't start new thread"))
    assert is_resource_failure(ImportError("x.so: failed to map segment from shared object"))
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as outer:
        assert is_resource_failure(outer)
    assert not is_resource_failure(ValueError("a bug"))
    assert resource_failure(ValueError("a bug")) is None
    assert "help: audit a sample of the rows" in (resource_failure(MemoryError()) or "")


def test_startup_problem_names_need_and_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_budget, "address_space_limit", lambda: 100 << 20)
    assert "limit (RLIMIT_AS) is 100 MiB" in (memory_budget.startup_problem() or "")
    monkeypatch.setattr(memory_budget, "address_space_limit", lambda: None)
    assert memory_budget.startup_problem() is None
