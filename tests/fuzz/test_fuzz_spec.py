"""A fuzzing corpus of hostile specs, paths and parameters (issue 16).

Every case must end in exit 2 with a located message (``file:line:col:`` for a spec problem,
the flag or variable for a usage problem) and a ``help:`` line: never a traceback, an
"internal error", a hang or unbounded memory. The whole file runs in a few seconds.

* ``corpus/*.audit.yaml``: spec files; the first line ``# expect: TEXT`` names text the error
  output must contain. Each is run through ``audit validate --no-data``; the YAML bombs and
  deep nestings also through ``audit run``.
* the cases below: special files (a device, a FIFO, a huge file, a symlink loop, over-long
  names) as specs and as ``extends:`` parents, and bad command-line and environment overrides.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fairscan.cli import app

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES = sorted(CORPUS.glob("*.audit.yaml"))
ROOT = Path(__file__).resolve().parents[2]
SAMPLE_SPEC = ROOT / "audits" / "sample.audit.yaml"


def audit(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``audit ARGS`` in-process; (exit code, stderr + stdout)."""
    result = CliRunner().invoke(app, [str(a) for a in args], env=env)
    output = result.stderr + result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{result.exception!r}\n{output}"
    )
    return result.exit_code, output


def assert_clean_error(code: int, output: str, kind: str, where: str) -> None:
    assert code == 2, output
    assert "internal error" not in output, output
    assert "Traceback" not in output, output
    assert "RecursionError" not in output, output
    assert re.search(rf"^{kind} error: {re.escape(where)}", output, re.MULTILINE), output
    assert re.search(r"^  help: \S", output, re.MULTILINE), output
    assert len(output) < 20_000 or "unknown key" in output, output[:2000]


def expected_text(path: Path) -> str:
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first.startswith("# expect: "), path
    return first.removeprefix("# expect: ")


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".audit.yaml") for c in CASES])
def test_corpus_spec_is_a_located_spec_error(case: Path) -> None:
    code, output = audit("validate", "--no-data", case)
    assert_clean_error(code, output, "spec", f"{case}:")
    assert expected_text(case) in output, output[:2000]
    # a spec problem is located at a line and column, except for the file as a whole
    assert re.search(rf"^spec error: {re.escape(str(case))}:\d+:\d+: ", output, re.MULTILINE)


@pytest.mark.parametrize(
    "name", ["alias_bomb", "merge_key_bomb", "recursive_alias", "deep_lists", "deep_alias_chain"]
)
def test_yaml_bombs_do_not_hang_run(name: str, tmp_path: Path) -> None:
    case = CORPUS / f"{name}.audit.yaml"
    code, output = audit("run", "--out", tmp_path, case)
    assert_clean_error(code, output, "spec", f"{case}:")
    assert expected_text(case) in output


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 30


# -- special files ------------------------------------------------------------------------------


@pytest.fixture
def specials(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo.audit.yaml")
    (tmp_path / "loop.audit.yaml").symlink_to(tmp_path / "loop.audit.yaml")
    (tmp_path / "huge.audit.yaml").write_text("# padding\n" * 120_000)  # 1.2 MB
    (tmp_path / "csv.audit.yaml").write_text("a,b\n" + "1,2\n" * 20_000)
    return tmp_path


@pytest.mark.parametrize(
    ("target", "expect"),
    [
        ("/dev/zero", "not a regular file"),
        ("fifo.audit.yaml", "not a regular file"),
        ("loop.audit.yaml", "symbolic links"),
        ("huge.audit.yaml", "larger than the 1 MiB"),
        ("x" * 300 + ".audit.yaml", "File name too long"),
        ("d/" * 3000 + "x.audit.yaml", "too long"),
    ],
)
def test_special_files_as_specs(specials: Path, target: str, expect: str) -> None:
    path = target if target.startswith("/") else str(specials / target)
    code, output = audit("validate", "--no-data", path)
    assert_clean_error(code, output, "spec", path[:40])
    assert expect in output


@pytest.mark.parametrize(
    ("target", "expect"),
    [
        ("/dev/zero", "not a regular file"),
        ("fifo.audit.yaml", "not a regular file"),
        ("loop.audit.yaml", "cannot read the extended spec"),
        ("huge.audit.yaml", "larger than the 1 MiB"),
        ("csv.audit.yaml", "must be a mapping"),
        ("x" * 300 + ".yaml", "cannot read the extended spec"),
        ('"bad\\0name.yaml"', "cannot read the extended spec"),
    ],
)
def test_special_files_as_extends(specials: Path, target: str, expect: str) -> None:
    spec = specials / "child.audit.yaml"
    spec.write_text(f"extends: {target}\nversion: 1\n")
    code, output = audit("validate", "--no-data", spec)
    assert_clean_error(code, output, "spec", "")
    assert expect in output
    assert len(output) < 2_000, output  # the CSV is not echoed whole


# -- command-line and environment overrides -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "where", "expect"),
    [
        (["--replicates", "1000000000"], {}, "--replicates", "between 0 and 1,000,000"),
        (["--workers", "100000"], {}, "--workers", "between 1 and 256"),
        ([], {"FAIRSCAN_REPLICATES": ""}, "FAIRSCAN_REPLICATES", "set but empty"),
        ([], {"FAIRSCAN_WORKERS": ""}, "FAIRSCAN_WORKERS", "set but empty"),
        ([], {"FAIRSCAN_SEED": ""}, "FAIRSCAN_SEED", "set but empty"),
        ([], {"FAIRSCAN_WORKERS": "1000"}, "FAIRSCAN_WORKERS", "between 1 and 256"),
    ],
)
@pytest.mark.parametrize("command", ["run", "validate"])
def test_bad_overrides_are_usage_errors(
    command: str, args: list[str], env: dict[str, str], where: str, expect: str, tmp_path: Path
) -> None:
    extra = ["--out", str(tmp_path)] if command == "run" else ["--no-data"]
    code, output = audit(command, *extra, *args, SAMPLE_SPEC, env=env)
    assert_clean_error(code, output, "usage", f"{where}: ")
    assert expect in output
    assert not list(tmp_path.iterdir())  # nothing was run


def test_empty_out_is_a_usage_error() -> None:
    code, output = audit("run", "--out", "", SAMPLE_SPEC)
    assert_clean_error(code, output, "usage", "--out: ")
    assert "must not be empty" in output
