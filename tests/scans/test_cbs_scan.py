"""CBS scan type end to end through the library API (spec keys, errors, statuses, COMPAS)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, prepare_audit, run_prepared
from fairscan.errors import FairscanError, SpecError
from fairscan.report.markdown import render_markdown

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
    assert long.findings[0].score == short.findings[0].score
    # cell pair 5/6: same S*, same F, q -> 1/q
    assert tnr.findings[0].subgroup == long.findings[0].subgroup
    assert tnr.findings[0].llr == pytest.approx(long.findings[0].llr, rel=1e-7)
    assert tnr.findings[0].q == pytest.approx(1 / long.findings[0].q, rel=1e-6)
    assert long.cbs.direction == "positive" and long.cbs.likelihood == "bernoulli"
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
    assert bnc.cbs.likelihood == "gaussian"
    f = bnc.findings[0]
    assert f.cbs.parameter == "mu" and f.cbs.value > 0
    assert f.subgroup == {"h": ["y"]}
    assert f.p_value == pytest.approx(1 / 20)
    run = bnc.cbs.runs[0]
    assert run.sigma > 0 and run.propensity_calibration.brier >= 0
    assert run.outcome_calibration.bins
    # each_value: one run per value, Bonferroni over runs
    assert [r.protected for r in each.cbs.runs] == ["g = a", "g = b"]
    assert all(r.alpha == pytest.approx(0.05 / 2) for r in each.cbs.runs)
    text = render_markdown(report)
    assert "CBS cell" in text and "Brier" in text


def test_constant_event_is_not_auditable(tmp_path):
    report = _run(
        tmp_path,
        "  - {id: fpr, type: cbs, protected: {column: g, value: a}, metric: fpr, restarts: 10}",
        replicates=9,
        constant_rec=True,
    )
    (scan,) = report.scans
    assert scan.status == "not_auditable"
    assert scan.findings == []
    assert "constant" in scan.cbs.runs[0].reason
    assert scan.null_distribution is None
    assert "not auditable" in render_markdown(report)


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
    ],
)
def test_bad_specs_are_rejected(tmp_path, scan, needle):
    with pytest.raises((SpecError, FairscanError)) as info:
        _run(tmp_path, f"  - {scan}")
    assert needle in str(info.value) or any(
        needle in str(i) for i in getattr(info.value, "issues", [])
    )


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
    assert fpr.cbs.protected == "race = African-American"
    assert fpr.q > 1 and fpr.observed_rate > fpr.expected_rate
    assert by_id["sep-pred-fpe"].cbs.likelihood == "gaussian"
    for sid in ("suf-pred-cal", "suf-rec-ppv"):
        f = by_id[sid].findings[0]
        assert f.q < 1 and f.observed_rate < f.expected_rate
    again = run_prepared(prepare_audit(path), RunOptions(write=False)).report
    assert [s.findings[0].score for s in again.scans] == [s.findings[0].score for s in report.scans]


@pytest.mark.parametrize(
    "extra",
    [
        "models: {propensity: gradient_boosting, outcome: gradient_boosting}",
        "model_attributes: [h, k, num]",  # a numeric model attribute next to categorical ones
        "models: {propensity: logistic, outcome: gradient_boosting}, model_attributes: [h, k]",
    ],
)
def test_model_options_recover_the_injected_subgroup(tmp_path, extra):
    report = _run(
        tmp_path,
        f"  - {{id: s, type: cbs, protected: {{column: g, value: a}}, metric: fpr, restarts: 30, {extra}}}",
    )
    scan = report.scans[0]
    assert scan.findings[0].subgroup == {"h": ["y"]}
    assert 0.0 <= scan.findings[0].expected_rate <= 1.0
    assert scan.findings[0].observed_rate > scan.findings[0].expected_rate


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
    assert finding.expected_rate == pytest.approx(0.2)
    assert finding.expected_count == pytest.approx(0.2 * finding.size)
