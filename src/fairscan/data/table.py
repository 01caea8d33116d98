"""The prepared, encoded table every scan works on (output of :mod:`fairscan.data.prepare`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MISSING_LABEL = "(missing)"


@dataclass(frozen=True)
class EncodedAttribute:
    """One scan attribute encoded as integer codes 0..k-1."""

    name: str
    labels: tuple[str, ...]  # label of each code, in code order
    n_missing: int = 0  # rows whose value was null (they carry the MISSING_LABEL code)
    edges: tuple[float, ...] | None = None  # bin edges when the attribute was discretised

    @property
    def cardinality(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class PreparedData:
    """Rows after the spec's filter; attributes encoded once; role columns as numpy arrays."""

    n_rows_raw: int  # rows in the data file
    attributes: tuple[EncodedAttribute, ...]
    codes: np.ndarray  # (n, m) int32, C-contiguous, codes[i, j] indexes attributes[j].labels
    outcome: np.ndarray  # (n,) int8 in {0, 1}
    prediction: np.ndarray | None = None  # (n,) float64 in [0, 1]
    recommendation: np.ndarray | None = None  # (n,) int8 in {0, 1}
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # further columns some scans read (column name -> filtered values; float64 or object strings)
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)
