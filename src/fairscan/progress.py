"""Progress reporting: the library calls an observer; the CLI draws it, and so does
``fairscan.audit(progress=True)`` (:func:`progress_observer`).

A run goes through phases (reading the data, preparing it, each scan's search, its null
replicates); each is one task of the observer, begun with :func:`phase` (or ``start``) and ended
with ``done``. The time left in a task is :class:`EtaEstimate`'s, smoothed so that replicates
finishing in bursts (a chunk per worker) do not make it jump."""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Progress(Protocol):
    def start(self, task: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def done(self) -> None: ...

    # optional (called when present, so observers without it still work):
    # ``estimate(text)``, what the coming replicates will cost, in words, before they run


@contextmanager
def phase(progress: Progress, name: str, total: int | None = None) -> Iterator[Progress]:
    """One phase of a run shown as a task of ``progress`` (``total`` steps, or None when
    unknown), ended however the block ends; any observer with ``start``/``advance``/``done``
    takes it. Yields ``progress`` to advance."""
    progress.start(name, total)
    try:
        yield progress
    finally:
        progress.done()


class NullProgress:
    """Default observer: does nothing (the replicates' cost estimate goes to the log)."""

    def start(self, task: str, total: int | None) -> None:
        pass

    def estimate(self, text: str) -> None:
        import logging

        logging.getLogger("fairscan").info(text)

    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


class ScanProgress:
    """Wraps an observer for one scan of several: each task reads "scan 2 of 3: <task>".

    The runners keep calling ``start(task, total)``; only the task's words change, so any
    observer (a third party's too) shows which scan of the audit is running."""

    def __init__(self, inner: Progress, number: int, count: int) -> None:
        self._inner = inner
        self.prefix = f"scan {number} of {count}: " if count > 1 else ""

    def start(self, task: str, total: int | None) -> None:
        self._inner.start(self.prefix + task, total)

    def advance(self, n: int = 1) -> None:
        self._inner.advance(n)

    def estimate(self, text: str) -> None:
        note = getattr(self._inner, "estimate", None)
        if note is not None:
            note(self.prefix + text)

    def done(self) -> None:
        self._inner.done()


# the time over which EtaEstimate averages the rate: some twenty replicates even when each
# takes a quarter of a minute, so that one burst of finished chunks moves it by about 5 %
ETA_WINDOW_SECONDS = 300.0


class EtaEstimate:
    """Seconds left in a task of ``total`` steps, from its steps' rate.

    The rate is steps over seconds, each step counted with the seconds since the step before
    it, both discounted by exp(-age / ``window``): the plain average at first, about the last
    ``window`` seconds' later, and exact for steps at a steady pace. The first advance only
    starts the count (its rate serves until a second one): replicate 0 runs alone, before the
    worker processes start. A burst of steps (two workers' chunks finishing together) moves
    the rate by the burst's share of the window's steps, never by a factor of 1000 as a rate
    measured between two close steps does. Between steps the estimate counts down; it holds,
    when the next step is late, at what it will be after that step."""

    def __init__(self, total: int | None, now: float, window: float = ETA_WINDOW_SECONDS) -> None:
        self.total = total
        self.done = 0
        self.begun = now
        self._window = window
        self._steps = 0.0  # discounted steps, as of self._at
        self._seconds = 0.0  # discounted seconds they took, as of self._at
        self._at = now
        self._last = 0  # steps in the last advance
        self._rate: float | None = None

    def advance(self, n: int, now: float) -> None:
        gap = max(now - self._at, 0.0)
        if self.done == 0:  # the first step's time: alone, and with the start-up in it
            self._rate = n / gap if gap > 0 else None
        else:
            decay = math.exp(-gap / self._window)
            self._steps = self._steps * decay + n
            self._seconds = self._seconds * decay + gap
            if self._seconds > 0:
                self._rate = self._steps / self._seconds
        self._at = max(now, self._at)
        self.done += n
        self._last = n

    def seconds_left(self, now: float) -> float | None:
        """The estimate at ``now``; None before the first step or without a total."""
        if self.total is None or not self._rate:
            return None
        left = max(self.total - self.done, 0)
        after_next = max(left - self._last, 0) / self._rate
        return max(left / self._rate - (now - self._at), after_next)


def duration_text(seconds: float) -> str:
    """``45s``, ``3m05s``, ``2h07m``: short enough for a progress line."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Ticker:
    """Calls ``tick`` every ``seconds`` in a daemon thread until :meth:`stop`: a phase that
    makes no steps (a file read in one call, a search) still shows its elapsed time."""

    def __init__(self, seconds: float, tick: Callable[[], None]) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(seconds, tick), daemon=True)
        self._thread.start()

    def _run(self, seconds: float, tick: Callable[[], None]) -> None:
        while not self._stopped.wait(seconds):
            tick()

    def stop(self) -> None:
        self._stopped.set()


# the longest wait between two log lines of one task
LONGEST_LOG_SPACING = 300.0


class PlainProgress:
    """Progress for logs (no terminal): a plain line at most every ``interval`` seconds, e.g.
    ``progress: scan 2 of 3: fpr: null replicates 400/999 (40%), 12s elapsed, ETA 18s``;
    in a long task less often (a sixth of its time so far, at most every 5 minutes), so a
    35-minute task writes some 30 lines, not 200.

    Nothing is written for a run shorter than ``interval``. A task that begins after a quiet
    ``interval`` is announced at once; with ``background`` a thread also writes lines during a
    task that makes no steps (reading a file, a search). ``write`` receives each line."""

    def __init__(
        self,
        write: Callable[[str], None],
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        background: bool = False,
    ) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._background = background and interval > 0
        self._lock = threading.Lock()
        self._last = clock()
        self._task = ""
        self._eta = EtaEstimate(None, self._last)
        self._ticker: Ticker | None = None

    def start(self, task: str, total: int | None) -> None:
        self.done()
        with self._lock:
            self._task = task
            now = self._clock()
            self._eta = EtaEstimate(total, now)
            self._write_if_due(now)
        if self._background:
            self._ticker = Ticker(self._interval, self.poll)

    def advance(self, n: int = 1) -> None:
        with self._lock:
            now = self._clock()
            self._eta.advance(n, now)
            self._write_if_due(now)

    def poll(self) -> None:
        """A line now if one is due (the background thread calls this)."""
        with self._lock:
            self._write_if_due(self._clock())

    def _write_if_due(self, now: float) -> None:
        spacing = max(self._interval, min((now - self._eta.begun) / 6, LONGEST_LOG_SPACING))
        if self._task and now - self._last >= spacing:
            self._last = now
            self._write(self.line(now))

    def estimate(self, text: str) -> None:
        self._write(f"estimate: {text}")

    def line(self, now: float) -> str:
        eta = self._eta
        text = f"progress: {self._task}"
        if eta.total:
            text += f" {eta.done}/{eta.total} ({100 * eta.done // eta.total}%)"
        elif eta.done:
            text += f" {eta.done:,}"
        text += f", {duration_text(now - eta.begun)} elapsed"
        left = eta.seconds_left(now)
        if left is not None and eta.total is not None and eta.done < eta.total:
            text += f", ETA {duration_text(left)}"
        return text

    def done(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        with self._lock:
            self._task = ""


# how often the notebook bar redraws during a phase that makes no steps
TQDM_REFRESH_SECONDS = 1.0


class TqdmProgress:
    """A tqdm bar per task (``tqdm.auto``: a widget in Jupyter, text on stderr in a
    terminal), for ``fairscan.audit(progress=True)``: the phase's words, its steps, the time
    elapsed (redrawn every second, steps or not) and :class:`EtaEstimate`'s time left."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, background: bool = True
    ) -> None:
        from tqdm.auto import tqdm  # imported when a notebook asks for progress

        self._tqdm = tqdm
        self._clock = clock
        self._background = background
        self._bar: Any = None
        self._eta = EtaEstimate(None, clock())
        self._ticker: Ticker | None = None

    def start(self, task: str, total: int | None) -> None:
        self.done()
        counted = "{n_fmt}/{total_fmt}" if total is not None else "{n_fmt}"
        self._bar = self._tqdm(
            total=total,
            desc=task,
            leave=False,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| " + counted + " [{elapsed}{postfix}]"
            if total is not None
            else "{desc}: " + counted + " [{elapsed}{postfix}]",
        )
        self._eta = EtaEstimate(total, self._clock())
        if self._background:
            self._ticker = Ticker(TQDM_REFRESH_SECONDS, self.refresh)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._eta.advance(n, self._clock())
            self._bar.set_postfix_str(self.eta_text(), refresh=False)
            self._bar.update(n)

    def eta_text(self) -> str:
        """``ETA 3m05s`` once there is an estimate; empty before."""
        left = self._eta.seconds_left(self._clock())
        return "" if left is None else f"ETA {duration_text(left)}"

    def refresh(self) -> None:
        bar = self._bar
        if bar is not None:
            bar.set_postfix_str(self.eta_text(), refresh=False)
            bar.refresh()

    def estimate(self, text: str) -> None:
        self._tqdm.write(text, file=sys.stderr)

    def done(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
        self._bar = None


# without tqdm: a plain line on stderr this often
STDERR_PROGRESS_SECONDS = 2.0


def progress_observer(progress: bool | Progress) -> Progress:
    """The observer of ``progress=``: False draws nothing; True a tqdm bar (a widget in
    Jupyter, stderr in a terminal), or without tqdm a plain line on stderr every 2 s; an
    object with ``start``/``advance``/``done`` is used as it is."""
    if progress is False or progress is None:
        return NullProgress()
    if progress is True:
        try:
            return TqdmProgress()
        except ImportError:
            return PlainProgress(
                lambda line: print(line, file=sys.stderr, flush=True),
                interval=STDERR_PROGRESS_SECONDS,
                background=True,
            )
    return progress


def is_observer(value: object) -> bool:
    """``value`` has the observer's methods (``start``, ``advance``, ``done``)."""
    return all(callable(getattr(value, name, None)) for name in ("start", "advance", "done"))
