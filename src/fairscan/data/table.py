"""The prepared, encoded table every scan works on (output of :mod:`fairscan.data.prepare`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from fairscan.engine.expectation_cells import ProfileSums

# a probability column summarised by the engine that holds the rows: the summed profile of
# each row of the aggregated table, and the profiles' sums (fairscan.data.pushdown)
PushedSums = tuple[np.ndarray, "ProfileSums"]

MISSING_LABEL = "(missing)"

# outcome: binary, both classes required; decision: binary; probability: a number in [0, 1];
# score: any finite real number. Outcomes of other types (bias_scan `outcome_type`): continuous
# (finite reals), count (non-negative integers), ordinal (codes 0, 1, ... or labels in `levels`
# order), nominal (class labels, read as strings); mean: a non-negative expectation (Poisson).
RoleKind = Literal[
    "outcome",
    "decision",
    "probability",
    "score",
    "continuous",
    "count",
    "ordinal",
    "nominal",
    "mean",
]
Label = str | int | float | bool


@dataclass(frozen=True)
class RoleColumn:
    """A data column read in one role, with the spec field that names it (for messages)."""

    column: str
    kind: RoleKind
    field: str  # e.g. "columns.outcome" or "scans[2].prediction"
    positive: Label | None = None  # outcome/decision: the label read as 1 (default 1/true)
    levels: tuple[Label, ...] | None = None  # ordinal: the labels from lowest (code 0) up

    @property
    def key(self) -> tuple[str, str, str | None]:
        """Identity of the loaded values: the same column in the same role is loaded once."""
        if self.levels is not None:
            return (self.column, self.kind, repr(self.levels))
        return (self.column, self.kind, None if self.positive is None else repr(self.positive))


@dataclass(frozen=True)
class EncodedAttribute:
    """One scan attribute encoded as integer codes 0..k-1."""

    name: str
    labels: tuple[str, ...]  # label of each code, in code order
    n_missing: int = 0  # rows whose value was null (they carry the MISSING_LABEL code)
    edges: tuple[float, ...] | None = None  # bin edges when the attribute was discretised
    # values have a numeric order (integers, integral floats, dates, discretised bins): labels
    # are in that order and contiguous selections read as ranges
    ordered: bool = False

    @property
    def cardinality(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class Aggregation:
    """How a table handed to :func:`fairscan.data.prepare.prepare_data` was aggregated by the
    streaming reader: each row is a distinct row of the data, counted in ``weight_column``."""

    weight_column: str
    n_rows_raw: int  # rows in the data, before the filter (which was applied while streaming)
    binned: dict[str, tuple[float, ...]] = field(default_factory=dict)  # attribute -> edges
    # probability column -> its pushed-down profile sums (calibration bias scans)
    profile_sums: dict[str, PushedSums] = field(default_factory=dict)
    # a binned attribute some scan also reads by value (a model covariate, a role) -> the
    # column of ``frame`` that holds its values as read (:func:`raw_column`); the attribute's
    # own column holds its bin codes
    raw: dict[str, str] = field(default_factory=dict)


def raw_column(name: str) -> str:
    """The aggregate's column holding the values of binned attribute ``name`` as read."""
    return f"__fairscan_raw_{name}__"


@dataclass(frozen=True)
class PreparedData:
    """Rows after the spec's filter; attributes encoded once; role columns as numpy arrays."""

    n_rows_raw: int  # rows in the data file
    attributes: tuple[EncodedAttribute, ...]
    codes: np.ndarray  # (n, m) int32, C-contiguous, codes[i, j] indexes attributes[j].labels
    # role columns (RoleColumn.key -> values): int8 0/1 for outcome/decision, strings (object)
    # for nominal outcomes, float64 otherwise
    roles: dict[tuple[str, str, str | None], np.ndarray] = field(default_factory=dict)
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # further columns some scans read (column name -> filtered values; float64 or object strings)
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    # aggregated data (a streamed dataset): each row stands for this many data rows (int64);
    # None: one data row each
    row_weight: np.ndarray | None = None
    # probability column -> (summed profile of each row, the profiles' sums): per-profile sums
    # of a probability column taken by the database (the rows' own values are bin means)
    profile_sums: dict[str, PushedSums] = field(default_factory=dict)

    def role(self, request: RoleColumn) -> np.ndarray:
        """The values of a role column requested from :func:`fairscan.data.prepare.prepare_data`."""
        return self.roles[request.key]

    @property
    def n_rows(self) -> int:
        """Rows of the arrays (distinct rows when aggregated; see :attr:`n_data_rows`)."""
        return int(self.codes.shape[0])

    @property
    def n_data_rows(self) -> int:
        """Data rows after the filter (the sum of the row weights when aggregated)."""
        return self.n_rows if self.row_weight is None else round(float(self.row_weight.sum()))

    def expanded(self) -> PreparedData:
        """One row per data row: aggregated rows repeated by their weights (for the scans
        that work on rows), in the aggregated table's fixed order."""
        if self.row_weight is None:
            return self
        counts = self.row_weight

        def repeat(values: np.ndarray) -> np.ndarray:
            return np.repeat(values, counts, axis=0)

        return replace(
            self,
            codes=np.ascontiguousarray(repeat(self.codes)),
            roles={k: repeat(v) for k, v in self.roles.items()},
            extra={k: repeat(v) for k, v in self.extra.items()},
            row_weight=None,
            profile_sums={},
        )

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)
