"""The spec's ``monitor:`` block end to end: a series of ``audit run`` on seeded data, the
evidence in the history, the exit code from the monitor's alarms, ``audit history``."""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy.special import logsumexp
from scipy.stats import nchypergeom_fisher
from typer.testing import CliRunner

from fairscan.cli import app
from fairscan.engine import evidence
from fairscan.report.verdict import ExitCode, monitored_exit_code
from fairscan.run.execute import run_audit
from fairscan.run.history import read_monitor, run_count
from fairscan.run.options import RunOptions

# the biased subgroup of the seeded tables: a quarter of the rows
BIASED = {"a": ["a1"]}

SPEC = """\
version: 1
name: monitored
data: {{path: run.csv}}
columns: {{outcome: y, prediction: p, recommendation: flag}}
attributes: [a, b]
scans:
{scans}
significance: {{replicates: 19, seed: 3}}
output: {{dir: reports, formats: [json], history: history.sqlite}}
gate: {{fail_on: {fail_on}}}
monitor: {monitor}
"""
FPR = "  - {id: fpr, type: fpr_scan, restarts: 2}"
CALIBRATION = "  - {id: calibration, type: bias_scan, direction: positive, restarts: 2}"


def table(seed: int, n: int = 3000, fpr_odds: float = 1.0, calibration_odds: float = 1.0):
    """A seeded table: attributes a (a1..a4) and b (b1..b3); y ~ Bernoulli(p) with p the
    model's probability (calibrated), flag ~ Bernoulli(0.15) whatever y is. Inside a = a1 the
    odds of flag (``fpr_odds``) and of y (``calibration_odds``) are multiplied: 1 = fair."""
    rng = np.random.default_rng(seed)
    a = rng.choice(["a1", "a2", "a3", "a4"], n)
    b = rng.choice(["b1", "b2", "b3"], n)
    p = np.round(1.0 / (1.0 + np.exp(-rng.normal(-1.0, 1.0, n))), 6)
    inside = a == "a1"

    def odds_times(q: np.ndarray | float, factor: float) -> np.ndarray:
        return np.where(inside, q * factor / (1.0 - q + q * factor), q)

    y = (rng.random(n) < odds_times(p, calibration_odds)).astype(np.int64)
    flag = (rng.random(n) < odds_times(0.15, fpr_odds)).astype(np.int64)
    return pl.DataFrame({"a": a, "b": b, "y": y, "p": p, "flag": flag})


def write_spec(root: Path, *, scans: str = FPR, fail_on: str = "significant", monitor: str = "{}"):
    spec = root / "monitored.audit.yaml"
    spec.write_text(SPEC.format(scans=scans, fail_on=fail_on, monitor=monitor), encoding="utf-8")
    return spec


def monitor_line(spec: Path) -> int:
    """The line of the spec's ``monitor:`` block (where its errors point)."""
    lines = spec.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith("monitor:"))


def audit(spec: Path, frame: pl.DataFrame) -> tuple[int, dict[str, Any]]:
    """One ``audit run`` of ``frame``: its exit code and JSON report."""
    frame.write_csv(spec.parent / "run.csv")
    result = CliRunner().invoke(app, ["run", str(spec), "--workers", "1"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads((spec.parent / "reports" / "monitored.json").read_text(encoding="utf-8"))
    return result.exit_code, report


def process(report: dict[str, Any], kind: str, subgroup: dict[str, list[str]] | None = None):
    monitor = report["monitor"]
    return next(
        s
        for s in monitor["subgroups"]
        if s["kind"] == kind and (subgroup is None or s["subgroup"] == subgroup)
    )


def test_a_fair_model_never_alarms_and_exits_0(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, monitor="{subgroups: {fpr: [{a: [a1]}]}}")
    for run in range(1, 7):
        code, report = audit(spec, table(seed=run))
        monitor = report["monitor"]
        assert (code, monitor["run_index"], monitor["alarms"]) == (0, run, [])
        assert monitor["seconds"] >= 0.0  # the monitor's own time, beyond the audit
        listed = process(report, "subgroup", BIASED)
        assert listed["runs"] == run and listed["first_alarm_run"] is None
        assert listed["label"] in ("inconclusive", "resolved")
        assert math.isclose(listed["p_value_anytime"], min(1.0, 1.0 / _running_max(spec, run)))
    # the monitor's settings are the run's provenance
    assert report["provenance"]["parameters"]["monitor"]["alpha"] == 0.05
    assert monitor["processes"] == 1 + 20
    assert math.isclose(monitor["threshold"], 2 * 21 / 0.05)
    assert math.isclose(monitor["onset_threshold"], 2 * 21 * 52 / 0.05)
    assert math.isclose(listed["p_value_adjusted"], min(1.0, 42 * listed["p_value_anytime"]))


def _running_max(spec: Path, run: int) -> float:
    """The largest e-value the history recorded for the listed subgroup over runs 1..run."""
    series = read_monitor(spec.parent / "history.sqlite", "monitored")
    listed = next(s for s in series if s.kind == "subgroup" and "a1" in s.process_key)
    return max([1.0] + [p.e_value for p in listed.points if p.run_index <= run])


def test_a_planted_bias_alarms_persists_and_the_open_scan_bets_on_earlier_findings(
    tmp_path: Path,
) -> None:
    spec = write_spec(tmp_path)
    codes, reports = [], []
    for run in range(1, 6):
        odds = 1.0 if run <= 2 else 2.5
        code, report = audit(spec, table(seed=10 + run, fpr_odds=odds))
        codes.append(code)
        reports.append(report)
    assert codes[:2] == [0, 0] and codes[-1] == 1
    first = codes.index(1) + 1
    assert first <= 5
    alarmed = reports[first - 1]["monitor"]
    assert alarmed["alarms"] and all(a["run_index"] == first for a in alarmed["alarms"])
    last = reports[-1]["monitor"]
    assert last["run_index"] == 5
    # the biased subgroup was found, registered (new), then counted and labelled persists
    found = [s for s in last["subgroups"] if s["kind"] == "subgroup" and s["subgroup"] == BIASED]
    assert found and found[0]["label"] == "persists" and found[0]["first_alarm_run"] is not None
    assert found[0]["p_value_adjusted"] <= 0.05 < 1.0
    # the open scan bets on the subgroup the scan reported first on the run before
    for before, after in itertools.pairwise(reports):
        top = before["scans"][0]["findings"][0]["subgroup"]
        assert process(after, "scan")["subgroup"] == top


def test_e_value_of_one_run_matches_a_direct_computation(tmp_path: Path) -> None:
    """The first run's e-values of a listed subgroup, recomputed from the rows with scipy's
    Fisher noncentral hypergeometric and the Bernoulli likelihood written out here."""
    scans = f"{FPR}\n{CALIBRATION}"
    monitor = "{subgroups: {fpr: [{a: [a1]}], calibration: [{a: [a1], b: [b1, b2]}]}}"
    spec = write_spec(tmp_path, scans=scans, monitor=monitor)
    frame = table(seed=5, fpr_odds=1.3, calibration_odds=1.4)
    _, report = audit(spec, frame)
    grid, weights = evidence.GRID, evidence.WEIGHTS
    null = int(np.flatnonzero(grid == 1.0)[0])

    negatives = frame.filter(pl.col("y") == 0)
    inside = (negatives["a"] == "a1").to_numpy()
    flag = negatives["flag"].to_numpy()
    n, k, m, x = len(flag), int(flag.sum()), int(inside.sum()), int(flag[inside].sum())
    loglik = np.array([nchypergeom_fisher.logpmf(x, n, m, k, g) for g in grid])
    expected = float(
        np.exp(logsumexp(np.log(weights[weights > 0]) + (loglik - loglik[null])[weights > 0]))
    )
    fpr = process(report, "subgroup", BIASED)
    assert math.isclose(fpr["e_value"], expected, rel_tol=1e-9)

    rows = frame.filter((pl.col("a") == "a1") & pl.col("b").is_in(["b1", "b2"]))
    y, p = rows["y"].to_numpy(), rows["p"].to_numpy()
    loglik = np.array(
        [
            np.sum(
                np.where(y == 1, np.log(g * p / (1 - p + g * p)), np.log((1 - p) / (1 - p + g * p)))
            )
            for g in grid
        ]
    )
    expected = float(np.sum(weights * np.exp(loglik - loglik[null])))
    calibration = process(report, "subgroup", {"a": ["a1"], "b": ["b1", "b2"]})
    assert math.isclose(calibration["e_value"], expected, rel_tol=1e-9)


def test_unsupported_scans_are_named_with_the_reason(tmp_path: Path) -> None:
    scans = "\n".join(
        [
            FPR,
            "  - {id: rates, type: bias_scan, outcome_type: continuous, score: gaussian, restarts: 2}",
            "  - {id: groups, type: flag, metric: fpr, target: overall, groups: {attributes: [a]}, tolerance: 0.05, bootstrap: 20}",
        ]
    )
    spec = write_spec(tmp_path, scans=scans)
    _, report = audit(spec, table(seed=1))
    unsupported = {u["scan"]: u["reason"] for u in report["monitor"]["unsupported"]}
    assert set(unsupported) == {"rates", "groups"}
    assert "outcome_type continuous" in unsupported["rates"]
    assert "Flag groups" in unsupported["groups"]
    assert {s["scan"] for s in report["monitor"]["subgroups"]} == {"fpr"}


def test_sample_weights_are_unsupported(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    text = spec.read_text(encoding="utf-8").replace(
        "recommendation: flag}", "recommendation: flag, weight: w}"
    )
    spec.write_text(text, encoding="utf-8")
    _, report = audit(spec, table(seed=1).with_columns(w=pl.lit(2)))
    assert [u["scan"] for u in report["monitor"]["unsupported"]] == ["fpr"]
    assert "sample weights" in report["monitor"]["unsupported"][0]["reason"]
    assert report["monitor"]["subgroups"] == []


def test_gate_values_under_the_monitor(tmp_path: Path) -> None:
    """never: exit 0 despite alarms; new_significant: exit 1 only in the run of a first alarm."""
    assert monitored_exit_code("significant", 2, 0) == ExitCode.FINDINGS
    assert monitored_exit_code("persisting_or_new", 1, 0) == ExitCode.FINDINGS
    assert monitored_exit_code("new_significant", 2, 0) == ExitCode.OK
    assert monitored_exit_code("new_significant", 2, 1) == ExitCode.FINDINGS
    assert monitored_exit_code("never", 5, 5) == ExitCode.OK
    assert monitored_exit_code("not_certified", 0, 0, not_certified=1) == ExitCode.FINDINGS
    assert monitored_exit_code("significant", 0, 0, not_certified=1) == ExitCode.OK
    for fail_on in ("never", "new_significant"):
        root = tmp_path / fail_on
        root.mkdir()
        spec = write_spec(root, fail_on=fail_on, monitor="{subgroups: {fpr: [{a: [a1]}]}}")
        runs = [audit(spec, table(seed=20 + i, n=6000, fpr_odds=3.0)) for i in range(4)]
        for code, report in runs:
            monitor = report["monitor"]
            first = [
                s for s in monitor["subgroups"] if s["first_alarm_run"] == monitor["run_index"]
            ]
            assert code == (1 if fail_on == "new_significant" and first else 0)
        # alarms every run from the first: the gate decides which runs fail
        assert all(report["monitor"]["alarms"] for _, report in runs)
        assert [code for code, _ in runs][-1] == 0


@pytest.mark.slow
def test_fixed_bias_is_resolved_eventually(tmp_path: Path) -> None:
    """One biased run, then fair runs: the subgroup alarms, then reads resolved."""
    spec = write_spec(tmp_path, monitor="{subgroups: {fpr: [{a: [a1]}]}}")
    labels = []
    for run in range(1, 30):
        odds = 2.5 if run == 2 else 1.0
        _, report = audit(spec, table(seed=40 + run, n=4000, fpr_odds=odds))
        listed = process(report, "subgroup", BIASED)
        labels.append(listed["label"])
        if labels[-1] == "resolved" and "persists" in labels:
            break
    assert "persists" in labels and labels[-1] == "resolved", labels
    assert listed["first_alarm_run"] == labels.index("persists") + 1
    assert listed["effect_low"] >= 1 / 1.25 and listed["effect_high"] <= 1.25


def test_history_command_shows_the_evidence_per_run(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, monitor="{subgroups: {fpr: [{a: [a1]}]}}")
    for run in range(1, 4):
        audit(spec, table(seed=50 + run, n=6000, fpr_odds=1.0 if run == 1 else 3.0))
    result = CliRunner().invoke(app, ["history", str(tmp_path / "history.sqlite")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "monitor monitored / fpr: evidence for a = a1" in out
    assert "monitor monitored / fpr: evidence for the open scan" in out
    assert "  run 1  " in out and "  run 3  " in out and "ALARM (evidence)" in out
    assert "anytime p-value" in out and "evidence 0.09" in out


def _run_many(spec: str, times: int) -> None:
    for _ in range(times):
        run_audit(Path(spec), RunOptions(workers=1))


@pytest.mark.slow
def test_concurrent_monitored_runs_each_update_the_evidence(tmp_path: Path) -> None:
    """Two processes record three monitored runs each at once: six run indexes, and every
    process's evidence counts all six runs (none updated from a stale state)."""
    spec = write_spec(tmp_path, monitor="{subgroups: {fpr: [{a: [a1]}]}}")
    table(seed=60).write_csv(tmp_path / "run.csv")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_run_many, args=(str(spec), 3)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=600)
        assert w.exitcode == 0
    history = tmp_path / "history.sqlite"
    assert run_count(history) == 6
    series = read_monitor(history, "monitored")
    listed = next(s for s in series if "a1" in s.process_key)
    assert [p.run_index for p in listed.points] == [1, 2, 3, 4, 5, 6]
    with sqlite3.connect(history) as db:
        state = db.execute(
            "SELECT state_json FROM monitor_state WHERE process_key = ?", (listed.process_key,)
        ).fetchone()[0]
    assert evidence.ProcessState.from_json(state).runs == 6


OLD_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, utc_time TEXT NOT NULL,
    name TEXT NOT NULL, spec_sha256 TEXT NOT NULL, data_sha256 TEXT NOT NULL,
    verdict TEXT NOT NULL, exit_code INTEGER NOT NULL, tool_version TEXT NOT NULL);
CREATE TABLE findings (run_id INTEGER NOT NULL REFERENCES runs(id), scan_id TEXT NOT NULL,
    scan_type TEXT NOT NULL, subgroup_key TEXT NOT NULL, label TEXT NOT NULL,
    baseline_label TEXT, statistic REAL, p_value REAL, significant INTEGER,
    effect_metric TEXT, effect_inside REAL, effect_reference REAL);
INSERT INTO runs VALUES (1, '2025-01-01T00:00:00Z', 'monitored', 'x', 'y', 'clean', 0, '0.1');
"""


def test_a_history_written_before_the_monitor_still_works(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with sqlite3.connect(history) as db:
        db.executescript(OLD_SCHEMA)
    assert read_monitor(history) == []  # read-only: no table is created
    with sqlite3.connect(history) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "monitor_state" not in tables
    result = CliRunner().invoke(app, ["history", str(history)])
    assert result.exit_code == 0, result.output
    spec = write_spec(tmp_path)
    _code, report = audit(spec, table(seed=1))
    assert report["monitor"]["run_index"] == 1 and run_count(history) == 2


def test_a_run_whose_reports_cannot_be_written_leaves_the_history_as_it_was(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    audit(spec, table(seed=1))
    (tmp_path / "reports").rename(tmp_path / "kept")
    (tmp_path / "reports").write_text("a file, not a folder", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(spec), "--workers", "1"])
    assert result.exit_code == 2 and "cannot write the reports" in result.output
    assert run_count(tmp_path / "history.sqlite") == 1
    assert {p.run_index for s in read_monitor(tmp_path / "history.sqlite") for p in s.points} == {1}


def test_monitor_without_history_is_a_located_spec_error(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    text = spec.read_text(encoding="utf-8").replace(", history: history.sqlite", "")
    spec.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(spec), "--no-data"])
    assert result.exit_code == 2
    assert f"{spec.name}:{monitor_line(spec)}:" in result.output
    assert "monitor needs output.history" in result.output


@pytest.mark.parametrize(
    ("monitor", "words"),
    [
        ("{subgroups: {nope: [{a: [a1]}]}}", "no scan has the id 'nope'"),
        ("{subgroups: {fpr: [{c: [x]}]}}", "not an attribute: c"),
        ("{max_subgroups: 1, subgroups: {fpr: [{a: [a1]}, {a: [a2]}]}}", "more than max_subgroups"),
        ("{alpha: 1.5}", "monitor.alpha"),
        ("{tolerance: 0.9}", "monitor.tolerance"),
    ],
)
def test_monitor_spec_errors(tmp_path: Path, monitor: str, words: str) -> None:
    spec = write_spec(tmp_path, monitor=monitor)
    result = CliRunner().invoke(app, ["validate", str(spec), "--no-data"])
    assert result.exit_code == 2 and words in result.output, result.output
    assert f"{spec.name}:{monitor_line(spec)}:" in result.output


def test_a_listed_value_the_data_lacks_is_a_located_error_before_any_scan(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, monitor="{subgroups: {fpr: [{a: [a9]}]}}")
    table(seed=1).write_csv(tmp_path / "run.csv")
    result = CliRunner().invoke(app, ["run", str(spec), "--workers", "1"])
    assert result.exit_code == 2 and "a9" in result.output, result.output
    assert f"{spec.name}:{monitor_line(spec)}:" in result.output
    assert not (tmp_path / "history.sqlite").exists()


def test_a_spec_without_monitor_keeps_its_report_keys(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    text = spec.read_text(encoding="utf-8").replace("monitor: {}\n", "")
    spec.write_text(text, encoding="utf-8")
    _, report = audit(spec, table(seed=1))
    assert "monitor" not in report  # omitted, as the report schema says
    assert "monitor" not in report["provenance"]["parameters"]
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM monitor_runs").fetchone()[0] == 0


def test_streamed_data_gives_the_same_evidence(tmp_path: Path) -> None:
    """A streamed dataset (distinct rows with their counts) and the rows themselves."""
    scans = f"{FPR}\n{CALIBRATION}"
    monitor = "{subgroups: {fpr: [{a: [a1]}], calibration: [{a: [a1, a2]}]}}"
    frame = table(seed=7, fpr_odds=1.5, calibration_odds=1.5)
    values = {}
    for streaming in ("false", "true"):
        root = tmp_path / streaming
        root.mkdir()
        spec = write_spec(root, scans=scans, monitor=monitor)
        text = spec.read_text(encoding="utf-8").replace(
            "data: {path: run.csv}", f"data: {{path: run.csv, streaming: {streaming}}}"
        )
        spec.write_text(text, encoding="utf-8")
        _, report = audit(spec, frame)
        assert report["monitor"]["unsupported"] == []
        values[streaming] = {
            (s["scan"], json.dumps(s["subgroup"], sort_keys=True)): s["e_value"]
            for s in report["monitor"]["subgroups"]
            if s["kind"] == "subgroup"
        }
    assert values["true"].keys() == values["false"].keys()
    for key, value in values["false"].items():
        assert math.isclose(values["true"][key], value, rel_tol=1e-9), key


def test_an_edited_history_is_an_error_naming_the_row(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    audit(spec, table(seed=1))
    history = tmp_path / "history.sqlite"
    with sqlite3.connect(history) as db:
        db.execute("UPDATE monitor_runs SET e_value = 'big' WHERE rowid = 1")
        db.execute("UPDATE monitor_state SET state_json = '{\"loglik\": 3}'")
    shown = CliRunner().invoke(app, ["history", str(history)])
    assert shown.exit_code == 2 and "monitor_runs row 1" in shown.output, shown.output
    assert "e_value is 'big'" in shown.output
    result = CliRunner().invoke(app, ["run", str(spec), "--workers", "1"])
    assert result.exit_code == 2 and "stored evidence of 'fpr|scan'" in result.output
    assert "Traceback" not in result.output and run_count(history) == 1
