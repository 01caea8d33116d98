"""Progress in every phase with a smoothed time left (issue 36): :class:`EtaEstimate` against
computed step sequences (an injected clock, never the wall clock), :func:`phase`, the log
lines between steps, the terminal bar's and the notebook bar's time left."""

from __future__ import annotations

import io
import itertools
import re

import pytest

from fairscan.progress import EtaEstimate, PlainProgress, TqdmProgress, phase


def _steady(total: int, every: float) -> list[tuple[float, int]]:
    """One step every ``every`` seconds."""
    return [((k + 1) * every, 1) for k in range(total)]


def _bursts(total: int) -> list[tuple[float, int]]:
    """The issue's replicate bar: replicate 0 alone (20 s), then two workers finishing a
    replicate each 10 ms apart every 30 s (one replicate per 15 s)."""
    steps = [(20.0, 1)]
    t = 20.0
    while len(steps) < total:
        t += 30.0
        steps += [(t, 1), (t + 0.01, 1)]
    return steps[:total]


def _refreshes(
    estimate: EtaEstimate, steps: list[tuple[float, int]], every: float = 1.0
) -> list[tuple[float, float | None]]:
    """The estimate at each refresh (every second) while the steps arrive."""
    shown: list[tuple[float, float | None]] = []
    now, pending = 0.0, list(steps)
    while pending:
        now += every
        while pending and pending[0][0] <= now:
            at, n = pending.pop(0)
            estimate.advance(n, at)
        shown.append((now, estimate.seconds_left(now)))
    return shown


def test_eta_of_a_steady_rate_is_the_time_left() -> None:
    """Steps every 2 s: the time left is 2 s a step, less the time since the last step."""
    total, every = 600, 2.0
    shown = _refreshes(EtaEstimate(total, 0.0), _steady(total, every))
    for now, left in shown[2:-2]:
        truth = total * every - now
        assert left == pytest.approx(truth, rel=1e-9), (now, left, truth)


def _assert_smooth(values: list[tuple[float, float]], fifth: float) -> None:
    """Between two refreshes the estimate moves by at most the two replicates just done
    (30 s) and a quarter of itself; by less than 2.5 times before the fifth replicate (the
    second replicate alone, then its pair 10 ms later, halve it)."""
    for (_, before), (now, after) in itertools.pairwise(values):
        if now <= fifth + 1.0:
            assert 0.4 < after / before < 2.5, (now, before, after)
        else:
            assert abs(after - before) <= 30.0 + 1.0 + before / 4, (now, before, after)


def test_eta_of_bursts_never_jumps() -> None:
    """Chunks finishing in pairs 30 s apart: the estimate moves smoothly (rich's 30-second
    speed jumped between 1 s and 4 h here), and it is the time really left (15 s a
    replicate) within 7 % after ten minutes (a pair half in moves it by 1 / 20: the window
    holds 20 replicates)."""
    total = 200
    steps = _bursts(total)
    shown = _refreshes(EtaEstimate(total, 0.0), steps)
    values = [(now, left) for now, left in shown if left is not None]
    assert values[0][0] == pytest.approx(20.0, abs=1.0)  # from replicate 0 on
    _assert_smooth(values, fifth=steps[4][0])
    for now, left in values:
        if 600.0 < now < 2800.0:
            truth = steps[-1][0] - now
            assert left == pytest.approx(truth, rel=0.07), (now, left, truth)


def test_eta_leaves_out_replicate_0_alone_before_the_workers() -> None:
    """Replicate 0 alone with the worker pool's start (10 s), then 2 replicates a second: the
    time left is the workers' pace (the average with replicate 0 in it would say twice that)."""
    estimate = EtaEstimate(100, 0.0)
    estimate.advance(1, 10.0)
    assert estimate.seconds_left(10.0) == pytest.approx(990.0)  # all it knows so far
    for k in range(1, 21):
        estimate.advance(1, 10.0 + 0.5 * k)
    assert estimate.seconds_left(20.0) == pytest.approx(79 * 0.5)


def test_eta_counts_down_then_holds_while_a_step_is_late() -> None:
    estimate = EtaEstimate(10, 0.0, window=1e9)  # the plain average: 1 step per 10 s
    estimate.advance(1, 10.0)
    assert estimate.seconds_left(10.0) == pytest.approx(90.0)
    assert estimate.seconds_left(15.0) == pytest.approx(85.0)
    assert estimate.seconds_left(40.0) == pytest.approx(80.0)  # held: 8 steps after the next
    assert EtaEstimate(None, 0.0).seconds_left(5.0) is None
    assert EtaEstimate(10, 0.0).seconds_left(5.0) is None  # no step yet


def test_phase_ends_its_task_however_the_block_ends() -> None:
    calls: list[tuple[str, object]] = []

    class Recorder:  # an observer with the three original methods only
        def start(self, task: str, total: int | None) -> None:
            calls.append(("start", (task, total)))

        def advance(self, n: int = 1) -> None:
            calls.append(("advance", n))

        def done(self) -> None:
            calls.append(("done", None))

    with phase(Recorder(), "reading data.csv (2.0 MB)") as progress:
        progress.advance(3)
    with pytest.raises(ValueError), phase(Recorder(), "preparing 10 rows"):
        raise ValueError
    assert calls == [
        ("start", ("reading data.csv (2.0 MB)", None)),
        ("advance", 3),
        ("done", None),
        ("start", ("preparing 10 rows", None)),
        ("done", None),
    ]


def test_log_lines_announce_a_phase_after_quiet_and_go_on_without_steps() -> None:
    now = [0.0]
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=10.0, clock=lambda: now[0])
    progress.start("reading big.parquet (1.2 GB)", None)  # 0 s after the last line: quiet
    now[0] = 9.0
    progress.poll()
    assert lines == []
    now[0] = 25.0  # the read makes no steps: the background thread's poll writes the line
    progress.poll()
    now[0] = 29.0
    progress.poll()  # not again within 10 s
    assert lines == ["progress: reading big.parquet (1.2 GB), 25s elapsed"]
    now[0] = 40.0
    progress.start("scan 1 of 2: fpr: search (20 restarts)", None)  # 15 s quiet: at once
    assert lines[-1] == "progress: scan 1 of 2: fpr: search (20 restarts), 0s elapsed"
    now[0] = 45.0
    progress.start("scan 1 of 2: fpr: null replicates", 999)  # 5 s after: not yet
    assert len(lines) == 2
    progress.done()
    now[0] = 100.0
    progress.poll()  # no task: nothing
    assert len(lines) == 2


def test_log_lines_of_a_long_task_are_a_few() -> None:
    """999 replicates at 2.1 s each (35 minutes): a line every 10 s (4.8 replicates) for the
    first minute, then less often, some 30 lines in all instead of 210."""
    now = [0.0]
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=10.0, clock=lambda: now[0])
    progress.start("fpr: null replicates", 999)
    written: list[float] = []
    for _ in range(999):
        now[0] += 2.1
        progress.advance()
        if len(lines) > len(written):
            written.append(now[0])
    gaps = [b - a for a, b in itertools.pairwise([0.0, *written])]
    assert all(10.0 <= gap < 12.6 for gap, at in zip(gaps, written, strict=True) if at < 60)
    assert all(gap <= at / 5 + 2.1 for gap, at in zip(gaps, written, strict=True) if at >= 60)
    assert 20 <= len(lines) <= 40, written
    assert written[-1] > 1800.0  # still a line in the last minutes


def test_background_log_lines_stop_with_the_phase() -> None:
    lines: list[str] = []
    progress = PlainProgress(lines.append, interval=3600.0, background=True)
    progress.start("reading data.csv", None)
    ticker = progress._ticker
    assert ticker is not None and ticker._thread.is_alive()
    progress.done()
    ticker._thread.join(timeout=60)
    assert not ticker._thread.is_alive()
    assert progress._ticker is None


def _eta_seconds(text: str) -> float | None:
    found = re.search(r"ETA (\d+):(\d\d):(\d\d)", text)
    if found is None:
        return None
    hours, minutes, seconds = (int(g) for g in found.groups())
    return 3600.0 * hours + 60.0 * minutes + seconds


def test_terminal_bar_time_left_never_jumps_on_bursts() -> None:
    from rich.console import Console

    from fairscan.cli import RichProgress

    now = [0.0]
    bar = RichProgress(
        Console(file=io.StringIO(), force_terminal=True, width=120), clock=lambda: now[0]
    )
    bar.start("fpr: null replicates", 200)
    progress = bar._progress
    task = progress.tasks[0]
    shown: list[tuple[float, float]] = []
    pending = _bursts(200)[:120]
    while pending:
        now[0] += 1.0
        while pending and pending[0][0] <= now[0]:
            bar.advance(pending.pop(0)[1])
        line = " ".join(str(column(task)) for column in progress.columns[2:])
        left = _eta_seconds(line)
        if left is not None:
            shown.append((now[0], left))
    bar.done()
    assert len(shown) > 1500
    _assert_smooth(shown, fifth=_bursts(5)[4][0])


def test_notebook_bar_shows_phases_and_a_time_left(capsys: pytest.CaptureFixture[str]) -> None:
    """``fairscan.audit(progress=True)``'s tqdm bar (text on stderr outside Jupyter)."""
    now = [0.0]
    bar = TqdmProgress(clock=lambda: now[0], background=False)
    bar.start("reading the table", None)
    now[0] = 3.0
    bar.refresh()
    bar.start("fpr: null replicates", 100)
    assert bar.eta_text() == ""
    for _ in range(10):
        now[0] += 2.0
        bar.advance()
    assert bar.eta_text() == "ETA 3m00s"  # 90 replicates at 2 s each
    now[0] += 1.0
    bar.refresh()
    assert bar.eta_text() == "ETA 2m59s"
    shown = bar._bar.__str__()
    bar.done()
    assert "fpr: null replicates" in shown and "10/100" in shown and "ETA 2m59s" in shown
    err = capsys.readouterr().err
    assert "reading the table" in err and "ETA" in err
