"""Findings say what the data show (issue 34): direction words from the estimate, not from the
scan's spec, and p-values that are never printed as 0."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.special import logsumexp
from scipy.stats import binom

import fairscan
from fairscan.cli.console import findings_text
from fairscan.cli.github import finding_annotations
from fairscan.engine.fixed import SMALLEST_P, log_binomial_tail
from fairscan.report.display import summary_text
from fairscan.report.html import render_html
from fairscan.report.junit import render_junit
from fairscan.report.markdown import render_markdown
from fairscan.report.sarif import render_sarif
from fairscan.report.text import fmt_p, p_equals

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
CLAIMS = ROOT / "sample_data" / "claims.csv"
INJECTED = {"ethnicity": "C", "age_group": "18-24"}  # scores inflated: over-estimated


def _given_bias(direction: str, **scan):
    return fairscan.audit(
        pl.read_csv(CREDIT),
        outcome="default",
        prediction="score",
        attributes=["ethnicity", "age_group"],
        scans=[
            {"id": "b", "type": "bias_scan", "direction": direction, "subgroups": [INJECTED]} | scan
        ],
        significance={"replicates": 19, "seed": 0},
    )


@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_given_subgroup_sentence_says_what_the_data_show(direction):
    (finding,) = _given_bias(direction).scans[0].findings
    # sample_data/README.md: 43% observed vs 60% predicted, whatever the scan looks for
    assert finding.effect.inside == pytest.approx(0.4334, abs=1e-3)
    assert finding.effect.expected == pytest.approx(0.6027, abs=1e-3)
    assert "probabilities are over-estimated there" in finding.description
    assert "under-estimated" not in finding.description


def test_without_prediction_the_comparison_word_follows_the_rates():
    report = fairscan.audit(
        pl.read_csv(CREDIT),
        outcome="default",
        attributes=["employment"],
        scans=[
            {
                "id": "b",
                "type": "bias_scan",
                "direction": "negative",  # looks for less often; employed default less, ...
                "subgroups": [{"employment": "unemployed"}],  # ... unemployed more often
            }
        ],
        significance={"replicates": 19, "seed": 0},
    )
    (finding,) = report.scans[0].findings
    assert finding.effect.inside > finding.effect.expected
    assert "more often than the overall rate" in finding.description


def test_gaussian_sentence_says_what_the_data_show():
    # claims.csv: the model under-predicts motorbike 18-24 costs by 200 (sample_data/README.md)
    report = fairscan.audit(
        pl.read_csv(CLAIMS),
        outcome="claim_cost",
        prediction="predicted_cost",
        attributes=["vehicle", "age_group"],
        scans=[
            {
                "id": "cost",
                "type": "bias_scan",
                "outcome_type": "continuous",
                "score": "gaussian",
                "direction": "negative",
                "subgroups": [{"vehicle": "motorbike", "age_group": "18-24"}],
            }
        ],
        significance={"replicates": 19, "seed": 0},
    )
    (finding,) = report.scans[0].findings
    assert "the model under-predicts claim_cost there" in finding.description


def test_berk_jones_side_follows_the_rate_not_the_direction():
    (finding,) = _given_bias("negative", score="berk_jones", alpha=0.05).scans[0].findings
    assert "43% of cases, above the Berk-Jones level alpha = 0.05" in finding.description


# --- p-values below any float ------------------------------------------------------------------


def _extreme_report():
    """3000 true negatives of group x all flagged, none of y's: the exact binomial tail of the
    given subgroup x is 0.5^3000 = 10^-903.09, far below the smallest float."""
    n = 3000
    frame = pl.DataFrame(
        {
            "g": ["x"] * n + ["y"] * (n + 10),
            "y": [0] * (2 * n) + [1] * 10,
            "rec": [1] * n + [0] * n + [1] * 10,
        }
    )
    return fairscan.audit(
        frame,
        outcome="y",
        recommendation="rec",
        attributes=["g"],
        scans=[
            {
                "id": "bj",
                "type": "fpr_scan",
                "score": "berk_jones",
                "alpha": 0.05,
                "subgroups": [{"g": "x"}],
            }
        ],
        significance={"replicates": 19, "seed": 1},
    )


def test_an_underflowing_exact_p_value_is_never_zero_nor_printed_as_zero():
    report = _extreme_report()
    (finding,) = report.scans[0].findings
    given = finding.detail["given_subgroup"]
    assert given["test"] == "exact binomial"
    assert given["log10_p_value"] == pytest.approx(3000 * math.log10(0.5), rel=1e-12)
    assert finding.p_value == SMALLEST_P > 0.0
    assert finding.significant is True
    texts = {
        "sentence": finding.description,
        "markdown": render_markdown(report).replace("&lt;", "<").replace("&#60;", "<"),
        "summary": summary_text(report),
        "junit": render_junit(report).replace("&lt;", "<"),
        "sarif": render_sarif(report),
        "html": render_html(report).replace("&lt;", "<"),
        "annotation": "\n".join(finding_annotations(report, [None])),
        "console": "\n".join(t.plain for t in findings_text(report)),
    }
    for where, text in texts.items():
        assert "p < 1e-300" in text or "| < 1e-300 |" in text, where
        assert "p = 0" not in text and "0.0e+00" not in text, where


def test_p_value_text_has_one_floor():
    assert fmt_p(0.0) == "< 1e-300" and fmt_p(1e-320) == "< 1e-300"
    assert p_equals(0.0) == "p < 1e-300"
    assert p_equals(1e-301, name="adjusted p") == "adjusted p < 1e-300"
    assert p_equals(2.5e-7) == "p = 2.5e-07" and p_equals(0.0123) == "p = 0.0123"
    assert p_equals(0.0008838, precise=True) == "p = 0.0008838"
    assert p_equals(None, "untested") == "untested"


@pytest.mark.parametrize(
    ("c", "n", "p", "upper"),
    [(999, 1000, 0.3, True), (1000, 1000, 0.3, True), (0, 5000, 0.5, False),
     (100, 1000, 0.5, False), (4000, 4000, 0.01, True), (700, 1000, 0.3, True),
     (60, 100, 0.3, True)],
)  # fmt: skip
def test_log_binomial_tail_is_the_full_sum_in_logs(c, n, p, upper):
    k = np.arange(c, n + 1) if upper else np.arange(0, c + 1)
    expected = float(logsumexp(binom.logpmf(k, n, p)))
    assert log_binomial_tail(c, n, p, upper=upper) == pytest.approx(expected, rel=1e-12)
