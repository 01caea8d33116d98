"""Turn a pydantic ``ValidationError`` on the audit spec into located, readable :class:`Issue`s.

Each pydantic error's ``loc`` is mapped back to the YAML:

* discriminated-union tags (pydantic puts the scan ``type`` value, e.g. ``'fpr_scan'``, into
  ``loc``) are dropped by walking ``loc`` alongside the model types, so the path reads
  ``scans[0].penalty``;
* an empty ``loc`` (a model validator) is attributed to the model's own node, refined by the
  ``spec_loc`` that :func:`fairscan.spec.base.rule_error` attaches;
* the position is the deepest existing prefix of the path: a missing key points at its parent.

The messages speak YAML, not Python: "expected a number, got 'abc'", "unknown key 'alhpa'"
with "did you mean 'alpha'?", and "`no` was read as boolean false; quote it: \"no\"".
"""

from __future__ import annotations

import difflib
import functools
import re
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from fairscan.errors import ECHO_LIMIT, Issue, truncate
from fairscan.spec.base import RULE_ERROR_TYPE
from fairscan.spec.loader import Positions, format_path

__all__ = ["validation_issues"]

_MISSING: Any = object()


# A spec with thousands of problems (a pasted data file, a generated block) gets the first
# MAX_ISSUES of them and a count: fast, and a screenful rather than 200,000 lines.
MAX_ISSUES = 50
MAX_ERRORS_READ = 1000


def validation_issues(
    error: ValidationError,
    raw: Any,
    positions: Positions | None,
    filename: str | None,
    model: type[BaseModel],
) -> list[Issue]:
    """One :class:`Issue` per pydantic error, located in the YAML and sorted by line.

    ``raw`` is the data that was validated (as loaded from YAML), ``positions`` its position
    tree (``None`` if unknown) and ``model`` the validated model (the registry's ``AuditSpec``).
    """
    # Linear in the number of errors (20,000 unknown keys must not take minutes): sets for
    # de-duplication, per-model caches for the hints.
    slots: list[Issue | tuple[Any, ...]] = []
    # errors of the members of one untagged union value: (field, line, col) -> issues
    unions: dict[tuple[Any, ...], list[Issue]] = {}
    all_errors = error.errors(include_url=False)
    for details in all_errors[:MAX_ERRORS_READ]:
        walk = _walk_of(details, raw, model)
        issue = _issue(details, positions, model, walk)
        if positions is not None or filename is not None:
            issue = issue.located(filename, issue.line, issue.col)
        if walk.union_member:
            group_key = (issue.field, issue.line, issue.col)
            if group_key not in unions:
                unions[group_key] = []
                slots.append(group_key)  # replaced by the merged issue below
            unions[group_key].append(issue)
            continue
        slots.append(issue)
    seen: set[Issue] = set()
    issues: list[Issue] = []
    for slot in slots:
        issue = slot if isinstance(slot, Issue) else _merge_union_issues(unions[slot])
        if issue not in seen:
            seen.add(issue)
            issues.append(issue)
    issues.sort(key=lambda i: (i.line or 0, i.col or 0))
    return _capped(issues, len(all_errors) - min(len(all_errors), MAX_ERRORS_READ), filename)


def _capped(issues: list[Issue], unread: int, filename: str | None) -> list[Issue]:
    """At most MAX_ISSUES issues, then one that says how many more there are."""
    more = max(len(issues) - MAX_ISSUES, 0) + unread
    if more == 0:
        return issues
    return [
        *issues[:MAX_ISSUES],
        Issue(
            f"... and {more:,} more problem(s) like these, not shown",
            hint="fix the problems above first (a misplaced or pasted block is common)",
            file=filename,
        ),
    ]


def _walk_of(details: ErrorDetails, raw: Any, model: type[BaseModel]) -> _Walk:
    loc = tuple(details["loc"])
    if details["type"] == RULE_ERROR_TYPE:
        loc = loc + tuple((details.get("ctx") or {}).get("spec_loc", ()))
    return _walk(loc, raw, model, details)


_EXPECTED_GOT = re.compile(r"^expected (?P<expected>.*?), got (?P<got>.*)$", re.DOTALL)


def _merge_union_issues(group: list[Issue]) -> Issue:
    """One issue for a value that matches none of the members of an untagged union.

    A non-finite number is named as such; otherwise the members' "expected ..." parts are
    joined: "expected 'overall', a mapping or a number, got 'abc'".
    """
    for issue in group:
        if "finite number" in issue.message:
            takes_text = any(i.message.startswith("expected a string") for i in group)
            key = re.split(r"[.\[]", issue.field or "")[-1].rstrip("]")
            if takes_text and key:  # e.g. a threshold: a number or a column name
                shown = issue.message.rsplit(", got ", 1)[-1]
                return replace(
                    issue, message=f"a numeric {key} must be a finite number, got {shown}"
                )
            return issue
    if len(group) == 1:
        return group[0]
    expected: list[str] = []
    got: str | None = None
    hints: list[str] = []
    for issue in group:
        match = _EXPECTED_GOT.match(issue.message)
        if match is None:
            return group[0]
        part = match.group("expected").split(" (")[0]
        if part not in expected:
            expected.append(part)
        got = match.group("got")
        if issue.hint and issue.hint not in hints:
            hints.append(issue.hint)
    text = ", ".join(expected[:-1]) + " or " + expected[-1] if len(expected) > 1 else expected[0]
    first = group[0]
    return Issue(
        f"expected {text}, got {got}",
        hint="; ".join(hints) or "`audit schema` lists what each key takes",
        field=first.field,
        file=first.file,
        line=first.line,
        col=first.col,
    )


# -- walking `loc` alongside the model types ---------------------------------------------------


@dataclass
class _Walk:
    path: tuple[Any, ...]  # data path in the YAML (keys and indices), union tags dropped
    ann: Any  # annotation at the end of the path (unwrapped), or Any
    owner: type[BaseModel] | None  # model whose field the last key is (for key errors)
    raw: Any  # raw value at the end of the path, or _MISSING
    key_error: bool  # the error is about a dict key itself ("[key]" in loc)
    union_member: bool = False  # the error is about one member of a plain (untagged) union


def _unwrap(ann: Any) -> tuple[Any, str | None]:
    """Strip ``Annotated`` and ``Optional``; return the core type and a union discriminator."""
    discriminator: str | None = None
    while True:
        origin = get_origin(ann)
        if origin is typing.Annotated:
            args = get_args(ann)
            for meta in args[1:]:
                if isinstance(meta, FieldInfo) and isinstance(meta.discriminator, str):
                    discriminator = meta.discriminator
            ann = args[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(ann) if a is not type(None)]
            if len(members) == 1:
                ann = members[0]
                continue
        return ann, discriminator


def _is_model(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _union_members(ann: Any) -> list[Any]:
    if get_origin(ann) in (Union, types.UnionType):
        return [a for a in get_args(ann) if a is not type(None)]
    return []


def _tag_of(model: type[BaseModel], discriminator: str) -> list[Any]:
    field = model.model_fields.get(discriminator)
    if field is None:
        return []
    core, _ = _unwrap(field.annotation)
    return list(get_args(core)) if get_origin(core) is Literal else []


def _walk(loc: Sequence[Any], raw: Any, root: type[BaseModel], details: ErrorDetails) -> _Walk:
    path: list[Any] = []
    ann: Any = root
    owner: type[BaseModel] | None = None
    node = raw
    key_error = False
    union_member = False
    for i, segment in enumerate(loc):
        last = i == len(loc) - 1
        ann, discriminator = _unwrap(ann)
        members = _union_members(ann)
        if members and discriminator is not None:
            tags = {t: m for m in members if _is_model(m) for t in _tag_of(m, discriminator)}
            if segment in tags:  # a union tag pydantic inserted: not a key in the YAML
                ann = tags[segment]
                continue
        if segment == "[key]":
            key_error = True
            continue
        if members and discriminator is None and isinstance(segment, str):
            member = _union_member_named(members, segment)
            if member is not None and not (isinstance(node, dict) and segment in node):
                ann = member  # a member tag pydantic inserted ("float", "literal[...]", ...)
                union_member = True
                continue
        if _is_model(ann):
            owner = ann
            field = ann.model_fields.get(segment) if isinstance(segment, str) else None
            if field is None and isinstance(node, dict):  # e.g. a non-string top-level key
                segment = _raw_key(node, segment, details, last)
            ann = field.annotation if field is not None else Any
            node = _child(node, segment)
            path.append(segment)
            continue
        origin = get_origin(ann)
        if origin in (list, tuple, set, frozenset) and isinstance(segment, int):
            args = get_args(ann)
            ann = args[0] if args else Any
            node = _child(node, segment)
            path.append(segment)
            continue
        if origin is dict and isinstance(node, dict):
            args = get_args(ann)
            is_key = i + 1 < len(loc) and loc[i + 1] == "[key]"
            segment = _raw_key(node, segment, details, is_key)
            ann = args[1] if len(args) == 2 else Any
            node = _child(node, segment)
            path.append(segment)
            continue
        # Unknown structure: keep segments that exist in the raw data (and the last one).
        child = _child(node, segment)
        if child is not _MISSING or last:
            path.append(segment)
            node = child
        ann = Any
    ann, _ = _unwrap(ann)
    return _Walk(tuple(path), ann, owner, node, key_error, union_member)


def _union_member_named(members: list[Any], tag: str) -> Any:
    """The member of an untagged union that pydantic names ``tag`` in an error's ``loc``."""
    for member in members:
        origin = get_origin(member)
        if isinstance(member, type) and member.__name__ == tag:
            return member
        if origin is Literal and tag.startswith("literal["):
            return member
        if origin is not None and tag.startswith(f"{getattr(origin, '__name__', '')}["):
            return member
    return None


def _child(node: Any, segment: Any) -> Any:
    if isinstance(node, dict):
        try:
            return node.get(segment, _MISSING)
        except TypeError:
            return _MISSING
    if isinstance(node, list) and isinstance(segment, int) and not isinstance(segment, bool):
        return node[segment] if -len(node) <= segment < len(node) else _MISSING
    return _MISSING


def _raw_key(node: dict[Any, Any], segment: Any, details: ErrorDetails, is_key: bool) -> Any:
    """The actual key in the raw mapping that pydantic's ``segment`` stands for.

    pydantic writes a bool key as 0/1 and other non-string keys as their ``str()``.
    """
    candidate = details.get("input")
    if is_key and isinstance(candidate, Hashable) and candidate in node:
        for key in node:
            if key == candidate and type(key) is type(candidate):
                return key
    if type(segment) is str and segment in node:
        return segment  # the common case, without a scan of every key (linear, not quadratic)
    for key in node:
        if key == segment and type(key) is type(segment):
            return key
    for key in node:
        if key == segment or (not isinstance(key, str) and str(key) == segment):
            return key
    return segment


# -- rendering values ----------------------------------------------------------------------


def _show(value: Any, source: str | None = None) -> str:
    """How an input is named in a message: 'abc', 1.5, boolean false, an empty value, ..."""
    if value is None:
        if source not in (None, ""):
            return f"null (`{source}`)"
        return "an empty value"
    if isinstance(value, bool):
        word = "true" if value else "false"
        if source is not None and source.lower() != word:
            return f"`{source}` (read as boolean {word})"
        return f"boolean {word}"
    if isinstance(value, int | float):
        text = source if source is not None else repr(value)
        return f"the number {text}"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, dict):
        return f"a mapping {_short(value)}"
    if isinstance(value, list):
        return f"a list {_short(value)}"
    return _short(value)


def _quote(text: str, limit: int = ECHO_LIMIT) -> str:
    return repr(truncate(text, limit))


def _short(value: Any, limit: int = 50) -> str:
    return truncate(_flow(value, limit + 1), limit)


def _key(key: Any) -> str:
    """A mapping key as echoed in a message: its repr, cut to a readable length."""
    return _quote(key) if isinstance(key, str) else truncate(repr(key))


def _flow(value: Any, budget: int | None = None) -> str:
    """``value`` in YAML flow style; with ``budget``, stop soon after that many characters."""
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else value
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        parts: list[str] = []
        size = 1
        for item in items:
            if isinstance(value, dict):
                k, v = item
                part = f"{_flow(k, budget)}: {_flow(v, budget)}"
            else:
                part = _flow(item, budget)
            parts.append(part)
            size += len(part) + 2
            if budget is not None and size > budget:
                break
        return opening + ", ".join(parts) + closing
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return text if budget is None else text[: budget + 1]


def _bool_message(value: bool, source: str | None) -> str:
    word = "true" if value else "false"
    text = source if source is not None else word
    return f'`{text}` was read as boolean {word}; quote it: "{text}"'


def _did_you_mean(word: Any, options: Iterable[Any]) -> str | None:
    if not isinstance(word, str):
        return None
    choices = [o for o in options if isinstance(o, str)]
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not match:
        lowered = {c.lower(): c for c in choices}
        if word.lower() in lowered:
            match = [lowered[word.lower()]]
    return f"did you mean {match[0]!r}?" if match else None


def _or_list(values: Sequence[Any]) -> str:
    shown = [repr(v) if isinstance(v, str) else _flow(v) for v in values]
    if len(shown) <= 2:
        return " or ".join(shown)
    return ", ".join(shown[:-1]) + " or " + shown[-1]


# -- where a field lives (for "it belongs under ...") ------------------------------------------


@functools.cache
def _field_homes(root: type[BaseModel]) -> dict[str, list[str]]:
    homes: dict[str, list[str]] = {}

    def add(name: str, where: str) -> None:
        homes.setdefault(name, [])
        if where not in homes[name]:
            homes[name].append(where)

    for name, field in root.model_fields.items():
        add(name, name)
        core, _ = _unwrap(field.annotation)
        inner = core
        if get_origin(core) in (list, dict):
            args = get_args(core)
            inner = _unwrap(args[-1])[0] if args else Any
        candidates = _union_members(inner) or [inner]
        for model in candidates:
            if not _is_model(model):
                continue
            for sub in model.model_fields:
                if get_origin(core) is list:
                    add(sub, f"an entry of `{name}`")
                elif get_origin(core) is dict:
                    add(sub, f"{name}.<column>.{sub}")
                else:
                    add(sub, f"{name}.{sub}")
    return homes


def _scan_type_of(model: type[BaseModel] | None) -> str | None:
    if model is None:
        return None
    tags = _tag_of(model, "type")
    return tags[0] if len(tags) == 1 and isinstance(tags[0], str) else None


def _scan_types(root: type[BaseModel]) -> list[str]:
    """The scan ``type`` tags the root model accepts (from its ``scans`` union)."""
    from fairscan.spec.models import AuditSpec, scan_models_of

    if isinstance(root, type) and issubclass(root, AuditSpec):
        return list(scan_models_of(root))
    return []


# -- one error -------------------------------------------------------------------------------


_GOT_SUFFIX = re.compile(r"^Input should be ")


@dataclass(frozen=True)
class _Error:
    """One pydantic error with what every handler reads: its kind, path, value and position."""

    details: ErrorDetails
    positions: Positions | None
    root: type[BaseModel]
    walk: _Walk

    @property
    def kind(self) -> str:
        return self.details["type"]

    @property
    def ctx(self) -> dict[str, Any]:
        return self.details.get("ctx") or {}

    @property
    def path(self) -> tuple[Any, ...]:
        return self.walk.path

    @property
    def value(self) -> Any:
        return self.details.get("input")

    @property
    def source(self) -> str | None:
        """The value as written in the YAML, where known."""
        return self.positions.source_of(self.path) if self.positions is not None else None

    @property
    def key_source(self) -> str | None:
        """The last key as written in the YAML, where known."""
        return self.positions.key_source_of(self.path) if self.positions is not None else None

    def where(self, path: Sequence[Any], *, key: bool = False) -> tuple[int | None, int | None]:
        if self.positions is None:
            return None, None
        return self.positions.locate_key(path) if key else self.positions.locate(path)

    def issue(
        self,
        message: str,
        hint: str | None = None,
        *,
        at: Sequence[Any] | None = None,
        key: bool = False,
        field: str | None = None,
    ) -> Issue:
        """An issue at ``at`` (default: the error's path; ``key``: the key itself), naming
        ``field`` (default: the error's path)."""
        line, col = self.where(self.path if at is None else at, key=key)
        return Issue(
            message, hint=hint, field=field or format_path(self.path) or None, line=line, col=col
        )


def _missing(e: _Error) -> Issue:
    key = e.path[-1] if e.path else None
    parent = e.path[:-1]
    message = f"missing required key {_key(key)}"
    description = _description(e.walk.owner, key)
    if key == "version" and not parent:
        message = "missing required key 'version' (the spec format version)"
        hint = "add `version: 1` at the top of the file"
    elif e.walk.owner is not None and _scan_type_of(e.walk.owner) and key == "id":
        hint = "give every scan an `id`, e.g. `- {id: fpr, type: fpr_scan}`"
    elif description:
        hint = f"add `{key}:` ({_lower_first(description)})"
    else:
        hint = f"add `{key}:`"
    return e.issue(message, hint, at=parent)


def _extra_forbidden(e: _Error) -> Issue:
    key = e.path[-1] if e.path else None
    scan_type = _scan_type_of(e.walk.owner)
    owner_fields = list(e.walk.owner.model_fields) if e.walk.owner is not None else []
    message = f"unknown key {_key(key)}"
    if scan_type:
        message += f" for scan type {scan_type!r}"
    if isinstance(key, bool):
        message = f"unknown key {_bool_message(key, e.key_source)}"
    hint = _unknown_key_hint(key, owner_fields, e.root, scan_type, at_root=len(e.path) == 1)
    return e.issue(message, hint, key=True)


def _invalid_key(e: _Error) -> Issue:
    """A mapping key of the wrong type (YAML read it as a bool or a number)."""
    key = e.path[-1] if e.path else e.value
    key_source = e.key_source
    field = None
    if e.path and not isinstance(key, str):
        # name the key as written: `discretize.no`, not `discretize[false]`
        field = format_path((*e.path[:-1], key_source if key_source is not None else str(key)))
    if isinstance(key, bool):
        message = f"keys must be strings, but {_bool_message(key, key_source)}"
    elif isinstance(key, int | float):
        text = key_source or str(key)
        message = f'keys must be strings, got the number {text}; quote it: "{text}"'
    else:
        message = f"keys must be strings, got {_show(key, key_source)}"
    return e.issue(message, key=True, field=field)


def _union_tag(e: _Error) -> Issue:
    in_scans = e.path[:1] == ("scans",)
    valid = _scan_types(e.root) if in_scans else _ctx_tags(e.ctx)
    type_path = (*e.path, "type")
    field = format_path(type_path)
    tag = _child(e.walk.raw, "type")
    valid_text = ", ".join(valid)
    if e.kind == "union_tag_not_found" or tag is _MISSING:
        message = "missing required key 'type'" + (
            " (which kind of scan to run)" if in_scans else ""
        )
        return e.issue(message, f"add `type:` with one of: {valid_text}", field=field)
    tag_source = e.positions.source_of(type_path) if e.positions is not None else None
    if isinstance(tag, bool):
        message = f"unknown scan type: {_bool_message(tag, tag_source)}"
    else:
        message = f"unknown scan type {_show(tag, tag_source)}"
    suggestion = _did_you_mean(tag, valid)
    hint = (f"{suggestion} " if suggestion else "") + f"valid types: {valid_text}"
    return e.issue(message, hint, at=type_path, field=field)


def _version(e: _Error) -> Issue:
    line, col = e.where(e.path)
    return _version_issue(e.value, e.source, format_path(e.path) or None, line, col)


def _mapping_type(e: _Error) -> Issue:
    message = f"expected a mapping (key: value pairs), got {_show(e.value, e.source)}"
    hint = None
    if len(e.path) == 2 and e.path[0] == "scans" and isinstance(e.path[1], int):
        hint = "write each scan as a mapping, e.g. `- {id: fpr, type: fpr_scan}`"
    elif e.value is None:
        hint = f"indent the keys of `{format_path(e.path)}` below it, or remove the empty key"
    return e.issue(message, hint)


def _list_type(e: _Error) -> Issue:
    message = f"expected a list, got {_show(e.value, e.source)}"
    return e.issue(message, "write a list as `[a, b]` or as one `- item` per line")


def _string_type(e: _Error) -> Issue:
    value, source = e.value, e.source
    if isinstance(value, bool):
        message = _bool_message(value, source)
    elif isinstance(value, int | float):
        text = source if source is not None else str(value)
        message = f'expected a string, got the number {text}; quote it: "{text}"'
    else:
        message = f"expected a string, got {_show(value, source)}"
    return e.issue(message)


def _literal(e: _Error) -> Issue:
    value, source = e.value, e.source
    expected = _literal_values(e.walk.ann) or _ctx_expected(e.ctx)
    options = _or_list(expected) if expected else e.ctx.get("expected", "")
    if isinstance(value, bool) and any(isinstance(x, str) for x in expected):
        message = f"{_bool_message(value, source)}; expected {options}"
    else:
        message = f"expected {options}, got {_show(value, source)}"
    return e.issue(message, _did_you_mean(value, expected))


def _int_type(e: _Error) -> Issue:
    hint = "write numbers without quotes" if isinstance(e.value, str) else None
    return e.issue(f"expected a whole number, got {_show(e.value, e.source)}", hint)


def _finite_number(e: _Error) -> Issue:
    shown = e.source if e.source is not None else repr(e.value)
    hint = "NaN and infinity are not allowed here; write a real number such as 0.05"
    return e.issue(f"expected a finite number, got {shown}", hint)


def _float_type(e: _Error) -> Issue:
    hint: str | None
    if isinstance(e.value, str) and _looks_numeric(e.value):
        hint = "write numbers without quotes"
    else:
        hint = _range_hint(e.walk)
    return e.issue(f"expected a number, got {_show(e.value, e.source)}", hint)


def _bool_type(e: _Error) -> Issue:
    return e.issue(f"expected true or false, got {_show(e.value, e.source)}")


# comparison error kind -> (operator, its ctx key)
_BOUNDS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}


def _bound(e: _Error) -> Issue:
    op, name = _BOUNDS[e.kind]
    bound = e.ctx.get(name)
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)
    return e.issue(f"must be {op} {bound}, got {_show(e.value, e.source)}", _range_hint(e.walk))


def _too_short(e: _Error) -> Issue:
    minimum = e.ctx.get("min_length", 1)
    if isinstance(e.value, list | dict) and not e.value:
        return e.issue("must not be empty")
    actual = e.ctx.get("actual_length", "fewer")
    return e.issue(f"needs at least {minimum} item{'s' if minimum != 1 else ''}, got {actual}")


def _too_long(e: _Error) -> Issue:
    max_length, actual = e.ctx.get("max_length"), e.ctx.get("actual_length")
    return e.issue(f"has too many items: at most {max_length}, got {actual}")


def _string_too_short(e: _Error) -> Issue:
    if e.value == "":
        return e.issue("must not be empty")
    minimum = e.ctx.get("min_length")
    return e.issue(f"must be at least {minimum} characters long, got {_show(e.value, e.source)}")


def _string_pattern(e: _Error) -> Issue:
    message = (
        "must start with a letter or digit and contain only letters, digits, "
        f"'_', '.' and '-', got {_show(e.value, e.source)}"
    )
    hint = None
    if isinstance(e.value, str):
        cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", e.value).strip("-._")
        if cleaned:
            hint = f"for example {_quote(cleaned)}"
    return e.issue(message, hint)


def _rule(e: _Error) -> Issue:
    """A model rule (:func:`fairscan.spec.base.rule_error`) or a validator's own words."""
    message = e.details["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    rule_hint = e.ctx.get("spec_hint")
    return e.issue(message, rule_hint if isinstance(rule_hint, str) else None)


def _pydantic_words(e: _Error) -> Issue:
    """Anything else: pydantic's own words, adapted."""
    message = _GOT_SUFFIX.sub("should be ", e.details["msg"])
    if e.value is not None and not isinstance(e.value, dict | list):
        message += f", got {_show(e.value, e.source)}"
    return e.issue(message)


Handler = Callable[[_Error], Issue]

# pydantic error kind -> the handler that words it
_HANDLERS: dict[str, Handler] = {
    "missing": _missing,
    "extra_forbidden": _extra_forbidden,
    "invalid_key": _invalid_key,
    **dict.fromkeys(("union_tag_invalid", "union_tag_not_found"), _union_tag),
    **dict.fromkeys(
        ("model_type", "model_attributes_type", "dict_type", "mapping_type"), _mapping_type
    ),
    **dict.fromkeys(("list_type", "tuple_type", "set_type"), _list_type),
    **dict.fromkeys(("string_type", "string_sub_type", "str_type"), _string_type),
    **dict.fromkeys(("literal_error", "enum"), _literal),
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float", "int_parsing_size"), _int_type),
    "finite_number": _finite_number,
    **dict.fromkeys(("float_type", "float_parsing"), _float_type),
    **dict.fromkeys(("bool_type", "bool_parsing"), _bool_type),
    **dict.fromkeys(_BOUNDS, _bound),
    "too_short": _too_short,
    "too_long": _too_long,
    "string_too_short": _string_too_short,
    "string_pattern_mismatch": _string_pattern,
    **dict.fromkeys((RULE_ERROR_TYPE, "value_error", "assertion_error"), _rule),
}
# kinds worded before the two overrides below: a key error (a mapping key of the wrong type,
# whatever pydantic calls it) and any error on the root's `version`
_BEFORE_KEY_ERROR = frozenset({"missing", "extra_forbidden"})
_BEFORE_VERSION = _BEFORE_KEY_ERROR | {"invalid_key", "union_tag_invalid", "union_tag_not_found"}


def _handler(e: _Error) -> Handler:
    if e.walk.key_error and e.kind not in _BEFORE_KEY_ERROR:
        return _invalid_key
    if e.path == ("version",) and e.walk.owner is e.root and e.kind not in _BEFORE_VERSION:
        return _version
    return _HANDLERS.get(e.kind, _pydantic_words)


def _issue(
    details: ErrorDetails, positions: Positions | None, root: type[BaseModel], walk: _Walk
) -> Issue:
    error = _Error(details, positions, root, walk)
    return _handler(error)(error)


def _version_issue(
    value: Any, source: str | None, field: str | None, line: int | None, col: int | None
) -> Issue:
    hint = "set `version: 1` (this fairscan reads spec format version 1)"
    if isinstance(value, str) and value.strip() == "1":
        message = f"`version` must be the number 1, not the text {_quote(value)}"
        hint = "write `version: 1` without quotes"
    elif isinstance(value, bool):
        message = f"`version` must be the number 1; {_bool_message(value, source).split(';')[0]}"
    elif isinstance(value, int | float):
        message = f"unsupported spec version {source or value}: this fairscan reads version 1"
        if isinstance(value, float) and value == 1:
            message = f"`version` must be the whole number 1, got {source or value}"
    else:
        message = f"`version` must be the number 1, got {_show(value, source)}"
    return Issue(message, hint=hint, field=field, line=line, col=col)


def _unknown_key_hint(
    key: Any,
    owner_fields: list[str],
    root: type[BaseModel],
    scan_type: str | None,
    *,
    at_root: bool,
) -> str:
    if key == "$schema" and at_root:
        return (
            "associate the schema with a modeline comment instead: "
            "`# yaml-language-server: $schema=<path or URL>` on the first line"
        )
    suggestion = _did_you_mean(key, owner_fields)
    if suggestion:
        return suggestion
    homes = _field_homes(root).get(key) if isinstance(key, str) else None
    if homes:
        places = " or ".join(f"`{h}`" if not h.startswith("an entry") else h for h in homes)
        if scan_type:
            return f"{key!r} is not a scan setting; it belongs under {places}"
        return f"{key!r} belongs under {places}"
    what = f"for {scan_type!r}" if scan_type else "here"
    return f"valid keys {what}: {', '.join(owner_fields)}" if owner_fields else "remove it"


def _description(model: type[BaseModel] | None, key: Any) -> str | None:
    if model is None or not isinstance(key, str):
        return None
    field = model.model_fields.get(key)
    return field.description if field is not None else None


def _lower_first(text: str) -> str:
    text = text.rstrip(".")
    if len(text) > 1 and text[1].isupper():  # an acronym such as "FPR"
        return text
    return text[:1].lower() + text[1:]


def _literal_values(ann: Any) -> list[Any]:
    core, _ = _unwrap(ann)
    if get_origin(core) is Literal:
        return list(get_args(core))
    return []


def _ctx_expected(ctx: dict[str, Any]) -> list[Any]:
    expected = ctx.get("expected")
    if not isinstance(expected, str):
        return []
    return re.findall(r"'([^']*)'", expected)


def _ctx_tags(ctx: dict[str, Any]) -> list[str]:
    tags = ctx.get("expected_tags")
    return re.findall(r"'([^']*)'", tags) if isinstance(tags, str) else []


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _range_hint(walk: _Walk) -> str | None:
    if walk.owner is None or not walk.path or not isinstance(walk.path[-1], str):
        return None
    description = _description(walk.owner, walk.path[-1])
    return description
