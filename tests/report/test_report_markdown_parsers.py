"""The Markdown report and job summary, rendered by real parsers (issue 34): a hostile value in
any field (data value, column name, label, model and report description, scan id of a report
read back, warning, scan error, provenance path and filter, baseline path) changes nothing in
the document's structure, forms no HTML, link, image, reference definition or code, and still
reads as written.

Two parsers: markdown-it-py in CommonMark mode with GFM tables and strike-through (GitHub's
renderer is CommonMark/GFM) and python-markdown with the extensions mkdocs sites use. Each
hostile rendering is compared with the same report holding a plain value instead: the block
tokens (markdown-it) and the HTML tags and attributes (python-markdown) must be the same."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import markdown
import pytest
from markdown_it import MarkdownIt
from report_builders import finding, report, scan

from fairscan.report.markdown import render_diff, render_markdown
from fairscan.report.models import (
    AuditedModel,
    AuditReport,
    BaselineComparison,
    BaselineEntry,
    BaselineSide,
)
from fairscan.report.sink_escape import console_text, md_block, md_text

# the issue's cases, then CommonMark/GFM edge cases; each holds "Z9" to be found again
HOSTILE = [
    "```\n<script>alert('Z9')</script>\n```",
    "[Z9](javascript:alert(1))",
    "![Z9](http://host.example/pixel.png)",
    "[Z9]: javascript:alert(1)",
    "Z9\n\n[ref]: http://host.example/\n\n[x][ref]",
    "<javascript:alert('Z9')>",
    "<http://host.example/Z9>",
    "&#106;avascript:alert('Z9')",
    "[Z9](&#106;avascript:alert(1))",
    "[Z9](data:text/html;base64,PHNjcmlwdD4=)",
    "[Z9](vbscript:msgbox(1))",
    "````\n<b>Z9</b>\n````",
    "~~~\n<b>Z9</b>\n~~~",
    "`` <b>Z9</b> ``",
    "Z9\n===",
    "Z9\n---",
    "| Z9 | b |\n|---|---|\n| c | d |",
    "<!-- Z9 -->",
    "<![CDATA[Z9]]>",
    "<?php Z9 ?>",
    "    <b>Z9</b> indented",
    "\n    <b>Z9</b> indented after a break",
    "<img src=x onerror=alert('Z9')>",
    "<details open ontoggle=alert('Z9')>",
    "Z9 ~~struck~~ *em* __strong__ _under_",
    "# Z9 heading",
    "> Z9 quote",
    "- Z9 item",
    "1. Z9 item",
    "2) Z9 item",
    "+ Z9",
    "***\nZ9",
    "http://host.example/Z9 www.host.example a@host.example",
    "$Z9^2$",
    "{: onclick=alert('Z9') }",
    "Z9\\",
    "\\[Z9](javascript:alert(1))",
    "Z9\r::stop-commands::T\u2028<b>x</b>\x85y\x0bz\x0c",
    "[^Z9]\n\n[^Z9]: footnote",
]


def _fields(value: str) -> Callable[[], AuditReport]:
    """A report holding ``value`` in every field the Markdown shows."""

    def build() -> AuditReport:
        findings = [
            finding({"attr": [value]}, description=f"rows with {value} differ"),
            finding({value: ["v"]}, description=value, label=value),
            finding({"a": ["b"]}),
            finding({"c": [value]}, description=value),  # a further finding: compact row
        ]
        rep = report(
            scan(findings, id=value, warnings=[value]),
            scan([], id="broken", error=value),
            name=value,
            description=value,
            attributes={"attr": [value, "w"], value: ["v"]},
        )
        prov = rep.provenance.model_copy(
            update={"spec_path": value, "data_path": value, "filter": value}
        )
        model = AuditedModel(name=value, version=value, owner=value, description=value)
        return rep.model_copy(update={"model": model, "provenance": prov, "data_warnings": [value]})

    return build


_COMMONMARK = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# python-markdown as mkdocs sites configure it (attr_list can set any attribute)
_PYMD_EXTENSIONS = ["tables", "fenced_code", "attr_list", "def_list", "footnotes", "md_in_html"]
_CODE_ID = re.compile(r"[A-Za-z0-9_.-]+|[a-f0-9]{16}…")  # the report's own code spans


def _tokens(text: str) -> list[Any]:
    out = []
    for token in _COMMONMARK.parse(text):
        out.append(token)
        out += token.children or []
    return out


def _structure(text: str) -> list[str]:
    """markdown-it's tokens but the text ones (which carry the values)."""
    return [t.type for t in _tokens(text) if t.type not in ("text", "softbreak", "hardbreak")]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"<{tag} {sorted(k for k, _ in attrs)}>")

    def handle_endtag(self, tag: str) -> None:
        self.tags.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.tags.append("<!-- -->")

    def unknown_decl(self, data: str) -> None:
        self.tags.append("<![...]>")

    def handle_pi(self, data: str) -> None:
        self.tags.append("<?...>")


def _python_markdown(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(markdown.markdown(text, extensions=_PYMD_EXTENSIONS))
    return parser


def _assert_inert(hostile: str, plain: str, value: str) -> None:
    # markdown-it (CommonMark + GFM tables): the same tokens as with a plain value
    assert _structure(hostile) == _structure(plain)
    tokens = _tokens(hostile)
    own = ("<sub>", "</sub>")  # the timings under each scan
    raw = [t for t in tokens if t.type in ("html_block", "html_inline") and t.content not in own]
    assert not raw
    assert not [t for t in tokens if t.type in ("image", "fence")]
    assert not [t for t in tokens if t.type in ("link_open", "code_block")]
    assert all(_CODE_ID.fullmatch(t.content) for t in tokens if t.type == "code_inline")
    shown = "".join(t.content for t in tokens if t.type == "text")
    # the value reads as written (line breaks as \n, one line: as the console shows them)
    for line in re.split(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", value):
        assert console_text(line).strip() in shown, line
    # python-markdown: the same tags and attributes as with a plain value
    pymd, pymd_plain = _python_markdown(hostile), _python_markdown(plain)
    assert pymd.tags == pymd_plain.tags
    # GFM's bare autolinks (www., scheme://, e-mail) have nothing to start from
    assert not re.search(r"://|\bwww\.|\w@\w", hostile)


@pytest.mark.parametrize("value", HOSTILE)
def test_report_markdown_is_inert(value: str) -> None:
    build, plain = _fields(value), _fields(_plain(value))
    _assert_inert(render_markdown(build()), render_markdown(plain()), value)


@pytest.mark.parametrize("value", HOSTILE)
def test_diff_markdown_is_inert(value: str) -> None:
    def comparison(v: str) -> tuple[BaselineComparison, AuditReport]:
        current = _fields(v)()
        return (
            BaselineComparison(
                baseline_path=v,
                baseline_name=v,
                baseline_utc_time=v,
                fail_on="new_significant",
                counts={"new": 1},
                new_significant=1,
                scans_added=[v],
                scans_removed=[v],
                overlap_threshold=0.5,
                entries=[
                    BaselineEntry(
                        scan_id=v,
                        scan_type="fpr_scan",
                        label="shifted",
                        match="overlap",
                        similarity=0.6,
                        before=_side({v: ["x"]}, v),
                        after=_side({"a": [v]}, None),
                        reason=v,
                    )
                ],
            ),
            current,
        )

    _assert_inert(render_diff(*comparison(value)), render_diff(*comparison(_plain(value))), value)


@pytest.mark.parametrize("value", HOSTILE)
def test_escapes_read_as_the_value(value: str) -> None:
    """Both parsers show md_text's and md_block's output as the value, character for
    character (line breaks as \\n in md_text; as paragraph breaks in md_block)."""
    one_line = value
    for brk, shown in (("\r\n", "\\r\\n"), ("\n", "\\n"), ("\r", "\\r")):
        one_line = one_line.replace(brk, shown)
    one_line = re.sub("[\x0b\x0c\x85\u2028\u2029]", lambda m: _escape(m.group()), one_line)
    rendered = _COMMONMARK.render(md_text(value))
    assert _text_of(rendered) == one_line.strip()
    assert _text_of(markdown.markdown(md_text(value))) == one_line.strip()
    for line in re.split(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", value):
        assert not line.strip() or line.strip() in _text_of(_COMMONMARK.render(md_block(value)))


def _plain(value: str) -> str:
    """``value`` without punctuation (its line breaks and spaces kept): the same lines and
    paragraphs, no markup."""
    # a scan id of letters, digits and `_.-` is a code span: the plain one too, or neither
    space = "" if re.fullmatch(r"[A-Za-z0-9_.-]+", value) else " "
    return re.sub(r"[^\w\s]", "x", value).replace("Z9", f"Z9{space}plain", 1)


def _side(subgroup: dict[str, list[str]], label: str | None) -> BaselineSide:
    return BaselineSide(
        subgroup=subgroup, label=label, score=1.0, p_value=0.01, rate=0.5, significant=True
    )


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _text_of(rendered: str) -> str:
    parser = _Tags()
    parser.feed(rendered)
    return "".join(parser.text).strip()  # references resolved by the parser


def test_issue_model_description_fence_runs_no_script() -> None:
    """The issue's case: a fence round a script in ``model.description`` left a live
    ``<script>`` in the .md and the job summary once python-markdown rendered it."""
    value = "```\n<script>alert('Z9')</script>\n```"
    rep = report(scan([finding()])).model_copy(
        update={"model": AuditedModel(name="m", description=value)}
    )
    for rendered in (
        markdown.markdown(render_markdown(rep), extensions=_PYMD_EXTENSIONS),
        _COMMONMARK.render(render_markdown(rep)),
    ):
        assert "<script" not in rendered and "<pre" not in rendered
        assert not re.search(r"<code>[^<]*alert", rendered)  # the own code spans: scan ids
        assert "alert('Z9')" in rendered
