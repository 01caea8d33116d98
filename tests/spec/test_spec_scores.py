"""Spec keys of the scoring functions: `score`, `alpha`, `outcome_type`, `variance_column`,
`class_probabilities`, `levels`. Every mistake is a located SpecError naming the field."""

from __future__ import annotations

import pytest

from fairscan.api import load_spec_from_text
from fairscan.errors import Issue, SpecError

HEAD = """\
version: 1
name: t
data: {path: x.csv}
columns: {outcome: y, prediction: p, recommendation: r}
attributes: [a]
scans:
"""


def _only_issue(scan: str) -> Issue:
    with pytest.raises(SpecError) as info:
        load_spec_from_text(HEAD + f"  - {scan}\n", "s.audit.yaml")
    issues = info.value.issues
    assert len(issues) == 1, [i.render() for i in issues]
    assert issues[0].line == 7  # located at the scan's line
    return issues[0]


@pytest.mark.parametrize(
    "scan",
    [
        "{id: s, type: fpr_scan, score: berk_jones, alpha: 0.3}",
        "{id: s, type: tpr_scan, score: berk_jones, alpha: [0.01, 0.05, 0.1]}",
        "{id: s, type: bias_scan, outcome: c, prediction: m, outcome_type: continuous, "
        "score: gaussian, direction: positive}",
        "{id: s, type: bias_scan, outcome: c, outcome_type: continuous, score: gaussian, "
        "variance_column: v}",
        "{id: s, type: bias_scan, outcome: n, prediction: e, outcome_type: count, score: poisson}",
        "{id: s, type: bias_scan, outcome: g, outcome_type: ordinal, score: poisson, "
        "levels: [low, mid, high]}",
        "{id: s, type: bias_scan, outcome: g, outcome_type: nominal, "
        "class_probabilities: {A: p_A, B: p_B, C: p_C}}",
        "{id: s, type: bias_scan, outcome: g, outcome_type: nominal}",
        "{id: s, type: bias_scan, score: berk_jones, alpha: 0.2}",
    ],
)
def test_the_issue_examples_are_valid(scan: str) -> None:
    loaded = load_spec_from_text(HEAD + f"  - {scan}\n", "s.audit.yaml")
    assert loaded.spec.scans[0].id == "s"


def test_defaults_are_the_binary_bernoulli_scan() -> None:
    loaded = load_spec_from_text(HEAD + "  - {id: s, type: bias_scan}\n", "s.audit.yaml")
    scan = loaded.spec.scans[0]
    assert (scan.score, scan.outcome_type, scan.alpha) == ("bernoulli", "binary", None)


@pytest.mark.parametrize(
    ("scan", "field", "message"),
    [
        ("{id: s, type: fpr_scan, score: gaussian}", "scans[0].score", "bias_scan only"),
        ("{id: s, type: tpr_scan, score: poisson}", "scans[0].score", "bias_scan only"),
        ("{id: s, type: fpr_scan, score: berk_jones}", "scans[0].score", "needs `alpha`"),
        (
            "{id: s, type: fpr_scan, score: berk_jones, alpha: 0}",
            "scans[0].alpha",
            "between 0 and 1",
        ),
        (
            "{id: s, type: fpr_scan, score: berk_jones, alpha: 1.5}",
            "scans[0].alpha",
            "between 0 and 1",
        ),
        (
            "{id: s, type: fpr_scan, score: berk_jones, alpha: [0.1, 1]}",
            "scans[0].alpha[1]",
            "between 0 and 1",
        ),
        ("{id: s, type: fpr_scan, score: berk_jones, alpha: []}", "scans[0].alpha", "empty"),
        (
            "{id: s, type: fpr_scan, score: berk_jones, alpha: [0.1, 0.1]}",
            "scans[0].alpha",
            "repeats",
        ),
        ("{id: s, type: fpr_scan, alpha: 0.1}", "scans[0].alpha", "Berk-Jones level"),
        (
            "{id: s, type: bias_scan, outcome_type: continuous}",
            "scans[0].score",
            "does not fit outcome_type continuous",
        ),
        (
            "{id: s, type: bias_scan, outcome_type: count, score: gaussian}",
            "scans[0].score",
            "does not fit outcome_type count",
        ),
        (
            "{id: s, type: bias_scan, score: poisson}",
            "scans[0].score",
            "does not fit outcome_type binary",
        ),
        (
            "{id: s, type: bias_scan, variance_column: v}",
            "scans[0].variance_column",
            "only used with score gaussian",
        ),
        (
            "{id: s, type: bias_scan, class_probabilities: {A: a, B: b}}",
            "scans[0].class_probabilities",
            "only used with outcome_type nominal",
        ),
        (
            "{id: s, type: bias_scan, outcome_type: nominal, prediction: p}",
            "scans[0].prediction",
            "one predicted probability per class",
        ),
        (
            "{id: s, type: bias_scan, outcome_type: count, score: poisson, positive: 2}",
            "scans[0].positive",
            "only used with outcome_type binary",
        ),
        (
            "{id: s, type: bias_scan, outcome_type: ordinal, score: poisson, levels: [a, a]}",
            "scans[0].levels",
            "repeats",
        ),
        ("{id: s, type: bias_scan, outcome_type: text}", "scans[0].outcome_type", "binary"),
    ],
)
def test_mistakes_name_the_field(scan: str, field: str, message: str) -> None:
    issue = _only_issue(scan)
    assert issue.field == field, issue.render()
    assert message in issue.message, issue.render()
