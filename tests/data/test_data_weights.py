"""columns.weight (issue 25): validation, fractional weights, and that weights are used.

The equivalence of integer weights with the row-replicated table over every registered scan
type is part of the contract test (tests/test_contract.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.api import RunOptions, run_audit
from fairscan.errors import DataError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data" / "credit.csv"


def _table(tmp_path: Path, weights: list[float | None] | np.ndarray, n: int = 1500) -> Path:
    frame = pl.read_csv(SAMPLE).head(n)
    w = np.resize(np.asarray(weights, dtype=object), n)
    path = tmp_path / "d.csv"
    frame = frame.with_columns(pl.Series("w", list(w), dtype=pl.Float64, strict=False))
    frame.with_columns((pl.col("income") / 1e4).alias("income_k")).write_csv(path)
    return path


ATTRIBUTES = ["sex", "ethnicity", "age_group", "region"]


def _run(tmp_path: Path, data: Path, scan: dict, replicates: int = 9, weight: str | None = "w"):
    spec = {
        "version": 1,
        "name": "weights",
        "data": {"path": str(data)},
        "columns": {"outcome": "default", "prediction": "score", "recommendation": "high_risk"},
        "attributes": ["sex", "ethnicity", "age_group", "region"],
        "scans": [{"id": "s", **scan}],
        "significance": {"replicates": replicates, "seed": 0, "workers": 1},
    }
    if weight is not None:
        spec["columns"]["weight"] = weight
    path = tmp_path / "w.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return run_audit(path, RunOptions(write=False)).report


FPR = {"type": "fpr_scan", "restarts": 5}


def _close(a, b) -> None:
    """Equal, floats to 1e-12 relative (sums taken in another order)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b)
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-12, abs=1e-15)
    else:
        assert a == b


CERTIFY = {
    "type": "certify",
    "metric": "fpr",
    "groups": {"attributes": ["ethnicity"]},
    "bootstrap": 50,
}


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1, -1, 2], "500 negative value(s)"),
        ([1, None, 2], "500 missing values (null or NaN"),
        ([1, float("inf")], "infinite"),
        ([0], "is 0 on every row"),
    ],
)
def test_bad_weights_are_data_errors_naming_the_column(tmp_path, weights, message):
    data = _table(tmp_path, weights)
    with pytest.raises(DataError) as info:
        _run(tmp_path, data, FPR)
    text = str(info.value)
    assert "'w'" in text and "columns.weight" in text
    assert message in text


def test_a_text_weight_column_is_a_data_error(tmp_path):
    data = _table(tmp_path, [1])
    with pytest.raises(DataError) as info:
        _run(tmp_path, data, FPR, weight="sex")
    assert "weight column 'sex' must hold numbers" in str(info.value)


def test_fractional_weights_whose_sum_overflows_are_a_data_error(tmp_path):
    data = _table(tmp_path, [1.5e308, 0.5])
    with pytest.raises(DataError) as info:
        _run(tmp_path, data, FPR)
    assert "columns.weight" in str(info.value) and "sum past" in str(info.value)


def test_whole_weights_up_to_2_to_the_53_are_counted(tmp_path):
    """The bound is exact: a total of 2^53 - 1 rows is audited, 2^53 is refused."""
    frame = pl.read_csv(SAMPLE).head(200)
    for total, refused in ((2**53 - 1, False), (2**53, True)):
        w = np.ones(frame.height, dtype=np.int64)
        w[0] = total - (frame.height - 1)
        path = tmp_path / "d.csv"
        frame.with_columns(pl.Series("w", w)).write_csv(path)
        if refused:
            with pytest.raises(DataError, match="2\\^53"):
                _run(tmp_path, path, FPR)
        else:
            assert _run(tmp_path, path, FPR).provenance.rows_after_filter == total


@pytest.mark.slow
def test_an_overflowing_weight_exits_2_from_the_cli_without_numpy_warnings(tmp_path):
    """The reproduction: a cbs scan over a weight column whose sum overflows int64 died with
    SIGSEGV (exit 139, nothing on stderr); fpr_scan printed numpy overflow warnings."""
    import subprocess
    import sys

    frame = pl.read_csv(SAMPLE).head(300)
    w = np.ones(frame.height, dtype=np.int64)
    w[:3] = 2**62
    data = tmp_path / "d.csv"
    frame.with_columns(pl.Series("w", w)).write_csv(data)
    for scan in (
        {"type": "cbs", "protected": {"column": "ethnicity", "value": "C"}, "metric": "fpr"},
        FPR,
    ):
        spec = {
            "version": 1,
            "name": "weights",
            "data": {"path": str(data)},
            "columns": {"outcome": "default", "recommendation": "high_risk", "weight": "w"},
            "attributes": ATTRIBUTES,
            "scans": [{"id": "s", **scan}],
            "significance": {"replicates": 9, "seed": 0, "workers": 1},
            "output": {"dir": str(tmp_path / "out")},
        }
        path = tmp_path / "w.audit.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "fairscan.cli", "run", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "data error" in done.stderr and "columns.weight" in done.stderr
        assert "Warning" not in done.stderr and "internal error" not in done.stderr
        assert not (tmp_path / "out").exists()  # refused before any scan or report


def test_weights_change_the_audit(tmp_path):
    data = _table(tmp_path, [1, 3, 0, 2])
    weighted = _run(tmp_path, data, FPR)
    plain = _run(tmp_path, data, FPR, weight=None)
    assert weighted.provenance.rows_after_filter == 1500 // 4 * 6
    assert plain.provenance.rows_after_filter == 1500
    assert weighted.scans[0].population.size != plain.scans[0].population.size


def test_fractional_weights(tmp_path):
    data = _table(tmp_path, [0.5, 1.5])
    # honoured by the scans that work on rows and in the null draws (per row, times the weight)
    for scan in (CERTIFY, FPR):
        report = _run(tmp_path, data, scan)
        assert report.scans[0].status != "error", report.scans[0].error
        assert report.provenance.rows_after_filter == 1500  # relative weights: n is the rows
    halves = _run(tmp_path, data, FPR, replicates=0).scans[0]
    # scaling every weight by 2 gives whole numbers (frequency weights): the same subgroup and
    # rates (the fractional weights are relative, the whole ones counts)
    doubled = _run(tmp_path, _table(tmp_path, [1, 3]), FPR, replicates=0).scans[0]
    (half,), (double,) = halves.findings, doubled.findings
    assert half.subgroup == double.subgroup
    assert half.effect.inside == pytest.approx(double.effect.inside, rel=1e-9)
    assert half.effect.reference == pytest.approx(double.effect.reference, rel=1e-9)


def test_the_weighted_quantile_is_numpy_s_of_the_repeated_rows() -> None:
    """Berk-Jones binarises a continuous outcome at its alpha-quantile (linear interpolation);
    with sample weights, the same rule on the rows repeated w times (exactly, whole numbers)."""
    from fairscan.scans.bias.scores import weighted_linear_quantile

    rng = np.random.default_rng(4)
    y = np.round(rng.normal(size=60), 1)  # ties included
    w = rng.integers(1, 5, size=60).astype(np.float64)
    for alpha in (0.0, 0.05, 0.3, 0.5, 0.77, 1.0):
        want = float(np.quantile(np.repeat(y, w.astype(int)), alpha))
        assert weighted_linear_quantile(y, w, alpha) == pytest.approx(want, rel=1e-12, abs=1e-12)
    ones = np.ones(60)
    assert weighted_linear_quantile(y, ones, 0.3) == pytest.approx(float(np.quantile(y, 0.3)))


def test_continuous_berk_jones_takes_fractional_weights(tmp_path):
    """A continuous outcome binarised for Berk-Jones under fractional weights: cut at the
    weighted quantile, the weights change the result and their scale does not."""
    scan = {
        "type": "bias_scan",
        "outcome": "income",
        "outcome_type": "continuous",
        "score": "berk_jones",
        "alpha": 0.3,
        "restarts": 5,
    }
    weighted = _run(tmp_path, _table(tmp_path, [0.5, 1.5]), scan).scans[0]
    assert weighted.status != "error", weighted.error
    scaled = _run(tmp_path, _table(tmp_path, [3.65, 10.95]), scan).scans[0]  # x 7.3
    assert weighted.parameters["binarised"] == scaled.parameters["binarised"]
    assert [f.statistic.value for f in weighted.findings] == pytest.approx(
        [f.statistic.value for f in scaled.findings], rel=1e-9
    )
    whole = _run(tmp_path, _table(tmp_path, [1, 3]), scan).scans[0]
    assert whole.status != "error", whole.error  # whole numbers: the rows repeated


GAUSSIAN = {
    "type": "bias_scan",
    "outcome": "income_k",
    "outcome_type": "continuous",
    "score": "gaussian",
    "prediction": "score",
    "direction": "positive",
    "restarts": 5,
}
COUNT = {"type": "bias_scan", "outcome_type": "count", "score": "poisson", "restarts": 5}


def test_fractional_gaussian_score_against_the_weighted_likelihood(tmp_path):
    """Weighted likelihood sum_S w_i (mu Delta_i - mu^2 / 2) / sigma^2: maximised at the
    weighted mean shift, its maximum (sum_S w Delta)^2 / (2 sigma^2 sum_S w); sigma^2 the
    weighted pooled variance (ddof 1 over the weights' total, n)."""
    path, frame = _frame_weights(tmp_path)
    scan = _run(tmp_path, path, GAUSSIAN).scans[0]
    finding = scan.findings[0]
    w = frame["w"].to_numpy()
    delta = frame["income_k"].to_numpy() - frame["score"].to_numpy()
    mean = np.average(delta, weights=w)
    variance = float((w * (delta - mean) ** 2).sum() / (w.sum() - 1))
    assert scan.parameters["pooled_variance"] == pytest.approx(variance, rel=1e-12)
    inside = _inside(frame, finding.subgroup)
    shift = float(np.average(delta[inside], weights=w[inside]))
    # brute force over mu: the weighted log-likelihood ratio on a fine grid around the optimum
    grid = shift * np.linspace(0.9, 1.1, 2001)
    llr = (grid * (w * delta)[inside].sum() - grid**2 * w[inside].sum() / 2) / variance
    closed = float((w * delta)[inside].sum() ** 2 / (2 * variance * w[inside].sum()))
    assert llr.max() == pytest.approx(closed, rel=1e-6)
    assert finding.detail["llr"] == pytest.approx(closed, rel=1e-9)
    assert finding.detail["mean_shift"] == pytest.approx(shift, rel=1e-9)
    assert finding.size == round(float(w[inside].sum()))


def test_fractional_poisson_score_against_the_weighted_likelihood(tmp_path):
    """Weighted likelihood sum_S w_i (y_i log q - mu_i (q - 1)) = C log q - E (q - 1) with
    C = sum_S w y, E = sum_S w mu: maximised at q = C / E."""
    path, frame = _frame_weights(tmp_path)
    finding = _run(tmp_path, path, COUNT).scans[0].findings[0]
    w = frame["w"].to_numpy()
    y = frame["default"].to_numpy().astype(float)
    mu = frame["score"].to_numpy()
    inside = _inside(frame, finding.subgroup)
    c, e = float((w * y)[inside].sum()), float((w * mu)[inside].sum())
    q = np.exp(np.linspace(-6, 0, 60001))  # direction negative: q <= 1, by brute force
    best = float((c * np.log(q) - e * (q - 1)).max())
    assert finding.detail["observed_count"] == pytest.approx(c, rel=1e-12)
    assert finding.detail["expected_count"] == pytest.approx(e, rel=1e-12)
    assert finding.detail["q"] == pytest.approx(c / e, rel=1e-9)
    assert finding.detail["llr"] == pytest.approx(best, rel=1e-6)
    assert finding.detail["llr"] == pytest.approx(c * math.log(c / e) - c + e, rel=1e-9)


def _weighted_cells(draw_rows: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 2, (draw_rows, 1)).astype(np.int32)
    w = rng.uniform(0.2, 3.0, draw_rows)
    return rng, codes, w, np.array([2], np.int32)


@pytest.mark.slow
def test_fractional_poisson_and_gaussian_null_draws_are_per_row_times_the_weight():
    """The law of each cell's null sum: sum_i w_i Y_i with Y_i ~ Poisson(mu_i) (mean sum w mu,
    variance sum w^2 mu), and sum_i w_i Delta_i / sigma_i^2 with Delta_i ~ N(0, sigma_i^2)
    (variance sum w^2 / sigma^2), as the scan builds its cells."""
    from fairscan.engine.cells import compress
    from fairscan.engine.mdss import ScanProblem
    from fairscan.engine.scores import draw_cells, gaussian
    from fairscan.scans.mdss_runner import MdssInputs, scan_cells

    rng, codes, w, card = _weighted_cells()
    n = codes.shape[0]
    mu = rng.uniform(0.5, 2.0, n)
    from dataclasses import replace

    cells = replace(compress(codes, np.zeros(n), mu, card, w), row_weight=w)
    draws = np.array([draw_cells(cells, "poisson", rng).observed for _ in range(20000)])
    sigma2 = rng.uniform(0.5, 2.0, n)
    problem = ScanProblem.build(codes, np.zeros(n), np.zeros(n), clip=False)
    inputs = MdssInputs(
        rows=np.ones(n, bool),
        observed=np.zeros(n),
        expected=np.zeros(n),
        direction=1,
        population="",
        observed_label="",
        metric="",
        reference="expected",
        reference_name="",
        describe=lambda *a: "",
        score=gaussian(),
        draw="gaussian",
        clip=False,
        weight=1.0 / sigma2,
        multiplicity=w,
    )
    gcells = scan_cells(problem, inputs)
    gdraws = np.array([draw_cells(gcells, "gaussian", rng).observed for _ in range(20000)])
    for c in range(cells.n_cells):
        rows = cells.row_cell == c
        assert draws[:, c].mean() == pytest.approx(float((w * mu)[rows].sum()), rel=0.02)
        assert draws[:, c].var() == pytest.approx(float((w**2 * mu)[rows].sum()), rel=0.05)
    for c in range(gcells.n_cells):
        grows = gcells.row_cell == c
        assert gcells.weight[c] == pytest.approx(float((w / sigma2)[grows].sum()), rel=1e-12)
        assert gdraws[:, c].var() == pytest.approx(float((w**2 / sigma2)[grows].sum()), rel=0.05)


BIAS_SETTINGS = [
    pytest.param(GAUSSIAN, id="gaussian"),
    pytest.param(COUNT, id="count"),
    pytest.param({**COUNT, "outcome_type": "ordinal"}, id="ordinal"),
    pytest.param({"type": "bias_scan", "outcome_type": "nominal", "restarts": 5}, id="nominal"),
    pytest.param(
        {"type": "bias_scan", "outcome_type": "nominal", "positive": 1, "restarts": 5},
        id="one-class",
    ),
]


@pytest.mark.parametrize("scan", BIAS_SETTINGS)
def test_equal_fractional_bias_scan_weights_are_no_weights(tmp_path, scan):
    data = _table(tmp_path, [0.3])
    got = _run(tmp_path, data, scan).scans[0].model_dump(exclude={"timing"})
    want = _run(tmp_path, data, scan, weight=None).scans[0].model_dump(exclude={"timing"})
    _close(want, got)


@pytest.mark.parametrize("weight", [0.5, 0.1])
def test_equal_fractional_weights_are_no_weights(tmp_path, weight):
    data = _table(tmp_path, [weight])
    for scan in (CERTIFY, FPR):
        got = _run(tmp_path, data, scan).scans[0].model_dump(exclude={"timing"})
        want = _run(tmp_path, data, scan, weight=None).scans[0].model_dump(exclude={"timing"})
        _close(want, got)


BERK_JONES = {"type": "bias_scan", "score": "berk_jones", "alpha": 0.2, "restarts": 10}


def test_berk_jones_integer_weights_equal_the_replicated_table(tmp_path):
    frame = pl.read_csv(SAMPLE).head(1500)
    w = np.random.default_rng(8).choice([0, 1, 2, 3], size=frame.height)
    weighted, replicated = tmp_path / "weighted.csv", tmp_path / "replicated.csv"
    frame.with_columns(pl.Series("w", w)).write_csv(weighted)
    frame[np.repeat(np.arange(frame.height), w)].write_csv(replicated)
    got = _run(tmp_path, weighted, BERK_JONES).scans[0].model_dump(exclude={"timing"})
    want = _run(tmp_path, replicated, BERK_JONES, weight=None).scans[0]
    _close(want.model_dump(exclude={"timing"}), got)  # p-values too: draws per unit of weight
    assert got["findings"], "the example must find a subgroup"


def test_fractional_berk_jones_score_against_the_closed_form(tmp_path):
    path, frame = _frame_weights(tmp_path)
    (finding,) = _run(tmp_path, path, BERK_JONES).scans[0].findings
    inside = _inside(frame, finding.subgroup)
    w, y = frame["w"].to_numpy(), frame["default"].to_numpy().astype(float)
    observed = float((w * y)[inside].sum())
    share = observed / w[inside].sum()  # n KL(share || alpha), the Berk-Jones statistic
    kl = share * math.log(share / 0.2) + (1 - share) * math.log((1 - share) / 0.8)
    assert finding.detail["llr"] == pytest.approx(w[inside].sum() * kl, rel=1e-9)
    assert finding.size == round(float(w[inside].sum()))


def _frame_weights(tmp_path: Path, seed: int = 3, n: int = 1500) -> tuple[Path, pl.DataFrame]:
    frame = pl.read_csv(SAMPLE).head(n)
    w = np.random.default_rng(seed).uniform(0.1, 4.0, n)
    # income in units of 10,000 (a continuous outcome on the predictions' scale)
    frame = frame.with_columns(pl.Series("w", w), (pl.col("income") / 1e4).alias("income_k"))
    path = tmp_path / "f.csv"
    frame.write_csv(path)
    return path, frame.with_columns(pl.Series("w", w * n / w.sum()))  # the weights as used


def _inside(frame: pl.DataFrame, subgroup: dict[str, list[str]]) -> np.ndarray:
    inside = np.ones(frame.height, bool)
    for column, values in subgroup.items():
        inside &= frame[column].cast(pl.Utf8).is_in(values).to_numpy()
    return inside


def _bernoulli_llr(observed: float, w: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """max over q >= 1 of C log q - sum w log(1 - p + q p) (bisection on log q): (F, q)."""
    lo, hi = 0.0, math.log(1e6)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        fitted = float((w * p * math.exp(mid) / (1 - p + p * math.exp(mid))).sum())
        lo, hi = (mid, hi) if fitted < observed else (lo, mid)
    u = 0.5 * (lo + hi)
    return observed * u - float((w * np.log1p(p * math.expm1(u))).sum()), math.exp(u)


def test_fractional_fpr_scan_score_against_the_closed_form(tmp_path):
    path, frame = _frame_weights(tmp_path)
    scan = _run(tmp_path, path, FPR, replicates=0).scans[0]
    (finding,) = scan.findings
    negatives = frame["default"].to_numpy() == 0
    inside = _inside(frame, finding.subgroup) & negatives
    w, y = frame["w"].to_numpy(), frame["high_risk"].to_numpy().astype(float)
    rate = float((w * y)[negatives].sum() / w[negatives].sum())  # the FPR-Scan's expectation
    observed = float((w * y)[inside].sum())
    llr, q = _bernoulli_llr(observed, w[inside], np.full(int(inside.sum()), rate))
    assert finding.detail["observed_count"] == pytest.approx(observed, rel=1e-12)
    assert finding.detail["expected_count"] == pytest.approx(rate * w[inside].sum(), rel=1e-12)
    assert finding.detail["llr"] == pytest.approx(llr, rel=1e-9)
    assert finding.detail["q"] == pytest.approx(q, rel=1e-6)
    assert finding.effect.inside == pytest.approx(observed / w[inside].sum(), rel=1e-12)
    assert scan.population.size == round(float(w[negatives].sum()))


def test_fractional_null_draws_are_per_row_times_the_weight():
    from fairscan.engine.cells import bernoulli_sums, compress

    rng = np.random.default_rng(0)
    n = 40
    codes = rng.integers(0, 2, (n, 1)).astype(np.int32)
    p = np.full(n, 0.3)
    w = rng.uniform(0.2, 3.0, n)
    cells = compress(codes, np.zeros(n), p, np.array([2], np.int32), w)
    from dataclasses import replace

    cells = replace(cells, row_weight=w)
    draws = np.array([bernoulli_sums(cells, rng) for _ in range(20000)])
    for c in range(cells.n_cells):
        rows = cells.row_cell == c
        mean = float((w[rows] * 0.3).sum())
        var = float((w[rows] ** 2 * 0.3 * 0.7).sum())
        assert draws[:, c].mean() == pytest.approx(mean, rel=0.02)
        assert draws[:, c].var() == pytest.approx(var, rel=0.05)
    # whole-number weights: per unit of weight, Binomial(weight, p) per cell, as repeated rows
    whole = replace(cells, row_weight=None, weight=np.array([3.0, 5.0]))
    draws = np.array([bernoulli_sums(whole, rng) for _ in range(20000)])
    assert draws.var(axis=0) == pytest.approx([3 * 0.21, 5 * 0.21], rel=0.05)


def test_fractional_certify_estimates_against_the_closed_form(tmp_path):
    path, frame = _frame_weights(tmp_path)
    detail = _run(tmp_path, path, CERTIFY).scans[0].detail["certification"]
    w = frame["w"].to_numpy()
    negatives = frame["default"].to_numpy() == 0
    L = frame["high_risk"].to_numpy().astype(float)
    theta = float(np.average(L[negatives], weights=w[negatives]))
    assert detail["theta"] == pytest.approx(theta, rel=1e-12)
    ethnicity = frame["ethnicity"].cast(pl.Utf8).to_numpy()
    for group in detail["groups"]:
        rows = negatives & (ethnicity == group["subgroup"]["ethnicity"][0])
        estimate = float(np.average(L[rows], weights=w[rows]))
        assert group["estimate"] == pytest.approx(estimate, rel=1e-12)
        assert group["gap"] == pytest.approx(estimate - theta, rel=1e-9, abs=1e-12)
        assert group["share"] == pytest.approx(w[rows].sum() / w.sum(), rel=1e-12)


def test_fractional_ijdi_criterion_against_the_closed_form(tmp_path):
    from sklearn.linear_model import LogisticRegression

    path, frame = _frame_weights(tmp_path)
    scan = _run(tmp_path, path, {"type": "ijdi_scan", "lambda": 0.5, "restarts": 5}).scans[0]
    finding = scan.findings[0]
    criterion = finding.detail["ijdi"]
    w = frame["w"].to_numpy()
    y = frame["default"].to_numpy()
    rec = frame["high_risk"].to_numpy().astype(float)
    negatives = y == 0
    inside = _inside(frame, finding.subgroup) & negatives
    others = negatives & ~inside
    # the base rate: a logistic regression weighted by the sample weights (one-hot attributes)
    design = np.hstack(
        [
            (values[:, None] == np.unique(values)[None, 1:]).astype(float)
            for values in (frame[c].cast(pl.Utf8).to_numpy() for c in ATTRIBUTES)
        ]
    )
    model = LogisticRegression(max_iter=2000).fit(design, y, sample_weight=w)
    base = model.predict_proba(design)[:, 1]
    assert criterion["rate_inside"] == pytest.approx(np.average(rec[inside], weights=w[inside]))
    assert criterion["rate_outside"] == pytest.approx(np.average(rec[others], weights=w[others]))
    assert criterion["base_rate_inside"] == pytest.approx(
        np.average(base[inside], weights=w[inside]), rel=1e-5
    )
    assert finding.effect.inside_count == round(float(w[inside].sum()))


def test_weighted_cbs_sigma_is_the_sd_of_the_rows_repeated():
    from fairscan.engine.cbs import SIGMA_SD, gaussian_sigma

    rng = np.random.default_rng(1)
    delta = rng.normal(size=50)
    w = rng.integers(1, 5, 50)
    repeated = np.std(np.repeat(delta, w), ddof=1)
    assert gaussian_sigma(delta, SIGMA_SD, w.astype(float)) == pytest.approx(repeated, rel=1e-12)


@pytest.mark.parametrize("scan", [FPR, CERTIFY])
def test_streamed_weights_equal_in_memory(tmp_path, scan):
    data = _table(tmp_path, [1, 3, 0, 2])
    in_memory = _run(tmp_path, data, scan)
    spec = yaml.safe_load((tmp_path / "w.audit.yaml").read_text())
    spec["data"]["streaming"] = True  # distinct rows with counts, times the weights
    (tmp_path / "w.audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    streamed = run_audit(tmp_path / "w.audit.yaml", RunOptions(write=False)).report
    a, b = (r.scans[0].model_dump(exclude={"timing"}) for r in (in_memory, streamed))
    _close(a, b)
    assert streamed.provenance.rows_after_filter == in_memory.provenance.rows_after_filter


@pytest.mark.parametrize("estimated", [True, False])
def test_weighted_shift_process_against_the_dense_eigenproblem(estimated):
    """The 4x4 route with sample weights s (mean 1) against the dense n x n problem: the
    supremum over the unit ball of h' A h, A = ((w s L) s' - (w s)(s L)' - t s s') / n^2."""
    from fairscan.engine import rkhs

    rng = np.random.default_rng(5)
    n, B, bw = 60, 4, 0.8
    X = rng.normal(size=(n, 2))
    L = (rng.random(n) < 0.3).astype(float)
    s = rng.uniform(0.2, 3.0, n)
    s *= n / s.sum()
    theta = float(np.average(L, weights=s)) if estimated else 0.25
    Lc = L - theta
    seed = np.random.SeedSequence(9)
    forms = rkhs.bootstrap_forms(X, Lc, bw, B, seed, None, weight=s)
    t = forms.sum_wL / n if estimated else np.zeros(B)
    lam_min, lam_max = rkhs.extreme_eigenvalues(forms.Q, t, n)
    counts = rkhs.resample_counts(n, B, seed)
    diff = X[:, None, :] - X[None, :, :]
    K = np.exp(-(diff**2).sum(-1) / (2 * bw * bw))
    vals, vecs = np.linalg.eigh(K)
    root = vecs @ np.diag(np.sqrt(np.clip(vals, 0, None))) @ vecs.T
    for b in range(B):
        ws = counts[b] * s
        A = (np.outer(ws * Lc, s) - np.outer(ws, s * Lc) - t[b] * np.outer(s, s)) / n**2
        dense = np.linalg.eigvalsh(root @ ((A + A.T) / 2) @ root)
        assert lam_max[b] == pytest.approx(dense.max(), rel=1e-8, abs=1e-12)
        assert lam_min[b] == pytest.approx(dense.min(), rel=1e-8, abs=1e-12)
    # t: the weighted mean of (w - 1) psi, psi = L - theta (sum s psi = 0)
    if estimated:
        assert t == pytest.approx(((counts - 1) * s * Lc).sum(axis=1) / n, abs=1e-12)


def test_fractional_shift_tilt_estimate_against_the_closed_form(tmp_path):
    path, frame = _frame_weights(tmp_path)
    scan = {
        "type": "shift",
        "metric": "fpr",
        "features": ["income"],
        "kernel": {"bandwidth": 0.5},
        "bootstrap": 50,
        "tilts": [{"name": "low-income", "centers": [{"income": 15000}]}],
    }
    detail = _run(tmp_path, path, scan).scans[0].detail
    negatives = frame["default"].to_numpy() == 0
    w = frame["w"].to_numpy()[negatives]
    x = frame["income"].to_numpy().astype(float)[negatives]
    L = frame["high_risk"].to_numpy().astype(float)[negatives]
    mean = np.average(x, weights=w)
    sd = math.sqrt(np.average((x - mean) ** 2, weights=w))
    h = np.exp(-(((x - mean) / sd - (15000 - mean) / sd) ** 2) / (2 * 0.5**2))
    theta = np.average(L, weights=w)
    (tilt,) = detail["tilts"]
    assert detail["theta"] == pytest.approx(theta, rel=1e-12)
    assert tilt["estimate"] == pytest.approx(np.average(L, weights=w * h) - theta, rel=1e-9)
    assert tilt["mean_h"] == pytest.approx(np.average(h, weights=w), rel=1e-9)
    assert tilt["effective_sample_size"] == pytest.approx(
        (w * h).sum() ** 2 / ((w * h) ** 2).sum(), rel=1e-9
    )


def _brute_measures(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """Weighted ROC AUC, ranking loss and PR AUC by brute force over pairs and thresholds."""
    pos, neg = y == 1, y == 0
    above = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
    pair_w = w[pos][:, None] * w[neg][None, :]
    auc = float((pair_w * above).sum() / (w[pos].sum() * w[neg].sum()))
    below = (s[neg][None, :] > s[pos][:, None]) + 0.5 * (s[neg][None, :] == s[pos][:, None])
    arl = float((w[pos] * (below * w[neg][None, :]).sum(axis=1)).sum() / w[pos].sum())
    area, prev, tp, fp = 0.0, 1.0, 0.0, 0.0
    for t in np.unique(s)[::-1]:
        at = s == t
        d_tp, d_fp = float(w[at & pos].sum()), float(w[at & neg].sum())
        tp, fp = tp + d_tp, fp + d_fp
        precision = tp / (tp + fp)
        area += d_tp * (precision + prev) / 2
        prev = precision
    return {"roc_auc": auc, "ranking_loss": arl, "pr_auc": area / float(w[pos].sum())}


@pytest.mark.parametrize("name", ["roc_auc", "pr_auc", "ranking_loss"])
def test_weighted_subroc_measures_against_brute_force(name):
    from fairscan.engine.subroc import SearchConfig, measure, search

    rng = np.random.default_rng(2)
    n = 400
    codes = rng.integers(0, 3, (n, 2)).astype(np.int32)
    y = (rng.random(n) < 0.4).astype(np.int8)
    score = np.round(rng.random(n) + 0.3 * y - 0.4 * (codes[:, 0] == 1) * y, 2)  # ties
    w = rng.uniform(0.2, 3.0, n)
    assert measure(y, score, name, w) == pytest.approx(_brute_measures(y, score, w)[name])
    for a, v in ((0, 1), (1, 2)):  # a subgroup's measure (the search's per-value pass)
        rows = codes[:, a] == v
        assert measure(y[rows], score[rows], name, w[rows]) == pytest.approx(
            _brute_measures(y[rows], score[rows], w[rows])[name]
        )
    if name == "ranking_loss":  # a subgroup's ARL counts its own negatives: none exceeds all's
        return
    config = SearchConfig(measure=name, max_length=2, min_cover=10, candidates=20)
    found = search(codes, y, score, [3, 3], config, sample_weight=w)
    assert found.patterns
    assert found.overall == pytest.approx(_brute_measures(y, score, w)[name], rel=1e-12)
    for p in found.patterns:
        rows = np.ones(n, bool)
        for a, v in p.selectors:
            rows &= codes[:, a] == v
        brute = _brute_measures(y[rows], score[rows], w[rows])[name]
        assert p.value == pytest.approx(brute, rel=1e-12, abs=1e-12)
        assert p.size == pytest.approx(w[rows].sum(), rel=1e-12)
        assert p.positives == pytest.approx(w[rows & (y == 1)].sum(), rel=1e-12)
    # the pruned search returns the unpruned top-k' (the weighted optimistic estimates bound)
    unpruned = search(
        codes, y, score, [3, 3], SearchConfig(**{**config.__dict__, "prune": False}), w
    )
    assert [p.key for p in found.patterns] == [p.key for p in unpruned.patterns]


def test_weighted_subroc_null_draws_carry_the_rows_weights():
    from fairscan.engine.subroc_kernels import MEASURE_ROC, null_measures

    rng = np.random.default_rng(4)
    n = 300
    y = (rng.random(n) < 0.5).astype(np.int8)
    grp = np.arange(n, dtype=np.int32)  # rows in score order, no ties
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    up, un = rng.random((50, 20)), rng.random((50, 30))
    plain = null_measures(up, un, pos, neg, y, grp, MEASURE_ROC)
    ones = null_measures(up, un, pos, neg, y, grp, MEASURE_ROC, wt=np.ones(n))
    assert ones == pytest.approx(plain, rel=1e-12)  # the same subsets
    w = rng.uniform(0.2, 3.0, n)
    weighted = null_measures(up, un, pos, neg, y, grp, MEASURE_ROC, wt=w)
    assert not np.allclose(weighted, plain)
    assert np.all((weighted >= 0) & (weighted <= 1))


def test_fractional_subroc_with_its_holdout_test(tmp_path):
    path, _ = _frame_weights(tmp_path)
    scan = {"type": "subroc", "max_length": 2, "min_cover": 50, "candidates": 5}
    result = _run(tmp_path, path, {**scan, "significance": {"subsets": 200}}).scans[0]
    assert result.status != "error", result.error
    detail = result.detail["subroc"]
    assert detail["patterns"] and all(
        0 < p["p_value"] <= 1 for p in detail["patterns"] if p["p_value"] is not None
    )
    assert detail["search_rows"] + detail["validation_rows"] == pytest.approx(1500, abs=1)


@pytest.mark.slow
def test_fractional_null_draws_hold_their_level(tmp_path):
    """Type-I error of fpr_scan with fractional weights: data drawn under its null (each row's
    recommendation Bernoulli(p), independent of the attributes), heavy-tailed survey weights;
    the share of p-values <= 0.1 stays within a binomial band around 0.1."""
    rng = np.random.default_rng(2026)
    base = pl.read_csv(SAMPLE).head(600).select(ATTRIBUTES)
    runs, hits = 80, 0
    for r in range(runs):
        w = rng.lognormal(0.0, 1.0, base.height)
        frame = base.with_columns(
            pl.Series("default", (rng.random(base.height) < 0.3).astype(np.int64)),
            pl.Series("score", rng.random(base.height)),
            pl.Series("high_risk", (rng.random(base.height) < 0.2).astype(np.int64)),
            pl.Series("w", w),
        )
        path = tmp_path / f"null{r}.csv"
        frame.write_csv(path)
        scan = _run(tmp_path, path, {"type": "fpr_scan", "restarts": 3}, replicates=49).scans[0]
        hits += scan.status == "significant" or bool(
            scan.findings and (scan.findings[0].p_value or 1.0) <= 0.1
        )
    # 80 runs at a true level 0.1: mean 8, sd 2.7; a per-unit-of-weight null would be far off
    assert hits <= 16, hits


def test_fractional_gaussian_given_subgroup_p_value_against_the_normal_tail(tmp_path):
    """A given subgroup's Gaussian test with fractional weights: under the null its weighted
    sum s = sum_S w Delta / sigma^2 is N(0, sum_S w^2 / sigma^2), so p = Phi(-|s| / sd) in the
    direction of s; the parametric draws (per row times the weight) reproduce it."""
    from scipy.stats import norm

    path, frame = _frame_weights(tmp_path)
    rng = np.random.default_rng(4)
    # a prediction correct in expectation: residuals N(0, 1), so s / sd is of order 1
    frame = frame.with_columns((pl.col("income_k") - rng.normal(size=frame.height)).alias("pred"))
    frame.write_csv(path)
    w = frame["w"].to_numpy()
    delta = frame["income_k"].to_numpy() - frame["pred"].to_numpy()
    inside = _inside(frame, {"ethnicity": ["B"]})
    direction = "positive" if (w * delta)[inside].sum() > 0 else "negative"
    given = {**GAUSSIAN, "prediction": "pred", "direction": direction}
    scan = _run(tmp_path, path, {**given, "subgroups": [{"ethnicity": ["B"]}]}, replicates=4000)
    (finding,) = scan.scans[0].findings
    variance = scan.scans[0].parameters["pooled_variance"]
    s = float((w * delta)[inside].sum() / variance)
    sd = math.sqrt(float((w**2)[inside].sum() / variance))
    tail = float(norm.sf(abs(s) / sd))
    assert finding.detail["given_subgroup"]["test"] == "parametric draws"
    assert 0.02 < tail < 0.98  # a tail the draws can resolve
    assert finding.p_value == pytest.approx(tail, abs=0.02)  # 4000 draws: SE below 0.007
    # were the draws per unit of weight (variance sum w / sigma^2), the tail would differ
    assert abs(norm.sf(abs(s) / math.sqrt(w[inside].sum() / variance)) - tail) > 0.025
