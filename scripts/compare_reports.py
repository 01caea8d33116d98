r"""Compare two folders of fairscan reports, ignoring what legitimately varies between runs.

    python scripts/compare_reports.py BEFORE_DIR AFTER_DIR [--ignore-key KEY] [--mask REGEX]

``--ignore-key data_path --mask '`[^`]*\.csv`'`` also ignores where the data file lies (a
worktree whose ``build/`` is a link to another checkout's resolves it elsewhere).

Every report file of either folder is compared with its namesake in the other:

* ``*.json``: parsed, then the run-dependent keys are dropped wherever they occur (timings:
  ``timing`` and any ``*_seconds``; clock times ``utc_time`` and ``finished_utc_time``;
  versions: ``tool_version`` and ``environment``), and the rest compared exactly (floats bit
  for bit, through their JSON text);
* other text reports (``*.md``, ``*.html``, ``*.junit.xml``): compared line by line after the
  start time, the run time in seconds and the version on the provenance line are masked.

Prints one verdict per file (``same``, ``DIFFERENT`` with the first differing key or line,
``MISSING``) and exits 1 on any difference, 0 when every file is the same.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

# keys whose values depend on the machine, the clock or the installed versions
VOLATILE_KEYS = frozenset(
    {"timing", "utc_time", "finished_utc_time", "total_seconds", "tool_version", "environment"}
)
# text reports: ISO times, "0.99 s", "1.2 seconds", "fairscan 0.1.0"
_MASKS = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ?(s|seconds)\b"), "<seconds>"),
    (re.compile(r"fairscan \d+\.\d+\.\d+\S*"), "fairscan <version>"),
)


def strip_volatile(value: Any, ignored: frozenset[str]) -> Any:
    """``value`` without the keys in ``ignored`` (or ending in ``_seconds``), at any depth."""
    if isinstance(value, dict):
        return {
            key: strip_volatile(item, ignored)
            for key, item in value.items()
            if key not in ignored and not key.endswith("_seconds")
        }
    if isinstance(value, list):
        return [strip_volatile(item, ignored) for item in value]
    return value


def first_difference(before: Any, after: Any, where: str = "") -> str | None:
    """The path of the first value that differs (``scans[0].findings[2].p_value``), or None."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            if key not in before or key not in after:
                return f"{where}.{key} (only in {'after' if key in after else 'before'})"
            found = first_difference(before[key], after[key], f"{where}.{key}")
            if found:
                return found
        if list(before) != list(after):
            return f"{where} (key order)"
        return None
    if isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            found = first_difference(b, a, f"{where}[{i}]")
            if found:
                return found
        if len(before) != len(after):
            return f"{where} (length {len(before)} -> {len(after)})"
        return None
    # compare numbers through their JSON text: bit-identical floats, 1 != 1.0, True != 1
    if json.dumps(before) != json.dumps(after):
        return f"{where or '(top)'}: {json.dumps(before)[:60]} -> {json.dumps(after)[:60]}"
    return None


def compare_json(before: Path, after: Path, ignored: frozenset[str]) -> str | None:
    old = strip_volatile(json.loads(before.read_text(encoding="utf-8")), ignored)
    new = strip_volatile(json.loads(after.read_text(encoding="utf-8")), ignored)
    return first_difference(old, new)


def _masked(text: str, extra: tuple[re.Pattern[str], ...] = ()) -> list[str]:
    masks = (*_MASKS, *((pattern, "<masked>") for pattern in extra))
    lines = []
    for line in text.splitlines():
        for pattern, replacement in masks:
            line = pattern.sub(replacement, line)
        lines.append(line)
    return lines


def compare_text(before: Path, after: Path, masks: tuple[re.Pattern[str], ...] = ()) -> str | None:
    old = _masked(before.read_text(encoding="utf-8"), masks)
    new = _masked(after.read_text(encoding="utf-8"), masks)
    for i, (b, a) in enumerate(zip(old, new, strict=False), start=1):
        if b != a:
            return f"line {i}: {b[:70]!r} -> {a[:70]!r}"
    if len(old) != len(new):
        return f"{len(old)} -> {len(new)} lines"
    return None


def compare_dirs(
    before: Path,
    after: Path,
    ignored: frozenset[str] = VOLATILE_KEYS,
    masks: tuple[re.Pattern[str], ...] = (),
) -> list[tuple[str, str]]:
    """(file name, verdict) for every file in either folder, sorted by name."""
    names = sorted(
        {p.name for p in before.iterdir() if p.is_file()}
        | {p.name for p in after.iterdir() if p.is_file()}
    )
    verdicts = []
    for name in names:
        old, new = before / name, after / name
        if not old.exists() or not new.exists():
            verdicts.append((name, f"MISSING in {'before' if not old.exists() else 'after'}"))
            continue
        if name.endswith(".json"):
            difference = compare_json(old, new, ignored)
        else:
            difference = compare_text(old, new, masks)
        verdicts.append((name, "same" if difference is None else f"DIFFERENT: {difference}"))
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument(
        "--ignore-key", action="append", default=[], help="a further JSON key to ignore"
    )
    parser.add_argument(
        "--mask", action="append", default=[], help="a regex masked in text reports"
    )
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            print(f"not a folder: {folder}", file=sys.stderr)
            return 2
    masks = tuple(re.compile(pattern) for pattern in args.mask)
    verdicts = compare_dirs(args.before, args.after, VOLATILE_KEYS | set(args.ignore_key), masks)
    for name, verdict in verdicts:
        print(f"{name}: {verdict}")
    return 0 if all(verdict == "same" for _, verdict in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
