"""Regression tests of hostile data (issue 16): whitespace variants, nested JSON, collapsed
quantile bins, non-finite discretize edges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from pydantic import ValidationError

from fairscan.data.load import read_table
from fairscan.data.prepare import prepare_data
from fairscan.data.table import PreparedData, RoleColumn
from fairscan.errors import DataError
from fairscan.spec.models import DataSpec, DiscretizeSpec

Y = RoleColumn("y", "outcome", "columns.outcome")


def prepare(frame: pl.DataFrame, **overrides: Any) -> PreparedData:
    kwargs: dict[str, Any] = {
        "roles": [Y],
        "attributes": ["g"],
        "discretize": {},
        "max_categories": 50,
        "filter": None,
    }
    kwargs.update(overrides)
    return prepare_data(frame, **kwargs)


def whitespace_frame() -> pl.DataFrame:
    return pl.DataFrame({"y": [0, 1, 0, 1, 0, 1], "g": ["C", "C ", " C", "A", "A", None]})


# --- whitespace ------------------------------------------------------------------------------


def test_strip_whitespace_is_on_by_default() -> None:
    assert DataSpec(path="x.csv").strip_whitespace is True


def test_whitespace_variants_are_merged_with_a_warning() -> None:
    data = prepare(whitespace_frame())
    assert data.attributes[0].labels[:2] == ("A", "C")
    assert len(data.attributes[0].labels) == 3  # A, C, missing
    (warning,) = [w for w in data.warnings if "whitespace" in w]
    assert "'g'" in warning
    assert "'C '" in warning and "' C'" in warning and "merged" in warning


def test_whitespace_stripped_before_the_filter() -> None:
    data = prepare(whitespace_frame(), filter="g = 'C'")
    assert data.n_rows == 3


def test_stripping_without_merging_is_silent() -> None:
    frame = pl.DataFrame({"y": [0, 1, 0, 1], "g": ["A ", "A ", "B", "B"]})
    data = prepare(frame)
    assert data.attributes[0].labels == ("A", "B")
    assert not [w for w in data.warnings if "whitespace" in w]


def test_no_stripping_keeps_the_values_apart_with_a_warning() -> None:
    data = prepare(whitespace_frame(), strip_whitespace=False)
    assert set(data.attributes[0].labels) >= {"C", "C ", " C", "A"}
    (warning,) = [w for w in data.warnings if "whitespace" in w]
    assert "separate subgroups" in warning and "strip_whitespace: true" in warning


def test_enum_attribute_is_stripped_in_its_order() -> None:
    frame = pl.DataFrame(
        {
            "y": [0, 1, 0, 1],
            "g": pl.Series(["lo ", "hi", "lo", "hi"], dtype=pl.Enum(["lo ", "lo", "hi"])),
        }
    )
    data = prepare(frame)
    assert data.attributes[0].labels == ("lo", "hi")


# --- nested JSON -----------------------------------------------------------------------------


def _ndjson(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "d.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    "values",
    [
        ["x", {"k": 1}, [1, 2], "y"],  # mixed: polars reads JSON text into a string column
        [{"k": 1}, {"k": 2}, {"k": 1}, {"k": 2}],  # a struct column
        [[1], [2], [1], [2]],  # a list column
    ],
    ids=["mixed", "objects", "lists"],
)
@pytest.mark.parametrize("role", [False, True], ids=["attribute", "outcome"])
def test_nested_json_is_an_error_naming_the_column(
    tmp_path: Path, values: list[Any], role: bool
) -> None:
    rows = [{"g": v, "y": i % 2, "h": "a"} for i, v in enumerate(values)]
    frame = read_table(_ndjson(tmp_path, rows))
    kwargs: dict[str, Any] = {}
    if role:
        kwargs = {"roles": [RoleColumn("g", "outcome", "columns.outcome")], "attributes": ["h"]}
    with pytest.raises(DataError) as info:
        prepare(frame, **kwargs)
    (issue,) = info.value.issues
    assert issue.column == "g"
    assert issue.field == ("columns.outcome" if role else "attributes[0]")
    assert "nested" in issue.message
    assert issue.hint and "flatten" in issue.hint


def test_json_looking_strings_are_not_nested(tmp_path: Path) -> None:
    rows = [{"g": v, "y": i % 2} for i, v in enumerate(["[1, 2)", "{x}", "[1, 2)", "a"])]
    data = prepare(read_table(_ndjson(tmp_path, rows)))
    assert set(data.attributes[0].labels) == {"[1, 2)", "{x}", "a"}


def test_unused_nested_column_is_fine(tmp_path: Path) -> None:
    rows = [{"g": "a" if i % 2 else "b", "y": i % 2, "meta": {"k": i}} for i in range(4)]
    data = prepare(read_table(_ndjson(tmp_path, rows)))
    assert data.attributes[0].labels == ("a", "b")


# --- discretisation --------------------------------------------------------------------------


def test_zero_inflated_quantiles_warn_and_suggest_edges() -> None:
    x = np.zeros(100)
    x[92:] = np.arange(1, 9)
    frame = pl.DataFrame({"y": [0, 1] * 50, "x": x})
    data = prepare(frame, attributes=["x"], discretize={"x": DiscretizeSpec(quantiles=5)})
    (warning,) = [w for w in data.warnings if "quantiles" in w]
    assert "discretize.x" in warning
    assert "only 1 bin" in warning and "[0, 8]" in warning
    assert "92% of its values are 0" in warning
    assert "edges: [1]" in warning


def test_full_quantile_bins_do_not_warn() -> None:
    frame = pl.DataFrame({"y": [0, 1] * 50, "x": np.arange(100.0)})
    data = prepare(frame, attributes=["x"], discretize={"x": DiscretizeSpec(quantiles=5)})
    assert not [w for w in data.warnings if "quantiles" in w]


@pytest.mark.parametrize("edge", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_edges_are_rejected(edge: float) -> None:
    with pytest.raises(ValidationError, match="finite"):
        DiscretizeSpec(edges=[1.0, edge] if edge > 0 else [edge, 1.0])


# --- provenance and missing build files ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "target"), [("compas.csv", "compas"), ("adult_subroc.csv", "adult")]
)
def test_missing_build_file_names_its_make_target(tmp_path: Path, name: str, target: str) -> None:
    with pytest.raises(DataError) as info:
        read_table(tmp_path / "build" / name)
    (issue,) = info.value.issues
    assert "does not exist" in issue.message
    assert issue.hint is not None and f"make {target}" in issue.hint


def test_missing_other_file_keeps_the_path_hint(tmp_path: Path) -> None:
    with pytest.raises(DataError) as info:
        read_table(tmp_path / "build" / "other.csv")
    assert "make" not in str(info.value.issues[0].hint)


def test_provenance_data_path_is_relative_to_the_spec(tmp_path: Path) -> None:
    from fairscan.run.execute import _relative_data_path

    spec = tmp_path / "repo" / "audits" / "a.audit.yaml"
    spec.parent.mkdir(parents=True)
    assert _relative_data_path(tmp_path / "repo" / "data" / "d.csv", spec) == "../data/d.csv"
    assert _relative_data_path(tmp_path / "repo" / "audits" / "d.csv", spec) == "d.csv"
    assert _relative_data_path("<in-memory polars DataFrame>", spec) == (
        "<in-memory polars DataFrame>"
    )
    # a spec that is gone (audit scan's temporary one): relative to the working directory
    gone = tmp_path / "gone" / "scan.audit.yaml"
    recorded = _relative_data_path(tmp_path / "d.csv", gone)
    assert (Path.cwd() / recorded).resolve() == (tmp_path / "d.csv").resolve()
    # sharing only the root: kept absolute
    assert _relative_data_path("/elsewhere/d.csv", "/work/a.audit.yaml") == "/elsewhere/d.csv"


def test_provenance_of_the_sample_spec_names_no_absolute_path() -> None:
    from fairscan.run.execute import _provenance
    from fairscan.run.prepare import prepare_audit

    root = Path(__file__).resolve().parents[2]
    prepared = prepare_audit(root / "audits" / "sample.audit.yaml")
    provenance = _provenance(
        prepared, np.random.SeedSequence(0), 0, "significance.seed", 1, 0.0, 0.0
    )
    assert provenance.data_path == "../sample_data/credit.csv"


# --- a threshold the predictions never (or always) cross -------------------------------------


def _threshold_case(thresholds: list[float] | float, prediction: list[float]) -> list[str]:
    from fairscan.scans.roles import ScanRoles, bind_roles, threshold_warnings

    n = len(prediction)
    per_row = not isinstance(thresholds, float)
    frame = pl.DataFrame(
        {
            "y": [i % 2 for i in range(n)],
            "p": prediction,
            "t": thresholds if per_row else [0.0] * n,
            "g": ["a", "b"] * (n // 2),
        }
    )
    p = RoleColumn("p", "probability", "columns.prediction")
    roles = ScanRoles(
        outcome=Y,
        prediction=p,
        threshold="t" if per_row else thresholds,
        threshold_field="scans[0].threshold",
        names={"prediction": "p", "recommendation": "p >= t"},
    )
    data = prepare(frame, roles=[Y, p], extra_columns=roles.threshold_columns())
    return threshold_warnings(data, roles, bind_roles(data, roles))


def test_threshold_column_never_crossed_warns() -> None:
    (warning,) = _threshold_case([5.0, 6.0, 5.0, 6.0], [0.1, 0.9, 0.4, 0.6])
    assert warning.startswith("scans[0].threshold:")
    assert "is 0 in all 4 rows" in warning and "never reaches" in warning
    assert "threshold column 't' (values 5 to 6)" in warning


def test_threshold_column_always_crossed_warns() -> None:
    (warning,) = _threshold_case([-1.0] * 4, [0.1, 0.9, 0.4, 0.6])
    assert "is 1 in all 4 rows" in warning and "always reaches" in warning


def test_numeric_threshold_out_of_reach_warns() -> None:
    (warning,) = _threshold_case(50.0, [0.1, 0.9, 0.4, 0.6])
    assert "threshold 50" in warning


def test_threshold_that_splits_the_rows_is_silent() -> None:
    assert _threshold_case([0.5] * 4, [0.1, 0.9, 0.4, 0.6]) == []


# --- memory ----------------------------------------------------------------------------------


def test_a_file_larger_than_memory_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fairscan.data import load

    path = tmp_path / "d.csv"
    pl.DataFrame({"y": [0, 1] * 500, "g": ["a", "b"] * 500}).write_csv(path)
    monkeypatch.setattr(load, "available_memory", lambda: 1000)

    def no_read(_: Path) -> pl.DataFrame:
        raise AssertionError("the file must not be read")

    monkeypatch.setitem(load._READERS, "csv", no_read)
    with pytest.raises(DataError) as info:
        read_table(path)
    (issue,) = info.value.issues
    assert issue.field == "data.path"
    assert "memory" in issue.message and "1.0 KB available" in issue.message
    assert issue.hint is not None and "sample" in issue.hint and "columns" in issue.hint


@pytest.mark.parametrize("fmt", ["parquet", "ipc", "ndjson"])
def test_memory_estimates_are_near_the_frame_size(tmp_path: Path, fmt: str) -> None:
    from fairscan.data.load import estimate_memory

    frame = pl.DataFrame({"x": np.arange(10_000.0), "g": ["ab", "cd"] * 5000})
    path = tmp_path / f"d.{fmt}"
    {"parquet": frame.write_parquet, "ipc": frame.write_ipc, "ndjson": frame.write_ndjson}[fmt](
        path
    )
    estimate = estimate_memory(path, fmt)
    assert 0.3 * frame.estimated_size() <= estimate <= 3 * frame.estimated_size()


def test_shipped_and_built_data_fit_in_memory() -> None:
    from fairscan.data.load import available_memory, estimate_memory

    root = Path(__file__).resolve().parents[2]
    available = available_memory()
    for path in [root / "sample_data" / "credit.csv", *(root / "build").glob("*.csv")]:
        assert estimate_memory(path, "csv") < 50_000_000  # far below any machine's memory
        if available is not None:
            assert estimate_memory(path, "csv") < available


def test_cgroup_limit_does_not_count_the_page_cache(tmp_path: Path) -> None:
    from fairscan.memory_budget import cgroup_available, cgroup_limit

    assert cgroup_available(tmp_path) is None  # no cgroup files
    (tmp_path / "memory.max").write_text("1000\n")
    (tmp_path / "memory.current").write_text("900\n")
    (tmp_path / "memory.stat").write_text("anon 300\nfile 600\n")
    assert cgroup_available(tmp_path) == 700
    assert cgroup_limit(tmp_path) == 1000
    (tmp_path / "memory.max").write_text("max\n")
    assert cgroup_available(tmp_path) is None


def test_cgroup_v1_limit_is_read_and_the_tightest_limit_wins(tmp_path: Path) -> None:
    from fairscan.memory_budget import cgroup_available, cgroup_limit

    v1 = tmp_path / "memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (v1 / "memory.usage_in_bytes").write_text("500\n")
    assert cgroup_available(tmp_path) is None
    (v1 / "memory.limit_in_bytes").write_text("2000\n")
    (v1 / "memory.stat").write_text("cache 10\ntotal_cache 400\n")
    assert cgroup_available(tmp_path) == 1900
    (tmp_path / "memory.max").write_text("1000\n")  # a v2 limit as well: the tighter one
    (tmp_path / "memory.current").write_text("100\n")
    assert cgroup_available(tmp_path) == 900
    assert cgroup_limit(tmp_path) == 1000
