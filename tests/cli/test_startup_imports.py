"""Start-up cost (issue 11): commands import only what they use. ``audit --version``,
``validate --no-data``, ``explain`` and ``schema`` load no engine module (and neither polars nor
scipy nor scikit-learn); a run of an MDSS scan loads the compiled kernels but not scipy or
scikit-learn, which only the scans that fit models or compute distributions need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"

PROBE = """
import json, sys
sys.argv = ["audit", *json.loads(sys.argv[1])]
import fairscan.cli
fairscan.cli._exit_now = lambda code: None  # main() ends with os._exit; list the modules first
try:
    fairscan.cli.main()
except SystemExit:
    pass
sys.stdout.flush()
print("\\nMODULES=" + json.dumps(sorted(sys.modules)))
"""

SPEC = """\
version: 1
name: startup-probe
data: {{path: {data}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 10}}
significance: {{replicates: 0, seed: 0}}
output: {{dir: reports, formats: [json]}}
"""

HEAVY = ("polars", "scipy", "sklearn", "numba", "llvmlite")
# the engine's one plain-`re` module: the spec validates significance.executor with it
PLAIN_ENGINE = {"fairscan.engine", "fairscan.engine.executor_address"}


def _modules(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = done.stdout.rsplit("MODULES=", 1)
    assert len(marker) == 2, done.stdout + done.stderr
    return set(json.loads(marker[1]))


def _top(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "probe.audit.yaml"
    path.write_text(SPEC.format(data=CREDIT.as_posix()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "args",
    [["--version"], ["validate", "{spec}", "--no-data"], ["explain", "fpr_scan"], ["schema"]],
)
def test_light_commands_import_no_engine(args: list[str], spec: Path, tmp_path: Path) -> None:
    modules = _modules([a.format(spec=spec) for a in args], tmp_path)
    engine = {m for m in modules if m.startswith("fairscan.engine")} - PLAIN_ENGINE
    assert not engine, sorted(engine)
    assert not _top(modules) & set(HEAVY), sorted(_top(modules) & set(HEAVY))


def test_importing_the_cli_loads_no_numpy() -> None:
    """``main()`` sets OPENBLAS_NUM_THREADS before numpy loads: the CLI module must not load it."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, fairscan.cli; print('numpy' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "False", done.stdout + done.stderr


@pytest.mark.slow
def test_an_mdss_run_loads_the_kernels_but_not_scipy(spec: Path, tmp_path: Path) -> None:
    modules = _modules(["run", str(spec), "-q"], tmp_path)
    assert "fairscan.engine.kernels" in modules
    assert not _top(modules) & {"scipy", "sklearn", "numba", "llvmlite"}, sorted(
        _top(modules) & {"scipy", "sklearn", "numba", "llvmlite"}
    )
