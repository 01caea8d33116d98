"""Packaging (issue 11): the kernels are compiled when the project is built, never at run time.

``pip install .`` into a fresh virtual environment compiles them and the installed ``audit``
runs an audit; ``python -m build`` makes an sdist with the Cython sources and a wheel (built from
that sdist) with the compiled modules. The fresh environments get the project only; its
dependencies come from this test environment's site-packages (a ``.pth`` line), so the tests
need no download beyond the build requirements of ``pip install .``.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CREDIT = ROOT / "sample_data" / "credit.csv"

SPEC = """\
version: 1
name: packaging-probe
data: {{path: {data}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 20}}
significance: {{replicates: 49, seed: 0}}
output: {{dir: reports, formats: [json]}}
"""

# slow: each builds the kernels and installs into a fresh venv (about a quarter of the suite's
# time); `make test-slow` runs them, CI in a step of its own
pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout"),
    pytest.mark.slow,
]


def _run(
    cmd: list[str], cwd: Path, timeout: float = 600, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env_extra or {})}
    env.pop("PYTHONPATH", None)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _fresh_venv(path: Path) -> Path:
    """A new venv whose dependencies are this environment's (fairscan itself is not there)."""
    done = _run([sys.executable, "-m", "venv", str(path)], path.parent)
    assert done.returncode == 0, done.stderr
    python = path / "bin" / "python"
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], path.parent
    ).stdout.strip()
    # appended after the venv's own site-packages, so the installed fairscan comes first
    Path(purelib, "deps-of-the-test-environment.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8"
    )
    return python


def _audit_runs(venv: Path, work: Path) -> None:
    python = venv / "bin" / "python"
    where = _run(
        [
            str(python),
            "-c",
            "import fairscan.engine.kernels as k, fairscan.engine.subroc_kernels"
            " as s; print(k.__file__); print(s.__file__)",
        ],
        work,
    )
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert line.startswith(str(venv)) and line.endswith(".so"), where.stdout
    spec = work / "probe.audit.yaml"
    spec.write_text(SPEC.format(data=CREDIT.as_posix()), encoding="utf-8")
    done = _run([str(venv / "bin" / "audit"), "run", str(spec), "--no-progress"], work)
    assert done.returncode == 1, done.stdout + done.stderr  # the injected bias is found
    assert (work / "reports" / "packaging-probe.json").is_file()


def test_pip_install_builds_the_kernels_and_the_installed_audit_runs(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = _fresh_venv(venv)
    done = _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(ROOT)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    _audit_runs(venv, tmp_path)


def test_python_m_build_makes_an_sdist_with_sources_and_a_wheel_with_kernels(
    tmp_path: Path,
) -> None:
    dist = tmp_path / "dist"
    # --no-isolation: build with this environment's setuptools and Cython (the test extras)
    done = _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = dist.glob("fairscan-*.tar.gz")
    (wheel,) = dist.glob("fairscan-*.whl")
    with tarfile.open(sdist) as archive:
        sources = archive.getnames()
    for name in (
        "setup.py",
        "engine/kernels.pyx",
        "engine/expectation_kernels.pyx",
        "engine/search_core.pxd",
        "engine/subroc_kernels.pyx",
    ):
        assert any(n.endswith(name) for n in sources), name
    assert not any(n.endswith((".so", ".c")) for n in sources)
    with zipfile.ZipFile(wheel) as archive:
        members = archive.namelist()
    compiled = [n for n in members if n.startswith("fairscan/engine/") and n.endswith(".so")]
    assert len(compiled) == 3, compiled
    assert "fairscan/py.typed" in members and "fairscan/engine/kernels.pyi" in members
    venv = tmp_path / "venv"
    python = _fresh_venv(venv)
    done = _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], tmp_path)
    assert done.returncode == 0, done.stderr
    _audit_runs(venv, tmp_path)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"),
    reason="manylinux wheels are built for Linux x86_64 and aarch64",
)
@pytest.mark.skipif(
    importlib.util.find_spec("ziglang") is None, reason="needs the release extra (ziglang)"
)
def test_manylinux_wheel_installs_without_a_compiler_and_audits(tmp_path: Path) -> None:
    """`make wheel`'s script: a manylinux2014 wheel (auditwheel agrees), which pip installs
    into a fresh venv whose PATH has no C compiler, and whose `audit` runs."""
    dist = tmp_path / "dist"
    done = _run(
        ["bash", str(ROOT / "scripts" / "build_wheel.sh"), str(dist)],
        ROOT,
        timeout=900,
        env_extra={"PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("fairscan-*.whl")
    machine = platform.machine()
    assert f"manylinux2014_{machine}" in wheel.name and f"manylinux_2_17_{machine}" in wheel.name
    assert f'consistent with the following platform tag: "manylinux_2_17_{machine}"' in " ".join(
        done.stdout.split()
    )
    with zipfile.ZipFile(wheel) as archive:
        compiled = [n for n in archive.namelist() if n.endswith(".so")]
    assert len(compiled) == 3, compiled
    venv = tmp_path / "venv"
    python = _fresh_venv(venv)
    bare = {"PATH": str(venv / "bin")}  # no cc, gcc, clang or zig reachable
    assert not any(shutil.which(cc, path=bare["PATH"]) for cc in ("cc", "gcc", "clang", "zig"))
    done = _run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        tmp_path,
        env_extra=bare,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _audit_runs(venv, tmp_path)
