"""The observed statistic is a replicate's statistic with the observed outcomes plugged in.

A randomization test is exact only when the observed maximum and each null replicate's are
the same function of the outcomes. For a calibration scan with per-row probabilities the
observed search may run over the profile summary (then re-scored from the rows) or over the
rows, and the replicates over either: here each replicate job, with its draw replaced by the
observed outcomes and its search seed by the observed search's, must return the observed score.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine import expectation_cells, randomization
from fairscan.engine.expectation_cells import ExpectationCells, ExpectationReplicate
from fairscan.engine.randomization import MdssReplicate, NullSettings
from fairscan.engine.seeds import search_seed
from fairscan.scans.bias.spec import BiasScanSpec
from fairscan.scans.mdss_runner import MdssInputs, search_mdss


def _inputs(seed: int, rows: int, discrete: bool) -> tuple[np.ndarray, MdssInputs]:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, rows) for k in (4, 3, 3)])
    p = rng.choice([0.15, 0.3, 0.45], rows) if discrete else rng.uniform(0.1, 0.6, rows)
    y = (rng.random(rows) < p).astype(np.float64)
    inputs = MdssInputs(
        rows=np.ones(rows, bool),
        observed=y,
        expected=p,
        direction=1,
        population="all rows",
        observed_label="y = 1",
        metric="rate of y = 1",
        reference="expected",
        reference_name="mean probability",
        describe=lambda *_: "",
        summarise_expectations=True,
    )
    return codes, inputs


@pytest.mark.parametrize(
    ("discrete", "replicates", "summary"),
    [(False, 999, True), (False, 0, False), (True, 999, True), (True, 0, False)],
    ids=["per-row-summary", "per-row-rows", "three-values-summary", "three-values-rows"],
)
def test_a_replicate_of_the_observed_outcomes_scores_the_observed_maximum(
    monkeypatch: pytest.MonkeyPatch, discrete: bool, replicates: int, summary: bool
) -> None:
    spec = BiasScanSpec(id="cal", type="bias_scan", direction="positive", restarts=3)
    settings = NullSettings(1, spec.penalty, spec.restarts)
    for k in range(4):
        codes, inputs = _inputs(k, 1000, discrete)
        seed = np.random.SeedSequence([5, k])
        scanned = search_mdss(spec, inputs, codes, seed, replicates=replicates)
        assert (scanned.expectation is not None) == summary
        observed = scanned.found.best.score
        # the replicate's search seed is the observed search's; its draw, the observed sums
        same_seed = search_seed(seed)
        monkeypatch.setattr(expectation_cells, "replicate_search_seed", lambda *_, s=same_seed: s)
        monkeypatch.setattr(randomization, "replicate_search_seed", lambda *_, s=same_seed: s)
        monkeypatch.setattr(ExpectationCells, "draw", lambda cells, _rng: cells.observed)
        monkeypatch.setattr(randomization, "bernoulli_sums", lambda cells, _rng: cells.observed)
        null = np.random.SeedSequence(1)
        job: ExpectationReplicate | MdssReplicate
        if scanned.expectation is not None:
            job = ExpectationReplicate(scanned.expectation, settings, null)
        else:
            job = MdssReplicate(scanned.cells, settings, null)
        assert job(0) == pytest.approx(observed, rel=1e-12, abs=1e-12)
