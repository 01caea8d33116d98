"""Execution: run every scan of a prepared audit with its seed stream, gate the verdict
(:mod:`fairscan.report.verdict`), record provenance, and write the report files."""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fairscan import __version__
from fairscan.errors import Issue, ScanError
from fairscan.interrupts import interrupt_of
from fairscan.progress import Progress, ScanProgress, phase
from fairscan.redact import shown_spec, shown_url
from fairscan.report.baseline import compare_reports
from fairscan.report.mlflow_log import MlflowRun
from fairscan.report.models import (
    AuditedModel,
    AuditReport,
    BaselineComparison,
    Environment,
    Override,
    Provenance,
    ScanResult,
    ScanTiming,
)
from fairscan.report.verdict import build_verdict, gate_verdict, still_significant
from fairscan.report.view import ReportView
from fairscan.run.options import AuditOutcome, RunOptions
from fairscan.run.prepare import PreparedAudit, prepare_audit
from fairscan.run.reports import deliver_outcome, load_report, write_report_files
from fairscan.run.specs import apply_overrides, locate
from fairscan.scans import SCAN_TYPES, ScanContext, render_hooks
from fairscan.scans.roles import bind_roles, threshold_warnings

if TYPE_CHECKING:
    from fairscan.engine.jobs import Executor
    from fairscan.spec.base import ScanSpecBase


def run_audit(spec_path: Path, options: RunOptions | None = None) -> AuditOutcome:
    """Load, check and run one ``*.audit.yaml`` spec; write its reports."""
    options = options or RunOptions()
    return run_prepared(prepare_audit(spec_path, options), options)


def run_prepared(prepared: PreparedAudit, options: RunOptions | None = None) -> AuditOutcome:
    """Run every scan of a prepared audit and (optionally) write the reports."""
    from fairscan.engine.executors import open_executor
    from fairscan.engine.randomization import default_workers

    options = options or RunOptions()
    if options.executor is not None:  # audit scan and fairscan.audit: not applied yet
        prepared = replace(prepared, spec=apply_overrides(prepared.spec, options))
    spec = prepared.spec
    # read the baseline before scanning: a bad path fails fast
    baseline = load_report(options.baseline) if options.baseline is not None else None
    monitor = None
    if spec.monitor is not None and options.write:  # a listed subgroup's error fails fast too
        from fairscan.run.monitor import plan_monitor

        monitor = plan_monitor(prepared)
    started_wall = time.time()
    started = time.perf_counter()
    from fairscan.engine.seeds import resolve_seed

    seed, seed_origin = resolve_seed(
        spec.significance.seed, prepared.loaded.sha256, prepared.data_sha256
    )
    root = np.random.SeedSequence(seed)
    workers = spec.significance.workers or default_workers()
    count = len(spec.scans)
    # one connection to a Dask cluster for the whole run (none without replicates)
    # a Client object (fairscan.audit(executor=client)) cannot live in the spec: it goes as it is
    client = options.executor if not isinstance(options.executor, str | None) else None
    with open_executor(
        client if client is not None else spec.significance.executor,
        connect=spec.significance.replicates > 0,
    ) as executor:
        results = [
            # the observer sees "scan 2 of 3: <task>" (its interface is unchanged)
            run_scan(
                prepared,
                i,
                root,
                workers,
                ScanProgress(options.progress, i + 1, count),
                options.debug,
                executor,
            )
            for i in range(count)
        ]
    from fairscan.run.gate_correction import correct_scans, mark_untested  # a run only

    results = correct_scans(results, spec.gate.correction, spec.significance.alpha)
    results = mark_untested(results, spec.gate.correction, spec.significance.alpha)
    report: AuditReport = AuditReport(
        name=spec.name,
        description=spec.description,
        model=None if spec.model is None else AuditedModel(**spec.model.model_dump()),
        verdict=build_verdict(results, allow_untested=spec.gate.allow_untested),
        provenance=_provenance(
            prepared,
            root,
            seed,
            seed_origin,
            workers,
            started_wall,
            time.perf_counter() - started,
            options.overrides,
        ),
        data_warnings=list(prepared.data.warnings),
        attributes={a.name: list(a.labels) for a in prepared.data.attributes},
        bins={a.name: list(a.edges) for a in prepared.data.attributes if a.edges is not None}
        or None,
        scans=results,
    )
    comparison = None
    if baseline is not None:
        from fairscan.run.retest import retested_comparison

        comparison = retested_comparison(
            prepared,
            report,
            baseline,
            baseline_path=str(options.baseline),
            fail_on=spec.gate.fail_on,
            root=root,
            workers=workers,
            runner=run_scan,
        )
    report = ReportView.of(
        apply_gate(
            report,
            baseline,
            options.baseline,
            spec.gate.fail_on,
            comparison,
            allow_untested=spec.gate.allow_untested,
        ),
        render_hooks(),
    )
    if monitor is not None:  # the run's evidence, recorded with the run (spec monitor:)
        from fairscan.run.monitor import record_monitored

        report, written = record_monitored(prepared, monitor, report, options)
    elif options.write:
        with phase(options.progress, "writing the reports"):
            written = write_report_files(prepared, report, options)
    else:
        written = []
    return _delivered(prepared, report, written, options, monitored=monitor is not None)


def _delivered(
    prepared: PreparedAudit,
    report: AuditReport,
    written: list[Path],
    options: RunOptions,
    *,
    monitored: bool,
) -> AuditOutcome:
    """The run's outcome once the report files are on disk: the spec's deliveries run, each on
    its own (one failure policy: :mod:`fairscan.run.delivery`), unless nothing is written."""
    delivered = deliver_outcome(prepared, report, monitored=monitored) if options.write else None
    results = delivered.results if delivered is not None else {}
    mlflow_run = results.get("output.mlflow")
    return AuditOutcome(
        report=report,
        written=written,
        formats=options.report_formats(prepared.spec.output.formats),
        mlflow_run=mlflow_run if isinstance(mlflow_run, MlflowRun) else None,
        delivery_errors=delivered.errors if delivered is not None else (),
    )


def apply_gate(
    report: AuditReport,
    baseline: AuditReport | None,
    baseline_path: Path | None,
    fail_on: str,
    comparison: BaselineComparison | None = None,
    *,
    allow_untested: bool = False,
) -> AuditReport:
    """Label findings against the baseline (unless ``comparison`` is given: the re-test's)
    and set the exit code from ``gate.fail_on`` (:func:`fairscan.report.verdict.gate_verdict`,
    the rule ``audit diff`` applies too)."""
    if baseline is not None and comparison is None:
        comparison = compare_reports(
            baseline, report, baseline_path=str(baseline_path), fail_on=fail_on
        )
    new_significant = comparison.new_significant if comparison is not None else None
    still = still_significant(comparison) if comparison is not None else None
    verdict = gate_verdict(report.verdict, fail_on, new_significant, still, allow_untested)
    return report.model_copy(update={"verdict": verdict, "baseline": comparison})


def diff_reports_on_data(
    old_path: Path | str, new_path: Path | str, data_path: Path | str
) -> tuple[ReportView, BaselineComparison]:
    """``audit diff OLD NEW --data FILE``: re-test OLD's findings on the data NEW audited (the
    file must be that data: its SHA-256 is checked), with NEW's resolved spec and seed."""
    from fairscan.errors import UsageError
    from fairscan.report.verdict import report_fail_on
    from fairscan.run.prepare import prepare_loaded
    from fairscan.run.retest import retested_comparison
    from fairscan.run.specs import loaded_from_mapping

    old = load_report(old_path)
    new = load_report(new_path)
    raw = dict(new.provenance.parameters)
    data = dict(raw.get("data") or {})
    data["path"] = str(Path(data_path).resolve())
    raw["data"] = data
    prepared = prepare_loaded(loaded_from_mapping(raw, "<audit diff>"), located=False)
    if prepared.data_sha256 != new.provenance.data_sha256:
        raise UsageError(
            f"{data_path} is not the data {new_path} audited (its SHA-256 differs)",
            field="--data",
            hint=f"give the file NEW was run on ({new.provenance.data_path})",
        )
    comparison = retested_comparison(
        prepared,
        new,
        old,
        baseline_path=str(old_path),
        fail_on=report_fail_on(new),
        root=np.random.SeedSequence(int(new.provenance.seed_entropy)),
        workers=1,
        runner=run_scan,
    )
    return new, comparison


def scan_seed(root: np.random.SeedSequence, scan_id: str) -> np.random.SeedSequence:
    """A scan's seed (:func:`fairscan.engine.seeds.scan_seed`), loaded when a scan runs so the
    light commands (validate --no-data, explain, schema) import no engine module."""
    from fairscan.engine import seeds

    return seeds.scan_seed(root, scan_id)


def _alpha_share(prepared: PreparedAudit) -> float:
    """The share of alpha one scan's decision gets under gate.correction: 1 / the scans that
    give p-values (the strictest Holm/Bonferroni/BH level), so the sequential replicates settle
    the decision the correction will make (1 without a correction)."""
    if prepared.spec.gate.correction == "none":
        return 1.0
    tested = sum(SCAN_TYPES[s.type].p_value_floor is not None for s in prepared.spec.scans)
    return 1.0 / max(1, tested)


def run_scan(
    prepared: PreparedAudit,
    index: int,
    root: np.random.SeedSequence,
    workers: int,
    progress: Progress,
    debug: bool = False,
    executor: Executor | None = None,
    detect: tuple[float | None, ...] = (),
) -> ScanResult:
    """Run one scan of a prepared audit (``detect``: see :class:`ScanContext`).

    A failing scan marks itself ``error`` with its message (an internal error too, with the
    traceback when ``debug``), so the other scans' results are never lost; the run exits 2.
    """
    scan = prepared.spec.scans[index]
    roles = prepared.roles[index]
    started = time.perf_counter()
    try:
        use = SCAN_TYPES[scan.type].weight_use(scan)
        weighted_rows = use == "counts"
        if prepared.spec.columns.weight is not None:
            from fairscan.data.weights import check_weight_support, whole_numbers

            fractional = use != "rows"
            check_weight_support(scan.type, fractional, prepared.data, prepared.spec.columns.weight)
            weighted_rows = weighted_rows or (fractional and not whole_numbers(prepared.data))
        data = prepared.data_for(weighted_rows)
        bound = bind_roles(data, roles)
        ctx = ScanContext(
            data=data,
            alpha=prepared.spec.significance.alpha,
            replicates=prepared.spec.significance.replicates,
            seed=scan_seed(root, scan.id),
            workers=workers,
            executor=executor,
            progress=progress,
            role_names=dict(roles.names),
            roles=bound,
            threshold_rule=roles.threshold_rule,
            spec_dir=Path(prepared.loaded.file_of(f"scans[{index}]")).parent,
            detect=detect,
            sequential=prepared.spec.significance.sequential,
            alpha_share=_alpha_share(prepared),
        )
        # the search's phase; a runner's replicates show as their own phase within it
        with phase(progress, _search_words(scan)):
            result = SCAN_TYPES[scan.type].runner(scan, ctx)
        floor = SCAN_TYPES[scan.type].p_value_floor
        if floor is not None:  # what the gate needs to tell an untested scan (issue 34)
            from fairscan.run.gate_correction import result_floor

            reached = result_floor(result, floor(scan, ctx.replicates))
            result = result.model_copy(update={"p_value_floor": reached})
        warnings = threshold_warnings(prepared.data, roles, bound)
        if warnings:  # the runners need not know: the scan's result carries them
            result = result.model_copy(update={"warnings": [*warnings, *result.warnings]})
        return result
    except ScanError as error:
        message = locate(prepared.loaded, _in_scan(error, index), prepared.located).render()
    except Exception as exc:  # a bug inside one scan: the other scans still run
        interrupt = interrupt_of(exc)  # Ctrl-C may arrive wrapped by a library
        if interrupt is not None:
            raise interrupt from None
        from fairscan.memory_budget import resource_failure

        message = resource_failure(exc) or (
            f"internal error in this scan: {type(exc).__name__}: {exc}\n"
            "  help: this is a bug in fairscan; please report it with the spec "
            "(audit run --debug adds the traceback here)"
        )
        if debug:
            message += "\n" + "".join(traceback.format_exception(exc))
    elapsed = time.perf_counter() - started
    return ScanResult(
        id=scan.id,
        type=scan.type,
        status="error",
        parameters=scan.model_dump(mode="json", by_alias=True),
        timing=ScanTiming(search_seconds=elapsed, significance_seconds=0.0, total_seconds=elapsed),
        error=message,
    )


def _search_words(scan: ScanSpecBase) -> str:
    """``fpr: search (20 restarts)``: what a scan shows before its replicates."""
    restarts = getattr(scan, "restarts", None)
    if isinstance(restarts, int) and restarts > 0:
        return f"{scan.id}: search ({restarts} restarts)"
    return f"{scan.id}: scanning"


def _in_scan(error: ScanError, index: int) -> ScanError:
    """Prefix a scan error's scan-relative fields (``threshold``) with ``scans[i].``."""
    issues = []
    for issue in error.issues:
        field_ = issue.field
        if field_ is not None and not field_.startswith(
            ("scans[", "columns", "data", "attributes")
        ):
            field_ = f"scans[{index}].{field_}"
        issues.append(Issue(issue.message, hint=issue.hint, field=field_, column=issue.column))
    return ScanError(issues=issues)


def _provenance(
    prepared: PreparedAudit,
    root: np.random.SeedSequence,
    seed: int | None,
    seed_origin: str,
    workers: int,
    started_wall: float,
    elapsed: float,
    overrides: tuple[Override, ...] = (),
) -> Provenance:
    spec = prepared.spec
    return Provenance(
        tool_version=__version__,
        spec_path=str(prepared.loaded.path),
        spec_sha256=prepared.loaded.sha256,
        data_path=_relative_data_path(prepared.data_path, prepared.loaded.path),
        data_sha256=prepared.data_sha256,
        data_rows=prepared.data.n_rows_raw,
        rows_after_filter=prepared.data.n_data_rows,
        filter=spec.data.filter,
        seed=seed,
        seed_origin=seed_origin,
        seed_entropy=str(root.entropy),
        utc_time=_utc(started_wall),
        finished_utc_time=_utc(time.time()),
        total_seconds=elapsed,
        workers=workers,
        executor=spec.significance.executor,
        data_source=prepared.data_source,
        # absent `model:` and `monitor:` blocks are left out: reports of specs without them
        # keep their keys (a monitored run records its monitor settings here)
        parameters=shown_spec(
            spec.model_dump(
                mode="json",
                by_alias=True,
                exclude={k for k in ("model", "monitor") if getattr(spec, k) is None} or None,
            )
        ),
        overrides=list(overrides),
        environment=_environment(),
    )


def _relative_data_path(data_path: Path | str, spec_path: Path | str) -> str:
    """The data file as the report records it: relative to the spec file's folder (POSIX
    separators), so that a committed baseline names no machine's absolute path; relative to
    the working directory for a spec that is not a file (``<fairscan.audit arguments>``) or no
    longer exists (``audit scan``'s). Kept as given when it is not a file path
    (``<in-memory ...>``), and absolute when the two share no folder but the root (or lie on
    different drives)."""
    text = str(data_path)
    if "://" in text and "#" not in text:  # a URL (a database's location is shown already)
        return shown_url(text)
    if text.startswith("<") or "://" in text:  # in memory, or a database table
        return text
    data = os.path.abspath(text)
    spec_dir = os.path.dirname(os.path.abspath(spec_path))
    if not os.path.isdir(spec_dir):  # a temporary spec, gone (audit scan): the working directory
        spec_dir = os.getcwd()
    try:
        common = os.path.commonpath([data, spec_dir])
        relative = os.path.relpath(data, spec_dir)
    except ValueError:  # different drives
        return data
    if common == os.path.dirname(common):  # only the root in common
        return Path(data).as_posix()
    return Path(relative).as_posix()


# distribution name -> import name of the libraries whose versions a report records
_LIBRARIES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "scikit-learn": "sklearn",
    "polars": "polars",
    "pydantic": "pydantic",
    "pyyaml": "yaml",
}


def _environment() -> Environment:
    """Python, platform and the versions of the libraries this run used; a library the run's
    scans never imported is listed as "not used" (reading installed package metadata instead
    would cost more start-up time than the rest of a small audit)."""
    packages = {"fairscan": __version__}
    for name, module in _LIBRARIES.items():
        version = getattr(sys.modules.get(module), "__version__", None)
        packages[name] = version if isinstance(version, str) else "not used"
    return Environment(
        python=sys.version.split()[0], platform=platform.platform(), packages=packages
    )


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
