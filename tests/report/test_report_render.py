"""Report rendering from the v2 contract: strict JSON, Markdown wording, JUnit, console, hooks,
atomic writes."""

from __future__ import annotations

import io
import json
import math
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from report_builders import finding, null, population, report, scan
from rich.console import Console

from fairscan.cli.console import findings_text, summary_table, verdict_text
from fairscan.data.labels import subgroup_label
from fairscan.report.atomic_write import atomic_write_text
from fairscan.report.formats import render, report_json, write_reports
from fairscan.report.hooks import RenderHooks
from fairscan.report.html import render_html
from fairscan.report.junit import render_junit
from fairscan.report.markdown import render_markdown
from fairscan.report.models import AuditReport, Finding, ScanResult
from fairscan.report.text import statistic_words


def _fpr_report(p_value: float | None = 0.001, reference: float | None = 0.2608) -> AuditReport:
    f = finding(
        p_value=p_value,
        reference=reference,
        description="Among true negatives, the 349 rows with priors = Over 5 are flagged 66% "
        "of the time.",
    )
    s = scan(
        [f],
        population=population(),
        null_distribution=None if p_value is None else null(),
        tested=p_value is not None,
    )
    return report(s)


def _strict(text: str) -> Any:
    def reject(name: str) -> None:
        raise ValueError(name)

    return json.loads(text, parse_constant=reject)


def _console_text(renderable: object) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(renderable)
    return buffer.getvalue()


# --- JSON ------------------------------------------------------------------------------------


def test_json_is_strict_and_nan_becomes_null():
    data = _strict(report_json(_fpr_report(reference=math.nan)))
    assert data["schema_version"] == 2
    f = data["scans"][0]["findings"][0]
    assert f["effect"]["reference"] is None
    assert set(f) >= {
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
    }
    assert data["scans"][0]["timing"] == {
        "search_seconds": 0.01,
        "significance_seconds": 2.0,
        "total_seconds": 2.01,
    }


def test_untested_finding_has_null_p_value():
    data = _strict(report_json(_fpr_report(p_value=None)))
    f = data["scans"][0]["findings"][0]
    assert f["p_value"] is None and f["significant"] is None
    assert data["scans"][0]["status"] == "untested"


# --- Markdown --------------------------------------------------------------------------------


def test_markdown_leads_with_the_verdict_and_explains_findings():
    text = render_markdown(_fpr_report())
    first = [line for line in text.splitlines() if line][1]
    assert first.startswith("**FAIL**")
    assert "priors = Over 5" in text
    assert "Among true negatives" in text
    assert "false positive rate inside" in text and "the other true negatives" in text
    # rates as percentages with their counts (whole events: "k of n")
    assert "66.5% (232 of 349)" in text and "26.1% (n = 3014)" in text
    assert "expected inside" in text
    assert "0 of 999 null replicates reached a score of at least 95.82" in text
    # the p-value at the replicate floor says so
    assert "p = 0.0010, the smallest possible with 999 replicates" in text
    assert "## Provenance" in text and "6172 after filter" in text
    # the summary table: top finding, statistic in words, p-value
    row = next(line for line in text.splitlines() if line.startswith("| `fpr`"))
    assert "priors = Over 5" in row and "score 95.82" in row and "0.0010" in row


def test_markdown_untested():
    text = render_markdown(_fpr_report(p_value=None))
    assert "not tested" in text
    assert "Randomization test" not in text


def test_markdown_statistics_are_named_in_plain_words():
    findings = [
        finding(statistic=("penalised_score", 12.0)),
        finding({"race": ["A"]}, statistic=("interestingness", 467.7), adjusted_p_value=0.03),
        finding(group="African-American", statistic=("lower_bound", 0.022), p_value=None),
        finding(group="race = Other", statistic=("upper_bound", -0.12), p_value=None),
        finding(group="g", statistic=("gap", 0.13), p_value=0.001, adjusted_p_value=0.01),
    ]
    text = render_markdown(report(scan(findings)))
    for name in ("penalised_score", "interestingness", "lower_bound", "upper_bound", "gap"):
        # a table header (the first findings) or a compact row's cell (the further ones)
        words = re.escape(statistic_words(name))
        assert re.search(rf"\| {words} (\||-?\d)", text), name
    assert "penalised_score" not in text and "_bound" not in text
    assert "| lower bound |" in text and "0.022" in text
    # a group finding is labelled by its group name; the adjusted p-value is shown
    assert "| African-American |" in text
    assert "| 0.0300 |" in text


def test_markdown_table_cells_escape_pipes():
    f = finding({"a|b": ["x|y"]}, label="a|b = x|y")
    text = render_markdown(report(scan([f])))
    assert "a&#124;b = x&#124;y" in text  # a reference: never a cell border (issue 34)


def test_markdown_error_scan():
    text = render_markdown(report(scan([], error="boom: no rows")))
    assert text.splitlines()[2].startswith("**ERROR**")
    assert "boom: no rows" in text


def test_describe_subgroup_and_statistic_words():
    assert subgroup_label({}) == "everyone (no attribute constrained)"
    assert statistic_words("penalised_score") == "score"
    assert statistic_words("lower_bound") == "lower bound"
    assert statistic_words("some_new_statistic") == "some new statistic"


@pytest.mark.parametrize(
    ("subgroup", "words"),
    [
        ({}, "everyone (no attribute constrained)"),
        ({"race": ["A"]}, "race = A"),
        ({"race": ["A", "B"], "sex": ["F"]}, "race in {A, B} and sex = F"),
    ],
)
def test_subgroup_label(subgroup, words):
    assert subgroup_label(subgroup) == words


# --- render hooks: no renderer knows a scan type -----------------------------------------------


def _toy_report() -> AuditReport:
    toy = scan(
        [
            finding(
                {"colour": ["red"]},
                statistic=("toy_statistic", 3.5),
                metric="toy metric",
                detail={"toy_finding_key": "finding secret"},
            )
        ],
        id="toy-scan",
        type="toy",
        detail={"toy_scan_key": "scan secret"},
    )
    plain = scan(
        [finding({"colour": ["blue"]}, detail={"plain_finding_key": "plain secret"})],
        id="plain-scan",
        type="plain_without_hooks",
        detail={"plain_scan_key": "plain scan secret"},
        null_distribution=null(),
    )
    return report(toy, plain, name="toys")


def _toy_hooks() -> dict[str, RenderHooks]:
    def markdown(s: ScanResult) -> list[str]:
        return [f"TOY SCAN {s.detail['toy_scan_key']}", ""]

    def finding_markdown(s: ScanResult, f: Finding) -> list[str]:
        return [f"TOY FINDING {f.detail['toy_finding_key']} of {s.id}", ""]

    def html(s: ScanResult) -> str:
        return f"<p class='toy'>TOY SCAN {s.detail['toy_scan_key']}</p>"

    def finding_html(s: ScanResult, f: Finding) -> str:
        return f"<p class='toy'>TOY FINDING {f.detail['toy_finding_key']}</p>"

    return {
        "toy": RenderHooks(
            markdown=markdown,
            html=html,
            finding_markdown=finding_markdown,
            finding_html=finding_html,
        )
    }


SECRETS = ("secret", "toy_scan_key", "toy_finding_key", "plain_scan_key", "plain_finding_key")


def test_hooks_render_a_new_scan_type():
    rep = _toy_report()
    hooks = _toy_hooks()
    md = render_markdown(rep, hooks)
    assert "TOY SCAN scan secret" in md and "TOY FINDING finding secret of toy-scan" in md
    assert md.index("TOY FINDING") < md.index("TOY SCAN")  # finding lines first, then the scan's
    page = render_html(rep, hooks)
    assert "TOY SCAN scan secret" in page and "TOY FINDING finding secret" in page
    assert render(rep, "markdown", hooks) == md
    assert render(rep, "html", hooks) == page
    # the type without hooks still renders its findings from the contract
    assert "## `plain-scan` (plain_without_hooks): significant" in md
    assert "colour = blue" in md and "colour = blue" in page
    assert "plain secret" not in md and "plain_scan_key" not in page


def test_renderers_never_read_detail_without_hooks():
    rep = _toy_report()
    outputs = [
        render_markdown(rep),
        render_html(rep),
        render_junit(rep),
        _console_text(summary_table(rep)),
        "\n".join(t.plain for t in findings_text(rep)),
        verdict_text(rep, []).plain,
    ]
    for text in outputs:
        for secret in SECRETS:
            assert secret not in text
    # the unknown statistic name still reads in words
    assert "toy statistic" in outputs[0]
    assert "colour = red" in outputs[0] and "colour = red" in outputs[1]


def test_write_reports_passes_the_hooks(tmp_path):
    paths = write_reports(_toy_report(), tmp_path, ["markdown", "html"], _toy_hooks())
    assert [p.name for p in paths] == ["toys.md", "toys.html"]
    for path in paths:
        assert "TOY SCAN scan secret" in path.read_text(encoding="utf-8")


# --- JUnit and console --------------------------------------------------------------------------


def test_junit_reads_the_contract():
    flagged = [
        finding(group="race = A", statistic=("gap", 0.12), p_value=1e-6, adjusted_p_value=2e-5),
        finding(group="race = B", statistic=("gap", 0.08), p_value=0.01, adjusted_p_value=0.04),
    ]
    quiet = finding({"sex": ["F"]}, p_value=0.5)
    untested = finding({"sex": ["M"]}, p_value=None)
    rep = report(
        scan(flagged, id="flags", type="flag"),
        scan([quiet], id="fpr"),
        scan([untested], id="tpr", type="tpr_scan", tested=False),
        scan([], id="bad", type="bias_scan", error="no rows"),
    )
    root = ET.fromstring(render_junit(rep).split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    failure = cases["flags (flag)"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "2 significant finding(s); top finding: race = A (gap 0.12, p = 2e-05)"
    )
    assert failure.text is not None and failure.text.count("\n") == 1  # two descriptions
    assert cases["fpr (fpr_scan)"].find("failure") is None
    skipped = cases["tpr (tpr_scan)"].find("skipped")
    assert skipped is not None and "sex = M" in (skipped.get("message") or "")
    assert cases["bad (bias_scan)"].find("error") is not None


def test_console_summary_reads_the_contract():
    rep = report(
        scan([finding(group="race = A", statistic=("gap", 0.12), adjusted_p_value=0.002)]),
        scan([], id="none", type="bias_scan"),
    )
    text = _console_text(summary_table(rep))
    assert "race = A" in text and "gap 0.12" in text and "0.0020" in text
    assert "1 of 1" in text and "no finding" in text
    assert next(t.plain for t in findings_text(rep)).startswith("fpr: Among true negatives")
    assert verdict_text(rep, ["r.json"]).plain.startswith("FAIL: 1 significant finding(s)")


# --- writing -----------------------------------------------------------------------------------


def test_reports_are_written_atomically(tmp_path):
    paths = write_reports(_fpr_report(), tmp_path / "out", ["json", "markdown", "github"])
    assert [p.name for p in paths] == ["compas-fpr.json", "compas-fpr.md"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "compas-fpr.json",
        "compas-fpr.md",
    ]


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
