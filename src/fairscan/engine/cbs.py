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
SIGMA_SD = "sd"  # the sigma rule "sample SD of Delta" (methods.md §3.5)

# Unregularised logistic fits (methods.md §3.3): a tight tolerance so that a finite MLE is
# reached to high precision and a diverging one (separation) shows as huge coefficients.
LOGISTIC_MAX_ITER = 1000
LOGISTIC_TOL = 1e-8
# |coefficient| (intercept included) above which an unregularised fit is taken as diverging:
# a finite MLE this large is an odds ratio of e^15 ~ 3e6 between two profiles, which finite
# categorical data does not support; under (quasi-)separation the tight tolerance drives the
# separated coefficients to ~20 and beyond.
SEPARATION_COEF = 15.0
RIDGE_FALLBACK_C = 1e4  # the tiny ridge of the fallback: penalty |beta|^2 / (2 C)
CALIBRATION_FOLDS = 3  # CalibratedClassifierCV(cv=3) of gradient boosting + Platt scaling


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
    sigma: float | str = 1.0  # Gaussian: a fixed positive sigma, or SIGMA_SD (methods.md §3.5)
    regularization: str = "none"  # logistic models: "none" (ridge only under separation) | "l2"
    l2_c: float = 1.0  # inverse L2 strength (scikit-learn's C) with regularization "l2"

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


class ModelDegenerate(Exception):
    """A model cannot be fitted on this training set: the run is not auditable (the paper's
    "–"), never an internal error."""


@dataclass(frozen=True)
class ModelFit:
    """A fitted model's predictions on its training rows and on the new rows, and a note when
    the fit departed from the requested one (the ridge fallback under separation)."""

    fitted: np.ndarray
    predicted: np.ndarray
    note: str | None = None


def _logistic(c: float | None) -> Any:
    """Logistic regression with L2 strength ``1 / c``; ``c=None``: unregularised."""
    import sklearn
    from sklearn.linear_model import LogisticRegression

    if c is not None:
        return LogisticRegression(C=c, max_iter=LOGISTIC_MAX_ITER)
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    if (major, minor) >= (1, 8):  # penalty=None is deprecated from 1.8 on: C = inf
        return LogisticRegression(C=np.inf, max_iter=LOGISTIC_MAX_ITER, tol=LOGISTIC_TOL)
    return LogisticRegression(penalty=None, max_iter=LOGISTIC_MAX_ITER, tol=LOGISTIC_TOL)


def _gradient_boosting() -> Any:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import GradientBoostingClassifier

    return CalibratedClassifierCV(
        GradientBoostingClassifier(random_state=0), method="sigmoid", cv=CALIBRATION_FOLDS
    )


def _fit(model: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> list[str]:
    """Fit with scikit-learn's warnings captured; returns the convergence warnings' texts.

    A ValueError of the fit (a training set the model cannot use) is :class:`ModelDegenerate`.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            model.fit(x, y.astype(np.int64), sample_weight=w)
        except ValueError as exc:
            raise ModelDegenerate(str(exc).rstrip(".")) from exc
    return [str(c.message) for c in caught if issubclass(c.category, ConvergenceWarning)]


def _fit_logistic(
    xs: np.ndarray, ys: np.ndarray, ws: np.ndarray, regularization: str, c: float
) -> tuple[Any, str | None]:
    """The logistic fit of methods.md §3.3: unregularised by default, refitted with a tiny
    ridge when the unregularised fit diverges (separation), or L2 with ``C`` on request."""
    if regularization == "l2":
        model = _logistic(c)
        _fit(model, xs, ys, ws)
        return model, None
    model = _logistic(None)
    warned = _fit(model, xs, ys, ws)
    largest = float(max(np.max(np.abs(model.coef_)), np.max(np.abs(model.intercept_))))
    if not warned and np.isfinite(largest) and largest <= SEPARATION_COEF:
        return model, None
    why = (
        "did not converge"
        if warned
        else f"diverges (separation: a coefficient of magnitude {largest:.1f})"
    )
    model = _logistic(RIDGE_FALLBACK_C)
    _fit(model, xs, ys, ws)
    note = (
        f"the unregularised logistic fit {why}; refitted with a tiny ridge "
        f"(L2, C = {RIDGE_FALLBACK_C:g})"
    )
    return model, note


def _class_counts_check(ys: np.ndarray, kind: str) -> None:
    """Gradient boosting + Platt scaling calibrates on ``CALIBRATION_FOLDS`` stratified folds:
    each class needs at least that many training rows (methods.md §3.3)."""
    if kind != "gradient_boosting":
        return
    counts = {int(v): int(np.count_nonzero(ys == v)) for v in (0, 1)}
    short = {v: k for v, k in counts.items() if k < CALIBRATION_FOLDS}
    if short:
        text = ", ".join(f"{k} row{'s' if k != 1 else ''} of label {v}" for v, k in short.items())
        raise ModelDegenerate(
            f"its training set has {text}; Platt scaling on {CALIBRATION_FOLDS} calibration "
            f"folds needs at least {CALIBRATION_FOLDS} rows of each class"
        )


def fit_predict(
    kind: str,
    x: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray,
    x_new: np.ndarray,
    *,
    soft: bool = False,
    regularization: str = "none",
    c: float = 1.0,
) -> ModelFit:
    """Weighted probabilistic classifier: predictions on x (fitted) and on x_new.

    ``soft``: Case B (methods.md §3.3 step 4) for a label in [0, 1]: each row becomes a label-1
    row weighted ``w * label`` and a label-0 row weighted ``w * (1 - label)``.
    ``regularization`` / ``c``: logistic models only ("none": unregularised, with the ridge
    fallback under separation; "l2": L2 with inverse strength ``c``).
    Raises :class:`ModelDegenerate` when the model cannot be fitted on this training set.
    """
    if x.shape[1] == 0:  # no features: the weighted mean
        mean = float(np.sum(weight * label) / np.sum(weight))
        return ModelFit(np.full(x.shape[0], mean), np.full(x_new.shape[0], mean))
    if soft:
        xs = np.vstack([x, x])
        ys = np.concatenate([np.ones(len(label)), np.zeros(len(label))])
        ws = np.concatenate([weight * label, weight * (1.0 - label)])
        keep = ws > 0.0
        xs, ys, ws = xs[keep], ys[keep], ws[keep]
    else:
        xs, ys, ws = x, label, weight
    if np.all(ys == ys[0]):
        raise ModelDegenerate(f"its training label is constant ({ys[0]:g})")
    both = np.vstack([x, x_new])
    note = None
    if kind == "logistic":
        # The weighted log-loss is a sum over rows, so rows with identical features and label
        # can be merged with summed weights: the same fit on a few hundred rows instead of
        # thousands (categorical model attributes have few profiles).
        keys, inverse = np.unique(np.column_stack([xs, ys]), axis=0, return_inverse=True)
        ws = np.bincount(inverse.reshape(-1), weights=ws, minlength=keys.shape[0])
        xs, ys = keys[:, :-1], keys[:, -1]
        model, note = _fit_logistic(xs, ys, ws, regularization, c)
        uniq, back = np.unique(both, axis=0, return_inverse=True)
        pred = model.predict_proba(uniq)[:, 1][back.reshape(-1)]
    elif kind == "gradient_boosting":
        _class_counts_check(ys, kind)
        model = _gradient_boosting()
        _fit(model, xs, ys, ws)
        pred = model.predict_proba(both)[:, 1]
    else:
        raise ValueError(f"unknown model {kind!r}")
    return ModelFit(pred[: x.shape[0]], pred[x.shape[0] :], note)


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
    notes: tuple[str, ...] = ()  # fits that departed from the requested model (ridge fallback)

    def problem(self, codes: np.ndarray, settings: CbsSettings) -> ScanProblem:
        assert self.observed is not None and self.expected is not None
        expected = np.full(len(self.observed), 0.5) if settings.gaussian else self.expected
        return ScanProblem.build(codes[self.protected], self.observed, expected)


def _not_auditable(
    reason: str, rows: np.ndarray, protected: np.ndarray, comparison: np.ndarray
) -> CbsEstimate:
    return CbsEstimate(False, reason, rows, protected, comparison)


def model_name(kind: str, settings: CbsSettings) -> str:
    """The model in words, e.g. 'unregularised logistic regression'."""
    if kind == "gradient_boosting":
        return f"gradient boosting + Platt scaling, cv = {CALIBRATION_FOLDS}"
    if settings.regularization == "l2":
        return f"logistic regression (L2, C = {settings.l2_c:g})"
    return "unregularised logistic regression"


def gaussian_sigma(delta: np.ndarray, rule: float | str) -> float | None:
    """sigma of the Gaussian score (methods.md §3.5): a fixed number, or the sample SD (ddof 1)
    of Delta floored at ``SIGMA_FLOOR``; None when the SD rule is degenerate (fewer than two
    rows or all Delta equal)."""
    if rule != SIGMA_SD:
        return float(rule)
    if len(delta) < 2 or np.ptp(delta) == 0.0:
        return None
    return max(float(np.std(delta, ddof=1)), SIGMA_FLOOR)


def estimate(data: CbsData, settings: CbsSettings, a: np.ndarray) -> CbsEstimate:
    """Steps 1-5 of methods.md §3.3 plus Delta and sigma (§3.4-3.5) for protected indicator ``a``.

    A model that cannot be fitted on its training set (:class:`ModelDegenerate`, e.g. gradient
    boosting + Platt scaling with fewer than 3 rows of a class) makes the run not auditable.
    """
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
    notes: list[str] = []
    if data.expectations is not None:
        ihat = np.asarray(data.expectations[protected], dtype=np.float64)
    else:
        which = "propensity"
        try:
            fit = fit_predict(
                settings.propensity_model,
                data.features,
                a.astype(np.float64),
                np.ones(len(a)),
                np.empty((0, data.features.shape[1])),
                regularization=settings.regularization,
                c=settings.l2_c,
            )
            if fit.note:
                notes.append(f"propensity model: {fit.note}")
            propensity = fit.fitted
            pa = np.clip(propensity, EPS, 1.0 - EPS)
            weights = pa[comparison] / (1.0 - pa[comparison])
            ratio = float(weights.max() / np.median(weights))
            x = data.features[rows]
            if settings.condition is None:  # C enters the outcome model as a feature
                x = np.column_stack([x, cond[rows]])
            in_rows_comparison = comparison[rows]
            which = "outcome"
            fit = fit_predict(
                settings.outcome_model,
                x[in_rows_comparison],
                train_label,
                weights,
                x[~in_rows_comparison],
                soft=settings.gaussian,
                regularization=settings.regularization,
                c=settings.l2_c,
            )
        except ModelDegenerate as exc:
            if which == "propensity":
                kind, rows_text = settings.propensity_model, "all rows, label: protected"
            else:
                kind, rows_text = settings.outcome_model, "the non-protected rows after the filter"
            return _not_auditable(
                f"the {which} model ({model_name(kind, settings)}; trained on {rows_text}) "
                f"cannot be fitted: {exc}",
                rows,
                protected,
                comparison,
            )
        if fit.note:
            notes.append(f"outcome model: {fit.note}")
        fitted, ihat = fit.fitted, fit.predicted
    ihat = np.clip(ihat, 0.0, 1.0)
    observed = event[protected]
    flip = settings.event == 0
    sigma = None
    if settings.gaussian:
        observed_out = logit(observed) - logit(ihat)
        if flip:
            observed_out = -observed_out  # logit(1 - P) - logit(1 - I-hat)
        sigma = gaussian_sigma(observed_out, settings.sigma)
        if sigma is None:
            return _not_auditable(
                "Delta is constant over the scanned rows: the SD rule of sigma is degenerate "
                "(F = 0)",
                rows,
                protected,
                comparison,
            )
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
        notes=tuple(notes),
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
    """Permutation replicate (methods.md §3.7): permute A over all rows and redo everything.

    The replicate applies the same rules as the observed run: the same sigma rule (the SD rule
    recomputed on the replicate's Delta), the same model fitting rule (unregularised with the
    ridge fallback, decided per fit), and the same not-auditable rule. A replicate whose
    training set degenerates (a constant event, gradient boosting + Platt scaling with fewer
    than 3 rows of a class, a degenerate SD rule) scores 0 and is counted: the statistic is
    J(S*) with "0 when the cell cannot be audited" as part of its definition, which is what
    the observed run reports for such data (no subgroup, F = 0), so the observed and permuted
    statistics stay one function of exchangeable data and the test stays valid. Dropping such
    replicates would instead condition the null on the permuted data being auditable.
    """

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
