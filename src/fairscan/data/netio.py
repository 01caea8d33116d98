"""Reads that can block: bounded by timeouts and kept interruptible.

polars reads URLs (and files) in its own threads, inside one call that holds no Python frame
that a signal handler could interrupt: a server that accepts the connection but never answers
(or trickles bytes) would keep the run going for ever, deaf to Ctrl-C and SIGTERM, and
polars' object-store timeouts do not cover an HTTP server that stalls.

So a read runs in a daemon thread while the main thread waits on it in short steps
(:func:`watched`): a signal is handled within one step, and the run exits (the CLI leaves with
``os._exit``, so the blocked thread does not hold it back). For remote data the wait is also
bounded by an idle timeout: when the process has read fewer than :data:`MIN_PROGRESS_BYTES`
in :func:`read_timeout` seconds (``rchar`` in ``/proc/self/io``, which counts socket reads),
the read is given up with a :class:`DataError`. Before polars reads an ``http(s)://`` URL,
:func:`probe_url` asks the server for one byte with a connect and a read timeout, so that a
server that does not answer is named at once.

The timeouts come from ``FAIRSCAN_CONNECT_TIMEOUT`` and ``FAIRSCAN_READ_TIMEOUT`` (seconds;
10 and 60 by default).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import time
import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from fairscan.errors import DataError, truncate
from fairscan.interrupts import env_seconds, in_thread
from fairscan.redact import shown_url

FIELD = "data.path"
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
# longest a database statement may run (PostgreSQL's statement_timeout; DuckDB and SQLite
# queries are interrupted past it)
QUERY_TIMEOUT = 1800.0
# fewer bytes than this read in a whole read timeout: the read is stalled (or trickles)
MIN_PROGRESS_BYTES = 4096

T = TypeVar("T")


def connect_timeout() -> float:
    return env_seconds("FAIRSCAN_CONNECT_TIMEOUT", CONNECT_TIMEOUT)


def read_timeout() -> float:
    return env_seconds("FAIRSCAN_READ_TIMEOUT", READ_TIMEOUT)


def query_timeout() -> float:
    return env_seconds("FAIRSCAN_QUERY_TIMEOUT", QUERY_TIMEOUT)


class _ReadCounter:
    """Bytes this process has read (files and sockets: ``rchar``), less the bytes of its own
    reads of ``/proc/self/io``, which count too; None off Linux."""

    def __init__(self) -> None:
        self._own = 0

    def __call__(self) -> int | None:
        try:
            fd = os.open("/proc/self/io", os.O_RDONLY)
        except OSError:
            return None
        try:
            data = os.read(fd, 4096)
        except OSError:
            return None
        finally:
            os.close(fd)
        self._own += len(data)
        for line in data.decode("ascii", "replace").splitlines():
            if line.startswith("rchar:"):
                try:
                    return int(line.split()[1]) - self._own
                except (ValueError, IndexError):
                    return None
        return None


def _timeout_hint() -> str:
    return (
        "check the network and that the server answers; raise the limits with "
        "FAIRSCAN_CONNECT_TIMEOUT / FAIRSCAN_READ_TIMEOUT (seconds) if it is just slow, or "
        "copy the data to a local file"
    )


def probe_url(url: str) -> None:
    """For an ``http(s)://`` URL: connect (connect timeout) and get an answer to a one-byte
    request (read timeout), else a :class:`DataError`. Other schemes are left to polars."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return
    shown = truncate(shown_url(url))  # no user, password or signature parameter
    connection_type = (
        http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_type(parts.hostname, parts.port, timeout=connect_timeout())
    try:
        try:
            connection.connect()
        except TimeoutError as exc:
            raise DataError(
                f"cannot connect to {shown} within {connect_timeout():g} s",
                field=FIELD,
                hint=_timeout_hint(),
            ) from exc
        except OSError as exc:
            raise DataError(
                f"cannot connect to {shown}: {exc.strerror or exc}",
                field=FIELD,
                hint="check the URL and the network",
            ) from exc
        if connection.sock is not None:
            connection.sock.settimeout(read_timeout())
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        try:
            connection.request("GET", target, headers={"Range": "bytes=0-0"})
            response = connection.getresponse()
            response.read(1)
        except TimeoutError as exc:
            raise DataError(
                f"the server of {shown} accepted the connection but sent no answer within "
                f"{read_timeout():g} s",
                field=FIELD,
                hint=_timeout_hint(),
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise DataError(
                f"cannot read {shown}: {truncate(str(exc) or type(exc).__name__, 200)}",
                field=FIELD,
                hint="check the URL and the network",
            ) from exc
    finally:
        connection.close()


def watched(
    read: Callable[[], T],
    *,
    remote: bool,
    what: str = "the data",
    cancel: Callable[[], None] | None = None,
) -> T:
    """``read()`` run in a daemon thread while this thread waits in short steps (Ctrl-C and
    SIGTERM are handled within one step); with ``remote``, given up with a :class:`DataError`
    when the process reads almost nothing for a whole read timeout. ``cancel``: called when
    the wait ends early (an interrupt, the timeout) to stop the work of the read's thread
    (e.g. DuckDB's ``interrupt()``), so that it does not go on in the background."""
    try:
        return _watched(read, remote=remote, what=what)
    except BaseException:
        if cancel is not None:
            with contextlib.suppress(Exception):
                cancel()
        raise


def _watched(read: Callable[[], T], *, remote: bool, what: str) -> T:
    if not remote:
        return in_thread(read, name="fairscan-read")
    limit = read_timeout()
    bytes_read = _ReadCounter()
    last_bytes = [bytes_read()]  # the bytes read when they last grew, and when that was
    last_progress = [time.monotonic()]

    def check() -> None:
        now, current, before = time.monotonic(), bytes_read(), last_bytes[0]
        if current is None or before is None or current - before >= MIN_PROGRESS_BYTES:
            last_bytes[0], last_progress[0] = current, now
        elif now - last_progress[0] > limit:
            raise DataError(
                f"reading {what} stalled: less than {MIN_PROGRESS_BYTES} bytes arrived in "
                f"{limit:g} s",
                field=FIELD,
                hint=_timeout_hint(),
            )

    return in_thread(read, check=check, name="fairscan-read")
