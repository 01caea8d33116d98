"""Issue 35 from the command line: `audit run` of a spec with `monitor:` over a series of runs
(exit codes from the monitor's alarms, `--exit-zero`), `audit validate`, `audit history`."""

from __future__ import annotations

from cli_support import Invoke, Project, line_of, spec_text

MONITORED = "output: {dir: reports, history: audits.sqlite}\nmonitor: {}\n"


def test_a_monitored_series_exits_on_the_monitors_alarms(project: Project, cli: Invoke) -> None:
    spec = project.spec(spec_text().replace("output: {dir: reports}\n", MONITORED))
    cli("validate", spec, "--no-data", code=0)
    project.data(seed=1)
    cli("run", spec, "--workers", "1", code=0)
    codes = []
    for seed in (2, 3, 4):  # the planted bias: region S and age group a
        project.data(seed=seed, bias=True)
        codes.append(cli("run", spec, "--workers", "1").code)
    assert 1 in codes and set(codes) <= {0, 1}, codes
    assert codes[-1] == 1  # a persisting alarm fails every run until it is resolved
    cli("run", spec, "--workers", "1", "--exit-zero", code=0)
    history = cli("history", project.root / "audits.sqlite", code=0).stdout
    assert "monitor synthetic / fpr: evidence for region = S and age_group = a" in history
    assert "monitor synthetic / calibration: evidence for the open scan" in history
    assert "ALARM (evidence)" in history and "  run 5  " in history


def test_monitor_without_history_is_refused_before_any_run(project: Project, cli: Invoke) -> None:
    text = spec_text() + "monitor: {alpha: 0.01}\n"
    spec = project.spec(text)
    project.data(seed=1)
    out = cli("run", spec, "--workers", "1", code=2)
    assert f"{spec.name}:{line_of(text, 'monitor:')}:" in out.output
    assert "monitor needs output.history" in out.output
    assert not (project.root / "reports").exists()
