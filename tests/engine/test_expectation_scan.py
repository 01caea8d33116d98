"""bias_scan with per-row probabilities through the profile summary (issue 12), end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, prepare_audit, run_prepared

SPEC = """
version: 1
name: t
data: {{path: d.csv}}
columns: {{outcome: y, prediction: p}}
attributes: [a, b, c]
scans: [{{id: bias, type: bias_scan, direction: {direction}, penalty: {penalty}, restarts: 8}}]
significance: {{replicates: {replicates}, seed: 4}}
"""


def _write(tmp_path: Path, direction: str, penalty: float, replicates: int) -> Path:
    rng = np.random.default_rng(1)
    n = 3000
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 4, n), rng.integers(0, 2, n)
    p = 1.0 / (1.0 + np.exp(-rng.normal(-0.5, 1.0, n)))
    truth = np.where((a == 1) & (b != 2), p * 0.7, p)
    y = (rng.random(n) < truth).astype(int)
    lines = ["a,b,c,y,p"] + [f"x{a[i]},y{b[i]},z{c[i]},{y[i]},{float(p[i])!r}" for i in range(n)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "t.audit.yaml"
    spec.write_text(SPEC.format(direction=direction, penalty=penalty, replicates=replicates))
    return spec


def _scan(spec: Path):
    return run_prepared(prepare_audit(spec), RunOptions(write=False, workers=1)).report.scans[0]


def _force(monkeypatch, summary: bool) -> None:
    monkeypatch.setattr("fairscan.scans.mdss_runner.worth_summarising", lambda *_a, **_k: summary)


@pytest.mark.parametrize(("direction", "penalty"), [("negative", 0.0), ("negative", 1.0)])
def test_profile_summary_reports_the_row_level_finding(tmp_path, monkeypatch, direction, penalty):
    spec = _write(tmp_path, direction, penalty, 19)
    _force(monkeypatch, summary=False)
    rows = _scan(spec)
    _force(monkeypatch, summary=True)
    summary = _scan(spec)
    assert rows.findings and summary.findings
    found, expected = summary.findings[0], rows.findings[0]
    assert found.subgroup == expected.subgroup == {"a": ["x1"], "b": ["y0", "y1", "y3"]}
    # the reported score is the subgroup's row-level score: identical
    assert found.statistic.value == expected.statistic.value
    assert summary.null_distribution is not None
    assert len(summary.null_distribution.scores) == 19
    assert found.p_value == pytest.approx(1 / 20)
    # both representations draw one uniform per row (the same null draws) and find the same
    # subgroups: the same null scores, the summary's from its expansion (within 1e-9)
    assert rows.null_distribution is not None
    assert summary.null_distribution.scores == pytest.approx(
        rows.null_distribution.scores, rel=1e-9, abs=1e-12
    )
    assert found.p_value == expected.p_value
    # replicates are seeded: the same scores again
    again = _scan(spec)
    assert again.null_distribution is not None
    assert again.null_distribution.scores == summary.null_distribution.scores
