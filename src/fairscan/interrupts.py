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
