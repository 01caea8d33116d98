"""Rules the CLI reads from their one home (issue 37): the report formats from the format
registry, failures turned into messages and exit codes by ``cli_errors`` alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer
from cli_support import Invoke

from fairscan.cli.common import CommandFailed, cli_errors
from fairscan.cli.run import format_names
from fairscan.errors import SpecError
from fairscan.report.formats import FORMATS
from fairscan.report.verdict import ExitCode

CLI = Path(__file__).resolve().parents[2] / "src" / "fairscan" / "cli"


@pytest.mark.parametrize("command", ["run", "scan"])
def test_format_help_lists_the_registry_in_its_order(cli: Invoke, command: str) -> None:
    text = " ".join(cli(command, "--help", code=0).stdout.split())
    assert ", ".join(FORMATS) in text, text


def test_format_completion_is_the_registry() -> None:
    assert format_names("") == list(FORMATS)
    assert format_names("j") == [name for name in FORMATS if name.startswith("j")]


def test_cli_errors_prints_a_fairscan_error_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CommandFailed) as failed, cli_errors():
        raise SpecError("scans[0].type: unknown scan type 'x'", field="scans[0].type")
    assert failed.value.exit_code == ExitCode.ERROR and not failed.value.internal
    assert "spec error" in capsys.readouterr().err


def test_cli_errors_reports_a_bug_as_an_internal_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CommandFailed) as failed, cli_errors():
        raise ZeroDivisionError("boom")
    assert failed.value.exit_code == ExitCode.ERROR and failed.value.internal
    assert "internal error: ZeroDivisionError: boom" in capsys.readouterr().err


def test_cli_errors_lets_a_command_exit_pass() -> None:
    with pytest.raises(typer.Exit) as done, cli_errors():
        raise typer.Exit(1)
    assert type(done.value) is typer.Exit and done.value.exit_code == 1


def test_no_command_catches_fairscan_errors_by_hand() -> None:
    """Only cli_errors turns a FairscanError into an exit; scan.py's one arm rewords it."""
    arms = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and "FairscanError" in ast.unparse(
                node.type or ast.Name("")
            ):
                arms.append(f"{path.name}:{node.lineno}")
    assert [arm.split(":")[0] for arm in arms] == ["common.py", "scan.py"], arms
