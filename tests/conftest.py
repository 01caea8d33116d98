"""Shared fixtures: hypothesis profiles, the ../shared data location, the oracle import path."""

from __future__ import annotations

import os
import sys
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
