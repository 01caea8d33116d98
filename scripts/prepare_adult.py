"""Write build/adult_subroc.csv: the shared Adult search and validation files with xgboost
scores, concatenated with a `split` column (search / validation), for audits/adult-subroc.

Usage: python scripts/prepare_adult.py [--shared DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = ROOT.parent / "shared" / "data" / "adult"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "adult_subroc.csv")
    args = parser.parse_args(argv)
    parts = []
    for name in ("search", "validation"):
        path = args.shared / f"adult_{name}_xgb.csv"
        if not path.exists():
            print(f"missing {path}", file=sys.stderr)
            return 1
        parts.append(pl.read_csv(path).with_columns(pl.lit(name).alias("split")))
    frame = pl.concat(parts, how="vertical")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.write_csv(args.out)
    print(f"wrote {args.out} ({frame.height} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
