"""What a ``shift`` scan will cost, from its parameters, before it starts.

The exact kernel holds the (B, n) resample counts and two (n, 2B + 2) column blocks and
multiplies the n x n kernel into them: memory ~ 40 n B bytes, work ~ 2 n^2 (2B + 2 + d) flops.
The Nystroem kernel holds (B, r, 4) forms and (r, r) matrices and multiplies the (B, n) counts
into the (n, r) kernel columns: memory ~ 8 (3 r^2 + 6 B r + 4096 r) bytes, work ~ 2 n r (2B + d)
+ 10 r^3 flops (the eigendecomposition). Then every set of m kernel centers is projected onto
the non-negative tilts (the worst case's: the n rows or the r landmarks; each named tilt's
centers or sample rows): about 80 applications of the m x m kernel (a float32 matrix up to
5,000 centers, in row blocks beyond), and one of the n x m kernel to the rows. The features
take 8 n d bytes a copy.

A scan that needs more memory than the budget, or that is estimated to take longer than
:data:`MAX_SECONDS`, is refused before it starts with the fields to change (a sample of the
rows, fewer features, bootstrap resamples or tilt centers, the kernel's size); one estimated
above a minute says so before it starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fairscan.engine.rkhs import DENSE_PROJECTION_CENTERS, PROJECTION_ITERATIONS
from fairscan.errors import ScanError

# Sustained float64 work per worker thread (BLAS and the compiled kernel sums): measured about
# 4e10 on COMPAS (n = 3,363, B = 500: 0.6 s), halved so that the estimate errs long.
FLOPS_PER_WORKER = 2e10
WARN_SECONDS = 60.0
# Beyond this estimate a scan is refused: a run that will not end in a working session (the
# estimate errs long, so this is about an hour and a half of real work on one worker)
MAX_SECONDS = 3 * 3600.0
# One Gaussian kernel entry costs about as much as this many flops beyond its 2d-term distance
# (numpy's passes over the block and the exponential): measured 6.5e7 entries per CPU second
# (kernel_apply, d = 1), i.e. ~300 flops at the rate above, doubled to err long like it.
_ENTRY_FLOPS = 600.0
# the kernel norms ||h||^2 of a projected tilt (its coefficients, the direction's, their
# difference), each one more application of the m x m kernel
_NORMS = 4
_ROW_BLOCK = 4096


@dataclass(frozen=True)
class ShiftCost:
    bytes: float
    seconds: float


def shift_cost(
    n: int, d: int, bootstrap: int, rank: int, exact: bool, workers: int,
    centers: Sequence[int] = (),
) -> ShiftCost:  # fmt: skip
    """The estimated peak memory (bytes) and time (seconds) of the kernel, the bootstrap and
    the projections of the worst case's and the named tilts' ``centers`` (their counts)."""
    B, r = float(bootstrap), float(min(rank, n))
    entry = 2.0 * d + _ENTRY_FLOPS
    if exact:
        memory = 40.0 * n * B + 8.0 * _ROW_BLOCK * n
        flops = float(n) ** 2 * (2 * (2 * B + 2) + entry)
    else:
        memory = 8.0 * (3 * r * r + 6 * B * r + _ROW_BLOCK * r)
        flops = n * r * (4 * B + entry) + 10.0 * r**3
    for m in (n if exact else r, *centers):
        need, work = _projection(float(m), d)
        memory = max(memory, need)
        flops += work + n * m * entry  # the tilt's values on the rows
    memory += 3 * 8.0 * n * d  # the features: raw, standardised, a block's copy
    return ShiftCost(bytes=memory, seconds=flops / (FLOPS_PER_WORKER * max(1, workers)))


def _projection(m: float, d: int) -> tuple[float, float]:
    """Memory and flops of projecting m centers onto the non-negative tilts: 20 power
    iterations and up to PROJECTION_ITERATIONS gradient steps, one m x m product each, and the
    tilt's kernel norms."""
    entries, entry = m * m, 2.0 * d + _ENTRY_FLOPS
    products = 20 + PROJECTION_ITERATIONS
    norms = _NORMS * entries * entry
    if m <= DENSE_PROJECTION_CENTERS:  # the kernel once, as float32
        return 4.0 * entries, entries * entry + products * 2 * entries + norms
    return 8.0 * _ROW_BLOCK * m, products * entries * (entry + 2) + norms


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
    cost: ShiftCost,
    available: int | None,
    *,
    n: int,
    exact: bool,
    bootstrap: int,
    rank: int,
    features: int = 1,
    centers: int = 0,
) -> str | None:
    """A :class:`ScanError` when ``cost`` exceeds the memory ``available`` or
    :data:`MAX_SECONDS`; the warning to show when it will take more than a minute (None
    otherwise). ``centers``: the named tilts' centers in all."""
    kernel = f"the exact kernel on {n:,} rows" if exact else f"a rank-{rank} Nystroem kernel"
    shape = f"{kernel}, {features:,} feature(s), bootstrap {bootstrap:,}"
    if centers:
        shape += f", {centers:,} tilt center(s)"
    way_out = (
        "audit a sample of the rows (data: {sample: {rows: 100000, seed: 0}}), use fewer "
        "`features`, lower `bootstrap` (500 is the default), use a Nystroem kernel (lower "
        "`exact_max_rows`), lower `rank`, give the tilts fewer centers (a smaller "
        "`tilts[].sample`), or run on a larger machine"
    )
    if available is not None and cost.bytes > available:
        raise ScanError(
            f"this shift scan needs about {_size(cost.bytes)} of memory ({shape}), more than "
            f"the {_size(available)} available",
            field="bootstrap",
            hint=way_out,
        )
    if cost.seconds > MAX_SECONDS:
        raise ScanError(
            f"this shift scan is estimated to take about {_duration(cost.seconds)} ({shape}), "
            f"more than the {_duration(MAX_SECONDS)} fairscan starts",
            field="bootstrap",
            hint=way_out,
        )
    if cost.seconds > WARN_SECONDS:
        return (
            f"estimated to take about {_duration(cost.seconds)} ({shape}); to go faster: {way_out}"
        )
    return None
