"""Generate sample_data/claims.csv and sample_data/grades.csv: non-binary outcomes with known bias.

Two seeded, byte-reproducible tables for the scores beyond Bernoulli (documented in
sample_data/README.md; audited by audits/claims-regression.audit.yaml and
audits/grades-multiclass.audit.yaml):

``claims.csv`` (6,000 insurance policies; a regression model and a count model)
* attributes ``region`` (North/South/East/West), ``vehicle`` (car/van/motorbike/truck),
  ``age_group`` (18-24/25-39/40-59/60+), ``sex`` (F/M);
* the true mean claim cost ``mu`` is a product of vehicle, age and region factors; the observed
  ``claim_cost`` = mu + Normal(0, 250) (homoskedastic);
* the regression model's ``predicted_cost`` equals mu for everyone EXCEPT policies with
  ``vehicle = motorbike`` and ``age_group = 18-24``, whose cost it under-predicts by 200
  (predicted = mu - 200): a positive mean shift of the observed cost there;
* the true incident rate ``lam`` is a product of vehicle and age factors; the count model's
  ``expected_incidents`` equals lam for everyone; the observed ``n_incidents`` ~ Poisson(lam)
  EXCEPT for ``region = South`` and ``vehicle = van``, where it is Poisson(1.6 * lam): the
  count model under-predicts incidents there by a factor 1.6.

``grades.csv`` (5,000 students; a three-class model)
* attributes ``school`` (S1-S4), ``sex`` (F/M), ``ses`` (low/mid/high), ``language``
  (native/other);
* the model's class probabilities ``p_A, p_B, p_C`` are a multinomial logit of ses and school,
  written with 6 decimals (``p_C`` = 1 - p_A - p_B, so each row sums to 1 up to float rounding);
* the observed ``grade`` is drawn from those probabilities EXCEPT for ``ses = low`` and
  ``language = other``, where the true log-odds of A (against B and C) are 1.0 higher than the
  model's: the model under-predicts grade A (and over-predicts B and C) in that subgroup.

Deterministic; run: python scripts/make_score_samples.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261123

CLAIMS_COST_GROUP = {"vehicle": "motorbike", "age_group": "18-24"}
CLAIMS_COST_SHIFT = 200.0  # predicted_cost = true mean - 200 in CLAIMS_COST_GROUP
CLAIMS_NOISE_SD = 250.0
CLAIMS_COUNT_GROUP = {"region": "South", "vehicle": "van"}
CLAIMS_COUNT_FACTOR = 1.6  # true incident rate = 1.6 x expected_incidents there

GRADES_GROUP = {"ses": "low", "language": "other"}
GRADES_CLASS = "A"
GRADES_LOGIT_SHIFT = 1.0  # true log-odds of A are 1.0 above the model's there


def _pick(rng: np.random.Generator, values: list[str], p: list[float], n: int) -> np.ndarray:
    return rng.choice(np.array(values), size=n, p=p)


def _factor(column: np.ndarray, factors: dict[str, float]) -> np.ndarray:
    return np.array([factors[v] for v in column], dtype=np.float64)


def make_claims(n: int = 6_000, seed: int = SEED) -> pl.DataFrame:
    rng = np.random.default_rng([seed, 1])
    region = _pick(rng, ["North", "South", "East", "West"], [0.3, 0.25, 0.25, 0.2], n)
    vehicle = _pick(rng, ["car", "van", "motorbike", "truck"], [0.55, 0.2, 0.15, 0.1], n)
    age_group = _pick(rng, ["18-24", "25-39", "40-59", "60+"], [0.18, 0.37, 0.3, 0.15], n)
    sex = _pick(rng, ["F", "M"], [0.47, 0.53], n)

    mu = (
        1200.0
        * _factor(vehicle, {"car": 1.0, "van": 1.25, "motorbike": 0.9, "truck": 1.8})
        * _factor(age_group, {"18-24": 1.35, "25-39": 1.0, "40-59": 0.95, "60+": 1.1})
        * _factor(region, {"North": 1.0, "South": 1.1, "East": 0.95, "West": 1.05})
    )
    mu = np.round(mu, 2)
    claim_cost = np.round(mu + rng.normal(0.0, CLAIMS_NOISE_SD, n), 2)
    cost_group = (vehicle == CLAIMS_COST_GROUP["vehicle"]) & (
        age_group == CLAIMS_COST_GROUP["age_group"]
    )
    predicted_cost = np.where(cost_group, mu - CLAIMS_COST_SHIFT, mu)

    lam = (
        0.6
        * _factor(vehicle, {"car": 1.0, "van": 1.3, "motorbike": 1.5, "truck": 1.4})
        * _factor(age_group, {"18-24": 1.6, "25-39": 1.0, "40-59": 0.85, "60+": 1.0})
    )
    lam = np.round(lam, 4)
    count_group = (region == CLAIMS_COUNT_GROUP["region"]) & (
        vehicle == CLAIMS_COUNT_GROUP["vehicle"]
    )
    n_incidents = rng.poisson(np.where(count_group, CLAIMS_COUNT_FACTOR * lam, lam))

    return pl.DataFrame(
        {
            "policy_id": np.arange(1, n + 1),
            "region": region,
            "vehicle": vehicle,
            "age_group": age_group,
            "sex": sex,
            "claim_cost": claim_cost,
            "predicted_cost": np.round(predicted_cost, 2),
            "n_incidents": n_incidents.astype(np.int64),
            "expected_incidents": lam,
        }
    )


def _softmax(eta: np.ndarray) -> np.ndarray:
    z = np.exp(eta - eta.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def make_grades(n: int = 5_000, seed: int = SEED) -> pl.DataFrame:
    rng = np.random.default_rng([seed, 2])
    school = _pick(rng, ["S1", "S2", "S3", "S4"], [0.3, 0.3, 0.25, 0.15], n)
    sex = _pick(rng, ["F", "M"], [0.5, 0.5], n)
    ses = _pick(rng, ["low", "mid", "high"], [0.3, 0.45, 0.25], n)
    language = _pick(rng, ["native", "other"], [0.75, 0.25], n)

    # log-odds of A and B against C (the model's, correct outside the injected subgroup)
    eta_a = (
        -0.2
        + _factor(ses, {"low": -0.6, "mid": 0.0, "high": 0.7})
        + _factor(school, {"S1": 0.2, "S2": 0.0, "S3": -0.2, "S4": 0.4})
    )
    eta_b = 0.3 + _factor(ses, {"low": -0.1, "mid": 0.2, "high": 0.3})
    eta = np.column_stack([eta_a, eta_b, np.zeros(n)])
    p_model = _softmax(eta)
    p_a = np.round(p_model[:, 0], 6)
    p_b = np.round(p_model[:, 1], 6)
    p_c = np.round(1.0 - p_a - p_b, 6)

    group = (ses == GRADES_GROUP["ses"]) & (language == GRADES_GROUP["language"])
    eta_true = eta.copy()
    eta_true[group, 0] += GRADES_LOGIT_SHIFT
    p_true = _softmax(eta_true)
    u = rng.random(n)
    cls = (u[:, None] > np.cumsum(p_true, axis=1)[:, :2]).sum(axis=1)
    grade = np.array(["A", "B", "C"])[cls]

    return pl.DataFrame(
        {
            "student_id": np.arange(1, n + 1),
            "school": school,
            "sex": sex,
            "ses": ses,
            "language": language,
            "grade": grade,
            "p_A": p_a,
            "p_B": p_b,
            "p_C": p_c,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=ROOT / "sample_data")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    for name, frame in (
        ("claims.csv", make_claims(seed=args.seed)),
        ("grades.csv", make_grades(seed=args.seed)),
    ):
        path = args.dir / name
        frame.write_csv(path)
        print(f"wrote {len(frame)} rows to {path}")


if __name__ == "__main__":
    main()
