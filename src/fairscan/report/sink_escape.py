"""What each sink needs escaped in text that comes from the data (values, column names) or
the spec (names, paths, filters).

* Markdown: rendered as HTML by GitHub (CommonMark/GFM: the ``.md`` report, job summaries) and
  mkdocs (python-markdown), which pass raw HTML through. Every data or spec text goes in through
  :func:`md_text` (one line) or :func:`md_block` (free text): escaped so that both renderers show
  it as written and form no HTML, link, image, reference definition, code or block from it
  (tests/report/test_report_markdown_parsers.py renders hostile values through markdown-it-py
  and python-markdown). :func:`markdown_document` then turns any ``<`` left into ``&lt;`` (the
  report's own ``<sub>`` tags kept).
* XML (JUnit): characters XML 1.0 forbids (C0 controls but tab, newline and carriage return;
  lone surrogates; U+FFFE/U+FFFF) are replaced by ``\\xNN``-style escapes (:func:`xml_text`).
* The console: control characters (ESC sequences, backspace ...) and every line break (``\\n``,
  ``\\r``, ``\\x0b``, ``\\x0c``, ``\\x85``, U+2028, U+2029) are shown as escapes
  (:func:`console_text`): a value is one line, so data can neither move the cursor, recolour
  the terminal nor start a line of its own.
* GitHub Actions reads workflow commands from a step's output: a line that starts, after
  whitespace, with ``::`` (``::add-mask::``, ``::stop-commands::``) and ``##[name]`` anywhere in a
  line (the runner's legacy form). :func:`workflow_command_free` writes those markers as
  ``\\u003a:`` and ``\\u0023#[``; the CLI passes all its output through it under Actions
  (:class:`fairscan.cli.github.CommandGuard`), except its own annotations.
* JSON and SARIF are written by serialisers that escape everything already.
"""

from __future__ import annotations

import re

# the report's own tags in its Markdown (timings under each scan)
_OWN_TAGS = ("<sub>", "</sub>")
# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# C0 controls (but tab), DEL, the C1 controls (NEL among them) and the Unicode line breaks
_CONSOLE_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r"}
# a workflow command: `::` first in a line once the runner has trimmed the line's leading
# whitespace (the runner splits lines at \n and \r; \s also covers what .NET's TrimStart
# removes); ANSI colour codes a console may put first are skipped too
_COMMAND_LINE = re.compile(r"(^|[\n\r])((?:\s|\x1b\[[0-9;]*m)*):(?=:)")
_LEGACY_COMMAND = "##["
# Markdown inline text (md_text): backslash escapes python-markdown honours too (it shows a
# backslash before other punctuation, where CommonMark would not)
_PYMD_ESCAPABLE = frozenset("\\`*_{}[]()>#+-.!")
_MD_BACKSLASH_CHARS = re.compile(r"[\\`*\[\]{}]")
# as character references: HTML, table cells, strike-through and tilde fences, GitHub math,
# e-mail autolinks; references are text in both renderers, never markup
_MD_ENTITY_CHARS = re.compile(r"[&<>|~$@\t]")
# `_` opens emphasis only at a word's edge (never between two letters or digits)
_MD_EDGE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# GFM's bare autolinks: `scheme://` and `www.` (the `:` / `.` written as a reference)
_MD_AUTOLINK = re.compile(r"(?i):(?=//)|\bwww\.")
_LEADING_SPACE = re.compile(r"^[ \t]+")
_TRAILING_SPACE = re.compile(r" +$")
_WHITESPACE_ENTITY = re.compile(r"[ \t]")
_ORDERED_ITEM = re.compile(r"^([0-9]{1,9})[.)]")
_BLOCK_STARTERS = frozenset("#+-=:*_>|")
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.-]+")
_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _codepoint(match: re.Match[str]) -> str:
    if match.group() in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[match.group()]
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold shown as escapes (then XML-escaped by
    the writer as usual)."""
    return _XML_FORBIDDEN.sub(_codepoint, text)


def console_text(text: str) -> str:
    """``text`` on one line, control characters and line breaks shown as ``\\n``, ``\\r``,
    ``\\xNN`` or ``\\uNNNN`` (tab kept): for every data- or spec-derived string the console
    shows."""
    return _CONSOLE_CONTROL.sub(_codepoint, text)


def workflow_command_free(text: str) -> str:
    """``text`` with nothing GitHub's runner would take for a workflow command (see module doc).

    The escapes are ``\\u`` forms so that a JSON report on stdout stays valid JSON holding the
    same value."""
    text = text.replace(_LEGACY_COMMAND, "\\u0023#[")
    return _COMMAND_LINE.sub(lambda m: f"{m.group(1)}{m.group(2)}\\u003a", text)


class Markup(str):
    """Markdown the report writes itself (a code span round a scan id, bold verdict words):
    :func:`md_text` and table cells keep it as it is."""


def _entity(match: re.Match[str]) -> str:
    return f"&#{ord(match.group())};"


def _first_character(text: str) -> str:
    """``text`` (one escaped line) unable to open a block where it starts a line: no ATX
    heading, list item, thematic break, setext underline, indented code, table row or
    definition (python-markdown's def_list)."""
    lead = _LEADING_SPACE.match(text)
    if lead is not None:  # indented code: the spaces as entities
        return _LEADING_SPACE.sub(lambda m: _WHITESPACE_ENTITY.sub(_entity, m.group()), text, 1)
    number = _ORDERED_ITEM.match(text)
    if number is not None:  # "1." / "1)": the mark escaped
        return f"{number.group(1)}\\{text[number.end(1) :]}"
    if text[:1] in _BLOCK_STARTERS:
        return f"\\{text}" if text[0] in _PYMD_ESCAPABLE else f"&#{ord(text[0])};{text[1:]}"
    return text


def md_text(text: str, *, line_start: bool = True) -> str:
    """``text`` from the data or the spec as Markdown inline text: shown as written by a
    CommonMark/GFM renderer (GitHub) and by python-markdown (mkdocs), never as markup.

    One line (line breaks and control characters as :func:`console_text` shows them); the
    punctuation that can open inline markup written as backslash escapes both renderers honour
    (``\\``, backtick, ``*``, ``[``, ``]``, ``{``, ``}``, ``_`` at a word's edge) or as
    character references (``<``, ``>``, ``&``, ``|``, ``~``, ``$``, ``@``, ``://``, ``www.``): no
    raw HTML, link, image, autolink, reference definition, code span, emphasis, strike-through,
    math or attribute list; the first character cannot start a block (:func:`_first_character`)
    unless ``line_start`` is False (a table cell, which holds inline text only).
    Tabs and trailing spaces are references too: python-markdown expands a tab to the next tab
    stop, and two spaces at a line's end are a line break. The result is :class:`Markup`, so
    escaping twice (a scan id in a table cell) changes nothing; a :class:`Markup` value is the
    report's own and is returned as it is."""
    if isinstance(text, Markup):
        return text
    line = _MD_ENTITY_CHARS.sub(_entity, console_text(text))
    line = _TRAILING_SPACE.sub(lambda m: _WHITESPACE_ENTITY.sub(_entity, m.group()), line)
    line = _MD_BACKSLASH_CHARS.sub(lambda m: "\\" + m.group(), line)
    line = _MD_EDGE_UNDERSCORE.sub(r"\\_", line)
    line = _MD_AUTOLINK.sub(lambda m: m.group()[:-1] + f"&#{ord(m.group()[-1])};", line)
    return Markup(_first_character(line) if line_start else line)


def md_code(text: str) -> str:
    """An identifier (a scan id) as a code span when it is only letters, digits and ``_.-`` (what
    the spec allows), as :func:`md_text` otherwise (a report read back may hold anything)."""
    return Markup(f"`{text}`") if _PLAIN_ID.fullmatch(text) else md_text(text)


def md_block(text: str) -> str:
    """Free text (a description) as Markdown paragraphs: each line as :func:`md_text` shows it,
    blank lines kept (paragraph breaks), nothing else of Markdown."""
    return Markup("\n".join(md_text(line) for line in _LINE_BREAKS.split(text)))


def markdown_document(text: str) -> str:
    """A Markdown document with raw HTML disarmed: every ``<`` but those of the report's own
    ``<sub>`` tags as ``&lt;``.

    The report writes no code block, so no fence decides what is code (renderers disagree on
    fences); data and spec text reach the document through :func:`md_text` already, this pass
    keeps a value that did not from forming a tag."""
    escaped = text.replace("<", "&lt;")
    for tag in _OWN_TAGS:
        escaped = escaped.replace(tag.replace("<", "&lt;"), tag)
    return escaped
