"""Write a large seeded Parquet dataset for the streaming benchmark (issue 12).

Default: 200,000,000 rows of 8 attributes, an outcome and a decision, in 20 files of
10,000,000 rows (``benchmarks/work/large/part-00.parquet`` ... ``part-19.parquet``). Injected
bias: true negatives with ``segment = 'E'`` and ``age`` 18-24 are flagged positive 2x as often
as the others (false positive rate 0.30 instead of 0.15), so an FPR-Scan must find that
subgroup. Every file draws from its own child of one SeedSequence, so the dataset is the same
on every machine, whatever order the files are written in.

    python benchmarks/make_large_dataset.py            # 200M rows, 20 files
    python benchmarks/make_large_dataset.py --rows 2000000 --files 4 --out /tmp/small
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl

SEED = 20261123
ATTRIBUTES: dict[str, list[str]] = {
    "region": ["north", "south", "east", "west", "centre", "islands"],
    "sex": ["female", "male"],
    "channel": ["web", "app", "branch"],
    "product": ["card", "loan", "mortgage", "savings"],
    "segment": ["A", "B", "C", "D", "E"],
    "device": ["desktop", "mobile", "tablet"],
}
BASE_FPR = 0.15
INJECTED_FPR = 0.30
BASE_RATE = 0.3  # share of rows with outcome 1
TPR = 0.7


def _labels(rng: np.random.Generator, name: str, n: int) -> pl.Series:
    values = ATTRIBUTES[name]
    codes = rng.integers(0, len(values), n, dtype=np.uint32)
    return pl.Series(name, values, dtype=pl.String).gather(codes).alias(name)


def make_part(seed: np.random.SeedSequence, rows: int) -> pl.DataFrame:
    rng = np.random.Generator(np.random.PCG64(seed))
    columns = {name: _labels(rng, name, rows) for name in ATTRIBUTES}
    age = rng.integers(18, 81, rows, dtype=np.int16)
    tenure = rng.integers(0, 31, rows, dtype=np.int16)
    outcome = (rng.random(rows) < BASE_RATE).astype(np.int8)
    injected = (columns["segment"].to_numpy() == "E") & (age <= 24)
    rate = np.where(outcome == 1, TPR, np.where(injected, INJECTED_FPR, BASE_FPR))
    decision = (rng.random(rows) < rate).astype(np.int8)
    return pl.DataFrame(
        [
            *columns.values(),
            pl.Series("age", age),
            pl.Series("tenure_years", tenure),
            pl.Series("outcome", outcome),
            pl.Series("decision", decision),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "work" / "large")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    root = np.random.SeedSequence(SEED)
    per_file = np.diff(np.linspace(0, args.rows, args.files + 1).astype(np.int64))
    started = time.perf_counter()
    for i, (seed, rows) in enumerate(zip(root.spawn(args.files), per_file, strict=True)):
        path = args.out / f"part-{i:02d}.parquet"
        make_part(seed, int(rows)).write_parquet(path, compression="zstd", row_group_size=1 << 20)
        print(f"{path} {rows:,} rows ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
