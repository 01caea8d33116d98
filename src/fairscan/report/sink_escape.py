"""What each sink needs escaped in text that comes from the data (values, column names) or
the spec (names, paths, filters).

* Markdown: rendered as HTML by mkdocs (python-markdown), GitHub and job summaries, which pass
  raw HTML through. :func:`markdown_document` turns every ``<`` and ``&`` outside fenced code
  blocks into entities, so no tag (``<script>``, ``<img onerror=...>``) can be formed, whoever
  wrote the value; the report's own ``<sub>`` lines are the only tags kept. Table cells also
  escape ``|`` (:func:`fairscan.report.markdown.cell`), and fenced blocks get a fence longer than
  any backtick run in their text (:func:`code_fence`).
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
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
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


def html_entities(text: str) -> str:
    """``&`` and ``<`` as entities: the text shows as written and opens no tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def code_fence(text: str) -> str:
    """A backtick fence that ``text`` cannot close (longer than any backtick run in it)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _closing(lines: list[str], start: int, fence: str) -> int | None:
    """The index of the line that closes the fence opened at ``start`` (None: unclosed)."""
    for index in range(start + 1, len(lines)):
        if lines[index].rstrip(" ") == fence:
            return index
    return None


def markdown_document(text: str) -> str:
    """A Markdown document with raw HTML disarmed outside fenced code blocks (see module doc).

    A fenced block is what python-markdown takes for one: a fence at the start of a line, closed
    by the same fence later; an unclosed fence is text like any other (and escaped)."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _FENCE.match(line)
        end = None
        if match and not line.startswith(" "):
            end = _closing(lines, index, match.group(1))
        if end is not None:
            out += lines[index : end + 1]  # code: the renderer escapes it
            index = end + 1
            continue
        escaped = html_entities(line)
        for tag in _OWN_TAGS:
            escaped = escaped.replace(html_entities(tag), tag)
        out.append(escaped)
        index += 1
    return "\n".join(out)
