"""Given subgroups of ijdi_scan, cbs, subroc and shift (issue 26) against independent figures:
each statistic recomputed another way, each p-value against a simulation of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import fairscan

ROOT = Path(__file__).resolve().parents[2]
INJECTED = {"ethnicity": "C", "age_group": "18-24"}
ATTRIBUTES = ["sex", "ethnicity", "age_group", "region"]


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(ROOT / "sample_data" / "credit.csv")


def _scan(credit: pl.DataFrame, replicates: int = 199, **scan: Any) -> Any:
    report = fairscan.audit(
        credit,
        outcome="default",
        prediction="score",
        recommendation="high_risk",
        attributes=ATTRIBUTES,
        scans=[{"id": "s", **scan}],
        significance={"replicates": replicates, "seed": 7},
    )
    (result,) = report.scans
    assert result.status != "error", result.error
    return result


def test_ijdi_with_lambda_0_scores_as_the_fpr_scan(credit: pl.DataFrame) -> None:
    """lambda = 0: every expectation is the overall FPR, so the IJDI score of a subgroup is the
    FPR-Scan's (n KL(c/n || FPR)); its redraw p-value is close to the exact binomial tail."""
    from scipy.stats import binom

    from fairscan.engine.sequential import StoppingRule

    ijdi = _scan(credit, type="ijdi_scan", **{"lambda": 0}, subgroups=[INJECTED])
    fpr = _scan(credit, type="fpr_scan", subgroups=[INJECTED])
    (a,), (b,) = ijdi.findings, fpr.findings
    assert a.statistic.value == pytest.approx(b.statistic.value, rel=1e-9)
    assert a.size == b.size and a.effect.inside == pytest.approx(b.effect.inside)
    assert "null redraw" in a.detail["given_subgroup"]["test"]
    neg = credit.filter(pl.col("default") == 0)
    inside = neg.filter((pl.col("ethnicity") == "C") & (pl.col("age_group") == "18-24"))
    tail = binom.sf(int(inside["high_risk"].sum()) - 1, inside.height, neg["high_risk"].mean())
    # never reached: the redraws stop at the sequential rule's fewest (issue 36), with its
    # smallest p-value (the FPR-Scan's given test is the exact tail itself)
    rule = StoppingRule(0.05, 199)
    assert tail < 1e-20 and a.detail["given_subgroup"]["exceed_count"] == 0
    assert a.p_value == rule.smallest_p_value() and b.p_value == pytest.approx(tail, rel=1e-6)
    assert a.detail["given_subgroup"]["replicates"] == rule.reject_after


def test_cbs_given_score_equals_the_search_score_of_the_same_subgroup(credit: pl.DataFrame):
    """The search's finding, given back as a subgroup, scores the same (same expectations)."""
    base = {
        "type": "cbs",
        "protected": {"column": "ethnicity", "value": "C"},
        "metric": "fpr",
        "direction": "positive",
        "penalty": 1,
        "restarts": 20,
    }
    searched = _scan(credit, replicates=0, **base).findings[0]
    given = _scan(credit, replicates=49, **base, subgroups=[searched.subgroup])
    (finding,) = given.findings
    assert finding.subgroup == searched.subgroup
    assert finding.statistic.value == pytest.approx(searched.statistic.value, rel=1e-9)
    assert finding.detail["cbs"]["protected"] == "ethnicity = C"
    assert finding.p_value == pytest.approx(1 / 50) and finding.significant is True


@pytest.mark.slow
def test_subroc_given_p_value_matches_random_subsets_drawn_independently(credit: pl.DataFrame):
    from sklearn.metrics import roc_auc_score

    scan = _scan(credit, type="subroc", subgroups=[{"region": "East"}], replicates=1)
    (finding,) = scan.findings
    y, score = credit["default"].to_numpy(), credit["score"].to_numpy()
    inside = (credit["region"] == "East").to_numpy()
    overall = roc_auc_score(y, score)
    assert finding.effect.inside == pytest.approx(roc_auc_score(y[inside], score[inside]))
    assert finding.statistic.value == pytest.approx(overall - finding.effect.inside)
    rng = np.random.default_rng(0)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    p_c, n_c = int(y[inside].sum()), int((1 - y[inside]).sum())
    draws = []
    for _ in range(2000):
        rows = np.r_[rng.choice(pos, p_c, replace=False), rng.choice(neg, n_c, replace=False)]
        draws.append(overall - roc_auc_score(y[rows], score[rows]))
    truth = float(np.mean(np.array(draws) >= finding.statistic.value))
    assert finding.p_value == pytest.approx(truth, abs=0.05)  # 1,000 subsets vs 2,000


def test_shift_given_gap_and_bootstrap_p_value(credit: pl.DataFrame) -> None:
    scan = _scan(
        credit,
        type="shift",
        metric="fpr",
        features=["income"],
        bootstrap=999,
        side="both",
        subgroups=[{"sex": "Female"}],
    )
    (finding,) = scan.findings
    neg = credit.filter(pl.col("default") == 0)
    female = neg.filter(pl.col("sex") == "Female")
    gap = female["high_risk"].mean() - neg["high_risk"].mean()
    assert finding.statistic.value == pytest.approx(gap, rel=1e-12)
    assert finding.effect.inside_count == female.height
    # independent: a normal test of the same gap (influence function of mean_S - mean)
    L = neg["high_risk"].to_numpy().astype(float)
    s = (neg["sex"] == "Female").to_numpy()
    share = s.mean()
    psi = s * (L - L[s].mean()) / share - (L - L.mean())
    z = gap / (psi.std() / np.sqrt(len(L)))
    from scipy.stats import norm

    assert finding.p_value == pytest.approx(2 * norm.sf(abs(z)), abs=0.05)


def test_cbs_subgroup_on_the_protected_column_names_the_field(credit: pl.DataFrame) -> None:
    report = fairscan.audit(
        credit,
        outcome="default",
        prediction="score",
        recommendation="high_risk",
        attributes=ATTRIBUTES,
        scans=[
            {
                "id": "s",
                "type": "cbs",
                "protected": {"column": "ethnicity", "value": "C"},
                "metric": "fpr",
                "subgroups": [{"sex": "Male"}, {"ethnicity": "C"}],
            }
        ],
        significance={"replicates": 0},
    )
    scan = report.scans[0]
    assert scan.status == "error"
    assert "subgroups[1]" in scan.error and "'ethnicity' is not a scan attribute" in scan.error
    assert report.verdict.exit_code == 2
