"""``audit init``'s starter spec: protected attributes on, others listed, fast settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fairscan.starter import STARTER_REPLICATES, STARTER_RESTARTS, protected_reason, starter_spec

ROOT = Path(__file__).resolve().parents[1]
GERMAN = ROOT.parent / "shared" / "data" / "german" / "german.csv"


def _scored_german_like(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 400
    frame = pl.DataFrame(
        {
            "id": np.arange(n),
            "checking_status": rng.choice(["A11", "A12", "A13"], n),
            "duration": rng.integers(4, 72, n),
            "purpose": rng.choice(["car", "radio", "education"], n),
            "credit_amount": rng.integers(250, 18000, n),
            "personal_status": rng.choice(["A91", "A92", "A93"], n),
            "Age_Group": rng.choice(["18-24", "25-44", "45+"], n),
            "age": rng.integers(19, 75, n),
            "Sex": rng.choice(["f", "m"], n),
            "foreign_worker": rng.choice(["yes", "no"], n),
            "housing": rng.choice(["own", "rent", "free"], n),
            "split": rng.choice(["train", "test"], n),
            "fold": rng.integers(0, 5, n),
            "customer_id": rng.permutation(n),
            "default": rng.integers(0, 2, n),
            "score": rng.random(n),
            "high_risk": rng.integers(0, 2, n),
            "model_pred_label": rng.integers(0, 2, n),
        }
    )
    path = tmp_path / "scored.csv"
    frame.write_csv(path)
    return path


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("sex", "sex/gender"),
        ("Gender", "sex/gender"),
        ("age_group", "age"),
        ("AgeGroup", "age"),
        ("race", "race"),
        ("ethnicity", "ethnicity"),
        ("nationality", "nationality/national origin"),
        ("national_origin", "nationality/national origin"),
        ("personal_status", "marital status"),
        ("marital_status", "marital status"),
        ("religion", "religion"),
        ("disability", "disability"),
    ],
)
def test_protected_names_are_recognised(name: str, reason: str) -> None:
    assert protected_reason(name) == reason


@pytest.mark.parametrize("name", ["purpose", "usage", "message", "stage", "duration", "housing"])
def test_other_names_are_not_protected(name: str) -> None:
    assert protected_reason(name) is None


def test_starter_on_a_scored_table_keeps_protected_and_fast_settings(tmp_path: Path) -> None:
    data = _scored_german_like(tmp_path)
    text = starter_spec(data, spec_dir=tmp_path)
    spec = yaml.safe_load(text)
    assert spec["columns"] == {
        "outcome": "default",
        "prediction": "score",
        "recommendation": "high_risk",
    }
    assert spec["attributes"] == ["personal_status", "Age_Group", "age", "Sex", "foreign_worker"]
    assert "  - Sex                          # likely protected: sex/gender" in text
    for other in ("checking_status", "duration", "purpose", "credit_amount", "housing"):
        assert f"  # - {other}\n" in text
    for left_out in ("id", "split", "fold", "customer_id", "model_pred_label"):
        assert f"# - {left_out}\n" not in text
        assert left_out not in spec["attributes"]
    assert spec["significance"]["replicates"] == STARTER_REPLICATES == 199
    assert spec["defaults"] == {"restarts": STARTER_RESTARTS} == {"restarts": 50}
    assert spec["discretize"] == {"age": {"quantiles": 5}}


def test_starter_schema_line_points_at_the_project_schema(tmp_path: Path) -> None:
    data = _scored_german_like(tmp_path)
    # Inside the project: a path relative to the written spec.
    text = starter_spec(data, spec_dir=ROOT / "audits")
    assert text.splitlines()[0] == (
        "# yaml-language-server: $schema=../schemas/audit-spec.schema.json"
    )
    # Elsewhere: a file next to the spec, and how to write it.
    lines = starter_spec(data, spec_dir=tmp_path).splitlines()
    assert lines[0] == "# yaml-language-server: $schema=audit-spec.schema.json"
    assert "audit schema > audit-spec.schema.json" in lines[1]
    assert "raw.githubusercontent" not in "\n".join(lines)


def test_starter_without_protected_names_asks_for_one(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    pl.DataFrame({"y": [0, 1] * 30, "colour": ["r", "g", "b"] * 20}).write_csv(path)
    text = starter_spec(path, spec_dir=tmp_path)
    assert yaml.safe_load(text)["attributes"] == ["ATTRIBUTE"]
    assert "  # - colour\n" in text


@pytest.mark.skipif(not GERMAN.is_file(), reason="shared German credit data not present")
def test_starter_on_german_credit(tmp_path: Path) -> None:
    text = starter_spec(GERMAN, spec_dir=tmp_path)
    spec = yaml.safe_load(text)
    assert spec["attributes"] == ["personal_status", "age", "foreign_worker"]
    assert spec["columns"]["outcome"] == "class"
    assert spec["columns"]["positive"] == 2
    assert "  # - purpose\n" in text
    assert spec["significance"]["replicates"] == 199
