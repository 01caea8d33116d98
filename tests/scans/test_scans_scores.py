"""Bias Scan with the Gaussian, Poisson and Berk-Jones scores, ordinal and nominal outcomes, and
the FPR-Scan with Berk-Jones, end to end through the library API on small generated tables.

Every reported score is compared with brute force over all subgroups (tests/oracle), every
finding's effect with the subgroup's own means, and every bad input with a clear error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from brute_force import brute_force_scan
from score_brute import brute_force, gaussian_score, poisson_score

from fairscan.api import RunOptions, prepare_audit, run_prepared
from fairscan.errors import DataError
from fairscan.report.markdown import _scan_section as scan_markdown
from fairscan.report.models import ScanResult

N = 600
CARDINALITY = [3, 2, 3]


def _table(seed: int = 0) -> pl.DataFrame:
    """Three attributes (a, b, c), a regression, a count and a three-class model, each biased
    for a = a1 and c = c2."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, N) for k in CARDINALITY])
    biased = (codes[:, 0] == 1) & (codes[:, 2] == 2)
    cost_hat = rng.uniform(80, 120, N)
    cost = cost_hat + rng.normal(0, 10, N) + 12.0 * biased
    rate = rng.uniform(0.5, 2.0, N)
    count = rng.poisson(rate * np.where(biased, 1.8, 1.0))
    probabilities = rng.dirichlet([3.0, 3.0, 3.0], N)
    shifted = probabilities.copy()
    shifted[biased, 0] += 1.0
    shifted /= shifted.sum(axis=1, keepdims=True)
    u = rng.random(N)[:, None]
    grade = (np.cumsum(shifted, axis=1) <= u).sum(axis=1)
    return pl.DataFrame(
        {
            "a": [f"a{v}" for v in codes[:, 0]],
            "b": [f"b{v}" for v in codes[:, 1]],
            "c": [f"c{v}" for v in codes[:, 2]],
            "cost": cost.round(3),
            "cost_hat": cost_hat.round(3),
            "var": rng.uniform(50, 150, N).round(3),
            "n": count,
            "rate": rate.round(4),
            "level": np.array(["low", "mid", "high"])[np.minimum(count, 2)],
            "grade": np.array(["A", "B", "C"])[grade],
            "p_A": probabilities[:, 0],
            "p_B": probabilities[:, 1],
            "p_C": 1.0 - probabilities[:, 0] - probabilities[:, 1],
            "y": (rng.random(N) < 0.3).astype(int),
            "r": (rng.random(N) < np.where(biased, 0.6, 0.2)).astype(int),
        }
    )


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return _table()


def _codes(frame: pl.DataFrame) -> np.ndarray:
    return np.column_stack(
        [np.array([int(v[1:]) for v in frame[name].to_list()]) for name in ("a", "b", "c")]
    )


def _run(
    tmp_path: Path, frame: pl.DataFrame, scan: str, replicates: int = 0, workers: int = 1
) -> ScanResult:
    frame.write_csv(tmp_path / "d.csv")
    (tmp_path / "t.audit.yaml").write_text(
        "version: 1\nname: t\ndata: {path: d.csv}\n"
        "columns: {outcome: y, recommendation: r}\nattributes: [a, b, c]\n"
        f"scans:\n  - {scan}\nsignificance: {{replicates: {replicates}, seed: 3}}\n"
    )
    prepared = prepare_audit(tmp_path / "t.audit.yaml", RunOptions(workers=workers))
    return run_prepared(prepared, RunOptions(write=False, workers=workers)).report.scans[0]


def _subgroup_rows(frame: pl.DataFrame, subgroup: dict[str, list[str]]) -> np.ndarray:
    inside = np.ones(frame.height, bool)
    for name, values in subgroup.items():
        inside &= frame[name].is_in(values).to_numpy()
    return inside


def _as_labels(subgroup: tuple) -> dict[str, list[str]]:
    out = {}
    for name, values, k in zip("abc", subgroup, CARDINALITY, strict=True):
        if len(values) < k:
            out[name] = sorted(f"{name}{v}" for v in values)
    return out


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------

GAUSSIAN = (
    "{id: g, type: bias_scan, outcome: cost, prediction: cost_hat, outcome_type: continuous, "
    "score: gaussian, direction: positive, penalty: 0.5, restarts: 30}"
)


def test_gaussian_pooled_variance_matches_brute_force(tmp_path, table):
    scan = _run(tmp_path, table, GAUSSIAN, replicates=19)
    delta = table["cost"].to_numpy() - table["cost_hat"].to_numpy()
    variance = np.full(N, np.var(delta, ddof=1))
    want, arg = brute_force(
        _codes(table), CARDINALITY, lambda m: gaussian_score(delta[m], variance[m], 1), 0.5
    )
    finding = scan.findings[0]
    assert finding.statistic.value == pytest.approx(want, rel=1e-9)
    assert finding.subgroup == _as_labels(arg) == {"a": ["a1"], "c": ["c2"]}
    assert scan.parameters["variance"] == "pooled"
    assert scan.parameters["pooled_variance"] == pytest.approx(variance[0])
    # the effect: mean outcome vs mean prediction inside, in the outcome's units
    inside = _subgroup_rows(table, finding.subgroup)
    assert finding.size == inside.sum()
    assert finding.effect.metric == "mean cost"
    assert finding.effect.inside == pytest.approx(table["cost"].to_numpy()[inside].mean())
    assert finding.effect.reference == pytest.approx(table["cost_hat"].to_numpy()[inside].mean())
    assert finding.detail["mean_shift"] == pytest.approx(delta[inside].mean())
    assert finding.detail["score_function"] == "gaussian" and finding.detail["q"] is None
    assert "mean cost" in finding.description and "mean shift +" in finding.description
    assert finding.p_value == pytest.approx(1 / 20) and finding.significant


def test_gaussian_per_row_variances_match_brute_force(tmp_path, table):
    scan = _run(tmp_path, table, GAUSSIAN.replace("}", ", variance_column: var}"))
    delta = table["cost"].to_numpy() - table["cost_hat"].to_numpy()
    variance = table["var"].to_numpy()
    want, _ = brute_force(
        _codes(table), CARDINALITY, lambda m: gaussian_score(delta[m], variance[m], 1), 0.5
    )
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)
    assert "per-row variances" in scan.parameters["variance"]


def test_gaussian_with_a_constant_prediction_is_finite(tmp_path, table):
    """AIF360 divides by the variance of the expectations: 6e36 for a constant one."""
    frame = table.with_columns(pl.lit(100.0).alias("cost_hat"))
    scan = _run(tmp_path, frame, GAUSSIAN)
    delta = frame["cost"].to_numpy() - 100.0
    variance = np.full(N, np.var(delta, ddof=1))
    want, _ = brute_force(
        _codes(frame), CARDINALITY, lambda m: gaussian_score(delta[m], variance[m], 1), 0.5
    )
    assert np.isfinite(scan.findings[0].statistic.value)
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)


def test_gaussian_without_prediction_uses_the_overall_mean(tmp_path, table):
    scan = _run(tmp_path, table, GAUSSIAN.replace("prediction: cost_hat, ", ""))
    cost = table["cost"].to_numpy()
    delta = cost - cost.mean()
    variance = np.full(N, np.var(delta, ddof=1))
    want, _ = brute_force(
        _codes(table), CARDINALITY, lambda m: gaussian_score(delta[m], variance[m], 1), 0.5
    )
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)
    assert "overall mean of cost" in scan.parameters["expectation"]
    assert "overall mean of cost" in scan.findings[0].description


def test_gaussian_zero_pooled_variance_is_a_clear_error(tmp_path, table):
    frame = table.with_columns((pl.col("cost_hat") + 5.0).alias("cost"))
    scan = _run(tmp_path, frame, GAUSSIAN)
    assert scan.status == "error"
    assert "pooled variance is 0" in scan.error and "scans[0].score" in scan.error


def test_gaussian_nonpositive_variance_column_is_a_clear_error(tmp_path, table):
    frame = table.with_columns(
        pl.when(pl.col("a") == "a0").then(0.0).otherwise(pl.col("var")).alias("var")
    )
    scan = _run(tmp_path, frame, GAUSSIAN.replace("}", ", variance_column: var}"))
    assert scan.status == "error" and "variances > 0" in scan.error
    assert "scans[0].variance_column" in scan.error


def test_gaussian_null_values_in_an_attribute_are_their_own_category(tmp_path, table):
    """AIF360 crashes or returns a wrong subgroup on NaN features; here nulls are a category."""
    frame = table.with_columns(
        pl.when(pl.col("a") == "a2").then(None).otherwise(pl.col("a")).alias("a")
    )
    scan = _run(tmp_path, frame, GAUSSIAN)
    assert scan.status == "no_test" or scan.findings
    assert scan.findings[0].subgroup == {"a": ["a1"], "c": ["c2"]}


# --------------------------------------------------------------------------------------------
# Poisson: counts and ordinal codes
# --------------------------------------------------------------------------------------------

POISSON = (
    "{id: p, type: bias_scan, outcome: n, prediction: rate, outcome_type: count, "
    "score: poisson, direction: positive, penalty: 0.5, restarts: 30}"
)


def _poisson_brute(frame: pl.DataFrame, observed: np.ndarray, expected: np.ndarray, direction: int):
    return brute_force(
        _codes(frame),
        CARDINALITY,
        lambda m: poisson_score(observed[m].sum(), expected[m].sum(), direction),
        0.5,
    )


def test_poisson_counts_match_brute_force(tmp_path, table):
    scan = _run(tmp_path, table, POISSON, replicates=19)
    count, rate = table["n"].to_numpy().astype(float), table["rate"].to_numpy()
    want, arg = _poisson_brute(table, count, rate, 1)
    finding = scan.findings[0]
    assert finding.statistic.value == pytest.approx(want, rel=1e-9)
    assert finding.subgroup == _as_labels(arg)
    inside = _subgroup_rows(table, finding.subgroup)
    assert finding.effect.metric == "n per row"
    assert finding.effect.inside == pytest.approx(count[inside].mean())
    assert finding.effect.expected == pytest.approx(rate[inside].mean())
    assert finding.detail["q"] == pytest.approx(count[inside].sum() / rate[inside].sum())
    assert "rate ratio" in finding.description and "n per row observed" in finding.description
    assert finding.significant and scan.parameters["null_draws"] == "poisson"


def test_poisson_negative_direction_and_missing_prediction(tmp_path, table):
    scan = _run(
        tmp_path,
        table,
        POISSON.replace("prediction: rate, ", "").replace("positive", "negative"),
    )
    count = table["n"].to_numpy().astype(float)
    want, _ = _poisson_brute(table, count, np.full(N, count.mean()), -1)
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)
    assert scan.findings[0].effect.inside < scan.findings[0].effect.reference


def test_ordinal_levels_are_scored_as_poisson_codes(tmp_path, table):
    scan = _run(
        tmp_path,
        table,
        "{id: o, type: bias_scan, outcome: level, outcome_type: ordinal, score: poisson, "
        "levels: [low, mid, high], direction: positive, penalty: 0.5, restarts: 30}",
    )
    codes = np.minimum(table["n"].to_numpy(), 2).astype(float)
    want, _ = _poisson_brute(table, codes, np.full(N, codes.mean()), 1)
    finding = scan.findings[0]
    assert finding.statistic.value == pytest.approx(want, rel=1e-9)
    assert finding.effect.metric == "mean level code"
    assert scan.parameters["null_draws"] == "permutation"  # the codes' own spread


@pytest.mark.parametrize(
    ("frame_edit", "message"),
    [
        (pl.col("n") - 1, "counts, non-negative integers"),
        (pl.col("n") + 0.5, "counts, non-negative integers"),
    ],
)
def test_count_outcome_mismatches_are_data_errors(tmp_path, table, frame_edit, message):
    with pytest.raises(DataError) as info:
        _run(tmp_path, table.with_columns(frame_edit.alias("n")), POISSON)
    assert message in str(info.value) and "scans[0].outcome" in str(info.value)


def test_negative_poisson_expectations_are_data_errors(tmp_path, table):
    with pytest.raises(DataError) as info:
        _run(tmp_path, table.with_columns((pl.col("rate") - 1.0).alias("rate")), POISSON)
    assert "expected counts, non-negative" in str(info.value)
    assert "scans[0].prediction" in str(info.value)


# --------------------------------------------------------------------------------------------
# Berk-Jones
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", ["0.3", "[0.2, 0.3, 0.45]"])
def test_fpr_scan_berk_jones_matches_brute_force(tmp_path, table, alpha):
    scan = _run(
        tmp_path,
        table,
        f"{{id: f, type: fpr_scan, score: berk_jones, alpha: {alpha}, penalty: 0.5, restarts: 30}}",
        replicates=9,
    )
    negatives = table["y"].to_numpy() == 0
    flagged = table["r"].to_numpy()[negatives].astype(float)
    grid = [float(a) for a in alpha.strip("[]").split(",")]
    per_alpha = [
        brute_force_scan(_codes(table)[negatives], flagged, a, "positive", 0.5).J for a in grid
    ]
    finding = scan.findings[0]
    assert finding.statistic.value == pytest.approx(max(per_alpha), rel=1e-9)
    assert finding.detail["alpha"] == grid[int(np.argmax(per_alpha))]
    assert finding.effect.expected == pytest.approx(finding.detail["alpha"])
    assert scan.parameters["berk_jones_alpha"] == (grid[0] if len(grid) == 1 else grid)
    assert scan.parameters["score"] == "berk_jones"
    assert "Berk-Jones" in finding.description
    assert len(scan.null_distribution.scores) == 9


def test_bias_scan_berk_jones_without_prediction(tmp_path, table):
    scan = _run(
        tmp_path,
        table,
        "{id: b, type: bias_scan, outcome: r, score: berk_jones, alpha: 0.25, "
        "direction: positive, restarts: 30}",
    )
    flagged = table["r"].to_numpy().astype(float)
    want = brute_force_scan(_codes(table), flagged, 0.25, "positive", 0.0).J
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    ("direction", "alpha"), [("negative", 0.5), ("positive", 0.5), ("positive", 0.3)]
)
def test_berk_jones_on_a_continuous_outcome_binarised_at_the_alpha_quantile(
    tmp_path, table, direction, alpha
):
    scan = _run(
        tmp_path,
        table,
        "{id: bj, type: bias_scan, outcome: cost, outcome_type: continuous, score: berk_jones, "
        f"alpha: {alpha}, direction: {direction}, penalty: 0.25, restarts: 30}}",
        replicates=9,
    )
    cost = table["cost"].to_numpy()
    ordered = np.sort(cost)  # the alpha-quantile by linear interpolation, by hand
    h = (len(cost) - 1) * alpha
    cut = ordered[int(np.floor(h))] + (h - np.floor(h)) * (
        ordered[int(np.ceil(h))] - ordered[int(np.floor(h))]
    )
    above = (cost > cut).astype(float)
    want = brute_force_scan(_codes(table), above, alpha, direction, 0.25).J
    assert scan.status != "error", scan.error
    assert scan.findings[0].statistic.value == pytest.approx(want, rel=1e-9)
    assert f"{cut:.6g}" in scan.parameters["binarised"]
    assert "alpha = " in scan.parameters["binarised"] and "AIF360" in scan.parameters["binarised"]
    assert scan.findings[0].effect.metric == f"rate of cost > {cut:.6g}"
    assert len(scan.null_distribution.scores) == 9
    # AIF360's rule: the share above the alpha-quantile is 1 - alpha overall; at alpha 0.3 the
    # whole population already exceeds the level (direction positive), which the scan says
    assert any("whole population" in w for w in scan.warnings) is (alpha == 0.3)


def test_berk_jones_continuous_takes_one_level(tmp_path, table):
    from fairscan.errors import SpecError

    with pytest.raises(SpecError) as info:
        _run(
            tmp_path,
            table,
            "{id: bj, type: bias_scan, outcome: cost, outcome_type: continuous, "
            "score: berk_jones, alpha: [0.1, 0.3]}",
        )
    assert "one level here, not a grid" in str(info.value)


# --------------------------------------------------------------------------------------------
# Nominal
# --------------------------------------------------------------------------------------------

NOMINAL = (
    "{id: m, type: bias_scan, outcome: grade, outcome_type: nominal, "
    "class_probabilities: {A: p_A, B: p_B, C: p_C}, direction: positive, penalty: 0.5, "
    "restarts: 30}"
)


def test_nominal_reports_the_best_class_by_brute_force(tmp_path, table):
    scan = _run(tmp_path, table, NOMINAL, replicates=19)
    grade = table["grade"].to_numpy()
    per_class = {
        label: brute_force_scan(
            _codes(table),
            (grade == label).astype(float),
            table[f"p_{label}"].to_numpy(),
            "positive",
            0.5,
        ).J
        for label in "ABC"
    }
    best = max(per_class, key=per_class.get)
    finding = scan.findings[0]
    assert best == "A" and finding.detail["class"] == "A"
    assert finding.statistic.value == pytest.approx(per_class["A"], rel=1e-9)
    scores = {row["class"]: row["score"] for row in scan.detail["classes"]}
    assert scores == pytest.approx(per_class, rel=1e-9)
    assert finding.description.startswith("Class A:")
    assert finding.effect.metric == "rate of grade = A"
    assert finding.significant and scan.parameters["classes"] == ["A", "B", "C"]


def test_nominal_without_class_probabilities_uses_base_rates(tmp_path, table):
    scan = _run(
        tmp_path, table, NOMINAL.replace("class_probabilities: {A: p_A, B: p_B, C: p_C}, ", "")
    )
    grade = table["grade"].to_numpy()
    per_class = [
        brute_force_scan(
            _codes(table), (grade == k).astype(float), float(np.mean(grade == k)), "positive", 0.5
        ).J
        for k in "ABC"
    ]
    assert scan.findings[0].statistic.value == pytest.approx(max(per_class), rel=1e-9)
    assert scan.parameters["class_probabilities_source"] == "base rates"


def test_nominal_class_missing_from_class_probabilities(tmp_path, table):
    scan = _run(tmp_path, table, NOMINAL.replace(", C: p_C", ""))
    assert scan.status == "error"
    assert "no column in class_probabilities: 'C'" in scan.error
    assert "scans[0].class_probabilities" in scan.error


def test_nominal_probabilities_not_summing_to_one(tmp_path, table):
    scan = _run(tmp_path, table.with_columns((pl.col("p_C") + 0.1).alias("p_C")), NOMINAL)
    assert scan.status == "error" and "do not sum to 1" in scan.error


def test_nominal_probability_outside_the_unit_interval_is_a_data_error(tmp_path, table):
    with pytest.raises(DataError) as info:
        _run(tmp_path, table.with_columns((pl.col("p_A") * 3).alias("p_A")), NOMINAL)
    assert "probabilities in [0, 1]" in str(info.value)
    assert "scans[0].class_probabilities.A" in str(info.value)


# one chosen class (positive: <class>), one-vs-rest: AIF360's mode='nominal', favorable_value


@pytest.mark.parametrize(
    ("label", "direction", "source"),
    [
        ("A", "positive", "class_probabilities"),
        ("B", "negative", "class_probabilities"),
        ("C", "positive", "prediction"),
        ("B", "positive", "base rate"),
    ],
)
def test_one_chosen_class_matches_brute_force(tmp_path, table, label, direction, source):
    given = {
        "class_probabilities": "class_probabilities: {A: p_A, B: p_B, C: p_C}, ",
        "prediction": f"prediction: p_{label}, ",
        "base rate": "",
    }[source]
    scan = _run(
        tmp_path,
        table,
        "{id: m, type: bias_scan, outcome: grade, outcome_type: nominal, "
        f"positive: {label}, {given}direction: {direction}, penalty: 0.5, restarts: 30}}",
        replicates=9,
    )
    grade = table["grade"].to_numpy()
    expected = (
        float(np.mean(grade == label)) if source == "base rate" else table[f"p_{label}"].to_numpy()
    )
    want = brute_force_scan(_codes(table), (grade == label).astype(float), expected, direction, 0.5)
    finding = scan.findings[0]
    assert finding.statistic.value == pytest.approx(want.J, rel=1e-9)
    names = "abc"
    assert finding.subgroup == {
        names[int(k[1:])]: sorted(f"{names[int(k[1:])]}{v}" for v in vals)
        for k, vals in want.subgroup.items()
    }
    assert finding.effect.metric == f"rate of grade = {label}"
    assert scan.parameters["class"] == label and scan.detail["class"] == label
    assert "classes" not in scan.detail  # one class: no correction over classes
    assert len(scan.null_distribution.scores) == 9


def test_one_chosen_class_errors(tmp_path, table):
    scan = _run(
        tmp_path,
        table,
        "{id: m, type: bias_scan, outcome: grade, outcome_type: nominal, positive: D}",
    )
    assert scan.status == "error" and "positive class 'D' does not occur" in scan.error
    scan = _run(
        tmp_path,
        table,
        "{id: m, type: bias_scan, outcome: grade, outcome_type: nominal, positive: C, "
        "class_probabilities: {A: p_A, B: p_B}}",
    )
    assert scan.status == "error" and "no column for the positive class 'C'" in scan.error


def _scores(scan: ScanResult) -> list[Any]:
    assert scan.null_distribution is not None
    return scan.null_distribution.scores


@pytest.mark.parametrize("scan", [NOMINAL, POISSON, GAUSSIAN])
def test_seeded_null_distributions_repeat_exactly(tmp_path, table, scan):
    first = _run(tmp_path, table, scan, replicates=5)
    again = _run(tmp_path, table, scan, replicates=5)
    assert _scores(first) == _scores(again)
    assert first.findings[0].p_value == again.findings[0].p_value


def test_population_of_a_mean_scan_is_told_in_means_not_a_rate(tmp_path, table):
    scan = _run(tmp_path, table, POISSON)
    population = scan.population
    assert population.observed_rate is None and population.expected_rate is None
    count, rate = table["n"].to_numpy(), table["rate"].to_numpy()
    assert f"n per row {count.mean():.6g} observed vs {rate.mean():.6g} expected" in (
        population.description
    )
    section = "\n".join(scan_markdown(scan, None))
    assert (
        "Scanned population: all rows (n vs expectation rate, Poisson rate); n per row" in section
    )
    assert "%" not in section.split("\n")[2]  # no rate printed for a mean
