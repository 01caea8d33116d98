"""Defaults of the command-line options from ``[tool.fairscan]`` in ``pyproject.toml``.

The file is the nearest ``pyproject.toml`` holding a ``[tool.fairscan]`` table, found by walking
up from the working directory (as ruff and pytest find theirs; one file per command, whatever
folders its specs are in). Its keys are the options' long names without dashes (``format``,
``out``, ``seed``, ``replicates``, ``workers``, ``executor``, ``exit-zero``, ``progress``,
``quiet``, ``baseline``); each applies to every command that has the option, except ``format``,
``out`` and ``baseline``, which are ``audit run``'s only (``audit scan`` writes reports only when
its own command line asks).

Precedence, highest first: a flag on the command line, its ``FAIRSCAN_*`` environment
variable, ``[tool.fairscan]``, the spec file (a child over its ``extends`` parent), the
built-in defaults. The values are handed to click as the commands' ``default_map``, whose own
rule is exactly that order (command line > environment > default map > default).
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairscan.errors import Issue, UsageError
from fairscan.spec.constraints import REPLICATES, SEED, WORKERS

if TYPE_CHECKING:
    from fairscan.report.models import Override

TABLE = "tool.fairscan"
FILE_NAME = "pyproject.toml"


@dataclass(frozen=True)
class Setting:
    """One key of ``[tool.fairscan]``: the parameter it sets in each command that has it."""

    params: dict[str, str]  # command -> parameter name
    check: Callable[[Any], Any]  # the value as the option takes it, or ValueError(why)
    words: str  # what the value must be, for messages


def _integer(bounds: Any) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number, got {value!r}")
        why = bounds.violation(value)
        if why:
            raise ValueError(why)
        return value

    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected non-empty text, got {value!r}")
    return value


def _flag(value: Any) -> Any:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _formats(value: Any) -> Any:
    from fairscan.report.formats import FORMATS

    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"expected a format or a list of formats, got {value!r}")
    for name in names:
        if name not in FORMATS:
            raise ValueError(
                f"unknown report format {name!r}; the formats are: {', '.join(FORMATS)}"
            )
    return list(names)


_RUN_LIKE = ("run", "scan")
_ALL = ("run", "validate", "scan")

SETTINGS: dict[str, Setting] = {
    # audit run only: `audit scan` writes reports only when asked on its command line
    "format": Setting({"run": "formats"}, _formats, "json, markdown, ..."),
    "out": Setting({"run": "out_dir"}, _text, "a report folder"),
    "seed": Setting(dict.fromkeys(_ALL, "seed"), _integer(SEED), "a whole number >= 0"),
    "replicates": Setting(dict.fromkeys(_ALL, "replicates"), _integer(REPLICATES), "e.g. 999"),
    "workers": Setting(dict.fromkeys(_ALL, "workers"), _integer(WORKERS), "e.g. 4"),
    "executor": Setting(dict.fromkeys(_ALL, "executor"), _text, "local or dask://HOST:PORT"),
    "exit-zero": Setting(dict.fromkeys(_RUN_LIKE, "exit_zero"), _flag, "true or false"),
    "progress": Setting(dict.fromkeys(_RUN_LIKE, "progress"), _flag, "true or false"),
    "quiet": Setting(dict.fromkeys(_RUN_LIKE, "quiet"), _flag, "true or false"),
    "baseline": Setting({"run": "baseline"}, _text, "a JSON report's path"),
}


@dataclass(frozen=True)
class ProjectConfig:
    """``[tool.fairscan]`` of one ``pyproject.toml``."""

    path: Path
    values: dict[str, Any]

    def default_map(self) -> dict[str, dict[str, Any]]:
        """click's ``default_map``: command -> parameter -> default."""
        out: dict[str, dict[str, Any]] = {}
        for key, value in self.values.items():
            setting = SETTINGS[key]
            for command, param in setting.params.items():
                if key in ("out", "baseline"):
                    value = str(self._relative(value))
                out.setdefault(command, {})[param] = value
        return out

    def _relative(self, value: str) -> Path:
        """A path in the file is relative to the file's folder (as in a spec)."""
        path = Path(value).expanduser()
        if value == "-" or path.is_absolute():
            return path
        return Path(os.path.relpath(self.path.parent / path))


def _nearest(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest ``pyproject.toml`` whose parsed TOML has ``tool.fairscan``, with its
    document. The table is found by parsing, so that every form TOML allows counts (a
    ``[tool.fairscan]`` header, dotted keys ``tool.fairscan.seed = 1``, an inline table
    ``tool = {fairscan = {...}}``); a file on the way that cannot be read or parsed is a usage
    error naming it, never skipped (its table could be the one meant)."""
    for folder in (start, *start.parents):
        candidate = folder / FILE_NAME
        try:
            exists = candidate.is_file()
        except OSError:
            exists = True  # unreadable: reading it says why
        if not exists:
            continue
        document = _parse(candidate)
        tool = document.get("tool")
        if isinstance(tool, dict) and "fairscan" in tool:
            return candidate, document
    return None


def _parse(path: Path) -> dict[str, Any]:
    """The TOML document of ``path`` (UTF-8, a byte-order mark allowed); a UsageError naming
    the file, and the line when TOML says it, for a file that cannot be read or parsed."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise _file_error(path, f"cannot be read: {exc.strerror or exc}", None, None) from None
    except UnicodeDecodeError as exc:
        raise _file_error(
            path,
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            None,
            "save it as UTF-8 (TOML files are UTF-8)",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = (int(where.group(1)), int(where.group(2))) if where else None
        raise _file_error(path, f"not valid TOML: {exc}", line, "fix the TOML") from None


def _file_error(
    path: Path, message: str, at: tuple[int, int] | None, hint: str | None
) -> UsageError:
    line, col = at if at is not None else (None, None)
    issue = Issue(message, hint=hint or "fix or remove the file")
    return UsageError(issues=[issue.located(str(path), line, col)])


def load_config(start: Path | None = None) -> ProjectConfig | None:
    """``[tool.fairscan]`` of the nearest ``pyproject.toml`` (None when there is none); a
    :class:`~fairscan.errors.UsageError` naming the file (and key) for a file that cannot be
    read or parsed on the way up, or a bad value."""
    found = _nearest(start if start is not None else Path.cwd())
    if found is None:
        return None
    path, document = found
    table = document["tool"]["fairscan"]
    if not isinstance(table, dict):
        raise _error(path, "fairscan", "expected a table: [tool.fairscan]", None)
    values: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        setting = SETTINGS.get(key)
        if setting is None:
            close = difflib.get_close_matches(key, list(SETTINGS), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise _error(path, raw_key, "unknown key", f"{hint}the keys are: {', '.join(SETTINGS)}")
        try:
            values[key] = setting.check(value)
        except ValueError as why:
            raise _error(path, raw_key, str(why), f"give {setting.words}") from None
    return ProjectConfig(path=path, values=values)


def _error(path: Path, key: str, message: str, hint: str | None) -> UsageError:
    line = _line_of(path, key)
    issue = Issue(message, hint=hint, field=f"[{TABLE}] {key}")
    return UsageError(issues=[issue.located(str(path), line, 1 if line else None)])


def _line_of(path: Path, key: str) -> int | None:
    """The line of ``key =`` in the ``[tool.fairscan]`` table (for annotations and editors)."""
    try:
        lines = path.read_bytes().decode("utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    inside = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = re.match(r"\[\s*tool\s*\.\s*fairscan\s*\]", stripped) is not None
            continue
        if inside and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", stripped):
            return number
    # dotted keys (tool.fairscan.seed = 1) or an inline table ({fairscan = {seed = 1}})
    written = re.compile(rf"(^|[\s.{{,])[\"']?{re.escape(key)}[\"']?\s*=")
    return next((n for n, line in enumerate(lines, start=1) if written.search(line)), None)


# --- the settings a run takes from outside its spec ------------------------------------------

# parameter -> (key in [tool.fairscan], flag, FAIRSCAN_* variable): the settings that change
# the run (seed, replicates, workers, where the replicates run) or the gate (exit-zero, baseline)
RUN_SETTINGS: dict[str, tuple[str, str, str | None]] = {
    "seed": ("seed", "--seed", "FAIRSCAN_SEED"),
    "replicates": ("replicates", "--replicates", "FAIRSCAN_REPLICATES"),
    "workers": ("workers", "--workers", "FAIRSCAN_WORKERS"),
    "executor": ("executor", "--executor", "FAIRSCAN_EXECUTOR"),
    "exit_zero": ("exit-zero", "--exit-zero", None),
    "baseline": ("baseline", "--baseline", None),
}
CONFIG_META = "fairscan.config"  # where main_callback leaves the ProjectConfig in ctx.meta


def outside_settings(
    ctx: Any, values: dict[str, Any], *, flags: bool = True
) -> tuple[Override, ...]:
    """The settings among ``values`` (parameter -> value) that did not come from the spec or a
    built-in default, each with its source: ``PATH [tool.fairscan]``, the ``FAIRSCAN_*``
    variable, or the flag (when ``flags``: ``audit scan``'s flags are its spec)."""
    from fairscan.redact import shown_url
    from fairscan.report.models import Override

    config = ctx.meta.get(CONFIG_META)
    found: list[Override] = []
    for param, value in values.items():
        source = getattr(ctx.get_parameter_source(param), "name", "DEFAULT")
        if value is None or source == "DEFAULT" or (source == "COMMANDLINE" and not flags):
            continue
        key, flag, env = RUN_SETTINGS[param]
        where = {
            "ENVIRONMENT": env or flag,
            "DEFAULT_MAP": f"{config.path if config else FILE_NAME} [{TABLE}]",
        }.get(source, flag)
        shown = value if isinstance(value, bool | int) else shown_url(str(value))
        found.append(Override(key=key, value=shown, source=where))
    return tuple(found)
