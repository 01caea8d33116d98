"""The audit spec (``*.audit.yaml``), version 1, as pydantic models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field, create_model, field_validator, model_validator

from fairscan.spec.base import Scalar, ScanSpecBase, StrictModel, rule_error

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class DataSpec(StrictModel):
    path: str = Field(
        min_length=1,
        description=(
            "Data file, relative to the spec file. Format by extension: "
            ".csv, .parquet, .ndjson/.jsonl, .arrow/.ipc/.feather."
        ),
        examples=["compas.csv"],
    )
    filter: str | None = Field(
        default=None,
        description=(
            "Optional row filter in SQL WHERE syntax (parsed, never evaluated as code), "
            "e.g. \"age >= 18 AND race IN ('A', 'B')\"."
        ),
        examples=["age >= 18"],
    )


class ColumnsSpec(StrictModel):
    outcome: str | None = Field(
        default=None,
        min_length=1,
        description="Binary outcome column (0/1, true/false, or two labels with `positive`). "
        "Needed by every scan except certify/flag with `loss`.",
    )
    positive: Scalar | None = Field(
        default=None,
        description="The outcome's positive label when it is not 1/true, e.g. 2 for a class "
        "coded 1/2, or 'bad'; the other label is 0.",
    )
    prediction: str | None = Field(
        default=None,
        description="Prediction column: a probability in [0, 1] where a scan uses it as one "
        "(bias_scan, CBS on predictions, calibration metrics), else any real-valued score.",
    )
    recommendation: str | None = Field(
        default=None,
        description="Binary recommendation (decision) column; or give `threshold` instead.",
    )
    threshold: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Derive the recommendation as prediction >= threshold (see threshold_rule) "
        "for every scan that needs one. Any real number (e.g. decile scores 1-10 with 5).",
    )
    threshold_rule: Literal["ge", "gt"] = Field(
        default="ge",
        description=(
            "How `threshold` is applied: ge = prediction >= threshold, gt = prediction > threshold."
        ),
    )

    @model_validator(mode="after")
    def _recommendation_source(self) -> ColumnsSpec:
        if self.recommendation is not None and self.threshold is not None:
            raise rule_error("give either `recommendation` or `threshold`, not both", "threshold")
        if self.threshold is not None and self.prediction is None:
            raise rule_error(
                "`threshold` derives the recommendation from `prediction`; set `prediction`",
                "threshold",
            )
        if self.positive is not None and self.outcome is None:
            raise rule_error("`positive` names a label of `outcome`; set `outcome`", "positive")
        return self


class DiscretizeSpec(StrictModel):
    quantiles: int | None = Field(
        default=None, ge=2, le=100, description="Number of equal-frequency bins."
    )
    edges: list[float] | None = Field(
        default=None,
        min_length=1,
        description="Explicit inner bin edges, increasing; bins are [lo, hi).",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> DiscretizeSpec:
        if self.quantiles is not None and self.edges is not None:
            raise rule_error("give exactly one of `quantiles` or `edges`, not both", "edges")
        if self.quantiles is None and self.edges is None:
            raise rule_error("give exactly one of `quantiles` or `edges`")
        if self.edges is not None:
            for i in range(1, len(self.edges)):
                if self.edges[i] <= self.edges[i - 1]:
                    raise rule_error("`edges` must be strictly increasing", "edges", i)
        return self


class SignificanceSpec(StrictModel):
    replicates: int = Field(
        default=999,
        ge=0,
        le=1_000_000,
        description="Null replicates of the randomization test; 0 = no test.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Significance level.")
    seed: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Seed for every random choice; omit for fresh entropy (recorded in the report)."
        ),
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description=(
            "Worker processes for null replicates (default: number of CPUs). "
            "Results do not depend on it."
        ),
    )


ReportFormat = Literal["json", "markdown", "junit", "github", "html"]
DEFAULT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown")


class OutputSpec(StrictModel):
    dir: str = Field(default="reports", description="Report directory, relative to the spec file.")
    formats: list[ReportFormat] = Field(
        default_factory=lambda: list(DEFAULT_FORMATS),
        min_length=1,
        description=(
            "Report formats to write: <dir>/<name>.json, <dir>/<name>.md, "
            "<dir>/<name>.junit.xml (JUnit XML: a testcase per scan), <dir>/<name>.html "
            "(self-contained HTML with inline SVG charts); github appends the "
            "Markdown report to $GITHUB_STEP_SUMMARY when that variable is set."
        ),
    )


class GateSpec(StrictModel):
    fail_on: Literal["significant", "new_significant", "never"] = Field(
        default="significant",
        description=(
            "When a run without errors exits 1: significant = any significant finding; "
            "new_significant = a significant finding labelled new against --baseline "
            "(without a baseline every finding is new); never = findings never fail the run."
        ),
    )


class ScanDefaults(StrictModel):
    """Settings given to every scan that has the field and does not set it (``defaults:``)."""

    penalty: float | None = Field(
        default=None, ge=0, description="Complexity penalty of the MDSS scans."
    )
    restarts: int | None = Field(
        default=None, ge=1, le=100_000, description="Random restarts of the MDSS scans."
    )
    bootstrap: int | None = Field(
        default=None, ge=1, description="Bootstrap resamples of certify/flag scans."
    )


class AuditSpec(StrictModel):
    version: Literal[1] = Field(description="Spec format version; must be 1.")
    extends: str | None = Field(
        default=None,
        description=(
            "A parent spec, relative to this file: it is loaded first and this spec is "
            "deep-merged over it (mappings merge, lists and scalars replace)."
        ),
        examples=["../base.audit.yaml"],
    )
    defaults: ScanDefaults | None = Field(
        default=None,
        description="Scan settings applied to every scan that has the field unless it sets it.",
    )
    name: str = Field(
        pattern=NAME_PATTERN,
        description="Audit name; report file names derive from it.",
        examples=["compas-fpr"],
    )
    description: str | None = Field(default=None, description="Free text shown in reports.")
    data: DataSpec = Field(description="The data file to audit and an optional row filter.")
    columns: ColumnsSpec = Field(
        description="Which columns hold the outcome, the prediction and the recommendation."
    )
    attributes: list[str] = Field(
        min_length=1, description="Columns whose value combinations form the subgroups."
    )
    discretize: dict[str, DiscretizeSpec] = Field(
        default_factory=dict, description="Binning of numeric attributes, per attribute."
    )
    max_categories: int = Field(
        default=50,
        ge=2,
        le=10_000,
        description="An attribute with more distinct values than this is an error (discretize it).",
    )
    # The registry (fairscan.scans) narrows this to the union of the registered scan models
    # with `audit_spec_model`; the spec layer knows only what every scan has.
    scans: list[ScanSpecBase] = Field(min_length=1, description="Scans to run.")
    significance: SignificanceSpec = Field(
        default_factory=SignificanceSpec,
        description="Randomization test settings shared by all scans.",
    )
    output: OutputSpec = Field(
        default_factory=OutputSpec, description="Where and in which formats reports are written."
    )
    gate: GateSpec = Field(
        default_factory=GateSpec, description="Which findings make the run exit 1 (the CI gate)."
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_the_number_one(cls, value: object) -> object:
        # Literal[1] alone also accepts True and 1.0 (they compare equal to 1), so
        # `version: yes` would pass; the version must be written as the integer 1.
        if isinstance(value, bool) or not isinstance(value, int) or value != 1:
            raise rule_error("unsupported spec version")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> AuditSpec:
        # A discretize entry for a column that is not among `attributes` is accepted: harmless.
        seen: set[str] = set()
        for i, attribute in enumerate(self.attributes):
            if attribute in seen:
                dup = sorted({a for a in self.attributes if self.attributes.count(a) > 1})
                raise rule_error(f"attributes listed twice: {', '.join(dup)}", "attributes", i)
            seen.add(attribute)
        ids = [s.id for s in self.scans]
        for i, scan_id in enumerate(ids):
            if scan_id in ids[:i]:
                dup_ids = sorted({x for x in ids if ids.count(x) > 1})
                raise rule_error(
                    f"scan ids must be unique; repeated: {', '.join(dup_ids)}", "scans", i, "id"
                )
        roles = {self.columns.outcome, self.columns.prediction, self.columns.recommendation}
        clash = sorted(set(self.attributes) & {r for r in roles if r is not None})
        if clash:
            index = self.attributes.index(clash[0])
            raise rule_error(
                f"{', '.join(clash)} cannot be both an attribute and an outcome/prediction column",
                "attributes",
                index,
            )
        return self


def audit_spec_model(scan_models: Sequence[type[ScanSpecBase]]) -> type[AuditSpec]:
    """The audit spec model whose ``scans`` accept exactly ``scan_models`` (tagged by ``type``).

    Called once by the scan registry, so this layer never imports a scan module.
    """
    union: Any = Union[tuple(scan_models)]  # noqa: UP007 - a runtime-built union needs typing.Union
    entry: Any = Annotated[union, Field(discriminator="type")]
    return create_model(
        "AuditSpec",
        __base__=AuditSpec,
        __module__=__name__,
        scans=(list[entry], Field(min_length=1, description="Scans to run.")),
    )


def scan_models_of(model: type[AuditSpec]) -> dict[str, type[ScanSpecBase]]:
    """``type`` tag -> scan spec model, read from a model built by :func:`audit_spec_model`."""
    annotation = model.model_fields["scans"].annotation
    (entry,) = get_args(annotation) or (annotation,)
    while get_origin(entry) is Annotated:
        entry = get_args(entry)[0]
    members = get_args(entry) or (entry,)
    out: dict[str, type[ScanSpecBase]] = {}
    for member in members:
        if isinstance(member, type) and issubclass(member, ScanSpecBase):
            tag = get_args(member.model_fields["type"].annotation)
            if tag:
                out[str(tag[0])] = member
    return out
