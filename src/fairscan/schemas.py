"""JSON Schemas of the audit spec and of the JSON report, generated from the pydantic models.

The generated files are committed under ``schemas/``; a test regenerates them and fails when
they are stale. Regenerate with::

    python -m fairscan.schemas [DIR]      # default DIR: the repository's schemas/
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fairscan.report.verdict import ExitCode

__all__ = [
    "REPORT_SCHEMA_FILE",
    "SPEC_SCHEMA_FILE",
    "default_schema_dir",
    "render_schema",
    "report_json_schema",
    "spec_json_schema",
    "write_schemas",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SPEC_SCHEMA_FILE = "audit-spec.schema.json"
REPORT_SCHEMA_FILE = "report.schema.json"
# Where the committed files are published; the same URL as the modeline `audit init` writes.
SCHEMA_BASE_URL = "https://raw.githubusercontent.com/fairscan/fairscan/main/schemas/"
SPEC_SCHEMA_ID = SCHEMA_BASE_URL + SPEC_SCHEMA_FILE
REPORT_SCHEMA_ID = SCHEMA_BASE_URL + REPORT_SCHEMA_FILE


def spec_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the audit spec file, version 1."""
    from fairscan.scans import AUDIT_SPEC

    schema = AUDIT_SPEC.model_json_schema(mode="validation")
    return _with_header(
        schema,
        schema_id=SPEC_SCHEMA_ID,
        title="fairscan audit spec (version 1)",
        description=(
            "An audit spec (*.audit.yaml): the data, its columns, the attributes whose value "
            "combinations form subgroups, and the scans to run."
        ),
    )


def report_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the JSON report, as written (serialization mode)."""
    from fairscan.report.models import REPORT_SCHEMA_VERSION, AuditReport

    schema = AuditReport.model_json_schema(mode="serialization")
    return _with_header(
        schema,
        schema_id=REPORT_SCHEMA_ID,
        title=f"fairscan audit report (schema_version {REPORT_SCHEMA_VERSION})",
        description="The JSON report written by `audit run`.",
    )


def _with_header(
    schema: dict[str, Any], *, schema_id: str, title: str, description: str
) -> dict[str, Any]:
    header = {"$schema": JSON_SCHEMA_DIALECT, "$id": schema_id, "title": title}
    if "description" not in schema:
        header["description"] = description
    return {**header, **{k: v for k, v in schema.items() if k not in header}}


def render_schema(schema: dict[str, Any]) -> str:
    """The exact text of a committed schema file."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def expected_schema_files() -> dict[str, str]:
    """File name -> expected content, for writing and for the staleness test."""
    return {
        SPEC_SCHEMA_FILE: render_schema(spec_json_schema()),
        REPORT_SCHEMA_FILE: render_schema(report_json_schema()),
    }


def write_schemas(directory: Path) -> list[Path]:
    """Write ``audit-spec.schema.json`` and ``report.schema.json`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in expected_schema_files().items():
        target = directory / name
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        written.append(target)
    return written


def default_schema_dir() -> Path:
    """``schemas/`` of the source checkout (falls back to ``./schemas``)."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return root / "schemas"
    return Path.cwd() / "schemas"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print("usage: python -m fairscan.schemas [DIR]", file=sys.stderr)
        asked = bool(args) and args[0] in ("-h", "--help")
        return int(ExitCode.OK) if asked else int(ExitCode.ERROR)
    directory = Path(args[0]) if args else default_schema_dir()
    for path in write_schemas(directory):
        print(f"wrote {path}", file=sys.stderr)
    return int(ExitCode.OK)


if __name__ == "__main__":
    raise SystemExit(main())
