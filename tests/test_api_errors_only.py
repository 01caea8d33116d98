"""The Python API raises only fairscan errors, with the original as the cause (issue 24); the
CLI exits 2, never 1, when stdout or stderr cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fairscan
from fairscan.errors import FairscanError, UsageError, fairscan_errors_only

AUDIT = Path(sys.executable).with_name("audit")
SPEC = Path(__file__).resolve().parents[1] / "audits" / "sample.audit.yaml"


@pytest.mark.parametrize(
    "call",
    [
        lambda: fairscan.load_spec(5),
        lambda: fairscan.load_report(None),
        lambda: fairscan.diff_reports(1, 2),
        lambda: fairscan.run_prepared(None),
        lambda: fairscan.run_audit(3.5),
        lambda: fairscan.prepare_audit([]),
        lambda: fairscan.load_spec_from_text(b"\xff"),
    ],
)
def test_wrong_arguments_raise_fairscan_errors_with_the_cause(call: object) -> None:
    with pytest.raises(FairscanError) as info:
        call()  # type: ignore[operator]
    assert info.value.__cause__ is not None or isinstance(info.value, FairscanError)


def test_interrupts_and_fairscan_errors_pass_through() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    def own() -> None:
        raise UsageError("mine")

    with pytest.raises(KeyboardInterrupt):
        fairscan_errors_only(interrupted)()
    with pytest.raises(UsageError, match="mine"):
        fairscan_errors_only(own)()
    with pytest.raises(FairscanError, match="out of memory") as info:
        fairscan_errors_only(lambda: [0] * (1 << 62))()
    assert isinstance(info.value.__cause__, MemoryError | OverflowError)


def _run(args: list[str], **streams: object) -> int:
    return subprocess.run(
        [str(AUDIT), *args], env={**os.environ, "NO_COLOR": "1"}, timeout=120, **streams
    ).returncode  # type: ignore[call-overload, no-any-return]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_stdout_or_stderr_is_exit_2() -> None:
    with open("/dev/full", "w") as full:
        assert _run(["schema"], stdout=full) == 2
        assert _run(["validate", str(SPEC), "--no-data"], stderr=full) == 2


def test_a_closed_pipe_is_exit_2() -> None:
    process = subprocess.Popen(
        [str(AUDIT), "schema"], stdout=subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"}
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before the schema is written
    assert process.wait(timeout=120) == 2


@pytest.mark.slow
def test_a_closed_stderr_is_not_a_crash() -> None:
    code = _run(["validate", str(SPEC), "--no-data"], stderr=subprocess.DEVNULL, close_fds=True)
    assert code == 0
    done = subprocess.run(f"exec 2>&-; {AUDIT} validate {SPEC} --no-data", shell=True, timeout=120)
    assert done.returncode in (0, 2)
