"""Conditional Bias Scan (methods.md §3): expectations from weighted models, scan, permutation test.

Pure numpy/scikit-learn on arrays, no spec or report objects, so the permutation replicate
(:class:`CbsPermutation`) can rerun the whole pipeline in a worker process: permute ``A`` over
all rows, refit the propensity model, recompute the weights, filter, refit the outcome model,
predict I-hat, recompute sigma (Gaussian) and rerun the full scan with identical settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fairscan.engine import kernels
from fairscan.engine.cells import Cells
from fairscan.engine.mdss import ScanProblem, SubgroupScore, score_subgroup, search
from fairscan.engine.randomization import child_seed, search_seed

EPS = 1e-6  # clip for propensities, predictions and I-hat before logits (methods.md §3.3-3.5)
SIGMA_FLOOR = 1e-6


@dataclass(frozen=True)
class CbsSettings:
    """One CBS scan: the cell of Table 1 (methods.md §3.2) and the search settings."""

    family: str  # "separation" | "sufficiency"
    on: str  # "predictions" | "recommendations"
    condition: int | None  # value-conditional filter C = z, or None (C is a model feature)
    event: int  # 1: the metric of I; 0: of 1 - I (complement I and I-hat)
    direction: int  # +1 positive (q > 1 / mu > 0), -1 negative
    penalty: float = 1.0
    restarts: int = 500
    propensity_model: str = "logistic"  # "logistic" | "gradient_boosting"
    outcome_model: str = "logistic"

    @property
    def gaussian(self) -> bool:
        """Separation for predictions uses the Gaussian score (cells 1 and 4)."""
        return self.family == "separation" and self.on == "predictions"


@dataclass(frozen=True)
class CbsData:
    """All rows of the audit (before any filter), as arrays."""

    codes: np.ndarray  # (n, m) int32 scan-attribute codes (protected attribute removed)
    features: np.ndarray  # (n, d) float64 design matrix of both models (without C)
    outcome: np.ndarray  # (n,) float64 in {0, 1}
    prediction: np.ndarray | None = None  # (n,) float64 in [0, 1]
    recommendation: np.ndarray | None = None  # (n,) float64 in {0, 1}
    expectations: np.ndarray | None = None  # (n,) user-supplied I-hat (skips both models)

    def event(self, settings: CbsSettings) -> np.ndarray:
        """I before the event complement: P or P_bin (separation) or Y (sufficiency)."""
        if settings.family == "sufficiency":
            return self.outcome
        values = self.prediction if settings.on == "predictions" else self.recommendation
        assert values is not None
        return values

    def conditioning(self, settings: CbsSettings) -> np.ndarray:
        """C: Y (separation), P_bin (sufficiency for recommendations), logit P (suf. predictions)."""
        if settings.family == "separation":
            return self.outcome
        if settings.on == "recommendations":
            assert self.recommendation is not None
            return self.recommendation
        assert self.prediction is not None
        return logit(self.prediction)


def logit(x: np.ndarray) -> np.ndarray:
    x = np.clip(np.asarray(x, dtype=np.float64), EPS, 1.0 - EPS)
    return np.log(x) - np.log1p(-x)


# --------------------------------------------------------------------------------------------
# Models (methods.md §3.3)
# --------------------------------------------------------------------------------------------


def _make_model(kind: str) -> Any:
    if kind == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)
    if kind == "gradient_boosting":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.ensemble import GradientBoostingClassifier

        return CalibratedClassifierCV(
            GradientBoostingClassifier(random_state=0), method="sigmoid", cv=3
        )
    raise ValueError(f"unknown model {kind!r}")


def fit_predict(
    kind: str,
    x: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray,
    x_new: np.ndarray,
    *,
    soft: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted probabilistic classifier; returns (fitted on x, predicted on x_new).

    ``soft``: Case B (methods.md §3.3 step 4) for a label in [0, 1]: each row becomes a label-1
    row weighted ``w * label`` and a label-0 row weighted ``w * (1 - label)``.
    """
    if x.shape[1] == 0:  # no features: the weighted mean
        mean = float(np.sum(weight * label) / np.sum(weight))
        return np.full(x.shape[0], mean), np.full(x_new.shape[0], mean)
    if soft:
        xs = np.vstack([x, x])
        ys = np.concatenate([np.ones(len(label)), np.zeros(len(label))])
        ws = np.concatenate([weight * label, weight * (1.0 - label)])
        keep = ws > 0.0
        xs, ys, ws = xs[keep], ys[keep], ws[keep]
    else:
        xs, ys, ws = x, label, weight
    model = _make_model(kind)
    both = np.vstack([x, x_new])
    if kind == "logistic":
        # The weighted log-loss is a sum over rows, so rows with identical features and label
        # can be merged with summed weights: the same fit on a few hundred rows instead of
        # thousands (categorical model attributes have few profiles).
        keys, inverse = np.unique(np.column_stack([xs, ys]), axis=0, return_inverse=True)
        ws = np.bincount(inverse.reshape(-1), weights=ws, minlength=keys.shape[0])
        xs, ys = keys[:, :-1], keys[:, -1]
        model.fit(xs, ys.astype(np.int64), sample_weight=ws)
        uniq, back = np.unique(both, axis=0, return_inverse=True)
        pred = model.predict_proba(uniq)[:, 1][back.reshape(-1)]
    else:
        model.fit(xs, ys.astype(np.int64), sample_weight=ws)
        pred = model.predict_proba(both)[:, 1]
    return pred[: x.shape[0]], pred[x.shape[0] :]


# --------------------------------------------------------------------------------------------
# Expectations and the scan (methods.md §3.3-3.6)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CbsEstimate:
    """The scanned protected rows with observed values and expectations (or Delta), or why not."""

    auditable: bool
    reason: str | None
    rows: np.ndarray  # (n,) bool: rows kept by the value filter
    protected: np.ndarray  # (n,) bool: scanned rows (protected and kept)
    comparison: np.ndarray  # (n,) bool: non-protected kept rows (outcome-model training rows)
    observed: np.ndarray | None = None  # per scanned row: I (event applied), or Delta
    expected: np.ndarray | None = None  # per scanned row: I-hat (event applied)
    sigma: float | None = None  # Gaussian only
    propensity: np.ndarray | None = None  # p^A on all rows (None when expectations are given)
    weights: np.ndarray | None = None  # ATT weights on the comparison rows
    fitted: np.ndarray | None = None  # outcome model on the comparison rows (event applied)
    training_label: np.ndarray | None = None  # I on the comparison rows (event applied)
    max_weight_ratio: float | None = None  # largest weight / median weight

    def problem(self, codes: np.ndarray, settings: CbsSettings) -> ScanProblem:
        assert self.observed is not None and self.expected is not None
        expected = np.full(len(self.observed), 0.5) if settings.gaussian else self.expected
        return ScanProblem.build(codes[self.protected], self.observed, expected)


def _not_auditable(
    reason: str, rows: np.ndarray, protected: np.ndarray, comparison: np.ndarray
) -> CbsEstimate:
    return CbsEstimate(False, reason, rows, protected, comparison)


def estimate(data: CbsData, settings: CbsSettings, a: np.ndarray) -> CbsEstimate:
    """Steps 1-5 of methods.md §3.3 plus Delta and sigma (§3.4-3.5) for protected indicator ``a``."""
    cond = data.conditioning(settings)
    rows = np.ones(len(a), bool) if settings.condition is None else cond == settings.condition
    protected = rows & a
    comparison = rows & ~a
    if not protected.any():
        return _not_auditable(
            "no protected rows after the value filter", rows, protected, comparison
        )
    if not comparison.any():
        return _not_auditable(
            "no non-protected rows after the value filter", rows, protected, comparison
        )
    event = np.asarray(data.event(settings), dtype=np.float64)
    train_label = event[comparison]
    if np.all(train_label == train_label[0]):
        return _not_auditable(
            "the event is constant among the non-protected rows: the expectation model degenerates",
            rows,
            protected,
            comparison,
        )
    if not settings.gaussian and np.all(event[protected] == event[protected][0]):
        return _not_auditable(
            "the event is constant among the protected rows", rows, protected, comparison
        )

    propensity = weights = fitted = None
    ratio = None
    if data.expectations is not None:
        ihat = np.asarray(data.expectations[protected], dtype=np.float64)
    else:
        propensity, _ = fit_predict(
            settings.propensity_model,
            data.features,
            a.astype(np.float64),
            np.ones(len(a)),
            np.empty((0, data.features.shape[1])),
        )
        pa = np.clip(propensity, EPS, 1.0 - EPS)
        weights = pa[comparison] / (1.0 - pa[comparison])
        ratio = float(weights.max() / np.median(weights))
        x = data.features[rows]
        if settings.condition is None:  # C enters the outcome model as a feature
            x = np.column_stack([x, cond[rows]])
        in_rows_comparison = comparison[rows]
        fitted, ihat = fit_predict(
            settings.outcome_model,
            x[in_rows_comparison],
            train_label,
            weights,
            x[~in_rows_comparison],
            soft=settings.gaussian,
        )
    ihat = np.clip(ihat, 0.0, 1.0)
    observed = event[protected]
    flip = settings.event == 0
    sigma = None
    if settings.gaussian:
        observed_out = logit(observed) - logit(ihat)
        if flip:
            observed_out = -observed_out  # logit(1 - P) - logit(1 - I-hat)
        if len(observed_out) < 2 or np.ptp(observed_out) == 0.0:
            return _not_auditable(
                "Delta is constant over the scanned rows: sigma is undefined (degenerate)",
                rows,
                protected,
                comparison,
            )
        sigma = max(float(np.std(observed_out, ddof=1)), SIGMA_FLOOR)
    else:
        observed_out = 1.0 - observed if flip else observed
    expected_out = 1.0 - ihat if flip else ihat
    label = 1.0 - train_label if flip else train_label
    if fitted is not None and flip:
        fitted = 1.0 - fitted
    return CbsEstimate(
        True,
        None,
        rows,
        protected,
        comparison,
        observed=observed_out,
        expected=expected_out,
        sigma=sigma,
        propensity=propensity,
        weights=weights,
        fitted=fitted,
        training_label=label,
        max_weight_ratio=ratio,
    )


def score_cells(
    cells: Cells, selection: np.ndarray, settings: CbsSettings, sigma: float | None
) -> SubgroupScore:
    """Re-score a subgroup from scratch; for the Gaussian score ``log_q`` holds mu-hat."""
    return score_subgroup(
        cells,
        selection,
        settings.direction,
        settings.penalty,
        likelihood=kernels.GAUSSIAN if settings.gaussian else kernels.BERNOULLI,
        sigma=float(sigma if sigma is not None else 1.0),
    )


def scan(cells: Cells, settings: CbsSettings, sigma: float | None, seed: int) -> SubgroupScore:
    """MDSS core on the protected rows (methods.md §3.6)."""
    if not settings.gaussian:
        return search(
            cells,
            direction=settings.direction,
            penalty=settings.penalty,
            restarts=settings.restarts,
            seed=seed,
        )
    assert sigma is not None
    selection, _ = kernels.coordinate_ascent_lik(
        cells.codes,
        cells.observed,
        cells.weight,
        cells.expected,
        True,
        cells.cardinality,
        settings.direction,
        float(settings.penalty),
        int(settings.restarts),
        np.uint64(seed),
        kernels.GAUSSIAN,
        float(sigma),
    )
    return score_cells(cells, selection, settings, sigma)


@dataclass(frozen=True)
class CbsOutcome:
    estimate: CbsEstimate
    problem: ScanProblem | None
    cells: Cells | None
    best: SubgroupScore | None

    @property
    def statistic(self) -> float:
        """The permutation-test statistic J(S*) (0 when not auditable)."""
        return 0.0 if self.best is None else self.best.score


def run(data: CbsData, settings: CbsSettings, a: np.ndarray, seed: int) -> CbsOutcome:
    """Estimate expectations for protected indicator ``a`` and scan."""
    from threadpoolctl import threadpool_limits

    # The model fits are tiny: a multithreaded BLAS only adds synchronisation (3-5x slower).
    with threadpool_limits(limits=1, user_api="blas"):
        est = estimate(data, settings, a)
    if not est.auditable:
        return CbsOutcome(est, None, None, None)
    problem = est.problem(data.codes, settings)
    cells = problem.cells()
    return CbsOutcome(est, problem, cells, scan(cells, settings, est.sigma, seed))


@dataclass(frozen=True)
class CbsPermutation:
    """Permutation replicate (methods.md §3.7): permute A over all rows and redo everything."""

    data: CbsData
    protected: np.ndarray  # (n,) bool, the real A
    settings: CbsSettings
    seed: np.random.SeedSequence

    def __call__(self, index: int) -> float:
        rng = np.random.Generator(np.random.PCG64(child_seed(self.seed, index)))
        a = rng.permutation(self.protected)
        return run(
            self.data, self.settings, a, search_seed(child_seed(self.seed, index, 0))
        ).statistic


def reliability(
    predicted: np.ndarray, label: np.ndarray, weight: np.ndarray | None = None, bins: int = 10
) -> tuple[float, list[tuple[float, float, int, float, float, float]]]:
    """Weighted Brier score and an equal-width reliability table.

    Rows: (bin low, bin high, rows, weight, mean predicted, mean label), non-empty bins only.
    """
    w = np.ones(len(predicted)) if weight is None else np.asarray(weight, dtype=np.float64)
    brier = float(np.sum(w * (predicted - label) ** 2) / np.sum(w))
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, predicted, side="right") - 1, 0, bins - 1)
    rows_per = np.bincount(which, minlength=bins)
    w_per = np.bincount(which, weights=w, minlength=bins)
    pred_per = np.bincount(which, weights=w * predicted, minlength=bins)
    lab_per = np.bincount(which, weights=w * label, minlength=bins)
    table = [
        (
            float(edges[b]),
            float(edges[b + 1]),
            int(rows_per[b]),
            float(w_per[b]),
            float(pred_per[b] / w_per[b]),
            float(lab_per[b] / w_per[b]),
        )
        for b in range(bins)
        if rows_per[b] > 0 and w_per[b] > 0
    ]
    return brier, table
