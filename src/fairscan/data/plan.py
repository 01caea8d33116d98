"""What the audit reads from its data, as one plan every source receives.

As a polars IO plugin receives the projection and predicate pushed down to it
(``polars.io.plugins.register_io_source``), a :class:`~fairscan.data.source.Source` receives a
:class:`ReadPlan`: the columns, the filter, the bins, the columns read only through thresholds
or as probabilities summed per profile, the sample, and the columns the scans read by value. A
source does as much of it where the data lives as its engine can; every source hands back the
same table for the same plan (tests/data/test_same_answer_every_source.py).

The run layer builds the plan from the spec, the scans' roles and what each scan type declares
(:mod:`fairscan.run.plan`); nothing here knows a scan type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from fairscan.data.table import RoleColumn
    from fairscan.errors import Issue
    from fairscan.spec.models import DiscretizeSpec, SampleSpec

# A probability column only calibration bias scans read comes back as this many bins per
# (profile, outcome): each bin's row count and mean probability (what null replicates draw
# from: Binomial(count, mean) per bin), with the profiles' exact sums beside it.
PROBABILITY_BINS = 1000


@dataclass(frozen=True)
class Calibration:
    """A probability column read only as per-row expectations by scans in ``directions``
    (+1 positive, -1 negative): an engine may return it in bins with exact per-profile sums."""

    directions: tuple[int, ...]
    bins: int = PROBABILITY_BINS


@dataclass(frozen=True)
class Cut:
    """A prediction column the audit reads only through thresholds (``rule``: ge or gt)."""

    thresholds: tuple[float, ...]
    rule: Literal["ge", "gt"]
    probability: bool  # values outside [0, 1] are kept as they are (the checks report them)


@dataclass(frozen=True)
class ReadPlan:
    """What to read: the columns the scans use and every step a source may push down."""

    requests: tuple[RoleColumn, ...]  # the role columns, with the spec fields naming them
    attributes: tuple[str, ...]
    # further columns the scans read by value (model covariates, ...) -> the spec field
    extra: Mapping[str, str] = field(default_factory=dict)
    filter: str | None = None  # data.filter
    strip_whitespace: bool = True
    discretize: Mapping[str, DiscretizeSpec] = field(default_factory=dict)
    max_categories: int | None = None
    # prediction column -> its thresholds, when no scan needs its values
    cuts: Mapping[str, Cut] = field(default_factory=dict)
    # probability column -> the directions of the calibration scans that alone read it
    calibrations: Mapping[str, Calibration] = field(default_factory=dict)
    # data.sample (sample weights, columns.weight, are one of the further columns: read as
    # any other, they keep probabilities per row, so ``calibrations`` is empty with them)
    sample: SampleSpec | None = None

    @property
    def columns(self) -> list[str]:
        """Every column read: roles, attributes and the further columns, each once."""
        names = [*(r.column for r in self.requests), *self.attributes, *self.extra]
        return list(dict.fromkeys(names))

    @property
    def by_value(self) -> list[str]:
        """The columns a scan reads by value (its roles and further columns): a binned
        attribute among them is handed back by value beside its bins, so that a model fitted on
        it sees the values a file read into memory gives (issue 37)."""
        return list(dict.fromkeys([*(r.column for r in self.requests), *self.extra]))

    def filter_columns(self) -> list[str]:
        """The columns ``filter`` reads (an engine that aggregates before filtering keeps them);
        a :class:`~fairscan.errors.SpecError` for a filter that does not parse."""
        if self.filter is None:
            return []
        from fairscan.data.filters import filter_columns, parse_filter

        return sorted(filter_columns(parse_filter(self.filter)))

    def column_issues(self, names: Sequence[str]) -> list[Issue]:
        """What the data checks would say of a table of columns ``names`` that lacks some
        column the plan reads: asked before the first pass over a streamed or database table."""
        from fairscan.data.prepare import column_issues

        return column_issues(self.requests, self.attributes, self.extra, names)
