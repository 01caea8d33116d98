"""Given subgroups (`subgroups:` on fpr/tpr/bias scans, issue 26): no search, one test each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

import fairscan
from fairscan.data.subgroups import resolve_subgroup, resolve_subgroups
from fairscan.data.table import EncodedAttribute
from fairscan.errors import ScanError

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
AIF360 = Path(__file__).parent / "data" / "aif360_given_scores.json"

ATTRS = (
    EncodedAttribute("sex", ("Female", "Male")),
    EncodedAttribute("race", ("A", "B", "C")),
    EncodedAttribute("n", ("0", "1", "2", "3"), ordered=True),
    EncodedAttribute(
        "age", ("[18, 25)", "[25, 45)", "[45, 90]"), edges=(18, 25, 45, 90), ordered=True
    ),
)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("race = 'A' and sex = 'Male'", {"sex": ["Male"], "race": ["A"]}),
        ({"race": ["B", "A"], "sex": "Female"}, {"sex": ["Female"], "race": ["A", "B"]}),
        ("race in ('A', 'C') and race != 'C'", {"race": ["A"]}),
        ("race not in ('A')", {"race": ["B", "C"]}),
        ("n <= 1", {"n": ["0", "1"]}),
        ("1 < n", {"n": ["2", "3"]}),
        ({"n": 2}, {"n": ["2"]}),
        ("age >= 25", {"age": ["[25, 45)", "[45, 90]"]}),
        ("age < 25 and sex = 'Male'", {"sex": ["Male"], "age": ["[18, 25)"]}),
        ("age between 18 and 45", {"age": ["[18, 25)", "[25, 45)"]}),
        ("age = '[45, 90]'", {"age": ["[45, 90]"]}),
        ("race in ('A', 'B', 'C') and sex = 'Male'", {"sex": ["Male"]}),  # all values: free
    ],
)
def test_resolve_subgroup(entry, expected):
    got = resolve_subgroup(entry, ATTRS, "subgroups[0]")
    assert got == expected
    assert list(got) == [a.name for a in ATTRS if a.name in got]  # attribute order


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("colour = 'red'", "'colour' is not a scan attribute"),
        ({"race": "Z"}, "'Z' is not a value of race"),
        ("race = 'A' or sex = 'Male'", "conjunction (AND)"),
        ("age < 30", "30 is not a bin edge"),
        ("race < 2", "race has no order"),
        ("race = 'A' and race = 'B'", "leave no value of it"),
        ("race = ", "at position"),
    ],
)
def test_bad_subgroups_name_the_field(entry, message):
    with pytest.raises(ScanError) as caught:
        resolve_subgroups([{"sex": "Male"}, entry], ATTRS)
    issue = caught.value.issues[0]
    assert issue.field == "subgroups[1]"
    assert message in issue.message


@pytest.fixture(scope="module")
def credit():
    return pl.read_csv(CREDIT)


def _audit(credit, subgroups, **scan):
    return fairscan.audit(
        credit,
        outcome="default",
        prediction="score",
        recommendation="high_risk",
        attributes=["sex", "ethnicity", "age_group", "region"],
        scans=[{"id": "fpr", "type": "fpr_scan", "subgroups": subgroups, **scan}],
        significance={"replicates": 99, "seed": 1},
    )


def test_fpr_given_subgroups_through_the_api(credit):
    report = _audit(
        credit, ["ethnicity = 'C' and age_group = '18-24'", {"sex": "Female"}], penalty=1
    )
    scan = report.scans[0]
    assert scan.parameters["mode"] == "given subgroups"
    assert scan.parameters["subgroups"][1] == {"sex": "Female"}
    injected, female = scan.findings
    assert injected.subgroup == {"ethnicity": ["C"], "age_group": ["18-24"]}
    # independent: the exact binomial tail of the subgroup's flagged count at the overall FPR
    neg = credit.filter(pl.col("default") == 0)
    fpr = neg["high_risk"].mean()
    inside = neg.filter((pl.col("ethnicity") == "C") & (pl.col("age_group") == "18-24"))
    n, c = inside.height, int(inside["high_risk"].sum())
    assert injected.size == n
    assert injected.p_value == pytest.approx(binom.sf(c - 1, n, fpr), rel=1e-9)
    assert injected.significant is True
    assert injected.effect.inside == pytest.approx(c / n)
    outside = neg.height - n
    assert injected.effect.reference == pytest.approx((neg["high_risk"].sum() - c) / outside)
    assert injected.effect.reference_count == outside
    assert injected.detail["given_subgroup"]["test"] == "exact binomial"
    assert "no search correction" in injected.description
    assert female.subgroup == {"sex": ["Female"]}
    assert scan.status == "significant"
    assert report.verdict.exit_code == 1


def test_bias_scan_given_subgroup_uses_parametric_draws(credit):
    report = fairscan.audit(
        credit,
        outcome="default",
        prediction="score",
        attributes=["sex", "ethnicity", "age_group"],
        scans=[
            {
                "id": "cal",
                "type": "bias_scan",
                "direction": "negative",
                "subgroups": [{"ethnicity": "C", "age_group": "18-24"}],
            }
        ],
        significance={"replicates": 199, "seed": 3},
    )
    (finding,) = report.scans[0].findings
    assert finding.detail["given_subgroup"]["test"] == "parametric draws"
    assert finding.p_value == pytest.approx(1 / 200)  # +0.15 inflated scores: never reached
    assert "critical_value" not in report.scans[0].detail


def test_searching_scans_report_no_subgroups_key(credit):
    report = _audit(credit, None)
    assert "subgroups" not in report.scans[0].parameters
    assert report.scans[0].parameters.get("mode") is None


def test_unknown_value_is_a_scan_error_naming_the_field(credit):
    report = _audit(credit, [{"sex": "Male"}, "ethnicity = 'Q'"])
    scan = report.scans[0]
    assert scan.status == "error"
    assert "scans[0].subgroups[1]" in scan.error and "'Q' is not a value of ethnicity" in scan.error
    assert report.verdict.exit_code == 2


def test_nominal_outcome_without_positive_is_refused():
    from fairscan.errors import FairscanError

    data = pl.read_csv(ROOT / "sample_data" / "grades.csv")
    try:
        report = fairscan.audit(
            data,
            outcome="grade",
            attributes=["school", "sex"],
            scans=[
                {
                    "id": "g",
                    "type": "bias_scan",
                    "outcome_type": "nominal",
                    "class_probabilities": {"A": "p_A", "B": "p_B", "C": "p_C"},
                    "subgroups": [{"sex": "F"}],
                }
            ],
            significance={"replicates": 0},
        )
    except FairscanError as error:  # a spec-level refusal is fine too
        assert "subgroups" in str(error)
        return
    assert report.scans[0].status == "error"
    assert "positive" in report.scans[0].error


def test_empty_subgroup_is_a_spec_error(credit):
    from fairscan.errors import SpecError

    with pytest.raises(SpecError, match="empty"):
        _audit(credit, [{}])


def test_parity_with_aif360_mdss_bias_score(compas_csv):
    """The statistic (penalty 0) of a given subgroup equals AIF360 0.6.1's mdss_bias_score
    (benchmarks/aif360_baseline.py --scan given; AIF360 rounds to 4 decimals)."""
    cases = json.loads(AIF360.read_text())["scores"]
    attributes = ["sex", "race", "age_group", "c_charge_degree", "priors"]
    data = pl.read_csv(compas_csv, schema_overrides=dict.fromkeys(attributes, pl.String))
    for case in cases:
        if case["population"] == "fpr":
            scan = {"id": "s", "type": "fpr_scan"}
            if case["direction"] == "negative":  # the FPR-Scan only looks upwards
                neg = data.filter(pl.col("two_year_recid") == 0)
                scan = {"id": "s", "type": "bias_scan", "direction": "negative"}
                report = fairscan.audit(
                    neg.with_columns(p=pl.lit(neg["high_risk"].mean())),
                    outcome="high_risk",
                    prediction="p",
                    attributes=attributes,
                    scans=[{**scan, "subgroups": [case["subgroup"]]}],
                    significance={"replicates": 0},
                )
                got = report.scans[0].findings[0].statistic.value
                assert got == pytest.approx(case["aif360_score"], abs=6e-5), case
                continue
            columns = {"outcome": "two_year_recid", "recommendation": "high_risk"}
        else:
            scan = {"id": "s", "type": "bias_scan", "direction": case["direction"]}
            columns = {"outcome": "two_year_recid", "prediction": "prob_decile"}
        report = fairscan.audit(
            data,
            **columns,
            attributes=attributes,
            scans=[{**scan, "subgroups": [case["subgroup"]]}],
            significance={"replicates": 0},
        )
        got = report.scans[0].findings[0].statistic.value
        assert got == pytest.approx(case["aif360_score"], abs=6e-5), case
    assert np.isfinite(got)
