"""scikit-learn is the `models` extra (issue 38): without it the scans that fit models stop with
the extra to install (exit 2, no traceback), and the spec's other scans still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

# the CLI with scikit-learn made unimportable, as in a base install
WITHOUT_SKLEARN = "import sys; sys.modules['sklearn'] = None; from fairscan.cli import main; main()"

SPEC = """\
version: 1
name: no-models
data: {path: t.csv}
columns: {outcome: y, prediction: p, recommendation: r}
attributes: [g, h]
scans:
  - {id: fpr, type: fpr_scan, restarts: 2}
  - {id: cbs, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 2}
  - {id: ijdi, type: ijdi_scan, side: negatives, lambda: 1, threshold: 0.5, restarts: 2}
  - {id: ijdi-given-rate, type: ijdi_scan, side: negatives, lambda: 1, base_rate: p,
     threshold: 0.5, restarts: 2}
significance: {replicates: 0, seed: 0, workers: 1}
output: {formats: [json]}
"""


def _write_table(folder: Path) -> None:
    rng = np.random.default_rng(1)
    n = 300
    g = rng.choice(["a", "b"], n)
    h = rng.choice(["x", "y", "z"], n)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(int)
    lines = ["g,h,y,p,r"] + [
        f"{g[i]},{h[i]},{y[i]},{p[i]:.4f},{int(p[i] >= 0.5)}" for i in range(n)
    ]
    (folder / "t.csv").write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_scans_that_fit_models_name_the_extra_and_the_others_still_run(tmp_path: Path) -> None:
    _write_table(tmp_path)
    (tmp_path / "x.audit.yaml").write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SKLEARN, "run", "x.audit.yaml", "--out", "out"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "fairscan[models]" in done.stderr
    report = json.loads((tmp_path / "out" / "no-models.json").read_text())
    status = {scan["id"]: scan["status"] for scan in report["scans"]}
    assert status["cbs"] == "error"
    assert status["ijdi"] == "error"
    assert status["fpr"] != "error"
    assert status["ijdi-given-rate"] != "error"  # a given base rate fits no model
    errors = {scan["id"]: scan.get("error") or "" for scan in report["scans"]}
    assert "scikit-learn" in errors["cbs"] and "fairscan[models]" in json.dumps(report)
