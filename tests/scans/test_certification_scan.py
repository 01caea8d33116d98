"""`flag` / `certify` scans: the findings contract, COMPAS numbers of the issue, roles, errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fairscan.api import RunOptions, run_audit
from fairscan.data.table import EncodedAttribute, PreparedData
from fairscan.report.models import AuditReport, ScanResult
from fairscan.scans.base import RoleArrays, ScanContext
from fairscan.scans.certification import (
    CERTIFY,
    FLAG,
    CertificationResult,
    CertifySpec,
    FlagSpec,
    certificate_claim,
)
from fairscan.scans.certification import (
    run_audit as run_certification,
)
from fairscan.scans.certification.render import certification_markdown

ROOT = Path(__file__).resolve().parents[2]


def _detail(scan: ScanResult) -> CertificationResult:
    return CertificationResult.model_validate(scan.detail["certification"])


def _check_contract(report: AuditReport) -> None:
    """Findings are the hits of the one rule; the verdict counts them: flags and certified
    disparities as significant, groups whose fairness cannot be certified as not certified."""
    total = uncertified = 0
    for scan in report.scans:
        c = _detail(scan)
        hits = [g for g in c.groups if g.finding]
        assert [f.detail["name"] for f in scan.findings] == [g.name for g in hits]
        fairness = c.claim == "fairness"
        assert all(f.significant is not fairness for f in scan.findings)
        certified = None if c.claim is None else not fairness
        assert all(f.certified is certified for f in scan.findings)
        for f in scan.findings:
            assert f.effect.reference == c.theta and f.effect.reference_name == c.target
            assert f.size == f.effect.inside_count == f.detail["size"]
            assert (f.subgroup is None) == (f.group is not None)
        if c.mode == "flag" or c.claim == "disparity":
            assert len(scan.findings) == c.hits
            total += len(scan.findings)
        else:
            assert len(scan.findings) == c.failed
            uncertified += len(scan.findings)
            assert scan.status == ("not_certified" if scan.findings else scan.status)
    assert report.verdict.significant_findings == total
    assert report.verdict.not_certified == uncertified


# --- COMPAS (the numbers) ----------------------------------------------------------------


def _run_compas(tmp_path: Path, compas: Path, name: str) -> AuditReport:
    text = (ROOT / "audits" / name).read_text().replace("../build/compas.csv", str(compas))
    spec = tmp_path / name
    spec.write_text(text)
    return run_audit(spec, RunOptions(write=False)).report


def test_compas_fpr_flags_are_findings(tmp_path, compas_csv):
    rep = _run_compas(tmp_path, compas_csv, "compas-flag-fpr.audit.yaml")
    scan = rep.scans[0]
    c = _detail(scan)
    assert c.groups_tested == 73 and c.hits == 13
    assert len(scan.findings) == 13
    assert all(f.significant is True for f in scan.findings)
    assert rep.verdict.significant_findings == 13
    assert scan.status == "significant"
    labels = {f.label for f in scan.findings}
    assert {"race = African-American", "age_cat = Less than 25"} <= labels
    assert [g.flagged for g in c.groups][:13] == [True] * 13  # flagged first
    for f in scan.findings:
        assert f.statistic.name == "gap" and f.statistic.value > 0.05
        assert f.effect.metric == "false positive rate"
        assert f.effect.inside == pytest.approx(f.effect.reference + f.statistic.value)
        assert f.effect.reference_count == c.population_rows  # target: overall
        assert 0 < f.p_value <= f.adjusted_p_value <= 0.1
        assert f.subgroup is not None and f.group is None
    # most important first: adjusted p-values increase
    adjusted = [f.adjusted_p_value for f in scan.findings]
    assert adjusted == sorted(adjusted)
    _check_contract(rep)


def test_compas_ppv_flags_and_certificate(tmp_path, compas_csv):
    rep = _run_compas(tmp_path, compas_csv, "compas-flag-ppv.audit.yaml")
    assert {f.label for f in rep.scans[0].findings} == {
        "sex = Female",
        "sex = Female and age_cat = Less than 25",
        "race = Caucasian and sex = Female and age_cat = Less than 25",
    }
    _check_contract(rep)
    rep = _run_compas(tmp_path, compas_csv, "compas-certify-ppv.audit.yaml")
    scan = rep.scans[0]
    g = _detail(scan).groups[0]
    assert 0.01 < g.lower < 0.04 < g.gap and g.certified
    # a certified lower bound above the tolerance proves a disparity: it is a finding
    assert _detail(scan).claim == "disparity"
    assert scan.status == "significant"
    assert rep.verdict.significant_findings == 1
    (f,) = scan.findings
    assert f.subgroup is None and f.group == "African-American" and f.label == "African-American"
    assert f.statistic.name == "lower_bound" and f.statistic.value == g.lower
    assert f.p_value is None and f.adjusted_p_value is None and f.significant is True
    assert f.effect.metric == "positive predictive value"
    assert f.effect.reference_count == 696  # Caucasian defendants rated high risk
    assert "certified above 0" in f.description
    _check_contract(rep)


def test_bad_reference_value_is_a_scan_error(tmp_path, compas_csv):
    spec = tmp_path / "bad.audit.yaml"
    spec.write_text(
        f"""version: 1
name: bad
data: {{path: {compas_csv}}}
columns: {{outcome: two_year_recid, recommendation: high_risk}}
attributes: [race]
scans:
  - {{id: c, type: certify, metric: ppv, target: {{reference: {{column: race, value: Martian}}}},
     groups: {{attributes: [race]}}, bootstrap: 20}}
"""
    )
    rep = run_audit(spec, RunOptions(write=False)).report
    assert rep.scans[0].status == "error"
    assert "Martian" in rep.scans[0].error


# --- spec, roles and the one finding rule ---------------------------------------------------------


def test_certificate_claims():
    assert certificate_claim("lower", "above") == "disparity"
    assert certificate_claim("upper", "above") == "fairness"
    assert certificate_claim("upper", "below") == "disparity"
    assert certificate_claim("two_sided", "both") == "fairness"
    assert certificate_claim("boolean", "above") == "disparity"
    assert certificate_claim("boolean", "both") == "fairness"


def test_flag_without_tolerance_is_rejected():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="tolerance"):
        FlagSpec(id="f", type="flag", metric="fpr", groups={"attributes": ["a"]})
    with pytest.raises(ValidationError, match="exactly one"):
        FlagSpec(id="f", type="flag", groups={"attributes": ["a"]}, tolerance=0.1)


@pytest.mark.parametrize(
    ("fields", "roles"),
    [
        ({"metric": "fpr"}, {"outcome", "recommendation"}),
        ({"metric": "ppv"}, {"outcome", "recommendation"}),
        ({"metric": "error"}, {"outcome", "recommendation"}),
        ({"metric": "positive_rate"}, {"recommendation"}),
        ({"metric": "brier"}, {"outcome", "probability"}),
        ({"metric": "calibration"}, {"outcome", "probability"}),
        ({"metric": "squared_error"}, {"outcome", "score"}),
        ({"metric": "coverage", "column": "c"}, set()),
        ({"loss": "cost"}, set()),
    ],
)
def test_roles_follow_the_metric(fields, roles):
    base = {"id": "x", "groups": {"attributes": ["a"]}, "tolerance": 0.1}
    assert FLAG.roles_for(FlagSpec(type="flag", **base, **fields)) == roles
    assert CERTIFY.roles_for(CertifySpec(type="certify", **base, **fields)) == roles


def test_threshold_only_where_a_recommendation_is_used():
    from pydantic import ValidationError

    spec = FlagSpec(
        id="f",
        type="flag",
        metric="fpr",
        groups={"attributes": ["a"]},
        tolerance=0.1,
        threshold=5,
        threshold_rule="gt",
    )
    assert spec.threshold == 5 and spec.threshold_rule == "gt"
    with pytest.raises(ValidationError, match="threshold"):
        CertifySpec(id="c", type="certify", loss="cost", groups={"attributes": ["a"]}, threshold=1)
    with pytest.raises(ValidationError, match="threshold"):
        FlagSpec(
            id="f",
            type="flag",
            metric="brier",
            groups={"attributes": ["a"]},
            tolerance=0.1,
            threshold=0.5,
        )


# --- the runner on a hand-built context (no data layer) ------------------------------------------

_RATES = {"a": 0.2, "b": 0.5, "c": 0.8}  # positive rate per group; overall 0.5


def _synthetic_arrays(per_group: int = 500, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    grp = np.repeat(list(_RATES), per_group)
    rec = (rng.random(len(grp)) < np.array([_RATES[g] for g in grp])).astype(int)
    y = rng.integers(0, 2, len(grp))
    x = rng.random(len(grp))
    loss = (1 + 2 * x) * rng.exponential(size=len(grp))  # E[loss | x] = 1 + 2x
    return {"grp": grp, "rec": rec, "y": y, "x": x, "loss": loss}


def _context(d: dict[str, np.ndarray], roles: RoleArrays, alpha: float = 0.1) -> ScanContext:
    labels = tuple(_RATES)
    codes = np.array([labels.index(g) for g in d["grp"]], dtype=np.int32)[:, None]
    data = PreparedData(
        n_rows_raw=len(codes),
        attributes=(EncodedAttribute(name="grp", labels=labels),),
        codes=np.ascontiguousarray(codes),
        extra={"x": d["x"].astype(float), "loss": d["loss"].astype(float)},
    )
    return ScanContext(
        data=data, alpha=alpha, replicates=0, seed=np.random.SeedSequence(3), roles=roles
    )


def test_loss_scan_needs_no_outcome():
    d = _synthetic_arrays(per_group=300)
    ctx = _context(d, RoleArrays())  # no outcome, prediction or recommendation at all
    spec = CertifySpec(
        id="l",
        type="certify",
        loss="loss",
        target=2.0,
        bound="lower",
        tolerance=0.0,
        groups={"intervals": {"attribute": "x", "grid": [0, 0.5, 1]}},
        bootstrap=100,
    )
    scan = run_certification(spec, ctx)
    c = _detail(scan)
    assert c.theta == 2.0 and c.claim == "disparity"
    assert [f.group for f in scan.findings] == [g.name for g in c.groups if g.certified]
    for f in scan.findings:
        assert f.subgroup is None and f.effect.reference_count is None  # a known theta
        assert f.effect.metric == "mean loss" and f.statistic.name == "lower_bound"


def test_fairness_claim_reports_the_groups_that_fail():
    d = _synthetic_arrays()
    ctx = _context(d, RoleArrays(recommendation=d["rec"].astype(np.int8)))
    spec = CertifySpec(
        id="u",
        type="certify",
        metric="positive_rate",
        bound="upper",
        tolerance=0.1,
        groups={"attributes": ["grp"]},
        bootstrap=200,
    )
    scan = run_certification(spec, ctx)
    c = _detail(scan)
    assert c.claim == "fairness" and c.failed == 1
    (f,) = scan.findings
    assert f.subgroup == {"grp": ["c"]} and f.label == "grp = c" and f.group is None
    assert f.statistic.name == "upper_bound" and f.statistic.value >= 0.1
    # not certified is its own status, never "significant" (issue 34)
    assert f.significant is False and f.certified is False
    assert "cannot be certified below +0.1" in f.description
    assert scan.status == "not_certified" and scan.not_certified_count() == 1
    md = "\n".join(certification_markdown(scan))
    assert "groups that cannot be certified are findings" in md and "| grp = c |" in md


def test_no_testable_group_is_no_finding():
    d = _synthetic_arrays(per_group=20)
    ctx = _context(d, RoleArrays(recommendation=d["rec"].astype(np.int8)))
    spec = FlagSpec(
        id="f",
        type="flag",
        metric="positive_rate",
        tolerance=0.0,
        groups={"attributes": ["grp"], "min_size": 1000},
        bootstrap=20,
    )
    scan = run_certification(spec, ctx)
    assert scan.status == "no_finding" and scan.findings == []
    assert "no group has enough rows to be tested" in scan.warnings


# --- end-to-end spec tests on small synthetic data ------------------------------------------


def _synthetic(tmp_path: Path, per_group: int = 500, seed: int = 0) -> tuple[Path, dict]:
    """grp in {a, b, c} with positive rates 0.2 / 0.5 / 0.8, a numeric x and a loss column."""
    d = _synthetic_arrays(per_group, seed)
    path = tmp_path / "synth.csv"
    lines = ["grp,y,rec,x,loss"]
    lines += [
        f"{g},{a},{b},{c:.17g},{e:.17g}"
        for g, a, b, c, e in zip(d["grp"], d["y"], d["rec"], d["x"], d["loss"], strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, d


def _run_scan(tmp_path: Path, csv: Path, scan: str) -> AuditReport:
    spec = tmp_path / "s.audit.yaml"
    spec.write_text(
        f"""version: 1
name: synth
data: {{path: {csv}}}
columns: {{outcome: y, recommendation: rec}}
attributes: [grp]
scans:
  - {scan}
significance: {{alpha: 0.1, seed: 3}}
"""
    )
    rep = run_audit(spec, RunOptions(write=False)).report
    assert rep.scans[0].status != "error", rep.scans[0].error
    _check_contract(rep)
    return rep


def _by_name(rep: AuditReport) -> dict[str, dict]:
    return {g.name: g.model_dump() for g in _detail(rep.scans[0]).groups}


def _direct_gaps(d: dict) -> dict[str, float]:
    overall = d["rec"].mean()
    return {f"grp = {g}": d["rec"][d["grp"] == g].mean() - overall for g in _RATES}


def test_spec_upper_bound(tmp_path):
    csv, d = _synthetic(tmp_path)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: u, type: certify, metric: positive_rate, target: overall, "
        "groups: {attributes: [grp]}, bound: upper, tolerance: 0.1, bootstrap: 200}",
    )
    c, groups = _detail(rep.scans[0]), _by_name(rep)
    for name, gap in _direct_gaps(d).items():
        g = groups[name]
        assert g["gap"] == pytest.approx(gap, abs=1e-12)
        assert g["lower"] is None and gap < g["upper"] < gap + 0.1  # a one-sided upper bound
    # eps < 0.1 is provable for a (-0.3) and b (0), never for c (+0.3)
    assert groups["grp = a"]["certified"] and groups["grp = b"]["certified"]
    assert groups["grp = c"]["certified"] is False
    # an upper bound about a harmful "above" side certifies fairness: the failure is the finding
    assert c.claim == "fairness" and c.failed == 1
    assert [f.label for f in rep.scans[0].findings] == ["grp = c"]
    assert rep.scans[0].status == "not_certified"
    assert rep.verdict.significant_findings == 0 and rep.verdict.not_certified == 1


def test_spec_two_sided_interval(tmp_path):
    csv, d = _synthetic(tmp_path)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: t, type: certify, metric: positive_rate, target: overall, "
        "groups: {attributes: [grp]}, bound: two_sided, side: both, tolerance: 0.1, "
        "bootstrap: 200}",
    )
    c, groups = _detail(rep.scans[0]), _by_name(rep)
    t_abs = c.critical_values["abs"]
    assert t_abs > 0
    for name, gap in _direct_gaps(d).items():
        g = groups[name]
        assert g["gap"] == pytest.approx(gap, abs=1e-12)
        half = g["upper"] - g["gap"]
        assert g["gap"] - g["lower"] == pytest.approx(half, rel=1e-9)  # symmetric interval
        # half-width t* s / P^2 with s = max(P, p*)^1.5 sd(L) (w0 = inf), P = 1/3
        s = (1 / 3) ** 1.5 * d["rec"].std()
        assert half == pytest.approx(t_abs * s * 9, rel=1e-9)
        assert (g["certified"] is True) == (g["lower"] > -0.1 and g["upper"] < 0.1)
    assert [groups[f"grp = {k}"]["certified"] for k in "abc"] == [False, True, False]
    assert c.claim == "fairness" and c.failed == 2
    findings = rep.scans[0].findings
    assert {f.label for f in findings} == {"grp = a", "grp = c"}
    assert all(f.statistic.name == "gap" for f in findings)


@pytest.mark.parametrize(
    ("side", "tol", "certified"),
    [("above", 0.1, "c"), ("below", -0.1, "a"), ("both", 0.1, "b")],
)
def test_spec_boolean_certificates(tmp_path, side, tol, certified):
    csv, d = _synthetic(tmp_path)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: b, type: certify, metric: positive_rate, target: overall, "
        f"groups: {{attributes: [grp]}}, bound: boolean, side: {side}, tolerance: {tol}, "
        "bootstrap: 200}",
    )
    c, groups = _detail(rep.scans[0]), _by_name(rep)
    hits = {name[-1] for name, g in groups.items() if g["certified"]}
    assert hits == {certified}
    P = 1 / 3
    s = P**0.5 * d["rec"].std()  # Algorithm 7 studentises with max(P_n, p*)^{1/2} (§5.5)
    for name, gap in _direct_gaps(d).items():
        g = groups[name]
        assert g["gap"] == pytest.approx(gap, abs=1e-12)
        # the certification rule of §5.5 (times s_hat / P_n, not / P_n^2)
        if side == "above":
            want = gap >= tol + c.critical_values["above"] * s / P
        elif side == "below":
            want = gap <= tol - c.critical_values["below"] * s / P
        else:
            t1, t2 = c.critical_values["both_upper"], c.critical_values["both_lower"]
            want = gap <= tol - t1 * s / P and gap >= -tol + t2 * s / P
        assert g["certified"] is bool(want)
    if side == "both":
        assert c.claim == "fairness" and c.failed == 2
        assert rep.verdict.significant_findings == 0 and rep.verdict.not_certified == 2
    else:
        assert c.claim == "disparity" and c.hits == 1
        assert rep.verdict.significant_findings == 1
        assert [f.label for f in rep.scans[0].findings] == [f"grp = {certified}"]


def test_spec_loss_column_interval_groups_numeric_target(tmp_path):
    csv, d = _synthetic(tmp_path, per_group=400)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: l, type: certify, loss: loss, target: 2.0, "
        "groups: {intervals: {attribute: x, grid: [0, 0.25, 0.5, 0.75, 1]}}, "
        "bound: lower, tolerance: 0.0, bootstrap: 200}",
    )
    c, groups = _detail(rep.scans[0]), _by_name(rep)
    assert c.theta == 2.0 and c.metric == "loss loss" and len(groups) == 10
    grid = [0, 0.25, 0.5, 0.75, 1]
    for i in range(4):
        for j in range(i + 1, 5):
            name = f"x in [{grid[i]:g}, {grid[j]:g}{']' if j == 4 else ')'}"
            inside = (d["x"] >= grid[i]) & ((d["x"] < grid[j]) if j < 4 else (d["x"] <= 1))
            g = groups[name]
            assert g["size"] == int(inside.sum())
            # known target: gap = group mean of the loss column - 2.0, no estimation of theta
            assert g["gap"] == pytest.approx(d["loss"][inside].mean() - 2.0, rel=1e-9)
            assert g["lower"] < g["gap"]
    # E[loss | x] = 1 + 2x: [0.75, 1] has mean 2.75 > 2 (certified), [0, 0.25) 1.25 (not)
    assert groups["x in [0.75, 1]"]["certified"]
    assert groups["x in [0, 0.25)"]["certified"] is False
    assert groups["x in [0, 0.25)"]["gap"] < 0
    # a certified lower bound above the tolerance is a disparity finding
    n_cert = sum(bool(g["certified"]) for g in groups.values())
    assert c.claim == "disparity" and rep.verdict.significant_findings == n_cert
    assert "x in [0.75, 1]" in {f.group for f in rep.scans[0].findings}
    assert np.isfinite(c.critical_values["lower"])


def test_loss_spec_runs_without_an_outcome_column(tmp_path):
    csv, _ = _synthetic(tmp_path, per_group=200)
    spec = tmp_path / "l.audit.yaml"
    spec.write_text(
        f"""version: 1
name: loss-only
data: {{path: {csv}}}
columns: {{}}
attributes: [grp]
scans:
  - {{id: l, type: certify, loss: loss, target: overall, groups: {{attributes: [grp]}},
     bound: lower, tolerance: 0.0, bootstrap: 50}}
significance: {{seed: 1}}
"""
    )
    rep = run_audit(spec, RunOptions(write=False)).report
    assert rep.scans[0].status != "error", rep.scans[0].error
    _check_contract(rep)


def test_reports_render_the_groups_through_the_hooks(tmp_path):
    from fairscan.report.html import render_html
    from fairscan.report.markdown import render_markdown
    from fairscan.scans import render_hooks

    csv, _ = _synthetic(tmp_path)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: f, type: flag, metric: positive_rate, target: overall, "
        "groups: {attributes: [grp]}, tolerance: 0.1, bootstrap: 200}",
    )
    assert [f.label for f in rep.scans[0].findings] == ["grp = c"]
    md = render_markdown(rep, render_hooks())
    assert "| grp = c |" in md and "Flagged: groups whose gap exceeds the tolerance of 0.1" in md
    html = render_html(rep, render_hooks())
    assert 'class="interval"' in html  # the forest plot
    assert "red = flagged" in html and "grp = c" in html


JARGON = ("mean of L", "theta", "MAD scale", "t*_", "Algorithm", "Proposition", "L = ")


def test_flag_report_speaks_plainly_and_says_why_groups_are_not_flagged(tmp_path):
    """Issue 16: 'FPR 0.54 vs 0.30 overall; flagged: exceeds the tolerance of 0.05 with
    FDR-adjusted p = ...', a reason for every group not flagged, untested groups off the plot."""
    from fairscan.report.html import render_html
    from fairscan.report.markdown import render_markdown
    from fairscan.scans import render_hooks

    csv, _ = _synthetic(tmp_path)
    with csv.open("a") as fh:  # a tiny group: too small to test
        fh.writelines(f"d,{i % 2},1,0.5,1.0\n" for i in range(4))
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: f, type: flag, metric: positive_rate, target: overall, side: above, "
        "groups: {attributes: [grp], min_size: 20}, tolerance: 0.05, bootstrap: 200}",
    )
    scan = rep.scans[0]
    [finding] = scan.findings
    assert re.fullmatch(
        r"grp = c: positive_rate 0\.\d\d vs 0\.\d\d overall \(gap \+0\.\d{3}\); flagged: exceeds "
        r"the tolerance of 0\.05 with FDR-adjusted p [=<] [0-9.e-]+\.",
        finding.description.replace("positive rate", "positive_rate"),
    ), finding.description
    md = render_markdown(rep, render_hooks())
    html = render_html(rep, render_hooks())
    texts = [md, html, finding.description, *scan.warnings, scan.population.observed_label]
    for text in texts:
        for word in JARGON:
            assert word not in text, (word, text[:200])
    assert "not tested: too small (4 rows)" in md
    assert re.search(r"\| grp = a \|.*not flagged: gap -0\.\d{3} is within the tolerance", md)
    # the too-small group is not in the forest plot, but listed under it
    forest = html.index("forest plot of the gap")
    svg = html[html.rindex("<svg", 0, forest) : html.index("</svg>", forest)]
    assert "grp = d" not in svg and "grp = c" in svg
    assert "Not tested, so not plotted (1): grp = d (too small (4 rows))" in html
