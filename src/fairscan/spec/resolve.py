"""Spec inheritance and defaults, applied to the raw YAML before validation.

* ``extends: ../base.audit.yaml`` (one parent, relative to the spec that names it, chains
  allowed): the parent is loaded first and the child is deep-merged over it. Mappings merge
  key by key; lists and scalars of the child replace the parent's. A cycle is an error that
  shows the chain. The data source is the exception: a child that names one
  (``data.path``, ``data.connection``, ``data.table``, ``data.sql``) replaces the parent's
  source of another kind instead of merging with it (:data:`REPLACED_SOURCE`), so a child may
  move a parent's file audit to a database table and back.
* ``defaults: {penalty: 0.5, restarts: 50}``: each key is given to every scan whose spec model
  has that field and that does not set it.

Precedence (highest first): command-line flag > ``FAIRSCAN_*`` environment variable (both
applied by the CLI) > the spec (the child over its parents) > ``defaults:`` > built-in default.

The merged :class:`Positions` tree keeps the nodes of the file each value was written in, and
``origins`` maps each node to that file, so errors point at the file holding the offending key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from fairscan.errors import Issue, SpecError, truncate
from fairscan.spec.loader import Positions, UnreadableSpec, load_spec_text, read_spec_bytes

Origins = dict[int, str]  # id(Positions node) -> file name


def _mark(node: Positions, name: str, origins: Origins) -> None:
    """Map every node of a file's position tree to ``name``: iteratively, each node once
    (nodes shared through YAML aliases are not walked again)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        origins[id(current)] = name
        stack.extend(current.values.values())
        stack.extend(current.items)


# data key the child gives -> the parent's data keys it replaces (the other kinds of source and
# their settings); a key given as null counts as given (``path: null`` removes the parent's)
REPLACED_SOURCE: dict[str, tuple[str, ...]] = {
    "path": ("connection", "table", "sql", "allow_file_access"),
    "connection": ("path", "streaming"),
    "table": ("path", "streaming", "sql"),
    "sql": ("path", "streaming", "table"),
}


def _without_replaced_source(
    base: dict[str, Any], base_pos: Positions, over: dict[str, Any], origins: Origins
) -> tuple[dict[str, Any], Positions]:
    """The parent (``base``) less the data-source keys that the child's ``data`` replaces."""
    parent_data, child_data = base.get("data"), over.get("data")
    if not (isinstance(parent_data, dict) and isinstance(child_data, dict)):
        return base, base_pos
    dropped = {
        key
        for given in child_data
        for key in REPLACED_SOURCE.get(given, ())
        if key not in child_data and key in parent_data
    }
    if not dropped:
        return base, base_pos
    kept = {key: value for key, value in parent_data.items() if key not in dropped}
    data_pos = base_pos.values.get("data")
    if data_pos is not None:
        trimmed = replace(
            data_pos,
            keys={k: v for k, v in data_pos.keys.items() if k not in dropped},
            values={k: v for k, v in data_pos.values.items() if k not in dropped},
        )
        origins[id(trimmed)] = origins.get(id(data_pos), "")
        base_pos = replace(base_pos, values={**base_pos.values, "data": trimmed})
        origins[id(base_pos)] = origins.get(id(data_pos), "")
    return {**base, "data": kept}, base_pos


def _merge(
    base: Any, base_pos: Positions, over: Any, over_pos: Positions, origins: Origins
) -> tuple[Any, Positions]:
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return over, over_pos
    raw = dict(base)
    pos = Positions(
        line=over_pos.line,
        col=over_pos.col,
        kind="mapping",
        keys=dict(base_pos.keys),
        values=dict(base_pos.values),
    )
    origins[id(pos)] = origins.get(id(over_pos), "")
    for key, value in over.items():
        child_pos = over_pos.values.get(key, over_pos)
        if key in base and isinstance(base[key], dict) and isinstance(value, dict):
            raw[key], pos.values[key] = _merge(
                base[key], base_pos.values.get(key, base_pos), value, child_pos, origins
            )
        else:
            raw[key] = value
            pos.values[key] = child_pos
        if key in over_pos.keys:
            pos.keys[key] = over_pos.keys[key]
    return raw, pos


def _extends_issue(message: str, name: str, positions: Positions, hint: str | None) -> SpecError:
    line, col = positions.locate(("extends",))
    return SpecError(
        issues=[Issue(message, hint=hint, field="extends", file=name, line=line, col=col)]
    )


def resolve_extends(
    raw: dict[str, Any], positions: Positions, path: Path, name: str
) -> tuple[dict[str, Any], Positions, Origins, list[str]]:
    """Merge the ``extends`` chain of a loaded spec: (raw, positions, origins, chain of files)."""
    origins: Origins = {}
    _mark(positions, name, origins)
    chain = [name]
    seen = [path.resolve()]
    parent_ref = raw.get("extends")
    layers = [(raw, positions, path, name)]
    while isinstance(parent_ref, str):
        _, child_pos, child_path, child_name = layers[-1]
        shown = truncate(str(child_path.parent / parent_ref), 200)
        try:
            parent_path = (child_path.parent / parent_ref).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
            raise _extends_issue(
                f"cannot read the extended spec {shown}: {truncate(str(exc))}",
                child_name,
                child_pos,
                "extends names a spec file, relative to the spec file that names it",
            ) from None
        if parent_path in seen:
            cycle = " -> ".join([*chain, shown])
            raise _extends_issue(
                f"extends cycle: {cycle}", child_name, child_pos, "remove one of the extends"
            )
        try:
            text = read_spec_bytes(parent_path).decode("utf-8")
        except UnreadableSpec as exc:
            raise _extends_issue(
                f"cannot read the extended spec {shown}: {exc.reason}",
                child_name,
                child_pos,
                exc.hint,
            ) from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = truncate(getattr(exc, "strerror", None) or str(exc))
            raise _extends_issue(
                f"cannot read the extended spec {shown}: {reason}",
                child_name,
                child_pos,
                "extends is relative to the spec file that names it",
            ) from exc
        parent_raw, parent_pos = load_spec_text(text.removeprefix("\ufeff"), shown)
        _mark(parent_pos, shown, origins)
        layers.append((parent_raw, parent_pos, Path(shown), shown))
        chain.append(shown)
        seen.append(parent_path)
        parent_ref = parent_raw.get("extends")
    merged_raw, merged_pos = layers[-1][0], layers[-1][1]
    for layer_raw, layer_pos, _, _ in reversed(layers[:-1]):
        if isinstance(merged_raw, dict) and isinstance(layer_raw, dict):
            merged_raw, merged_pos = _without_replaced_source(
                merged_raw, merged_pos, layer_raw, origins
            )
        merged_raw, merged_pos = _merge(merged_raw, merged_pos, layer_raw, layer_pos, origins)
    return merged_raw, merged_pos, origins, chain


def apply_defaults(
    raw: dict[str, Any], scan_models: Mapping[str, type[BaseModel]]
) -> dict[str, Any]:
    """Give each ``defaults:`` key to every scan that has that field and does not set it.

    ``scan_models`` maps each scan ``type`` to its spec model.
    """
    defaults = raw.get("defaults")
    scans = raw.get("scans")
    if not isinstance(defaults, dict) or not isinstance(scans, list):
        return raw
    out_scans = []
    for scan in scans:
        model = scan_models.get(str(scan.get("type"))) if isinstance(scan, dict) else None
        if model is None:
            out_scans.append(scan)
            continue
        fields = model.model_fields
        filled = dict(scan)
        for key, value in defaults.items():
            if key in fields and key not in ("id", "type") and key not in filled:
                filled[key] = value
        out_scans.append(filled)
    return {**raw, "scans": out_scans}
