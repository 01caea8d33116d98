"""YAML loading for spec files: positions of every key and value, and YAML 1.1 traps defused.

The loader is a :class:`yaml.SafeLoader` subclass (never the full loader) that

* records the 1-based line and column of every mapping key, mapping value and sequence item
  in a :class:`Positions` tree parallel to the data (the dagster approach), so validation
  errors can point at ``file:line:col``;
* rejects duplicate mapping keys (PyYAML silently keeps the last one) with both lines;
* drops the implicit timestamp resolver, so ``2024-01-31`` stays the string ``"2024-01-31"``;
* requires the top level to be a mapping.

YAML 1.1 booleans (``no``, ``yes``, ``on``, ``off``) are still read as booleans, as every YAML
1.1 tool does; the plain source text of each scalar is kept so that validation errors can say
"``no`` was read as boolean false; quote it".
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fairscan.errors import Issue, SpecError, truncate

__all__ = [
    "MAX_SPEC_BYTES",
    "KeyPosition",
    "Positions",
    "SpecLoader",
    "UnreadableSpec",
    "format_path",
    "load_spec_text",
    "read_spec_bytes",
]

# Bounds on the work a spec file can ask for (a spec is a few hundred values):
MAX_SPEC_BYTES = 1 << 20  # 1 MiB per file
MAX_DEPTH = 100  # nesting of mappings and lists, aliases expanded
MAX_ALIAS_VALUES = 100_000  # values that YAML aliases may add by repeating anchored ones

YAML_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
YAML_MERGE_TAG = "tag:yaml.org,2002:merge"

PathSegment = Hashable  # str keys and int indices; other scalar keys (bool, int) for odd YAML
DataPath = Sequence[PathSegment]

REQUIRED_KEYS_HINT = (
    "a spec is a YAML mapping with at least `version: 1`, `name`, `data`, `columns`, "
    "`attributes` and `scans`"
)


@dataclass(frozen=True)
class KeyPosition:
    """Where a mapping key is written, and its plain source text (``None`` when quoted)."""

    line: int
    col: int
    source: str | None = None


@dataclass(eq=False)
class Positions:
    """Source position of one YAML node and, recursively, of its children.

    ``line``/``col`` (1-based) are where the node's value starts. For a mapping, ``keys`` holds
    the position of each key and ``values`` the node of each value (keyed like the data); for a
    sequence, ``items`` holds one node per item. ``source`` is the plain (unquoted) source text
    of a scalar, e.g. ``"no"`` for a value that was read as ``False``.
    """

    line: int
    col: int
    kind: Literal["mapping", "sequence", "scalar"] = "scalar"
    source: str | None = None
    keys: dict[Any, KeyPosition] = field(default_factory=dict)
    values: dict[Any, Positions] = field(default_factory=dict)
    items: list[Positions] = field(default_factory=list)

    # -- lookup -----------------------------------------------------------------------------

    def child(self, segment: PathSegment) -> tuple[Positions, KeyPosition | None] | None:
        """The child at ``segment`` (a key or an index) with its key position, if it exists."""
        if self.kind == "mapping":
            try:
                if segment in self.values:
                    return self.values[segment], self.keys.get(segment)
            except TypeError:  # unhashable segment
                return None
            return None
        if (
            self.kind == "sequence"
            and isinstance(segment, int)
            and not isinstance(segment, bool)
            and -len(self.items) <= segment < len(self.items)
        ):
            return self.items[segment], None
        return None

    def resolve(self, path: DataPath) -> tuple[Positions, KeyPosition | None, int]:
        """Deepest existing prefix of ``path``: its node, its key (if reached through a mapping
        key) and how many segments of ``path`` it consumed."""
        node, key, depth = self, None, 0
        for segment in path:
            found = node.child(segment)
            if found is None:
                break
            node, key = found
            depth += 1
        return node, key, depth

    def exists(self, path: DataPath) -> bool:
        return self.resolve(path)[2] == len(path)

    def locate(self, path: DataPath) -> tuple[int, int]:
        """``(line, col)`` of the field at ``path``, or of its deepest existing prefix.

        A scalar value is located at the value itself; a mapping or sequence reached through a
        key is located at that key (the line that names it, e.g. ``columns:``); a sequence item
        at the item. A missing key therefore points at its parent mapping, and ``()`` at the
        top-level mapping.
        """
        node, key, _ = self.resolve(path)
        if key is not None and node.kind != "scalar":
            return key.line, key.col
        return node.line, node.col

    def locate_key(self, path: DataPath) -> tuple[int, int]:
        """Like :meth:`locate`, but a mapping entry is always located at its key."""
        node, key, _ = self.resolve(path)
        if key is not None:
            return key.line, key.col
        return node.line, node.col

    def locate_value(self, path: DataPath) -> tuple[int, int]:
        """Like :meth:`locate`, but always the start of the value (of the deepest prefix)."""
        node, _, _ = self.resolve(path)
        return node.line, node.col

    def source_of(self, path: DataPath) -> str | None:
        """Plain source text of the scalar at ``path`` (``None`` if quoted, not a scalar or
        missing)."""
        node, _, depth = self.resolve(path)
        if depth != len(path) or node.kind != "scalar":
            return None
        return node.source

    def key_source_of(self, path: DataPath) -> str | None:
        """Plain source text of the mapping key at the end of ``path``, if any."""
        if not path:
            return None
        _, key, depth = self.resolve(path)
        if depth != len(path) or key is None:
            return None
        return key.source


def format_path(path: DataPath) -> str:
    """A data path in YAML terms: ``("scans", 1, "penalty")`` -> ``scans[1].penalty``.

    String keys that look like identifiers are joined with dots; other keys are written in
    brackets as JSON (``discretize["age group"]``, ``discretize[false]``).
    """
    import json

    out = ""
    for segment in path:
        if isinstance(segment, int) and not isinstance(segment, bool):
            out += f"[{segment}]"
        elif isinstance(segment, str) and segment and _is_simple_key(segment):
            segment = truncate(segment)
            out += f".{segment}" if out else segment
        else:
            try:
                text = json.dumps(segment, ensure_ascii=False)
            except TypeError:
                text = json.dumps(str(segment), ensure_ascii=False)
            out += f"[{truncate(text)}]"
    return out


def _is_simple_key(key: str) -> bool:
    return all(ch.isalnum() or ch in "_-$" for ch in key)


# -- reading a spec file --------------------------------------------------------------------


class UnreadableSpec(Exception):
    """A spec path that cannot be read as a spec: not a regular file, too large, a bad name."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


def read_spec_bytes(path: Path) -> bytes:
    """The bytes of a spec file: a regular file of at most ``MAX_SPEC_BYTES``, read bounded.

    ``OSError`` (missing, a directory, no permission, a symlink loop, a name too long) is
    raised as is; :class:`UnreadableSpec` for a path with a NUL byte, a device or FIFO
    (``/dev/zero`` would be read forever) and a file over the size cap.
    """
    if "\0" in str(path):
        raise UnreadableSpec(
            "the path contains a NUL byte", "check the path; file names cannot contain NUL"
        )
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableSpec(
            "not a regular file (a device, FIFO or socket)",
            "give the path of a spec file (*.audit.yaml)",
        )
    limit = MAX_SPEC_BYTES
    too_big = UnreadableSpec(
        f"the file is larger than the {limit // (1 << 20)} MiB a spec file may have",
        "a spec is a small YAML file; check that the path names the spec, not a data file",
    )
    if info.st_size > limit:
        raise too_big
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)  # bounded, even if the file grows meanwhile
    if len(data) > limit:
        raise too_big
    return data


# -- the loader ------------------------------------------------------------------------------


class SpecLoader(yaml.SafeLoader):
    """Safe YAML loader that keeps positions, rejects duplicate keys and keeps dates as text."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        # id(mapping node) -> {key: (key node, value node)}, after merge keys are flattened
        self._entries: dict[int, dict[Any, tuple[Node, Node]]] = {}
        # (mapping node, key, first key node, repeated key node)
        self.duplicates: list[tuple[MappingNode, Any, Node, Node]] = []

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # PyYAML composes recursively: bound the nesting before Python's recursion limit does
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                peek: Callable[[], yaml.Event] = self.peek_event  # untyped in the stubs
                event = peek()
                raise _TooComplex(
                    f"the spec is nested more than {MAX_DEPTH} levels deep",
                    event.start_mark,
                    hint="a spec needs only a few levels of mappings and lists; "
                    "check the indentation and the brackets",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"expected a mapping node, but found {getattr(node, 'id', 'another node')}",
                node.start_mark,
            )
        self._find_duplicates(node)
        self.flatten_mapping(node)  # resolves `<<: *anchor` merge keys in place
        mapping: dict[Any, Any] = {}
        entries: dict[Any, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError as exc:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found a mapping key that is a list or mapping; keys must be plain values",
                    key_node.start_mark,
                ) from exc
            mapping[key] = self.construct_object(value_node, deep=deep)
            entries[key] = (key_node, value_node)
        self._entries[id(node)] = entries
        return mapping

    def _find_duplicates(self, node: MappingNode) -> None:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == YAML_MERGE_TAG:
                continue  # explicit keys may override merged ones
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # unhashable; construct_mapping reports it
            if first is None:
                seen[key] = key_node
            else:
                self.duplicates.append((node, key, first, key_node))

    def build_positions(self, root: Node) -> tuple[Positions, dict[int, tuple[Any, ...]]]:
        """The position tree of an already constructed document, and the data path of every
        mapping node (first occurrence; anchors shared through aliases are built once)."""
        memo: dict[int, Positions] = {}
        paths: dict[int, tuple[Any, ...]] = {}

        def build(node: Node, path: tuple[Any, ...]) -> Positions:
            known = memo.get(id(node))
            if known is not None:
                return known
            pos = Positions(line=node.start_mark.line + 1, col=node.start_mark.column + 1)
            memo[id(node)] = pos  # before recursing: recursive aliases terminate
            paths[id(node)] = path
            if isinstance(node, MappingNode):
                pos.kind = "mapping"
                for key, (key_node, value_node) in self._entries.get(id(node), {}).items():
                    pos.keys[key] = KeyPosition(
                        key_node.start_mark.line + 1,
                        key_node.start_mark.column + 1,
                        _plain_source(key_node),
                    )
                    pos.values[key] = build(value_node, (*path, key))
            elif isinstance(node, SequenceNode):
                pos.kind = "sequence"
                pos.items = [build(item, (*path, i)) for i, item in enumerate(node.value)]
            else:
                pos.source = _plain_source(node)
            return pos

        return build(root, ()), paths


# Dates and times stay strings: drop the implicit timestamp resolver (copy the class-level
# table first, it is shared with yaml.SafeLoader).
SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != YAML_TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _TooComplex(Exception):
    """The YAML asks for unbounded work: too deep, a recursive alias or an alias bomb."""

    def __init__(self, message: str, mark: Any, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.hint = hint or (
            "write the values out instead of using YAML anchors (&) and aliases (*)"
        )


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [child for pair in node.value for child in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def check_node_graph(root: Node) -> None:
    """Reject a composed YAML graph that would cost unbounded work to construct and validate.

    Aliases make the node graph a DAG (or, for an alias inside its own anchor, a cycle).
    Iteratively, with one visit per node: a cycle is an error; so is an expansion (every
    alias replaced by a copy of its anchor) more than ``MAX_ALIAS_VALUES`` values larger than
    the file, or deeper than ``MAX_DEPTH`` levels (the "billion laughs" alias bomb).
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        if leaving:
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if depth[key] > MAX_DEPTH + 1:
                raise _TooComplex(
                    f"YAML aliases nest this value more than {MAX_DEPTH} levels deep",
                    node.start_mark,
                )
            if size[key] > MAX_ALIAS_VALUES + len(size):
                raise _TooComplex(
                    f"YAML aliases expand this value to more than {MAX_ALIAS_VALUES:,} values "
                    "(an alias bomb?)",
                    node.start_mark,
                )
            continue
        if key in size:
            continue  # shared through an alias, already measured
        if key in entered:
            raise _TooComplex(
                "recursive YAML alias: an alias refers to a value that contains it",
                node.start_mark,
            )
        entered.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _plain_source(node: Node) -> str | None:
    if isinstance(node, ScalarNode) and node.style is None:
        return str(node.value)
    return None


# -- entry point -----------------------------------------------------------------------------


def load_spec_text(text: str, filename: str) -> tuple[dict[str, Any], Positions]:
    """Parse spec YAML into plain data and its :class:`Positions` tree.

    Raises :class:`SpecError` for YAML syntax errors (with the line and column of the problem),
    duplicate keys (every one, with both lines), an empty document and a top level that is
    not a mapping.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        loader = SpecLoader(text)  # checks for unprintable characters
        try:
            root = loader.get_single_node()
            if root is None:
                raise SpecError(
                    issues=[
                        Issue(
                            "the spec file is empty",
                            hint=REQUIRED_KEYS_HINT,
                            file=filename,
                            line=1,
                            col=1,
                        )
                    ]
                )
            if not isinstance(root, MappingNode):
                what = (
                    "a list"
                    if isinstance(root, SequenceNode)
                    else f"the value {truncate(repr(root.value))}"
                )
                raise SpecError(
                    issues=[
                        Issue(
                            f"the top level of a spec must be a mapping of keys to values, "
                            f"got {what}",
                            hint=REQUIRED_KEYS_HINT,
                            file=filename,
                            line=root.start_mark.line + 1,
                            col=root.start_mark.column + 1,
                        )
                    ]
                )
            check_node_graph(root)
            data = loader.construct_document(root)
            positions, paths = loader.build_positions(root)
        finally:
            loader.dispose()
    except _TooComplex as exc:
        raise SpecError(
            issues=[
                Issue(
                    exc.message,
                    hint=exc.hint,
                    file=filename,
                    line=exc.mark.line + 1 if exc.mark is not None else None,
                    col=exc.mark.column + 1 if exc.mark is not None else None,
                )
            ]
        ) from None
    except RecursionError:
        raise SpecError(
            issues=[
                Issue(
                    "the spec is nested too deeply to read",
                    hint=f"keep the nesting of mappings and lists under {MAX_DEPTH} levels",
                    file=filename,
                    line=1,
                    col=1,
                )
            ]
        ) from None
    except yaml.MarkedYAMLError as exc:
        raise SpecError(issues=[_syntax_issue(exc, filename)]) from exc
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        what = (
            f"character #x{exc.character:04x}"
            if isinstance(exc.character, int)
            else f"byte {exc.character!r}"
        )
        raise SpecError(
            issues=[
                Issue(
                    f"invalid YAML: {what} is not allowed in a YAML file",
                    hint="remove the control character (often pasted in from another program)",
                    file=filename,
                    line=line,
                    col=col,
                )
            ]
        ) from exc
    except yaml.YAMLError as exc:  # pragma: no cover - PyYAML raises only the two kinds above
        raise SpecError(issues=[Issue(f"invalid YAML: {exc}", file=filename)]) from exc

    if loader.duplicates:
        issues = []
        for mapping_node, key, first, again in loader.duplicates:
            path = (*paths.get(id(mapping_node), ()), key)
            issues.append(
                Issue(
                    f"duplicate key {truncate(repr(key))} (first on line {first.start_mark.line + 1}, "
                    f"again on line {again.start_mark.line + 1})",
                    hint="remove one of them; YAML would silently keep only the last value",
                    field=format_path(path),
                    file=filename,
                    line=again.start_mark.line + 1,
                    col=again.start_mark.column + 1,
                )
            )
        issues.sort(key=lambda i: (i.line or 0, i.col or 0))
        raise SpecError(issues=issues)
    return data, positions


def _syntax_issue(exc: yaml.MarkedYAMLError, filename: str) -> Issue:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "cannot parse"
    message = f"invalid YAML: {problem}"
    if "expected a single document" in (exc.context or ""):
        message = "invalid YAML: found a second YAML document (`---`) in the file"
    elif exc.context and exc.problem:
        where = ""
        if (
            exc.context_mark is not None
            and exc.problem_mark is not None
            and (exc.context_mark.line != exc.problem_mark.line)
        ):
            where = f" on line {exc.context_mark.line + 1}"
        message += f" ({exc.context}{where})"
    if "\t" in problem or "'\\t'" in problem:
        hint = "YAML indentation must use spaces, not tabs"
    elif "could not find expected ':'" in problem or "mapping values are not allowed" in problem:
        hint = "check the indentation, and quote values that contain ': ' or ' #'"
    elif "could not determine a constructor" in problem:
        hint = "custom tags (`!!python/...`, `!tag`) are not allowed in spec files"
    elif "expected a single document" in (exc.context or ""):
        hint = "a spec file holds one YAML document; remove the `---` separator"
    else:
        hint = "check the indentation and quoting on this line and the one before"
    return Issue(
        message,
        hint=hint,
        file=filename,
        line=mark.line + 1 if mark is not None else None,
        col=mark.column + 1 if mark is not None else None,
    )
