"""``fairscan.audit`` (issue 13, Python API): in-memory data and keyword fields, validated and
run as ``audit run`` does, and the report object (findings table, renderings, files, display)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import fairscan
from fairscan.api import load_report, run_audit
from fairscan.cli import app
from fairscan.report.display import FINDINGS_COLUMNS
from fairscan.report.formats import render
from fairscan.report.models import AuditReport
from fairscan.scans import render_hooks

ROOT = Path(__file__).resolve().parent.parent
CREDIT = ROOT / "sample_data" / "credit.csv"

# The sample audit's settings as keyword arguments (few replicates, one worker: fast).
CREDIT_FIELDS: dict[str, Any] = {
    "name": "sample-credit",
    "outcome": "default",
    "prediction": "score",
    "recommendation": "high_risk",
    "attributes": ["sex", "ethnicity", "age_group", "region"],
    "scans": [
        {"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 20},
        {"id": "calibration", "type": "bias_scan", "direction": "negative", "restarts": 10},
    ],
    "significance": {"replicates": 19, "seed": 0, "workers": 1},
}

CREDIT_SPEC = """\
version: 1
name: sample-credit
data: {{path: {data}}}
columns: {{outcome: default, prediction: score, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 20}}
  - {{id: calibration, type: bias_scan, direction: negative, restarts: 10}}
significance: {{replicates: 19, seed: 0, workers: 1}}
"""

# The COMPAS example.
COMPAS_FIELDS: dict[str, Any] = {
    "outcome": "two_year_recid",
    "prediction": "prob_decile",
    "recommendation": "high_risk",
    "attributes": ["sex", "race", "age_group", "c_charge_degree", "priors"],
    "scans": [{"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 100}],
    "significance": {"replicates": 199, "seed": 0},
}

# What differs between a report of `audit run` and one of fairscan.audit for the same data and
# settings: where the spec and the data came from, the spec text's hash, and times.
PROVENANCE_PATHS = ("spec_path", "spec_sha256", "data_path")
TIMES = ("utc_time", "finished_utc_time", "total_seconds")


def _comparable(report: dict[str, Any], *, data_hash: bool = True) -> dict[str, Any]:
    out = copy.deepcopy(report)
    prov = out["provenance"]
    for key in (*PROVENANCE_PATHS, *TIMES):
        prov.pop(key)
    if not data_hash:
        prov.pop("data_sha256")
    prov["parameters"]["data"].pop("path")
    for scan in out["scans"]:
        scan.pop("timing")
    return out


def _cli_report(spec_text: str, tmp_path: Path) -> dict[str, Any]:
    spec = tmp_path / "cli.audit.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    out = tmp_path / "cli-reports"
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    (written,) = out.glob("*.json")
    return json.loads(written.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT, infer_schema_length=None, null_values=None)


@pytest.fixture(scope="module")
def credit_report(credit: pl.DataFrame) -> AuditReport:
    return fairscan.audit(credit, **CREDIT_FIELDS)


def _pandas() -> Any:
    return pytest.importorskip("pandas", reason="pandas is not installed (pip install '.[test]')")


# --- the same audit as `audit run` ---------------------------------------------------------


def test_the_written_json_equals_audit_runs(credit: pl.DataFrame, tmp_path: Path) -> None:
    """Keywords and a data path give the JSON `audit run` writes for the equivalent spec file,
    apart from provenance paths, the spec text's hash and times (the data file hash is equal)."""
    cli = _cli_report(CREDIT_SPEC.format(data=CREDIT), tmp_path)
    report = fairscan.audit(CREDIT, **CREDIT_FIELDS)
    (path,) = report.write(tmp_path / "api", formats=["json"])
    assert path == tmp_path / "api" / "sample-credit.json"
    api = json.loads(path.read_text(encoding="utf-8"))
    assert _comparable(api) == _comparable(cli)
    # relative to the spec folder (here the working directory), unless they share only the
    # root: no absolute path in a committed baseline (issue 16)
    recorded = api["provenance"]["data_path"]
    assert (Path.cwd() / recorded).resolve() == CREDIT.resolve()
    assert api["provenance"]["spec_path"] == "<fairscan.audit arguments>"
    # in memory: the same report but for the data's provenance
    in_memory = json.loads(fairscan.audit(credit, **CREDIT_FIELDS).to_json())
    assert _comparable(in_memory, data_hash=False) == _comparable(cli, data_hash=False)
    assert in_memory["provenance"]["data_path"] == "<in-memory polars DataFrame>"
    assert in_memory["provenance"]["parameters"]["data"]["path"] == "<in-memory polars DataFrame>"


def test_a_spec_file_gives_its_settings_and_keywords_override_them(
    credit: pl.DataFrame, tmp_path: Path
) -> None:
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(CREDIT_SPEC.format(data=CREDIT), encoding="utf-8")
    cli = _cli_report(spec.read_text(encoding="utf-8"), tmp_path)
    # the spec's data file: audit run's report, times apart
    from_file = json.loads(fairscan.audit(spec=spec).to_json())
    assert _comparable(from_file) == _comparable(cli)
    assert from_file["provenance"]["spec_sha256"] == cli["provenance"]["spec_sha256"]
    # the spec's settings, the data from a DataFrame
    with_frame = fairscan.audit(credit, spec=spec)
    assert _comparable(json.loads(with_frame.to_json()), data_hash=False) == _comparable(
        cli, data_hash=False
    )
    assert with_frame.provenance.spec_path == str(spec)
    # keywords override (mappings merge: the seed and workers stay)
    overridden = fairscan.audit(credit, spec=spec, significance={"replicates": 5}, name="other")
    assert overridden.name == "other"
    assert overridden.provenance.parameters["significance"] == {
        "replicates": 5,
        "sequential": True,
        "alpha": 0.05,
        "seed": 0,
        "workers": 1,
        "executor": "local",
    }
    assert overridden.provenance.spec_sha256 != cli["provenance"]["spec_sha256"]
    # None: the field's default
    defaulted = fairscan.audit(credit, spec=spec, description=None, gate=None)
    assert defaulted.provenance.parameters["gate"] == {
        "fail_on": "significant",
        "correction": "none",
        "allow_untested": False,
    }


def test_polars_pandas_pyarrow_and_path_inputs_agree(
    credit: pl.DataFrame, credit_report: AuditReport
) -> None:
    pd = _pandas()
    pa_csv = pytest.importorskip("pyarrow.csv")
    frames = {
        "<in-memory pandas DataFrame>": pd.read_csv(CREDIT, keep_default_na=False),
        "<in-memory pyarrow Table>": pa_csv.read_csv(CREDIT),
    }
    expected = credit_report.model_dump(mode="json")["scans"]
    for label, data in frames.items():
        report = fairscan.audit(data, **CREDIT_FIELDS)
        assert report.provenance.data_path == label
        # the same table serialises to the same bytes, whichever library held it
        assert report.provenance.data_sha256 == credit_report.provenance.data_sha256, label
        assert _without_timing(report.model_dump(mode="json")["scans"]) == _without_timing(expected)
    from_path = fairscan.audit(str(CREDIT), **CREDIT_FIELDS)
    assert _without_timing(from_path.model_dump(mode="json")["scans"]) == _without_timing(expected)
    # a LazyFrame is streamed: the same scans; its data hash is of the aggregated table it read
    lazy = fairscan.audit(credit.lazy(), **CREDIT_FIELDS)
    assert lazy.provenance.data_path == "<in-memory polars LazyFrame>"
    assert _without_timing(lazy.model_dump(mode="json")["scans"]) == _without_timing(expected)


# a filter on a continuous column, a quantile-binned continuous attribute, a score threshold
PUSHDOWN_FIELDS: dict[str, Any] = {
    "outcome": "default",
    "prediction": "score",
    "threshold": 0.5,
    "attributes": ["sex", "ethnicity", "age_group", "region", "income"],
    "discretize": {"income": {"quantiles": 4}},
    "scans": [{"id": "fpr", "type": "fpr_scan", "restarts": 20}],
    "significance": {"replicates": 9, "seed": 3, "workers": 1},
    "filter": "income >= 12000 AND region != 'North'",
}


def test_a_dask_frame_is_prepared_by_the_push_down_plan(credit: pl.DataFrame) -> None:
    """A filter on a continuous column, a quantile-binned continuous attribute and a score
    read through a threshold: only the aggregate comes back, the same report as in memory."""
    dd = pytest.importorskip("dask.dataframe", reason="needs dask[dataframe]")
    fields = {**PUSHDOWN_FIELDS}
    expected = fairscan.audit(credit, **fields).model_dump(mode="json")
    frame = dd.from_pandas(credit.to_pandas(), npartitions=4)
    report = fairscan.audit(frame, **fields)
    assert report.provenance.data_path == "<in-memory Dask DataFrame>"
    assert _without_timing(report.model_dump(mode="json")["scans"]) == _without_timing(
        expected["scans"]
    )
    assert report.provenance.rows_after_filter == expected["provenance"]["rows_after_filter"]
    source = report.provenance.data_source
    assert source["kind"] == "Dask DataFrame" and source["rows"] == credit.height
    steps = source["pushdown"]
    assert "filter" in steps and "threshold on 'score'" in steps and "group by" in steps
    assert any(step.startswith("discretize (quantiles exact") for step in steps)
    # one row per distinct (attributes, income bin, outcome, side of the threshold), not per score
    distinct = credit.filter((pl.col("income") >= 12000) & (pl.col("region") != "North"))
    assert source["aggregated_rows"] < distinct.select("score").n_unique()


def test_a_pyspark_frame_is_prepared_in_spark(credit: pl.DataFrame) -> None:
    """A PySpark DataFrame goes through Ibis' PySpark backend: Spark filters, bins (exact
    quantile edges), applies the threshold and groups; the same report as in memory."""
    pytest.importorskip("pyspark", reason="needs pyspark (pip install 'fairscan[spark]')")
    pytest.importorskip("ibis.backends.pyspark", reason="needs Ibis' PySpark backend")
    from pyspark.sql import SparkSession

    fields = {**PUSHDOWN_FIELDS}
    expected = fairscan.audit(credit, **fields).model_dump(mode="json")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("fairscan-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        frame = spark.createDataFrame(credit.to_arrow())
        report = fairscan.audit(frame, **fields)
        source = report.provenance.data_source
        # the temporary view Ibis read the frame by is gone: the session is as it was
        views = [table.name for table in spark.catalog.listTables()]
        assert source["view"].startswith("fairscan_input_") and source["view"] not in views
        # a failing audit leaves no view behind either
        with pytest.raises((fairscan.DataError, fairscan.SpecError)):
            fairscan.audit(frame, **{**fields, "filter": "no_such_column > 1"})
        assert not [t for t in spark.catalog.listTables() if t.name.startswith("fairscan_")]
    finally:
        spark.stop()
    assert report.provenance.data_path == "<in-memory PySpark DataFrame>"
    assert _without_timing(report.model_dump(mode="json")["scans"]) == _without_timing(
        expected["scans"]
    )
    assert source["kind"] == "PySpark DataFrame" and source["engine"] == "pyspark"
    assert source["rows"] == credit.height
    steps = source["pushdown"]
    assert "filter" in steps and "threshold on 'score'" in steps and "group by" in steps
    assert any(step.startswith("discretize (quantiles exact") for step in steps)


def _without_timing(scans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in scan.items() if k != "timing"} for scan in scans]


def test_a_model_s_predictions_are_the_prediction_column(credit: pl.DataFrame) -> None:
    sklearn = pytest.importorskip("sklearn.linear_model")
    features = ["income"]
    model = sklearn.LogisticRegression().fit(credit.select(features), credit["default"])
    fields = {
        "outcome": "default",
        "attributes": ["sex", "ethnicity", "age_group", "region"],
        "scans": [{"id": "calibration", "type": "bias_scan", "restarts": 20}],
        "significance": {"replicates": 9, "seed": 1, "workers": 1},
    }
    report = fairscan.audit(credit, model=model, features=features, **fields)
    assert report.provenance.parameters["columns"]["prediction"] == "prediction"
    by_hand = credit.with_columns(
        pl.Series("p", model.predict_proba(credit.select(features))[:, 1])
    )
    expected = _results(fairscan.audit(by_hand, prediction="p", **fields))
    assert _results(report) == expected
    # named by prediction=
    named = fairscan.audit(credit, model=model, features=features, prediction="p_model", **fields)
    assert named.provenance.parameters["columns"]["prediction"] == "p_model"
    assert _results(named) == expected


def _results(report: AuditReport) -> list[tuple[Any, ...]]:
    """What a scan found, leaving out wording that names the prediction column."""
    return [
        (f.subgroup, f.size, f.statistic, f.effect.inside, f.effect.reference, f.p_value)
        for scan in report.scans
        for f in scan.findings
    ]


# --- errors ----------------------------------------------------------------------------------


def test_an_unknown_keyword_is_a_spec_error_with_a_suggestion(credit: pl.DataFrame) -> None:
    with pytest.raises(fairscan.SpecError) as caught:
        fairscan.audit(credit, **{**CREDIT_FIELDS, "outcom": "default"})
    assert "unknown keyword argument 'outcom'" in str(caught.value)
    assert "did you mean 'outcome'?" in str(caught.value)
    with pytest.raises(fairscan.SpecError, match="belongs under `gate`"):
        fairscan.audit(credit, **CREDIT_FIELDS, fail_on="never")


def test_a_bad_value_names_its_field_path(credit: pl.DataFrame) -> None:
    scans = [{"id": "fpr", "type": "fpr_scan", "penalty": "high"}]
    with pytest.raises(fairscan.SpecError) as caught:
        fairscan.audit(credit, **{**CREDIT_FIELDS, "scans": scans})
    assert str(caught.value).startswith("scans[0].penalty: expected a number, got 'high'")
    with pytest.raises(fairscan.SpecError) as caught:
        fairscan.audit(credit, **{**CREDIT_FIELDS, "significance": {"replicate": 9}})
    assert "significance.replicate: unknown key 'replicate'" in str(caught.value)
    assert "did you mean 'replicates'?" in str(caught.value)
    with pytest.raises(fairscan.SpecError, match=r"^attributes: missing required key"):
        fairscan.audit(credit, outcome="default", scans=CREDIT_FIELDS["scans"])


def test_a_missing_column_is_a_data_error(credit: pl.DataFrame) -> None:
    with pytest.raises(fairscan.DataError) as caught:
        fairscan.audit(credit, **{**CREDIT_FIELDS, "outcome": "defualt"})
    text = str(caught.value)
    assert text.startswith("columns.outcome: column 'defualt' is not in the data")
    assert "'default'" in text  # did you mean
    with pytest.raises(fairscan.DataError, match="has no rows"):
        fairscan.audit(credit.head(0), **CREDIT_FIELDS)
    with pytest.raises(fairscan.DataError, match=r"cannot audit a builtins\.dict"):
        fairscan.audit({"a": [1]}, **CREDIT_FIELDS)
    with pytest.raises(fairscan.DataError, match="does not exist"):
        fairscan.audit("no/such/file.csv", **CREDIT_FIELDS)


def test_model_errors_are_clear(credit: pl.DataFrame) -> None:
    with pytest.raises(fairscan.UsageError, match="no predict_proba method"):
        fairscan.audit(credit, model=object(), features=["income"], **CREDIT_FIELDS)
    sklearn = pytest.importorskip("sklearn.linear_model")
    model = sklearn.LogisticRegression().fit(credit.select("income"), credit["default"])
    with pytest.raises(fairscan.DataError, match="did you mean 'income'"):
        fairscan.audit(credit, model=model, features=["incme"], **CREDIT_FIELDS)
    with pytest.raises(fairscan.UsageError, match="model= needs features="):
        fairscan.audit(credit, model=model, **CREDIT_FIELDS)
    with pytest.raises(fairscan.DataError, match="already has a column 'score'"):
        fairscan.audit(credit, model=model, features=["income"], **CREDIT_FIELDS)


# --- the report object -----------------------------------------------------------------------


def test_findings_is_one_row_per_finding(credit_report: AuditReport) -> None:
    table = credit_report.findings
    assert tuple(table.columns) == FINDINGS_COLUMNS
    assert table.height == sum(len(scan.findings) for scan in credit_report.scans) > 0
    first = credit_report.scans[0].findings[0]
    row = table.row(0, named=True)
    assert row["scan_id"] == "fpr" and row["type"] == "fpr_scan" and row["rank"] == 1
    assert row["label"] == first.label
    # subgroup: a struct, one field per attribute (null where the finding leaves it free)
    assert set(row["subgroup"]) == set(credit_report.attributes)
    assert {k: v for k, v in row["subgroup"].items() if v is not None} == first.subgroup
    assert row["statistic_value"] == first.statistic.value
    assert row["significant"] is first.significant
    _pandas()
    assert list(table.to_pandas().columns) == list(FINDINGS_COLUMNS)


def test_renderings_use_the_registered_hooks(credit_report: AuditReport, tmp_path: Path) -> None:
    hooks = render_hooks()
    assert credit_report.to_html() == render(credit_report, "html", hooks)
    assert credit_report.to_markdown() == render(credit_report, "markdown", hooks)
    assert json.loads(credit_report.to_json())["verdict"] == credit_report.verdict.model_dump()
    # default formats: the spec's output.formats (json and markdown by default)
    paths = credit_report.write(tmp_path)
    assert [p.name for p in paths] == ["sample-credit.json", "sample-credit.md"]
    paths = credit_report.write(tmp_path / "both", formats=["json", "html"])
    assert [p.suffix for p in paths] == [".json", ".html"]
    assert not list((tmp_path / "both").glob(".*.tmp"))  # atomic: no temp file left
    loaded = load_report(paths[0])
    assert loaded.to_html() == credit_report.to_html()
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        credit_report.write(tmp_path, formats=["pdf"])


def test_repr_is_short_and_the_html_summary_escapes(credit_report: AuditReport) -> None:
    text = repr(credit_report)
    assert len(text) < 200
    assert text.startswith("<AuditReport 'sample-credit' ")
    html = credit_report._repr_html_()
    top = credit_report.scans[0].findings[0]
    assert top.label in html
    # every data string is escaped
    tricky = credit_report.model_copy(deep=True)
    tricky.scans[0].findings[0].label = "age < 25 & <script>"
    tricky = tricky.model_copy(update={"description": "a <b>bold</b> claim"})
    html = tricky._repr_html_()
    assert "age &lt; 25 &amp; &lt;script&gt;" in html
    assert "<script>" not in html and "<b>bold" not in html
    assert len(html) < 20_000
    assert "FAIL" in str(credit_report) or "PASS" in str(credit_report)


# --- the COMPAS example --------------------------------------------------------------


@pytest.mark.shared_data
def test_the_compas_example_from_a_pandas_dataframe(compas_csv: Path, tmp_path: Path) -> None:
    pd = _pandas()
    df = pd.read_csv(compas_csv)
    report = fairscan.audit(df, **COMPAS_FIELDS)
    assert report.verdict.exit_code == 1
    top = report.scans[0].findings[0]
    assert top.label == "priors = Over 5"
    assert top.statistic.value == pytest.approx(95.81993475399541, abs=1e-9)
    assert f"{top.statistic.value:.2f}" == "95.82"
    assert report.findings.height == 1
    assert "priors = Over 5" in report._repr_html_()
    assert len(repr(report)) < 200
    # the same JSON as `audit run` on the file (pandas reading "None" as text, as polars does)
    spec = (
        "version: 1\nname: audit\n"
        f"data: {{path: {compas_csv}}}\n"
        "columns: {outcome: two_year_recid, prediction: prob_decile, recommendation: high_risk}\n"
        "attributes: [sex, race, age_group, c_charge_degree, priors]\n"
        "scans: [{id: fpr, type: fpr_scan, penalty: 1, restarts: 100}]\n"
        "significance: {replicates: 199, seed: 0}\n"
    )
    cli = _cli_report(spec, tmp_path)
    same = fairscan.audit(pd.read_csv(compas_csv, keep_default_na=False), **COMPAS_FIELDS)
    (path,) = same.write(tmp_path / "api", formats="json")
    api = json.loads(path.read_text(encoding="utf-8"))
    assert _comparable(api, data_hash=False) == _comparable(cli, data_hash=False)


def test_run_audit_still_returns_the_outcome(tmp_path: Path) -> None:
    spec = tmp_path / "credit.audit.yaml"
    spec.write_text(
        CREDIT_SPEC.format(data=CREDIT) + f"output: {{dir: {tmp_path / 'out'}}}\n",
        encoding="utf-8",
    )
    outcome = run_audit(spec)
    assert [p.name for p in outcome.written] == ["sample-credit.json", "sample-credit.md"]
    assert outcome.report.provenance.spec_path == str(spec)
