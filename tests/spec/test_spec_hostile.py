"""Hostile spec input (issue 16): non-finite numbers, out-of-range values, alias bombs,
unreadable files, quadratic messages and over-long echoes all end in a located SpecError."""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_texts import replace

from fairscan.api import load_spec_from_text
from fairscan.errors import Issue, SpecError

HEAD = """\
version: 1
name: t
data: {path: x.csv}
columns: {outcome: y, prediction: p, recommendation: r}
attributes: [a]
scans:
"""


def issues_of(text: str) -> list[Issue]:
    with pytest.raises(SpecError) as info:
        load_spec_from_text(text, "s.audit.yaml")
    return info.value.issues


def only_issue(text: str) -> Issue:
    issues = issues_of(text)
    assert len(issues) == 1, [i.render() for i in issues]
    return issues[0]


# -- non-finite numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scan", "field", "shown"),
    [
        (
            "{id: f, type: flag, metric: fpr, tolerance: .nan, groups: {attributes: [a]}}",
            "scans[0].tolerance",
            ".nan",
        ),
        (
            "{id: f, type: certify, metric: fpr, tolerance: -.inf, groups: {attributes: [a]}}",
            "scans[0].tolerance",
            "-.inf",
        ),
        (
            "{id: f, type: certify, metric: fpr, target: .inf, groups: {attributes: [a]}}",
            "scans[0].target",
            ".inf",
        ),
        (
            "{id: f, type: flag, metric: fpr, target: .NaN, tolerance: 0.1, "
            "groups: {attributes: [a]}}",
            "scans[0].target",
            ".NaN",
        ),
        ("{id: i, type: ijdi_scan, lambda: .inf}", "scans[0].lambda", ".inf"),
        ("{id: i, type: fpr_scan, penalty: .inf}", "scans[0].penalty", ".inf"),
        ("{id: i, type: bias_scan, penalty: .nan}", "scans[0].penalty", ".nan"),
        ("{id: i, type: fpr_scan, threshold: .inf}", "scans[0].threshold", ".inf"),
    ],
)
def test_non_finite_numbers_are_rejected(scan: str, field: str, shown: str) -> None:
    issue = only_issue(HEAD + f"  - {scan}\n")
    assert issue.field == field
    assert issue.message == f"expected a finite number, got {shown}"
    assert issue.hint is not None and "NaN" in issue.hint
    assert issue.line == 7


def test_non_finite_number_where_text_is_also_allowed() -> None:
    issue = only_issue(HEAD + "  - {id: i, type: ijdi_scan, lambda: 1, threshold: .nan}\n")
    assert issue.field == "scans[0].threshold"
    assert issue.message == "a numeric threshold must be a finite number, got .nan"
    assert issue.hint


def test_non_finite_in_shared_blocks_is_rejected() -> None:
    text = HEAD + "  - {id: f, type: fpr_scan}\nsignificance: {alpha: .nan}\n"
    assert only_issue(text).message == "expected a finite number, got .nan"
    text = HEAD + "  - {id: f, type: fpr_scan}\ndefaults: {penalty: .inf}\n"
    assert "defaults.penalty" in [i.field for i in issues_of(text)]


def test_certify_rescale_w0_inf_literal_still_works() -> None:
    text = HEAD + (
        "  - {id: c, type: certify, metric: fpr, groups: {attributes: [a]}, rescale: {w0: inf}}\n"
    )
    loaded = load_spec_from_text(text, "s.audit.yaml")
    assert loaded.spec.scans[0].rescale.w0_value == float("inf")  # type: ignore[attr-defined]


def test_a_value_matching_no_union_member_is_one_issue() -> None:
    issue = only_issue(
        HEAD + "  - {id: f, type: certify, metric: fpr, target: abc, groups: {attributes: [a]}}\n"
    )
    assert issue.field == "scans[0].target"
    assert issue.message == "expected 'overall', a mapping or a number, got 'abc'"
    assert issue.hint


def test_compas_spec_with_nan_alpha() -> None:
    issue = only_issue(replace("alpha: 0.05", "alpha: .nan"))
    assert issue.field == "significance.alpha"


# -- unknown keys: linear ------------------------------------------------------------------------


@pytest.mark.slow
def test_many_unknown_keys_are_reported_in_linear_time() -> None:
    import time

    from fairscan.spec.issues import MAX_ISSUES

    def seconds(n: int) -> float:
        keys = "".join(f"  k{i}: 1\n" for i in range(n))
        text = HEAD + "  - {id: f, type: fpr_scan}\nsignificance:\n" + keys
        start = time.process_time()  # CPU time: another process on the machine does not count
        issues = issues_of(text)
        elapsed = time.process_time() - start
        # the first MAX_ISSUES, then a count of the others (issue 24: a screenful, not 200k lines)
        assert len(issues) == MAX_ISSUES + 1
        assert issues[0].message == "unknown key 'k0'"
        assert (
            issues[-1].message
            == f"... and {n - MAX_ISSUES:,} more problem(s) like these, not shown"
        )
        return elapsed

    seconds(200)  # warm-up
    small, large = seconds(1_000), seconds(10_000)
    # quadratic work would make 10x the keys cost ~100x; a ratio of CPU times, no absolute limit
    assert large < max(30 * small, 1.0), (small, large)


# -- echoed values are truncated -------------------------------------------------------------


def test_truncate_helper() -> None:
    from fairscan.errors import truncate

    assert truncate("abc") == "abc"
    assert truncate("x" * 200) == "x" * 79 + "…"
    assert len(truncate("y" * 81, 10)) == 10


def test_a_csv_given_as_extends_is_not_echoed_whole(tmp_path: Path) -> None:
    from fairscan.api import load_spec

    rows = "".join(f"{i},{2 * i},some text\n" for i in range(3000))
    (tmp_path / "data.csv").write_text("a,b,c\n" + rows)
    spec = tmp_path / "s.audit.yaml"
    spec.write_text("extends: data.csv\nversion: 1\n")
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    text = info.value.render()
    assert "top level of a spec must be a mapping" in text
    assert "…" in text
    assert len(text) < 600


def test_long_values_and_keys_are_cut_in_messages() -> None:
    long = "z" * 1000
    issue = only_issue(HEAD + "  - {id: f, type: fpr_scan}\nsignificance: {" + long + ": 1}\n")
    assert len(issue.render()) < 600
    assert "…" in issue.message
    issue = only_issue(HEAD + f"  - {{id: f, type: fpr_scan, penalty: '{long}'}}\n")
    assert len(issue.render()) < 600


# -- out-of-range values and impossible paths ---------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "target", "shown"),
    [("fpr", "5", "[0, 1]"), ("brier", "-0.5", "[0, 1]"), ("calibration", "1.5", "[-1, 1]")],
)
def test_target_outside_the_metrics_range(metric: str, target: str, shown: str) -> None:
    issue = only_issue(
        HEAD + f"  - {{id: f, type: flag, metric: {metric}, tolerance: 0.1, target: {target}, "
        "groups: {attributes: [a]}}\n"
    )
    assert issue.field == "scans[0].target"
    assert issue.message.endswith(f"outside the range of metric {metric}: {shown}")
    assert issue.hint and "overall" in issue.hint
    assert issue.line == 7


def test_target_of_unbounded_metrics_is_free() -> None:
    for scan in (
        "{id: f, type: flag, metric: squared_error, tolerance: 1, target: 50, "
        "groups: {attributes: [a]}}",
        "{id: f, type: flag, loss: l, tolerance: 1, target: -7, groups: {attributes: [a]}}",
        "{id: f, type: flag, metric: fpr, tolerance: 0.1, target: 0.3, groups: {attributes: [a]}}",
    ):
        load_spec_from_text(HEAD + f"  - {scan}\n", "s.audit.yaml")


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ('data: {path: "x\\0.csv"}', "data.path", "NUL byte"),
        ("data: {path: " + "a" * 300 + ".csv}", "data.path", "longer than 255 bytes"),
        ("data: {path: " + "a/" * 2100 + "x.csv}", "data.path", "longer than 4096 bytes"),
        ('output: {dir: "r\\0"}', "output.dir", "NUL byte"),
    ],
)
def test_impossible_paths_are_spec_errors(extra: str, field: str, words: str) -> None:
    text = HEAD.replace("data: {path: x.csv}\n", "") + "  - {id: f, type: fpr_scan}\n" + extra
    text += "\n" if "data:" not in extra else ""
    if "data:" not in extra:
        text += "data: {path: x.csv}\n"
    issue = only_issue(text)
    assert issue.field == field
    assert words in issue.message
    assert issue.hint


def test_significance_limits_are_shared_with_the_cli() -> None:
    from fairscan.spec.constraints import MAX_REPLICATES, MAX_WORKERS
    from fairscan.spec.models import SignificanceSpec

    assert SignificanceSpec.model_fields["workers"].metadata[-1].le == MAX_WORKERS == 256
    assert SignificanceSpec.model_fields["replicates"].metadata[-1].le == MAX_REPLICATES


# -- alias bombs, recursion and deep nesting --------------------------------------------------

BOMB = "version: 1\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{x}: &{x} [{', '.join([f'*{p}'] * 9)}]\n" for p, x in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_billion_laughs_is_rejected_quickly() -> None:
    # the expansion is refused after 100,000 values instead of building 9**9 of them; how fast
    # that is belongs to a benchmark (a wall-clock limit here fails on a busy machine)
    issue = only_issue(BOMB)
    assert "expand this value to more than 100,000 values" in issue.message
    assert issue.line is not None and issue.hint and "alias" in issue.hint


def test_a_few_aliases_are_still_fine() -> None:
    text = HEAD.replace("attributes: [a]", "attributes: &attrs [a]") + (
        "  - {id: f, type: flag, metric: fpr, tolerance: 0.1, groups: {attributes: *attrs}}\n"
    )
    load_spec_from_text(text, "s.audit.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "version: 1\nx: " + "[" * 1000 + "]" * 1000 + "\n",
        "version: 1\nx:\n" + "".join("  " * i + "k:\n" for i in range(1, 1000)),
        "version: 1\nx: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n",
    ],
)
def test_deep_nesting_is_a_spec_error_not_a_recursion_error(text: str) -> None:
    issue = only_issue(text)
    assert "nested more than 100 levels deep" in issue.message
    assert issue.line is not None and issue.hint


def test_alias_chains_deeper_than_the_limit_are_rejected() -> None:
    lines = ["version: 1", "a0: &a0 [1]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 300)]
    issue = only_issue("\n".join(lines) + "\n")
    assert "more than 100 levels deep" in issue.message


# -- files that are not spec files --------------------------------------------------------------


def _error_of(path: Path) -> Issue:
    from fairscan.api import load_spec

    with pytest.raises(SpecError) as info:
        load_spec(path)
    (issue,) = info.value.issues
    assert issue.hint
    return issue


def test_a_device_is_not_read() -> None:
    issue = _error_of(Path("/dev/zero"))
    assert "not a regular file" in issue.message


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "spec.audit.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in _error_of(fifo).message


def test_a_huge_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.audit.yaml"
    big.write_text("#" * (2 << 20))
    assert "larger than the 1 MiB" in _error_of(big).message


def test_symlink_loops_and_long_names(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert "symbolic links" in _error_of(tmp_path / "a").message
    issue = _error_of(tmp_path / ("x" * 300))
    assert "too long" in issue.message
    assert len(issue.render()) < 800


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "loop", "big.yaml"])
def test_extends_reads_only_small_regular_files(tmp_path: Path, target: str) -> None:
    import os

    from fairscan.api import load_spec

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "big.yaml").write_text("#" * (2 << 20))
    spec = tmp_path / "s.audit.yaml"
    spec.write_text(f"extends: {target}\nversion: 1\n")
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    (issue,) = info.value.issues
    assert issue.field == "extends"
    assert (issue.line, issue.col) == (1, 10)
    assert "cannot read the extended spec" in issue.message
    assert issue.hint
