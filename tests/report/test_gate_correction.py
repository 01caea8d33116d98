"""gate.correction (issue 25): the scans' p-values corrected across the spec for the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, run_audit
from fairscan.engine.multiple_testing import adjust_p_values

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
P = np.array([0.01, 0.04, 0.03, 0.2, 0.005])


def _holm_loop(p):
    """Holm by its definition: reject p_(1..k) while p_(i) <= alpha / (m - i + 1)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        out[i] = min(1.0, running)
    return out


def _bh_loop(p):
    m = len(p)
    return [
        min(1.0, min(m * p[j] / (sum(pk <= p[j] for pk in p)) for j in range(m) if p[j] >= p[i]))
        for i in range(m)
    ]


def test_closed_forms():
    # hand-computed: sorted 0.005 0.01 0.03 0.04 0.2 (m = 5)
    assert adjust_p_values(P, "bonferroni") == pytest.approx([0.05, 0.2, 0.15, 1.0, 0.025])
    assert adjust_p_values(P, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.2, 0.025])
    assert adjust_p_values(P, "bh") == pytest.approx([0.025, 0.05, 0.05, 0.2, 0.025])
    assert adjust_p_values(P, "none") == pytest.approx(P)
    rng = np.random.default_rng(3)
    for _ in range(50):
        p = rng.random(int(rng.integers(1, 12))) ** 3
        assert adjust_p_values(p, "holm") == pytest.approx(_holm_loop(list(p)))
        assert adjust_p_values(p, "bh") == pytest.approx(_bh_loop(list(p)))
        assert adjust_p_values(p, "bonferroni") == pytest.approx(np.minimum(1, len(p) * p))


SPEC = f"""version: 1
name: gated
data: {{path: {CREDIT}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
  - {{id: tpr, type: tpr_scan, restarts: 5}}
  - {{id: cal, type: bias_scan, direction: negative, restarts: 3}}
  - {{id: flag, type: flag, metric: fpr, groups: {{attributes: [sex, ethnicity]}}, tolerance: 0.0,
     bootstrap: 50}}
significance: {{replicates: 19, workers: 1, seed: 0, alpha: 0.05}}
# 19 replicates cannot reach alpha after Holm or Bonferroni over 4 scans (issue 34: untested);
# allowed here, so that the exit code shows what the correction left significant
gate: {{correction: CORRECTION, allow_untested: true}}
"""


def _run(tmp_path: Path, correction: str):
    spec = tmp_path / f"{correction}.audit.yaml"
    spec.write_text(SPEC.replace("CORRECTION", correction))
    return run_audit(spec, RunOptions(write=False)).report


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh"])
def test_corrected_p_values_gate_the_verdict(tmp_path, correction):
    plain = _run(tmp_path, "none")
    assert all(s.corrected_p_value is None and s.p_value is None for s in plain.scans)
    report = _run(tmp_path, correction)
    own = []
    for s, s0 in zip(report.scans, plain.scans, strict=True):
        ps = [
            f.adjusted_p_value if f.adjusted_p_value is not None else f.p_value for f in s0.findings
        ]
        own.append(min(p for p in ps if p is not None))
        assert s.p_value == pytest.approx(own[-1])
    want = adjust_p_values(np.array(own), correction)
    for s, s0, w in zip(report.scans, plain.scans, want, strict=True):
        assert s.corrected_p_value == pytest.approx(w)
        significant = [f.significant for f in s.findings]
        if w > 0.05:
            assert not any(significant) and s.status != "significant"
            if s0.status == "significant":
                assert any("gate.correction" in m for m in s.warnings)
        else:
            assert significant == [f.significant for f in s0.findings]
    n_sig = sum(f.significant is True for s in report.scans for f in s.findings)
    assert report.verdict.significant_findings == n_sig
    assert report.verdict.exit_code == (1 if n_sig else 0)
    # the FPR and TPR scans have p = 1/20 = 0.05 (19 replicates): each gates at alpha on its
    # own, and any correction over 4 scans pushes them above alpha; the flag scan stays
    assert [s.status for s in plain.scans[:2]] == ["significant"] * 2
    assert all(s.status != "significant" for s in report.scans[:3])
    assert report.scans[3].status == "significant"
    # 4 / 20 > 0.05: the randomization scans could never pass Holm or Bonferroni; BH's best
    # case is 1 / 20 = alpha
    untested = [u.scan for u in report.verdict.untested_scans]
    assert untested == ([] if correction == "bh" else ["fpr", "tpr", "cal"])
    dumped = json.loads(report.model_dump_json())
    assert "corrected_p_value" in dumped["scans"][0]


def test_unknown_correction_is_a_spec_error(tmp_path):
    from fairscan.errors import SpecError

    with pytest.raises(SpecError) as err:
        _run(tmp_path, "fdr")
    assert "gate.correction" in str(err.value)
