"""Sequential significance in a whole audit (issue 36): the report says how many replicates ran,
the most that could, and the rule that stopped them; ``sequential: false`` keeps the fixed count
and its report keys as before."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

import fairscan
from fairscan.engine.sequential import StoppingRule
from fairscan.report.formats import report_json


def _planted(seed: int = 4, rows: int = 600) -> pl.DataFrame:
    """Calibration data whose subgroup a = 1, b = 2 has its outcome odds tripled."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, rows), rng.integers(0, 3, rows)
    p = rng.uniform(0.1, 0.6, rows)
    odds = np.where((a == 1) & (b == 2), 4.0, 1.0)
    y = rng.uniform(size=rows) < odds * p / (1 - p + odds * p)
    return pl.DataFrame({"a": a.astype(str), "b": b.astype(str), "p": p, "y": y.astype(int)})


def _audit(sequential: bool | None, scans: int = 1, **gate: Any) -> dict[str, Any]:
    significance: dict[str, Any] = {"replicates": 199, "seed": 3, "workers": 1}
    if sequential is not None:
        significance["sequential"] = sequential
    extra: dict[str, Any] = {"gate": gate} if gate else {}
    report = fairscan.audit(
        _planted(),
        name="sequential",
        outcome="y",
        prediction="p",
        attributes=["a", "b"],
        scans=[
            {"id": f"cal{i}", "type": "bias_scan", "direction": "positive", "restarts": 3}
            for i in range(scans)
        ],
        significance=significance,
        **extra,
    )
    return json.loads(report_json(report))


def test_a_strong_finding_stops_at_the_fewest_replicates_and_says_so():
    scan = _audit(None)["scans"][0]  # sequential is the default
    null, finding = scan["null_distribution"], scan["findings"][0]
    rule = StoppingRule(0.05, 199)
    assert null["replicates"] == len(null["scores"]) == rule.reject_after < 199
    assert null["max_replicates"] == scan["parameters"]["replicates"] == 199
    assert null["stopped_early"] is True
    assert "anytime-valid" in null["stopping_rule"] and "alpha 0.05" in null["stopping_rule"]
    assert finding["significant"] is True
    assert finding["p_value"] == rule.outcome(np.zeros(199, dtype=bool)).p_value <= 0.05
    assert f"from {rule.reject_after} of at most 199 null replicates" in finding["description"]


def test_sequential_false_runs_the_fixed_count_with_the_keys_as_before():
    scan = _audit(False)["scans"][0]
    null, finding = scan["null_distribution"], scan["findings"][0]
    assert null["replicates"] == len(null["scores"]) == 199
    assert set(null) == {"replicates", "alpha", "quantile", "mean", "max", "exceed_count", "scores"}
    assert finding["p_value"] == (1 + null["exceed_count"]) / 200
    assert "null replicates:" not in finding["description"]
    # the replicates the sequential run made are the first of the fixed run's: same seeds
    sequential = _audit(True)["scans"][0]["null_distribution"]["scores"]
    assert sequential == null["scores"][: len(sequential)]


def test_the_rule_settles_the_decision_at_the_corrected_alpha():
    # two scans under Bonferroni: each scan's decision is at alpha / 2
    scans = _audit(None, scans=2, correction="bonferroni")["scans"]
    rule = StoppingRule(0.025, 199)
    for scan in scans:
        assert "alpha 0.025" in scan["null_distribution"]["stopping_rule"]
        assert scan["null_distribution"]["replicates"] == rule.reject_after
        assert scan["corrected_p_value"] <= 0.05


class _Observer:
    """A progress observer with the optional ``estimate``."""

    def __init__(self) -> None:
        self.estimates: list[str] = []

    def start(self, task: str, total: int | None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass

    def estimate(self, text: str) -> None:
        self.estimates.append(text)


def test_the_cost_estimate_reaches_the_progress_observer_before_the_replicates():
    seen = _Observer()
    fairscan.audit(
        _planted(),
        name="estimate",
        outcome="y",
        prediction="p",
        attributes=["a", "b"],
        scans=[{"id": "cal", "type": "bias_scan", "direction": "positive", "restarts": 3}],
        significance={"replicates": 199, "seed": 3, "workers": 1},
        progress=seen,
    )
    (text,) = seen.estimates
    assert text.startswith("replicates: about ")
    assert f"likely after ~{StoppingRule(0.05, 199).reject_after}" in text
    assert "lower significance.replicates or restarts" in text


def test_the_markdown_report_says_the_replicates_stopped_early():
    from fairscan.report.markdown import null_sentence
    from fairscan.report.models import AuditReport

    report = AuditReport.model_validate(_audit(None))
    scan = report.scans[0]
    sentence = null_sentence(scan, scan.findings[0])
    assert sentence is not None and "of at most 199: they stopped once" in sentence
    fixed = AuditReport.model_validate(_audit(False)).scans[0]
    assert "at most" not in (null_sentence(fixed, fixed.findings[0]) or "")


def _ijdi_given(sequential: bool) -> dict[str, Any]:
    """An ijdi_scan of one given subgroup, the planted one, on FPR data with base rates."""
    rng = np.random.default_rng(11)
    rows = 2000
    a, b = rng.integers(0, 4, rows), rng.integers(0, 3, rows)
    base = rng.uniform(0.2, 0.5, rows)
    y = (rng.uniform(size=rows) < base).astype(int)
    flagged = rng.uniform(size=rows) < np.where((a == 1) & (b == 2), 0.6, 0.2)
    frame = pl.DataFrame(
        {"a": a.astype(str), "b": b.astype(str), "y": y, "r": flagged.astype(int), "p": base}
    )
    report = fairscan.audit(
        frame,
        name="ijdi-given",
        outcome="y",
        recommendation="r",
        attributes=["a", "b"],
        scans=[
            {
                "id": "ijdi",
                "type": "ijdi_scan",
                "base_rate": "p",
                "lambda": 1,
                "subgroups": [{"a": ["1"], "b": ["2"]}],
            }
        ],
        significance={"replicates": 199, "seed": 5, "workers": 1, "sequential": sequential},
    )
    return json.loads(report_json(report))["scans"][0]["findings"][0]


def test_ijdi_given_subgroups_take_the_rule_too():
    stopped, fixed = _ijdi_given(True), _ijdi_given(False)
    rule = StoppingRule(0.05, 199)
    figures = stopped["detail"]["given_subgroup"]
    assert figures["replicates"] == rule.reject_after and figures["max_replicates"] == 199
    assert stopped["significant"] and stopped["p_value"] == rule.smallest_p_value()
    whole = fixed["detail"]["given_subgroup"]
    assert whole["replicates"] == 199 and "max_replicates" not in whole
    assert fixed["p_value"] == 1 / 200 and fixed["significant"]
