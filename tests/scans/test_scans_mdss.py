"""FPR-Scan, TPR-Scan and Bias Scan end to end through the library API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from brute_force import brute_force_scan

from fairscan.api import RunOptions, load_spec_from_text, prepare_audit, run_prepared

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "audits" / "sample.audit.yaml"


@pytest.fixture(scope="module")
def sample_report():
    prepared = prepare_audit(SAMPLE, RunOptions(replicates=19, workers=1))
    return run_prepared(prepared, RunOptions(write=False)).report


def test_sample_audit_recovers_the_injected_subgroup(sample_report):
    """sample_data/README.md: score inflation for ethnicity C aged 18-24."""
    injected = {"ethnicity": ["C"], "age_group": ["18-24"]}
    by_id = {scan.id: scan for scan in sample_report.scans}
    for scan_id in ("fpr", "tpr", "calibration"):
        finding = by_id[scan_id].findings[0]
        assert finding.subgroup == injected
        assert finding.significant is True
        assert finding.p_value == pytest.approx(1 / 20)
    fpr = by_id["fpr"].findings[0]
    assert fpr.effect.metric == "false positive rate"
    assert fpr.effect.inside > 0.6 and fpr.effect.reference < 0.12
    assert fpr.effect.reference_name == "the other true negatives"
    assert fpr.label == "ethnicity = C and age_group = 18-24"
    assert fpr.statistic.name == "penalised_score"
    assert "true negatives" in fpr.description and "71%" in fpr.description
    calibration = by_id["calibration"].findings[0]
    assert calibration.detail["q"] < 1 and calibration.effect.inside < calibration.effect.reference
    assert by_id["calibration"].detail["critical_value"]["profiles"] > 0


def test_finding_fields_are_consistent(sample_report):
    for scan in sample_report.scans:
        pop = scan.population
        for f in scan.findings:
            d = f.detail
            assert f.statistic.value == d["score"] == pytest.approx(d["llr"] - d["penalty_cost"])
            assert f.effect.inside == pytest.approx(d["observed_count"] / f.size)
            assert f.effect.expected == pytest.approx(d["expected_count"] / f.size)
            outside = (pop.observed_rate * pop.size - d["observed_count"]) / (pop.size - f.size)
            if f.effect.reference_name.startswith("the other"):
                assert f.effect.reference == pytest.approx(outside)
                assert f.effect.reference_count == pop.size - f.size
            assert d["null_quantile"] is not None
        assert len(scan.null_distribution.scores) == 19


def test_fpr_scan_matches_brute_force_on_sample_data():
    prepared = prepare_audit(SAMPLE, RunOptions(replicates=0))
    data = prepared.data
    roles = prepared.roles[0]
    assert roles.outcome is not None and roles.decision is not None
    rows = data.role(roles.outcome) == 0
    obs = data.role(roles.decision)[rows].astype(float)
    want = brute_force_scan(data.codes[rows], obs, float(obs.mean()), "positive", 1.0)
    report = run_prepared(prepared, RunOptions(write=False)).report
    assert report.scans[0].findings[0].statistic.value == pytest.approx(want.J, rel=1e-9)


def _compas_spec(path: Path, scans: str) -> str:
    return f"""
version: 1
name: compas
data: {{path: {path}}}
columns: {{outcome: two_year_recid, prediction: prob_decile, recommendation: high_risk}}
attributes: [sex, race, age_group, c_charge_degree, priors]
scans:
{scans}
significance: {{replicates: 0, seed: 0}}
"""


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("scan", "subgroup", "score"),
    [
        # Issue contract, verified by brute force over all 11907 subgroups (tests/oracle).
        ("{id: s, type: fpr_scan, penalty: 1, restarts: 100}", {"priors": ["Over 5"]}, 95.819935),
        (
            "{id: s, type: fpr_scan, penalty: 1.0e-17, restarts: 100}",
            {
                "race": ["African-American", "Asian", "Caucasian", "Hispanic", "Native American"],
                "priors": ["Over 5"],
            },
            98.954730,
        ),
        (
            "{id: s, type: tpr_scan, penalty: 1, restarts: 100}",
            {"race": ["African-American"], "priors": ["Over 5"]},
            113.297548,
        ),
        (
            "{id: s, type: bias_scan, direction: negative, restarts: 100}",
            {"priors": ["None"]},
            44.523823,
        ),
    ],
)
def test_compas_scans_match_the_brute_force_optimum(compas_csv, tmp_path, scan, subgroup, score):
    spec_file = tmp_path / "compas.audit.yaml"
    spec_file.write_text(_compas_spec(compas_csv, "  - " + scan))
    prepared = prepare_audit(spec_file)
    assert prepared.data.n_rows == 6172
    report = run_prepared(prepared, RunOptions(write=False)).report
    finding = report.scans[0].findings[0]
    assert finding.subgroup == subgroup
    assert finding.statistic.value == pytest.approx(score, abs=5e-7)


def test_no_finding_when_nothing_deviates_in_the_scanned_direction(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    lines = ["g,y,r"]
    for i in range(n):
        y = int(rng.random() < 0.5)
        lines.append(f"{'ab'[i % 2]},{y},0")
    lines[1] = "a,0,1"  # one flagged true negative: everyone else has r = 0
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    text = """
version: 1
name: t
data: {path: d.csv}
columns: {outcome: y, recommendation: r}
attributes: [g]
scans: [{id: tpr, type: tpr_scan}]
significance: {replicates: 9, seed: 1}
"""
    spec_file = tmp_path / "t.audit.yaml"
    spec_file.write_text(text)
    report = run_prepared(prepare_audit(spec_file), RunOptions(write=False, workers=1)).report
    scan = report.scans[0]
    assert scan.status == "no_finding" and scan.findings == []
    assert report.verdict.exit_code == 0
    assert any("cannot differ" in w for w in scan.warnings)


def test_spec_text_loader_is_importable():
    assert load_spec_from_text(SAMPLE.read_text(), str(SAMPLE)).spec.name == "sample-credit"


def test_population_totals_are_the_same_float_for_rows_and_their_counts() -> None:
    """A push-down source hands the scans distinct rows with counts: the population's sums
    are correctly rounded, so they equal the sums over the rows themselves (a plain float sum
    differs in the last place with the grouping)."""
    from fractions import Fraction

    from fairscan.scans.mdss_runner import exact_total

    rng = np.random.default_rng(7)
    for scale in (1.0, 1e-3, 1e5):
        values = rng.random(50) * scale
        counts = rng.integers(1, 100_000, 50)
        exact = float(sum(Fraction(float(v)) * int(c) for v, c in zip(values, counts, strict=True)))
        assert exact_total(values, counts) == exact
        assert exact_total(np.repeat(values, counts)) == exact
    # an expected rate repeated over rows: the grouped and the row-by-row sums agree exactly
    rate = np.full(3, 0.2774082239851926)
    assert exact_total(rate, np.array([477_000, 500, 103])) == exact_total(
        np.repeat(rate, [477_000, 500, 103])
    )
