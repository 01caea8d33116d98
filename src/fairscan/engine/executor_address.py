"""The one rule of an executor address (``significance.executor``, ``--executor``): ``local``,
``dask://HOST:PORT`` or ``tls://HOST:PORT``. Plain ``re``: the spec layer validates addresses
with it without loading numpy or the executors themselves (:mod:`fairscan.engine.executors`)."""

from __future__ import annotations

import re

LOCAL = "local"  # significance.executor for this machine

# dask://HOST:PORT (TCP) or tls://HOST:PORT (TLS, with the certificates of dask's configuration:
# distributed.comm.tls.*): a host name, an IPv4 address or a bracketed IPv6 address, and a port
EXECUTOR_PATTERN = r"^(local|(dask|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5}))$"
EXECUTOR_HELP = (
    "write `local` (this machine, the default), `dask://HOST:PORT`, the address of a Dask "
    "scheduler, e.g. dask://scheduler.example.org:8786, or `tls://HOST:PORT` for a scheduler "
    "that speaks TLS (certificates from dask's configuration, distributed.comm.tls)"
)


def parse_executor(text: str) -> tuple[str, int] | None:
    """``None`` for ``local``, else the (host, port) of ``dask://HOST:PORT`` or
    ``tls://HOST:PORT``; ValueError when ``text`` is none of them."""
    match = re.match(EXECUTOR_PATTERN, text)
    port = int(match.group(5)) if match and match.group(5) else None
    if match is None or (port is not None and not 1 <= port <= 65535):
        raise ValueError(f"not an executor: {text!r}; {EXECUTOR_HELP}")
    if match.group(1) == LOCAL:
        return None
    return match.group(3), int(match.group(5))
