"""Progress reporting: the library calls an observer; the CLI draws it, and so does
``fairscan.audit(progress=True)`` (:func:`progress_observer`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol


class Progress(Protocol):
    def start(self, task: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def done(self) -> None: ...

    # optional (called when present, so observers without it still work):
    # ``estimate(text)``, what the coming replicates will cost, in words, before they run


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


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class PlainProgress:
    """Progress for logs (no terminal): a plain line at most every ``interval`` seconds, e.g.
    ``progress: scan 2 of 3: fpr: null replicates 400/999 (40%), 12s elapsed, ETA 18s``.

    Nothing is written for a run shorter than ``interval``; ``write`` receives each line."""

    def __init__(
        self,
        write: Callable[[str], None],
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._last = clock()
        self._task = ""
        self._total: int | None = None
        self._done = 0
        self._started = self._last

    def start(self, task: str, total: int | None) -> None:
        self._task = task
        self._total = total
        self._done = 0
        self._started = self._clock()

    def advance(self, n: int = 1) -> None:
        self._done += n
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._write(self.line(now))

    def estimate(self, text: str) -> None:
        self._write(f"estimate: {text}")

    def line(self, now: float) -> str:
        elapsed = now - self._started
        text = f"progress: {self._task} {self._done}"
        if self._total:
            text += f"/{self._total} ({100 * self._done // self._total}%)"
        text += f", {_duration(elapsed)} elapsed"
        if self._total and 0 < self._done < self._total:
            text += f", ETA {_duration(elapsed * (self._total - self._done) / self._done)}"
        return text

    def done(self) -> None:
        self._task = ""
        self._total = None


class TqdmProgress:
    """A tqdm bar per task (``tqdm.auto``: a widget in Jupyter, text on stderr in a
    terminal), for ``fairscan.audit(progress=True)``."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm  # imported when a notebook asks for progress

        self._tqdm = tqdm
        self._bar: Any = None

    def start(self, task: str, total: int | None) -> None:
        self.done()
        self._bar = self._tqdm(total=total, desc=task, leave=False)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def estimate(self, text: str) -> None:
        self._tqdm.write(text, file=sys.stderr)

    def done(self) -> None:
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
            )
    return progress


def is_observer(value: object) -> bool:
    """``value`` has the observer's methods (``start``, ``advance``, ``done``)."""
    return all(callable(getattr(value, name, None)) for name in ("start", "advance", "done"))
