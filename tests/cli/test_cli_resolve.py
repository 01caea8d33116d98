"""`defaults:`, `extends:`, FAIRSCAN_* environment overrides and `audit validate --show-resolved`."""

from __future__ import annotations

import pytest
import yaml
from cli_support import Invoke, Project, line_of, strict_json

BASE = """\
version: 1
data:
  path: data.csv
columns:
  outcome: y
  prediction: p
  recommendation: rec
attributes: [sex, region, age_group]
defaults: {penalty: 0.25, restarts: 7}
significance: {replicates: 19, alpha: 0.05, seed: 7}
output: {dir: reports}
"""

CHILD = """\
extends: ../base.audit.yaml
name: child
scans:
  - {id: fpr, type: fpr_scan}
  - {id: calibration, type: bias_scan, penalty: 1.5}
significance: {seed: 11}
"""


@pytest.fixture
def layered(project: Project) -> Project:
    project.data("data.csv", n=400)
    project.spec(BASE, "base.audit.yaml")
    project.spec(CHILD, "specs/child.audit.yaml")
    return project


def resolved(cli: Invoke, spec: object, *args: str) -> tuple[dict, str]:
    out = cli("validate", "--no-data", "--show-resolved", spec, *args, code=0)
    return yaml.safe_load(out.stdout), out.stdout


def test_extends_deep_merges_and_defaults_fill_scans(layered: Project, cli: Invoke) -> None:
    spec, text = resolved(cli, layered.root / "specs" / "child.audit.yaml")
    assert text.startswith("# resolved spec of ")
    assert "base.audit.yaml" in text.splitlines()[0]
    assert spec["name"] == "child"
    # mappings deep-merge: seed from the child, replicates and alpha from the parent
    assert spec["significance"]["seed"] == 11
    assert spec["significance"]["replicates"] == 19
    assert spec["columns"]["outcome"] == "y"
    scans = {s["id"]: s for s in spec["scans"]}
    assert (scans["fpr"]["penalty"], scans["fpr"]["restarts"]) == (0.25, 7)  # from defaults
    assert (scans["calibration"]["penalty"], scans["calibration"]["restarts"]) == (1.5, 7)
    assert "extends" not in spec and "defaults" not in spec


def test_lists_replace(layered: Project, cli: Invoke) -> None:
    child = layered.root / "specs" / "child.audit.yaml"
    child.write_text(CHILD + "attributes: [sex]\n", encoding="utf-8")
    spec, _ = resolved(cli, child)
    assert spec["attributes"] == ["sex"]


def test_precedence_flag_over_env_over_spec(
    layered: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = layered.root / "specs" / "child.audit.yaml"
    monkeypatch.setenv("FAIRSCAN_SEED", "21")
    monkeypatch.setenv("FAIRSCAN_REPLICATES", "39")
    monkeypatch.setenv("FAIRSCAN_WORKERS", "1")
    spec, text = resolved(cli, child)
    assert spec["significance"]["seed"] == 21
    assert spec["significance"]["replicates"] == 39
    assert "significance.seed = 21  (from FAIRSCAN_SEED)" in text
    spec, text = resolved(cli, child, "--seed", "5")
    assert spec["significance"]["seed"] == 5
    assert "significance.seed = 5  (from --seed)" in text
    assert spec["significance"]["replicates"] == 39


def test_env_overrides_reach_audit_run(
    layered: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRSCAN_SEED", "123")
    monkeypatch.setenv("FAIRSCAN_REPLICATES", "9")
    monkeypatch.setenv("FAIRSCAN_WORKERS", "1")
    cli("run", layered.root / "specs" / "child.audit.yaml")
    # data.path and output.dir are relative to the file that writes them (here the parent)
    report = strict_json((layered.root / "reports" / "child.json").read_text())
    params = report["provenance"]["parameters"]  # type: ignore[index]
    assert params["significance"]["seed"] == 123
    assert params["significance"]["replicates"] == 9
    assert params["scans"][0]["restarts"] == 7


def test_error_in_the_parent_points_at_the_parent(layered: Project, cli: Invoke) -> None:
    base = layered.root / "base.audit.yaml"
    text = BASE.replace("  outcome: y\n", "  outcome: y\n  outcom: y\n")
    base.write_text(text, encoding="utf-8")
    out = cli("validate", "--no-data", layered.root / "specs" / "child.audit.yaml", code=2)
    assert f"base.audit.yaml:{line_of(text, '  outcom:')}:" in out.stderr
    assert "outcom" in out.stderr


def test_error_in_the_child_points_at_the_child(layered: Project, cli: Invoke) -> None:
    child = layered.root / "specs" / "child.audit.yaml"
    text = CHILD.replace("{id: fpr, type: fpr_scan}", "{id: fpr, type: fpr_scan, penalti: 1}")
    child.write_text(text, encoding="utf-8")
    out = cli("validate", "--no-data", child, code=2)
    assert f"child.audit.yaml:{line_of(text, '  - {id: fpr')}:" in out.stderr


def test_unknown_default_key_is_an_error(layered: Project, cli: Invoke) -> None:
    base = layered.root / "base.audit.yaml"
    text = BASE.replace("restarts: 7}", "restart: 7}")
    base.write_text(text, encoding="utf-8")
    out = cli("validate", "--no-data", layered.root / "specs" / "child.audit.yaml", code=2)
    assert f"base.audit.yaml:{line_of(text, 'defaults:')}:" in out.stderr
    assert "restart" in out.stderr


def test_extends_cycle_shows_the_chain(project: Project, cli: Invoke) -> None:
    a = project.spec("extends: b.audit.yaml\nversion: 1\n", "a.audit.yaml")
    project.spec("extends: a.audit.yaml\n", "b.audit.yaml")
    out = cli("validate", "--no-data", a, code=2)
    assert "extends cycle:" in out.stderr
    assert "a.audit.yaml -> " in out.stderr and "b.audit.yaml -> " in out.stderr


def test_missing_parent_is_located_at_extends(project: Project, cli: Invoke) -> None:
    text = "version: 1\nextends: nowhere.audit.yaml\n"
    spec = project.spec(text)
    out = cli("validate", "--no-data", spec, code=2)
    assert "synthetic.audit.yaml:2:" in out.stderr
    assert "cannot read the extended spec" in out.stderr


def test_spec_without_extends_is_unchanged(project: Project, cli: Invoke) -> None:
    from cli_support import spec_text

    project.data("data.csv", n=300)
    spec, _ = resolved(cli, project.spec(spec_text()))
    assert spec["scans"][0]["penalty"] == 0.5
    assert spec["gate"] == {"fail_on": "significant", "correction": "none", "allow_untested": False}
