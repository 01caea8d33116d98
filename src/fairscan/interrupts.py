"""Telling an interrupt apart from a bug: Ctrl-C (or SIGTERM) must stop a run, never be
recorded as an internal error.

fairscan's own compiled kernels check for pending signals and raise ``KeyboardInterrupt``
themselves, but a library call (a C extension, a thread pool) may hand an interrupt back
wrapped in another exception, e.g. a ``SystemError`` ("... returned a result with an exception
set") whose cause is the ``KeyboardInterrupt``; handlers that catch ``Exception`` use
:func:`interrupt_of` to find it and re-raise it.
"""

from __future__ import annotations


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
