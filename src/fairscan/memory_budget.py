"""The process's memory budget, and running out of it as an error the user can act on.

Two limits bound a run: the memory of the machine or its cgroup (``fairscan.data.load``
reads them) and the address space (``RLIMIT_AS``, ``prlimit --as`` / ``ulimit -v``), which
counts every mapping, including the thread stacks and the allocator arenas that polars,
numpy/BLAS and Python reserve without touching. Under a low address-space limit those
reservations alone fail (a thread that cannot start, a shared library that cannot be mapped,
``MemoryError`` on a small allocation), so the CLI

* refuses at once, before any import, a limit below :data:`MIN_ADDRESS_SPACE` (what the
  libraries need to load) with the need, the limit and the way out (:func:`startup_problem`);
* under a limit below :data:`SMALL_ADDRESS_SPACE`, keeps the thread pools small
  (:func:`fit_thread_pools`: polars, BLAS and the glibc malloc arenas);
* turns any allocation failure into exit 2 with the same message (:func:`resource_failure`),
  never an internal error.

The loader's own estimates compare their need with :func:`address_space_headroom` as well.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

# Address space the CLI needs to load its libraries (polars, numpy, the kernels) and read a
# small data file with one thread each; measured: about 390 MiB on Linux x86-64 (VmPeak).
MIN_ADDRESS_SPACE = 480 << 20
# Below this limit, thread pools are kept to what the limit can hold.
SMALL_ADDRESS_SPACE = 8 << 30
# Address space a polars worker thread may reserve (its jemalloc arena and its stack).
PER_THREAD_ADDRESS_SPACE = 512 << 20

WAY_OUT = (
    "audit a sample of the rows (data: {sample: {rows: 100000, seed: 0}}), use fewer "
    "bootstrap resamples or replicates, run on a larger machine, or raise the memory limit "
    "(ulimit -v / prlimit --as, the container's memory limit)"
)


def _mib(n: float) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` in bytes, None when unlimited."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError, AttributeError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def _address_space_used() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def address_space_headroom() -> int | None:
    """Bytes of address space this process can still map under ``RLIMIT_AS`` (None: no limit)."""
    limit = address_space_limit()
    if limit is None:
        return None
    used = _address_space_used()
    return max(limit - (used or 0), 0)


def startup_problem() -> str | None:
    """Why the run cannot start under this address-space limit, or None when it can."""
    limit = address_space_limit()
    if limit is None or limit >= MIN_ADDRESS_SPACE:
        return None
    return (
        f"not enough memory to start: fairscan needs about {_mib(MIN_ADDRESS_SPACE)} of address "
        f"space to load its libraries, and the limit (RLIMIT_AS) is {_mib(limit)}\n"
        "  help: raise the limit (ulimit -v / prlimit --as) to at least "
        f"{_mib(MIN_ADDRESS_SPACE)}, or run on a larger machine"
    )


def fit_thread_pools() -> None:
    """Under a low address-space limit: few polars threads, one BLAS thread and few malloc
    arenas, unless the user chose otherwise. Call before polars and numpy are imported."""
    limit = address_space_limit()
    if limit is None or limit >= SMALL_ADDRESS_SPACE:
        return
    threads = max(
        1, min(os.cpu_count() or 1, (limit - MIN_ADDRESS_SPACE) // PER_THREAD_ADDRESS_SPACE)
    )
    os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, 2)  # M_ARENA_MAX: 64 MiB of address space per arena
    except (OSError, AttributeError):
        pass


_RESOURCE_TEXTS = (
    "can't start new thread",
    "failed to map segment",
    "cannot allocate memory",
    "memory allocation",
    "out of memory",
    "unable to allocate",
    "std::bad_alloc",
    "capacity overflow",
)


def is_resource_failure(exc: BaseException) -> bool:
    """``exc`` (or what caused it) is the process running out of memory or address space."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        if isinstance(current, OSError) and current.errno == 12:  # ENOMEM
            return True
        text = str(current).lower()
        if any(t in text for t in _RESOURCE_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False


def resource_failure(exc: BaseException) -> str | None:
    """The out-of-memory message for ``exc`` (None when it is something else): what failed,
    the limit, and the way out."""
    if not is_resource_failure(exc):
        return None
    limit = address_space_limit()
    what = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    limits = []
    if limit is not None:
        limits.append(f"the address-space limit (RLIMIT_AS) is {_mib(limit)}")
    cgroup = cgroup_limit()
    if cgroup is not None:
        limits.append(f"the cgroup memory limit is {_mib(cgroup)}")
    where = "; ".join(limits) or "the machine's memory is used up"
    return f"out of memory ({what[:200]}); {where}\n  help: {WAY_OUT}"


CGROUP_ROOT = Path("/sys/fs/cgroup")
_NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a huge page-aligned number


def _own_cgroups(root: Path) -> list[tuple[Path, int]]:
    """The memory cgroup folders that bound this process, innermost first, with their version:
    its own cgroup (from /proc/self/cgroup) and every ancestor up to the mount point, for
    cgroup v2 (``0::/path``) and v1 (``N:memory:/path``); the mount points themselves when the
    process's own folder is not visible (another namespace)."""
    folders: list[tuple[Path, int]] = []
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":
            base, version = root, 2
        elif "memory" in controllers.split(","):
            base, version = root / "memory", 1
        else:
            continue
        folder = base / path.strip("/")
        while folder != base and base in folder.parents:
            if folder.is_dir():
                folders.append((folder, version))
            folder = folder.parent
    folders += [(root, 2), (root / "memory", 1)]
    return folders


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return None


def _stat_value(stat: str, key: str) -> int:
    for line in stat.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _cgroup_state(folder: Path, version: int) -> tuple[int, int] | None:
    """(limit, memory in use not counting the page cache the kernel reclaims) of one cgroup
    folder; None without a limit there."""
    names = (
        ("memory.max", "memory.current")
        if version == 2
        else (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
        )
    )
    limit, current = (_read(folder / name) for name in names)
    if limit is None or current is None:
        return None
    limit, current = limit.strip(), current.strip()
    if not (limit.isdigit() and current.isdigit()) or int(limit) >= _NO_LIMIT:
        return None  # "max" (v2) or the v1 "unlimited" value
    stat = _read(folder / "memory.stat") or ""
    cache = _stat_value(stat, "file") if version == 2 else _stat_value(stat, "total_cache")
    return int(limit), max(int(current) - cache, 0)


def cgroup_available(root: Path = CGROUP_ROOT) -> int | None:
    """Bytes the tightest memory cgroup bounding this process still grants (its limit less the
    memory in use, not counting the page cache); None without a cgroup limit. Above it the
    kernel kills the process (SIGKILL, no message), so the checks before large allocations
    compare with it."""
    states = [s for f, v in _own_cgroups(root) if (s := _cgroup_state(f, v)) is not None]
    return min((max(limit - used, 0) for limit, used in states), default=None)


def cgroup_limit(root: Path = CGROUP_ROOT) -> int | None:
    """The tightest memory cgroup limit bounding this process, None without one."""
    states = [s for f, v in _own_cgroups(root) if (s := _cgroup_state(f, v)) is not None]
    return min((limit for limit, _ in states), default=None)
