"""Generate a seeded credit-default re-audit scenario (issue 26): one applicant table and the
predictions of several model versions, each a CSV that `audit run --baseline` compares.

Ground truth:
* applicants have ``sex``, ``education`` (high school, university, graduate, other),
  ``age_group`` (18-25, 26-40, 41-60, 61+) and ``region`` (North, South, East, West); the true
  default probability ``p_true`` is a logistic function of the applicant's finances (not an
  audited attribute, so without the biases no subgroup differs), and ``default`` ~
  Bernoulli(p_true) (drawn once: every model version is scored on the same outcomes);
* a model version is ``score`` (its probability of default) and ``high_risk`` (its decision).
  ``score`` = p_true plus N(0, 0.01) model noise, and ``high_risk`` ~ Bernoulli(0.05 + 0.5 *
  score), both drawn from the version's own seed;
* bias 1 (an FPR bias): ``sex = male and education in {high school, university}`` are flagged
  ``high_risk`` with 0.12 more probability (the FPR-Scan's finding);
* bias 2 (a calibration bias): ``region = South and age_group = 18-25`` get a score 0.12 below
  p_true (under-estimated: the Bias Scan, direction positive, finds it).

Versions (``scenario(name)``):
* ``baseline``: model seed 1, both biases;
* ``female_only``: the baseline's predictions with the female rows re-drawn (seed 99): the male
  rows (bias 1's rows) are byte-identical;
* ``retrain``: model seed 2, both biases (a plain retrain);
* ``fixed``: model seed 3, no bias;
* ``small``: the ``fixed`` version on 250 rows drawn at random (too few to tell).

Run: python scripts/make_reaudit_data.py --out DIR (writes DIR/<version>.csv and
DIR/<version>.audit.yaml, whose reports go to DIR/<version>/); then, in DIR,
``audit run baseline.audit.yaml`` and ``audit run retrain.audit.yaml --baseline
baseline/credit-reaudit.json`` (tests/run/test_reaudit.py runs every version).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

N = 20_000
FPR_BIAS = 0.12
SCORE_BIAS = 0.12
VERSIONS = ("baseline", "female_only", "retrain", "fixed", "small")

SPEC = """\
version: 1
name: credit-reaudit
data:
  path: {data}
columns:
  outcome: default
  prediction: score
  recommendation: high_risk
attributes: [sex, education, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, penalty: 1, restarts: 20}}
  - {{id: calibration, type: bias_scan, direction: positive, penalty: 1, restarts: 20}}
significance: {{replicates: {replicates}, alpha: 0.05, seed: 5}}
output: {{dir: {out}, formats: [json, markdown]}}
gate: {{fail_on: {fail_on}}}
"""


def applicants(n: int = N, seed: int = 20261126) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["male", "female"], n)
    education = rng.choice(["high school", "university", "graduate", "other"], n)
    age_group = rng.choice(["18-25", "26-40", "41-60", "61+"], n, p=[0.2, 0.35, 0.3, 0.15])
    region = rng.choice(["North", "South", "East", "West"], n)
    # the risk comes from the applicant's finances (not an audited attribute): without the
    # injected biases, no subgroup of the attributes differs in FPR or calibration
    finances = rng.normal(0.0, 1.0, n)
    p_true = 1.0 / (1.0 + np.exp(-(-1.4 + 0.9 * finances)))
    default = (rng.random(n) < p_true).astype(np.int64)
    return pl.DataFrame(
        {
            "sex": sex,
            "education": education,
            "age_group": age_group,
            "region": region,
            "p_true": p_true,
            "default": default,
        }
    )


def predictions(people: pl.DataFrame, seed: int, biased: bool) -> pl.DataFrame:
    """One model version's ``score`` and ``high_risk`` (drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    n = people.height
    p_true = people["p_true"].to_numpy()
    score = p_true + rng.normal(0.0, 0.01, n)
    flag = 0.05 + 0.5 * score
    if biased:
        sex = people["sex"].to_numpy()
        education = people["education"].to_numpy()
        bias1 = (sex == "male") & np.isin(education, ["high school", "university"])
        bias2 = (people["region"].to_numpy() == "South") & (
            people["age_group"].to_numpy() == "18-25"
        )
        flag = flag + FPR_BIAS * bias1
        score = score - SCORE_BIAS * bias2
    score = np.clip(score, 0.01, 0.99)
    high_risk = (rng.random(n) < np.clip(flag, 0.0, 1.0)).astype(np.int64)
    return people.drop("p_true").with_columns(
        score=pl.Series(score.round(6)), high_risk=pl.Series(high_risk)
    )


def scenario(name: str) -> pl.DataFrame:
    """The table of model version ``name`` (see the module doc)."""
    people = applicants()
    if name == "baseline":
        return predictions(people, 1, biased=True)
    if name == "female_only":
        base = predictions(people, 1, biased=True)
        redrawn = predictions(people, 99, biased=True)
        female = pl.col("sex") == "female"
        return base.with_columns(
            score=pl.when(female).then(redrawn["score"]).otherwise(pl.col("score")),
            high_risk=pl.when(female).then(redrawn["high_risk"]).otherwise(pl.col("high_risk")),
        )
    if name == "retrain":
        return predictions(people, 2, biased=True)
    if name == "fixed":
        return predictions(people, 3, biased=False)
    if name == "small":
        fixed = predictions(people, 3, biased=False)
        keep = np.random.default_rng(4).choice(fixed.height, 250, replace=False)
        return fixed[np.sort(keep)]
    raise ValueError(f"unknown version {name!r}; one of {', '.join(VERSIONS)}")


def write(out: Path, replicates: int = 99, fail_on: str = "new_significant") -> dict[str, Path]:
    """Each version's CSV and spec under ``out`` (spec -> its reports in out/<version>/)."""
    out.mkdir(parents=True, exist_ok=True)
    specs = {}
    for name in VERSIONS:
        csv = out / f"{name}.csv"
        scenario(name).write_csv(csv)
        spec = out / f"{name}.audit.yaml"
        spec.write_text(
            SPEC.format(data=csv.name, out=name, replicates=replicates, fail_on=fail_on),
            encoding="utf-8",
        )
        specs[name] = spec
    return specs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--replicates", type=int, default=99)
    args = parser.parse_args()
    for name, spec in write(args.out, args.replicates).items():
        print(f"{name}: {spec}")


if __name__ == "__main__":
    main()
