"""Sample weights (``columns.weight``, issue 25): validation and the two semantics.

* Whole-number weights are **frequency weights**: a weight ``w`` counts the row ``w`` times,
  exactly as if the row were repeated; 0 drops it. They become :attr:`PreparedData.row_weight`,
  the per-row multiplicity streamed datasets already use (multiplied into it when the data is
  aggregated): the aggregate scans (fpr_scan, tpr_scan, the binary bias_scan) score
  weighted counts and draw their null replicates per unit of weight (Binomial(cell weight, p)),
  and the scans that work on rows get the rows repeated; every report then equals that of the
  row-replicated table, p-values included for the same seed (tests/test_contract.py).
* Fractional weights are **survey/importance weights**: relative, so rescaled to mean 1 per data
  row (their scale does not matter and n stays the number of rows), kept on the rows as
  ``row_weight`` (float). Every statistic, estimate and model fit is weighted; the randomness is
  per row with the weight as a multiplier: Bernoulli null draws (each row's draw times its
  weight), CBS permutations (rows keep their weights), certify/flag/shift bootstrap resamples
  (a resampled row carries its weight), SubROC holdout subsets (the pattern's row counts, each
  drawn row weighted). A scan type declares that it honours them with ``ScanType.weights``
  ("fractional", or "counts" where it reads weighted rows); the others ("rows") refuse them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl

from fairscan.data.table import PreparedData
from fairscan.errors import DataError

FIELD = "columns.weight"
# Frequency weights count rows: their total must stay an exact integer in every sum the scans
# take, int64 counts and float64 sums alike, and float64 holds integers exactly only below 2^53.
MAX_TOTAL_WEIGHT = 2**53


def drop_zero_weights(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """The rows of weight 0 removed before encoding (a row of weight 0 is absent: its values
    must not appear as attribute labels); other values are checked after the filter."""
    if column not in frame.columns or not frame.schema[column].is_numeric():
        return frame
    values = frame[column]
    if values.len() and bool((values.fill_null(1) == 0).all()):
        raise DataError(
            f"weight column {column!r} is 0 on every row: nothing would be audited",
            field=FIELD,
            column=column,
            hint="point columns.weight at the sample weights (non-negative, not all 0)",
        )
    return frame.filter(~(pl.col(column) == 0).fill_null(False))


def apply_weights(data: PreparedData, column: str) -> PreparedData:
    """``data`` with ``row_weight`` times the weights; a clear error for weights that are not
    numbers, missing, negative or infinite."""
    values = data.extra.get(column)
    if values is None or values.dtype == object:
        raise DataError(
            f"weight column {column!r} must hold numbers",
            field=FIELD,
            column=column,
            hint="point columns.weight at a numeric column of non-negative weights",
        )
    w = np.asarray(values, dtype=np.float64)
    for bad, what in (
        (np.isnan(w), "missing (null or NaN)"),
        (np.isinf(w), "infinite"),
        (w < 0, "negative"),
    ):
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"weight column {column!r} has {int(bad.sum())} {what} value(s) after the "
                f"filter (e.g. row {first + 1}: {float(w[first]):g}); weights must be "
                "non-negative numbers",
                field=FIELD,
                column=column,
                hint="fix or drop those rows (data.filter), or give them weight 0",
            )
    with np.errstate(over="ignore"):  # an overflowing sum is refused by _check_total
        positive = w.sum() > 0
    if not positive:
        raise DataError(
            f"weight column {column!r} sums to 0 after the filter: nothing would be audited",
            field=FIELD,
            column=column,
        )
    whole = bool(np.all(w == np.round(w)))
    counts = data.row_weight
    if counts is not None:
        w = w * counts
    _check_total(w, column, whole)
    if whole:
        return replace(data, row_weight=w.astype(np.int64))
    # survey/importance weights: relative, so rescaled to the data rows' count (mean 1 per data
    # row); the statistics then do not depend on their scale, and n is the rows audited
    n_data = float(data.n_rows if counts is None else counts.sum())
    relative = w * (n_data / float(w.sum()))
    # equal weights (to rounding, e.g. 0.1 on every row): 1 per data row, i.e. no weights
    if float(np.abs(relative - np.round(relative)).max()) <= 1e-9:
        return replace(data, row_weight=np.round(relative).astype(np.int64))
    return replace(data, row_weight=relative)


def _check_total(w: np.ndarray, column: str, whole: bool) -> None:
    """A :class:`DataError` before any scan where the weights' total cannot be counted exactly
    (whole weights at or above 2^53 rows) or summed at all (fractional weights whose sum is
    not finite): past these the expanded row count and the weighted sums overflow.

    A float64 sum of non-negative integers is exact while it stays below 2^53 and rounds to
    2^53 or more once the exact sum reaches it, so comparing the float total is exact."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(w.sum())
    if whole and total < MAX_TOTAL_WEIGHT:
        return
    if not whole and np.isfinite(total):
        return
    largest = int(np.argmax(w))
    what = (
        f"count {total:.4g} rows in all, more than the {MAX_TOTAL_WEIGHT:,} (2^53) rows "
        "fairscan can count exactly"
        if whole
        else "sum past the largest number a float holds"
    )
    raise DataError(
        f"weight column {column!r}: the weights {what} (largest: row {largest + 1}, "
        f"{float(w[largest]):g})",
        field=FIELD,
        column=column,
        hint="frequency weights are row counts: check the column holds counts (each row "
        "counted w times); survey or importance weights are relative, so divide them by a "
        "common factor (their scale does not change the audit)",
    )


def whole_numbers(data: PreparedData) -> bool:
    """The row weights are whole numbers (frequency weights: rows can be repeated)."""
    w = data.row_weight
    return w is None or w.dtype.kind in "iu" or bool(np.all(w == np.round(w)))


def check_weight_support(
    scan_type: str, honours_fractional: bool, data: PreparedData, column: str
) -> None:
    """A :class:`ScanError` (never a silent unweighted run) where a scan cannot honour
    fractional weights (it can only repeat rows)."""
    from fairscan.errors import ScanError

    if whole_numbers(data):
        return
    if not honours_fractional:
        raise ScanError(
            f"{scan_type} honours columns.weight as frequency weights only (whole numbers: each "
            f"row counted w times), but {column!r} holds fractional weights",
            field=FIELD,
            column=column,
            hint="round or scale the weights to whole numbers (frequency weights), or audit "
            "this scan without columns.weight",
        )
