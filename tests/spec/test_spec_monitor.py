"""Issue 35: the spec's ``monitor:`` block: its defaults, its rules (located spec errors), and
the report's provenance (a spec without the block keeps its keys)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairscan.api import load_spec
from fairscan.errors import SpecError

SPEC = """version: 1
name: monitored
data: {{path: data.csv}}
columns: {{outcome: y, recommendation: flag}}
attributes: [a, b]
scans:
  - {{id: fpr, type: fpr_scan}}
output: {{history: {history}}}
monitor: {monitor}
"""


def _load(tmp_path: Path, monitor: str, history: str = "audits.sqlite"):
    path = tmp_path / "monitored.audit.yaml"
    path.write_text(SPEC.format(monitor=monitor, history=history), encoding="utf-8")
    return load_spec(path)


def test_defaults_as_documented(tmp_path: Path) -> None:
    monitor = _load(tmp_path, "{}").spec.monitor
    assert monitor is not None
    assert (monitor.alpha, monitor.tolerance, monitor.max_subgroups, monitor.horizon) == (
        0.05,
        1.25,
        20,
        52,
    )
    assert monitor.subgroups == {}
    listed = _load(tmp_path, "{subgroups: {fpr: [{a: [a1], b: x}]}}").spec.monitor
    assert listed is not None and listed.subgroups == {"fpr": [{"a": ["a1"], "b": "x"}]}


def test_absent_block_is_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.audit.yaml"
    path.write_text(SPEC.replace("monitor: {monitor}\n", "").format(history="h.sqlite"))
    assert load_spec(path).spec.monitor is None


@pytest.mark.parametrize(
    ("monitor", "history", "field", "words"),
    [
        ("{}", "null", "monitor", "monitor needs output.history"),
        ("{alpha: 0}", "h.sqlite", "monitor.alpha", "must be > 0"),
        ("{tolerance: 1}", "h.sqlite", "monitor.tolerance", "must be > 1"),
        ("{max_subgroups: 0}", "h.sqlite", "monitor.max_subgroups", "must be >= 1"),
        ("{horizon: 0}", "h.sqlite", "monitor.horizon", "must be >= 1"),
        ("{alarm: 3}", "h.sqlite", "monitor.alarm", "alarm"),
        ("{subgroups: {tpr: [{a: [a1]}]}}", "h.sqlite", "monitor.subgroups", "no scan has the id"),
        ("{subgroups: {fpr: [{}]}}", "h.sqlite", "monitor.subgroups", "an empty subgroup"),
        ("{subgroups: {fpr: [{z: [1]}]}}", "h.sqlite", "monitor.subgroups", "not an attribute: z"),
    ],
)
def test_rules_are_located_spec_errors(
    tmp_path: Path, monitor: str, history: str, field: str, words: str
) -> None:
    with pytest.raises(SpecError) as caught:
        _load(tmp_path, monitor, history)
    issue = caught.value.issues[0]
    assert words in issue.message, issue
    assert issue.field is not None and issue.field.startswith(field), issue
    assert (
        issue.line == 9 and issue.file is not None and issue.file.endswith("monitored.audit.yaml")
    )
