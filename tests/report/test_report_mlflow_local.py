"""``report.to_mlflow()`` / ``output.mlflow`` into a local store, with no server (issue 38): the
error names the real cause (MLflow 3 uses a file store only with ``MLFLOW_ALLOW_FILE_STORE``),
and with that variable set the report is logged there. Real MLflow client, real folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import fairscan
from fairscan.errors import ServiceError
from fairscan.report.mlflow_log import _failure_hint, log_report

CREDIT = Path(__file__).resolve().parents[2] / "sample_data" / "credit.csv"


@pytest.fixture(scope="module")
def small_report() -> Any:
    return fairscan.audit(
        CREDIT,
        name="credit-local-store",
        outcome="default",
        prediction="score",
        recommendation="high_risk",
        attributes=["sex", "age_group"],
        scans=[{"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 2}],
        significance={"replicates": 19, "seed": 0, "workers": 1},
    )


@pytest.fixture(autouse=True)
def _no_mlflow_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow", reason="the MLflow client is not installed (fairscan[mlflow])")
    for name in (
        "MLFLOW_TRACKING_URI",
        "MLFLOW_RUN_ID",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
        "MLFLOW_ALLOW_FILE_STORE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.slow
def test_a_local_file_store_names_the_variable_not_a_server(
    small_report: Any, tmp_path: Path
) -> None:
    uri = (tmp_path / "mlruns").as_uri()
    try:
        log_report(small_report, tracking_uri=uri)
    except ServiceError as error:
        (issue,) = error.issues
        assert issue.hint is not None
        assert "MLFLOW_ALLOW_FILE_STORE=true" in issue.hint
        assert "local file store" in issue.hint
        assert "is up" not in issue.hint  # no server to check
    else:  # an MLflow that still writes file stores unasked: nothing to explain
        assert (tmp_path / "mlruns").is_dir()


@pytest.mark.slow
def test_with_the_variable_the_report_is_logged_to_the_folder(
    small_report: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    logged = log_report(small_report, tracking_uri=uri)
    run = MlflowClient(tracking_uri=uri).get_run(logged.run_id)
    assert run.data.params["fairscan.spec_name"] == "credit-local-store"
    assert run.info.status == "FINISHED"


@pytest.mark.slow
def test_each_kind_of_store_gets_its_own_hint() -> None:
    assert "MLFLOW_ALLOW_FILE_STORE" in _failure_hint(True, "/srv/mlruns")
    assert "MLFLOW_ALLOW_FILE_STORE" in _failure_hint(True, "file:///srv/mlruns")
    assert "MLFLOW_ALLOW_FILE_STORE" in _failure_hint(True, "C:\\mlruns")
    database = _failure_hint(False, "sqlite:///mlflow.db")
    assert "pip install mlflow" in database and "MLflow's default" in database
    server = _failure_hint(True, "http://mlflow.example.org:5000")
    assert "tracking server is up" in server and "MLFLOW_ALLOW_FILE_STORE" not in server
