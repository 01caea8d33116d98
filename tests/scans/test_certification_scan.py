"""End-to-end `flag` / `certify` scans: COMPAS numbers of the issue and error handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairscan.api import RunOptions, run_audit

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, compas: Path, name: str) -> dict:
    text = (ROOT / "audits" / name).read_text().replace("../build/compas.csv", str(compas))
    text = text.replace("../reports", str(tmp_path / "out"))
    spec = tmp_path / name
    spec.write_text(text)
    run_audit(spec, RunOptions())
    out = next((tmp_path / "out").glob("*.json"))
    return json.loads(out.read_text())


def test_compas_fpr_flags(tmp_path, compas_csv):
    rep = _run(tmp_path, compas_csv, "compas-flag-fpr.audit.yaml")
    c = rep["scans"][0]["certification"]
    flagged = {g["name"] for g in c["groups"] if g["flagged"]}
    assert c["groups_tested"] == 73 and len(flagged) == 13
    assert {"race = African-American", "age_cat = Less than 25"} <= flagged
    assert rep["verdict"]["significant_findings"] == 13
    assert [g["flagged"] for g in c["groups"]][:13] == [True] * 13  # flagged first


def test_compas_ppv_flags_and_certificate(tmp_path, compas_csv):
    rep = _run(tmp_path, compas_csv, "compas-flag-ppv.audit.yaml")
    flagged = {g["name"] for g in rep["scans"][0]["certification"]["groups"] if g["flagged"]}
    assert flagged == {
        "sex = Female",
        "sex = Female & age_cat = Less than 25",
        "race = Caucasian & sex = Female & age_cat = Less than 25",
    }
    (tmp_path / "c").mkdir()
    rep = _run(tmp_path / "c", compas_csv, "compas-certify-ppv.audit.yaml")
    g = rep["scans"][0]["certification"]["groups"][0]
    assert 0.01 < g["lower"] < 0.04 < g["gap"] and g["certified"]
    # a certified lower bound above the tolerance proves a disparity: it is a finding
    assert rep["scans"][0]["certification"]["claim"] == "disparity"
    assert rep["scans"][0]["status"] == "significant"
    assert rep["verdict"]["significant_findings"] == 1


def test_certificate_claims():
    from fairscan.scans.certification import certificate_claim

    assert certificate_claim("lower", "above") == "disparity"
    assert certificate_claim("upper", "above") == "fairness"
    assert certificate_claim("upper", "below") == "disparity"
    assert certificate_claim("two_sided", "both") == "fairness"
    assert certificate_claim("boolean", "above") == "disparity"
    assert certificate_claim("boolean", "both") == "fairness"


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
output: {{dir: {tmp_path / "out"}, formats: [json]}}
"""
    )
    run_audit(spec, RunOptions())
    rep = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert rep["scans"][0]["status"] == "error"
    assert "Martian" in rep["scans"][0]["error"]


def test_flag_without_tolerance_is_rejected():
    from pydantic import ValidationError

    from fairscan.scans.certification import FlagSpec

    with pytest.raises(ValidationError, match="tolerance"):
        FlagSpec(id="f", type="flag", metric="fpr", groups={"attributes": ["a"]})
    with pytest.raises(ValidationError, match="exactly one"):
        FlagSpec(id="f", type="flag", groups={"attributes": ["a"]}, tolerance=0.1)


# --- end-to-end spec tests on small synthetic data ------------------------------------------

_RATES = {"a": 0.2, "b": 0.5, "c": 0.8}  # positive rate per group; overall 0.5


def _synthetic(tmp_path: Path, per_group: int = 500, seed: int = 0) -> tuple[Path, dict]:
    """grp in {a, b, c} with positive rates 0.2 / 0.5 / 0.8, a numeric x and a loss column."""
    import numpy as np

    rng = np.random.default_rng(seed)
    grp = np.repeat(list(_RATES), per_group)
    rec = (rng.random(len(grp)) < np.array([_RATES[g] for g in grp])).astype(int)
    y = rng.integers(0, 2, len(grp))
    x = rng.random(len(grp))
    loss = (1 + 2 * x) * rng.exponential(size=len(grp))  # E[loss | x] = 1 + 2x
    path = tmp_path / "synth.csv"
    lines = ["grp,y,rec,x,loss"]
    lines += [
        f"{g},{a},{b},{c:.17g},{e:.17g}" for g, a, b, c, e in zip(grp, y, rec, x, loss, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path, {"grp": grp, "rec": rec, "x": x, "loss": loss}


def _run_scan(tmp_path: Path, csv: Path, scan: str) -> dict:
    out = tmp_path / "out"
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
output: {{dir: {out}, formats: [json]}}
"""
    )
    run_audit(spec, RunOptions())
    rep = json.loads(next(out.glob("*.json")).read_text())
    assert rep["scans"][0]["status"] != "error", rep["scans"][0].get("error")
    return rep


def _by_name(rep: dict) -> dict[str, dict]:
    return {g["name"]: g for g in rep["scans"][0]["certification"]["groups"]}


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
    c, groups = rep["scans"][0]["certification"], _by_name(rep)
    for name, gap in _direct_gaps(d).items():
        g = groups[name]
        assert g["gap"] == pytest.approx(gap, abs=1e-12)
        assert g["lower"] is None and gap < g["upper"] < gap + 0.1  # a one-sided upper bound
    # eps < 0.1 is provable for a (-0.3) and b (0), never for c (+0.3)
    assert groups["grp = a"]["certified"] and groups["grp = b"]["certified"]
    assert groups["grp = c"]["certified"] is False
    # an upper bound about a harmful "above" side certifies fairness: the failure is the finding
    assert c["claim"] == "fairness" and c["failed"] == 1
    assert rep["scans"][0]["status"] == "significant"
    assert rep["verdict"]["significant_findings"] == 1


def test_spec_two_sided_interval(tmp_path):
    csv, d = _synthetic(tmp_path)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: t, type: certify, metric: positive_rate, target: overall, "
        "groups: {attributes: [grp]}, bound: two_sided, side: both, tolerance: 0.1, "
        "bootstrap: 200}",
    )
    c, groups = rep["scans"][0]["certification"], _by_name(rep)
    t_abs = c["critical_values"]["abs"]
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
    assert c["claim"] == "fairness" and c["failed"] == 2


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
    c, groups = rep["scans"][0]["certification"], _by_name(rep)
    hits = {name[-1] for name, g in groups.items() if g["certified"]}
    assert hits == {certified}
    P = 1 / 3
    s = P**1.5 * d["rec"].std()
    for name, gap in _direct_gaps(d).items():
        g = groups[name]
        assert g["gap"] == pytest.approx(gap, abs=1e-12)
        # the certification rule of §5.5 (times s_hat / P_n, not / P_n^2)
        if side == "above":
            want = gap >= tol + c["critical_values"]["above"] * s / P
        elif side == "below":
            want = gap <= tol - c["critical_values"]["below"] * s / P
        else:
            t1, t2 = c["critical_values"]["both_upper"], c["critical_values"]["both_lower"]
            want = gap <= tol - t1 * s / P and gap >= -tol + t2 * s / P
        assert g["certified"] is bool(want)
    if side == "both":
        assert c["claim"] == "fairness" and c["failed"] == 2
        assert rep["verdict"]["significant_findings"] == 2
    else:
        assert c["claim"] == "disparity" and c["hits"] == 1
        assert rep["verdict"]["significant_findings"] == 1


def test_spec_loss_column_interval_groups_numeric_target(tmp_path):
    import numpy as np

    csv, d = _synthetic(tmp_path, per_group=400)
    rep = _run_scan(
        tmp_path,
        csv,
        "{id: l, type: certify, loss: loss, target: 2.0, "
        "groups: {intervals: {attribute: x, grid: [0, 0.25, 0.5, 0.75, 1]}}, "
        "bound: lower, tolerance: 0.0, bootstrap: 200}",
    )
    c, groups = rep["scans"][0]["certification"], _by_name(rep)
    assert c["theta"] == 2.0 and c["metric"] == "loss loss" and len(groups) == 10
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
    assert c["claim"] == "disparity" and rep["verdict"]["significant_findings"] == n_cert
    assert np.isfinite(c["critical_values"]["lower"])
