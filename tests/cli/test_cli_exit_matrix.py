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
        cli("diff", baseline, new, "--exit-zero", code=ExitCode.OK)


def test_errors_exit_2_even_with_exit_zero(project: Project, cli: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    cli("diff", missing, missing, "--exit-zero", code=ExitCode.ERROR)
    spec = write_spec(project, "nowhere.csv", "err", "never", name="e.audit.yaml")
    cli("run", spec, "--exit-zero", code=ExitCode.ERROR)
