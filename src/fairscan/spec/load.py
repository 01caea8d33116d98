"""Load and validate an audit spec file: ``load_spec(path) -> LoadedSpec``.

Every problem is raised as one :class:`SpecError` whose issues carry the file, line and column,
sorted by line, so a user sees all of them in one run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fairscan.errors import Issue, SpecError, truncate
from fairscan.spec.issues import validation_issues
from fairscan.spec.loader import Positions, UnreadableSpec, load_spec_text, read_spec_bytes
from fairscan.spec.models import AuditSpec, scan_models_of
from fairscan.spec.resolve import apply_defaults, resolve_extends

__all__ = ["LoadedSpec", "load_spec", "load_spec_from_text", "parse_field_path"]


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with what is needed to point back into its file."""

    spec: AuditSpec
    path: Path  # as given (relative paths in the spec are relative to path.parent)
    text: str  # decoded file text
    sha256: str  # of the file's bytes (of the UTF-8 text for load_spec_from_text)
    positions: Positions
    origins: dict[int, str] = field(default_factory=dict)  # id(position node) -> file name
    chain: tuple[str, ...] = ()  # this file and the files it extends, child first

    def file_of(self, field: str) -> str:
        """The file in which ``field`` (or its deepest written parent) is written."""
        try:
            path = _resolve_ids(parse_field_path(field), self.spec)
        except ValueError:
            return str(self.path)
        node = self.positions.resolve(path)[0]
        return self.origins.get(id(node), str(self.path))

    def locate_field(self, field: str) -> tuple[int, int]:
        """``(line, col)`` of a spec field given as ``columns.outcome``, ``scans[0].penalty``,
        ``scans[fpr].penalty`` (a scan by id), ``discretize.age`` or ``discretize["age group"]``.

        A field that is not written in the file (a default) is located at its deepest
        existing parent; ``""`` is the top of the spec.
        """
        path = _resolve_ids(parse_field_path(field), self.spec)
        return self.positions.locate(path)

    def issue(self, message: str, *, field: str, hint: str | None = None) -> Issue:
        """An :class:`Issue` about ``field``, located in this spec file."""
        line, col = self.locate_field(field)
        return Issue(message, hint=hint, field=field, file=self.file_of(field), line=line, col=col)


_TOKEN = re.compile(
    r"""
    \[\s*(?P<index>-?\d+)\s*\]            # [0]
    | \[\s*(?P<quoted>"(?:[^"\\]|\\.)*")\s*\]  # ["age group"]
    | \[(?P<name>[^\]"]+)\]               # [fpr] (a scan id)
    | \.?(?P<key>[^.\[\]]+)               # .outcome / outcome
    """,
    re.VERBOSE,
)


def parse_field_path(field: str) -> tuple[str | int, ...]:
    """``"scans[1].penalty"`` -> ``("scans", 1, "penalty")``.

    A bracketed name that is not a number (``scans[fpr]``) is kept as a string; ``LoadedSpec``
    resolves it to the index of the list item with that ``id``.
    """
    out: list[str | int] = []
    pos = 0
    field = field.strip()
    while pos < len(field):
        match = _TOKEN.match(field, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"cannot parse field path {field!r} at position {pos}")
        if match.group("index") is not None:
            out.append(int(match.group("index")))
        elif match.group("quoted") is not None:
            out.append(json.loads(match.group("quoted")))
        elif match.group("name") is not None:
            out.append(_BracketName(match.group("name").strip()))
        else:
            out.append(match.group("key"))
        pos = match.end()
    return tuple(out)


class _BracketName(str):
    """A ``[name]`` segment: a list item chosen by its ``id``."""

    __slots__ = ()


def _resolve_ids(path: tuple[str | int, ...], spec: Any) -> tuple[str | int, ...]:
    out: list[str | int] = []
    node: Any = spec
    for segment in path:
        if isinstance(segment, _BracketName) and isinstance(node, list | tuple):
            for i, item in enumerate(node):
                if getattr(item, "id", None) == segment or (
                    isinstance(item, dict) and item.get("id") == segment
                ):
                    out.append(i)
                    node = item
                    break
            else:
                out.append(str(segment))
                node = None
            continue
        segment = str(segment) if isinstance(segment, _BracketName) else segment
        out.append(segment)
        node = _get(node, segment)
    return tuple(out)


def _get(node: Any, segment: str | int) -> Any:
    if node is None:
        return None
    if isinstance(segment, int):
        return (
            node[segment]
            if isinstance(node, list | tuple) and -len(node) <= segment < len(node)
            else None
        )
    if isinstance(node, dict):
        return node.get(segment)
    return getattr(node, segment, None)


def load_spec(path: Path | str, model: type[AuditSpec]) -> LoadedSpec:
    """Read, parse and validate a spec file.

    Raises :class:`SpecError` when the file is missing, unreadable, not UTF-8, empty, not
    valid YAML, or not a valid spec (all problems at once, sorted by line).
    """
    path = Path(path)
    name = truncate(str(path), 200)
    try:
        data = read_spec_bytes(path)
    except UnreadableSpec as exc:
        raise SpecError(
            issues=[Issue(f"cannot read spec file {name}: {exc.reason}", hint=exc.hint, file=name)]
        ) from None
    except FileNotFoundError as exc:
        raise SpecError(
            issues=[
                Issue(
                    f"spec file not found: {name}",
                    hint="check the path (relative paths are relative to the current directory)",
                    file=name,
                )
            ]
        ) from exc
    except IsADirectoryError as exc:
        raise SpecError(
            issues=[
                Issue(
                    f"{name} is a directory, not a spec file",
                    hint="give the path of the spec file itself, e.g. audits/NAME.audit.yaml",
                    file=name,
                )
            ]
        ) from exc
    except PermissionError as exc:
        raise SpecError(
            issues=[
                Issue(
                    f"cannot read spec file {name}: permission denied",
                    hint="check the file's permissions",
                    file=name,
                )
            ]
        ) from exc
    except OSError as exc:
        raise SpecError(
            issues=[
                Issue(
                    f"cannot read spec file {name}: {truncate(exc.strerror or str(exc))}",
                    hint="check that the path names a readable file",
                    file=name,
                )
            ]
        ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(
            issues=[
                Issue(
                    f"the spec file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                    hint="save the file with UTF-8 encoding",
                    file=name,
                    line=line,
                    col=col,
                )
            ]
        ) from exc
    return _load(text, name, path, hashlib.sha256(data).hexdigest(), model)


def load_spec_from_text(text: str, model: type[AuditSpec], filename: str = "<spec>") -> LoadedSpec:
    """Parse and validate spec text; ``filename`` is used in messages and as ``path``."""
    sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return _load(text, filename, Path(filename), sha256, model)


def _load(text: str, name: str, path: Path, sha256: str, model: type[AuditSpec]) -> LoadedSpec:
    if text.startswith("\ufeff"):
        text = text[1:]
    raw, positions = load_spec_text(text, name)
    raw, positions, origins, chain = resolve_extends(raw, positions, path, name)
    raw = apply_defaults(raw, scan_models_of(model))
    try:
        spec = model.model_validate(raw)
    except ValidationError as exc:
        issues = validation_issues(exc, raw, positions, name, model)
        if len(chain) > 1:
            issues = [_in_origin_file(i, raw, positions, origins, name) for i in issues]
        raise SpecError(issues=issues) from exc
    return LoadedSpec(
        spec=spec,
        path=path,
        text=text,
        sha256=sha256,
        positions=positions,
        origins=origins,
        chain=tuple(chain),
    )


def _in_origin_file(
    issue: Issue, raw: Any, positions: Positions, origins: dict[int, str], default: str
) -> Issue:
    """Point an issue of an extended spec at the file that holds its key."""
    if issue.field is None:
        return issue
    try:
        path = _resolve_ids(parse_field_path(issue.field), raw)
    except ValueError:
        return issue
    node = positions.resolve(path)[0]
    return issue.located(origins.get(id(node), default), issue.line, issue.col)
