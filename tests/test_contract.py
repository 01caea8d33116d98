"""The result contract, checked over every registered scan type.

Each registered type runs once on the shipped sample data (known injected bias: ethnicity C
aged 18-24). A new type must add an example here, and then its results must fit the one
finding model, the verdict must count exactly its significant findings, every renderer must
handle it, and the JSON report must validate against the committed schema.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from fairscan.api import RunOptions, run_audit
from fairscan.report.baseline import compare_reports
from fairscan.report.formats import render
from fairscan.report.models import AuditReport, Finding
from fairscan.scans import SCAN_TYPES, render_hooks

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "credit.csv"

# One small example of every registered scan type (sample_data/credit.csv columns).
EXAMPLES: dict[str, dict[str, Any]] = {
    "fpr_scan": {"penalty": 1, "restarts": 20},
    "tpr_scan": {"penalty": 1, "restarts": 20},
    "bias_scan": {"direction": "negative", "penalty": 1, "restarts": 20},
    "subroc": {
        "max_length": 2,
        "min_cover": 50,
        "top_k": 3,
        "candidates": 10,
        "significance": {"subsets": 0},  # no pattern is significant on the sample data
    },
    "ijdi_scan": {"side": "negatives", "lambda": 0.5, "penalty": 1, "restarts": 20},
    "certify": {
        "metric": "fpr",
        "groups": {"attributes": ["ethnicity", "age_group"], "min_size": 30},
        "bound": "lower",
        "tolerance": 0.0,
        "bootstrap": 100,
    },
    "flag": {
        "metric": "fpr",
        "groups": {"attributes": ["ethnicity", "age_group"], "min_size": 30},
        "tolerance": 0.02,
        "bootstrap": 100,
    },
    "cbs": {
        "protected": {"column": "ethnicity", "value": "C"},
        "metric": "fpr",
        "direction": "positive",
        "restarts": 20,
    },
    "shift": {
        "metric": "fpr",
        "features": ["income"],
        "kernel": {"bandwidth": 0.5},
        "bootstrap": 100,
        "tilts": [{"name": "low-income", "centers": [{"income": 15000}]}],
    },
}

STATISTICS = {"penalised_score", "interestingness", "gap", "lower_bound", "upper_bound"}
FINDING_KEYS = {
    "subgroup",
    "group",
    "label",
    "size",
    "statistic",
    "effect",
    "p_value",
    "adjusted_p_value",
    "significant",
    "description",
    "detail",
    "certified",  # certify only (issue 34): false = not certified, never significant
}


def test_every_registered_type_has_an_example() -> None:
    missing = sorted(set(SCAN_TYPES) - set(EXAMPLES))
    assert not missing, f"add an example of {missing} to EXAMPLES (the contract test runs it)"
    assert not set(EXAMPLES) - set(SCAN_TYPES)


def _spec(tmp_path: Path, scan_type: str) -> Path:
    spec = {
        "version": 1,
        "name": f"contract-{scan_type.replace('_', '-')}",
        "data": {"path": str(SAMPLE)},
        "columns": {"outcome": "default", "prediction": "score", "recommendation": "high_risk"},
        "attributes": ["sex", "ethnicity", "age_group", "region"],
        "scans": [{"id": "scan", "type": scan_type, **EXAMPLES[scan_type]}],
        "significance": {"replicates": 19, "alpha": 0.05, "seed": 0, "workers": 1},
        "output": {"dir": "out", "formats": ["json", "markdown", "junit", "html"]},
    }
    path = tmp_path / f"{scan_type}.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp(request.param)
    outcome = run_audit(_spec(tmp, request.param), RunOptions(write=True))
    return request.param, outcome


def _check_finding(finding: Finding) -> None:
    assert set(finding.model_dump()) == FINDING_KEYS
    assert (finding.subgroup is None) == (finding.group is not None)
    assert finding.label and finding.description
    assert finding.size >= 0
    assert finding.statistic.name in STATISTICS
    assert finding.statistic.value is None or math.isfinite(finding.statistic.value)
    assert finding.effect.metric and finding.effect.reference_name
    assert finding.effect.inside_count >= 0
    assert finding.certified is None or finding.significant is finding.certified
    for p in (finding.p_value, finding.adjusted_p_value):
        assert p is None or 0.0 <= p <= 1.0
    if finding.adjusted_p_value is not None and finding.p_value is not None:
        assert finding.adjusted_p_value >= finding.p_value - 1e-12


def test_findings_fit_the_one_model(audited: Any) -> None:
    scan_type, outcome = audited
    report: AuditReport = outcome.report
    (scan,) = report.scans
    assert scan.type == scan_type
    assert scan.status != "error", scan.error
    # the injected bias is found by every type: the check is not vacuous
    assert scan.findings, f"{scan_type} reported nothing on the sample data"
    for finding in scan.findings:
        _check_finding(finding)
    significant = sum(1 for f in scan.findings if f.significant is True)
    assert report.verdict.significant_findings == significant
    # issue 34: a scan whose test cannot reach alpha (subroc here: subsets 0) is untested, exit 2
    untested = scan_type == "subroc"
    assert (scan.status == "untested") is untested
    assert report.verdict.exit_code == (2 if untested else 1 if significant else 0)
    assert scan.status == ("significant" if significant else scan.status)
    assert scan.headline() == scan.findings[0]


def test_the_json_report_validates_against_the_committed_schema(audited: Any) -> None:
    import jsonschema

    _, outcome = audited
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    (json_path,) = [p for p in outcome.written if p.suffix == ".json"]
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 2
    jsonschema.validate(data, schema)
    assert AuditReport.model_validate(data) == outcome.report


def test_every_renderer_reads_the_contract(audited: Any) -> None:
    _, outcome = audited
    report = outcome.report
    hooks = render_hooks()
    markdown = render(report, "markdown", hooks)
    html = render(report, "html", hooks)
    suite = ET.fromstring(render(report, "junit", hooks))
    for finding in report.scans[0].findings:
        assert finding.description in markdown
    assert report.scans[0].findings[0].label.replace("<", "&lt;").replace(">", "&gt;") in html
    failures = int(suite.attrib["failures"])
    assert failures == (1 if report.verdict.significant_findings else 0)


def test_a_report_compared_with_itself_changes_nothing(audited: Any) -> None:
    _, outcome = audited
    comparison = compare_reports(outcome.report, outcome.report)
    assert comparison.new_significant == 0
    assert comparison.counts["resolved"] == 0
    assert comparison.counts["persisting"] == outcome.report.verdict.significant_findings


# --- sample weights (columns.weight): integer weights equal the row-replicated table ---------

# Weighted counts in the search and in the null draws (per unit of weight): the aggregate scans.
# The others repeat each row w times (frequency weights), so every figure, p-values included,
# equals the replicated table's for the same seed.
WEIGHTED_COUNTS = {"fpr_scan", "tpr_scan", "bias_scan"}


def _close(a: Any, b: Any, path: str = "") -> None:
    """Equal reports, floats to 1e-9 relative (weighted sums are summed in another order)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


@pytest.fixture(scope="module")
def weighted_tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import numpy as np
    import polars as pl

    frame = pl.read_csv(SAMPLE).head(2500)
    w = np.random.default_rng(7).choice([0, 1, 1, 2, 3], size=frame.height)
    # a split column (SubROC) that keeps a row's copies on the same side of the split
    frame = frame.with_columns(
        pl.Series("fold", np.where(np.arange(frame.height) % 3 == 0, "b", "a"))
    )
    tmp = tmp_path_factory.mktemp("weights")
    weighted = tmp / "weighted.csv"
    frame.with_columns(pl.Series("w", w)).write_csv(weighted)
    replicated = tmp / "replicated.csv"
    frame[np.repeat(np.arange(frame.height), w)].write_csv(replicated)
    return weighted, replicated


@pytest.mark.slow
@pytest.mark.parametrize("scan_type", sorted(EXAMPLES))
def test_integer_weights_equal_the_replicated_table(
    tmp_path: Path, weighted_tables: tuple[Path, Path], scan_type: str
) -> None:
    weighted, replicated = weighted_tables
    reports = []
    for data, weight in ((weighted, "w"), (replicated, None)):
        spec = yaml.safe_load(_spec(tmp_path, scan_type).read_text())
        spec["data"]["path"] = str(data)
        if weight is not None:
            spec["columns"]["weight"] = weight
        path = tmp_path / f"{scan_type}-{data.stem}.audit.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        reports.append(run_audit(path, RunOptions(write=False)).report)
    got, want = (json.loads(r.model_dump_json()) for r in reports)
    assert got["scans"][0]["status"] != "error", got["scans"][0]["error"]
    for r in (got, want):
        r["scans"][0].pop("timing")
    _close(want["scans"], got["scans"])
    _close(want["verdict"], got["verdict"])
    assert got["attributes"] == want["attributes"]
    assert got["provenance"]["rows_after_filter"] == want["provenance"]["rows_after_filter"]


# Weights past what a count or a float sum holds exactly (issue 34): a data error naming
# columns.weight before any scan runs, never numpy overflow warnings, an internal error or a
# crash of the expanded rows. One 2^62 weight, then three whose sum overflows int64.
HUGE_WEIGHTS = {"one 2^62": [2**62], "sum past int64": [2**62] * 3}


@pytest.mark.parametrize("weights", sorted(HUGE_WEIGHTS))
@pytest.mark.parametrize("scan_type", sorted(EXAMPLES))
def test_weights_that_overflow_are_a_data_error(
    tmp_path: Path, scan_type: str, weights: str
) -> None:
    import warnings

    import numpy as np
    import polars as pl

    from fairscan.errors import DataError

    frame = pl.read_csv(SAMPLE).head(600)
    w = np.ones(frame.height, dtype=np.int64)
    w[: len(HUGE_WEIGHTS[weights])] = HUGE_WEIGHTS[weights]
    data = tmp_path / "huge.csv"
    frame.with_columns(pl.Series("w", w)).write_csv(data)
    spec = yaml.safe_load(_spec(tmp_path, scan_type).read_text())
    spec["data"]["path"] = str(data)
    spec["columns"]["weight"] = "w"
    path = tmp_path / "huge.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy overflow warning fails the test
        with pytest.raises(DataError) as raised:
            run_audit(path, RunOptions(write=False))
    (issue,) = raised.value.issues
    assert issue.field == "columns.weight" and issue.column == "w"
    assert "2^53" in issue.message and issue.hint


# --- given subgroups and the baseline re-test (issue 26), over every registered type ---------

INJECTED = "ethnicity = 'C' and age_group = '18-24'"
# CBS scans within its protected class (ethnicity = C): the subgroup uses the other attributes
GIVEN: dict[str, list[Any]] = {"cbs": ["age_group = '18-24'", {"sex": "Female"}]}
NAMED_GROUPS = {"certify", "flag"}  # a fixed collection of named groups, evaluated as given


def _given_types() -> list[str]:
    return sorted(t for t in EXAMPLES if "subgroups" in SCAN_TYPES[t].spec_model.model_fields)


def test_every_searching_type_tests_given_subgroups() -> None:
    assert set(_given_types()) == set(SCAN_TYPES) - NAMED_GROUPS


@pytest.mark.parametrize("scan_type", _given_types())
def test_given_subgroups_fit_the_one_model(tmp_path: Path, scan_type: str) -> None:
    spec = yaml.safe_load(_spec(tmp_path, scan_type).read_text(encoding="utf-8"))
    given = GIVEN.get(scan_type, [INJECTED, {"sex": "Female"}])
    spec["scans"][0]["subgroups"] = given
    if scan_type == "subroc":
        spec["scans"][0]["significance"] = {"subsets": 99}
    path = tmp_path / "given.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    report = run_audit(path, RunOptions(write=False)).report
    (scan,) = report.scans
    assert scan.status != "error", scan.error
    assert scan.parameters["mode"] == "given subgroups"
    assert scan.parameters["given_subgroup_tests"]  # the test used, in words
    assert len(scan.findings) == len(given)
    for k, finding in enumerate(scan.findings):
        _check_finding(finding)
        block = finding.detail["given_subgroup"]
        assert block["index"] == k and block["test"] in scan.parameters["given_subgroup_tests"]
        assert "no search correction" in finding.description
        assert finding.p_value is not None and finding.adjusted_p_value is None
        assert finding.effect.inside_count == finding.size > 0
    injected = scan.findings[0]
    if scan_type != "subroc":  # the sample's bias is in the decisions, not the scores' ranking
        assert injected.significant is True, injected  # the injected bias, tested alone
    assert report.verdict.significant_findings == sum(f.significant is True for f in scan.findings)
    markdown = render(report, "markdown", render_hooks())
    assert injected.description in markdown


def test_a_reaudit_on_the_same_data_changes_nothing(audited: Any) -> None:
    """Re-tested against its own report on the same data: every significant finding persists
    (a fixed-subgroup re-test, or the named group evaluated again), nothing new or resolved."""
    scan_type, outcome = audited
    (json_path,) = [p for p in outcome.written if p.suffix == ".json"]
    spec = json_path.parent.parent / f"{scan_type}.audit.yaml"
    report = run_audit(spec, RunOptions(write=False, baseline=json_path)).report
    counts = report.baseline.counts
    assert counts["new"] == 0 and counts["resolved"] == 0 and counts["shifted"] == 0
    assert counts["persists"] == outcome.report.verdict.significant_findings
    if scan_type in _given_types() and scan_type != "shift" and counts["persists"]:
        assert report.baseline.method == "retest"


# --- fractional weights (survey/importance semantics) ------------------------------------------

# Fractional weights are relative: rescaled to mean 1 over the rows, so their scale does not
# matter. The statistics are the weighted ones; the randomness (null draws, permutations,
# bootstrap resamples) is per row, each row carrying its weight as a multiplier.
FRACTIONAL = sorted(
    t
    for t in EXAMPLES
    if SCAN_TYPES[t].weight_use(
        SCAN_TYPES[t].spec_model.model_validate({"id": "x", "type": t, **EXAMPLES[t]})
    )
    != "rows"
)


def _weighted_run(
    tmp_path: Path, scan_type: str, data: Path, weight: str | None, **scan: Any
) -> Any:
    spec = yaml.safe_load(_spec(tmp_path, scan_type).read_text())
    spec["data"]["path"] = str(data)
    spec["scans"][0].update(scan)
    if weight is not None:
        spec["columns"]["weight"] = weight
    path = tmp_path / f"{scan_type}-{data.stem}-{weight}.audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return json.loads(run_audit(path, RunOptions(write=False)).report.model_dump_json())


@pytest.fixture(scope="module")
def fractional_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import numpy as np
    import polars as pl

    frame = pl.read_csv(SAMPLE).head(2500)
    w = np.random.default_rng(11).uniform(0.2, 3.0, frame.height)
    path = tmp_path_factory.mktemp("fractional") / "fractional.csv"
    frame.with_columns(pl.Series("w", w), pl.Series("w_scaled", w * 37.5)).write_csv(path)
    return path


# bias_scan's other scores and outcome types (the example is the binary Bernoulli scan)
BIAS_SETTINGS: dict[str, dict[str, Any]] = {
    "gaussian": {"outcome_type": "continuous", "score": "gaussian", "direction": "positive"},
    "berk-jones-continuous": {"outcome_type": "continuous", "score": "berk_jones", "alpha": 0.5},
    "count": {"outcome_type": "count", "score": "poisson"},
    "ordinal": {"outcome_type": "ordinal", "score": "poisson"},
    "nominal": {"outcome_type": "nominal"},
    "one-class": {"outcome_type": "nominal", "positive": 1},
}


def _check_fractional(tmp_path: Path, scan_type: str, table: Path, **extra: Any) -> None:
    got = _weighted_run(tmp_path, scan_type, table, "w", **extra)
    scan = got["scans"][0]
    assert scan["status"] != "error", scan["error"]
    assert got["provenance"]["rows_after_filter"] == 2500  # relative weights: n is the rows
    plain = _weighted_run(tmp_path, scan_type, table, None, **extra)["scans"][0]
    plain.pop("timing")
    assert {k: v for k, v in scan.items() if k != "timing"} != plain  # the weights are used
    scaled = _weighted_run(tmp_path, scan_type, table, "w_scaled", **extra)["scans"][0]
    for r in (scan, scaled):
        r.pop("timing")
        r["parameters"].pop("weight", None)
    _close(scan, scaled)


@pytest.mark.parametrize("scan_type", sorted(EXAMPLES))
def test_fractional_weights_are_honoured_and_scale_free(
    tmp_path: Path, fractional_table: Path, scan_type: str
) -> None:
    assert scan_type in FRACTIONAL, f"{scan_type} must honour fractional weights"
    _check_fractional(tmp_path, scan_type, fractional_table)


def _bias_spec(setting: str) -> Any:
    return SCAN_TYPES["bias_scan"].spec_model.model_validate(
        {"id": "x", "type": "bias_scan", **EXAMPLES["bias_scan"], **BIAS_SETTINGS[setting]}
    )


@pytest.mark.parametrize("setting", sorted(BIAS_SETTINGS))
def test_fractional_weights_in_every_bias_scan_setting(
    tmp_path: Path, fractional_table: Path, setting: str
) -> None:
    assert SCAN_TYPES["bias_scan"].weight_use(_bias_spec(setting)) != "rows"
    _check_fractional(tmp_path, "bias_scan", fractional_table, **BIAS_SETTINGS[setting])


def _statistics(scan: dict[str, Any]) -> Any:
    """What a weighted run must share with the replicated table whatever its null draws: the
    findings' subgroups, sizes, statistics and effects (certify/flag: every group's estimate;
    shift: every tilt's estimate, norm and mean)."""
    if scan["type"] in ("certify", "flag"):
        detail = scan["detail"]["certification"]
        keys = ("name", "size", "share", "estimate", "gap") + (
            ("scale",) if scan["type"] == "certify" else ()
        )
        groups = sorted(({k: g[k] for k in keys} for g in detail["groups"]), key=str)
        return {"theta": detail["theta"], "groups": groups}
    if scan["type"] == "subroc":  # every candidate (no pattern is significant on the sample)
        keys = ("label", "score", "weighted_score", "relative_score", "search", "validation")
        patterns = scan["detail"]["subroc"]["patterns"]
        return [{k: p[k] for k in keys} for p in patterns]
    if scan["type"] == "shift":  # the tilts' estimates (their bounds come from the bootstrap)
        keys = ("name", "estimate", "metric_under_tilt", "norm2", "mean_h")
        tilts = [{k: t[k] for k in keys} for t in scan["detail"]["tilts"]]
        return {"theta": scan["detail"]["theta"], "tilts": tilts}
    return [
        {k: f[k] for k in ("subgroup", "size", "statistic", "effect", "description")}
        for f in scan["findings"]
    ]


@pytest.mark.parametrize(
    "scan_type", [t for t in FRACTIONAL if SCAN_TYPES[t].weights == "fractional"]
)
def test_the_weighted_rows_path_equals_the_replicated_table(
    tmp_path: Path,
    weighted_tables: tuple[Path, Path],
    scan_type: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole-number weights through the path fractional weights take (weighted fits, sums and
    moments, rows not repeated): the same statistics as the rows repeated. Its null draws are
    per row (a row's weight multiplies its draw), so p-values and bounds differ there."""
    import fairscan.data.weights as weights

    weighted, replicated = weighted_tables
    # SubROC splits rows: a column split keeps a row's copies together
    scan = {"split": {"column": "fold", "search": "a", "validation": "b"}}
    extra = scan if scan_type == "subroc" else {}
    want = _weighted_run(tmp_path, scan_type, replicated, None, **extra)["scans"][0]
    monkeypatch.setattr(weights, "whole_numbers", lambda data: False)
    got = _weighted_run(tmp_path, scan_type, weighted, "w", **extra)["scans"][0]
    assert got["status"] != "error", got["error"]
    assert _statistics(got), "the example must find something to compare"
    _close(_statistics(want), _statistics(got))


@pytest.mark.parametrize("setting", sorted(BIAS_SETTINGS))
def test_the_weighted_rows_path_of_bias_scan_settings_equals_the_replicated_table(
    tmp_path: Path,
    weighted_tables: tuple[Path, Path],
    setting: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole-number weights through the weighted path of each bias_scan setting (weighted
    likelihood and pooled variance, null draws per unit of weight): the replicated table's
    report, p-values included for the same seed; the nominal scan draws one class per row and
    the ordinal one permutes the rows' residuals (each times its weight), so their p-values
    differ there and their statistics are compared."""
    import fairscan.data.weights as weights

    weighted, replicated = weighted_tables
    extra = BIAS_SETTINGS[setting]
    want = _weighted_run(tmp_path, "bias_scan", replicated, None, **extra)["scans"][0]
    monkeypatch.setattr(weights, "whole_numbers", lambda data: False)
    got = _weighted_run(tmp_path, "bias_scan", weighted, "w", **extra)["scans"][0]
    assert got["status"] != "error", got["error"]
    assert _statistics(got), "the example must find something to compare"
    if setting in ("nominal", "ordinal"):
        _close(_statistics(want), _statistics(got))
        return
    for r in (got, want):
        r.pop("timing")
        r["parameters"].pop("weight", None)
    _close(want, got)


@pytest.mark.parametrize("scan_type", _given_types())
def test_given_subgroups_honour_fractional_weights(
    tmp_path: Path, fractional_table: Path, scan_type: str
) -> None:
    """A given subgroup's test is weighted as the search is: its statistic moves with the
    weights, and not with their scale."""
    given = GIVEN.get(scan_type, [INJECTED, {"sex": "Female"}])

    def statistics(weight: str | None) -> list[float]:
        report = _weighted_run(tmp_path, scan_type, fractional_table, weight, subgroups=given)
        (scan,) = report["scans"]
        assert scan["status"] != "error", scan["error"]
        values = [(f["statistic"]["value"], f["effect"]["inside"]) for f in scan["findings"]]
        return [float("nan") if v is None else float(v) for pair in values for v in pair]

    weighted = statistics("w")
    assert weighted == pytest.approx(statistics("w_scaled"), rel=1e-9, nan_ok=True)
    assert weighted != pytest.approx(statistics(None), rel=1e-9, nan_ok=True)
