"""The audit spec (``*.audit.yaml``), version 1, as pydantic models."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from fairscan.engine.executor_address import EXECUTOR_HELP, EXECUTOR_PATTERN, parse_executor
from fairscan.errors import truncate
from fairscan.metric_table import CATALOGUE
from fairscan.redact import literal_secret
from fairscan.spec import constraints
from fairscan.spec.base import Scalar, ScanSpecBase, StrictModel, rule_error

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"

# The range of each bounded per-record metric L, hence of a numeric `target` (the mean of L) of
# a certify/flag scan; loss columns and squared_error (any real score) are unbounded.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    name: metric.range for name, metric in CATALOGUE.items() if metric.range is not None
}

MAX_NAME_BYTES = 255  # one file or directory name (most file systems)
MAX_PATH_BYTES = 4096  # a whole path (Linux PATH_MAX)


class SampleSpec(StrictModel):
    rows: int = Field(
        ge=1,
        description="Rows drawn uniformly without replacement from the rows the filter keeps.",
    )
    seed: int = Field(default=0, ge=0, description="Seed of the draw (the same rows every run).")


class DataSpec(StrictModel):
    path: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "Data file, relative to the spec file. Format by extension: "
            ".csv, .parquet, .ndjson/.jsonl, .arrow/.ipc/.feather. Also a directory or glob "
            "of such files (hive partitions such as year=2024/ become columns) and s3://, "
            "gs://, az://, https:// URLs (credentials from the environment, as polars reads "
            "them): those are streamed, never read into memory whole."
        ),
        examples=["compas.csv", "predictions/*.parquet", "s3://bucket/predictions/"],
    )
    filter: str | None = Field(
        default=None,
        description=(
            "Optional row filter in SQL WHERE syntax (parsed, never evaluated as code), "
            "e.g. \"age >= 18 AND race IN ('A', 'B')\"."
        ),
        examples=["age >= 18"],
    )
    sample: SampleSpec | None = Field(
        default=None,
        description=(
            "Audit a uniform random sample of the filtered rows, e.g. {rows: 1000000, seed: 0}: "
            "the way out when scans that need every row (CBS, SubROC, IJDI with an "
            "estimated base rate) would need more memory than the machine has."
        ),
    )
    streaming: bool | None = Field(
        default=None,
        description=(
            "Stream the data in slices and aggregate it to its distinct rows (memory of the "
            "cells, not of the rows). Default: for directories, globs, URLs and files too "
            "large to read into memory."
        ),
    )
    strip_whitespace: bool = Field(
        default=True,
        description=(
            "Strip leading and trailing whitespace from text attribute values, so that "
            "'C' and 'C ' are one subgroup (a data warning lists the values merged); false "
            "keeps them apart (with a warning)."
        ),
    )
    # a database or warehouse table, prepared where it lives (fairscan.data.pushdown)
    connection: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "A database instead of data.path: a URL Ibis connects to (postgresql://, "
            "duckdb://, sqlite://, snowflake://, bigquery://, trino://, ...) or a .duckdb / "
            ".sqlite file. Secrets only as ${ENV_VAR} (or the driver's own variables)."
        ),
        examples=["postgresql://auditor:${PGPASSWORD}@db:5432/ml", "predictions.duckdb"],
    )
    table: str | None = Field(
        default=None,
        min_length=1,
        description="The table (schema.table) to audit: a name of up to three parts, "
        'double-quoted where a part has spaces or dots ("My Schema".predictions).',
    )
    sql: str | None = Field(
        default=None,
        min_length=1,
        description="One SELECT (WITH ... SELECT, a UNION of selects) whose rows are audited; "
        "anything else (several statements, COPY, ATTACH, SET, DDL/DML) is refused.",
    )
    allow_file_access: bool = Field(
        default=False,
        description="Let data.sql read files through the database (DuckDB's read_csv, "
        "read_parquet, read_text, a path used as a table; PostgreSQL's pg_read_file; SQLite's "
        "readfile), and a DuckDB view named by data.table read the files it is defined on. "
        "Off: such a query is refused and DuckDB runs with external access off.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DataSpec:
        if self.connection is None:
            if self.path is None:
                raise rule_error(
                    "missing required key 'path'",
                    "path",
                    hint="add `path:` (the data file, relative to the spec file), or "
                    "`connection:` with `table:` or `sql:` for a database table",
                )
            for key in ("table", "sql"):
                if getattr(self, key) is not None:
                    raise rule_error(f"data.{key} needs data.connection", key)
            if self.allow_file_access:
                raise rule_error(
                    "data.allow_file_access is for data.sql on a database (data.connection)",
                    "allow_file_access",
                    hint="remove it: data.path is read by fairscan itself",
                )
            return self
        if self.path is not None:
            raise rule_error("give data.path or data.connection, not both", "connection")
        if (self.table is None) == (self.sql is None):
            raise rule_error(
                "with data.connection, give data.table or data.sql (one)", "connection"
            )
        secret = literal_secret(self.connection)
        if secret is not None:
            raise rule_error(
                f"the connection URL holds a secret ({secret}): secrets come from the "
                "environment only",
                "connection",
                hint="write ${NAME} in its place (e.g. postgresql://user:${PGPASSWORD}@host/db) "
                "and export NAME",
            )
        return self


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
    weight: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "Sample weights: a non-negative numeric column, honoured by every scan type. "
            "Whole-number weights are frequency weights (a weight w counts the row w times, "
            "exactly as if it were repeated; 0 drops it; null draws per unit of weight). "
            "Fractional weights are survey/importance weights: relative (rescaled to mean 1 "
            "over the rows), every statistic and model fit weighted, and the null draws, "
            "permutations and bootstrap resamples per row, each row's weight multiplying its "
            "draw. bias_scan with a continuous outcome binarised for berk_jones takes "
            "whole-number weights only."
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


_INF = float("inf")


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
            for i, edge in enumerate(self.edges):
                if not -_INF < edge < _INF:  # NaN fails this too
                    raise rule_error(
                        f"`edges` must be finite numbers; item {i} is {edge}", "edges", i
                    )
            for i in range(1, len(self.edges)):
                if self.edges[i] <= self.edges[i - 1]:
                    raise rule_error("`edges` must be strictly increasing", "edges", i)
        return self


class SignificanceSpec(StrictModel):
    replicates: int = Field(
        ge=constraints.REPLICATES.ge,
        le=constraints.REPLICATES.le,
        default=999,
        description=(
            "The most null replicates of the randomization test; 0 = no test. With "
            "`sequential` (the default) the replicates stop once the answer at alpha is "
            "settled, so most tests run far fewer. A scan cannot give a p-value below "
            "1 / (replicates + 1): too few to reach alpha leave it untested and the run "
            "UNTESTED (see gate.allow_untested)."
        ),
    )
    sequential: bool = Field(
        default=True,
        description=(
            "Stop the replicates once the decision at alpha (after gate.correction) is "
            "settled, by an anytime-valid rule (Fischer & Ramdas 2024, with an exact "
            "truncation at the maximum), whose p-value is valid at the replicates actually run; "
            "it cannot fall below about alpha (0.0499 at 0.05). `false`: "
            "always run all `replicates` (p-values as small as 1 / (replicates + 1)). A maximum "
            "too small for the rule to reach alpha (e.g. 19 at alpha 0.05) runs all of them."
        ),
    )
    alpha: float = Field(
        gt=constraints.ALPHA.gt,
        lt=constraints.ALPHA.lt,
        default=0.05,
        description="Significance level.",
    )
    seed: Annotated[int, Field(ge=constraints.SEED.ge)] | Literal["random"] | None = Field(
        default=None,
        description=(
            "Seed for every random choice. Omitted: derived from the SHA-256 of the spec file "
            "and of the data, so the same spec on the same data gives the same report; "
            "`random`: fresh entropy each run (recorded in the report)."
        ),
    )

    @field_validator("seed", mode="before")
    @classmethod
    def _seed_number_or_random(cls, value: object) -> object:
        """One clear message for a bad seed (not one per member of the union)."""
        if value is None or value == "random":
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if value >= 0:
                return value
            raise rule_error(
                f"must be >= 0, got the number {value}",
                hint="give a whole number >= 0, `random`, or omit it (derived from the hashes)",
            )
        shown = truncate(repr(value))
        raise rule_error(
            f"expected a whole number >= 0 or `random`, got {shown}",
            hint="omit it for a seed derived from the spec's and the data's SHA-256",
        )

    workers: int | None = Field(
        ge=constraints.WORKERS.ge,
        le=constraints.WORKERS.le,
        default=None,
        description=(
            "Worker processes for null replicates (default: number of CPUs). "
            "Results do not depend on it."
        ),
    )
    executor: str = Field(
        default="local",
        description=(
            "Where null replicates and permutations run: `local` (this machine, in `workers` "
            "processes), `dask://HOST:PORT`, a Dask scheduler whose workers have the same "
            "fairscan installed (`fairscan[dask]`), or `tls://HOST:PORT`, one that speaks TLS "
            "(certificates from dask's configuration, `distributed.comm.tls`). From Python, "
            "`fairscan.audit(..., executor=client)` takes a connected `distributed.Client`. "
            "Results do not depend on it. SubROC, certify, flag and shift scans always run here."
        ),
        examples=["local", "dask://scheduler.example.org:8786", "tls://scheduler.example.org:8786"],
        json_schema_extra={"pattern": EXECUTOR_PATTERN},
    )

    @field_validator("executor")
    @classmethod
    def _executor_address(cls, value: str) -> str:
        try:
            parse_executor(value)
        except ValueError:
            raise rule_error(
                f"not an executor: {truncate(repr(value))}", hint=EXECUTOR_HELP
            ) from None
        return value


ReportFormat = Literal["json", "markdown", "junit", "github", "html", "sarif"]
DEFAULT_FORMATS: tuple[ReportFormat, ...] = ("json", "markdown")


# MLflow's rules for a tag key (mlflow.utils.validation): letters, digits, _ - . / and spaces
MLFLOW_KEY_PATTERN = r"^[A-Za-z0-9_\-./ ]{1,250}$"
MLFLOW_TAG_VALUE_LENGTH = 8000


class MlflowSpec(StrictModel):
    """``output.mlflow``: log each run to an MLflow tracking server (``fairscan[mlflow]``)."""

    experiment: str = Field(
        min_length=1,
        max_length=500,
        description="The MLflow experiment (created when absent). The tracking server comes "
        "from MLFLOW_TRACKING_URI, its credentials from MLflow's own variables "
        "(MLFLOW_TRACKING_USERNAME / _PASSWORD / _TOKEN): never from the spec.",
        examples=["credit-model-fairness"],
    )
    run_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=250,
        description="The run's name (default: the spec's name).",
    )
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags set on the run, e.g. {team: risk, model: gbm-v3}.",
        json_schema_extra={
            "propertyNames": {"pattern": MLFLOW_KEY_PATTERN},
            "additionalProperties": {"type": "string", "maxLength": MLFLOW_TAG_VALUE_LENGTH},
        },
    )

    @field_validator("tags")
    @classmethod
    def _mlflow_tags(cls, tags: dict[str, str]) -> dict[str, str]:
        for key, value in tags.items():
            # MLflow's own rule: the characters, and a key a path normalisation leaves alone
            norm = posixpath.normpath(key)
            if not re.match(MLFLOW_KEY_PATTERN, key) or norm != key or norm.startswith(("/", "..")):
                raise rule_error(
                    f"MLflow does not accept the tag key {truncate(repr(key))}",
                    key,
                    hint="use letters, digits, _ - . / and spaces (at most 250 characters; no "
                    "leading, trailing or doubled /, no . or .. between slashes)",
                )
            if len(value) > MLFLOW_TAG_VALUE_LENGTH:
                raise rule_error(
                    f"the value of tag {truncate(repr(key))} is longer than MLflow's "
                    f"{MLFLOW_TAG_VALUE_LENGTH} characters",
                    key,
                )
        return tags


class OutputSpec(StrictModel):
    dir: str = Field(default="reports", description="Report directory, relative to the spec file.")
    formats: list[ReportFormat] = Field(
        default_factory=lambda: list(DEFAULT_FORMATS),
        min_length=1,
        description=(
            "Report formats to write: <dir>/<name>.json, <dir>/<name>.md, "
            "<dir>/<name>.junit.xml (JUnit XML: a testcase per scan), <dir>/<name>.html "
            "(self-contained HTML with inline SVG charts), <dir>/<name>.sarif (SARIF 2.1.0, "
            "for code-scanning dashboards); github appends the Markdown report to "
            "$GITHUB_STEP_SUMMARY when that variable is set."
        ),
    )
    history: str | None = Field(
        default=None,
        min_length=1,
        description="Append every run (time, spec name and hash, data hash, verdict, each "
        "finding with its label, statistic, p-value and effect) to this SQLite file, relative "
        "to the spec file; `audit history PATH` prints the trends.",
    )
    mlflow: MlflowSpec | None = Field(
        default=None,
        description="Log each run to MLflow after the reports are written (needs "
        "`fairscan[mlflow]`; tracking server from MLFLOW_TRACKING_URI): params (spec name "
        "and hash, data hash, settings), metrics per scan (`<scan>.p_value`, "
        "`<scan>.statistic`, `<scan>.significant`, counts by baseline label), tags (fairscan "
        "version, verdict) and the JSON, Markdown and HTML reports as artifacts. A tracking "
        "server that fails exits 2 with the reason; the reports are kept. Without a server, "
        "MLflow 3 logs to a local folder (a path or file:// URI) only with "
        "MLFLOW_ALLOW_FILE_STORE=true, and to sqlite:// only with the full mlflow package.",
    )

    @model_serializer(mode="wrap")
    def _omit_absent_history(self, handler: SerializerFunctionWrapHandler) -> Any:
        """The resolved spec of a run without history (or MLflow) keeps the keys it had."""
        dumped = handler(self)
        for key in ("history", "mlflow"):
            if isinstance(dumped, dict) and dumped.get(key, ...) is None:
                del dumped[key]
        return dumped


class GateSpec(StrictModel):
    fail_on: Literal[
        "significant", "new_significant", "persisting_or_new", "never", "not_certified"
    ] = Field(
        default="significant",
        description=(
            "When a run without errors exits 1: significant = any significant finding; "
            "new_significant = a significant finding labelled new against --baseline "
            "(without a baseline every finding is new); persisting_or_new = a finding labelled "
            "new, persists or shifted (a baseline finding still significant: for teams that "
            "must fix, not just not worsen; without a baseline: any significant finding); "
            "never = findings never fail the run; not_certified = any significant finding or "
            "any group a certify scan could not certify (its own status, `not certified`, "
            "which the other values do not fail on)."
        ),
    )
    correction: Literal["none", "holm", "bonferroni", "bh"] = Field(
        default="none",
        description=(
            "Error control across the scans of the spec: each scan's p-value (its smallest "
            "finding p-value, multiplicity-adjusted within the scan where the scan adjusts) is "
            "corrected over the scans that have one (Holm or Bonferroni: family-wise error; bh: "
            "false discovery rate); a scan whose corrected p-value exceeds significance.alpha "
            "has no significant finding. Reported as each scan's `corrected_p_value` next to "
            "its `p_value`. Scans without p-values (certify, shift) are not corrected. none = "
            "each scan gates at alpha on its own."
        ),
    )
    allow_untested: bool = Field(
        default=False,
        description=(
            "A scan whose randomization test cannot reach significance.alpha (replicates 0, or "
            "its smallest p-value 1 / (replicates + 1), after gate.correction, above alpha) is "
            "untested, and the run's verdict is UNTESTED: exit 2, never PASS. true = such a run "
            "exits 0 (or 1 on findings), its verdict still UNTESTED."
        ),
    )


class MonitorSpec(StrictModel):
    """``monitor:``: anytime-valid evidence per subgroup over the series of audits of this spec
    ``name`` (read from and written to ``output.history``)."""

    alpha: float = Field(
        default=0.05,
        gt=0.0,
        lt=1.0,
        description="The family-wise error rate over every run and every monitored subgroup: "
        "the chance that a fair model ever raises an alarm, however many runs are made.",
    )
    tolerance: float = Field(
        default=1.25,
        gt=1.0,
        le=100.0,
        description="A subgroup is `resolved` when the range of effects still consistent with "
        "its evidence (an odds ratio, or an error-rate odds ratio for fpr_scan and tpr_scan) "
        "lies between 1/tolerance and tolerance. The default 1.25 is the band of the "
        "four-fifths rule (0.8 to 1.25).",
    )
    max_subgroups: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="Subgroups monitored per scan, fixed up front: the listed `subgroups` "
        "first, then the subgroups each scan reports as significant, in the run they first "
        "appear, until this many. Each scan also keeps one open process that bets each run on "
        "the subgroup the scan reported on the run before. The alarm threshold grows with "
        "(number of scans) x (1 + max_subgroups).",
    )
    horizon: int = Field(
        default=52,
        ge=1,
        le=100_000,
        description="Runs over which the onset detector (evidence restarted at every run, for "
        "bias that starts after a retrain) keeps the family-wise rate alpha; its mean time to "
        "a false alarm is at least 2 x (number of processes) x horizon / alpha runs.",
    )
    subgroups: dict[str, list[dict[str, list[Scalar] | Scalar]]] = Field(
        default_factory=dict,
        description="Subgroups monitored from the first run, per scan id: each a mapping "
        "attribute -> value or list of values, as in the findings, e.g. "
        "{fpr: [{race: Black, sex: [Male]}]}.",
        examples=[{"fpr": [{"race": ["Black"], "sex": ["Male"]}]}],
    )


class ScanDefaults(StrictModel):
    """Settings given to every scan that has the field and does not set it (``defaults:``)."""

    penalty: float | None = Field(
        ge=constraints.PENALTY.ge, default=None, description="Complexity penalty of the MDSS scans."
    )
    restarts: int | None = Field(
        ge=constraints.RESTARTS.ge,
        le=constraints.RESTARTS.le,
        default=None,
        description="Random restarts of the MDSS scans.",
    )
    bootstrap: int | None = Field(
        ge=constraints.BOOTSTRAP.ge,
        le=constraints.BOOTSTRAP.le,
        default=None,
        description="Bootstrap resamples of certify, flag and shift scans.",
    )


class ModelSpec(StrictModel):
    """The model under audit, carried into every report (HTML, Markdown, JSON's ``model``)."""

    name: str = Field(min_length=1, description="The model's name.", examples=["credit-risk"])
    version: str | None = Field(default=None, description="Its version.", examples=["2.3.1"])
    owner: str | None = Field(
        default=None, description="Who owns it (team or person).", examples=["risk-analytics"]
    )
    description: str | None = Field(default=None, description="What it does, in a sentence.")


class AuditSpec(StrictModel):
    version: Literal[1] = Field(description="Spec format version; must be 1.")
    extends: str | None = Field(
        default=None,
        description=(
            "A parent spec, relative to this file: it is loaded first and this spec is "
            "deep-merged over it (mappings merge, lists and scalars replace). The data source "
            "is replaced, not merged: a child's data.connection drops the parent's data.path, "
            "its data.path drops the parent's connection, table and sql, and its data.table or "
            "data.sql drops the other (a key set to null removes the parent's)."
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
    model: ModelSpec | None = Field(
        default=None,
        description="The model under audit (name, version, owner, description), shown in "
        "every report.",
    )
    data: DataSpec = Field(description="The data file to audit and an optional row filter.")
    columns: ColumnsSpec = Field(
        default_factory=ColumnsSpec,
        description="Which columns hold the outcome, the prediction and the recommendation "
        "(may be left out when every scan names its own `outcome` and `prediction`).",
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
    monitor: MonitorSpec | None = Field(
        default=None,
        description="Anytime-valid evidence per subgroup over the series of runs of this spec "
        "`name` (needs output.history): alarms keep their error rate however often the audit "
        "is re-run; under the default gate the run exits 1 exactly when the monitor raises an "
        "alarm.",
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
        for where, path in (("data", self.data.path), ("output", self.output.dir)):
            if path is not None:
                _check_path(path, where)
        for i, scan in enumerate(self.scans):
            _check_target(scan, i)
        if self.monitor is not None:
            _check_monitor(self.monitor, self.output.history, ids, self.attributes)
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


def _check_path(path: str, where: str) -> None:
    """A path the file system cannot take is a spec error, not an internal error later."""
    key = "path" if where == "data" else "dir"
    if "\0" in path:
        raise rule_error(
            "the path contains a NUL byte", where, key, hint="remove the \\0 from the path"
        )
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES:
        raise rule_error(
            f"the path is longer than {MAX_PATH_BYTES} bytes",
            where,
            key,
            hint="use a shorter path, relative to the spec file",
        )
    for part in encoded.replace(b"\\", b"/").split(b"/"):
        if len(part) > MAX_NAME_BYTES:
            raise rule_error(
                f"a file or directory name in the path is longer than {MAX_NAME_BYTES} bytes",
                where,
                key,
                hint="file systems limit each name in a path to 255 bytes; shorten it",
            )


def _check_monitor(
    monitor: MonitorSpec, history: str | None, scan_ids: list[str], attributes: list[str]
) -> None:
    """``monitor:`` keeps its evidence in the history, and lists subgroups of known scans."""
    if history is None:
        raise rule_error(
            "monitor needs output.history: the evidence of earlier runs is kept there",
            "monitor",
            hint="set output.history to an SQLite file (e.g. history.sqlite), or remove monitor",
        )
    for scan_id, listed in monitor.subgroups.items():
        if scan_id not in scan_ids:
            raise rule_error(
                f"no scan has the id {truncate(repr(scan_id))}",
                "monitor",
                "subgroups",
                scan_id,
                hint=f"use one of the scan ids: {', '.join(scan_ids)}",
            )
        if len(listed) > monitor.max_subgroups:
            raise rule_error(
                f"{len(listed)} subgroups listed, more than max_subgroups ({monitor.max_subgroups})",
                "monitor",
                "subgroups",
                scan_id,
                hint="raise monitor.max_subgroups or list fewer",
            )
        for i, subgroup in enumerate(listed):
            unknown = sorted(set(subgroup) - set(attributes))
            if not subgroup or unknown:
                raise rule_error(
                    f"not an attribute: {', '.join(unknown)}" if unknown else "an empty subgroup",
                    "monitor",
                    "subgroups",
                    scan_id,
                    i,
                    hint=f"map attributes ({', '.join(attributes)}) to lists of their values",
                )


def _check_target(scan: ScanSpecBase, index: int) -> None:
    """A numeric ``target`` of a scan with a bounded ``metric`` must lie in its range."""
    metric = getattr(scan, "metric", None)
    target = getattr(scan, "target", None)
    if (
        not isinstance(metric, str)
        or metric not in METRIC_RANGES
        or isinstance(target, bool)
        or not isinstance(target, int | float)
    ):
        return
    lo, hi = METRIC_RANGES[metric]
    if not lo <= target <= hi:
        raise rule_error(
            f"target {target:g} is outside the range of metric {metric}: [{lo:g}, {hi:g}]",
            "scans",
            index,
            "target",
            hint=f"give the value of {metric} to compare with, between {lo:g} and {hi:g}, "
            "or `target: overall`",
        )


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
