"""``audit explain SCAN_TYPE``: what a scan tests, its null hypothesis, parameters and reading.

Built from the scan registry (each type's :class:`~fairscan.scans.base.ScanDocs`: title,
summary, null hypothesis, reading, roles) and the scan's spec model
(field names, defaults and descriptions), so it cannot drift from what the spec accepts. Types
read as words (``number or null``, ``one of: ge, gt``), and the keys of nested settings are
listed under their parent (``protected.column``). The documentation site's page of each scan
type is rendered from the same :class:`Explanation` (``scripts/build_docs.py``).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

if TYPE_CHECKING:
    from fairscan.scans.base import ScanDocs, ScanType

SHARED_SETTINGS = (
    "significance.alpha, significance.replicates, significance.seed (see `audit schema`)."
)


def _null_hypothesis(docs: ScanDocs) -> tuple[str, str | None]:
    """What the scan tests and its null hypothesis: the summary's "Null hypothesis:" part, or
    the type's own sentence when the summary has none."""
    marker = "Null hypothesis:"
    if marker in docs.summary:
        head, _, tail = docs.summary.partition(marker)
        return head.strip(), tail.strip()
    return docs.summary.strip(), docs.null_hypothesis


# --- readable types ------------------------------------------------------------------------

_SCALARS: dict[Any, tuple[str, str]] = {
    # annotation -> (singular, plural)
    str: ("string", "strings"),
    int: ("integer", "integers"),
    float: ("number", "numbers"),
    bool: ("boolean", "booleans"),
    type(None): ("null", "nulls"),
}


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _members(annotation: Any) -> list[Any]:
    """The members of a union (``X | Y``, ``Optional[X]``, ``Union[...]``), else ``[X]``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return list(typing.get_args(annotation))
    return [annotation]


def _literal_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(metadata: list[Any]) -> str:
    """Numeric constraints, short: ``>= 0``, ``from 1 to 100000``, ``> 0 and <= 1``."""
    low: tuple[str, Any] | None = None
    high: tuple[str, Any] | None = None
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            low = (">=", item.ge)
        elif isinstance(item, annotated_types.Gt):
            low = (">", item.gt)
        elif isinstance(item, annotated_types.Le):
            high = ("<=", item.le)
        elif isinstance(item, annotated_types.Lt):
            high = ("<", item.lt)
    if low and high and low[0] == ">=" and high[0] == "<=":
        return f"from {_number(low[1])} to {_number(high[1])}"
    return " and ".join(f"{bound[0]} {_number(bound[1])}" for bound in (low, high) if bound)


def _min_items(metadata: list[Any]) -> int | None:
    return next((m.min_length for m in metadata if isinstance(m, annotated_types.MinLen)), None)


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def type_text(annotation: Any, metadata: list[Any] | None = None) -> str:
    """A field's type in words: ``number or null``, ``one of: ge, gt``, ``list of strings``,
    ``integer from 1 to 100000``, ``number >= 0``, ``mapping`` (its keys are listed as nested parameters)."""
    metadata = metadata or []
    literals: list[str] = []
    parts: list[str] = []
    for member in _members(annotation):
        origin = typing.get_origin(member)
        if origin is typing.Literal:
            literals += [_literal_text(value) for value in typing.get_args(member)]
        elif origin is typing.Annotated:
            inner, *extra = typing.get_args(member)
            parts.append(type_text(inner, [*metadata, *extra]))
        elif origin is list:
            (item,) = typing.get_args(member) or (Any,)
            parts.append(_list_text(item, _min_items(metadata)))
        elif origin is dict:
            _key, value = typing.get_args(member) or (str, Any)
            parts.append(f"mapping of names to {_plural(value)}")
        elif _is_model(member):
            parts.append("mapping")
        elif member in _SCALARS:
            text = _SCALARS[member][0]
            bounds = _bounds(metadata) if member in (int, float) else ""
            parts.append(f"{text} {bounds}" if bounds else text)
        else:
            parts.append(getattr(member, "__name__", str(member)))
    if literals:
        literal = literals[0] if len(literals) == 1 else "one of: " + ", ".join(literals)
        parts.insert(0, literal)
    # null reads last: "number or null"
    if "null" in parts:
        parts = [part for part in parts if part != "null"] + ["null"]
    return _join(list(dict.fromkeys(parts)))


def _plural(annotation: Any) -> str:
    names = []
    for member in _members(annotation):
        if member in _SCALARS:
            names.append(_SCALARS[member][1])
        elif _is_model(member):
            names.append("mappings")
        else:
            names.append(type_text(member))
    return _join(names)


def _list_text(item: Any, min_items: int | None) -> str:
    text = f"list of {_plural(item)}"
    return f"{text} (at least {min_items})" if min_items and min_items > 1 else text


# --- parameters ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """One spec field of a scan type: ``name`` is what a spec writes (``lambda``, not ``lam``;
    nested keys as ``protected.column`` or, in a list, ``groups[].name``)."""

    name: str
    type: str
    default: str
    description: str

    @property
    def depth(self) -> int:
        return self.name.count(".")


def _default(field: FieldInfo) -> str:
    """The default as JSON; ``required``; or, for settings whose keys are listed below them,
    ``each key's default``."""
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "each key's default"
    return json.dumps(value)


def _nested_models(annotation: Any) -> list[tuple[str, type[BaseModel]]]:
    """Models inside a field's type, each with the suffix its keys take: ``.`` or ``[].``."""
    found = []
    for member in _members(annotation):
        if typing.get_origin(member) is list:
            found += [("[].", model) for _, model in _nested_models(typing.get_args(member)[0])]
        elif _is_model(member):
            found.append((".", member))
    return found


def _fields(model: type[BaseModel], prefix: str, skip: frozenset[str]) -> list[Parameter]:
    rows: list[Parameter] = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        key = prefix + (field.alias or name)
        rows.append(
            Parameter(
                key,
                type_text(field.annotation, list(field.metadata)),
                _default(field),
                " ".join((field.description or "").split()),
            )
        )
        for suffix, nested in _nested_models(field.annotation):
            for row in _fields(nested, key + suffix, frozenset()):
                # the forms of a union may share a key (groups.min_size): list it once
                if all(row.name != seen.name for seen in rows):
                    rows.append(row)
    return rows


def parameters(type_: str) -> list[Parameter]:
    """Every field of the scan's spec model (nested keys after their parent), in order."""
    from fairscan.scans import SCAN_TYPES

    return _fields(SCAN_TYPES[type_].spec_model, "", frozenset({"type"}))


ROLE_TEXT = {
    "outcome": "outcome",
    "probability": "prediction (a probability in [0, 1])",
    "score": "prediction (any real-valued score)",
    "recommendation": "recommendation (a 0/1 column, or the prediction against a threshold)",
}


def needs_text(entry: ScanType) -> str:
    """The data roles a scan type needs, in words."""
    if entry.docs.needs:
        return entry.docs.needs
    if callable(entry.needs):
        return "depends on its settings (see the parameters below)"
    return ", ".join(ROLE_TEXT[role] for role in entry.needs)


# --- the explanation -----------------------------------------------------------------------


@dataclass(frozen=True)
class Explanation:
    """What ``audit explain`` says about a scan type, section by section."""

    type: str
    title: str
    what: str
    null_hypothesis: str | None
    needs: str
    parameters: list[Parameter]
    reading: str | None
    shared: str = SHARED_SETTINGS


def explanation(type_: str) -> Explanation:
    """The explanation of a registered scan type (raises KeyError if unknown)."""
    from fairscan.scans import SCAN_TYPES

    entry = SCAN_TYPES[type_]
    what, null = _null_hypothesis(entry.docs)
    return Explanation(
        type=entry.type,
        title=entry.docs.title,
        what=" ".join(what.split()),
        null_hypothesis=" ".join(null.split()) if null else None,
        needs=needs_text(entry),
        parameters=parameters(type_),
        reading=entry.docs.reading,
    )


def explain(type_: str) -> str:
    """Plain-text explanation of a registered scan type (raises KeyError if unknown)."""
    import textwrap

    info = explanation(type_)

    def wrap(text: str, indent: str) -> str:
        return textwrap.fill(text, width=92, initial_indent=indent, subsequent_indent=indent)

    lines = [f"{info.title} (type: {info.type})", "", "What it tests:", wrap(info.what, "  "), ""]
    if info.null_hypothesis:
        lines += ["Null hypothesis:", wrap(info.null_hypothesis, "  "), ""]
    lines += [
        textwrap.fill("Needs columns: " + info.needs, width=92, subsequent_indent="  "),
        "",
        "Parameters:",
    ]
    for param in info.parameters:
        indent = "  " + "  " * param.depth
        head = f"{param.name}: {param.type} (default: {param.default})"
        lines.append(
            textwrap.fill(head, width=92, initial_indent=indent, subsequent_indent=indent + "    ")
        )
        if param.description:
            lines.append(wrap(param.description, indent + "    "))
    if info.reading:
        lines += ["", "Reading the result:", wrap(info.reading, "  ")]
    lines += ["", "Shared settings:", wrap(info.shared, "  ")]
    return "\n".join(lines) + "\n"
