"""Write the seeded "realistic width" table of issue 36: cells about as many as rows.

2,000,000 rows, 8 attributes of 6 values each drawn uniformly (about 1.17 million distinct
profiles), a calibrated probability ``score`` (the outcome is drawn from it), the outcome
``defaulted`` and a 0/1 recommendation ``flagged`` (``score`` above a threshold). Planted: among
the true negatives with ``region = r0``, ``channel = c0`` and ``product`` in {p0, p1} (about 0.9%
of the rows), rows not already flagged are flagged with probability 0.30 more, so their false
positive rate is about 0.45 against about 0.20 elsewhere; an FPR-Scan must find that subgroup.
The probabilities are not touched, so the calibration scan has nothing planted.

    python benchmarks/make_realistic.py                      # benchmarks/work/realistic.parquet
    python benchmarks/make_realistic.py --rows 200000 --out /tmp/small.parquet

The spec that audits it is ``benchmarks/specs/realistic.audit.yaml``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SEED = 20261129
ROWS = 2_000_000
VALUES = 6
ATTRIBUTES = ("region", "channel", "product", "age_band", "tenure", "income", "household", "device")
PLANTED_EXTRA_FPR = 0.30
THRESHOLD = 0.45  # flagged = score above this


def planted(codes: np.ndarray) -> np.ndarray:
    """The planted subgroup's rows: region r0, channel c0, product p0 or p1."""
    return (codes[:, 0] == 0) & (codes[:, 1] == 0) & (codes[:, 2] <= 1)


def make_table(rows: int = ROWS, seed: int = SEED) -> dict[str, np.ndarray]:
    """The table as arrays: ``codes`` (rows, 8) int8, ``score``, ``defaulted``, ``flagged``."""
    rng = np.random.Generator(np.random.PCG64(seed))
    codes = rng.integers(0, VALUES, (rows, len(ATTRIBUTES)), dtype=np.int8)
    # the score ignores the attributes, so the planted subgroup is the only disparity
    logit = -1.0 + rng.normal(0.0, 1.2, rows)
    score = 1.0 / (1.0 + np.exp(-logit))
    defaulted = (rng.random(rows) < score).astype(np.int8)
    flagged = score > THRESHOLD
    extra = planted(codes) & (defaulted == 0) & (rng.random(rows) < PLANTED_EXTRA_FPR)
    flagged = (flagged | extra).astype(np.int8)
    return {"codes": codes, "score": score, "defaulted": defaulted, "flagged": flagged}


def write(path: Path, rows: int, seed: int) -> None:
    import polars as pl

    table = make_table(rows, seed)
    columns = [
        pl.Series(name, [f"{name[0]}{v}" for v in range(VALUES)], dtype=pl.String).gather(
            table["codes"][:, j].astype(np.uint32)
        )
        for j, name in enumerate(ATTRIBUTES)
    ]
    frame = pl.DataFrame(
        [
            *[c.alias(name) for c, name in zip(columns, ATTRIBUTES, strict=True)],
            pl.Series("score", table["score"]),
            pl.Series("defaulted", table["defaulted"]),
            pl.Series("flagged", table["flagged"]),
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path, compression="zstd")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--seed", type=int, default=SEED)
    default = Path(__file__).parent / "work" / "realistic.parquet"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args()
    started = time.perf_counter()
    write(args.out, args.rows, args.seed)
    print(f"{args.out}: {args.rows:,} rows ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
