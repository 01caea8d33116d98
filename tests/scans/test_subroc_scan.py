"""The `subroc` scan through the spec layer and the library API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.api import RunOptions, run_audit
from fairscan.data.table import EncodedAttribute, PreparedData
from fairscan.errors import FairscanError
from fairscan.report.models import ScanResult
from fairscan.report.text import fmt_p
from fairscan.scans.base import RoleArrays, ScanContext
from fairscan.scans.subroc import SubrocResult, SubrocSpec, run_subroc
from fairscan.scans.subroc.render import subroc_finding_markdown, subroc_markdown

ROOT = Path(__file__).resolve().parents[2]


def _detail(scan: ScanResult) -> SubrocResult:
    return SubrocResult.model_validate(scan.detail["subroc"])


def _check_contract(scan: ScanResult) -> None:
    """Findings are exactly the reported patterns, best first, with the pattern's figures."""
    res = _detail(scan)
    reported = [p for p in res.patterns if p.reported]
    assert [f.subgroup for f in scan.findings] == [p.subgroup for p in reported]
    assert res.reported == len(scan.findings) <= scan.parameters["top_k"]
    for f, p in zip(scan.findings, reported, strict=True):
        assert f.statistic.name == "interestingness" and f.statistic.value == p.score > 0
        assert f.effect.inside == p.search.measure and f.effect.reference == res.overall_search
        assert f.effect.reference_name == "everyone in the search set"
        assert f.effect.reference_count == res.search_rows and f.size == p.search.size
        assert (f.p_value, f.adjusted_p_value, f.significant) == (
            p.p_value,
            p.adjusted_p_value,
            p.significant,
        )
        assert f.significant is not False
        assert f.detail["rank"] == p.rank and f.detail["search"] == p.search.model_dump()
        assert f.detail["roc"] is not None


def _data(tmp_path: Path, n: int = 1200, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c"], n)
    color = rng.choice(["red", "blue"], n)
    age = rng.integers(18, 80, n).astype(float)
    y = (rng.random(n) < 0.5).astype(int)
    score = rng.normal(2.0 * y, 1.0)
    bad = group == "c"  # the classifier is uninformative for group c
    score[bad] = rng.normal(0, 1, bad.sum())
    split = np.where(rng.random(n) < 0.5, "s", "v")
    path = tmp_path / "d.csv"
    pl.DataFrame(
        {"y": y, "score": score * 3 - 1, "group": group, "color": color, "age": age, "part": split}
    ).write_csv(path)
    return path


def _spec(tmp_path: Path, scan: dict, **top) -> Path:
    spec = {
        "version": 1,
        "name": "t",
        "data": {"path": "d.csv"},
        "columns": {"outcome": "y", "prediction": "score"},
        "attributes": ["group", "color", "age"],
        "discretize": {"age": {"quantiles": 4}},
        "scans": [{"id": "s", "type": "subroc", **scan}],
        "significance": {"seed": 1, "workers": 1},
        **top,
    }
    path = tmp_path / "x.audit.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run(path: Path):
    return run_audit(path, RunOptions(write=False)).report


def test_finds_the_uninformative_group_with_a_split_column(tmp_path):
    _data(tmp_path)
    report = _run(
        _spec(
            tmp_path,
            {
                "split": {"column": "part", "search": "s", "validation": "v"},
                # BY over the (at most k' = 10) positive-score candidates with p >= 1/2001
                "significance": {"subsets": 2000},
                "candidates": 10,
            },
        )
    )
    scan = report.scans[0]
    assert scan.status == "significant", scan
    _check_contract(scan)
    res = _detail(scan)
    top = scan.findings[0]
    assert top.subgroup == {"group": ["c"]} and top.label == "group = c"
    assert top.effect.metric == "ROC AUC"
    assert top.effect.inside < 0.7 < top.effect.reference
    assert top.significant is True and 0 < top.p_value <= top.adjusted_p_value <= 0.05
    assert report.verdict.significant_findings == len(scan.findings)
    assert res.search_rows + res.validation_rows == 1200
    # only the 4 patterns with a positive score are candidates (k' = 10 is not filled), and
    # only they are tested and counted in the BY correction
    assert res.candidates_evaluated > 0 and len(res.patterns) == res.candidates_tested == 4
    assert all(p.score > 0 for p in res.patterns)
    md = "\n".join(subroc_markdown(scan))
    assert "group = c" in md and "candidate patterns evaluated" in md
    assert "Validation set: ROC AUC" in "\n".join(subroc_finding_markdown(scan, top))


def test_fraction_split_is_stratified_and_seeded(tmp_path):
    _data(tmp_path)
    spec = _spec(tmp_path, {"split": {"fraction": 0.3}, "significance": {"subsets": 50}})
    a, b = _run(spec).scans[0], _run(spec).scans[0]
    assert _detail(a).search_rows == pytest.approx(360, abs=2)
    assert [p.p_value for p in _detail(a).patterns] == [p.p_value for p in _detail(b).patterns]
    _check_contract(a)


def test_default_split_and_other_measures(tmp_path):
    _data(tmp_path)
    for measure in ("pr_auc", "ranking_loss"):
        scan = _run(_spec(tmp_path, {"measure": measure, "significance": {"subsets": 50}})).scans[0]
        assert scan.status != "error", scan.error
        _check_contract(scan)
        res = _detail(scan)
        assert res.search_rows == pytest.approx(600, abs=2)
        if measure == "pr_auc":  # ARL grows with the negatives, so small groups rarely exceed it
            assert res.patterns[0].subgroup == {"group": ["c"]}
            assert all(f.effect.metric == "PR AUC" for f in scan.findings)


def test_missing_split_value_is_a_clear_error(tmp_path):
    _data(tmp_path)
    scan = _run(
        _spec(tmp_path, {"split": {"column": "part", "search": "s", "validation": "nope"}})
    ).scans[0]
    assert scan.status == "error"
    assert "no row has part = 'nope'" in scan.error and "values present: s, v" in scan.error


def test_min_cover_larger_than_data(tmp_path):
    _data(tmp_path)
    scan = _run(_spec(tmp_path, {"min_cover": 100_000})).scans[0]
    assert scan.status == "no_finding" and scan.findings == []
    assert any("min_cover" in w for w in scan.warnings)


def test_one_class_search_set_is_an_error(tmp_path):
    path = _data(tmp_path)
    frame = pl.read_csv(path)
    frame = frame.with_columns(
        pl.when(pl.col("part") == "s").then(1).otherwise(pl.col("y")).alias("y")
    )
    frame.write_csv(path)
    scan = _run(
        _spec(tmp_path, {"split": {"column": "part", "search": "s", "validation": "v"}})
    ).scans[0]
    assert scan.status == "error" and "roc_auc is undefined" in scan.error


@pytest.mark.parametrize(
    "bad",
    [
        {"split": {"column": "part", "search": "s"}},
        {"split": {"fraction": 0.5, "column": "part"}},
        {"split": {"fraction": 1.5}},
        {"top_k": 10, "candidates": 5},
        {"measure": "accuracy"},
        {"significance": {"correction": "holm"}},
    ],
)
def test_spec_errors(tmp_path, bad):
    _data(tmp_path)
    with pytest.raises(FairscanError):
        _run(_spec(tmp_path, bad))


@pytest.fixture(scope="module")
def adult_csv(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Adult search/validation split with xgboost scores (scripts/prepare_adult.py)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("adult") / "adult_subroc.csv"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "prepare_adult.py"),
            "--shared",
            str(shared_data / "adult"),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


@pytest.mark.slow
def test_adult_audit_spec_reports_its_significant_patterns(tmp_path, adult_csv):
    spec = yaml.safe_load((ROOT / "audits" / "adult-subroc.audit.yaml").read_text())
    spec["data"]["path"] = str(adult_csv)
    path = tmp_path / "a.audit.yaml"
    path.write_text(yaml.safe_dump(spec))
    report = _run(path)
    scan = report.scans[0]
    res = _detail(scan)
    assert res.search_rows == 15074 and res.validation_rows == 15074
    assert res.overall_search == pytest.approx(0.921293, abs=1e-6)
    assert res.overall_validation == pytest.approx(0.920672, abs=1e-6)
    assert res.patterns[0].subgroup == {"marital-status": ["Married-civ-spouse"]}
    # every tested candidate stays in the detail: the 80 patterns with a positive score (k' =
    # 100 is not filled; before methods.md §6.6 step 1 the list was padded with 20 zero-score
    # patterns, all tested and counted in BY: adjusted p 0.0157 instead of 0.0124)
    assert len(res.patterns) == res.candidates_tested == 80
    assert all(p.score > 0 for p in res.patterns)
    # the top-5 reported patterns are the findings, each significant after BY
    _check_contract(scan)
    assert len(scan.findings) == 5 and scan.status == "significant"
    assert scan.findings[0].label == "marital-status = Married-civ-spouse"
    for f in scan.findings:
        assert f.significant is True
        assert f.p_value is not None and f.adjusted_p_value is not None
        assert f.p_value <= f.adjusted_p_value <= 0.05
        assert f.p_value == pytest.approx(1 / 1001)
        assert f.adjusted_p_value == pytest.approx(0.012401, abs=1e-6)
        assert f.effect.metric == "ROC AUC" and f.effect.inside < f.effect.reference
    assert report.verdict.significant_findings == 5


# --- the runner on a hand-built context (no data layer) ------------------------------------------


def _context(replicates: int, n: int = 1000, seed: int = 0) -> ScanContext:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.5).astype(np.int8)
    score = rng.normal(2.0 * y, 1.0)
    score[group == 2] = rng.normal(0, 1, int((group == 2).sum()))  # uninformative for c
    data = PreparedData(
        n_rows_raw=n,
        attributes=(EncodedAttribute(name="group", labels=("a", "b", "c")),),
        codes=np.ascontiguousarray(group.astype(np.int32)[:, None]),
    )
    return ScanContext(
        data=data,
        alpha=0.05,
        replicates=replicates,
        seed=np.random.SeedSequence(7),
        role_names={"outcome": "y", "prediction": "score"},
        roles=RoleArrays(outcome=y, prediction=score),
    )


def test_runner_findings_are_the_reported_patterns():
    spec = SubrocSpec(id="s", type="subroc", significance={"subsets": 200}, candidates=5, top_k=2)
    scan = run_subroc(spec, _context(replicates=1))
    _check_contract(scan)
    assert scan.findings[0].subgroup == {"group": ["c"]}
    assert scan.status == "significant" and scan.findings[0].significant is True


def test_untested_patterns_are_findings_without_p_values():
    spec = SubrocSpec(id="s", type="subroc", candidates=5, top_k=2)
    scan = run_subroc(spec, _context(replicates=0))  # --replicates 0 switches the test off
    _check_contract(scan)
    assert scan.status == "untested" and scan.parameters["subsets_used"] == 0
    assert scan.findings and all(f.significant is None for f in scan.findings)
    assert all(f.p_value is None and f.adjusted_p_value is None for f in scan.findings)


def test_a_missing_score_is_a_scan_error():
    ctx = _context(replicates=0)
    ctx.roles = RoleArrays(outcome=ctx.roles.outcome)
    with pytest.raises(FairscanError, match="prediction"):
        run_subroc(SubrocSpec(id="s", type="subroc"), ctx)


def test_reports_render_the_candidates_and_roc_curves(tmp_path):
    from fairscan.report.html import render_html
    from fairscan.report.markdown import render_markdown
    from fairscan.scans import render_hooks

    _data(tmp_path)
    report = _run(
        _spec(
            tmp_path,
            {
                "split": {"column": "part", "search": "s", "validation": "v"},
                "significance": {"subsets": 2000},
                "candidates": 10,
            },
        )
    )
    assert report.scans[0].findings
    md = render_markdown(report, render_hooks())
    assert "candidate patterns evaluated" in md and "| reported |" in md
    html = render_html(report, render_hooks())
    assert html.count('class="roc"') >= 2  # the whole search set and the pattern
    assert "candidates tested" in html


@pytest.mark.parametrize("correction", ["by", "bh", "bonferroni"])
def test_the_correction_counts_only_the_positive_score_candidates(correction):
    """methods.md §6.6 steps 1 and 5: a pattern with score <= 0 is not a candidate, so it is
    neither tested nor counted in the correction (k' = 50 is far from filled here)."""
    from fairscan.engine.multiple_testing import adjust_p_values

    spec = SubrocSpec(
        id="s",
        type="subroc",
        candidates=50,
        significance={"subsets": 200, "correction": correction},
    )
    scan = run_subroc(spec, _context(replicates=1))
    res = _detail(scan)
    assert 0 < res.candidates_tested == len(res.patterns) < 50
    assert all(p.score > 0 for p in res.patterns)
    raw = np.array([p.p_value for p in res.patterns])
    adjusted = [p.adjusted_p_value for p in res.patterns]
    assert adjusted == pytest.approx(adjust_p_values(raw, correction).tolist())
    assert f"{res.candidates_tested} top candidates with a positive score tested" in "\n".join(
        subroc_markdown(scan)
    )


def test_no_positive_score_pattern_means_nothing_to_test():
    """A perfect ranking: no subgroup ranks worse than everyone, so nothing is tested."""
    ctx = _context(replicates=1)
    y = ctx.roles.outcome
    ctx.roles = RoleArrays(outcome=y, prediction=y + np.linspace(0.0, 0.5, len(y)))
    spec = SubrocSpec(id="s", type="subroc", candidates=5, top_k=2)
    scan = run_subroc(spec, ctx)
    res = _detail(scan)
    assert scan.status == "no_finding" and scan.findings == []
    assert res.patterns == [] and res.candidates_tested == 0 and res.null_distributions == 0


def test_no_significant_pattern_names_the_best_candidate():
    """Issue 16: with nothing significant, the text still names the closest call."""
    from fairscan.scans.subroc.render import subroc_html

    spec = SubrocSpec(id="s", type="subroc", significance={"subsets": 9}, candidates=5, top_k=2)
    scan = run_subroc(spec, _context(replicates=1))  # p >= 1/10: nothing can be significant
    res = _detail(scan)
    assert res.reported == 0 and res.patterns
    best = min(res.patterns, key=lambda p: (p.adjusted_p_value, p.rank))
    md = "\n".join(subroc_markdown(scan))
    assert "No pattern survives the significance filter. Best candidate: " in md
    assert f"Best candidate: {best.label} (ROC AUC " in md
    assert f"adjusted p = {fmt_p(best.adjusted_p_value)} > alpha = 0.05)." in md
    assert f"Best candidate: {best.label}" in subroc_html(scan)
