#!/usr/bin/env python3
"""Prepare the ProPublica COMPAS two-year table for the fairscan scans and benchmarks.

Reads ``<shared>/compas/compas-two-years.csv`` (default ``<shared>`` = ``../shared/data``
relative to the repository root), applies ProPublica's preprocessing
(``/work/shared/data/compas/README.md``):

* ``-30 <= days_b_screening_arrest <= 30`` (rows with a missing value are dropped, as in
  ProPublica's R ``filter``),
* ``is_recid != -1``,
* ``c_charge_degree != 'O'``,
* ``score_text != 'N/A'``,

which leaves 6172 rows, and writes a derived CSV (default ``build/compas.csv``, git-ignored) with
the columns

``id, sex, race, age, age_cat, age_group, c_charge_degree, priors_count, priors, decile_score,
two_year_recid, high_risk, prob_decile``

where ``age_group`` is ``"Under 25"`` / ``"25 or older"``, ``priors`` bins ``priors_count`` as
``"None"`` (0) / ``"1 to 5"`` / ``"Over 5"``, ``high_risk = 1{decile_score >= 5}`` and
``prob_decile`` is the observed two-year recidivism rate among all kept defendants with the
same decile score (the per-decile maximum-likelihood probability).

Note for pandas readers: the label ``"None"`` is in pandas' default NA list; read the file with
``keep_default_na=False`` (polars and the csv module keep it as a string).

Usage::

    python scripts/prepare_compas.py [--shared DIR] [--out PATH]

Exit codes: 0 on success, 2 if the input is missing or malformed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = REPO_ROOT.parent / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "build" / "compas.csv"
RELATIVE_INPUT = Path("compas") / "compas-two-years.csv"
EXPECTED_ROWS = 6172

NEEDED = {
    "id": pl.Int64,
    "sex": pl.String,
    "race": pl.String,
    "age": pl.Int64,
    "age_cat": pl.String,
    "c_charge_degree": pl.String,
    "priors_count": pl.Int64,
    "decile_score": pl.Int64,
    "two_year_recid": pl.Int64,
    "days_b_screening_arrest": pl.Int64,
    "is_recid": pl.Int64,
    "score_text": pl.String,
}

OUT_COLUMNS = [
    "id",
    "sex",
    "race",
    "age",
    "age_cat",
    "age_group",
    "c_charge_degree",
    "priors_count",
    "priors",
    "decile_score",
    "two_year_recid",
    "high_risk",
    "prob_decile",
]


def fail(msg: str) -> None:
    print(f"prepare_compas: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def resolve_input(shared: Path) -> Path:
    """``shared`` is the shared *data* directory; ``../shared`` (its parent) is accepted too."""
    candidates = [shared / RELATIVE_INPUT, shared / "data" / RELATIVE_INPUT]
    for cand in candidates:
        if cand.is_file():
            return cand
    fail(
        "COMPAS input not found. Looked for:\n  "
        + "\n  ".join(str(c) for c in candidates)
        + "\nPass --shared DIR pointing at the shared data directory "
        "(the one containing compas/compas-two-years.csv)."
    )
    raise AssertionError  # unreachable


def prepare(src: Path) -> pl.DataFrame:
    try:
        header = pl.read_csv(src, n_rows=0).columns
    except Exception as exc:  # pragma: no cover - defensive
        fail(f"cannot read {src}: {exc}")
    missing = [c for c in NEEDED if c not in header]
    if missing:
        fail(f"{src} lacks required column(s): {', '.join(missing)}")

    raw = pl.read_csv(
        src,
        columns=list(NEEDED),
        schema_overrides=NEEDED,
        null_values=[""],
    )

    # ProPublica's filters; comparisons with null evaluate to null and drop the row, exactly as
    # dplyr::filter does with NA.
    df = raw.filter(
        pl.col("days_b_screening_arrest").is_between(-30, 30, closed="both")
        & (pl.col("is_recid") != -1)
        & (pl.col("c_charge_degree") != "O")
        & (pl.col("score_text") != "N/A")
    )

    df = df.with_columns(
        pl.when(pl.col("age") < 25)
        .then(pl.lit("Under 25"))
        .otherwise(pl.lit("25 or older"))
        .alias("age_group"),
        pl.when(pl.col("priors_count") == 0)
        .then(pl.lit("None"))
        .when(pl.col("priors_count") <= 5)
        .then(pl.lit("1 to 5"))
        .otherwise(pl.lit("Over 5"))
        .alias("priors"),
        (pl.col("decile_score") >= 5).cast(pl.Int64).alias("high_risk"),
        pl.col("two_year_recid").cast(pl.Float64).mean().over("decile_score").alias("prob_decile"),
    ).select(OUT_COLUMNS)

    # Sanity checks on the derived columns (cheap; they guard against a changed source file).
    problems = []
    if df.null_count().sum_horizontal().item() != 0:
        problems.append("null values remain after filtering")
    if not set(df["c_charge_degree"].unique()) <= {"F", "M"}:
        problems.append("c_charge_degree has values other than F/M")
    if not set(df["two_year_recid"].unique()) <= {0, 1}:
        problems.append("two_year_recid is not 0/1")
    under25_cat = df["age_cat"] == "Less than 25"
    if not (under25_cat == (df["age_group"] == "Under 25")).all():
        problems.append("age_group disagrees with age_cat 'Less than 25'")
    if problems:
        fail(f"{src}: " + "; ".join(problems))
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--shared",
        type=Path,
        default=DEFAULT_SHARED,
        help="shared data directory containing compas/compas-two-years.csv "
        f"(default: {DEFAULT_SHARED})",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output CSV (default: {DEFAULT_OUT.relative_to(REPO_ROOT)})",
    )
    args = ap.parse_args(argv)

    src = resolve_input(args.shared)
    df = prepare(src)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    df.write_csv(args.out, float_precision=None)
    print(f"{df.height} rows written to {args.out}")
    if df.height != EXPECTED_ROWS:
        print(
            f"prepare_compas: warning: expected {EXPECTED_ROWS} rows (ProPublica), got {df.height}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
