"""Telling an interrupt apart from a bug: Ctrl-C (or SIGTERM) must stop a run, never be
recorded as an internal error.

fairscan's own compiled kernels check for pending signals and raise ``KeyboardInterrupt``
themselves, but a library call (a C extension, a thread pool) may hand an interrupt back
wrapped in another exception, e.g. a ``SystemError`` ("... returned a result with an exception
set") whose cause is the ``KeyboardInterrupt``; handlers that catch ``Exception`` use
:func:`interrupt_of` to find it and re-raise it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
# how often a waiting thread wakes to handle signals and run its check
POLL_SECONDS = 0.05


def interrupt_of(exc: BaseException) -> BaseException | None:
    """The ``KeyboardInterrupt`` that ``exc`` is or wraps (its cause/context chain), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _exit_at_start_up(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM while the CLI's libraries load: nothing to clean up yet, so leave at
    once with 130/143 (a ``KeyboardInterrupt`` raised inside an import prints a traceback, or
    is swallowed by a library's import-time ``except`` and the run goes on)."""
    import os

    os.write(2, b"interrupted\n")
    os._exit(128 + signum)


def exit_on_signal_during_start_up() -> None:
    """In the ``audit`` console script (not when the CLI is imported as a library, e.g. by
    tests), SIGINT and SIGTERM end the process at once until ``main()`` installs the run's own
    handlers."""
    import os
    import signal
    import sys
    import threading

    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not (script.startswith("audit") or script == "-m"):
        return
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, _exit_at_start_up)


def in_thread(
    work: Callable[[], T], *, check: Callable[[], None] | None = None, name: str = "fairscan-io"
) -> T:
    """``work()`` run in a daemon thread while this thread waits in short steps: a signal's
    handler (Ctrl-C, SIGTERM) runs within one step, and ``check()``, called at each step, may
    raise to give the wait up (a stall, a deadline); the work is then left to end in the
    background. Blocking calls that hold no Python frame (a C library's read, a socket wait
    inside a client library) stay interruptible and bounded this way."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)

    thread = threading.Thread(target=target, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread under a tight memory limit: run here, uninterruptibly
        return work()
    while thread.is_alive():
        thread.join(POLL_SECONDS)
        if check is not None and thread.is_alive():
            check()
    if failure:
        raise failure[0]
    return outcome[0]


def env_seconds(name: str, default: float) -> float:
    """A time limit in seconds from the environment variable ``name`` (a positive number),
    else ``default``."""
    text = os.environ.get(name, "")
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value > 0 and value == value else default
