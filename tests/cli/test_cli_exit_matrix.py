"""Issue 22: one exit-code rule. ``audit run``, ``audit run --baseline B`` and
``audit diff B NEW`` give the same codes under every ``gate.fail_on``, with and without
``--exit-zero``: the whole matrix, on a run with a new finding and on an unchanged re-run.

The data (``test_cli_baseline.frame``): the FPR-Scan finds region S & age group a in both data
sets; the "after" data also inflates the predictions of region N & sex F, a finding the Bias
Scan makes only there (new against the baseline)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Invoke, Project
from test_cli_baseline import frame, write_spec

from fairscan.report.verdict import FAIL_ON, ExitCode

# (fail_on, data) -> the expected code of: a run without baseline, the run with --baseline
# (= audit diff of the two reports); "after" has 2 significant findings, 1 of them new, "same"
# has the baseline's 1 finding again (persisting, nothing new).
EXPECTED = {
    ("significant", "after"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("significant", "same"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("new_significant", "after"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("new_significant", "same"): (ExitCode.FINDINGS, ExitCode.OK),
    ("persisting_or_new", "after"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("persisting_or_new", "same"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("never", "after"): (ExitCode.OK, ExitCode.OK),
    ("never", "same"): (ExitCode.OK, ExitCode.OK),
    # no certify scan here: not_certified fails as significant does, baseline or not
    ("not_certified", "after"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
    ("not_certified", "same"): (ExitCode.FINDINGS, ExitCode.FINDINGS),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("exit-matrix")
    project = Project(root)
    project.data("before.csv", frame(calibration_bias=False))
    project.data("after.csv", frame(calibration_bias=True))
    return project


def test_the_matrix_covers_every_gate() -> None:
    assert {fail_on for fail_on, _ in EXPECTED} == set(FAIL_ON)


@pytest.mark.slow
@pytest.mark.parametrize("fail_on", FAIL_ON)
def test_run_baseline_and_diff_agree(fail_on: str, project: Project, cli: Invoke) -> None:
    fast = ("--replicates", "19", "--workers", "1")
    base_spec = write_spec(project, "before.csv", f"base-{fail_on}", fail_on, name="b.audit.yaml")
    cli("run", base_spec, *fast)
    baseline = project.root / f"base-{fail_on}" / "gated.json"
    for data in ("after", "same"):
        csv = "after.csv" if data == "after" else "before.csv"
        plain_code, gated_code = EXPECTED[(fail_on, data)]
        # a run without baseline: every finding is new
        plain = write_spec(project, csv, f"plain-{fail_on}-{data}", fail_on, name="p.audit.yaml")
        cli("run", plain, *fast, code=plain_code)
        cli("run", plain, *fast, "--exit-zero", code=ExitCode.OK)
        # the run against the baseline, and audit diff of the same two reports
        spec = write_spec(project, csv, f"new-{fail_on}-{data}", fail_on, name="n.audit.yaml")
        out = cli("run", spec, *fast, "--baseline", baseline, code=gated_code)
        assert f"gate fail_on {fail_on}: exit {int(gated_code)}" in out.stderr
        cli("run", spec, *fast, "--baseline", baseline, "--exit-zero", code=ExitCode.OK)
        new = project.root / f"new-{fail_on}-{data}" / "gated.json"
        out = cli("diff", baseline, new, code=gated_code)
        assert f"gate fail_on {fail_on}: exit {int(gated_code)}" in out.stderr
        # issue 34: the verdict's word is the gated code's (never FAIL with exit 0)
        verdict_line = out.stderr.splitlines()[0]
        assert verdict_line.startswith("FAIL") == (gated_code == ExitCode.FINDINGS)
        assert ("**FAIL**" in out.stdout) == (gated_code == ExitCode.FINDINGS)
        cli("diff", baseline, new, "--exit-zero", code=ExitCode.OK)


def test_errors_exit_2_even_with_exit_zero(project: Project, cli: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    cli("diff", missing, missing, "--exit-zero", code=ExitCode.ERROR)
    spec = write_spec(project, "nowhere.csv", "err", "never", name="e.audit.yaml")
    cli("run", spec, "--exit-zero", code=ExitCode.ERROR)


# --- Issue 34: a gate that cannot test is never PASS -------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "audits" / "sample.audit.yaml"
SAMPLE_IDS = ["fpr", "tpr", "calibration"]


def _json(path: Path) -> dict:
    import json

    report = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(report, dict)
    return report


def _untested(out: Path, exit_code: int = int(ExitCode.ERROR)) -> dict:
    """The sample's report in ``out``: UNTESTED, every scan untested with a reason."""
    report = _json(out / "sample-credit.json")
    verdict = report["verdict"]
    assert verdict["status"] == "untested" and verdict["exit_code"] == exit_code
    assert [u["scan"] for u in verdict["untested_scans"]] == SAMPLE_IDS
    assert all("replicates" in u["reason"] for u in verdict["untested_scans"])
    assert [s["status"] for s in report["scans"]] == ["untested"] * 3
    assert all(s["untested_reason"] for s in report["scans"])
    md = (out / "sample-credit.md").read_text(encoding="utf-8")
    assert "**UNTESTED**" in md and "PASS" not in md
    return report


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("FAIRSCAN_", "GITHUB_")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("replicates", ["0", "9"])
def test_sample_without_enough_replicates_is_untested_not_pass(
    replicates: str, cli: Invoke, tmp_path: Path, clean_env: None
) -> None:
    """`--replicates 0` and `--replicates 9` (smallest p-value 0.1 > alpha 0.05) on the shipped
    sample data: exit 2, UNTESTED, never PASS, and --exit-zero does not turn it into 0."""
    out = tmp_path / "r"
    run = ("run", SAMPLE, "--replicates", replicates, "--workers", "1", "--no-progress")
    result = cli(*run, "--out", out, code=ExitCode.ERROR)
    assert "UNTESTED" in result.stderr and "PASS" not in result.stderr
    assert "raise significance.replicates to at least 19" in result.stderr
    report = _untested(out)
    if replicates == "9":  # the tests ran, but their p-values cannot go below 0.1
        assert {s["p_value_floor"] for s in report["scans"]} == {0.1}
    cli(*run, "--out", out, "--exit-zero", code=ExitCode.ERROR)


def test_environment_and_pyproject_replicates_are_untested(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    monkeypatch.setenv("FAIRSCAN_REPLICATES", "1")
    cli("run", SAMPLE, "--workers", "1", "--out", tmp_path / "env", code=ExitCode.ERROR)
    _untested(tmp_path / "env")
    monkeypatch.delenv("FAIRSCAN_REPLICATES")
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text("[tool.fairscan]\nreplicates = 1\n", encoding="utf-8")
    monkeypatch.chdir(work)
    out = cli("run", SAMPLE, "--workers", "1", "--out", tmp_path / "toml", code=ExitCode.ERROR)
    assert "UNTESTED" in out.stderr and "PASS" not in out.stderr
    _untested(tmp_path / "toml")


def _sample_spec(tmp_path: Path, gate: str, replicates: int = 0, name: str = "s") -> Path:
    """The sample spec with its data path absolute, its own gate and replicates."""
    text = SAMPLE.read_text(encoding="utf-8")
    text = text.replace("../sample_data/credit.csv", str(ROOT / "sample_data" / "credit.csv"))
    text = text.replace("replicates: 199", f"replicates: {replicates}")
    text = text.replace("output: {dir: ../reports,", "output: {dir: out,")
    spec = tmp_path / f"{name}.audit.yaml"
    spec.write_text(text + f"gate: {gate}\n", encoding="utf-8")
    return spec


def test_allow_untested_exits_0_and_still_says_untested(
    cli: Invoke, tmp_path: Path, clean_env: None
) -> None:
    spec = _sample_spec(tmp_path, "{allow_untested: true}")
    out = cli("run", spec, "--workers", "1", "--format", "json", "--format", "markdown")
    assert out.code == ExitCode.OK
    assert "UNTESTED" in out.stderr and "PASS" not in out.stderr
    assert "gate.allow_untested" in out.stderr
    _untested(tmp_path / "out", exit_code=int(ExitCode.OK))


def test_correction_decides_what_replicates_reach_alpha(
    cli: Invoke, tmp_path: Path, clean_env: None
) -> None:
    """Holm over the sample's 3 scans: 39 replicates reach 1/40 = 0.025 alone, but 3/40 = 0.075
    after correction (untested); 59 reach 3/60 = 0.05 (tested). BH's best case is 1/(R+1)."""
    holm = _sample_spec(tmp_path, "{correction: holm}", replicates=39, name="holm")
    out = cli("run", holm, "--workers", "1", code=ExitCode.ERROR)
    assert "ceil" not in out.stderr and "at least 59" in out.stderr
    report = _json(tmp_path / "out" / "sample-credit.json")
    assert report["verdict"]["status"] == "untested"
    assert "after gate.correction holm over 3 scans" in report["scans"][0]["untested_reason"]
    cli("run", holm, "--workers", "1", "--replicates", "59", code=ExitCode.FINDINGS)
    bh = _sample_spec(tmp_path, "{correction: bh}", replicates=19, name="bh")
    cli("run", bh, "--workers", "1", code=ExitCode.FINDINGS)


def test_several_specs_exit_with_the_worst_and_github_says_untested(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    tested = _sample_spec(tmp_path, "{fail_on: never}", replicates=19, name="a")
    untested = _sample_spec(tmp_path, "{fail_on: never}", replicates=9, name="b")
    outputs = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    cli("run", tested, untested, "--workers", "1", "--exit-zero", code=ExitCode.ERROR)
    text = outputs.read_text(encoding="utf-8")
    assert "\nUNTESTED\n" in text and "\nPASS\n" not in text
    # allowed: exit 0, and the step output still says UNTESTED, not PASS
    allowed = _sample_spec(tmp_path, "{allow_untested: true}", replicates=9, name="c")
    outputs.unlink()
    cli("run", tested, allowed, "--workers", "1", code=ExitCode.OK)
    assert "\nUNTESTED\n" in outputs.read_text(encoding="utf-8")


def test_github_annotations_name_the_untested_scans(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    spec = _sample_spec(tmp_path, "{fail_on: significant}", replicates=9)
    out = cli("run", spec, "--workers", "1", code=ExitCode.ERROR)
    annotations = [line for line in out.output.splitlines() if line.startswith("::error")]
    assert len(annotations) == 3
    assert all("UNTESTED" in line and "is untested" in line for line in annotations)


def test_validate_says_so_before_running(cli: Invoke, tmp_path: Path, clean_env: None) -> None:
    spec = _sample_spec(tmp_path, "{fail_on: significant}", replicates=9)
    line = next(
        n
        for n, text in enumerate(spec.read_text(encoding="utf-8").splitlines(), 1)
        if text.startswith("significance:")
    )
    out = cli("validate", "--no-data", spec, code=ExitCode.OK)
    assert f"{spec}:{line}:" in out.stderr
    assert "significance.replicates: 9 replicates cannot reach alpha 0.05" in out.stderr
    assert "at least 19" in out.stderr and "gate.allow_untested" in out.stderr
    out = cli("validate", "--no-data", spec, "--replicates", "19", code=ExitCode.OK)
    assert "cannot reach alpha" not in out.stderr
    out = cli("validate", "--no-data", spec, "--replicates", "1", code=ExitCode.OK)
    assert "significance.replicates = 1 (from --replicates)" in out.stderr


@pytest.mark.parametrize("alpha", ["0", "1", "-0.5", "nan"])
def test_alpha_outside_0_1_is_a_usage_error(
    alpha: str, cli: Invoke, tmp_path: Path, clean_env: None
) -> None:
    """`--alpha 0` was a `math domain error` (history page) or silently the spec's alpha
    (power): every --alpha takes significance.alpha's bounds, 0 < alpha < 1."""
    from fairscan.report.read import read_report
    from fairscan.run.history import append_run

    spec = _sample_spec(tmp_path, "{fail_on: never}", replicates=19)
    cli("run", spec, "--workers", "1", "--format", "json", code=ExitCode.OK)
    history = tmp_path / "h.sqlite"
    append_run(history, read_report(tmp_path / "out" / "sample-credit.json"))
    page = tmp_path / "page.html"
    out = cli("history", history, "--alpha", alpha, "--html", page, code=ExitCode.ERROR)
    assert "--alpha: must be above 0 and below 1" in out.stderr
    assert not page.exists()
    out = cli("power", spec, "--where", "ethnicity=C", "--alpha", alpha, code=ExitCode.ERROR)
    assert "--alpha: must be above 0 and below 1" in out.stderr
    out = cli("scan", ROOT / "sample_data" / "credit.csv", "--type", "fpr_scan", "--outcome",
              "default", "--recommendation", "high_risk", "--attributes", "sex,ethnicity",
              "--alpha", alpha, "--replicates", "19", code=ExitCode.ERROR)  # fmt: skip
    assert "--alpha" in out.stderr


@pytest.mark.parametrize("alpha", [0.0, 1.0, float("nan")])
def test_power_analysis_from_python_checks_alpha(alpha: float, tmp_path: Path) -> None:
    """The library call takes the same bounds as --alpha: a usage error naming alpha, never an
    internal error (alpha = 1 was one)."""
    from fairscan.api import power_analysis
    from fairscan.errors import UsageError

    spec = _sample_spec(tmp_path, "{fail_on: never}", replicates=19)
    with pytest.raises(UsageError, match="must be above 0 and below 1"):
        power_analysis(Path(spec), {"ethnicity": ["C"]}, alpha=alpha)
