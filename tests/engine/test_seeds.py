"""Random streams (issue 22): named stream numbers pinned, helpers equal to their definition, and
a seeded audit bit-identical to the numbers main published before the streams were named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from fairscan.engine.seeds import (
    AuditStream,
    IjdiStream,
    MdssStream,
    ReplicateStream,
    ShiftStream,
    SubrocStream,
    child_seed,
    replicate_rng,
    replicate_search_seed,
    scan_seed,
    search_seed,
)

ROOT = Path(__file__).resolve().parents[2]

# Every seeded report depends on these numbers: changing one changes published results.
PINNED = {
    MdssStream: {"SEARCH": 0, "NULL": 1, "FIXED": 2},
    IjdiStream: {"SEARCH": 0, "NULL": 1, "MITIGATION": 2, "FIXED": 3},
    AuditStream: {"BOOTSTRAP": 0},
    ShiftStream: {"BOOTSTRAP": 0, "NYSTROEM": 1, "TILT": 2, "FIXED": 3},
    SubrocStream: {"SPLIT": 0, "NULL": 1, "FIXED": 2, "POWER": 3},
    ReplicateStream: {"SEARCH": 0},
}


@pytest.mark.parametrize("stream", list(PINNED), ids=lambda s: s.__name__)
def test_stream_numbers_are_pinned(stream: type) -> None:
    assert {m.name: int(m) for m in stream} == PINNED[stream]


def _key(seed: np.random.SeedSequence) -> tuple[int, ...]:
    return tuple(int(k) for k in seed.spawn_key)


def test_child_seed_addresses_the_spawn_key_and_keeps_the_entropy() -> None:
    root = np.random.SeedSequence(5, spawn_key=(3,))
    child = child_seed(root, MdssStream.NULL, 4)
    assert child.entropy == 5
    assert _key(child) == (3, 1, 4)
    # an enum member and its number are the same stream
    assert np.array_equal(child.generate_state(4), child_seed(root, 1, 4).generate_state(4))


def test_replicate_helpers_are_the_documented_children() -> None:
    root = np.random.SeedSequence(11)
    direct = np.random.Generator(np.random.PCG64(np.random.SeedSequence(11, spawn_key=(7,))))
    assert np.array_equal(replicate_rng(root, 7).random(5), direct.random(5))
    state = np.random.SeedSequence(11, spawn_key=(7, 0, 2)).generate_state(1, dtype=np.uint64)[0]
    assert replicate_search_seed(root, 7, 2) == int(state >> np.uint64(1))
    assert 0 <= search_seed(root) < 2**63


def test_scan_seed_is_keyed_by_the_scan_id_not_its_position() -> None:
    root = np.random.SeedSequence(0)
    key = int.from_bytes(hashlib.sha256(b"fpr").digest()[:4], "little")
    assert _key(scan_seed(root, "fpr")) == (key,)
    assert _key(scan_seed(root, "fpr")) != _key(scan_seed(root, "tpr"))


def _numbers_digest(scans: list[dict]) -> str:
    numbers = [
        (
            s["id"],
            s["null_distribution"]["scores"],
            [(f["label"], f["statistic"], f["p_value"], f["size"]) for f in s["findings"]],
        )
        for s in scans
    ]
    return hashlib.sha256(json.dumps(numbers).encode()).hexdigest()


def test_shipped_sample_audit_is_bit_identical_to_main_before_named_streams() -> None:
    """Digest of audits/sample.audit.yaml's null scores and findings (199 replicates per scan),
    as written by main 023942f before the streams were named; json.dumps writes each float's
    shortest round-trip repr, so any changed bit changes the digest. The fixed count of
    replicates (``sequential: false``, issue 36) is the run main made."""
    import fairscan

    spec = ROOT / "audits" / "sample.audit.yaml"
    report = fairscan.audit(spec=spec, significance={"sequential": False, "workers": 1})
    scans = json.loads(report.model_dump_json())["scans"]
    assert [s["id"] for s in scans] == ["fpr", "tpr", "calibration"]
    assert all(len(s["null_distribution"]["scores"]) == 199 for s in scans)
    assert _numbers_digest(scans) == (
        "9bc08cdb93db358b4fd0ad5a1521576813a9e4955358806893bd497b53fa8c9c"
    )
