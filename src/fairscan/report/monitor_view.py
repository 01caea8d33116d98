"""The report's ``monitor`` object in plain words, shared by every renderer (Markdown, HTML,
console, JUnit, SARIF, MLflow) and the history page, so they name things the same way.

The words: "evidence" (the e-value: how many times more likely the data are under bias than
under none, betting-style; 1 at the start), "anytime p-value" (valid at every run, whatever
made the series stop) and "alarm threshold" (the evidence needed for an alarm, with every
monitored subgroup and run accounted for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairscan.report.models import MonitorAlarm, MonitorSubgroup, MonitorSummary
from fairscan.report.text import fmt_p

ALARM_WORDS = {
    "evidence": "evidence crossed the alarm threshold",
    "onset": "bias started: evidence since a recent run crossed the onset threshold",
}


def mapping_text(subgroup: Mapping[str, Sequence[str]]) -> str:
    """A subgroup mapping as a readable label: ``sex = male and age in {18-25, 26-35}``;
    ``everyone`` for the empty mapping."""
    parts = [
        f"{name} = {values[0]}" if len(values) == 1 else f"{name} in {{{', '.join(values)}}}"
        for name, values in subgroup.items()
    ]
    return " and ".join(parts) or "everyone"


def process_text(entry: MonitorSubgroup | MonitorAlarm) -> str:
    """What a monitored process watches: its subgroup, or the scan's open search."""
    if entry.kind == "scan":
        bet = f" (this run: {mapping_text(entry.subgroup)})" if entry.subgroup else ""
        return f"any subgroup the scan finds{bet}"
    return mapping_text(entry.subgroup)


def fmt_evidence(e: float) -> str:
    """An e-value as text: whole numbers from 1,000 (``3,100``), four significant digits
    below, scientific from 1e6 and below 1e-3."""
    if e != 0 and (e >= 1e6 or e < 1e-3):
        return f"{e:.3e}"
    return f"{e:,.0f}" if e >= 1000 else f"{e:.4g}"


def alarm_text(alarm: MonitorAlarm) -> str:
    """One alarm in a sentence."""
    return (
        f"{alarm.scan}: {process_text(alarm)}: {ALARM_WORDS[alarm.alarm]} "
        f"(evidence {fmt_evidence(alarm.e_value)}, alarm threshold "
        f"{fmt_evidence(alarm.threshold)}, run {alarm.run_index})"
    )


def subgroup_row(entry: MonitorSubgroup) -> list[str]:
    """A table row: scan, monitored subgroup, label, evidence, anytime p-value, first alarm."""
    first = "-" if entry.first_alarm_run is None else str(entry.first_alarm_run)
    return [
        entry.scan,
        process_text(entry),
        entry.label,
        fmt_evidence(entry.e_value),
        fmt_p(entry.p_value_anytime),
        first,
    ]


SUBGROUP_HEAD = [
    "scan",
    "monitored subgroup",
    "label",
    "evidence",
    "anytime p-value",
    "first alarm (run)",
]


def summary_sentence(monitor: MonitorSummary) -> str:
    """The monitor's headline: run index, alarms, and what the level means."""
    alarms = len(monitor.alarms)
    return (
        f"Monitoring run {monitor.run_index}: {len(monitor.subgroups)} monitored "
        f"process(es), {alarms} alarm(s). The family-wise error over every run and every "
        f"monitored subgroup is at most {monitor.alpha:g} (anytime-valid evidence)."
    )


__all__ = [
    "ALARM_WORDS",
    "SUBGROUP_HEAD",
    "alarm_text",
    "fmt_evidence",
    "mapping_text",
    "process_text",
    "subgroup_row",
    "summary_sentence",
]
