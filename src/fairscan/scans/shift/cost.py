"""What a ``shift`` scan will cost, from its parameters, before it starts.

The exact kernel holds the (B, n) resample counts and two (n, 2B + 2) column blocks and
multiplies the n x n kernel into them: memory ~ 40 n B bytes, work ~ 2 n^2 (2B + 2 + d) flops.
The Nystroem kernel holds (B, r, 4) forms and (r, r) matrices and multiplies the (B, n) counts
into the (n, r) kernel columns: memory ~ 8 (3 r^2 + 6 B r + 4096 r) bytes, work ~ 2 n r (2B + d)
+ 10 r^3 flops (the eigendecomposition). A scan that needs more memory than the budget is
refused with the way out; one estimated above a minute says so before it starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairscan.errors import ScanError

# Sustained float64 work per worker thread (BLAS and the compiled kernel sums): measured about
# 4e10 on COMPAS (n = 3,363, B = 500: 0.6 s), halved so that the estimate errs long.
FLOPS_PER_WORKER = 2e10
WARN_SECONDS = 60.0
_ROW_BLOCK = 4096


@dataclass(frozen=True)
class ShiftCost:
    bytes: float
    seconds: float


def shift_cost(n: int, d: int, bootstrap: int, rank: int, exact: bool, workers: int) -> ShiftCost:
    """The estimated peak memory (bytes) and time (seconds) of the kernel and the bootstrap."""
    B, r = float(bootstrap), float(min(rank, n))
    if exact:
        memory = 40.0 * n * B + 8.0 * _ROW_BLOCK * n
        flops = 2.0 * float(n) ** 2 * (2 * B + 2 + d)
    else:
        memory = 8.0 * (3 * r * r + 6 * B * r + _ROW_BLOCK * r) + 8.0 * n * d
        flops = 2.0 * n * r * (2 * B + d) + 10.0 * r**3
    return ShiftCost(bytes=memory, seconds=flops / (FLOPS_PER_WORKER * max(1, workers)))


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 1024:,.0f} KiB"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds:.0f} s"


def check_shift_cost(
    cost: ShiftCost, available: int | None, *, n: int, exact: bool, bootstrap: int, rank: int
) -> str | None:
    """A :class:`ScanError` when ``cost`` exceeds the memory ``available``; the warning to show
    when it will take more than a minute (None otherwise)."""
    kernel = f"the exact kernel on {n:,} rows" if exact else f"a rank-{rank} Nystroem kernel"
    way_out = (
        "lower `bootstrap` (500 is the default), use a Nystroem kernel (lower `exact_max_rows`), "
        "lower `rank`, audit a sample (data: {sample: {rows: 100000, seed: 0}}), or run on a "
        "larger machine"
    )
    if available is not None and cost.bytes > available:
        raise ScanError(
            f"this shift scan needs about {_size(cost.bytes)} of memory ({kernel}, bootstrap "
            f"{bootstrap:,}), more than the {_size(available)} available",
            field="bootstrap",
            hint=way_out,
        )
    if cost.seconds > WARN_SECONDS:
        return (
            f"estimated to take about {_duration(cost.seconds)} ({kernel}, bootstrap "
            f"{bootstrap:,}); to go faster: {way_out}"
        )
    return None
