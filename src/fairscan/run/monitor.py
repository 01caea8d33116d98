"""The spec's ``monitor:`` block: a series of audits as an anytime-valid ledger (issue 35).

Each run of a spec ``name`` reads the evidence its earlier runs recorded in ``output.history``,
adds this run's data and writes it back, inside the transaction that records the run
(:func:`fairscan.run.history.append_monitored_run`). The statistics are
:mod:`fairscan.engine.evidence`'s; each scan type says through its ``monitor_evidence`` hook
(:class:`fairscan.scans.base.ScanType`) how its run's data bears on a subgroup, or why it
cannot be monitored.

Per monitored scan, the processes are (fixed up front, so the multiplicity is known):

* up to ``max_subgroups`` subgroup processes: the spec's listed ``subgroups`` (counted from the
  first run), then the subgroups the scan reports as significant, registered in the run they
  first appear (label ``new``) and counted from the next run on;
* the scan's open process: each run bets on the subgroup the scan reported first on the run
  before (scan, then bet: chosen on earlier runs only), so its product is a test martingale
  for "no subgroup is biased".

Alarms use e-Bonferroni over all of them: K = (monitored scans) x (1 + max_subgroups).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairscan.engine.evidence import Profiles
from fairscan.errors import ScanError
from fairscan.report.models import (
    AuditReport,
    MonitorAlarm,
    MonitorLabel,
    MonitorProcessKind,
    MonitorSubgroup,
    MonitorSummary,
    MonitorUnsupported,
    ScanResult,
)
from fairscan.report.verdict import monitored_verdict
from fairscan.report.view import ReportView
from fairscan.run.history import (
    Ledger,
    LedgerUpdate,
    MonitorRow,
    MonitorStep,
    StoredProcess,
    process_key,
)
from fairscan.run.specs import locate
from fairscan.scans import SCAN_TYPES, render_hooks
from fairscan.scans.base import RunEvidence
from fairscan.scans.roles import bind_roles

if TYPE_CHECKING:
    from pathlib import Path

    from fairscan.data.table import EncodedAttribute, PreparedData
    from fairscan.engine.evidence import ProcessState
    from fairscan.run.options import RunOptions
    from fairscan.run.prepare import PreparedAudit
    from fairscan.spec.models import MonitorSpec

Subgroup = dict[str, list[str]]


@dataclass(frozen=True)
class MonitoredScan:
    """A scan the monitor covers: its run's evidence function and the data it reads."""

    scan_id: str
    scan_type: str
    evidence: RunEvidence
    data: PreparedData  # the rows the scan read
    profiles: Profiles  # their attribute profiles, which the evidence function's masks index
    listed: tuple[Subgroup, ...]  # the spec's subgroups for it, resolved to value labels


@dataclass(frozen=True)
class MonitorPlan:
    """What a monitored run bets with, built from the prepared data before the scans run (a
    listed subgroup that names no value is an error before any scan runs)."""

    settings: MonitorSpec
    scans: tuple[MonitoredScan, ...]
    unsupported: tuple[MonitorUnsupported, ...]

    @property
    def processes(self) -> int:
        """K, the processes alpha is divided over (at least 1)."""
        return max(1, len(self.scans) * (1 + self.settings.max_subgroups))


def plan_monitor(prepared: PreparedAudit) -> MonitorPlan | None:
    """The run's monitoring plan (None without ``monitor:``)."""
    settings = prepared.spec.monitor
    if settings is None:
        return None
    scans: list[MonitoredScan] = []
    unsupported: list[MonitorUnsupported] = []
    profiles_of: dict[int, Profiles] = {}  # one pass over the rows per table the scans read
    for index, scan in enumerate(prepared.spec.scans):
        entry = SCAN_TYPES[scan.type]
        reason: str | None = None
        if prepared.spec.columns.weight is not None:
            reason = (
                "sample weights (columns.weight): the evidence counts each row as one "
                "observation, and weighted rows are not"
            )
        elif entry.monitor_evidence is None:
            reason = f"no anytime-valid evidence is computed for {entry.docs.title} scans"
        if reason is not None:
            unsupported.append(MonitorUnsupported(scan=scan.id, scan_type=scan.type, reason=reason))
            continue
        assert entry.monitor_evidence is not None
        data = prepared.data_for(entry.weight_use(scan) == "counts")
        if id(data) not in profiles_of:
            profiles_of[id(data)] = Profiles.of(data.codes)
        profiles = profiles_of[id(data)]
        try:
            roles = bind_roles(data, prepared.roles[index])
            evidence = entry.monitor_evidence(scan, data, roles, profiles)
        except ScanError as error:  # the scan itself reports it, located
            evidence = f"its columns could not be read: {error.issues[0].message}"
        if isinstance(evidence, str):
            unsupported.append(
                MonitorUnsupported(scan=scan.id, scan_type=scan.type, reason=evidence)
            )
            continue
        listed = _listed(prepared, scan.id, data.attributes, settings)
        scans.append(MonitoredScan(scan.id, scan.type, evidence, data, profiles, listed))
    return MonitorPlan(settings=settings, scans=tuple(scans), unsupported=tuple(unsupported))


def _listed(
    prepared: PreparedAudit,
    scan_id: str,
    attributes: tuple[EncodedAttribute, ...],
    settings: MonitorSpec,
) -> tuple[Subgroup, ...]:
    """The spec's subgroups of ``scan_id`` as value labels (an unknown value: a located error)."""
    from fairscan.data.subgroups import resolve_subgroup

    out = []
    for k, entry in enumerate(settings.subgroups.get(scan_id, [])):
        field = f"monitor.subgroups.{scan_id}[{k}]"
        try:
            out.append(resolve_subgroup(entry, attributes, field))
        except ScanError as error:
            raise locate(prepared.loaded, error, prepared.located) from None
    return tuple(out)


def profiles_in(subgroup: Subgroup, scan: MonitoredScan) -> np.ndarray:
    """Boolean mask of the profiles inside ``subgroup`` (O(profiles)): a value or attribute
    this run's data lack (a bin that moved, a value no longer seen) matches no row."""
    profiles = scan.profiles
    inside = np.ones(profiles.count, dtype=bool)
    by_name = {a.name: (j, a) for j, a in enumerate(scan.data.attributes)}
    for name, values in subgroup.items():
        if name not in by_name:
            return np.zeros(profiles.count, dtype=bool)
        j, attribute = by_name[name]
        column = profiles.codes[:, j]
        wanted = np.zeros(max(len(attribute.labels), int(column.max(initial=0)) + 1), dtype=bool)
        wanted[[attribute.labels.index(v) for v in values if v in attribute.labels]] = True
        inside &= wanted[column]
    return inside


@dataclass(frozen=True)
class _Outcome:
    """One process after this run: what the report shows, what the history keeps."""

    shown: MonitorSubgroup
    stored: StoredProcess
    row: MonitorRow
    alarms: tuple[MonitorAlarm, ...]


class _Step:
    """The update of one run, given the ledger read inside the history's transaction."""

    def __init__(self, plan: MonitorPlan, ledger: Ledger) -> None:
        from fairscan.engine import evidence

        self.plan = plan
        self.ledger = ledger
        s = plan.settings
        self.threshold, self.onset = evidence.thresholds(s.alpha, plan.processes, s.horizon)
        # the level of each effect's confidence sequence (resolved), as the Methods page says
        self.cs_alpha = s.alpha

    def scan(self, scan: MonitoredScan, result: ScanResult) -> list[_Outcome]:
        """The scan's subgroup processes (in registration order), then its open process."""
        stored = [p for p in self.ledger.processes if p.scan_id == scan.scan_id]
        subgroups = [p for p in stored if p.kind == "subgroup"]
        known = {p.key for p in subgroups}
        for listed in scan.listed:  # monitored from the first run: counted in this one
            key = process_key(scan.scan_id, "subgroup", listed)
            if key not in known:
                subgroups.append(self._fresh(scan, "subgroup", listed))
                known.add(key)
        out = [self._subgroup(scan, p, counted=True) for p in subgroups]
        for subgroup in _reported(result):  # registered now, counted from the next run on
            key = process_key(scan.scan_id, "subgroup", subgroup)
            if len(known) >= self.plan.settings.max_subgroups:
                break
            if key not in known:
                known.add(key)
                out.append(self._subgroup(scan, self._fresh(scan, "subgroup", subgroup), False))
        opened = next((p for p in stored if p.kind == "scan"), None)
        opened = opened or self._fresh(scan, "scan", {})
        out.append(self._open(scan, opened, _top(result)))
        return out

    def _fresh(self, scan: MonitoredScan, kind: str, subgroup: Subgroup) -> StoredProcess:
        from fairscan.engine.evidence import ProcessState

        return StoredProcess(
            key=process_key(scan.scan_id, kind, subgroup),
            scan_id=scan.scan_id,
            scan_type=scan.scan_type,
            kind=kind,
            subgroup=subgroup,
            state_json=ProcessState().to_json(),
            first_run_id=None,
        )

    def _state(self, process: StoredProcess) -> ProcessState:
        from fairscan.engine.evidence import ProcessState
        from fairscan.errors import DataError
        from fairscan.run.history import FIELD

        try:
            return ProcessState.from_json(process.state_json)
        except (ValueError, KeyError, TypeError) as error:
            raise DataError(
                f"the history's stored evidence of {process.key!r} cannot be read: {error}",
                field=FIELD,
                hint="the file was edited or written by another tool (or another fairscan "
                "version): delete that monitor_state row, or point output.history elsewhere",
            ) from None

    def _subgroup(self, scan: MonitoredScan, process: StoredProcess, counted: bool) -> _Outcome:
        from fairscan.engine.evidence import update_subgroup

        state = self._state(process)
        if counted:
            state = update_subgroup(state, scan.evidence(profiles_in(process.subgroup, scan)))
        return self._outcome(process, state, process.subgroup, process.subgroup, tolerance=True)

    def _open(self, scan: MonitoredScan, process: StoredProcess, top: Subgroup) -> _Outcome:
        """The open process bets this run on the subgroup recorded last run (none at first:
        a factor of 1), and records this run's top subgroup for the next."""
        from fairscan.engine.evidence import GRID_SIZE, update_scan

        bet = process.subgroup
        run = scan.evidence(profiles_in(bet, scan)) if bet else np.zeros(GRID_SIZE)
        state = update_scan(self._state(process), run)
        return self._outcome(process, state, bet, top, tolerance=False)

    def _outcome(
        self,
        process: StoredProcess,
        state: ProcessState,
        shown: Subgroup,
        kept: Subgroup,
        *,
        tolerance: bool,
    ) -> _Outcome:
        from fairscan.engine import evidence

        band = self.plan.settings.tolerance if tolerance else None
        name = evidence.label(
            state,
            threshold=self.threshold,
            onset_threshold=self.onset,
            tolerance=band,
            alpha=self.cs_alpha,
        )
        state, kinds = evidence.record_alarms(
            state,
            self.ledger.run_index,
            threshold=self.threshold,
            onset_threshold=self.onset,
            tolerance=band,
            alpha=self.cs_alpha,
        )
        low, high = evidence.confidence_sequence(state, self.cs_alpha)
        e = evidence.e_value(state)
        p = evidence.p_value_anytime(state)
        alarms = tuple(
            MonitorAlarm(
                scan=process.scan_id,
                scan_type=process.scan_type,
                kind=_kind(process.kind),
                subgroup=shown,
                alarm="evidence" if kind == "evidence" else "onset",
                e_value=_exp(state.log_running_max if kind == "evidence" else state.log_cusum),
                threshold=self.threshold if kind == "evidence" else self.onset,
                run_index=self.ledger.run_index,
            )
            for kind in kinds
        )
        summary = MonitorSubgroup(
            scan=process.scan_id,
            scan_type=process.scan_type,
            kind=_kind(process.kind),
            subgroup=shown,
            label=_label(name),
            e_value=e,
            p_value_anytime=p,
            first_alarm_run=state.first_alarm_run,
            p_value_adjusted=evidence.p_value_adjusted(state, self.plan.processes),
            effect_low=low if low > 0.0 else None,
            effect_high=high if np.isfinite(high) else None,
            runs=state.runs,
        )
        row = MonitorRow(
            process_key=process.key,
            scan_id=process.scan_id,
            kind=process.kind,
            subgroup=shown,
            label=name,
            e_value=e,
            p_value_anytime=p,
            threshold=self.threshold,
            alarm=kinds[0] if kinds else None,
        )
        stored = StoredProcess(
            key=process.key,
            scan_id=process.scan_id,
            scan_type=process.scan_type,
            kind=process.kind,
            subgroup=kept,
            state_json=state.to_json(),
            first_run_id=process.first_run_id,
        )
        return _Outcome(summary, stored, row, alarms)


def _kind(kind: str) -> MonitorProcessKind:
    return "scan" if kind == "scan" else "subgroup"


def _label(name: str) -> MonitorLabel:
    labels: dict[str, MonitorLabel] = {
        "new": "new",
        "persists": "persists",
        "resolved": "resolved",
        "inconclusive": "inconclusive",
    }
    return labels[name]


def _exp(log_value: float) -> float:
    return float(np.exp(min(log_value, 709.0)))


def _top(result: ScanResult) -> Subgroup:
    """The subgroup the scan reported first in this run (the open process's next bet; none
    when the scan reported no subgroup)."""
    first = result.findings[0].subgroup if result.findings else None
    return first or {}


def _reported(result: ScanResult) -> list[Subgroup]:
    """The subgroups the scan reports as significant in this run, in its order."""
    return [f.subgroup for f in result.findings if f.significant and f.subgroup is not None]


def monitor_step(
    plan: MonitorPlan, report: AuditReport, fail_on: str, allow_untested: bool
) -> MonitorStep:
    """The history's :data:`~fairscan.run.history.MonitorStep` for ``plan``: ``report`` with
    its ``monitor`` object and the monitored verdict, and what to write back."""

    def step(ledger: Ledger) -> tuple[AuditReport, LedgerUpdate]:
        started = time.perf_counter()
        update = _Step(plan, ledger)
        results = {r.id: r for r in report.scans}
        outcomes: list[_Outcome] = []
        unsupported = list(plan.unsupported)
        for scan in plan.scans:
            result = results[scan.scan_id]
            if result.status == "error":  # its processes wait, unchanged, for the next run
                unsupported.append(
                    MonitorUnsupported(
                        scan=scan.scan_id,
                        scan_type=scan.scan_type,
                        reason="the scan failed in this run: its evidence is not updated",
                    )
                )
                continue
            outcomes.extend(update.scan(scan, result))
        alarms = [a for o in outcomes for a in o.alarms]
        summary = MonitorSummary(
            alpha=plan.settings.alpha,
            run_index=ledger.run_index,
            alarms=alarms,
            subgroups=[o.shown for o in outcomes],
            threshold=update.threshold,
            onset_threshold=update.onset,
            processes=plan.processes,
            unsupported=unsupported,
            seconds=time.perf_counter() - started,
        )
        first = sum(len(o.alarms) for o in outcomes if o.shown.first_alarm_run == ledger.run_index)
        verdict = monitored_verdict(report.verdict, fail_on, len(alarms), first, allow_untested)
        updated = report.model_copy(update={"monitor": summary, "verdict": verdict})
        written = LedgerUpdate(
            processes=tuple(o.stored for o in outcomes), rows=tuple(o.row for o in outcomes)
        )
        return updated, written

    return step


def record_monitored(
    prepared: PreparedAudit, plan: MonitorPlan, report: AuditReport, options: RunOptions
) -> tuple[ReportView, list[Path]]:
    """Record a monitored run: in the history's transaction, update the evidence, gate the
    verdict on the monitor, write the report files (a report that cannot be written leaves
    the history as it was), then commit. The final report and the files written."""
    from fairscan.run.history import append_monitored_run
    from fairscan.run.reports import history_path, write_report_files

    hooks = render_hooks()
    written: list[Path] = []

    def write_files(final: AuditReport) -> None:
        written.extend(write_report_files(prepared, ReportView.of(final, hooks), options))

    gate = prepared.spec.gate
    step = monitor_step(plan, report, gate.fail_on, gate.allow_untested)
    _, final = append_monitored_run(history_path(prepared), report, step, write_files)
    return ReportView.of(final, hooks), written
