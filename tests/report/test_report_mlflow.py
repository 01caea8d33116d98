"""``report.to_mlflow()`` (issue 26): what a run gets (params, metrics, tags, artifacts), read
back through the MLflow client from a real tracking server (the session's ``mlflow_server``);
the names MLflow accepts, undefined figures left out, no secret anywhere."""

from __future__ import annotations

import json
import posixpath
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from report_builders import finding, report, scan

import fairscan
from fairscan.errors import ServiceError
from fairscan.report.mlflow_log import (
    HTTP_DEFAULTS,
    MAX_PARAM_VALUE,
    _environment,
    _unset,
    log_report,
    mask_secrets,
    redact_uri,
    report_metrics,
    report_params,
    report_tags,
)
from fairscan.report.models import BaselineComparison, BaselineEntry, BaselineSide

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
# MLflow's rule for a param, metric or tag name (mlflow.utils.validation), without ':'
MLFLOW_NAME = re.compile(r"^[A-Za-z0-9_\-./ ]{1,250}$")


def _audit(name: str, **fields: Any) -> Any:
    """A small, fast audit of the sample credit data: two scans, 19 replicates, one worker."""
    return fairscan.audit(
        CREDIT,
        name=name,
        outcome="default",
        prediction="score",
        recommendation="high_risk",
        attributes=["sex", "ethnicity", "age_group", "region"],
        scans=[
            {"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 5},
            {"id": "calibration", "type": "bias_scan", "direction": "negative", "restarts": 5},
        ],
        significance={"replicates": 19, "seed": 0, "workers": 1},
        **fields,
    )


@pytest.fixture(scope="module")
def credit_report() -> Any:
    return _audit("credit-mlflow", output={"mlflow": {"experiment": "from-the-spec"}})


# --- what a run gets, without a server -----------------------------------------------------------


def test_params_name_the_spec_the_data_and_every_setting(credit_report: Any) -> None:
    params = report_params(credit_report)
    p = credit_report.provenance
    assert params["fairscan.spec_name"] == "credit-mlflow"
    assert params["fairscan.spec_sha256"] == p.spec_sha256
    assert params["fairscan.data_sha256"] == p.data_sha256
    assert params["fairscan.replicates"] == "19"
    assert params["fairscan.alpha"] == "0.05"
    assert params["fairscan.fail_on"] == "significant"
    assert params["fpr.type"] == "fpr_scan"
    assert params["fpr.restarts"] == "5"
    assert params["calibration.direction"] == "negative"
    assert json.loads(params["fairscan.attributes"]) == ["sex", "ethnicity", "age_group", "region"]
    assert all(MLFLOW_NAME.match(k) for k in params), [
        k for k in params if not MLFLOW_NAME.match(k)
    ]
    assert "None" not in params.values() and "null" not in params.values()


def test_metrics_per_scan_are_the_top_findings(credit_report: Any) -> None:
    metrics = report_metrics(credit_report)
    for result in credit_report.scans:
        head = result.findings[0]
        expected_p = head.adjusted_p_value if head.adjusted_p_value is not None else head.p_value
        assert metrics[f"{result.id}.p_value"] == pytest.approx(expected_p, rel=1e-12)
        assert metrics[f"{result.id}.statistic"] == pytest.approx(head.statistic.value, rel=1e-12)
        assert metrics[f"{result.id}.significant"] == (
            1.0 if result.status == "significant" else 0.0
        )
        assert metrics[f"{result.id}.significant_findings"] == result.significant_count()
    assert metrics["significant_findings"] == credit_report.verdict.significant_findings
    assert not any(k.startswith("baseline.") for k in metrics)  # no baseline, no counts


def test_undefined_figures_are_left_out_never_nan() -> None:
    untested = scan([finding(p_value=None, significant=None)], id="probe", tested=False)
    broken = scan([], id="broken", error="boom")
    undefined = scan([finding(statistic=("penalised_score", None), p_value=0.2)], id="undefined")
    metrics = report_metrics(report(untested, broken, undefined))
    assert "probe.p_value" not in metrics and "probe.significant" not in metrics
    assert "probe.statistic" in metrics  # the search ran: its score is defined
    assert not any(k.startswith("broken.") for k in metrics)
    assert "undefined.statistic" not in metrics and metrics["undefined.p_value"] == 0.2
    assert metrics["undefined.significant"] == 0.0


def test_counts_by_baseline_label_per_scan_and_overall() -> None:
    side = BaselineSide(
        subgroup={"priors": ["Over 5"]}, score=9.0, p_value=0.001, rate=0.6, significant=True
    )
    entries = [
        BaselineEntry(
            scan_id="fpr",
            scan_type="fpr_scan",
            label="persists",
            match="exact",
            similarity=1.0,
            before=side,
            after=side,
        ),
        BaselineEntry(
            scan_id="fpr",
            scan_type="fpr_scan",
            label="new",
            match="none",
            similarity=None,
            before=None,
            after=side,
        ),
        BaselineEntry(
            scan_id="tpr",
            scan_type="tpr_scan",
            label="resolved",
            match="exact",
            similarity=1.0,
            before=side,
            after=side,
            power=0.93,
        ),
    ]
    labels = ("new", "shifted", "persists", "inconclusive", "resolved")
    comparison = BaselineComparison(
        baseline_path="b.json",
        baseline_name="b",
        baseline_utc_time="2026-11-01T00:00:00Z",
        overlap_threshold=0.5,
        fail_on="new_significant",
        counts={label: sum(e.label == label for e in entries) for label in labels},
        new_significant=1,
        method="retest",
        scans_added=[],
        scans_removed=[],
        entries=entries,
    )
    audited = report(scan([finding()], id="fpr"), scan([finding()], id="tpr", type="tpr_scan"))
    metrics = report_metrics(audited.model_copy(update={"baseline": comparison}))
    assert metrics["baseline.persists"] == 1 and metrics["baseline.new"] == 1
    assert metrics["baseline.resolved"] == 1 and metrics["baseline.shifted"] == 0
    assert metrics["baseline.new_significant"] == 1
    assert metrics["fpr.baseline.persists"] == 1 and metrics["fpr.baseline.new"] == 1
    assert metrics["fpr.baseline.resolved"] == 0
    assert metrics["tpr.baseline.resolved"] == 1 and metrics["tpr.baseline.new"] == 0


def test_keys_and_values_fit_mlflows_limits() -> None:
    long = scan([finding()], id="odd")
    long = long.model_copy(
        update={
            "parameters": {"note": "x" * 10_000, "levels": {"a:b/é?": 1, "../c//d": 2}, "id": "odd"}
        }
    )
    params = report_params(report(long))
    assert len(params["odd.note"]) == MAX_PARAM_VALUE and params["odd.note"].endswith("…")
    assert all(MLFLOW_NAME.match(k) and posixpath.normpath(k) == k for k in params), list(params)
    assert params["odd.levels.a_b___"] == "1" and params["odd.levels..._c__d"] == "2"
    assert "odd.id" not in params
    tags = report_tags(report(long))
    assert tags["odd.status"] == "significant" and tags["fairscan.verdict"] == "findings"
    assert tags["fairscan.version"] == "0.1.0" and tags["fairscan.exit_code"] == "1"


def test_uris_and_messages_lose_their_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    uri = "https://alice:s%3Acret@mlflow.example.org:8443/prefix?token=abc123"
    assert redact_uri(uri) == "https://mlflow.example.org:8443/prefix?token=***"
    assert redact_uri("databricks") == "databricks"
    assert redact_uri("http://[::1]:5000") == "http://[::1]:5000"
    assert redact_uri("sqlite:////tmp/mlflow.db") == "sqlite:////tmp/mlflow.db"
    assert redact_uri("file:///tmp/mlruns") == "file:///tmp/mlruns"
    assert redact_uri("databricks://profile") == "databricks://profile"
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok-98765")
    message = (
        "API request to https://alice:s%3Acret@mlflow.example.org:8443/api failed; "
        "password s:cret, header Bearer tok-98765"
    )
    masked = mask_secrets(message, uri)
    for secret in ("alice", "s%3Acret", "s:cret", "tok-98765"):
        assert secret not in masked, masked


def test_http_limits_apply_only_where_unset_and_are_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in HTTP_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "7")
    added = _unset(HTTP_DEFAULTS)
    assert "MLFLOW_HTTP_REQUEST_TIMEOUT" not in added
    assert added["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
    import os

    with _environment(added):
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"
        assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "7"
    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "7"


def test_without_the_client_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    with pytest.raises(ServiceError) as caught:
        log_report(report(scan([finding()])))
    assert "not installed" in str(caught.value)
    assert "pip install 'fairscan[mlflow]'" in str(caught.value)


def test_importing_fairscan_loads_no_mlflow() -> None:
    """Start-up time: mlflow (seconds to import) is loaded by a logging call only."""
    probe = (
        "import sys, fairscan.api, fairscan.cli, fairscan.report.view, fairscan.run.reports; "
        "print('mlflow' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


# --- a real tracking server ----------------------------------------------------------------------


@pytest.fixture
def tracking(mlflow_server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The session's server as MLFLOW_TRACKING_URI, and a client that reads it back."""
    from mlflow import MlflowClient

    for name in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
    return MlflowClient(tracking_uri=mlflow_server.uri)


def _artifact(client: Any, run_id: str, path: str, tmp_path: Path) -> str:
    local = client.download_artifacts(run_id, path, str(tmp_path))
    return Path(local).read_text(encoding="utf-8")


@pytest.mark.mlflow_server
def test_round_trip_through_the_client(credit_report: Any, tracking: Any, tmp_path: Path) -> None:
    experiment = f"roundtrip-{uuid.uuid4().hex[:8]}"
    run_id = credit_report.to_mlflow(experiment=experiment, tags={"team": "risk"})
    run = tracking.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "credit-mlflow"
    assert tracking.get_experiment(run.info.experiment_id).name == experiment
    assert run.data.params == report_params(credit_report)
    expected = report_metrics(credit_report)
    assert set(run.data.metrics) == set(expected)
    for key, value in expected.items():
        assert run.data.metrics[key] == pytest.approx(value, rel=1e-12), key
    assert run.data.tags["fairscan.version"] == fairscan.__version__
    assert run.data.tags["fairscan.verdict"] == credit_report.verdict.status
    assert run.data.tags["team"] == "risk"
    listed = sorted(a.path for a in tracking.list_artifacts(run_id, "fairscan"))
    assert listed == [f"fairscan/credit-mlflow{ext}" for ext in (".html", ".json", ".md")]
    assert _artifact(tracking, run_id, "fairscan/credit-mlflow.json", tmp_path) == (
        credit_report.to_json()
    )
    assert _artifact(tracking, run_id, "fairscan/credit-mlflow.md", tmp_path / "md") == (
        credit_report.to_markdown()
    )


@pytest.mark.mlflow_server
def test_the_specs_experiment_is_the_default(credit_report: Any, tracking: Any) -> None:
    run = tracking.get_run(credit_report.to_mlflow())
    assert tracking.get_experiment(run.info.experiment_id).name == "from-the-spec"


@pytest.mark.mlflow_server
def test_into_a_given_run_and_into_the_active_run(credit_report: Any, tracking: Any) -> None:
    import mlflow

    experiment_id = tracking.create_experiment(f"given-{uuid.uuid4().hex[:8]}")
    given = tracking.create_run(experiment_id).info.run_id
    assert credit_report.to_mlflow(given) == given
    after = tracking.get_run(given)
    assert after.info.status == "RUNNING"  # the caller's run: left for the caller to end
    assert after.data.params["fairscan.spec_name"] == "credit-mlflow"
    with mlflow.start_run(experiment_id=experiment_id) as active:
        assert credit_report.to_mlflow() == active.info.run_id
    assert "fpr.p_value" in tracking.get_run(active.info.run_id).data.metrics


@pytest.mark.mlflow_server
def test_a_missing_run_is_a_clear_error(credit_report: Any, tracking: Any) -> None:
    with pytest.raises(ServiceError) as caught:
        credit_report.to_mlflow("0123456789abcdef0123456789abcdef")
    text = str(caught.value)
    assert "cannot log to MLflow at http://127.0.0.1:" in text
    assert "Traceback" not in text


@pytest.mark.mlflow_server
def test_no_secret_in_params_tags_artifacts_or_output(
    credit_report: Any,
    mlflow_server: Any,
    tracking: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "pw-Zq81-secret"
    with_credentials = mlflow_server.uri.replace("http://", f"http://auditor:{secret}@")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", with_credentials)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", secret)
    run_id = credit_report.to_mlflow(experiment=f"secret-{uuid.uuid4().hex[:8]}")
    run = tracking.get_run(run_id)
    stored = json.dumps([run.data.params, run.data.tags, run.data.metrics])
    folder = Path(tracking.download_artifacts(run_id, "fairscan", str(tmp_path)))
    stored += "".join(p.read_text(encoding="utf-8") for p in folder.iterdir())
    out = capsys.readouterr()
    assert secret not in stored and secret not in out.out + out.err
    assert "View run" not in out.out  # MLflow's link printing is off (stdout may be a report)
