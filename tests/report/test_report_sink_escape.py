"""Every sink escapes what it writes (issue 24): HTML and ``|`` in data values and column names
in the Markdown report (rendered through python-markdown, as mkdocs does, and loaded in headless
Chromium: no payload's script runs), control characters in JUnit XML and on the console."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_builders import finding, report, scan
from test_report_html import chromium, load_in_chromium  # noqa: F401  (fixture)

from fairscan.cli.console import findings_text, summary_lines
from fairscan.report.junit import render_junit
from fairscan.report.markdown import render_markdown
from fairscan.report.sink_escape import console_text, markdown_document, xml_text

# each payload logs PWNED to the console if its script runs
PAYLOADS = [
    "<script>console.log('PWNED-script')</script>",
    "<img src=x onerror=\"console.log('PWNED-img')\">",
    "<svg onload=\"console.log('PWNED-svg')\"></svg>",
    "<iframe srcdoc=\"<script>parent.console.log('PWNED-iframe')</script>\"></iframe>",
    "<details open ontoggle=\"console.log('PWNED-details')\">",
]
CONTROL = "a\x1b[31mred\x1b[0m\x07\x00b\x08c"


def _payload_report() -> object:
    findings = [
        finding({f"col{i}{p}": [f"v|{p}"]}, description=f"rows with {p} differ", p_value=0.001)
        for i, p in enumerate(PAYLOADS)
    ]
    return report(
        scan(findings, warnings=[f"warning {PAYLOADS[0]}"]),
        scan([], id="broken", error=f"failed on ```\n{PAYLOADS[1]}\n```"),
        description=f"description {PAYLOADS[2]}",
    )


def test_markdown_holds_no_raw_tag_from_the_data() -> None:
    import markdown

    text = render_markdown(_payload_report())  # type: ignore[arg-type]
    html = markdown.markdown(text, extensions=["tables", "fenced_code"])
    for payload in PAYLOADS:
        assert payload not in html
    assert "&#60;script&#62;" in text
    assert "<sub>" in text  # the report's own tags stay
    assert "failed on \\`\\`\\`" in text  # the error's backticks open no code block


def test_pipes_in_values_keep_the_tables_whole() -> None:
    import markdown

    html = markdown.markdown(
        render_markdown(_payload_report()),  # type: ignore[arg-type]
        extensions=["tables", "fenced_code"],
    )
    for table in html.split("<table>")[1:]:
        table = table.split("</table>")[0]
        head, _, body = table.partition("</thead>")
        for row in body.split("<tr>")[1:]:  # no cell split by a value's "|"
            assert len(re.findall(r"<td[ >]", row)) == len(re.findall(r"<th[ >]", head)), row
    assert "v&#124;" in html  # shown as "v|" by the browser


def test_document_escape() -> None:
    # no fence decides what is code: a `<` is disarmed wherever it is (issue 34)
    assert markdown_document("```\n<b>") == "```\n&lt;b>"
    assert markdown_document("```\n<b>\n```") == "```\n&lt;b>\n```"
    assert markdown_document("<sub>x</sub>") == "<sub>x</sub>"


@pytest.mark.slow
@pytest.mark.parametrize("payload", PAYLOADS)
def test_python_markdown_output_runs_no_payload_in_chromium(
    chromium: str,  # noqa: F811
    tmp_path: Path,
    payload: str,
) -> None:
    import markdown

    page = tmp_path / "report.html"

    def write(text: str) -> None:
        body = markdown.markdown(text, extensions=["tables", "fenced_code"])
        page.write_text(f"<!DOCTYPE html><html><body>{body}</body></html>", encoding="utf-8")

    # control: the raw payload does run (so the check below can fail)
    write(f"value {payload}")
    lines = load_in_chromium(chromium, page, tmp_path / "raw.png", tmp_path / "p1", "400,300")
    assert any("PWNED" in line for line in lines), lines
    findings = [finding({f"col {payload}": [f"v {payload}"]}, description=f"rows {payload}")]
    write(render_markdown(report(scan(findings, warnings=[payload]), description=payload)))
    lines = load_in_chromium(chromium, page, tmp_path / "safe.png", tmp_path / "p2", "800,1200")
    assert not any("PWNED" in line for line in lines), lines


def test_junit_with_control_characters_is_valid_xml() -> None:
    rep = report(
        scan([finding({f"c{CONTROL}": [CONTROL]}, description=CONTROL)]),
        scan([], id="broken", error=CONTROL),
    )
    text = render_junit(rep)
    root = ET.fromstring(text.encode("utf-8"))  # raises on an invalid character
    assert root.tag == "testsuites"
    assert "\\x1b[31m" in text and "\x1b" not in text and "\x00" not in text


def test_console_shows_control_characters_escaped() -> None:
    rep = report(scan([finding({f"c{CONTROL}": [CONTROL]}, description=CONTROL)]))
    lines = [*summary_lines(rep), *(t.plain for t in findings_text(rep))]
    assert all("\x1b" not in line and "\x07" not in line for line in lines)
    assert any("\\x1b[31m" in line for line in lines)
    assert console_text("tab\tnew\nline") == "tab\tnew\\nline"  # one line (issue 34)
    assert xml_text("\ud800x") == "\\ud800x"
