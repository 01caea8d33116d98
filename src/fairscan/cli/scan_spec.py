"""The spec behind ``audit scan``: flags -> a spec mapping, and spec fields -> flags.

:func:`build_spec` checks what the flags can tell on their own (a registered ``--type``,
``KEY=VALUE`` shapes, flags that exclude each other) and builds the mapping a spec file would
hold. Everything else (field types, ranges, unknown settings, data columns) is checked by the
same spec models and data checks as ``audit run``; :class:`FlagMap` then rewrites each
:class:`~fairscan.errors.Issue` so that it names the flag (``--set penalty: ...``,
``--outcome: column 'x' is not in the data``) instead of a line of a file the user never wrote.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairscan.errors import FairscanError, Issue, UsageError, truncate

# spec field -> the flag that sets it (also used to reword messages that name spec fields)
FIELD_FLAGS = {
    "data.path": "DATA",
    "data.filter": "--filter",
    "columns.outcome": "--outcome",
    "columns.prediction": "--prediction",
    "columns.recommendation": "--recommendation",
    "columns.threshold": "--threshold",
    "columns.threshold_rule": "--threshold",
    "columns.positive": "--positive",
    "significance.seed": "--seed",
    "significance.replicates": "--replicates",
    "significance.alpha": "--alpha",
    "significance.workers": "--workers",
    "output.dir": "--out",
    "output.formats": "--format",
}
_FIELD_WORDS = re.compile(
    r"(?<![\w.])(" + "|".join(re.escape(f) for f in sorted(FIELD_FLAGS, key=len)[::-1]) + r")\b"
)
_IN_THE_SCAN = re.compile(r"`(\w+)` in the scan")  # "(or `prediction` in the scan)"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_KEY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_FIELD_PREFIX = re.compile(r"^([A-Za-z_][\w.\[\]\"-]*): ")


@dataclass(frozen=True)
class ScanFlags:
    """The flags of one ``audit scan`` that describe the audit (not how to run or print it)."""

    data: Path
    scan_type: str
    attributes: list[str]
    outcome: str | None = None
    prediction: str | None = None
    recommendation: str | None = None
    threshold: float | None = None
    positive: str | None = None
    protected: str | None = None
    settings: list[str] = field(default_factory=list)
    discretize: list[str] = field(default_factory=list)
    subgroups: list[str] = field(default_factory=list)  # --subgroup: given subgroups
    filter: str | None = None
    name: str | None = None
    alpha: float | None = None
    seed: int = 0
    replicates: int | None = None
    workers: int | None = None
    formats: list[str] = field(default_factory=list)


@dataclass
class FlagMap:
    """Maps spec field paths back to the flags that set them."""

    scan_type: str = ""
    name_given: bool = False
    protected_given: bool = False
    subgroups_given: bool = False
    settings: list[str] = field(default_factory=list)  # the --set keys, as given (dotted)

    def flag_of(self, field_path: str | None) -> str | None:
        """``scans[0].penalty`` -> ``--set penalty``; None for a field no flag sets."""
        from fairscan.spec.load import parse_field_path

        try:
            path = parse_field_path(field_path or "")
        except ValueError:
            return None
        if not path:
            return None
        head = path[0]
        if head == "name":
            return "--name" if self.name_given else "DATA"
        if head in ("data", "columns", "significance", "output"):
            dotted = f"{head}.{path[1]}" if len(path) > 1 else ""
            if dotted in FIELD_FLAGS:
                return FIELD_FLAGS[dotted]
            # `columns` as a whole: a role the scan needs is missing (the hint names the flag)
            return {"data": "DATA", "output": "--out", "columns": self.type_flag}.get(str(head))
        if head == "attributes":
            return "--attributes"
        if head == "discretize":
            return f"--discretize {path[1]}" if len(path) > 1 else "--discretize"
        if head == "scans":
            rest = [str(p) for p in path[2:]]
            if not rest or rest[0] == "type":
                return self.type_flag
            if rest[0] == "protected" and self.protected_given:
                return "--protected"
            if rest[0] == "subgroups" and self.subgroups_given:
                return "--subgroup"
            return self._setting_flag(rest)
        return None

    @property
    def type_flag(self) -> str:
        return f"--type {self.scan_type}" if self.scan_type else "--type"

    def _setting_flag(self, rest: list[str]) -> str:
        """The --set key that wrote the field (or a value inside it), else ``--set FIELD``."""
        for n in range(len(rest), 0, -1):
            if ".".join(rest[:n]) in self.settings:
                return f"--set {'.'.join(rest[:n])}"
        inside = [k for k in self.settings if k.startswith(".".join(rest) + ".")]
        if inside:
            return f"--set {inside[0]}"
        if rest[0] == "protected":
            return "--protected"
        return f"--set {rest[0]}"

    def _hint(self, issue: Issue, flag: str | None) -> str | None:
        hint = issue.hint
        if hint is not None and issue.column and "discretize:" in hint:
            return (
                f"bin it with --discretize {issue.column}=5 (5 equal-frequency bins) or "
                f"--discretize {issue.column}=EDGE,EDGE,... (explicit inner edges)"
            )
        if flag == "--protected" and not self.protected_given:
            return (
                "give the protected class with --protected COLUMN=VALUE, e.g. race=African-American"
            )
        if flag is not None and flag.startswith("--set "):
            explain = f"`audit explain {self.scan_type}` lists the settings of {self.scan_type}"
            if hint is None and flag.removeprefix("--set ") not in self.settings:
                return f"give it with --set KEY=VALUE; {explain}"  # a required setting
            if hint is not None and "`scans`" in hint:  # spec-file advice about nesting
                return explain
        return hint

    def issue(self, issue: Issue) -> Issue:
        """The issue naming the flag (an issue located in a file keeps its location: the
        data file's)."""
        flag = self.flag_of(issue.field)
        hint = self._hint(issue, flag)
        ours = issue.file is None
        return Issue(
            reword(issue.message),
            hint=reword(hint) if hint is not None else None,
            field=flag or issue.field,
            column=issue.column,
            file=None if ours else issue.file,
            line=None if ours else issue.line,
            col=None if ours else issue.col,
        )

    def error(self, error: FairscanError) -> FairscanError:
        return error.with_issues([self.issue(i) for i in error.issues])

    def text(self, message: str) -> str:
        """A rendered issue (a scan's ``error`` text) without the spec location, naming flags."""
        lines = []
        for line in message.splitlines():
            # the spec has no file (a mapping): an issue's line starts with its field path
            match = _FIELD_PREFIX.match(line)
            flag = self.flag_of(match.group(1)) if match else None
            if match and flag:
                line = f"{flag}: {line[match.end() :]}"
            lines.append(reword(line))
        return "\n".join(lines)


def reword(text: str) -> str:
    """``check data.path`` -> ``check DATA``: spec fields named in a message become flags."""
    text = _FIELD_WORDS.sub(lambda m: FIELD_FLAGS[m.group(1)], text)
    return _IN_THE_SCAN.sub(r"--set \1", text)


def yaml_value(text: str, flag: str) -> Any:
    """A flag value read as the same text in a spec file would be (numbers, true/false, text,
    flow lists and mappings such as ``[a, b]``), by the spec loader (a ``yaml.SafeLoader``)."""
    import yaml

    from fairscan.spec.loader import SpecLoader, _TooComplex

    try:
        return yaml.load(text, Loader=SpecLoader)
    except (_TooComplex, RecursionError) as exc:  # nested too deep, an alias bomb
        raise UsageError(
            f"cannot read {truncate(text)!r} as a value: {truncate(str(exc), 200)}",
            field=flag,
            hint="give a flat value (a number, a word, a short list or mapping)",
        ) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(
            f"cannot read {truncate(text)!r} as a value ({problem})",
            field=flag,
            hint="quote text that contains ': ', '#', '[' or '{', e.g. --set 'key=\"a: b\"'",
        ) from exc


def _put(entry: dict[str, Any], key: str, value: Any, flag: str) -> None:
    """``penalty`` or ``models.propensity`` = value, into the scan mapping."""
    *parents, last = key.split(".")
    node = entry
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UsageError(
                f"{part!r} is not a mapping, so {key!r} cannot be set",
                field=flag,
                hint=f"set {part} as a whole, e.g. --set '{part}={{...}}'",
            )
        node = child
    node[last] = value


# --set keys nested deeper than this are refused (scan settings nest two or three levels)
MAX_SET_DEPTH = 20


def parse_settings(settings: list[str], flags: FlagMap) -> dict[str, Any]:
    """``--set KEY=VALUE`` flags -> scan fields (the last of a repeated key wins)."""
    entry: dict[str, Any] = {}
    for item in settings:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(
                f"--set {item!r} is not KEY=VALUE",
                hint="e.g. --set penalty=1 --set restarts=100 (see `audit explain TYPE`)",
            )
        flag = f"--set {key}"
        if not _KEY.match(key):
            raise UsageError(
                f"{key!r} is not a setting name",
                field=flag,
                hint="a scan field, e.g. penalty, or a nested one, e.g. models.propensity",
            )
        if key.count(".") >= MAX_SET_DEPTH:
            raise UsageError(
                f"{truncate(key)!r} is nested more than {MAX_SET_DEPTH} levels deep",
                field=truncate(flag),
                hint="scan settings are nested a few levels at most, e.g. models.propensity",
            )
        if key.split(".")[0] == "type":
            raise UsageError("the scan type is given by --type", field=flag, hint="use --type")
        _put(entry, key, yaml_value(text.strip(), flag), flag)
        if key not in flags.settings:
            flags.settings.append(key)
    return entry


def parse_discretize(items: list[str]) -> dict[str, dict[str, Any]]:
    """``age=5`` -> ``{age: {quantiles: 5}}`` (a whole number: bins); ``age=25,45`` or
    ``score=0.5`` -> ``{age: {edges: [25, 45]}}`` (a list, or one number with a point: edges)."""
    out: dict[str, dict[str, Any]] = {}
    hint = "--discretize COLUMN=N (N equal-frequency bins) or COLUMN=E1,E2,... (inner edges; one edge: COLUMN=E,)"
    for item in items:
        column, sep, text = (part.strip() for part in item.partition("="))
        if not sep or not column or not text:
            raise UsageError(f"--discretize {item!r} is not COLUMN=BINS", hint=hint)
        try:
            out[column] = {"quantiles": int(text)}
        except ValueError:
            try:
                edges = [float(x) for x in text.split(",") if x.strip()]
            except ValueError:
                raise UsageError(
                    f"{text!r} is not a number of bins or a list of edges",
                    field=f"--discretize {column}",
                    hint=hint,
                ) from None
            out[column] = {"edges": [int(e) if e.is_integer() else e for e in edges]}
    return out


def check_type(scan_type: str) -> Any:
    """The registered scan type, or a UsageError with a did-you-mean."""
    from fairscan.scans import SCAN_TYPES

    if scan_type in SCAN_TYPES:
        return SCAN_TYPES[scan_type]
    close = closest_type(scan_type)
    raise UsageError(
        f"unknown scan type {scan_type!r}",
        field="--type",
        hint=(f"did you mean {close!r}? " if close else "")
        + f"valid types: {', '.join(SCAN_TYPES)} (`audit explain TYPE` describes one)",
    )


def _takes_attribute_groups(entry: Any) -> bool:
    """The scan type needs ``groups`` and accepts ``{attributes: [...]}`` for them."""
    import typing

    field = entry.spec_model.model_fields.get("groups")
    if field is None or not field.is_required():
        return False
    members = typing.get_args(field.annotation) or (field.annotation,)
    return any(
        "attributes" in getattr(member, "model_fields", {})
        and getattr(member, "model_fields", {})["attributes"].is_required()
        for member in members
    )


def scan_type_names(incomplete: str) -> list[str]:
    """Shell completion of a scan type: the registered types."""
    from fairscan.scans import SCAN_TYPES

    return [name for name in SCAN_TYPES if name.startswith(incomplete)]


def closest_type(name: str) -> str | None:
    """The registered scan type ``name`` most likely meant: a close spelling (difflib), the
    same name in other case, or the one type it abbreviates (``fpr`` -> ``fpr_scan``)."""
    from fairscan.scans import SCAN_TYPES

    types = list(SCAN_TYPES)
    lowered = name.strip().lower().replace("-", "_")
    if lowered in SCAN_TYPES:
        return lowered
    close = difflib.get_close_matches(lowered, types, n=1)
    if close:
        return close[0]
    starting = [t for t in types if lowered and t.startswith(lowered)]
    return starting[0] if len(starting) == 1 else None


def _protected(scan_type: str, entry: Any, text: str) -> dict[str, Any]:
    from fairscan.scans import SCAN_TYPES

    if "protected" not in entry.spec_model.model_fields:
        having = [t for t, e in SCAN_TYPES.items() if "protected" in e.spec_model.model_fields]
        raise UsageError(
            f"scan type {scan_type} has no protected class",
            field="--protected",
            hint=f"--protected is for {', '.join(having)}; {scan_type} scans every subgroup "
            "of --attributes (drop --protected)",
        )
    column, sep, value = (part.strip() for part in text.partition("="))
    if not sep or not column or not value:
        raise UsageError(
            f"--protected {text!r} is not COLUMN=VALUE",
            hint="e.g. --protected race=African-American",
        )
    # a string: the scan compares it with the column's text, or as a number with a numeric one
    return {"column": column, "value": value}


def _check_flags(f: ScanFlags) -> list[str]:
    """The checks no spec model can word in flags; returns the attribute names."""
    if not f.data.exists():
        raise UsageError(
            f"data file {str(f.data)!r} does not exist",
            field="DATA",
            hint="check the path (relative paths are relative to the current directory)",
        )
    if not f.data.is_file():
        raise UsageError(f"{str(f.data)!r} is not a file", field="DATA", hint="give one data file")
    names = [a.strip() for item in f.attributes for a in item.split(",") if a.strip()]
    if not names:
        raise UsageError(
            "no attributes given",
            field="--attributes",
            hint="comma-separated columns whose combinations form the subgroups, e.g. sex,race",
        )
    if f.recommendation is not None and f.threshold is not None:
        raise UsageError(
            "give either --recommendation or --threshold, not both",
            field="--threshold",
            hint="--threshold T derives the recommendation as --prediction >= T",
        )
    if f.threshold is not None and f.prediction is None:
        raise UsageError(
            "--threshold derives the recommendation from the prediction column",
            field="--threshold",
            hint="give --prediction COLUMN",
        )
    if f.positive is not None and f.outcome is None:
        raise UsageError(
            "--positive names the positive label of the outcome column",
            field="--positive",
            hint="give --outcome COLUMN",
        )
    return names


def default_name(data: Path, scan_id: str) -> str:
    """``build/compas.csv`` and ``fpr`` -> ``compas-fpr`` (a valid audit name)."""
    return _NAME_CHARS.sub("-", f"{data.stem}-{scan_id}").strip("-._") or "scan"


@dataclass
class SpecPlan:
    """The spec the flags describe (data path absolute) and the way back to the flags."""

    spec: dict[str, Any]
    flags: FlagMap
    data: Path


def build_spec(f: ScanFlags) -> SpecPlan:
    """Check the flags on their own and build the spec mapping (raises UsageError)."""
    entry = check_type(f.scan_type)
    names = _check_flags(f)
    flags = FlagMap(
        scan_type=f.scan_type,
        name_given=f.name is not None,
        protected_given=f.protected is not None,
        subgroups_given=bool(f.subgroups),
    )
    # fpr_scan -> id fpr, as in the shipped specs (a scan's random stream is keyed by its id)
    scan: dict[str, Any] = {"id": f.scan_type.removesuffix("_scan"), "type": f.scan_type}
    if f.protected is not None:
        scan["protected"] = _protected(f.scan_type, entry, f.protected)
    settings = parse_settings(f.settings, flags)
    if "protected" in settings and f.protected is not None:
        raise UsageError(
            "the protected class is given twice",
            field="--set protected",
            hint="use either --protected COLUMN=VALUE or --set protected=...",
        )
    scan.update(settings)
    if _takes_attribute_groups(entry) and "groups" not in scan:
        # certify and flag: the groups are the intersections of --attributes (given once)
        scan["groups"] = {"attributes": list(names)}
    if f.subgroups:
        if "subgroups" in settings:
            raise UsageError(
                "the subgroups are given twice",
                field="--subgroup",
                hint="use either --subgroup FILTER (repeatable) or --set subgroups=[...]",
            )
        scan["subgroups"] = list(f.subgroups)
    threshold: float | int | None = f.threshold
    if f.threshold is not None and f.threshold.is_integer():
        threshold = int(f.threshold)  # `threshold: 5` in the saved spec, not 5.0
    columns = {
        key: value
        for key, value in (
            ("outcome", f.outcome),
            ("positive", yaml_value(f.positive, "--positive") if f.positive is not None else None),
            ("prediction", f.prediction),
            ("recommendation", f.recommendation),
            ("threshold", threshold),
        )
        if value is not None
    }
    data = f.data.resolve()
    spec: dict[str, Any] = {
        "version": 1,
        "name": f.name if f.name is not None else default_name(f.data, str(scan["id"])),
        "data": {"path": str(data), **({"filter": f.filter} if f.filter is not None else {})},
        "columns": columns,
        "attributes": names,
    }
    if f.discretize:
        spec["discretize"] = parse_discretize(f.discretize)
    spec["scans"] = [scan]
    significance = {
        "seed": f.seed,
        "replicates": f.replicates,
        "alpha": f.alpha,
        "workers": f.workers,
    }
    spec["significance"] = {k: v for k, v in significance.items() if v is not None}
    if f.formats:
        spec["output"] = {"formats": list(f.formats)}
    return SpecPlan(spec=spec, flags=flags, data=data)


def spec_text(spec: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(
        spec, sort_keys=False, allow_unicode=True, default_flow_style=None, width=1000
    )


def saved_spec_text(plan: SpecPlan, target: Path, out_dir: Path | None) -> str:
    """The spec as a file at ``target``: paths relative to its folder, a header comment."""
    folder = target.resolve().parent
    spec = dict(plan.spec)
    spec["data"] = {**spec["data"], "path": _relative(plan.data, folder)}
    if out_dir is not None:
        spec["output"] = {"dir": _relative(out_dir.resolve(), folder), **spec.get("output", {})}
    header = (
        f"# Written by `audit scan --save-spec`: `audit run {target.name}` reproduces the "
        "scan (same seed, same findings).\n"
    )
    return header + spec_text(spec)


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` when they share a folder below the root (a project:
    ``../build/compas.csv``), else absolute (``/data/x.csv``, not ``../../../data/x.csv``)."""
    try:
        shared = Path(os.path.commonpath([path, folder]))
    except ValueError:  # another drive (Windows)
        return path.as_posix()
    if shared == Path(shared.anchor):
        return path.as_posix()
    return Path(os.path.relpath(path, folder)).as_posix()
