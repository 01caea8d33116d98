"""Issue 24: under a container's memory limit (a memory cgroup) the kernel kills a process
that goes past it, with no message. fairscan reads the limit of the cgroups that bound it
(v1 or v2, its own folder and its ancestors) and compares its needs with it before large
allocations, so a run that cannot fit exits 2 with the limit and the way out, and says what to do. Real cgroups: the test makes a child memory cgroup of its own and runs the
CLI inside it; skipped where cgroups cannot be created (no permission, no cgroup mount)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_support import Project, spec_text

from fairscan.memory_budget import CGROUP_ROOT, _own_cgroups

pytestmark = pytest.mark.slow

LIMIT = 400 << 20


def _child_cgroup() -> tuple[Path, int] | None:
    """A new memory cgroup under this process's own one, or None where none can be made."""
    for folder, version in _own_cgroups(CGROUP_ROOT):
        limit_file = "memory.max" if version == 2 else "memory.limit_in_bytes"
        controls = folder / "cgroup.subtree_control"
        if version == 2 and "memory" not in (controls.read_text() if controls.exists() else ""):
            continue  # v2: the memory controller must be enabled for the children
        child = folder / f"fairscan-test-{uuid.uuid4().hex[:8]}"
        try:
            child.mkdir()
        except OSError:
            continue
        try:
            (child / limit_file).write_text(str(LIMIT))
        except OSError:
            child.rmdir()
            continue
        return child, version
    return None


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    if not sys.platform.startswith("linux"):
        pytest.skip("memory cgroups are Linux's")
    made = _child_cgroup()
    if made is None:
        pytest.skip("cannot create a memory cgroup here (needs write access to /sys/fs/cgroup)")
    child, _ = made
    try:
        yield child
    finally:
        for _ in range(50):  # the processes have exited; the kernel frees the cgroup soon
            try:
                child.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def _run_in(cgroup: Path, project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRSCAN_")}

    def enter() -> None:
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    return subprocess.run(
        [sys.executable, "-m", "fairscan.cli", *args],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=enter,
    )


def _big_csv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    pl.DataFrame(
        {
            "sex": rng.choice(["F", "M"], size=rows),
            "region": rng.choice(["North", "South", "East", "West"], size=rows),
            "age_group": rng.choice(["under 25", "25 to 45", "over 45"], size=rows),
            "y": rng.integers(0, 2, size=rows),
            "p": rng.random(rows).round(12),
            "rec": rng.integers(0, 2, size=rows),
            "note": [f"free text that only pads the file {i}" for i in range(rows)],
        }
    ).write_csv(path)


def test_a_file_too_big_for_the_cgroup_exits_2_with_the_limit(
    project: Project, memory_cgroup: Path
) -> None:
    data = project.root / "big.csv"
    _big_csv(data, 5_000_000)  # ~450 MB on disk: more than the cgroup's 400 MiB once read
    spec = project.spec(
        spec_text(data="big.csv").replace("  path: big.csv", "  path: big.csv\n  streaming: false")
    )
    outcome = _run_in(memory_cgroup, project, "run", str(spec))
    assert outcome.returncode == 2, (outcome.returncode, outcome.stderr[-2000:])
    assert "needs about" in outcome.stderr and "available" in outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert "stream" in outcome.stderr  # the way out


def test_a_streamed_text_file_too_big_to_decode_exits_2(
    project: Project, memory_cgroup: Path
) -> None:
    """Streamed, a CSV is decoded by polars, which reads a text file whole: under the limit
    the run says so and how to go on (Parquet, smaller files), instead of being killed."""
    data = project.root / "big.csv"
    _big_csv(data, 5_000_000)
    spec = project.spec(spec_text(data="big.csv"))
    outcome = _run_in(memory_cgroup, project, "run", str(spec))
    assert outcome.returncode == 2, (outcome.returncode, outcome.stderr[-2000:])
    assert "to decode" in outcome.stderr and "Parquet" in outcome.stderr
    assert "Traceback" not in outcome.stderr
