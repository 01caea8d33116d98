"""No data or spec text becomes a GitHub workflow command (issue 34): under
``GITHUB_ACTIONS=true`` a value, a column name, a report folder, a spec file name or a label
read back by ``audit history`` holding ``\\n::stop-commands::TOKEN``, ``::add-mask::`` or
``##[error]`` is printed on one line and inert, while fairscan's own annotations stay live.

The runner's rules (actions/runner ``ActionCommand``): a line is a command when it starts with
``::`` once its leading whitespace is trimmed, or holds ``##[name]`` anywhere; it splits the
output into lines at ``\\n`` and ``\\r``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import Invoke, Project, spec_text, synthetic_frame

from fairscan.cli.github import CommandGuard
from fairscan.report.sink_escape import console_text, workflow_command_free

STOP = "\n::stop-commands::TOKEN34"
MASK = "\r::add-mask::SECRET34"
LEGACY = " ##[error]legacy34"
# fairscan's own annotations: `::error ...title=fairscan ...::message` (properties escaped)
OWN = re.compile(r"^::(error|warning|notice) [^:]*title=fairscan[^:]*::")


def live_commands(text: str) -> list[str]:
    """The lines of ``text`` the runner would run as workflow commands, but fairscan's own (a
    line is one command: ``##[`` in the message of an annotation is its text)."""
    lines = re.split(r"\r\n|\r|\n", text)
    return [
        line
        for line in lines
        if not OWN.match(line) and (line.lstrip().startswith("::") or "##[" in line)
    ]


def own_annotations(text: str) -> list[str]:
    """fairscan's annotations in ``text``, split into lines as the runner splits them."""
    return [line for line in re.split(r"\r\n|\r|\n", text) if OWN.match(line)]


@pytest.fixture(autouse=True)
def _in_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")


def _hostile_data(project: Project) -> None:
    """The biased subgroup (region S, age group a) with commands in its values."""
    frame = synthetic_frame(bias=True)
    frame = frame.with_columns(
        frame["region"].replace({"S": f"S{STOP}"}),
        frame["age_group"].replace({"a": f"a{MASK}{LEGACY}"}),
    )
    project.data(frame=frame)


def test_data_values_print_no_command(project: Project, cli: Invoke) -> None:
    _hostile_data(project)
    spec = project.spec(spec_text())
    outcome = cli("run", spec, "--no-progress", code=1)
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stderr
    # the finding is shown, on one line, with its values readable
    assert "S\\n::stop-commands::TOKEN34" in outcome.stderr
    # fairscan's own annotation of the finding is there (and no stop-commands before it)
    annotations = own_annotations(outcome.stderr)
    assert any("TOKEN34" in a for a in annotations), outcome.stderr


def test_column_names_print_no_command(project: Project, cli: Invoke) -> None:
    frame = synthetic_frame(bias=True).rename({"region": f"region{STOP}"})
    project.data(frame=frame)
    name = f"region{STOP}".replace("\n", "\\n")
    text = spec_text().replace("[sex, region, age_group]", f'[sex, "{name}", age_group]')
    spec = project.spec(text)
    outcome = cli("run", spec, "--no-progress", code=1)
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stderr
    assert own_annotations(outcome.stderr)
    # a missing column of that name: the error message quotes it on one line
    missing = text.replace(f'"{name}"', f'"other{STOP}{LEGACY}"')
    outcome = cli("run", project.spec(missing, "missing.audit.yaml"), "--no-progress", code=2)
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stderr
    assert own_annotations(outcome.stderr)  # the error's annotation at the spec's line


def test_report_folder_and_spec_name_print_no_command(project: Project, cli: Invoke) -> None:
    project.data(bias=True)
    spec = project.spec(spec_text(), f"x{STOP}.audit.yaml")
    out = project.root / f"reports{STOP}{LEGACY}"
    outcome = cli("run", spec, "--out", out, "--no-progress", code=1)
    assert "Reports: " in outcome.stderr
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stderr
    outcome = cli("validate", spec, code=0)
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stderr
    assert "x\\n::stop-commands::TOKEN34.audit.yaml" in outcome.stderr


def test_history_labels_print_no_command(project: Project, cli: Invoke) -> None:
    _hostile_data(project)
    text = spec_text().replace("output: {dir: reports}", "output: {dir: reports, history: h.db}")
    spec = project.spec(text)
    cli("run", spec, "--no-progress", code=1)
    outcome = cli("history", project.root / "h.db", code=0)
    assert "TOKEN34" in outcome.stdout
    assert live_commands(outcome.stdout + "\n" + outcome.stderr) == [], outcome.stdout


@pytest.mark.parametrize(
    "text",
    [
        "::add-mask::x",
        "  ::error::x",
        "\t::warning::x",
        "\u2028::add-mask::x",
        "\xa0::add-mask::x",
        "\x1b[1m::add-mask::x",
        "ok\n::stop-commands::T",
        "ok\r::stop-commands::T",
        "ok\r\n  ::stop-commands::T",
        "a ##[error]x",
        "##[add-mask]x",
        "x\n\n::a::b\n::c::d",
    ],
)
def test_guard_leaves_no_command(text: str) -> None:
    assert live_commands(workflow_command_free(text)) == []


def test_guard_keeps_other_text() -> None:
    assert workflow_command_free("a::b, 10:30 ## [x]") == "a::b, 10:30 ## [x]"
    assert workflow_command_free("::x::y") == "\\u003a:x::y"
    # the escapes are valid in a JSON string and decode to the same value
    import json

    assert json.loads(workflow_command_free(json.dumps(["##[x]"]))) == ["##[x]"]


def test_console_text_is_one_line() -> None:
    for brk in ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"):
        assert len(f"a{console_text(f'x{brk}y')}b".splitlines()) == 1
    assert console_text("a\nb\rc\td") == "a\\nb\\rc\td"


def test_command_guard_passes_other_calls_through(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    with path.open("w", encoding="utf-8") as handle:
        guard = CommandGuard(handle)
        assert guard.write("ok\n::add-mask::x\n") == len("ok\n::add-mask::x\n")
        guard.writelines(["##[error]y\n"])
        guard.flush()
        assert guard.isatty() is False
    assert path.read_text(encoding="utf-8") == "ok\n\\u003a:add-mask::x\n\\u0023#[error]y\n"


@pytest.mark.slow
def test_the_audit_process_prints_no_command(project: Project) -> None:
    """The real entry point (``main()`` guards the streams before anything is printed), with a
    value in the data and a missing spec path that click itself reports."""
    import os
    import subprocess
    import sys

    _hostile_data(project)
    spec = project.spec(spec_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRSCAN_", "GITHUB_"))}
    env["GITHUB_ACTIONS"] = "true"
    command = [sys.executable, "-m", "fairscan.cli", "run", "--no-progress"]
    for args, code in (([spec.name, "--workers", "1"], 1), ([f"none{STOP}{LEGACY}.yaml"], 2)):
        done = subprocess.run(
            [*command, *args], cwd=project.root, capture_output=True, text=True, env=env
        )
        assert done.returncode == code, done.stderr
        assert live_commands(done.stdout + "\n" + done.stderr) == [], done.stderr
        if code == 1:
            assert any("TOKEN34" in a for a in own_annotations(done.stderr)), done.stderr
