"""Reproducible by default (issue 25): without ``significance.seed`` the seed is derived from the
spec's and the data's SHA-256, recorded in the provenance; ``seed: random`` opts into entropy."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from fairscan.api import RunOptions, run_audit
from fairscan.engine.seeds import SEED_DERIVATION, derived_seed, resolve_seed

ROOT = Path(__file__).resolve().parent.parent
CREDIT = ROOT / "sample_data" / "credit.csv"
TIMING_KEYS = {"utc_time", "finished_utc_time", "total_seconds", "timing"}

SPEC = f"""version: 1
name: seedless
data: {{path: {CREDIT}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
  - {{id: cal, type: bias_scan, direction: negative, restarts: 3}}
  - {{id: flag, type: flag, metric: fpr, groups: {{attributes: [sex, ethnicity]}}, tolerance: 0.0,
     bootstrap: 50}}
significance: {{replicates: 19, workers: 1{{extra}}}}
"""


def _strip(node: Any) -> Any:
    """The report without its wall-clock times."""
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in TIMING_KEYS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _run(tmp_path: Path, extra: str = "", name: str = "a") -> dict[str, Any]:
    spec = tmp_path / f"{name}.audit.yaml"
    spec.write_text(SPEC.replace("{extra}", extra))
    report = run_audit(spec, RunOptions(write=False)).report
    return json.loads(report.model_dump_json())


def test_two_runs_without_a_seed_give_identical_reports(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert first["provenance"]["utc_time"]  # there are timings to ignore
    assert _strip(first) == _strip(second)
    prov = first["provenance"]
    assert prov["seed"] == derived_seed(prov["spec_sha256"], prov["data_sha256"])
    assert prov["seed_origin"] == SEED_DERIVATION
    assert prov["parameters"]["significance"]["seed"] is None  # not given in the spec
    # the rule stated in the provenance, computed independently
    text = f"fairscan-seed-v1\0{prov['spec_sha256']}\0{prov['data_sha256']}".encode()
    assert prov["seed"] == int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def test_the_seed_follows_the_spec_and_the_data(tmp_path):
    base = _run(tmp_path)["provenance"]
    other = _run(tmp_path, ", alpha: 0.04")["provenance"]  # another spec file: another seed
    assert other["seed"] != base["seed"]
    assert derived_seed("a" * 64, "b" * 64) != derived_seed("a" * 64, "c" * 64)
    assert 0 <= derived_seed("a" * 64, "b" * 64) < 2**63


def test_given_and_random_seeds(tmp_path):
    given = _run(tmp_path, ", seed: 7")["provenance"]
    assert given["seed"] == 7 and given["seed_origin"] == "significance.seed"
    first = _run(tmp_path, ", seed: random")
    second = _run(tmp_path, ", seed: random")
    assert first["provenance"]["seed"] is None
    assert first["provenance"]["seed_origin"].startswith("random")
    assert first["provenance"]["seed_entropy"] != second["provenance"]["seed_entropy"]
    assert resolve_seed("random", "x", "y")[0] is None


@pytest.mark.parametrize("bad", ["-1", "lucky", "1.5"])
def test_bad_seed_is_a_spec_error(tmp_path, bad):
    from fairscan.errors import SpecError

    spec = tmp_path / "bad.audit.yaml"
    spec.write_text(SPEC.replace("{extra}", f", seed: {bad}"))
    with pytest.raises(SpecError) as err:
        run_audit(spec, RunOptions(write=False))
    assert "seed" in str(err.value)
