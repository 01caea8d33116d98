"""Fixtures for the end-to-end CLI tests: a project folder for data and specs, a CLI runner.

Everything runs in-process through ``typer.testing.CliRunner`` (typer 0.29 keeps stdout and
stderr apart: ``result.stdout``, ``result.stderr``; ``result.output`` is both interleaved).
Each audit is run with few replicates and ``--workers 1`` so that the whole folder stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

# Tests run with --import-mode=importlib, which does not put test folders on sys.path; the
# helpers in cli_support.py are shared by the test modules of this folder.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from cli_support import TRACEBACK, Invoke, Outcome, Project  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from fairscan.cli import app  # noqa: E402


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    return Project(root)


@pytest.fixture
def cli() -> Invoke:
    """``cli(*args, code=N)`` runs ``audit *args``, checks the exit code (when given) and that no
    Python traceback was printed or raised, and returns the outcome."""
    runner = CliRunner()

    def invoke(*args: str | Path, code: int | None = None) -> Outcome:
        argv: Sequence[str] = [str(a) for a in args]
        result = runner.invoke(app, argv)
        outcome = Outcome(result)
        shown = (
            f"audit {' '.join(argv)}\n--- exit {result.exit_code}\n--- output:\n{outcome.output}"
        )
        # Anything but a SystemExit escaping the command is a crash.
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{shown}\n--- exception: {result.exception!r}"
        )
        assert TRACEBACK not in outcome.output, shown
        if code is not None:
            assert result.exit_code == code, shown
        return outcome

    return invoke
