"""The metric catalogue (issue 22): one record per metric, and everything derived from it."""

from __future__ import annotations

import numpy as np
import pytest

from fairscan.engine.audit_metrics import metric_values
from fairscan.metric_table import CATALOGUE, METRIC_NAMES, NEEDS_DOC
from fairscan.scans import SCAN_TYPES
from fairscan.scans.certification.spec import CertifySpec
from fairscan.scans.metric_inputs import MetricInputs, needs
from fairscan.spec.models import METRIC_RANGES


def test_the_spec_accepts_exactly_the_catalogued_metrics() -> None:
    assert tuple(CATALOGUE) == METRIC_NAMES
    assert all(name == metric.name for name, metric in CATALOGUE.items())


def test_target_ranges_are_the_catalogue_ranges() -> None:
    assert {
        **dict.fromkeys(
            ("fpr", "fnr", "tpr", "tnr", "ppv", "npv", "positive_rate", "accuracy", "error"),
            (0.0, 1.0),
        ),
        "brier": (0.0, 1.0),
        "coverage": (0.0, 1.0),
        "calibration": (-1.0, 1.0),
    } == METRIC_RANGES
    assert "squared_error" not in METRIC_RANGES


def test_scan_help_names_each_metric_by_what_it_reads() -> None:
    assert NEEDS_DOC == (
        "outcome (not with `loss`); plus the recommendation for the decision metrics (fpr, fnr, "
        "tpr, tnr, ppv, npv, positive_rate, accuracy, error), the prediction as a probability for "
        "brier and calibration, or as a score for squared_error"
    )
    for scan_type in ("certify", "flag", "shift"):
        assert SCAN_TYPES[scan_type].docs.needs == NEEDS_DOC


def test_findings_name_rates_by_acronym_and_others_in_words() -> None:
    def inputs(name: str, words: str) -> MetricInputs:
        empty = np.zeros(0)
        return MetricInputs(empty, empty.astype(bool), name, words, "", "")

    assert inputs("ppv", CATALOGUE["ppv"].words).short == "PPV"
    assert inputs("brier", CATALOGUE["brier"].words).short == "Brier score"
    assert inputs("loss cost", "mean cost").short == "mean cost"


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_each_metric_stays_in_its_range_and_reads_only_its_inputs(name: str) -> None:
    rng = np.random.default_rng(0)
    outcome = rng.integers(0, 2, 50)
    recommendation = rng.integers(0, 2, 50)
    probability = rng.random(50)
    column = rng.integers(0, 2, 50).astype(float)
    metric = CATALOGUE[name]
    L, population = metric_values(
        name,
        outcome if "outcome" in metric.inputs else None,
        recommendation if "recommendation" in metric.inputs else None,
        probability if {"probability", "score"} & set(metric.inputs) else None,
        column if "column" in metric.inputs else None,
    )
    assert population.any()
    if metric.range is not None:
        lo, hi = metric.range
        assert np.all((L[population] >= lo) & (L[population] <= hi))


def test_roles_of_a_metric_scan_follow_the_catalogue() -> None:
    def spec(**fields: object) -> CertifySpec:
        base = {"id": "c", "type": "certify", "groups": {"attributes": ["a"]}}
        return CertifySpec.model_validate({**base, **fields})

    assert needs(spec(metric="fpr")) == ("outcome", "recommendation")
    assert needs(spec(metric="brier")) == ("outcome", "probability")
    assert needs(spec(metric="squared_error")) == ("outcome", "score")
    assert needs(spec(metric="coverage", column="covered")) == ()
    assert needs(spec(loss="cost")) == ()
