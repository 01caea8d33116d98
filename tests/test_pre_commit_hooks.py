"""The pre-commit hooks of docs/examples/pre-commit-config.yaml (docs/ci.md, "pre-commit").

``fairscan-schema`` is the check that needs no build: a local hook whose environment holds
check-jsonschema alone (pre-commit installs a hook repository's own package into each of its
Python hooks, so served from .pre-commit-hooks.yaml it would compile fairscan's kernels). These
tests run the command the hook runs, on the specs this repository ships and on broken ones.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "docs" / "examples" / "pre-commit-config.yaml"
SHIPPED_SPECS = sorted(
    [*ROOT.glob("audits/*.audit.yaml"), *ROOT.glob("docs/examples/*.audit.yaml")]
)


def _hooks() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    (repo,) = config["repos"]
    assert repo["repo"] == "local"  # no hook repository: pre-commit installs nothing of fairscan
    return {hook["id"]: hook for hook in repo["hooks"]}


def _schema_check(*files: Path) -> subprocess.CompletedProcess[str]:
    """What pre-commit runs for fairscan-schema (its entry, then the files), from the repository
    root as pre-commit does; check-jsonschema is the one in this environment (the test extra)."""
    entry = shlex.split(_hooks()["fairscan-schema"]["entry"])
    assert entry[0] == "check-jsonschema"
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", *entry[1:], *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_schema_hook_installs_check_jsonschema_alone() -> None:
    hook = _hooks()["fairscan-schema"]
    assert hook["language"] == "python"
    (requirement,) = hook["additional_dependencies"]
    assert re.fullmatch(r"check-jsonschema==[\d.]+", requirement), requirement
    assert shlex.split(hook["entry"]) == [
        "check-jsonschema",
        "--schemafile",
        "schemas/audit-spec.schema.json",
    ]
    assert (ROOT / "schemas" / "audit-spec.schema.json").is_file()
    files = re.compile(hook["files"])
    assert files.search("audits/credit.audit.yaml") and files.search("a/b.audit.yml")
    assert not files.search("audits/credit.yaml") and not files.search("reports/x.json")


def test_the_full_hooks_run_what_the_hook_repository_serves() -> None:
    """The config's fairscan-validate and fairscan-run are .pre-commit-hooks.yaml's, run by the
    `audit` of the environment (language: system) instead of a build of this repository."""
    served = {
        hook["id"]: hook
        for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    }
    local = _hooks()
    assert set(local) == {"fairscan-schema", *served}
    for id_, hook in served.items():
        assert local[id_]["language"] == "system"
        for key in ("entry", "files", "stages"):
            assert local[id_].get(key) == hook.get(key), (id_, key)
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert '--8<-- "docs/examples/pre-commit-config.yaml"' in page


def test_the_schema_check_accepts_every_shipped_spec() -> None:
    assert len(SHIPPED_SPECS) >= 15, SHIPPED_SPECS
    done = _schema_check(*SHIPPED_SPECS)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ("replicates: 199", "replicate: 199", "'replicate' was unexpected"),
        ("alpha: 0.05", "alpha: high", "$.significance.alpha"),
        ("type: tpr_scan", "type: tpr_scn", "$.scans[1]"),
        ("attributes: [sex, ethnicity, age_group, region]\n", "", "'attributes' is a required"),
    ],
)
def test_the_schema_check_rejects_a_broken_spec(
    tmp_path: Path, old: str, new: str, named: str
) -> None:
    sample = (ROOT / "audits" / "sample.audit.yaml").read_text(encoding="utf-8")
    assert old in sample
    broken = tmp_path / "broken.audit.yaml"
    broken.write_text(sample.replace(old, new), encoding="utf-8")
    done = _schema_check(ROOT / "audits" / "sample.audit.yaml", broken)
    assert done.returncode == 1, done.stdout + done.stderr
    assert named in done.stdout + done.stderr
    assert "sample.audit.yaml" not in (done.stdout + done.stderr).replace(str(broken), "")
