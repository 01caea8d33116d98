"""load_spec / load_spec_from_text and LoadedSpec.locate_field."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from spec_texts import COMPAS_SPEC, LINE, replace

from fairscan.api import load_spec, load_spec_from_text
from fairscan.errors import SpecError
from fairscan.scans.bias import BiasScanSpec
from fairscan.scans.fpr_scan import FprScanSpec, TprScanSpec
from fairscan.spec.load import LoadedSpec, parse_field_path


@pytest.fixture
def compas() -> LoadedSpec:
    return load_spec_from_text(COMPAS_SPEC, "compas.audit.yaml")


def test_the_contract_spec_loads_as_written(compas: LoadedSpec) -> None:
    spec = compas.spec
    assert spec.version == 1
    assert spec.name == "compas-fpr"
    assert (spec.data.path, spec.data.filter) == ("compas.csv", "age >= 18")
    assert (spec.columns.outcome, spec.columns.prediction, spec.columns.recommendation) == (
        "y",
        "p",
        "p_bin",
    )
    assert spec.attributes == ["sex", "race", "age_cat", "c_charge_degree", "priors"]
    # `age` is discretized but not among the attributes: accepted (harmless).
    assert spec.discretize["age"].quantiles == 5
    fpr, tpr, calib = spec.scans
    assert isinstance(fpr, FprScanSpec) and (fpr.id, fpr.penalty, fpr.restarts) == ("fpr", 1.0, 100)
    assert isinstance(tpr, TprScanSpec) and tpr.id == "tpr"
    assert isinstance(calib, BiasScanSpec) and calib.direction == "negative"
    assert (spec.significance.replicates, spec.significance.alpha, spec.significance.seed) == (
        999,
        0.05,
        0,
    )
    assert (spec.output.dir, spec.output.formats) == ("reports", ["json", "markdown"])
    assert compas.path == Path("compas.audit.yaml")
    assert compas.text == COMPAS_SPEC
    assert compas.sha256 == hashlib.sha256(COMPAS_SPEC.encode()).hexdigest()


def test_a_spec_without_the_modeline_loads_too() -> None:
    text = COMPAS_SPEC.split("\n", 1)[1]
    assert load_spec_from_text(text, "x.yaml").spec.name == "compas-fpr"


def test_dates_in_free_text_stay_strings() -> None:
    loaded = load_spec_from_text(
        replace("name: compas-fpr\n", "name: compas-fpr\ndescription: 2024-01-31\n")
    )
    assert loaded.spec.description == "2024-01-31"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("", (2, 1)),
        ("name", (LINE["name"], 7)),
        ("columns", (LINE["columns"], 1)),
        ("columns.outcome", (LINE["columns.outcome"], 12)),
        ("data.path", (LINE["data.path"], 9)),
        ("attributes[1]", (LINE["attributes"], 19)),
        ("discretize.age", (LINE["discretize"], 14)),
        ("discretize.age.quantiles", (LINE["discretize"], 31)),
        ("scans", (LINE["scans"], 1)),
        ("scans[0]", (LINE["scans[0]"], 5)),
        ("scans[0].penalty", (LINE["scans[0]"], 40)),
        ("scans[2].direction", (LINE["scans[2]"], 45)),
        ("scans[calib].direction", (LINE["scans[2]"], 45)),  # a scan by its id
        ("scans[tpr]", (LINE["scans[1]"], 5)),
        ("significance.alpha", (LINE["significance"], 40)),
        # defaults that are not written in the file: the deepest written parent
        ("significance.workers", (LINE["significance"], 1)),
        ("scans[1].penalty", (LINE["scans[1]"], 5)),
        ("max_categories", (2, 1)),
        ('discretize["no such"]', (LINE["discretize"], 1)),
    ],
)
def test_locate_field(compas: LoadedSpec, field: str, expected: tuple[int, int]) -> None:
    assert compas.locate_field(field) == expected


def test_issue_helper_locates_the_field(compas: LoadedSpec) -> None:
    issue = compas.issue("not a column of the data", field="columns.prediction", hint="check")
    assert (issue.file, issue.line, issue.col, issue.field) == (
        "compas.audit.yaml",
        9,
        15,
        "columns.prediction",
    )


def test_parse_field_path() -> None:
    assert parse_field_path("scans[1].penalty") == ("scans", 1, "penalty")
    assert parse_field_path("columns.outcome") == ("columns", "outcome")
    assert parse_field_path("discretize.age") == ("discretize", "age")
    assert parse_field_path('discretize["age group"].edges[0]') == (
        "discretize",
        "age group",
        "edges",
        0,
    )
    assert parse_field_path("scans[fpr-race].alpha") == ("scans", "fpr-race", "alpha")
    assert parse_field_path("") == ()


# -- files -----------------------------------------------------------------------------------


def test_load_spec_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "compas.audit.yaml"
    data = COMPAS_SPEC.replace("\n", "\r\n").encode()
    path.write_bytes(data)
    loaded = load_spec(path)
    assert loaded.spec.name == "compas-fpr"
    assert loaded.path == path
    assert loaded.sha256 == hashlib.sha256(data).hexdigest()  # of the bytes as stored
    assert loaded.locate_field("columns.outcome") == (LINE["columns.outcome"], 12)


def test_load_spec_accepts_a_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.audit.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + COMPAS_SPEC.encode())
    assert load_spec(path).text == COMPAS_SPEC


def test_validation_errors_carry_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.audit.yaml"
    path.write_text(replace("alpha: 0.05", "alpha: abc"), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    (issue,) = info.value.issues
    assert (issue.file, issue.line, issue.field) == (
        str(path),
        LINE["significance"],
        "significance.alpha",
    )


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.audit.yaml"
    with pytest.raises(SpecError) as info:
        load_spec(path)
    (issue,) = info.value.issues
    assert issue.message == f"spec file not found: {path}"
    assert issue.hint


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path)
    assert "is a directory" in info.value.issues[0].message


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.audit.yaml"
    path.write_bytes("version: 1\nname: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    (issue,) = info.value.issues
    assert "not valid UTF-8" in issue.message
    assert (issue.line, issue.col) == (2, 10)
    assert issue.hint == "save the file with UTF-8 encoding"


@pytest.mark.parametrize("content", [b"", b"\n\n", b"# yaml-language-server: $schema=x.json\n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.audit.yaml"
    path.write_bytes(content)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.issues[0].message == "the spec file is empty"


def test_spec_error_keeps_the_validation_error_as_cause() -> None:
    with pytest.raises(SpecError) as info:
        load_spec_from_text(replace("alpha: 0.05", "alpha: abc"))
    assert info.value.__cause__ is not None
