"""``fairscan.audit``'s notebook forms (issue 28): scans by type name with default ids, the
significance shorthands (``replicates=``, ``seed=``, ``alpha=``, ``workers=``) validated by the
spec's model, an explicit keyword signature, ``progress=`` and the pandas-without-pyarrow
message."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import fairscan
from fairscan.inmemory import KEYWORDS, SHORTHANDS, UNSET
from fairscan.run.specs import scan_entries

ROOT = Path(__file__).resolve().parent
CREDIT = ROOT.parent / "sample_data" / "credit.csv"

BASE: dict[str, Any] = {
    "outcome": "default",
    "recommendation": "high_risk",
    "attributes": ["sex", "ethnicity", "age_group"],
}


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT, infer_schema_length=None, null_values=None)


def test_the_issue_s_call_works_as_written() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(CREDIT)
    report = fairscan.audit(
        df,
        outcome="default",
        recommendation="high_risk",
        attributes=["sex", "ethnicity", "age_group"],
        scans=["fpr_scan"],
        replicates=99,
    )
    assert [s.id for s in report.scans] == ["fpr_scan"]
    assert [s.type for s in report.scans] == ["fpr_scan"]
    assert report.provenance.parameters["significance"]["replicates"] == 99
    # the same audit as the spelled-out spec mapping
    full = fairscan.audit(
        df,
        **BASE,
        scans=[{"id": "fpr_scan", "type": "fpr_scan"}],
        significance={"replicates": 99},
    )
    assert report.scans[0].findings == full.scans[0].findings


def test_scan_ids_default_to_the_type_and_are_made_distinct() -> None:
    entries = scan_entries(
        ["fpr_scan", {"type": "fpr_scan", "penalty": 2}, {"id": "fpr_scan_2", "type": "bias_scan"}]
    )
    assert [e["id"] for e in entries] == ["fpr_scan", "fpr_scan_3", "fpr_scan_2"]
    assert entries[1]["penalty"] == 2
    assert scan_entries(["a", "a", "a"]) == [
        {"id": "a", "type": "a"},
        {"id": "a_2", "type": "a"},
        {"id": "a_3", "type": "a"},
    ]
    # not a list, or an entry that is neither: left for the spec's validation to name
    assert scan_entries("fpr_scan") == "fpr_scan"
    assert scan_entries([5]) == [5]


def test_a_bad_scan_name_is_named_with_a_suggestion(credit: pl.DataFrame) -> None:
    with pytest.raises(fairscan.SpecError) as caught:
        fairscan.audit(credit, **BASE, scans=["fpr_sca"], replicates=0)
    assert str(caught.value).startswith("scans[0].type: unknown scan type 'fpr_sca'")
    assert "did you mean 'fpr_scan'?" in str(caught.value)


def test_shorthands_go_into_significance_and_are_validated_by_the_spec(
    credit: pl.DataFrame,
) -> None:
    report = fairscan.audit(credit, **BASE, scans=["fpr_scan"], replicates=9, seed=4, alpha=0.1)
    significance = report.provenance.parameters["significance"]
    assert (significance["replicates"], significance["seed"], significance["alpha"]) == (9, 4, 0.1)
    with pytest.raises(fairscan.SpecError) as caught:
        fairscan.audit(credit, **BASE, scans=["fpr_scan"], replicates=-1)
    assert str(caught.value).startswith("replicates: must be >= 0, got the number -1")
    with pytest.raises(fairscan.SpecError, match=r"^alpha: must be < 1, got the number 2"):
        fairscan.audit(credit, **BASE, scans=["fpr_scan"], alpha=2)
    with pytest.raises(fairscan.SpecError, match=r"^seed: expected a whole number >= 0"):
        fairscan.audit(credit, **BASE, scans=["fpr_scan"], seed="soon")
    with pytest.raises(fairscan.UsageError, match=r"^replicates: given twice"):
        fairscan.audit(
            credit, **BASE, scans=["fpr_scan"], replicates=9, significance={"replicates": 5}
        )


def test_a_shorthand_overrides_a_spec_file(credit: pl.DataFrame, tmp_path: Path) -> None:
    spec = tmp_path / "s.audit.yaml"
    spec.write_text(
        "version: 1\nname: s\ndata: {path: x.csv}\n"
        "columns: {outcome: default, recommendation: high_risk}\n"
        "attributes: [sex]\nscans: [{id: f, type: fpr_scan}]\n"
        "significance: {replicates: 5, seed: 1}\n",
        encoding="utf-8",
    )
    report = fairscan.audit(credit, spec=spec, replicates=0)
    significance = report.provenance.parameters["significance"]
    assert (significance["replicates"], significance["seed"]) == (0, 1)


def test_the_signature_names_every_spec_field() -> None:
    """IDEs complete what the signature names: every spec keyword and every shorthand, each
    keyword-only with the UNSET default (None asks for the field's default)."""
    params = inspect.signature(fairscan.audit).parameters
    for key in (*KEYWORDS, *SHORTHANDS):
        assert key in params, key
        assert params[key].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[key].default is UNSET
    for key in ("spec", "model", "features", "executor", "progress"):
        assert params[key].kind is inspect.Parameter.KEYWORD_ONLY
    hints = inspect.get_annotations(fairscan.inmemory.audit)
    assert "outcome" in hints and "scans" in hints


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def start(self, task: str, total: int | None) -> None:
        self.calls.append(("start", (task, total)))

    def advance(self, n: int = 1) -> None:
        self.calls.append(("advance", n))

    def done(self) -> None:
        self.calls.append(("done", None))


def test_progress_reports_the_replicate_loop(
    credit: pl.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = _Recorder()
    fairscan.audit(credit, **BASE, scans=["fpr_scan"], replicates=9, progress=recorder)
    starts = [args for kind, args in recorder.calls if kind == "start"]
    # every phase in order (issue 36); only the replicates count steps
    words = [task.split(" ")[0] for task, _ in starts]
    assert words == ["reading", "preparing", "fpr_scan:", "fpr_scan:"], starts
    assert starts[-1] == ("fpr_scan: null replicates", 9)
    assert sum(n for kind, n in recorder.calls if kind == "advance") == 9
    capsys.readouterr()
    # progress=True: a bar on stderr (tqdm), nothing on stdout
    fairscan.audit(credit, **BASE, scans=["fpr_scan"], replicates=9, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "null replicates" in captured.err
    with pytest.raises(fairscan.UsageError, match=r"^progress: progress= takes True, False"):
        fairscan.audit(credit, **BASE, scans=["fpr_scan"], replicates=9, progress="yes")


def test_pandas_without_pyarrow_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"default": [0, 1], "high_risk": [1, 0], "sex": ["F", "M"]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` fails as when missing
    with pytest.raises(fairscan.DataError) as caught:
        fairscan.audit(df, **{**BASE, "attributes": ["sex"]}, scans=["fpr_scan"], replicates=0)
    text = str(caught.value)
    assert "needs pyarrow, which is not installed" in text
    assert "pip install pyarrow" in text
    assert "astype" not in text


def test_the_package_stub_shows_every_public_name_to_ides() -> None:
    """``fairscan`` imports its names on first use (module ``__getattr__``), which IDEs and type
    checkers cannot follow: ``fairscan/__init__.pyi`` names each one, from its real home."""
    import ast
    import importlib

    stub = Path(fairscan.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    declared = {
        node.target.id
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    assert set(imported) | (declared - {"__all__"}) == set(fairscan.__all__)
    for name, module in imported.items():
        assert module is not None
        assert getattr(importlib.import_module(module), name) is not None
    assert imported["audit"] == "fairscan.inmemory"


def test_model_as_a_mapping_is_the_spec_s_model_block(credit: pl.DataFrame) -> None:
    """``model=`` takes a fitted classifier (with ``features=``) or, as a mapping, the spec's
    description of the model, which every report format carries."""
    common: dict[str, Any] = {
        "outcome": "default",
        "recommendation": "high_risk",
        "attributes": ["sex", "ethnicity"],
        "scans": ["fpr_scan"],
        "replicates": 9,
    }
    report = fairscan.audit(credit, model={"name": "credit-gbm", "version": "3"}, **common)
    assert report.model is not None
    assert (report.model.name, report.model.version) == ("credit-gbm", "3")
    assert "credit-gbm" in report.to_markdown()
    with pytest.raises(fairscan.SpecError, match="model"):
        fairscan.audit(credit, model={"nmae": "typo"}, **common)


# --- issue 34: object columns and recursive keyword values are clear errors -----------------


def _recursive_dict() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["x"] = value
    return value


def _recursive_list() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def _deep_list(levels: int = 10_000) -> Any:
    value: Any = "sex"
    for _ in range(levels):
        value = [value]
    return value


def _deep_dict(levels: int = 5000) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(levels):
        inner["a"] = {}
        inner = inner["a"]
    return top


KEYWORD_VALUES = {
    "attributes-recursive": ("attributes", _recursive_list, "contains itself"),
    "attributes-deep": ("attributes", _deep_list, "nested more than 100 levels"),
    "significance-recursive": ("significance", _recursive_dict, "contains itself"),
    "gate-deep": ("gate", _deep_dict, "nested more than 100 levels"),
    "scans-recursive": ("scans", lambda: [_recursive_dict()], "contains itself"),
    "model-recursive": ("model", _recursive_dict, "contains itself"),
    "outcome-recursive": ("outcome", _recursive_list, "contains itself"),
    "defaults-recursive": ("defaults", lambda: {"penalty": _recursive_list()}, "contains itself"),
    "replicates-recursive": ("replicates", _recursive_list, "contains itself"),
}


@pytest.mark.parametrize("case", sorted(KEYWORD_VALUES))
def test_recursive_or_deep_keyword_values_are_spec_errors_naming_the_keyword(
    credit: pl.DataFrame, case: str
) -> None:
    """They hit Python's recursion limit: an internal error ("this is a bug in fairscan")."""
    keyword, make, words = KEYWORD_VALUES[case]
    with pytest.raises(fairscan.SpecError) as raised:
        fairscan.audit(credit, **{**BASE, keyword: make()})
    (issue,) = raised.value.issues
    assert issue.field == keyword and words in issue.message, raised.value
    assert issue.hint and "bug" not in str(raised.value)


def test_a_value_used_twice_is_not_recursive(credit: pl.DataFrame) -> None:
    scan = {"type": "fpr_scan", "restarts": 2}
    report = fairscan.audit(credit, **BASE, scans=[scan, scan], replicates=0)  # the same dict
    assert [s.id for s in report.scans] == ["fpr_scan", "fpr_scan_2"]


def test_a_polars_column_of_python_objects_is_a_data_error_naming_it(
    credit: pl.DataFrame,
) -> None:
    """It failed writing the frame's hash ('cannot write Object datatype to ipc'): an internal
    error, whether the column was audited or not."""
    objects = pl.Series("obj", [object() for _ in range(credit.height)], dtype=pl.Object)
    for attributes in (BASE["attributes"], [*BASE["attributes"], "obj"]):
        with pytest.raises(fairscan.DataError) as raised:
            fairscan.audit(
                credit.with_columns(objects),
                **{**BASE, "attributes": attributes},
                scans=["fpr_scan"],
            )
        (issue,) = raised.value.issues
        assert issue.field == "data" and issue.column == "obj"
        assert "Python objects" in issue.message and issue.hint and "bug" not in issue.message


def test_a_pandas_column_of_python_objects_is_named(credit: pl.DataFrame) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = credit.to_pandas()
    frame["obj"] = pd.Series([object() for _ in range(len(frame))], dtype=object)
    with pytest.raises(fairscan.DataError) as raised:
        fairscan.audit(frame, **BASE, scans=["fpr_scan"])
    (issue,) = raised.value.issues
    assert issue.column == "obj" and "column 'obj'" in issue.message


def test_monitor_is_refused_with_the_way_to_monitor(credit: pl.DataFrame) -> None:
    """fairscan.audit writes no history, so a monitor given to it cannot keep its evidence:
    an error saying so, never a report silently without its monitor."""
    with pytest.raises(fairscan.UsageError) as caught:
        fairscan.audit(
            credit,
            outcome="default",
            recommendation="high_risk",
            attributes=["sex"],
            monitor={"alpha": 0.05},
        )
    assert caught.value.issues[0].field == "monitor"
    assert "audit run" in str(caught.value)
