"""Validation errors mapped to YAML paths, lines and readable messages."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from spec_texts import COMPAS_SPEC, LINE, replace

from fairscan.api import load_spec_from_text
from fairscan.errors import Issue, SpecError
from fairscan.scans import SCAN_TYPES
from fairscan.spec.issues import validation_issues
from fairscan.spec.loader import load_spec_text


def issues_of(text: str) -> list[Issue]:
    with pytest.raises(SpecError) as info:
        load_spec_from_text(text, "s.audit.yaml")
    issues = info.value.issues
    assert all(i.file == "s.audit.yaml" for i in issues)
    return issues


def only_issue(text: str) -> Issue:
    issues = issues_of(text)
    assert len(issues) == 1, [i.render() for i in issues]
    return issues[0]


# -- unknown keys ----------------------------------------------------------------------------


def test_unknown_key_suggests_the_close_field() -> None:
    issue = only_issue(replace("alpha: 0.05", "alhpa: 0.05"))
    assert issue.field == "significance.alhpa"
    assert issue.message == "unknown key 'alhpa'"
    assert issue.hint == "did you mean 'alpha'?"
    assert (issue.line, issue.col) == (LINE["significance"], 33)  # at the key


def test_unknown_key_in_a_scan_uses_that_scan_types_fields() -> None:
    issue = only_issue(replace("penalty: 1,", "penalti: 1,"))
    assert issue.field == "scans[0].penalti"
    assert issue.message == "unknown key 'penalti' for scan type 'fpr_scan'"
    assert issue.hint == "did you mean 'penalty'?"
    assert issue.line == LINE["scans[0]"]

    issue = only_issue(replace("direction: negative", "directoin: negative"))
    assert issue.field == "scans[2].directoin"
    assert issue.hint == "did you mean 'direction'?"  # bias_scan has `direction`

    issue = only_issue(replace("{id: tpr, type: tpr_scan}", "{id: tpr, type: tpr_scan, zzz: x}"))
    assert issue.hint == (
        "valid keys for 'tpr_scan': id, type, outcome, positive, prediction, penalty, restarts, "
        "subgroups, score, alpha, threshold, threshold_rule"
    )


def test_unknown_key_that_belongs_elsewhere() -> None:
    issue = only_issue(
        replace("{id: tpr, type: tpr_scan}", "{id: tpr, type: tpr_scan, alpha: 0.1}")
    )
    assert issue.field == "scans[1].alpha"
    # `alpha` is a scan setting of the Berk-Jones score; the hint still points at significance
    assert "score bernoulli" in issue.message
    assert issue.hint is not None and "belongs under `significance.alpha`" in issue.hint

    issue = only_issue(replace("name: compas-fpr\n", "name: compas-fpr\nseed: 1\n"))
    assert issue.field == "seed"
    assert issue.hint == "'seed' belongs under `significance.seed`"


def test_schema_key_points_to_the_modeline() -> None:
    issue = only_issue(replace("version: 1\n", "version: 1\n$schema: x.json\n"))
    assert issue.field == "$schema"
    assert issue.hint is not None and "# yaml-language-server: $schema=" in issue.hint


# -- missing keys ----------------------------------------------------------------------------


def test_missing_key_points_at_the_parent_mapping() -> None:
    issue = only_issue(replace("  path: compas.csv\n", ""))
    assert issue.field == "data.path"
    assert issue.message == "missing required key 'path'"
    assert (issue.line, issue.col) == (LINE["data"], 1)
    assert issue.hint is not None and issue.hint.startswith("add `path:`")


def test_a_missing_outcome_is_a_check_of_the_scans_that_need_one() -> None:
    # columns.outcome is optional in the model (certify/flag with `loss` need none); the
    # spec-level checks name every scan that needs it
    from fairscan.api import check_spec

    spec = load_spec_from_text(replace("  outcome: y\n", ""), "s.audit.yaml").spec
    issues = check_spec(spec)
    assert [i.message for i in issues] == [
        "scan 'fpr' (fpr_scan) needs an outcome column",
        "scan 'tpr' (tpr_scan) needs an outcome column",
        "scan 'calib' (bias_scan) needs an outcome column",
    ]
    assert {i.field for i in issues} == {"columns"}


def test_missing_top_level_key_points_at_the_top() -> None:
    issue = only_issue(replace('data:\n  path: compas.csv\n  filter: "age >= 18"\n', ""))
    assert issue.field == "data"
    assert (issue.line, issue.col) == (2, 1)  # first key, after the modeline comment


def test_missing_key_in_a_scan_drops_the_union_tag() -> None:
    issue = only_issue(replace("{id: tpr, type: tpr_scan}", "{type: tpr_scan}"))
    assert issue.field == "scans[1].id"
    assert (issue.line, issue.col) == (LINE["scans[1]"], 5)


# -- discriminated union ---------------------------------------------------------------------


def test_union_tag_is_dropped_from_the_path() -> None:
    issue = only_issue(replace("penalty: 1,", "penalty: abc,"))
    assert issue.field == "scans[0].penalty"  # not scans[0].fpr_scan.penalty
    assert issue.message == "expected a number, got 'abc'"
    assert (issue.line, issue.col) == (LINE["scans[0]"], 40)


def test_union_tag_dropped_even_when_a_key_has_the_tags_name() -> None:
    issue = only_issue(
        replace("{id: tpr, type: tpr_scan}", "{id: tpr, type: tpr_scan, tpr_scan: 1}")
    )
    assert issue.field == "scans[1].tpr_scan"
    assert issue.message == "unknown key 'tpr_scan' for scan type 'tpr_scan'"


def test_unknown_scan_type_lists_the_valid_types() -> None:
    issue = only_issue(replace("type: tpr_scan", "type: tpr"))
    assert issue.field == "scans[1].type"
    assert issue.message == "unknown scan type 'tpr'"
    assert issue.hint is not None
    assert issue.hint.endswith("valid types: " + ", ".join(SCAN_TYPES))
    assert (issue.line, issue.col) == (LINE["scans[1]"], 21)


def test_unknown_scan_type_did_you_mean() -> None:
    issue = only_issue(replace("type: tpr_scan", "type: tpr_scna"))
    assert issue.hint is not None and issue.hint.startswith("did you mean 'tpr_scan'?")


def test_missing_scan_type() -> None:
    issue = only_issue(replace("{id: tpr, type: tpr_scan}", "{id: tpr}"))
    assert issue.field == "scans[1].type"
    assert issue.message.startswith("missing required key 'type'")
    assert issue.hint == "add `type:` with one of: " + ", ".join(SCAN_TYPES)
    assert issue.line == LINE["scans[1]"]


def test_scan_entry_that_is_not_a_mapping() -> None:
    issue = only_issue(replace("{id: tpr, type: tpr_scan}", "tpr_scan"))
    assert issue.field == "scans[1]"
    assert issue.message == "expected a mapping (key: value pairs), got 'tpr_scan'"
    assert issue.line == LINE["scans[1]"]


# -- model validators (empty loc) ------------------------------------------------------------


def test_cross_field_rule_points_at_the_offending_entry() -> None:
    issue = only_issue(replace("id: calib", "id: fpr"))
    assert issue.field == "scans[2].id"
    assert issue.message == "scan ids must be unique; repeated: fpr"
    assert (issue.line, issue.col) == (LINE["scans[2]"], 10)

    issue = only_issue(replace("race, age_cat", "race, race"))
    assert issue.field == "attributes[2]"
    assert issue.line == LINE["attributes"]

    issue = only_issue(replace("race, age_cat", "race, y"))
    assert issue.field == "attributes[2]"
    assert "cannot be both an attribute and an outcome/prediction column" in issue.message


def test_rule_in_a_nested_model() -> None:
    issue = only_issue(replace("{age: {quantiles: 5}}", "{age: {edges: [30, 20]}}"))
    assert issue.field == "discretize.age.edges[1]"
    assert issue.message == "`edges` must be strictly increasing"
    assert (issue.line, issue.col) == (LINE["discretize"], 32)  # at `20`

    issue = only_issue(replace("{age: {quantiles: 5}}", "{age: {}}"))
    assert issue.field == "discretize.age"
    assert issue.message == "give exactly one of `quantiles` or `edges`"
    assert (issue.line, issue.col) == (LINE["discretize"], 14)


def test_columns_rule() -> None:
    issue = only_issue(
        replace("  recommendation: p_bin\n", "  recommendation: p_bin\n  threshold: 0.5\n")
    )
    assert issue.field == "columns.threshold"
    assert issue.line == LINE["columns"] + 4


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["item"]
    a: int = 0

    @model_validator(mode="after")
    def _rule(self) -> _Item:
        if self.a < 0:
            raise ValueError("a must not be negative")
        return self


class _Other(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["other"]


class _Root(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int = 0
    items: list[Annotated[_Item | _Other, Field(discriminator="kind")]] = []

    @model_validator(mode="after")
    def _rule(self) -> _Root:
        if self.x == 13:
            raise ValueError("x is unlucky")
        return self


def _plain_issues(text: str) -> list[Issue]:
    raw, positions = load_spec_text(text, "m.yaml")
    with pytest.raises(ValidationError) as info:
        _Root.model_validate(raw)
    return validation_issues(info.value, raw, positions, "m.yaml", _Root)


def test_empty_loc_is_attributed_to_the_root() -> None:
    (issue,) = _plain_issues("# head\nx: 13\n")
    assert issue.field is None
    assert issue.message == "x is unlucky"
    assert (issue.file, issue.line, issue.col) == ("m.yaml", 2, 1)


def test_model_validator_in_a_union_member_is_attributed_to_the_item() -> None:
    (issue,) = _plain_issues("items:\n  - kind: other\n  - kind: item\n    a: -1\n")
    assert issue.field == "items[1]"  # the tag 'item' is dropped although it is the last segment
    assert issue.message == "a must not be negative"
    assert (issue.line, issue.col) == (3, 5)


# -- wrong types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("alpha: 0.05", "alpha: abc", "significance.alpha", "expected a number, got 'abc'"),
        (
            "replicates: 999",
            "replicates: 9.5",
            "significance.replicates",
            "expected a whole number, got the number 9.5",
        ),
        ("seed: 0", "seed: -1", "significance.seed", "must be >= 0, got the number -1"),
        ("alpha: 0.05", "alpha: 1.5", "significance.alpha", "must be < 1, got the number 1.5"),
        (
            "attributes: [sex, race, age_cat, c_charge_degree, priors]",
            "attributes: sex",
            "attributes",
            "expected a list, got 'sex'",
        ),
        (
            "attributes: [sex, race, age_cat, c_charge_degree, priors]",
            "attributes: []",
            "attributes",
            "must not be empty",
        ),
        (
            "formats: [json, markdown]",
            "formats: [json, md]",
            "output.formats[1]",
            "expected 'json', 'markdown', 'junit', 'github', 'html' or 'sarif', got 'md'",
        ),
        (
            "direction: negative",
            "direction: negativ",
            "scans[2].direction",
            "expected 'negative' or 'positive', got 'negativ'",
        ),
        (
            "name: compas-fpr",
            "name: 2024",
            "name",
            'expected a string, got the number 2024; quote it: "2024"',
        ),
        (
            "name: compas-fpr",
            "name: my audit",
            "name",
            "must start with a letter or digit and contain only letters, digits, '_', '.' and '-', "
            "got 'my audit'",
        ),
        ("  path: compas.csv", "  path: ''", "data.path", "must not be empty"),
    ],
)
def test_wrong_types_and_values(old: str, new: str, field: str, message: str) -> None:
    issue = only_issue(replace(old, new))
    assert issue.field == field
    assert issue.message == message
    assert (
        issue.line
        == COMPAS_SPEC.splitlines().index(
            next(line for line in COMPAS_SPEC.splitlines() if old.splitlines()[0] in line)
        )
        + 1
    )


def test_empty_section_value() -> None:
    issue = only_issue(
        replace("columns:\n  outcome: y\n  prediction: p\n  recommendation: p_bin\n", "columns:\n")
    )
    assert issue.field == "columns"
    assert issue.message == "expected a mapping (key: value pairs), got an empty value"
    assert issue.line == LINE["columns"]


# -- YAML 1.1 booleans -----------------------------------------------------------------------


def test_boolean_where_a_string_is_expected() -> None:
    issue = only_issue(replace("name: compas-fpr", "name: no"))
    assert issue.field == "name"
    assert issue.message == '`no` was read as boolean false; quote it: "no"'
    assert (issue.line, issue.col) == (LINE["name"], 7)


def test_boolean_attribute_list_item() -> None:
    issue = only_issue(replace("age_cat", "no"))
    assert issue.field == "attributes[2]"
    assert issue.message == '`no` was read as boolean false; quote it: "no"'
    assert (issue.line, issue.col) == (LINE["attributes"], 25)


def test_boolean_in_other_string_places() -> None:
    issue = only_issue(replace("outcome: y", "outcome: Off"))
    assert (issue.field, issue.message) == (
        "columns.outcome",
        '`Off` was read as boolean false; quote it: "Off"',
    )

    issue = only_issue(replace("{age: {quantiles: 5}}", "{no: {quantiles: 5}}"))
    assert issue.field == "discretize.no"
    assert (
        issue.message == 'keys must be strings, but `no` was read as boolean false; quote it: "no"'
    )
    assert (issue.line, issue.col) == (LINE["discretize"], 14)

    issue = only_issue(replace("formats: [json, markdown]", "formats: [json, on]"))
    assert issue.message.startswith('`on` was read as boolean true; quote it: "on"')


def test_boolean_is_not_silently_a_number() -> None:
    issue = only_issue(replace("restarts: 100", "restarts: yes"))
    assert issue.field == "scans[0].restarts"
    assert issue.message == "expected a whole number, got `yes` (read as boolean true)"

    issue = only_issue(replace("penalty: 1,", "penalty: on,"))
    assert issue.field == "scans[0].penalty"


def test_quoted_boolean_words_are_fine() -> None:
    loaded = load_spec_from_text(replace("age_cat", '"no"'), "s.yaml")
    assert loaded.spec.attributes[2] == "no"


# -- version ---------------------------------------------------------------------------------


def test_missing_version() -> None:
    issue = only_issue(replace("version: 1\n", ""))
    assert issue.field == "version"
    assert issue.message == "missing required key 'version' (the spec format version)"
    assert issue.hint == "add `version: 1` at the top of the file"
    assert issue.line == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2", "unsupported spec version 2: this fairscan reads version 1"),
        ("'1'", "`version` must be the number 1, not the text '1'"),
        ("yes", "`version` must be the number 1; `yes` was read as boolean true"),
        ("1.0", "`version` must be the whole number 1, got 1.0"),
        ("[1]", "`version` must be the number 1, got a list [1]"),
    ],
)
def test_version_not_1(value: str, message: str) -> None:
    issue = only_issue(replace("version: 1", f"version: {value}"))
    assert issue.field == "version"
    assert issue.message == message
    assert issue.line == LINE["version"]


# -- all at once -----------------------------------------------------------------------------


def test_all_issues_are_reported_sorted_by_line() -> None:
    text = replace("alpha: 0.05", "alpha: abc")
    text = replace("penalty: 1,", "penalti: 1,", text)
    text = replace("  path: compas.csv\n", "", text)
    text = replace("name: compas-fpr", "name: no", text)
    text = replace("output: {dir: reports", "output: {dir: reports, extra: 1", text)
    issues = issues_of(text)
    assert [i.field for i in issues] == [
        "name",
        "data.path",
        "scans[0].penalti",
        "significance.alpha",
        "output.extra",
    ]
    lines = [i.line for i in issues]
    assert lines == sorted(lines)
    assert all(i.line is not None and i.col is not None for i in issues)


def test_rendering_names_file_line_field_and_hint() -> None:
    with pytest.raises(SpecError) as info:
        load_spec_from_text(replace("alpha: 0.05", "alhpa: 0.05"), "audits/x.audit.yaml")
    assert str(info.value) == (
        "audits/x.audit.yaml:17:33: significance.alhpa: unknown key 'alhpa'\n"
        "  help: did you mean 'alpha'?"
    )
