"""Random streams: every seed a run draws from is addressed here, by name (methods.md §1.5).

A run has one root ``SeedSequence`` (``significance.seed``). Each scan gets its own child,
keyed by its id (:func:`scan_seed`), so adding or reordering scans changes no other scan's
numbers. Under a scan's seed, each use of randomness has its own numbered stream
(:func:`child_seed` with a member of the scan's stream enum), and under a stream, null
replicates and bootstrap blocks are addressed by their index (:func:`replicate_rng`), so
results are bit-identical for a seed whatever the number of workers or the executor.

Stream numbers are part of every seeded report: changing one changes published numbers, so
they are pinned by ``tests/engine/test_seeds.py``. Streams only need to differ within one
scan (each scan's seed is its own), hence one enum per scan family, each ``@unique``.
"""

from __future__ import annotations

import hashlib
from enum import IntEnum, unique

import numpy as np


@unique
class MdssStream(IntEnum):
    """MDSS scans (fpr/tpr/bias/regression scans, nominal bias scans, CBS)."""

    SEARCH = (
        0  # the observed search (a nominal scan: one child per class; CBS: per protected class)
    )
    NULL = 1  # the randomization test's replicates (CBS: per protected class)
    FIXED = 2  # given subgroups (`subgroups:`): child k draws subgroup k's null sums


@unique
class IjdiStream(IntEnum):
    """The IJDI scan: one search stream for every pass, one null stream per pass."""

    SEARCH = 0
    NULL = 1  # the first pass's randomization test
    MITIGATION = 2  # child k: the test after mitigation step k
    FIXED = 3  # given subgroups: child k draws subgroup k's null (its child 1: a power's)


@unique
class AuditStream(IntEnum):
    """Certify and flag scans."""

    BOOTSTRAP = 0  # blocks of resamples, addressed by block index


@unique
class ShiftStream(IntEnum):
    """The shift scan."""

    BOOTSTRAP = 0  # multiplier bootstrap
    NYSTROEM = 1  # landmark rows of the low-rank kernel
    TILT = 2  # child j: rows kept from tilt j's sample when it exceeds exact_max_rows
    FIXED = 3  # given subgroups: child k, subgroup k's bootstrap


@unique
class SubrocStream(IntEnum):
    """The subgroup-ROC scan."""

    SPLIT = 0  # the search/validation split
    NULL = 1  # random subsets, child (positives, negatives) per subgroup size
    FIXED = 2  # given subgroups: random subsets, child (positives, negatives) per size
    POWER = 3  # a re-test's power: child k, subgroup k's subsets under the alternative


@unique
class ReplicateStream(IntEnum):
    """Under one null replicate's index: its draws use the index itself, its search this child."""

    SEARCH = 0


def child_seed(seed: np.random.SeedSequence, *path: int) -> np.random.SeedSequence:
    """The child of ``seed`` at ``path``: independent streams addressed by index, not call order."""
    return np.random.SeedSequence(
        entropy=seed.entropy, spawn_key=(*seed.spawn_key, *map(int, path))
    )


def search_seed(seed: np.random.SeedSequence) -> int:
    """A 63-bit integer seed for the compiled search, derived from a SeedSequence."""
    return int(seed.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def replicate_rng(seed: np.random.SeedSequence, index: int) -> np.random.Generator:
    """The generator of replicate (or resample block) ``index`` under a stream's seed."""
    return np.random.Generator(np.random.PCG64(child_seed(seed, index)))


def replicate_search_seed(seed: np.random.SeedSequence, index: int, *path: int) -> int:
    """The compiled search's seed in replicate ``index`` (``path``: e.g. the class searched)."""
    return search_seed(child_seed(seed, index, ReplicateStream.SEARCH, *path))


def scan_seed(root: np.random.SeedSequence, scan_id: str) -> np.random.SeedSequence:
    """Each scan's stream is keyed by its id, so adding or reordering scans changes nothing else."""
    key = int.from_bytes(hashlib.sha256(scan_id.encode()).digest()[:4], "little")
    return child_seed(root, key)


SEED_DERIVATION = (
    "derived: the first 8 bytes, big-endian, of SHA-256 over 'fairscan-seed-v1', the spec's "
    "SHA-256 and the data's SHA-256 (hex, NUL-separated), shifted right by one bit"
)


def derived_seed(spec_sha256: str, data_sha256: str) -> int:
    """The default seed of a run without ``significance.seed``: a function of the spec file and
    the data only, so the same spec on the same data gives the same report (SEED_DERIVATION)."""
    text = "\0".join(("fairscan-seed-v1", spec_sha256, data_sha256)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def resolve_seed(
    given: int | str | None, spec_sha256: str, data_sha256: str
) -> tuple[int | None, str]:
    """(seed of the root SeedSequence, how it was chosen) for ``significance.seed``: a number
    as given; omitted: derived from the hashes; ``random``: None (fresh entropy)."""
    if given == "random":
        return None, "random: fresh entropy (significance.seed: random)"
    if given is None:
        return derived_seed(spec_sha256, data_sha256), SEED_DERIVATION
    return int(given), "significance.seed"
