"""Generate sample_data/credit.csv: semi-synthetic credit decisions with a known injected bias.

Ground truth (documented in sample_data/README.md):
* applicants have sex, ethnicity (A-D), age_group, region, employment and a numeric income;
* the true default probability p_true follows a logistic model of employment, income and age;
  the outcome ``default`` ~ Bernoulli(p_true);
* the audited model's ``score`` equals p_true (well calibrated) EXCEPT for applicants with
  ethnicity = C and age_group = 18-24, whose score is inflated by +0.15 (capped at 0.99);
* the decision ``high_risk`` = score >= 0.5.

So among applicants who did not default (true negatives), ethnicity C aged 18-24 are flagged
high-risk far more often than others: the FPR-Scan of audits/sample.audit.yaml must find
{ethnicity: [C], age_group: [18-24]}; the Bias Scan (direction negative) finds the same
subgroup as over-estimated. Deterministic (seeded); run: python scripts/make_sample_data.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
INJECTED = {"ethnicity": "C", "age_group": "18-24"}
INFLATION = 0.15


def make(n: int = 12_000, seed: int = 20261122) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["Female", "Male"], n, p=[0.48, 0.52])
    ethnicity = rng.choice(["A", "B", "C", "D"], n, p=[0.55, 0.2, 0.15, 0.1])
    age_group = rng.choice(["18-24", "25-44", "45-64", "65+"], n, p=[0.18, 0.42, 0.3, 0.1])
    region = rng.choice(["North", "South", "East", "West"], n)
    employment = rng.choice(["employed", "self-employed", "unemployed"], n, p=[0.7, 0.18, 0.12])
    income = np.round(rng.lognormal(mean=10.4, sigma=0.5, size=n), -2)
    logit = (
        -0.9
        + 1.3 * (employment == "unemployed")
        + 0.3 * (employment == "self-employed")
        - 0.9 * (np.log(income) - 10.4)
        + 0.5 * (age_group == "18-24")
        - 0.3 * (age_group == "65+")
    )
    p_true = 1.0 / (1.0 + np.exp(-logit))
    default = (rng.random(n) < p_true).astype(np.int8)
    injected = (ethnicity == INJECTED["ethnicity"]) & (age_group == INJECTED["age_group"])
    score = np.where(injected, np.minimum(p_true + INFLATION, 0.99), p_true)
    return pl.DataFrame(
        {
            "applicant_id": np.arange(1, n + 1),
            "sex": sex,
            "ethnicity": ethnicity,
            "age_group": age_group,
            "region": region,
            "employment": employment,
            "income": income,
            "default": default,
            "score": np.round(score, 6),
            "high_risk": (score >= 0.5).astype(np.int8),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "sample_data" / "credit.csv")
    parser.add_argument("--rows", type=int, default=12_000)
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    frame = make(args.rows, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.write_csv(args.out)
    print(f"wrote {len(frame)} rows to {args.out}")


if __name__ == "__main__":
    main()
