"""The shift scan estimates its memory and time from its parameters before it starts (issue
24): refused beyond the memory budget with the way out, a warning above a minute."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fairscan.errors import ScanError
from fairscan.scans.shift.cost import WARN_SECONDS, check_shift_cost, shift_cost

ROOT = Path(__file__).resolve().parents[2]
AUDIT = Path(sys.executable).with_name("audit")
COMPAS = ROOT / "build" / "compas.csv"


def test_cost_grows_with_each_parameter() -> None:
    base = shift_cost(3000, 2, 500, 500, exact=True, workers=1)
    assert shift_cost(3000, 2, 5000, 500, exact=True, workers=1).bytes > 4 * base.bytes
    assert shift_cost(30000, 2, 500, 500, exact=True, workers=1).seconds > 90 * base.seconds
    assert shift_cost(3000, 2, 500, 500, exact=True, workers=2).seconds == pytest.approx(
        base.seconds / 2
    )
    low = shift_cost(200_000, 2, 500, 500, exact=False, workers=1)
    high = shift_cost(200_000, 2, 500, 20_000, exact=False, workers=1)
    assert high.seconds > 100 * low.seconds and high.bytes > 100 * low.bytes


def test_the_shipped_compas_shift_is_neither_refused_nor_slow() -> None:
    cost = shift_cost(3363, 2, 500, 500, exact=True, workers=1)
    assert check_shift_cost(cost, 2 << 30, n=3363, exact=True, bootstrap=500, rank=500) is None


def test_beyond_the_budget_is_refused_with_the_way_out() -> None:
    cost = shift_cost(12_000, 2, 100_000, 500, exact=True, workers=1)
    with pytest.raises(ScanError, match=r"needs about 45\.\d GiB of memory") as info:
        check_shift_cost(cost, 4 << 30, n=12_000, exact=True, bootstrap=100_000, rank=500)
    assert "lower `bootstrap`" in (info.value.issues[0].hint or "")


@pytest.mark.parametrize(("n", "rank", "exact"), [(204_000, 500, True), (12_000, 20_000, False)])
def test_over_a_minute_warns(n: int, rank: int, exact: bool) -> None:
    cost = shift_cost(n, 2, 500, rank, exact=exact, workers=1)
    assert cost.seconds > WARN_SECONDS
    warning = check_shift_cost(cost, None, n=n, exact=exact, bootstrap=500, rank=rank)
    assert warning is not None and warning.startswith("estimated to take about")


@pytest.mark.skipif(not COMPAS.is_file(), reason="build/compas.csv not built (make compas)")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS")
def test_bootstrap_100000_under_a_2_gib_limit_is_a_scan_error_not_a_crash(tmp_path: Path) -> None:
    text = (ROOT / "audits" / "compas-shift.audit.yaml").read_text(encoding="utf-8")
    text = text.replace("../build/compas.csv", COMPAS.as_posix()).replace(
        "bootstrap: 500", "bootstrap: 100000"
    )
    spec = tmp_path / "shift.audit.yaml"
    spec.write_text(text, encoding="utf-8")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run(
        [str(AUDIT), "run", str(spec), "--out", str(tmp_path), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 2, done.stderr
    assert "this shift scan needs about" in done.stderr and "lower `bootstrap`" in done.stderr
    assert "internal error" not in done.stderr
