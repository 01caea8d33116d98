"""The fourth hostile round on the sinks (issue 34): values built at random from the pieces of
workflow commands and Markdown markup, put into every field the console and the Markdown report
show.

* Console under GitHub Actions: the summary, finding sentences, warnings, scan errors and error
  messages, written through :class:`fairscan.cli.github.CommandGuard` as the CLI writes them,
  start no workflow command; the annotation of the finding stays live.
* Markdown (report and job summary): rendered by markdown-it-py (CommonMark + GFM tables) and
  python-markdown, the same structure as with a plain value, and no HTML, link, image or code.

Each case's outcome is counted; every case must be clean (``test_*_round`` asserts the counts).
"""

from __future__ import annotations

import io
import random
import re
from collections import Counter

import pytest
from report_builders import finding, report, scan
from test_report_markdown_parsers import _assert_inert, _fields, _plain

from fairscan.cli.common import _issue_text
from fairscan.cli.console import findings_text, monitor_text, summary_lines
from fairscan.cli.github import CommandGuard, finding_annotations
from fairscan.errors import Issue
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditReport, MonitorAlarm, MonitorSubgroup, MonitorSummary

PIECES = [
    "::", "##[", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", " ", "\t", "\xa0",
    "add-mask", "stop-commands", "error", "warning file=x", "]", "::T", "<", ">", "script",
    "<!--", "-->", "[", "](", ")", "javascript:", "data:", "!", "`", "```", "~~~", "|", "-",
    "=", "#", "*", "_", "&#106;", "&", "http://", "www.", "@", "1.", "    ", "x", "\\", "$",
    "{:", "}", "\x1b[1m", "%0A",
]  # fmt: skip
CASES = 150  # console cases (fast)
MARKDOWN_CASES = 40  # each renders two reports through two parsers (about 0.8 s)
OWN = re.compile(r"^::(error|warning) [^:]*title=fairscan[^:]*::")


def _value(rng: random.Random) -> str:
    return "Z9" + "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))


def _live(text: str) -> list[str]:
    lines = re.split(r"\r\n|\r|\n", text)
    return [
        line
        for line in lines
        if not OWN.match(line) and (line.lstrip().startswith("::") or "##[" in line)
    ]


def _with_monitor(rep: AuditReport, value: str) -> AuditReport:
    """``rep`` with a monitor whose scan, subgroups and alarm hold ``value``."""
    subgroup = {value: [value, "v"]}
    alarm = MonitorAlarm(
        scan=value, scan_type="fpr_scan", subgroup=subgroup, alarm="evidence", e_value=50.0,
        threshold=40.0, run_index=2,
    )  # fmt: skip
    subgroups = [
        MonitorSubgroup(
            scan=value,
            scan_type="fpr_scan",
            kind=kind,
            subgroup=subgroup,
            label="persists",
            e_value=50.0,
            p_value_anytime=0.02,
        )
        for kind in ("subgroup", "scan")
    ]
    monitor = MonitorSummary(alpha=0.05, run_index=2, alarms=[alarm], subgroups=subgroups)
    return rep.model_copy(update={"monitor": monitor})


def _console_outcome(value: str) -> str:
    findings = [finding({"attr": [value], value: ["v"]}, description=f"rows {value} differ")]
    rep = report(
        scan(findings, id="s", warnings=[value]), scan([], id="e", error=value), name=value
    )
    sink = io.StringIO()
    guard = CommandGuard(sink)
    monitor = _with_monitor(rep, value).monitor
    assert monitor is not None
    shown = [*findings_text(rep), *monitor_text(monitor)]
    for line in [*summary_lines(rep), *(t.plain for t in shown)]:
        guard.write(line + "\n")
    guard.write("data error: " + _issue_text(Issue(value, hint=value, field=value)) + "\n")
    annotations = finding_annotations(rep, [None, None])
    sink.write("\n".join(annotations) + "\n")  # past the guard, as the CLI writes them
    if _live(sink.getvalue()):
        return "live command"
    if not any(OWN.match(a) for a in annotations):
        return "annotation lost"
    return "clean"


def _markdown_outcome(value: str) -> str:
    try:
        hostile, plain = (
            render_markdown(_with_monitor(_fields(value)(), value)),
            render_markdown(_with_monitor(_fields(_plain(value))(), _plain(value))),
        )
        _assert_inert(hostile, plain, value)
    except AssertionError:
        return "markup from data"
    return "clean"


def test_console_round() -> None:
    rng = random.Random(34)
    counts = Counter(_console_outcome(_value(rng)) for _ in range(CASES))
    assert counts == {"clean": CASES}


@pytest.mark.slow
def test_markdown_round() -> None:
    rng = random.Random(3434)
    counts = Counter(_markdown_outcome(_value(rng)) for _ in range(MARKDOWN_CASES))
    assert counts == {"clean": MARKDOWN_CASES}
