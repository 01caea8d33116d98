"""Log an audit report to MLflow: ``report.to_mlflow()`` and ``output.mlflow`` (issue 26).

The one module that talks to MLflow. ``mlflow`` (the ``fairscan[mlflow]`` extra: the
``mlflow-skinny`` client) is imported here, when a report is logged, never at start-up (it
takes seconds to import). The tracking server comes from MLflow's own settings
(``MLFLOW_TRACKING_URI`` or ``mlflow.set_tracking_uri``), its credentials from MLflow's own
variables; neither is ever written to a param, tag, artifact or message (a URI's user and
password are masked in every message).

What a run gets:

- params: ``fairscan.spec_name``, ``fairscan.spec_sha256``, ``fairscan.data_sha256``, the
  data's rows, the run's significance and gate settings (``fairscan.*``), and every setting of
  every scan as ``<scan>.<setting>`` (lists and mappings as compact JSON);
- metrics: per scan ``<scan>.p_value`` and ``<scan>.statistic`` (its top finding's, the p-value
  adjusted where the scan adjusts, as the reports show it), ``<scan>.significant`` (1/0) and
  ``<scan>.significant_findings``, ``<scan>.corrected_p_value`` under ``gate.correction``; with
  a baseline, ``<scan>.baseline.<label>`` and ``baseline.<label>`` (entries per label);
  ``significant_findings`` over all scans; with a ``monitor`` object, ``monitor.alarms``,
  ``monitor.run_index`` and per monitored subgroup ``<scan>.monitor.<id>.e_value`` (the
  evidence) and ``.p_value_anytime`` (``<id>``: ``scan`` for the scan's open search, else 8 hex
  digits of the subgroup's SHA-256, stable over runs). Undefined figures are left out, never NaN;
- tags: ``fairscan.version``, ``fairscan.verdict`` (clean / findings / error),
  ``fairscan.exit_code``, ``<scan>.status``, with a monitor ``<scan>.monitor.<id>`` (the
  subgroup it names), plus the user's tags;
- artifacts: the JSON, Markdown and HTML reports under ``fairscan/``.

Every request has a timeout: where the user has not set MLflow's own variables, fairscan sets
``MLFLOW_HTTP_REQUEST_TIMEOUT`` to 30 s and ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` to 2 for the
time of the call (MLflow's defaults, 120 s and 7 retries with exponential backoff, hold a CI
job for many minutes on a stalled server). A server that trickles bytes answers every read
within that timeout and never ends a request, so the whole delivery also has a deadline,
``FAIRSCAN_MLFLOW_TIMEOUT`` seconds (default 120): it runs in a thread of its own while the
calling thread waits in short steps, where Ctrl-C and SIGTERM are handled at once. Ctrl-C is
never caught.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from fairscan.errors import ServiceError
from fairscan.interrupts import env_seconds, in_thread, interrupt_of
from fairscan.redact import mask_text, secret_values, shown_url
from fairscan.report.formats import FORMATS
from fairscan.report.hooks import NO_HOOKS, HookMap
from fairscan.report.models import AuditReport, MonitorSubgroup, ScanResult
from fairscan.report.monitor_view import process_text
from fairscan.report.text import headline_p

if TYPE_CHECKING:
    from mlflow import MlflowClient

INSTALL_HINT: Final = "install the MLflow client: pip install 'fairscan[mlflow]'"
ARTIFACT_PATH: Final = "fairscan"  # the reports' folder in the run's artifacts
ARTIFACT_FORMATS: Final = ("json", "markdown", "html")

# fairscan's limits where the user has not set MLflow's own, for the time of one call
HTTP_DEFAULTS: Final[dict[str, str]] = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    # MLflow prints "View run ... at: URL" on stdout, which may carry a report (--out -)
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
# marking a failed run FAILED: one short try (the server may be what failed)
MARK_FAILED_LIMITS: Final[dict[str, str]] = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
MARK_FAILED_SECONDS: Final = 10.0  # that try's whole time, however the server trickles
# The whole delivery's time limit (every request of it together), in seconds
DEADLINE_VARIABLE: Final = "FAIRSCAN_MLFLOW_TIMEOUT"
DEADLINE_SECONDS: Final = 120.0
# MLflow 3 refuses a local file store (a path, file://) unless this variable is "true"
FILE_STORE_VARIABLE: Final = "MLFLOW_ALLOW_FILE_STORE"
# MLflow's variables whose values are secrets: masked should one ever show in a message
SECRET_VARIABLES: Final = ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")

# MLflow's limits (mlflow.utils.validation)
MAX_PARAM_VALUE: Final = 6000
MAX_TAG_VALUE: Final = 8000
MAX_KEY: Final = 250
PARAMS_PER_BATCH: Final = 100
METRICS_PER_BATCH: Final = 1000
# the characters MLflow accepts in a key on every platform, less "/" (MLflow refuses a key
# that a path normalisation would change: "a//b", "a/../b")
_KEY_CHARACTER = re.compile(r"[^A-Za-z0-9_\-. ]")


@dataclass(frozen=True)
class MlflowRun:
    """Where a report was logged."""

    run_id: str
    experiment_id: str
    tracking_uri: str  # without user or password


def log_report(
    report: AuditReport,
    hooks: HookMap = NO_HOOKS,
    *,
    run_id: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    tags: Mapping[str, str] | None = None,
    tracking_uri: str | None = None,
    field: str | None = None,
) -> MlflowRun:
    """Log ``report`` to MLflow; where it went.

    The run: ``run_id`` if given (left running), else the active run of ``mlflow.start_run()``
    or the run named by ``MLFLOW_RUN_ID`` (left running), else a new run in ``experiment``
    (default: the spec's ``output.mlflow.experiment``, else MLflow's default experiment),
    named ``run_name`` (default: the spec's, else the report's name) and ended when logged.
    ``ServiceError`` (naming ``field`` when given) if the client is missing or the tracking
    server fails; a new run is then marked FAILED where the server still answers.
    """
    try:
        import mlflow
    except ImportError:
        raise ServiceError(
            "cannot log to MLflow: the MLflow client is not installed",
            field=field,
            hint=INSTALL_HINT,
        ) from None
    settings = _spec_settings(report)
    uri_is_set: Callable[[], bool] = mlflow.is_tracking_uri_set  # (untyped in mlflow)
    chosen = tracking_uri is not None or uri_is_set()
    uri = tracking_uri or mlflow.get_tracking_uri()
    shown = redact_uri(uri)
    hint = _failure_hint(chosen, uri)
    # MLflow's active run is per thread: read here, before the work moves to another thread
    if run_id is None:
        active = mlflow.active_run()
        run_id = active.info.run_id if active is not None else os.environ.get("MLFLOW_RUN_ID")
    resolved: list[tuple[str, str, bool]] = []
    client: MlflowClient | None = None
    try:
        with _environment(_unset(HTTP_DEFAULTS)):
            client = mlflow.MlflowClient(tracking_uri=uri)

            def deliver(client: MlflowClient = client) -> None:
                resolved.append(
                    _resolve_run(
                        client,
                        run_id,
                        experiment or _text(settings.get("experiment")),
                        run_name or _text(settings.get("run_name")) or report.name,
                        {**_text_map(settings.get("tags")), **(tags or {})},
                        _millis(report.provenance.utc_time),
                    )
                )
                logged_id, _, created = resolved[0]
                _log_batches(client, logged_id, report)
                _log_artifacts(client, logged_id, report, hooks)
                if created:
                    end = _millis(report.provenance.finished_utc_time)
                    client.set_terminated(logged_id, "FINISHED", end)

            _bounded(deliver, deadline_seconds(), shown, field, hint)
    except ServiceError:
        raise  # the deadline passed: the server is not answering, marking the run would wait
    except Exception as exc:
        interrupt = interrupt_of(exc)  # a library may hand Ctrl-C back wrapped
        if interrupt is not None:
            raise interrupt from None
        if resolved and resolved[0][2] and client is not None:
            _mark_failed(client, resolved[0][0])
        raise ServiceError(
            f"cannot log to MLflow at {shown}: {_reason(exc, uri)}", field=field, hint=hint
        ) from None
    run_id, experiment_id, _ = resolved[0]
    return MlflowRun(run_id=run_id, experiment_id=experiment_id, tracking_uri=shown)


def report_params(report: AuditReport) -> dict[str, str]:
    """The run's params: spec name and hashes, data rows, run settings, each scan's settings."""
    p = report.provenance
    resolved = p.parameters
    params: dict[str, Any] = {
        "fairscan.spec_name": report.name,
        "fairscan.spec_sha256": p.spec_sha256,
        "fairscan.data_sha256": p.data_sha256,
        "fairscan.data_rows": p.data_rows,
        "fairscan.rows_after_filter": p.rows_after_filter,
        "fairscan.filter": p.filter,
        "fairscan.seed": p.seed,
        "fairscan.attributes": list(report.attributes),
    }
    for section, keys in (
        ("significance", ("alpha", "replicates", "executor")),
        ("gate", ("fail_on", "correction")),
    ):
        values = resolved.get(section)
        if isinstance(values, dict):
            params.update({f"fairscan.{k}": values.get(k) for k in keys})
    for scan in report.scans:
        for key, value in scan.parameters.items():
            if key == "id":
                continue
            if isinstance(value, dict) and value:
                params.update({f"{scan.id}.{key}.{k}": v for k, v in value.items()})
            else:
                params[f"{scan.id}.{key}"] = value
    return {
        _key(k): _truncate(_param_text(v), MAX_PARAM_VALUE)
        for k, v in params.items()
        if v is not None
    }


def report_metrics(report: AuditReport) -> dict[str, float]:
    """The run's metrics: per scan its top finding's p-value and statistic, whether it found a
    significant subgroup, and with a baseline the entries per label; undefined ones left out."""
    metrics: dict[str, float | None] = {
        "significant_findings": float(report.verdict.significant_findings)
    }
    for scan in report.scans:
        metrics.update(_scan_metrics(scan))
    comparison = report.baseline
    if comparison is not None:
        for label, count in comparison.counts.items():
            metrics[f"baseline.{label}"] = float(count)
        metrics["baseline.new_significant"] = float(comparison.new_significant)
        for scan in report.scans:
            for label in comparison.counts:
                metrics[f"{scan.id}.baseline.{label}"] = float(
                    sum(1 for e in comparison.entries if e.scan_id == scan.id and e.label == label)
                )
    if report.monitor is not None:
        metrics["monitor.alarms"] = float(len(report.monitor.alarms))
        metrics["monitor.run_index"] = float(report.monitor.run_index)
        for entry in report.monitor.subgroups:
            key = _monitor_key(entry)
            metrics[f"{key}.e_value"] = entry.e_value
            metrics[f"{key}.p_value_anytime"] = entry.p_value_anytime
    return {_key(k): v for k, v in metrics.items() if v is not None and math.isfinite(v)}


def _monitor_key(entry: MonitorSubgroup) -> str:
    """``<scan>.monitor.<id>``: the same key for the same monitored subgroup in every run."""
    if entry.kind == "scan":
        return f"{entry.scan}.monitor.scan"
    canonical = json.dumps(
        {k: sorted(v) for k, v in sorted(entry.subgroup.items())}, ensure_ascii=False
    )
    return f"{entry.scan}.monitor.{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:8]}"


def report_tags(report: AuditReport) -> dict[str, str]:
    """The run's tags: the fairscan version that made the report, the verdict, scan statuses."""
    tags = {
        "fairscan.version": report.provenance.tool_version,
        "fairscan.verdict": report.verdict.status,
        "fairscan.exit_code": str(report.verdict.exit_code),
    }
    tags.update({f"{scan.id}.status": scan.status for scan in report.scans})
    if report.monitor is not None:
        tags.update({_monitor_key(e): process_text(e) for e in report.monitor.subgroups})
    return {_key(k): _truncate(v, MAX_TAG_VALUE) for k, v in tags.items()}


def redact_uri(uri: str) -> str:
    """``uri`` as shown and stored: no user, password or fragment, and only the harmless query
    parameters (:func:`fairscan.redact.shown_url`)."""
    return shown_url(uri)


def _scan_metrics(scan: ScanResult) -> dict[str, float | None]:
    head = scan.headline()
    metrics: dict[str, float | None] = {
        f"{scan.id}.p_value": headline_p(head) if head is not None else None,
        f"{scan.id}.statistic": head.statistic.value if head is not None else None,
        f"{scan.id}.corrected_p_value": scan.corrected_p_value,
    }
    if scan.status in ("significant", "not_significant", "no_finding"):  # a test's outcome
        metrics[f"{scan.id}.significant"] = 1.0 if scan.status == "significant" else 0.0
        metrics[f"{scan.id}.significant_findings"] = float(scan.significant_count())
    return metrics


def _failure_hint(uri_chosen: bool, uri: str) -> str:
    local = _local_store(uri)
    if local == "file" and os.environ.get(FILE_STORE_VARIABLE, "").lower() != "true":
        # MLflow 3 refuses its file store unless opted in: no server is involved at all
        return (
            f"{uri} is a local file store, which MLflow uses only with "
            f"{FILE_STORE_VARIABLE}=true: set that variable, or set MLFLOW_TRACKING_URI "
            "(or mlflow.set_tracking_uri) to a tracking server, e.g. http://localhost:5000"
        )
    if local == "database":
        return (
            f"{uri} is a local database store, which needs the full mlflow package "
            "(pip install mlflow), not only the mlflow-skinny client: install it, or set "
            "MLFLOW_TRACKING_URI to a tracking server, e.g. http://localhost:5000"
            + ("" if uri_chosen else " (MLFLOW_TRACKING_URI is not set: this is MLflow's default)")
        )
    if local == "file":
        return f"{uri} is a local file store: check that the folder exists and is writable"
    if not uri_chosen:
        return (
            "MLFLOW_TRACKING_URI is not set, so MLflow used its default local store: set it "
            "to the tracking server's URL, e.g. http://mlflow.example.org:5000"
        )
    return (
        "check MLFLOW_TRACKING_URI and that the tracking server is up; "
        "MLFLOW_HTTP_REQUEST_TIMEOUT and MLFLOW_HTTP_REQUEST_MAX_RETRIES bound each request "
        f"(fairscan's defaults where unset: 30 s, 2 retries), {DEADLINE_VARIABLE} the whole "
        f"delivery (default {DEADLINE_SECONDS:g} s)"
    )


def _local_store(uri: str) -> str | None:
    """``"file"`` for a folder store (a path or ``file:`` URI), ``"database"`` for a
    SQLAlchemy store (``sqlite:``, ``postgresql:``, ...), None for a server."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("", "file") or len(scheme) == 1:  # one letter: a Windows drive (C:)
        return "file"
    if scheme.split("+")[0] in ("sqlite", "postgresql", "mysql", "mssql"):
        return "database"
    return None


def deadline_seconds() -> float:
    """The whole delivery's time limit: ``FAIRSCAN_MLFLOW_TIMEOUT`` seconds, default 120."""
    return env_seconds(DEADLINE_VARIABLE, DEADLINE_SECONDS)


def _bounded(
    work: Callable[[], None], seconds: float, shown: str, field: str | None, hint: str
) -> None:
    """``work()`` in a thread of its own while this one waits in short steps: Ctrl-C and
    SIGTERM are handled at once, and a server that trickles bytes (each read answered within
    MLflow's request timeout, the requests never ending) is given up after ``seconds``."""
    end = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > end:
            raise ServiceError(
                f"cannot log to MLflow at {shown}: the tracking server did not finish answering "
                f"within {seconds:g} s (the reports are written)",
                field=field,
                hint=hint,
            )

    in_thread(work, check=check, name="fairscan-mlflow")


def _resolve_run(
    client: MlflowClient,
    run_id: str | None,
    experiment: str | None,
    run_name: str,
    tags: Mapping[str, str],
    start_ms: int | None,
) -> tuple[str, str, bool]:
    """The run to log to, its experiment, and whether this call created it (to end it)."""
    if run_id is not None:
        existing = client.get_run(run_id)  # a clear error when there is no such run
        if tags:
            client.log_batch(run_id, tags=_tags(dict(tags)))
        return run_id, str(existing.info.experiment_id), False
    if experiment is not None:
        experiment_id = _experiment_id(client, experiment)
    else:
        experiment_id = os.environ.get("MLFLOW_EXPERIMENT_ID") or _default_experiment(client)
    run = client.create_run(experiment_id, start_time=start_ms, tags=dict(tags), run_name=run_name)
    return str(run.info.run_id), str(experiment_id), True


def _experiment_id(client: MlflowClient, name: str) -> str:
    """The experiment ``name``, created when absent (another run may create it meanwhile)."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name))
    except MlflowException:
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


def _default_experiment(client: MlflowClient) -> str:
    """MLflow's default experiment: MLFLOW_EXPERIMENT_NAME's, else "Default" (id 0)."""
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME")
    return _experiment_id(client, name) if name else "0"


def _log_batches(client: MlflowClient, run_id: str, report: AuditReport) -> None:
    from mlflow.entities import Metric, Param

    timestamp = _millis(report.provenance.finished_utc_time) or 0
    params = [Param(k, v) for k, v in report_params(report).items()]
    metrics = [Metric(k, v, timestamp, 0) for k, v in report_metrics(report).items()]
    for chunk in _chunks(params, PARAMS_PER_BATCH):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks(metrics, METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=chunk)
    for chunk in _chunks(_tags(report_tags(report)), PARAMS_PER_BATCH):
        client.log_batch(run_id, tags=chunk)


def _log_artifacts(client: MlflowClient, run_id: str, report: AuditReport, hooks: HookMap) -> None:
    """The JSON, Markdown and HTML reports, rendered as ``audit run`` writes them."""
    with tempfile.TemporaryDirectory(prefix="fairscan-mlflow-") as tmp:
        folder = Path(tmp) / ARTIFACT_PATH
        folder.mkdir()
        for name in ARTIFACT_FORMATS:
            fmt = FORMATS[name]
            path = folder / f"{report.name}{fmt.extension}"
            path.write_text(fmt.render(report, hooks), encoding="utf-8", newline="\n")
        client.log_artifacts(run_id, str(folder), artifact_path=ARTIFACT_PATH)


def _mark_failed(client: MlflowClient, run_id: str) -> None:
    """Best effort: the run this call created is FAILED, not left RUNNING (the server may be
    the reason it failed: one short try, and the first error is the one reported)."""
    end = time.monotonic() + MARK_FAILED_SECONDS

    def mark() -> None:
        client.set_terminated(run_id, "FAILED")

    def check() -> None:
        if time.monotonic() > end:
            raise TimeoutError

    try:
        with _environment(MARK_FAILED_LIMITS):
            in_thread(mark, check=check, name="fairscan-mlflow")
    except Exception as exc:
        interrupt = interrupt_of(exc)
        if interrupt is not None:
            raise interrupt from None


def _tags(tags: Mapping[str, str]) -> list[Any]:
    from mlflow.entities import RunTag

    return [RunTag(k, v) for k, v in tags.items()]


def _unset(defaults: Mapping[str, str]) -> dict[str, str]:
    """The ``defaults`` the user has not set in the environment."""
    return {name: value for name, value in defaults.items() if name not in os.environ}


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """MLflow's settings (read from the environment at each request) set to ``values`` for the
    time of one call, then restored."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reason(exc: BaseException, uri: str) -> str:
    """The failure in one line (the first of MLflow's message), with no secret in it."""
    text = str(exc).strip() or type(exc).__name__
    first = text.splitlines()[0] if text else type(exc).__name__
    return _truncate(mask_secrets(first, uri), 600)


def mask_secrets(text: str, uri: str) -> str:
    """``text`` with the tracking URI's user, password and unknown parameters, any URL's user
    and password, and MLflow's password and token variables masked
    (:func:`fairscan.redact.mask_text`)."""
    secrets = [os.environ.get(name, "") for name in SECRET_VARIABLES] + secret_values(uri)
    with suppress(ValueError):
        secrets.append(unquote(urlsplit(uri).username or ""))
    return mask_text(text, [s for s in secrets if len(s) >= 3])


def _spec_settings(report: AuditReport) -> dict[str, Any]:
    """The spec's ``output.mlflow`` block as the report records it ({} without one)."""
    output = report.provenance.parameters.get("output")
    block = output.get("mlflow") if isinstance(output, dict) else None
    return block if isinstance(block, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _text_map(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _param_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _key(key: str) -> str:
    """A key MLflow accepts on every platform: other characters as ``_``, at most 250."""
    return _KEY_CHARACTER.sub("_", key)[:MAX_KEY]


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _millis(utc: str) -> int | None:
    """An ISO 8601 UTC time of the report in milliseconds since the epoch (None if unreadable)."""
    try:
        moment = datetime.fromisoformat(utc.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


__all__ = [
    "MlflowRun",
    "ServiceError",
    "log_report",
    "mask_secrets",
    "redact_uri",
    "report_metrics",
    "report_params",
    "report_tags",
]
