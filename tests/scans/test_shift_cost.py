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
from fairscan.scans.shift.cost import MAX_SECONDS, WARN_SECONDS, check_shift_cost, shift_cost

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


@pytest.mark.parametrize(("n", "rank", "exact"), [(20_000, 500, True), (12_000, 20_000, False)])
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


# --- issue 34: the shapes that ran unbounded (still running at 300 s) ---------------------------


def test_the_tilts_centers_count_in_the_cost() -> None:
    """A named tilt's sample of 300,000 rows (exact_max_rows raised): its projection applies
    the 300,000 x 300,000 kernel some 80 times, which the estimate left out."""
    plain = shift_cost(9000, 1, 500, 500, exact=True, workers=1)
    tilted = shift_cost(9000, 1, 500, 500, exact=True, workers=1, centers=[300_000])
    assert plain.seconds < MAX_SECONDS < tilted.seconds
    with pytest.raises(ScanError, match=r"estimated to take about .* 300,000 tilt center") as info:
        check_shift_cost(tilted, None, n=9000, exact=True, bootstrap=500, rank=500, centers=300_000)
    assert "tilts[].sample" in (info.value.issues[0].hint or "")


def test_an_exact_kernel_on_many_rows_is_refused_before_it_starts() -> None:
    """exact_max_rows raised over 400,000 rows: hours of n^2 work that only warned."""
    cost = shift_cost(400_000, 1, 500, 500, exact=True, workers=1)
    with pytest.raises(ScanError) as info:
        check_shift_cost(cost, 1 << 50, n=400_000, exact=True, bootstrap=500, rank=500)
    issue = info.value.issues[0]
    assert issue.field == "bootstrap" and "estimated to take about" in issue.message
    for way in ("data: {sample:", "`features`", "lower `bootstrap`", "`exact_max_rows`"):
        assert way in (issue.hint or "")


def test_features_count_in_the_memory() -> None:
    narrow = shift_cost(200_000, 1, 500, 500, exact=False, workers=1)
    wide = shift_cost(200_000, 2000, 500, 500, exact=False, workers=1)
    assert wide.bytes - narrow.bytes >= 8 * 200_000 * 1999  # at least one copy of the features


SHAPES = {
    "exact-kernel-400k-rows": ({"exact_max_rows": 1_000_000}, 400_000, 0),
    "tilt-sample-300k-rows": ({"exact_max_rows": 1_000_000}, 4000, 300_000),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_unbounded_shapes_exit_2_before_the_work(tmp_path: Path, shape: str) -> None:
    """The CLI refuses both shapes at once (exit 2, the fields to change) instead of starting
    work that ran past 300 s."""
    import numpy as np
    import polars as pl
    import yaml
    from typer.testing import CliRunner

    from fairscan.cli import app

    extra, rows, sample_rows = SHAPES[shape]
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(
        {
            "g": rng.choice(["a", "b"], rows),
            "y": (rng.random(rows) < 0.1).astype(np.int64),
            "rec": rng.integers(0, 2, rows),
            "x": rng.normal(size=rows),
        }
    )
    frame.write_parquet(tmp_path / "d.parquet")
    scan = {"id": "s", "type": "shift", "metric": "fpr", "features": ["x"], **extra}
    if sample_rows:
        pl.DataFrame({"x": rng.normal(size=sample_rows)}).write_parquet(tmp_path / "t.parquet")
        scan["tilts"] = [{"name": "t", "sample": "t.parquet"}]
    spec = {
        "version": 1,
        "name": "shift-cost",
        "data": {"path": "d.parquet"},
        "columns": {"outcome": "y", "recommendation": "rec"},
        "attributes": ["g"],
        "scans": [scan],
        "significance": {"seed": 0, "workers": 1},
        "output": {"dir": "out", "formats": ["json"]},
    }
    path = tmp_path / "s.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--no-progress"])
    output = " ".join((result.stderr + result.stdout).split())
    assert result.exit_code == 2, output
    assert "this shift scan" in output and ("estimated to take" in output or "memory" in output)
    assert "data: {sample:" in output and "`features`" in output and "`bootstrap`" in output
