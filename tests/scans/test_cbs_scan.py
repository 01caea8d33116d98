"""CBS scan type end to end through the library API (spec keys, errors, statuses, COMPAS)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, prepare_audit, run_prepared
from fairscan.errors import FairscanError, SpecError
from fairscan.report.html import render_html
from fairscan.report.markdown import render_markdown
from fairscan.scans import SCAN_TYPES, render_hooks
from fairscan.scans.cbs import CbsFindingDetail, CbsScanDetail

SPEC = """
version: 1
name: cbs-test
data: {{path: {path}}}
columns: {{outcome: y, prediction: p, recommendation: r}}
attributes: [g, h, k]
scans:
{scans}
significance: {{replicates: {replicates}, seed: 0, workers: 1}}
"""


def _table(tmp_path: Path, constant_rec: bool = False) -> Path:
    rng = np.random.default_rng(0)
    n = 800
    g = rng.choice(["a", "b"], n)
    h = rng.choice(["x", "y", "z"], n)
    k = rng.choice(["u", "v"], n)
    lin = 0.8 * (h == "x") - 0.5 * (k == "u")
    y = (rng.random(n) < 1 / (1 + np.exp(-lin))).astype(int)
    p = 1 / (1 + np.exp(-(lin + rng.normal(0, 0.5, n) + 1.2 * ((g == "a") & (h == "y")))))
    r = np.zeros(n, int) if constant_rec else (p >= 0.5).astype(int)
    path = tmp_path / "t.csv"
    lines = ["g,h,k,y,p,r,num"] + [
        f"{g[i]},{h[i]},{k[i]},{y[i]},{p[i]:.6f},{r[i]},{rng.normal():.4f}" for i in range(n)
    ]
    path.write_text("\n".join(lines))
    return path


def _cbs(scan) -> CbsScanDetail:
    return CbsScanDetail.model_validate(scan.detail["cbs"])


def _fcbs(finding) -> CbsFindingDetail:
    return CbsFindingDetail.model_validate(finding.detail["cbs"])


def _run(tmp_path: Path, scans: str, replicates: int = 0, constant_rec: bool = False):
    data = _table(tmp_path, constant_rec)
    spec = tmp_path / "x.audit.yaml"
    spec.write_text(SPEC.format(path=data, scans=scans, replicates=replicates))
    return run_prepared(prepare_audit(spec), RunOptions(write=False)).report


def test_spec_keys_as_written_and_metric_shorthand_agree(tmp_path):
    report = _run(
        tmp_path,
        "  - id: long\n    type: cbs\n    protected: {column: g, value: a}\n"
        "    fairness: separation\n    on: recommendations\n    condition: 0\n    event: 1\n"
        "    direction: positive\n    penalty: 1\n    restarts: 50\n"
        "  - {id: short, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 50}\n"
        "  - {id: tnr, type: cbs, protected: {column: g, value: a}, metric: tnr, direction: negative, restarts: 50}",
    )
    long, short, tnr = report.scans
    assert long.findings and long.findings[0].subgroup == short.findings[0].subgroup
    assert long.findings[0].statistic.value == short.findings[0].statistic.value
    # cell pair 5/6: same S*, same F, q -> 1/q
    assert tnr.findings[0].subgroup == long.findings[0].subgroup
    assert tnr.findings[0].detail["llr"] == pytest.approx(long.findings[0].detail["llr"], rel=1e-7)
    assert tnr.findings[0].detail["q"] == pytest.approx(1 / long.findings[0].detail["q"], rel=1e-6)
    assert _cbs(long).direction == "positive" and _cbs(long).likelihood == "bernoulli"
    # the effect: the Table 1 metric in S* vs what comparable non-protected records imply
    f = long.findings[0]
    assert f.statistic.name == "penalised_score"
    assert f.effect.metric == "rate of r = 1 given y = 0"
    assert f.effect.reference_name == "comparable non-protected records (model)"
    assert f.effect.inside == _fcbs(f).protected_metric > f.effect.reference == f.effect.expected
    assert f.size == f.effect.inside_count == _fcbs(f).protected_rows
    assert f.adjusted_p_value is None and f.p_value is None and f.significant is None
    # g (the protected column) is not a scan attribute of the CBS scan
    assert "g" not in long.findings[0].subgroup
    assert long.findings[0].subgroup == {"h": ["y"]}
    assert long.status == "untested"


def test_gaussian_scan_report_and_permutation_test(tmp_path):
    report = _run(
        tmp_path,
        "  - {id: bnc, type: cbs, protected: {column: g, value: a}, metric: bnc, restarts: 50,"
        " model_attributes: [h, k, num]}\n"
        "  - {id: each, type: cbs, protected: {column: g, each_value: true}, metric: fpr, restarts: 20}",
        replicates=19,
    )
    bnc, each = report.scans
    assert _cbs(bnc).likelihood == "gaussian"
    f = bnc.findings[0]
    assert _fcbs(f).parameter == "mu" and _fcbs(f).value > 0
    assert f.subgroup == {"h": ["y"]}
    assert f.p_value == pytest.approx(1 / 20)
    assert f.significant is True and f.adjusted_p_value is None  # a single run
    run = _cbs(bnc).runs[0]
    assert run.sigma > 0 and run.propensity_calibration.brier >= 0
    assert run.outcome_calibration.bins
    assert bnc.null_distribution == run.null
    # each_value: one run per value, Bonferroni over runs
    runs = _cbs(each).runs
    assert [r.protected for r in runs] == ["g = a", "g = b"]
    assert all(r.alpha == pytest.approx(0.05 / 2) for r in runs)
    assert each.null_distribution is None  # one null per run, in the detail
    assert [_fcbs(f).protected for f in each.findings] == ["g = a", "g = b"]  # by p-value
    for finding in each.findings:
        assert finding.adjusted_p_value == min(1.0, 2 * finding.p_value)
        assert finding.significant is (finding.p_value <= 0.05 / 2)
    # p = 1/20 is significant at alpha 0.05 but not at alpha / 2: 19 replicates cannot reach
    # alpha / 2, so the scan is untested (issue 34), never a pass
    assert each.findings[0].p_value == pytest.approx(1 / 20)
    assert each.findings[0].significant is False and each.status == "untested"
    assert each.untested_reason is not None and "2 protected classes" in each.untested_reason
    assert report.verdict.significant_findings == 1
    hooks = render_hooks()
    text = render_markdown(report, hooks)
    assert "CBS cell" in text and "Brier" in text
    assert "the same subgroup among non-protected rows" in text
    html = render_html(report, hooks)
    assert html.count("Permutation null of the run for g = ") == 2  # each_value: per-run nulls
    assert "g = b" in html


def test_constant_event_is_not_auditable(tmp_path):
    report = _run(
        tmp_path,
        "  - {id: fpr, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 10}\n"
        "  - {id: each, type: cbs, protected: {column: g, each_value: true}, metric: fpr, restarts: 10}",
        replicates=9,
        constant_rec=True,
    )
    scan, each = report.scans
    assert each.status == "not_auditable" and each.findings == []
    assert [r.status for r in _cbs(each).runs] == ["not_auditable", "not_auditable"]
    assert scan.status == "not_auditable"
    assert scan.findings == []
    assert "constant" in _cbs(scan).runs[0].reason
    assert scan.null_distribution is None
    assert "not auditable" in render_markdown(report, render_hooks())


def test_missing_protected_value_names_the_field(tmp_path):
    report = _run(
        tmp_path,
        "  - {id: fpr, type: cbs, protected: {column: g, value: nope}, metric: fpr, restarts: 10}",
    )
    (scan,) = report.scans
    assert scan.status == "error"
    assert "nope" in scan.error and "protected.value" in scan.error


@pytest.mark.parametrize(
    ("scan", "needle"),
    [
        (
            "{id: s, type: cbs, protected: {column: g, value: a}, metric: fpr, condition: 1}",
            "implies",
        ),
        ("{id: s, type: cbs, protected: {column: g, value: a}, metric: cal, event: 0}", "implies"),
        ("{id: s, type: cbs, protected: {column: g, value: a}, fairness: separation}", "metric"),
        ("{id: s, type: cbs, protected: {column: g}, metric: fpr}", "exactly one"),
        (
            "{id: s, type: cbs, protected: {column: g, value: a}, fairness: sufficiency, on: predictions, condition: 1}",
            "never value-conditional",
        ),
        (
            "{id: s, type: cbs, protected: {column: g, value: a}, metric: fpr, sigma: sd}",
            "Gaussian",
        ),
        ("{id: s, type: cbs, protected: {column: g, value: a}, metric: bnc, sigma: 0}", "sigma"),
        ("{id: s, type: cbs, protected: {column: g, value: a}, metric: bnc, sigma: sdev}", "sigma"),
        (
            "{id: s, type: cbs, protected: {column: g, value: a}, metric: fpr, models: {C: 2}}",
            "regularization: l2",
        ),
        (
            "{id: s, type: cbs, protected: {column: g, value: a}, metric: fpr, models: {regularization: l2, C: 0}}",
            "C",
        ),
    ],
)
def test_bad_specs_are_rejected(tmp_path, scan, needle):
    with pytest.raises((SpecError, FairscanError)) as info:
        _run(tmp_path, f"  - {scan}")
    assert needle in str(info.value) or any(
        needle in str(i) for i in getattr(info.value, "issues", [])
    )


@pytest.mark.slow
@pytest.mark.shared_data
def test_compas_case_study_scans(compas_csv, tmp_path):
    spec = (Path(__file__).resolve().parents[2] / "audits" / "compas-cbs.audit.yaml").read_text()
    spec = spec.replace("../build/compas.csv", str(compas_csv)).replace(
        "replicates: 999", "replicates: 0"
    )
    path = tmp_path / "c.audit.yaml"
    path.write_text(spec)
    report = run_prepared(prepare_audit(path), RunOptions(write=False)).report
    by_id = {s.id: s for s in report.scans}
    assert set(by_id) == {"sep-pred-fpe", "sep-rec-fpr", "suf-pred-cal", "suf-rec-ppv"}
    fpr = by_id["sep-rec-fpr"].findings[0]
    assert _fcbs(fpr).protected == "race = African-American"
    assert fpr.detail["q"] > 1 and fpr.effect.inside > fpr.effect.expected
    assert _cbs(by_id["sep-pred-fpe"]).likelihood == "gaussian"
    for sid in ("suf-pred-cal", "suf-rec-ppv"):
        f = by_id[sid].findings[0]
        assert f.detail["q"] < 1 and f.effect.inside < f.effect.expected
    # the seeded scores with the paper's defaults (issue 10): sigma = 1 for the Gaussian scan,
    # unregularised logistic models; no separation here, so no ridge fallback
    assert [s.findings[0].statistic.value for s in report.scans] == pytest.approx(
        [42.458256678773445, 102.6072084825087, 2.2134606574365154, 0.3481332311326333],
        rel=1e-9,
    )
    assert _cbs(by_id["sep-pred-fpe"]).runs[0].sigma == 1.0
    assert _cbs(by_id["sep-pred-fpe"]).sigma_rule.startswith("fixed at 1 (the default")
    assert all(_cbs(s).regularization == "none" and not s.warnings for s in report.scans)
    again = run_prepared(prepare_audit(path), RunOptions(write=False)).report
    assert [s.findings[0].statistic.value for s in again.scans] == [
        s.findings[0].statistic.value for s in report.scans
    ]
    # the options restore the earlier defaults and their seeded scores exactly
    old = spec.replace(
        "    type: cbs\n", "    type: cbs\n    models: {regularization: l2, C: 1}\n"
    ).replace("    restarts: 500\n", "    restarts: 500\n    sigma: sd\n")
    path.write_text(old)
    before = run_prepared(prepare_audit(path), RunOptions(write=False)).report
    # fitted scores: the last digits follow the BLAS build's summation order (97.5262604301006
    # on one machine, 97.52626043010049 on another), so the same tolerance as the scores above
    assert [s.findings[0].statistic.value for s in before.scans] == pytest.approx(
        [97.52626043010049, 100.90677837823911, 2.265261199609759, 0.46309915919140865],
        rel=1e-9,
    )
    assert _cbs(before.scans[0]).runs[0].sigma == pytest.approx(0.6598584353950085)
    assert _cbs(before.scans[0]).sigma_rule.startswith("sd")


@pytest.mark.parametrize(
    "extra",
    [
        "models: {propensity: gradient_boosting, outcome: gradient_boosting}",
        "model_attributes: [h, k, num]",  # a numeric model attribute next to categorical ones
        "models: {propensity: logistic, outcome: gradient_boosting}, model_attributes: [h, k]",
    ],
)
@pytest.mark.slow
def test_model_options_recover_the_injected_subgroup(tmp_path, extra):
    report = _run(
        tmp_path,
        f"  - {{id: s, type: cbs, protected: {{column: g, value: a}}, metric: fpr, restarts: 30, {extra}}}",
    )
    scan = report.scans[0]
    assert scan.findings[0].subgroup == {"h": ["y"]}
    assert 0.0 <= scan.findings[0].effect.expected <= 1.0
    assert scan.findings[0].effect.inside > scan.findings[0].effect.expected


def test_supplied_expectations_column_is_used_as_is(tmp_path):
    data = _table(tmp_path)
    lines = data.read_text().splitlines()
    lines = [lines[0] + ",ihat"] + [line + ",0.2" for line in lines[1:]]
    data.write_text("\n".join(lines))
    spec = tmp_path / "e.audit.yaml"
    spec.write_text(
        SPEC.format(
            path=data,
            scans="  - {id: s, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 30, expectations: ihat}",
            replicates=0,
        )
    )
    scan = run_prepared(prepare_audit(spec), RunOptions(write=False)).report.scans[0]
    finding = scan.findings[0]
    # with I-hat = 0.2 for every row the expected rate of any subgroup is exactly 0.2
    assert finding.effect.expected == pytest.approx(0.2)
    assert finding.detail["expected_count"] == pytest.approx(0.2 * finding.size)
    assert finding.effect.reference_name == "the expectations column ihat"
    assert finding.effect.reference_count is None


def test_recommendation_follows_the_one_rule(tmp_path):
    """The recommendation column r is p >= 0.5: a scan-level threshold gives the same scan;
    on predictions the scan needs no recommendation at all."""
    report = _run(
        tmp_path,
        "  - {id: col, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 30}\n"
        "  - {id: thr, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 30,"
        " threshold: 0.5}",
    )
    col, thr = report.scans
    assert col.findings[0].subgroup == thr.findings[0].subgroup
    assert col.findings[0].statistic.value == thr.findings[0].statistic.value
    assert thr.findings[0].effect.metric == "rate of (p >= 0.5) = 1 given y = 0"
    entry = SCAN_TYPES["cbs"]
    base = {"id": "s", "type": "cbs", "protected": {"column": "g", "value": "a"}}
    needs = {
        m: entry.roles_for(entry.spec_model.model_validate({**base, "metric": m}))
        for m in ("fpr", "ppv", "bnc", "cal")
    }
    assert needs == {
        "fpr": {"outcome", "recommendation"},
        "ppv": {"outcome", "recommendation"},
        "bnc": {"outcome", "probability"},
        "cal": {"outcome", "probability"},
    }


def test_sigma_rule_and_model_options_are_explained_and_reported(tmp_path):
    """Issue 10: sigma defaults to 1 (or `sd`, or a number) and the logistic models default to
    unregularised; `audit explain cbs` documents both, the detail reports the rule used."""
    from fairscan.explain import explain

    text = " ".join(explain("cbs").split())
    for needle in (
        "sigma",
        "Default 1: the paper's reported scores",
        "`sd`: the sample SD (ddof 1) of Delta",
        "1/sigma^2",
        "models.regularization: one of: none, l2",
        "models.C: number > 0",
        "unregularised",
        "not auditable",
    ):
        assert needle in text
    scan = (
        "  - {{id: {id}, type: cbs, protected: {{column: g, value: a}}, metric: bnc, penalty: 0,"
        " restarts: 30, model_attributes: [h, k]{extra}}}"
    )
    report = _run(
        tmp_path,
        "\n".join(
            scan.format(id=i, extra=e)
            for i, e in (
                ("one", ""),
                ("two", ", sigma: 2"),
                ("sd", ", sigma: sd"),
                ("l2", ", models: {regularization: l2, C: 0.01}"),
            )
        ),
    )
    one, two, sd, l2 = report.scans
    # penalty 0: F scales as 1 / sigma^2 for every subgroup, so S* is the same
    assert one.findings[0].subgroup == two.findings[0].subgroup == sd.findings[0].subgroup
    assert one.findings[0].detail["llr"] == pytest.approx(4 * two.findings[0].detail["llr"])
    sigma_sd = _cbs(sd).runs[0].sigma
    assert 0 < sigma_sd < 1
    assert sd.findings[0].detail["llr"] == pytest.approx(
        one.findings[0].detail["llr"] / sigma_sd**2
    )
    assert [_cbs(s).runs[0].sigma for s in (one, two)] == [1.0, 2.0]
    assert _cbs(two).sigma_rule == "fixed at 2"
    assert _cbs(one).regularization == "none" and _cbs(l2).regularization == "l2"
    assert "unregularised logistic regression" in _cbs(one).expectations
    assert "logistic regression (L2, C = 0.01)" in _cbs(l2).expectations
    assert l2.findings[0].effect.expected != one.findings[0].effect.expected
    assert "gaussian score, sigma fixed at 2;" in render_markdown(report, render_hooks())
