"""Baselines and the gate (`audit run --baseline`, `audit diff`), CI formats and `audit explain`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from cli_support import FAST, ROOT, Invoke, Project, strict_json

from fairscan.report.baseline import compare_reports, similarity
from fairscan.report.models import AuditReport, Effect, Finding, Statistic
from fairscan.report.upgrade import upgrade_report

GATED_SPEC = """\
version: 1
name: gated
data:
  path: {data}
columns:
  outcome: y
  prediction: p
  recommendation: rec
attributes: [sex, region, age_group]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 0.5, restarts: 5}}
  - {{id: calibration, type: bias_scan, direction: negative, penalty: 0.5, restarts: 5}}
significance: {{replicates: 19, alpha: 0.05, seed: 7}}
output: {{dir: {out}, formats: {formats}}}
gate: {{fail_on: {fail_on}}}
"""


def frame(*, calibration_bias: bool, n: int = 3000, seed: int = 0) -> pl.DataFrame:
    """Decisions `rec` over-flag region S & age group a (the FPR-Scan finds it); with
    ``calibration_bias`` the predictions `p` are also inflated for region N & sex F (a new
    finding of the Bias Scan). Without it `p` is the true probability everywhere."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], size=n)
    region = rng.choice(["N", "S", "E", "W"], size=n)
    age_group = rng.choice(["a", "b", "c"], size=n)
    y = (rng.random(n) < 0.3).astype(np.int64)
    rec_p = np.full(n, 0.3)
    rec_p[(region == "S") & (age_group == "a")] += 0.4
    rec = (rng.random(n) < rec_p).astype(np.int64)
    p = np.full(n, 0.3)
    if calibration_bias:
        p[(region == "N") & (sex == "F")] += 0.35
    return pl.DataFrame(
        {"sex": sex, "region": region, "age_group": age_group, "y": y, "p": p, "rec": rec}
    )


def write_spec(
    project: Project,
    data: str,
    out: str,
    fail_on: str = "new_significant",
    formats: str = "[json, markdown]",
    name: str = "gated.audit.yaml",
) -> Path:
    text = GATED_SPEC.format(data=data, out=out, fail_on=fail_on, formats=formats)
    return project.spec(text, name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Baseline run, perturbed run and unchanged re-run (each once for the module)."""
    from typer.testing import CliRunner

    from fairscan.cli import app

    root = tmp_path_factory.mktemp("baseline")
    project = Project(root)
    project.data("before.csv", frame(calibration_bias=False))
    project.data("after.csv", frame(calibration_bias=True))
    runner = CliRunner()
    codes = {}
    spec = write_spec(project, "before.csv", "base")
    codes["base"] = runner.invoke(app, ["run", str(spec), "--workers", "1"]).exit_code
    baseline = root / "base" / "gated.json"
    spec = write_spec(project, "after.csv", "after")
    result = runner.invoke(app, ["run", str(spec), "--workers", "1", "--baseline", str(baseline)])
    codes["after"] = result.exit_code
    spec = write_spec(project, "before.csv", "same")
    codes["same"] = runner.invoke(
        app, ["run", str(spec), "--workers", "1", "--baseline", str(baseline)]
    ).exit_code
    return {"root": root, "codes": codes, "after_stderr": result.stderr}  # type: ignore[dict-item]


def report(path: Path) -> dict:
    return strict_json(path.read_text(encoding="utf-8"))  # type: ignore[return-value]


def test_new_bias_fails_only_on_the_new_finding(runs: dict) -> None:
    root = runs["root"]
    # baseline: the FPR finding is significant, but without a baseline every finding is new
    assert runs["codes"]["base"] == 1
    base = report(root / "base" / "gated.json")
    assert "baseline" not in base  # the block is optional and omitted without --baseline
    assert runs["codes"]["after"] == 1, runs["after_stderr"]
    assert "gate fail_on new_significant: exit 1" in runs["after_stderr"]
    after = report(root / "after" / "gated.json")
    block = after["baseline"]
    new = [e for e in block["entries"] if e["label"] == "new"]
    assert len(new) == 1 and block["new_significant"] == 1
    assert new[0]["scan_id"] == "calibration"
    assert new[0]["after"]["subgroup"] == {"sex": ["F"], "region": ["N"]}
    assert [e["label"] for e in block["entries"] if e["scan_id"] == "fpr"] == ["persists"]
    persists = next(e for e in block["entries"] if e["label"] == "persists")
    # re-tested on the new data as a fixed subgroup: the same rows, the same rate
    assert persists["before"]["rate"] == persists["after"]["rate"]
    assert block["method"] == "retest"
    assert after["verdict"]["exit_code"] == 1
    # the Markdown report leads with what changed
    md = (root / "after" / "gated.md").read_text(encoding="utf-8")
    assert md.index("## What changed since the baseline") < md.index("| scan | type |")
    assert "**new**" in md and "**persists**" in md
    # the report still validates against its model (and the schema keys are unchanged)
    AuditReport.model_validate(after)


def test_unchanged_data_passes_the_new_significant_gate(runs: dict) -> None:
    assert runs["codes"]["same"] == 0
    same = report(runs["root"] / "same" / "gated.json")
    assert same["verdict"]["status"] == "findings"
    assert same["verdict"]["exit_code"] == 0
    assert same["baseline"]["new_significant"] == 0
    assert same["baseline"]["counts"]["persists"] == 1
    md = (runs["root"] / "same" / "gated.md").read_text(encoding="utf-8")
    assert md.splitlines()[2].startswith("**PASS** (gate: fail on new_significant)")


def test_diff_prints_the_comparison(runs: dict, cli: Invoke) -> None:
    root = runs["root"]
    out = cli("diff", root / "base" / "gated.json", root / "after" / "gated.json", code=1)
    assert "## What changed since the baseline" in out.stdout
    assert "**new**" in out.stdout and "sex = F and region = N" in out.stdout
    out = cli("diff", root / "base" / "gated.json", root / "same" / "gated.json", code=0)
    # issue 16: a finding persists, so not "PASS": no new one, and how many are still there
    assert "PASS" not in out.stdout and "PASS" not in out.stderr
    assert (
        "**No new significant finding**; 1 persisting finding(s) from the baseline are still "
        "significant." in out.stdout
    )
    assert "no new significant finding; 1 persisting finding(s)" in out.stderr
    # reversed, two reports and no re-test: the calibration finding the search no longer
    # reports is inconclusive (never silently resolved), nothing is new
    out = cli("diff", root / "after" / "gated.json", root / "base" / "gated.json", code=0)
    assert "**inconclusive**" in out.stdout and "**resolved**" not in out.stdout


def test_diff_and_baseline_errors_exit_2(runs: dict, cli: Invoke, project: Project) -> None:
    good = runs["root"] / "base" / "gated.json"
    out = cli("diff", project.root / "missing.json", good, code=2)
    assert "cannot read report" in out.stderr
    bad = project.root / "bad.json"
    bad.write_text('{"name": 1}', encoding="utf-8")
    out = cli("diff", bad, good, code=2)
    assert "is not a fairscan JSON report" in out.stderr
    project.data("data.csv", frame(calibration_bias=False, n=300))
    spec = write_spec(project, "data.csv", "r")
    out = cli("run", spec, *FAST, "--baseline", project.root / "missing.json", code=2)
    assert "cannot read report" in out.stderr


def _edited(runs: dict, project: Project, name: str, edit: object) -> tuple[Path, Path]:
    """(OLD, NEW): the base report under gate fail_on significant, and a copy of it that
    ``edit`` (report dict -> None) changed."""
    data = json.loads((runs["root"] / "base" / "gated.json").read_text(encoding="utf-8"))
    data["provenance"]["parameters"]["gate"]["fail_on"] = "significant"
    old = project.root / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    edit(data)  # type: ignore[operator]
    new = project.root / name
    new.write_text(json.dumps(data), encoding="utf-8")
    return old, new


def test_diff_recomputes_the_verdict_from_the_findings(
    runs: dict, cli: Invoke, project: Project
) -> None:
    """Issue 34: a NEW report whose stored verdict was edited to clean while its finding is
    still significant fails the gate, as `audit run --baseline` does."""

    def clean(data: dict) -> None:
        data["verdict"].update(status="clean", exit_code=0, significant_findings=0)

    old, new = _edited(runs, project, "clean.json", clean)
    assert json.loads(new.read_text("utf-8"))["scans"][0]["findings"][0]["significant"] is True
    out = cli("diff", old, new, code=1)
    assert "gate fail_on significant: exit 1" in out.stderr
    assert out.stderr.startswith("FAIL: ")
    cli("diff", old, new, "--exit-zero", code=0)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("0.01", "'0.01'"), (-0.1, "-0.1"), (float("nan"), "nan"), (1.5, "1.5")],
)
def test_diff_and_baseline_refuse_bad_p_values(
    value: object, shown: str, runs: dict, cli: Invoke, project: Project
) -> None:
    def poison(data: dict) -> None:
        data["scans"][0]["findings"][0]["p_value"] = value

    old, new = _edited(runs, project, "bad-p.json", poison)
    for args in ((old, new), (new, old)):
        out = cli("diff", *args, code=2)
        assert "scans[0].findings[0].p_value: must be a number between 0 and 1" in out.stderr
        assert f"got {shown}" in out.stderr
    project.data("data.csv", frame(calibration_bias=False, n=300))
    spec = write_spec(project, "data.csv", "r")
    out = cli("run", spec, *FAST, "--baseline", new, code=2)
    assert "scans[0].findings[0].p_value" in out.stderr


def test_diff_refuses_duplicate_keys_and_another_audit(
    runs: dict, cli: Invoke, project: Project
) -> None:
    def rename(data: dict) -> None:
        data["name"] = "another-audit"

    old, other = _edited(runs, project, "other.json", rename)
    out = cli("diff", old, other, code=2)
    assert "is a report of audit 'gated', this run is 'another-audit'" in out.stderr
    # the same key twice: the reader would see one verdict, a tool another
    text = old.read_text(encoding="utf-8")
    twice = project.root / "twice.json"
    twice.write_text(text.replace('{"schema_version"', '{"name": "x", "schema_version"', 1))
    assert text != twice.read_text(encoding="utf-8")
    out = cli("diff", old, twice, code=2)
    assert "duplicate key 'name'" in out.stderr


def test_gate_never_and_significant(project: Project, cli: Invoke) -> None:
    project.data("data.csv", frame(calibration_bias=True))
    spec = write_spec(project, "data.csv", "never", fail_on="never")
    cli("run", spec, *FAST, code=0)
    assert report(project.root / "never" / "gated.json")["verdict"]["status"] == "findings"
    spec = write_spec(project, "data.csv", "sig", fail_on="significant")
    cli("run", spec, *FAST, code=1)


def _side(subgroup: dict, significant: bool = True, score: float = 5.0) -> Finding:
    """A v2 finding of the FPR-Scan for ``subgroup``."""
    return Finding(
        subgroup=subgroup,
        label=" and ".join(f"{a} in {{{', '.join(v)}}}" for a, v in subgroup.items()),
        size=100,
        statistic=Statistic(name="penalised_score", value=score),
        effect=Effect(
            metric="false positive rate",
            inside=0.5,
            reference=0.3,
            reference_name="the other true negatives",
            inside_count=100,
            reference_count=900,
            expected=0.3,
        ),
        p_value=0.01 if significant else 0.5,
        adjusted_p_value=None,
        significant=significant,
        description="x",
    )


def test_overlap_matching_labels_a_shifted_subgroup_changed(runs: dict) -> None:
    base = AuditReport.model_validate(report(runs["root"] / "base" / "gated.json"))
    fpr = next(s for s in base.scans if s.id == "fpr")
    assert fpr.findings[0].subgroup == {"region": ["S"], "age_group": ["a"]}
    shifted = {"region": ["S"], "age_group": ["a", "b"]}
    moved = base.model_copy(deep=True)
    moved.scans[0].findings[0] = _side(shifted)
    comparison = compare_reports(base, moved)
    fpr_entries = [e for e in comparison.entries if e.scan_id == "fpr"]
    assert [(e.label, e.match) for e in fpr_entries] == [("changed", "overlap")]
    assert fpr_entries[0].similarity == pytest.approx(0.5)
    # a disjoint subgroup does not match: the old one is resolved, the other is new
    far = {"region": ["N"], "age_group": ["c"]}
    moved.scans[0].findings[0] = _side(far)
    labels = sorted(e.label for e in compare_reports(base, moved).entries if e.scan_id == "fpr")
    assert labels == ["new", "resolved"]


def test_diff_and_baseline_accept_version_1_reports(project: Project, cli: Invoke) -> None:
    """A report written before the v2 contract (schema_version 1) is upgraded on reading."""
    v1 = ROOT / "tests" / "report" / "data" / "v1_compas.json"
    # a v1 report records no gate: the default, fail_on significant, fails on the persisting
    # findings, as `audit run --baseline v1.json` does (issue 22: diff and run agree)
    out = cli("diff", v1, v1, code=1)
    assert "gate fail_on significant: exit 1" in out.stderr
    # issue 34: the line's word is the gated exit code's (1: FAIL), never a bare "no new"
    assert "**FAIL**: no new significant finding; 7 persisting" in out.stdout
    upgraded = AuditReport.model_validate(upgrade_report(json.loads(v1.read_text("utf-8"))))
    # a v2 run where the flag scan no longer flags its first group: v1 -> v2 resolves it
    current = upgraded.model_copy(deep=True)
    flags = next(s for s in current.scans if s.id == "fpr-flags")
    dropped = flags.findings.pop(0)
    path = project.root / "current.json"
    path.write_text(current.model_dump_json(exclude={"baseline"}), encoding="utf-8")
    out = cli("diff", v1, path, code=1)  # nothing new, but the remaining findings fail the gate
    # no re-test between two reports: the dropped group is inconclusive, never resolved
    assert "**inconclusive**" in out.stdout and "**resolved**" not in out.stdout
    out = cli("diff", v1, path, "--exit-zero", code=0) and str(dropped.label) in out.stdout
    out = cli("diff", path, v1, code=1)  # reversed: the group is new
    assert "**new**" in out.stdout and "`fpr-flags`" in out.stdout


def test_similarity_of_covered_cells() -> None:
    domains = {"a": ["1", "2", "3"], "b": ["x", "y"]}
    assert similarity({"a": ["1"]}, {"a": ["1"]}, domains) == 1.0
    assert similarity({"a": ["1"]}, {"a": ["2"]}, domains) == 0.0
    # {a=1} covers 2 cells, {a=1, b=x} covers 1 of them
    assert similarity({"a": ["1"]}, {"a": ["1"], "b": ["x"]}, domains) == pytest.approx(0.5)
    assert similarity({}, {}, domains) == 1.0


# --- CI formats --------------------------------------------------------------------------------


def test_junit_and_github_summary(
    project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.data("data.csv", frame(calibration_bias=True))
    spec = write_spec(
        project, "data.csv", "ci", fail_on="significant", formats="[json, junit, github]"
    )
    summary = project.root / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    cli("run", spec, *FAST, code=1)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n")  # appended, not overwritten
    assert "# Fairness audit: gated" in text and "**FAIL**" in text
    assert not (project.root / "ci" / "gated.md").exists()  # github is not a file format
    root = ET.parse(project.root / "ci" / "gated.junit.xml").getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1 and suites[0].get("name") == "gated"
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["fpr (fpr_scan)", "calibration (bias_scan)"]
    failures = {c.get("name"): c.find("failure") for c in cases}
    assert all(f is not None for f in failures.values())
    calibration = failures["calibration (bias_scan)"]
    assert calibration is not None
    assert "top finding: sex = F and region = N" in (calibration.get("message") or "")
    assert suites[0].get("failures") == "2"


def test_github_format_without_the_env_var_writes_nothing(
    project: Project, cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    project.data("data.csv", frame(calibration_bias=False, n=400))
    spec = write_spec(project, "data.csv", "gh", formats="[github]")
    cli("run", spec, *FAST)
    assert not (project.root / "gh").exists() or not any((project.root / "gh").iterdir())


def test_junit_passing_scan_has_no_failure(project: Project, cli: Invoke) -> None:
    project.data("data.csv", frame(calibration_bias=False, n=400))
    # replicates 0 is untested (issue 34): allowed here, so the run exits 0 as UNTESTED
    spec = write_spec(
        project, "data.csv", "j", fail_on="never, allow_untested: true", formats="[junit]"
    )
    cli("run", spec, "--replicates", "0", "--workers", "1", code=0)
    root = ET.parse(project.root / "j" / "gated.junit.xml").getroot()
    cases = root.find("testsuite").findall("testcase")  # type: ignore[union-attr]
    assert all(c.find("failure") is None for c in cases)
    assert all(c.find("skipped") is not None for c in cases)  # replicates 0: untested
    verdict = root.find("testsuite/properties/property[@name='verdict']")
    assert verdict is not None and verdict.get("value") == "UNTESTED"


def test_action_and_pre_commit_hooks_are_valid() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    by_id = {h["id"]: h for h in hooks}
    assert set(by_id) == {"fairscan-validate", "fairscan-run"}
    validate = by_id["fairscan-validate"]
    assert validate["entry"] == "audit validate --no-data"
    assert validate["files"] == r"\.audit\.ya?ml$"
    assert validate["language"] == "python"
    assert by_id["fairscan-run"]["stages"] == ["manual"]
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert set(action["inputs"]) >= {"specs", "args", "summary"}
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    run_step = next(s for s in steps if s.get("name") == "audit run")
    assert set(run_step["env"]) >= {"SPECS", "ARGS"}
    for step in steps:  # inputs reach the shell only through env
        assert "${{ inputs" not in step.get("run", "")
    install = next(s for s in steps if s.get("id") == "install")
    assert "action/install.sh" in install["run"]
    assert "pip install" in (ROOT / "action" / "install.sh").read_text(encoding="utf-8")


# --- explain -----------------------------------------------------------------------------------


def test_explain_every_type(cli: Invoke) -> None:
    from fairscan.scans import SCAN_TYPES

    for scan_type, entry in SCAN_TYPES.items():
        out = cli("explain", scan_type, code=0)
        assert entry.docs.title in out.stdout
        assert "Null hypothesis:" in out.stdout
        assert "Parameters:" in out.stdout and "Reading the result:" in out.stdout
    out = cli("explain", "fpr_scan", code=0)
    # types read as words (docs/scans pages show the same text)
    assert "penalty: number >= 0 (default: 0.0)" in out.stdout
    assert "restarts: integer from 1 to 100000 (default: 500)" in out.stdout
    assert "threshold_rule: one of: ge, gt or null (default: null)" in out.stdout
    assert "Random restarts" in out.stdout


def test_explain_unknown_type(cli: Invoke) -> None:
    out = cli("explain", "fpr", code=2)
    assert "unknown scan type 'fpr'" in out.stderr
    assert "fpr_scan" in out.stderr and "certify" in out.stderr


def test_report_schema_mentions_the_baseline_block() -> None:
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    assert "baseline" in schema["properties"]
    assert "baseline" not in schema.get("required", [])


FLAG_SPEC = """\
version: 1
name: flags
data: {path: data.csv}
columns: {outcome: y, prediction: p, recommendation: rec}
attributes: [region, age_group]
scans:
  - id: flags
    type: flag
    metric: fpr
    target: overall
    groups: {attributes: [region, age_group], max_order: 2, min_size: 1}
    tolerance: 0.05
    bootstrap: 100
significance: {seed: 3}
output: {dir: out, formats: [json]}
"""


def test_flag_groups_are_matched_by_name(project: Project, cli: Invoke) -> None:
    project.data("data.csv", frame(calibration_bias=False, n=2000))
    spec = project.spec(FLAG_SPEC, "flags.audit.yaml")
    cli("run", spec, "--workers", "1", code=1)
    path = project.root / "out" / "flags.json"
    base = AuditReport.model_validate_json(path.read_text(encoding="utf-8"))
    flagged = [f.label for f in base.scans[0].findings if f.significant is True]
    assert flagged  # flagged groups are findings
    same = compare_reports(base, base)
    assert same.counts["persisting"] == len(flagged) and same.new_significant == 0
    assert all(e.match == "exact" for e in same.entries)
    # the same run with its flags cleared: every flagged group is resolved, none new
    cleared = base.model_copy(deep=True)
    for f in cleared.scans[0].findings:
        f.significant = False
    diff = compare_reports(base, cleared)
    assert diff.counts["resolved"] == len(flagged) and diff.new_significant == 0
    assert compare_reports(cleared, base).new_significant == len(flagged)
    # ... and without the findings at all (a v2 run that flags nothing)
    empty = base.model_copy(deep=True)
    empty.scans[0].findings = []
    assert compare_reports(base, empty).counts["resolved"] == len(flagged)
