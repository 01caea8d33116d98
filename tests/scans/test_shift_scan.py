"""`shift` scan: end to end on the sample data, no-tilt and degenerate runs, bad inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from pydantic import ValidationError

from fairscan.api import RunOptions, run_audit
from fairscan.errors import FairscanError
from fairscan.report.formats import render
from fairscan.report.models import AuditReport
from fairscan.scans import render_hooks
from fairscan.scans.shift import ShiftResult, ShiftSpec

ROOT = Path(__file__).resolve().parents[2]
MIDPOINT = {"18-24": 21.0, "25-44": 35.0, "45-64": 55.0, "65+": 72.0}
YOUNG = {"name": "young-applicants", "centers": [{"age": 21}], "weights": [1]}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample data with a numeric age (the age group's midpoint, jittered)."""
    frame = pl.read_csv(ROOT / "sample_data" / "credit.csv")
    rng = np.random.default_rng(0)
    age = np.array([MIDPOINT[g] for g in frame["age_group"]]) + rng.uniform(-3, 3, frame.height)
    path = tmp_path_factory.mktemp("shift") / "credit_age.csv"
    frame.with_columns(pl.Series("age", age), pl.lit("x").alias("word")).write_csv(path)
    return path


def _run(tmp_path: Path, data: Path, **scan: Any) -> AuditReport:
    spec = {
        "version": 1,
        "name": "shift-test",
        "data": {"path": str(data)},
        "columns": {"outcome": "default", "prediction": "score", "recommendation": "high_risk"},
        "attributes": ["sex", "ethnicity"],
        "scans": [{"id": "shift", "type": "shift", **scan}],
        "significance": {"alpha": 0.1, "seed": 0},
    }
    path = tmp_path / "shift.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return run_audit(path, RunOptions(write=False)).report


BASE: dict[str, Any] = {"metric": "fpr", "features": ["age"], "bootstrap": 100}


@pytest.mark.slow
def test_young_applicants_fpr_bound(tmp_path: Path, sample: Path) -> None:
    report = _run(tmp_path, sample, **BASE, tilts=[YOUNG], side="both")
    (scan,) = report.scans
    assert scan.status in ("significant", "not_significant"), scan.error
    detail = ShiftResult.model_validate(scan.detail)
    assert not detail.exact and detail.rank == 500 and detail.t_star > 0  # > 5000 rows
    (finding,) = scan.findings
    assert finding.group == finding.label == "young-applicants" and finding.subgroup is None
    d = finding.detail
    assert set(d) == {"estimate", "lower", "upper", "effective_sample_size"}
    assert d["lower"] < d["estimate"] < d["upper"]
    # the injected bias (ethnicity C aged 18-24): a higher FPR among the young
    assert d["estimate"] > 0 and finding.effect.inside > finding.effect.reference
    assert finding.significant == (d["lower"] > 0 or d["upper"] < 0)
    assert finding.size == round(d["effective_sample_size"]) == finding.effect.inside_count
    assert detail.worst_case is not None and detail.worst_case.profile is not None
    assert "age" in detail.worst_case.description
    html = render(report, "html", render_hooks())
    assert 'data-chart="shift"' in html and "young-applicants" in html
    assert finding.description in render(report, "markdown", render_hooks())
    again = _run(tmp_path, sample, **BASE, tilts=[YOUNG], side="both")
    assert again.scans[0].detail == scan.detail  # deterministic for a seed


def test_nystroem_route_and_no_tilt(tmp_path: Path, sample: Path) -> None:
    report = _run(
        tmp_path, sample, **BASE, exact_max_rows=1000, rank=100, kernel={"bandwidth": 0.5}
    )
    (scan,) = report.scans
    assert scan.status == "no_finding" and not scan.findings
    detail = ShiftResult.model_validate(scan.detail)
    assert not detail.exact and detail.rank == 100 and detail.t_star > 0
    assert detail.worst_case is not None


def test_constant_L_is_degenerate(tmp_path: Path, sample: Path) -> None:
    report = _run(tmp_path, sample, loss="one", features=["age"], bootstrap=20, tilts=[YOUNG])
    (scan,) = report.scans
    detail = ShiftResult.model_validate(scan.detail)
    assert detail.degenerate and detail.t_star == 0.0
    assert scan.status == "not_significant"
    assert detail.tilts[0].status == "degenerate"
    assert any("constant" in w for w in scan.warnings)
    # issue 16: plain words in everything a user reads
    from fairscan.scans.shift.render import shift_markdown

    texts = [*scan.warnings, *shift_markdown(scan), scan.population.observed_label]
    texts += [f.description for f in scan.findings]
    for text in texts:
        for word in ("mean of L", "L = ", "theta", "t*", "methods.md", "Algorithm", "Proposition"):
            assert word not in text, (word, text)


@pytest.fixture(autouse=True)
def _one_column(sample: Path) -> None:
    frame = pl.read_csv(sample)
    if "one" not in frame.columns:
        frame.with_columns(pl.lit(1.0).alias("one")).write_csv(sample)


def test_unknown_and_non_numeric_features(tmp_path: Path, sample: Path) -> None:
    with pytest.raises(FairscanError) as exc:
        _run(tmp_path, sample, metric="fpr", features=["nope"], tilts=[])
    assert "features[0]" in str(exc.value)
    report = _run(tmp_path, sample, metric="fpr", features=["word"], bootstrap=20)
    (scan,) = report.scans
    assert scan.status == "error" and "not numeric" in (scan.error or "")
    assert "features[0]" in (scan.error or "")


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"kernel": {"bandwidth": 0}}, "bandwidth"),
        ({"kernel": {"bandwidth": -1.0}}, "bandwidth"),
        ({"tilts": [{"name": "a", "centers": [{"income": 1.0}]}]}, "centers"),
        ({"tilts": [{"name": "a", "centers": [{"age": 1.0}], "weights": [-1.0]}]}, "weights"),
        ({"tilts": [YOUNG, YOUNG]}, "tilts"),
        ({"loss": "income"}, "metric"),
    ],
)
def test_bad_specs_name_the_field(changes: dict[str, Any], where: str) -> None:
    spec = {"id": "s", "type": "shift", **BASE, **changes}
    with pytest.raises(ValidationError) as exc:
        ShiftSpec.model_validate(spec)
    paths = [
        [*error["loc"], *(error.get("ctx") or {}).get("spec_loc", ())]
        for error in exc.value.errors()
    ]
    assert any(where in path for path in paths), paths


def test_a_center_missing_a_feature_is_reported_at_its_path(tmp_path: Path, sample: Path) -> None:
    tilt = {"name": "partial", "centers": [{"age": 21}]}
    with pytest.raises(FairscanError) as exc:
        _run(tmp_path, sample, metric="fpr", features=["age", "income"], tilts=[tilt])
    text = str(exc.value)
    assert "tilts" in text and "income" in text and "partial" in text


@pytest.mark.slow
def test_sample_tilt(tmp_path: Path, sample: Path) -> None:
    (tmp_path / "tilts").mkdir()
    pl.DataFrame({"age": [19.0, 21.0, 23.0, 22.0]}).write_csv(tmp_path / "tilts" / "young.csv")
    # a relative sample path is relative to the spec file (tmp_path), not the working directory
    tilt = {"name": "young-sample", "sample": "tilts/young.csv"}
    report = _run(tmp_path, sample, **BASE, tilts=[YOUNG, tilt])
    d = {f.group: f.detail for f in report.scans[0].findings}
    assert d["young-sample"]["estimate"] == pytest.approx(
        d["young-applicants"]["estimate"], abs=0.02
    )
    missing = {"name": "bad", "sample": str(tmp_path / "missing.csv")}
    bad = _run(tmp_path, sample, **BASE, tilts=[missing]).scans[0]
    assert bad.status == "error" and "tilts[0].sample" in (bad.error or "")


# --- the worst case: the direction attaining the bound vs the closest valid tilt (issue 25) ---


def test_worst_case_direction_is_reported_as_such_with_a_valid_tilt(
    tmp_path: Path, sample: Path
) -> None:
    report = _run(tmp_path, sample, **BASE, side="lower", exact_max_rows=1000, rank=100)
    detail = ShiftResult.model_validate(report.scans[0].detail)
    worst = detail.worst_case
    assert worst is not None
    # here the eigen-direction weighs 11% of the rows negatively (density ratio down to -0.22)
    assert not worst.is_distribution
    assert worst.negative_share > 0 and worst.min_ratio is not None and worst.min_ratio < 0
    assert "is not a distribution" in worst.description
    valid = worst.valid_tilt
    assert valid is not None and valid.centers > 0 and 0 <= valid.distance <= 1
    assert valid.lower is not None and valid.upper is None  # side lower
    assert valid.metric_under_tilt == pytest.approx(detail.theta + valid.estimate)
    # the simultaneous bound of a tilt: estimate - t* ||h||^2 / mean(h)^2 (a named tilt's rule)
    assert valid.lower < valid.estimate
    assert "closest valid non-negative tilt" in worst.description
    # never a negative density drawn as a population
    assert worst.profile is not None
    assert all(r is None or r >= 0 for r in worst.profile.ratio)
    html = render(report, "html", render_hooks())
    assert "Closest valid (non-negative) tilt" in html


def test_nonnegative_projection_is_the_rkhs_nearest_nonnegative_expansion() -> None:
    from scipy.optimize import nnls

    from fairscan.engine import rkhs

    rng = np.random.default_rng(4)
    Z = rng.normal(size=(25, 2))
    beta = rng.normal(size=25)
    a, _ = rkhs.nonnegative_projection(Z, beta, 1.0)
    assert (a >= 0).all()
    K = rkhs.gaussian_kernel(Z, Z, 1.0)
    w, V = np.linalg.eigh(K)
    R = (V * np.sqrt(np.maximum(w, 0))).T  # R'R = K
    best, _ = nnls(R, R @ beta)  # independent: argmin_{a>=0} ||R (a - beta)||
    objective = lambda x: float((x - beta) @ K @ (x - beta))  # noqa: E731
    assert objective(a) <= objective(best) * (1 + 1e-3) + 1e-9
    assert objective(a) <= objective(np.maximum(beta, 0))  # no worse than clipping


def test_valid_tilt_bound_is_the_named_tilt_rule() -> None:
    from fairscan.engine import rkhs
    from fairscan.scans.shift.runner import _valid_tilt

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 1))
    Lc = rng.normal(size=300)
    Lc -= Lc.mean()
    coef = rng.normal(size=300) * (X[:, 0] > 0)
    spec = ShiftSpec.model_validate(
        {"id": "s", "type": "shift", "metric": "fpr", "features": ["x"], "side": "both"}
    )
    valid, h = _valid_tilt(spec, X, X, coef, Lc, 0.01, 0.3)
    assert valid is not None and h is not None and (h >= 0).all()
    a, _ = rkhs.nonnegative_projection(X, coef, spec.kernel.bandwidth)
    K = rkhs.gaussian_kernel(X, X, spec.kernel.bandwidth)
    hv = K @ a
    est = float(Lc @ hv / hv.sum())
    width = float(a @ K @ a) / hv.mean() ** 2
    assert valid.estimate == pytest.approx(est, rel=1e-6)
    assert valid.lower == pytest.approx(est - 0.01 * width, rel=1e-6)
    assert valid.upper == pytest.approx(est + 0.01 * width, rel=1e-6)
