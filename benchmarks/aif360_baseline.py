"""AIF360 MDSS baseline timing on COMPAS: FPR-Scan (Bernoulli), Poisson (ordinal), Berk-Jones.

Runs in its own virtual environment (NOT the project venv)::

    python3 -m venv benchmarks/.venv-aif360
    benchmarks/.venv-aif360/bin/pip install aif360==0.6.1 pandas
    python scripts/prepare_compas.py                      # project venv; writes build/compas.csv
    benchmarks/.venv-aif360/bin/python benchmarks/aif360_baseline.py
    benchmarks/.venv-aif360/bin/python benchmarks/aif360_baseline.py --scan poisson berk_jones \
        --json build/aif360_scores.json     # the scores beyond Bernoulli (benchmarks/bench_scores.py)

``--scan fpr`` (the default) is the FPR-Scan below. The other scans (same attributes):

* ``poisson``: all 6172 rows; observations = ``decile_score`` (1-10) as an ordinal outcome,
  expectations left to AIF360's default (the overall mean of the observations),
  ``scoring="Poisson"``, ``mode="ordinal"``. ``--directions positive`` (the default) scans for
  decile scores above the mean (``overpredicted=False``; the favorable value defaults to the
  maximum, so AIF360 maps it to direction "positive"), ``negative`` below it.
* ``berk_jones``: the FPR-Scan population and observations (true negatives, ``high_risk``)
  with ``scoring="BerkJones"``, ``alpha`` (``--alpha``, default 0.3), ``mode="binary"``,
  positive direction; AIF360 requires a constant expectation (autostrat) and ignores its value,
  so the overall FPR is passed. Its score is C log(q/alpha) + (N - C) log((1-q)/(1-alpha)) at
  q = C/N when q > alpha (else 0): the Bernoulli score with the constant expectation alpha.

* ``nominal``: one chosen class of a three-class outcome (issue 25) on
  ``sample_data/grades.csv`` (``--grades``; grades A/B/C with predicted probabilities p_A, p_B,
  p_C; attributes ``school, sex, ses, language``): ``mode="nominal"``, ``favorable_value=<class>``
  (``--classes``, default A B C), ``expectations`` = the DataFrame of the class probabilities
  (columns named by class), ``scoring="Bernoulli"``, both directions. AIF360 then scans
  1{grade = class} against that class's column. The found subgroup is re-scored exactly (per-row
  probabilities, the oracle's bracket [1e-6, 1e6]) and its odds multiplier q reported, so a
  score that AIF360's bracket [1e-3, 1e3] binds is recognisable. The fairscan side is
  ``benchmarks/bench_nominal_class.py`` (``positive: <class>`` in a spec) reading this JSON.

* ``given`` (issue 26): ``aif360.sklearn.metrics.mdss_bias_score`` of given subgroups (no
  search; ``penalty=1e-17``, AIF360's default): ``calibration`` = all rows, ``two_year_recid``
  against ``prob_decile``; ``fpr`` = the FPR-Scan population above. ``overpredicted=True`` is
  fairscan's direction ``negative``. ``--json`` writes the scores;
  ``tests/scans/data/aif360_given_scores.json`` holds them and
  ``tests/scans/test_given_subgroups.py`` compares fairscan's statistic (penalty 0) with them.

FPR-Scan inputs (methods.md §4.2): rows with ``two_year_recid == 0``; attributes
``sex, race, age_group, c_charge_degree, priors`` as strings; observations = ``high_risk``;
expectations = constant overall FPR (mean of ``high_risk`` over those rows).

Direction: in ``aif360.detectors.mdss_detector.bias_scan`` (0.6.1), binary mode sets
``direction = "negative" if overpredicted else "positive"``; ``overpredicted=False`` means
"observed is systematically higher than the expectations", i.e. q > 1 — the FPR-Scan direction.
``favorable_value`` is left at its default (the maximum of the observations, 1), so the
observations are passed through unchanged.

Each configuration is timed ``--repeats`` times (wall clock around the ``bias_scan`` call only;
AIF360 reseeds ``np.random.seed(0)`` inside ``MDSS.scan`` so every repeat does the same work).
The returned subgroup is re-scored exactly with the repository's brute-force oracle
(``tests/oracle/brute_force.py``, pure numpy) because AIF360 rounds scores to 4 decimals and
uses its own q bracket ``[1e-3, 1e3]`` with tolerance ``1e-3``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from aif360.detectors.mdss_detector import bias_scan

REPO_ROOT = Path(__file__).resolve().parent.parent
ATTRIBUTES = ["sex", "race", "age_group", "c_charge_degree", "priors"]

sys.path.insert(0, str(REPO_ROOT / "tests" / "oracle"))
try:  # optional exact re-scoring; pure numpy, no fairscan import
    from brute_force import score_records
except ImportError:  # pragma: no cover
    score_records = None


def load_fpr_inputs(csv_path: Path):
    # keep_default_na=False: the priors label "None" is in pandas' default NA list.
    df = pd.read_csv(csv_path, dtype=dict.fromkeys(ATTRIBUTES, str), keep_default_na=False)
    neg = df[df["two_year_recid"] == 0].reset_index(drop=True)
    data = neg[ATTRIBUTES].astype(str)
    observations = neg["high_risk"].astype(int)
    fpr = float(observations.mean())
    expectations = pd.Series(fpr, index=observations.index)
    return data, observations, expectations, fpr


def rescore(data, observations, fpr, subgroup):
    if score_records is None:
        return None, None
    mask = np.ones(len(data), dtype=bool)
    for attr, vals in subgroup.items():
        mask &= data[attr].isin(list(vals)).to_numpy()
    obs = observations.to_numpy(dtype=float)[mask]
    F, _q = score_records(obs, np.full(obs.shape, fpr), "positive")
    return F, int(mask.sum())


def load_ordinal_inputs(csv_path: Path):
    df = pd.read_csv(csv_path, dtype=dict.fromkeys(ATTRIBUTES, str), keep_default_na=False)
    data = df[ATTRIBUTES].astype(str).reset_index(drop=True)
    observations = df["decile_score"].astype(int).reset_index(drop=True)
    return data, observations


def poisson_rescore(data, observations, mean, subgroup, direction):
    """Exact Poisson score of a subgroup against the constant expectation ``mean``."""
    mask = np.ones(len(data), dtype=bool)
    for attr, vals in subgroup.items():
        mask &= data[attr].isin(list(vals)).to_numpy()
    s = float(observations.to_numpy(dtype=float)[mask].sum())
    e = float(mask.sum()) * mean
    q = s / e if e > 0 else 1.0
    if (direction == "positive" and q <= 1.0) or (direction == "negative" and q >= 1.0):
        return 0.0, int(mask.sum()), q
    if s == 0:  # negative direction, q -> 0: the limit of s log q - e (q - 1)
        return e, int(mask.sum()), q
    return s * np.log(q) - e * (q - 1.0), int(mask.sum()), q


GRADE_ATTRIBUTES = ["school", "sex", "ses", "language"]


def run_nominal(args, env) -> list[dict]:
    """``--scan nominal``: AIF360's one chosen class of a three-class outcome."""
    df = pd.read_csv(args.grades, dtype=dict.fromkeys(GRADE_ATTRIBUTES, str))
    data = df[GRADE_ATTRIBUTES].astype(str)
    observations = df["grade"].astype(str)
    labels = sorted(observations.unique().tolist())
    expectations = pd.DataFrame({c: df[f"p_{c}"].astype(float) for c in labels})
    results = []
    for label in args.classes:
        for direction in args.directions:
            for pen in args.penalties:
                times, out = timed(
                    args.repeats,
                    data=data,
                    observations=observations,
                    expectations=expectations,
                    favorable_value=label,
                    overpredicted=direction == "negative",
                    scoring="Bernoulli",
                    num_iters=args.num_iters,
                    penalty=pen,
                    mode="nominal",
                )
                raw, score = out
                raw = {k: sorted(v) for k, v in raw.items()}
                subgroup = normalise(data, raw)
                mask = np.ones(len(data), dtype=bool)
                for attr, vals in subgroup.items():
                    mask &= data[attr].isin(list(vals)).to_numpy()
                obs = (observations.to_numpy() == label).astype(float)[mask]
                exp = expectations[label].to_numpy(dtype=float)[mask]
                F, q = (None, None)
                if score_records is not None:
                    F, q = score_records(obs, exp, direction)
                complexity = sum(len(v) for v in subgroup.values())
                results.append(
                    {
                        "scan": "nominal",
                        "class": label,
                        "direction": direction,
                        "penalty": pen,
                        "num_iters": args.num_iters,
                        "times_s": times,
                        "best_s": min(times),
                        "median_s": statistics.median(times),
                        "aif360_subgroup": raw,
                        "subgroup": subgroup,
                        "aif360_score": float(score),
                        "complexity": complexity,
                        "n": int(mask.sum()),
                        "exact_F": None if F is None else float(F),
                        "exact_J": None if F is None else float(F) - pen * complexity,
                        "q": None if q is None else float(q),
                    }
                )
                show(results[-1])
    return results


def normalise(data, raw_subgroup):
    # methods.md §1.2: an attribute with every present value selected is unconstrained
    return {k: v for k, v in raw_subgroup.items() if set(v) != set(data[k].unique().tolist())}


def timed(repeats, **scan_args):
    """Wall time of ``bias_scan(**scan_args)`` (the call only), ``repeats`` times."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = bias_scan(**scan_args)
        times.append(time.perf_counter() - t0)
    return times, out


def show(rec) -> None:
    print(
        f"\n{rec['scan']} direction={rec['direction']} penalty={rec['penalty']:g} "
        f"num_iters={rec['num_iters']}: best {rec['best_s']:.3f}s, median "
        f"{rec['median_s']:.3f}s (runs: {', '.join(f'{t:.3f}' for t in rec['times_s'])})\n"
        f"  AIF360 subgroup: {rec['aif360_subgroup']}\n"
        f"  normalised (full-value attributes dropped): {rec['subgroup']}\n"
        f"  AIF360 score (rounded to 4 dp by AIF360): {rec['aif360_score']}\n"
        f"  exact re-score: F={rec['exact_F']}, J={rec['exact_J']}, "
        f"c(S)={rec['complexity']}, n={rec['n']}"
    )


def run_scores(args, env) -> int:
    """``--scan poisson`` / ``berk_jones``: the scores beyond Bernoulli (bench_scores.py)."""
    results = []
    for scan in args.scan:
        if scan == "fpr":
            continue
        if scan == "nominal":
            results += run_nominal(args, env)
            continue
        for pen in args.penalties:
            if scan == "poisson":
                data, observations = load_ordinal_inputs(args.csv)
                mean = float(observations.mean())
                for direction in args.directions:
                    times, out = timed(
                        args.repeats,
                        data=data,
                        observations=observations,
                        expectations=None,
                        overpredicted=direction == "negative",
                        scoring="Poisson",
                        num_iters=args.num_iters,
                        penalty=pen,
                        mode="ordinal",
                    )
                    raw, score = out
                    raw = {k: sorted(v) for k, v in raw.items()}
                    subgroup = normalise(data, raw)
                    F, n_sub, q = poisson_rescore(data, observations, mean, subgroup, direction)
                    complexity = sum(len(v) for v in subgroup.values())
                    results.append(
                        {
                            "scan": "poisson",
                            "population": f"all {len(data)} rows",
                            "outcome": "decile_score (ordinal 1-10)",
                            "expectation": mean,
                            "direction": direction,
                            "penalty": pen,
                            "num_iters": args.num_iters,
                            "times_s": times,
                            "best_s": min(times),
                            "median_s": statistics.median(times),
                            "aif360_subgroup": raw,
                            "subgroup": subgroup,
                            "aif360_score": float(score),
                            "complexity": complexity,
                            "n": n_sub,
                            "q": q,
                            "exact_F": F,
                            "exact_J": F - pen * complexity,
                        }
                    )
                    show(results[-1])
            elif scan == "berk_jones":
                data, observations, expectations, _fpr = load_fpr_inputs(args.csv)
                times, out = timed(
                    args.repeats,
                    data=data,
                    observations=observations,
                    expectations=expectations,
                    overpredicted=False,
                    scoring="BerkJones",
                    num_iters=args.num_iters,
                    penalty=pen,
                    mode="binary",
                    alpha=args.alpha,
                )
                raw, score = out
                raw = {k: sorted(v) for k, v in raw.items()}
                subgroup = normalise(data, raw)
                F, n_sub = rescore(data, observations, args.alpha, subgroup)
                complexity = sum(len(v) for v in subgroup.values())
                results.append(
                    {
                        "scan": "berk_jones",
                        "population": f"{len(data)} true negatives (two_year_recid == 0)",
                        "outcome": "high_risk",
                        "alpha": args.alpha,
                        "direction": "positive",
                        "penalty": pen,
                        "num_iters": args.num_iters,
                        "times_s": times,
                        "best_s": min(times),
                        "median_s": statistics.median(times),
                        "aif360_subgroup": raw,
                        "subgroup": subgroup,
                        "aif360_score": float(score),
                        "complexity": complexity,
                        "n": n_sub,
                        "exact_F": F,
                        "exact_J": None if F is None else F - pen * complexity,
                    }
                )
                show(results[-1])
            else:  # pragma: no cover - argparse restricts the choices
                raise ValueError(scan)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "results": results}, indent=2))
        print(f"\nwrote {args.json}")
    return 0


GIVEN_CASES = [
    ("calibration", {"sex": ["Male"]}, "positive"),
    ("calibration", {"sex": ["Male"]}, "negative"),
    ("calibration", {"race": ["African-American"], "sex": ["Male"]}, "positive"),
    ("calibration", {"race": ["African-American"], "sex": ["Male"]}, "negative"),
    ("calibration", {"age_group": ["Under 25"], "priors": ["None", "1 to 5"]}, "negative"),
    ("fpr", {"sex": ["Male"]}, "positive"),
    ("fpr", {"race": ["African-American"], "sex": ["Male"]}, "positive"),
    ("fpr", {"race": ["Caucasian"]}, "negative"),
]


def run_given(args, env) -> int:
    """mdss_bias_score of the GIVEN_CASES subgroups (issue 26 parity)."""
    from aif360.sklearn.metrics import mdss_bias_score

    df = pd.read_csv(args.csv, dtype=dict.fromkeys(ATTRIBUTES, str), keep_default_na=False)
    neg = df[df["two_year_recid"] == 0].reset_index(drop=True)
    fpr = float(neg["high_risk"].mean())
    populations = {
        "calibration": (df[ATTRIBUTES], df["two_year_recid"], df["prob_decile"]),
        "fpr": (neg[ATTRIBUTES], neg["high_risk"], pd.Series(fpr, index=neg.index)),
    }
    records = []
    for population, subgroup, direction in GIVEN_CASES:
        X, y, p = populations[population]
        score = mdss_bias_score(
            y.to_numpy(),
            p.to_numpy(),
            X=X,
            subset=subgroup,
            overpredicted=direction == "negative",
            scoring="Bernoulli",
        )
        records.append(
            {
                "population": population,
                "subgroup": subgroup,
                "direction": direction,
                "aif360_score": float(score),
            }
        )
        print(f"{population:12s} {direction:8s} {subgroup}: {float(score):.4f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "scores": records}, indent=2) + "\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=REPO_ROOT / "build" / "compas.csv")
    ap.add_argument("--penalties", type=float, nargs="+", default=[1.0, 1e-17])
    ap.add_argument("--num-iters", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--scan",
        nargs="+",
        choices=["fpr", "poisson", "berk_jones", "nominal", "given"],
        default=["fpr"],
    )
    ap.add_argument("--alpha", type=float, default=0.3, help="Berk-Jones alpha")
    ap.add_argument("--grades", type=Path, default=REPO_ROOT / "sample_data" / "grades.csv")
    ap.add_argument("--classes", nargs="+", default=["A", "B", "C"], help="nominal: classes")
    ap.add_argument(
        "--directions", nargs="+", choices=["positive", "negative"], default=["positive"]
    )
    args = ap.parse_args(argv)
    if not args.csv.is_file() and args.scan != ["nominal"]:
        print(
            f"{args.csv} not found; run `python scripts/prepare_compas.py` first", file=sys.stderr
        )
        return 2

    env = {
        "python": platform.python_version(),
        "aif360": version("aif360"),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "processor": platform.processor(),
    }
    print(f"environment: {env}")
    if args.scan == ["given"]:
        return run_given(args, env)
    if args.scan != ["fpr"]:
        return run_scores(args, env)
    data, observations, expectations, fpr = load_fpr_inputs(args.csv)
    print(
        f"FPR-Scan inputs: {len(data)} true negatives, {int(observations.sum())} high_risk, "
        f"overall FPR = {fpr:.10f}; arities "
        f"{[data[a].nunique() for a in ATTRIBUTES]}"
    )

    results = []
    for pen in args.penalties:
        times, out = [], None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = bias_scan(
                data=data,
                observations=observations,
                expectations=expectations,
                overpredicted=False,
                scoring="Bernoulli",
                num_iters=args.num_iters,
                penalty=pen,
                mode="binary",
            )
            times.append(time.perf_counter() - t0)
        raw_subgroup, score = out
        raw_subgroup = {k: sorted(v) for k, v in raw_subgroup.items()}
        # methods.md §1.2: an attribute with every present value selected is unconstrained
        subgroup = {
            k: v for k, v in raw_subgroup.items() if set(v) != set(data[k].unique().tolist())
        }
        F_exact, n_sub = rescore(data, observations, fpr, subgroup)
        complexity = sum(len(v) for v in subgroup.values())  # c(S) of methods.md §1.4
        rec = {
            "penalty": pen,
            "num_iters": args.num_iters,
            "times_s": times,
            "best_s": min(times),
            "median_s": statistics.median(times),
            "aif360_subgroup": raw_subgroup,
            "subgroup": subgroup,
            "aif360_score": float(score),
            "complexity": complexity,
            "n": n_sub,
            "exact_F": F_exact,
            "exact_J": None if F_exact is None else F_exact - pen * complexity,
        }
        results.append(rec)
        print(
            f"\npenalty={pen:g} num_iters={args.num_iters}: best {rec['best_s']:.3f}s, "
            f"median {rec['median_s']:.3f}s (runs: {', '.join(f'{t:.3f}' for t in times)})\n"
            f"  AIF360 subgroup: {raw_subgroup}\n"
            f"  normalised (full-value attributes dropped): {subgroup}\n"
            f"  AIF360 score (rounded to 4 dp by AIF360): {score}\n"
            f"  exact re-score: F={F_exact:.6f}, J=F-penalty*c={rec['exact_J']:.6f}, "
            f"c(S)={complexity}, n={n_sub}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"environment": env, "results": results}, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
