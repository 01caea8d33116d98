"""Conditional Bias Scan (methods.md §3): expectations from weighted models, scan, permutation test.

Pure numpy/scikit-learn on arrays, no spec or report objects, so the permutation replicate
(:class:`CbsPermutation`) can rerun the whole pipeline in a worker process: permute ``A`` over
all rows, refit the propensity model, recompute the weights, filter, refit the outcome model,
predict I-hat, recompute sigma (Gaussian) and rerun the full scan with identical settings.

The observed run fits its models with scikit-learn (:class:`RowModels`). A permutation replicate
fits its logistic models on the distinct covariate patterns (:class:`PatternModels`): the weighted
log-likelihood of the rows is a sum over patterns of (weight of label 1) * z - (total weight) *
log(1 + e^z), so a dense Newton solver on a few hundred patterns, started from the unpermuted fit,
reaches the same maximum-likelihood fit as scikit-learn on the rows (to solver tolerance) in a
fraction of the time.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from fairscan.engine import kernels
from fairscan.engine.cells import Cells, compress
from fairscan.engine.mdss import ScanProblem, SubgroupScore, score_subgroup, search
from fairscan.engine.seeds import replicate_rng, replicate_search_seed

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
    # (n,) fractional sample weights (columns.weight): weighted fits, sigma and scan; the
    # permutation replicates permute A over the rows, each row keeping its weight
    weight: np.ndarray | None = None

    def row_weight(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The sample weights of ``rows`` (a mask; all rows by default), 1 without weights."""
        n = self.outcome.shape[0] if rows is None else int(np.count_nonzero(rows))
        if self.weight is None:
            return np.ones(n)
        return self.weight if rows is None else self.weight[rows]

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
    coef: np.ndarray | None = None  # logistic coefficients, intercept first (pattern fits only)


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
# Logistic fits on covariate patterns (the permutation replicates)
# --------------------------------------------------------------------------------------------

NEWTON_MAX_ITER = 100
NEWTON_TOL = 1e-10  # converged: the largest coefficient change of a Newton step
# Newton iterates this large: the MLE does not exist (separation); a finite MLE has all
# |coefficients| <= SEPARATION_COEF, and the damped iterates of a convex fit started near it
# stay near it.
NEWTON_DIVERGED = 4.0 * SEPARATION_COEF
LINE_SEARCH_ABOVE = 1e-3  # steps smaller than this are taken whole (quadratic convergence)


@dataclass(frozen=True)
class Patterns:
    """The distinct rows of a design matrix and the pattern of each row."""

    design: np.ndarray  # (k, d) distinct rows
    of_row: np.ndarray  # (n,) int64: the pattern of each row

    @classmethod
    def of(cls, x: np.ndarray) -> Patterns:
        design, inverse = np.unique(x, axis=0, return_inverse=True)
        return cls(design, inverse.reshape(-1).astype(np.int64))

    def labels(self, rows: np.ndarray, label: np.ndarray, weight: np.ndarray) -> LabelWeights:
        """Weights of label 1 and label 0 per pattern, from the rows ``rows`` (a mask) with
        ``label`` and ``weight`` given for those rows; a soft label splits its row's weight
        (methods.md §3.3 Case B)."""
        k = self.design.shape[0]
        at = self.of_row[rows]
        return LabelWeights(
            np.bincount(at, weights=weight * label, minlength=k),
            np.bincount(at, weights=weight * (1.0 - label), minlength=k),
        )


@dataclass(frozen=True)
class LabelWeights:
    """A binary-label training set merged per pattern: the summed weight of each label."""

    positive: np.ndarray  # (k,)
    negative: np.ndarray  # (k,)

    @property
    def total(self) -> np.ndarray:
        return self.positive + self.negative


def expit(z: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow at either end."""
    return np.exp(-np.logaddexp(0.0, -z))


def _with_intercept(design: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(design.shape[0]), design])


def _log_likelihood(z: np.ndarray, y: LabelWeights, beta: np.ndarray) -> float:
    eta = z @ beta
    return float(y.positive @ eta - y.total @ np.logaddexp(0.0, eta))


def _newton_step(z: np.ndarray, y: LabelWeights, beta: np.ndarray) -> np.ndarray:
    """The Newton step of the weighted log-likelihood at ``beta``."""
    prob = expit(z @ beta)
    grad = z.T @ (y.positive - y.total * prob)
    hess = (z.T * (y.total * prob * (1.0 - prob))) @ z
    try:
        return np.asarray(np.linalg.solve(hess, grad))
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.lstsq(hess, grad, rcond=None)[0])


def _damped(z: np.ndarray, y: LabelWeights, beta: np.ndarray, step: np.ndarray) -> np.ndarray:
    """``beta + t * step`` with the largest t in 1, 1/2, 1/4, ... that does not lower the
    log-likelihood (a small step is taken whole: rounding would hide its gain)."""
    if np.max(np.abs(step)) <= LINE_SEARCH_ABOVE:
        return beta + step
    current = _log_likelihood(z, y, beta)
    t = 1.0
    while t > 1e-6 and _log_likelihood(z, y, beta + t * step) < current:
        t *= 0.5
    return beta + t * step


def _newton(
    z: np.ndarray, y: LabelWeights, start: np.ndarray, basis: np.ndarray
) -> tuple[np.ndarray, bool]:
    """Damped Newton's method from ``start`` in the coordinates ``basis``: (coordinates,
    converged); it stops early once the coefficients pass ``NEWTON_DIVERGED``."""
    gamma = start.copy()
    for _ in range(NEWTON_MAX_ITER):
        step = _newton_step(z, y, gamma)
        if not np.all(np.isfinite(step)):
            return gamma, False
        gamma = _damped(z, y, gamma, step)
        if np.max(np.abs(step)) <= NEWTON_TOL:
            return gamma, True
        if np.max(np.abs(basis @ gamma)) > NEWTON_DIVERGED:
            return gamma, False
    return gamma, False


def _row_space(z: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the row space of ``z``; the identity at full rank."""
    _, singular, vt = np.linalg.svd(z, full_matrices=False)
    tol = singular.max(initial=0.0) * max(z.shape) * np.finfo(float).eps
    rank = int(np.count_nonzero(singular > tol))
    if rank == z.shape[1]:
        return np.eye(z.shape[1])
    return np.asarray(vt[:rank].T)


def _mle(z: np.ndarray, y: LabelWeights, start: np.ndarray) -> tuple[np.ndarray, bool]:
    """The unregularised weighted MLE by Newton's method from ``start``: (coefficients,
    converged). Along the null space of the design (e.g. a level absent from the training rows)
    the likelihood is flat; a gradient method started at 0, as scikit-learn's lbfgs, stays in
    the row space, and so does this fit (``start`` projected onto it): the minimum-norm
    maximiser."""
    basis = _row_space(z)
    gamma, converged = _newton(z @ basis, y, basis.T @ start, basis)
    return basis @ gamma, converged


def _pairs(design: np.ndarray, y: LabelWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training set as (pattern, label) rows with summed weights, sorted by features then
    label: the rows :func:`fit_predict` merges its training rows into."""
    xs = np.repeat(design, 2, axis=0)
    ys = np.tile([0.0, 1.0], design.shape[0])
    ws = np.column_stack([y.negative, y.positive]).reshape(-1)
    keep = ws > 0.0
    return xs[keep], ys[keep], ws[keep]


def _lbfgs(design: np.ndarray, y: LabelWeights, c: float) -> np.ndarray:
    """scikit-learn's L2 fit (lbfgs from 0, its default tolerance) on the merged pattern rows:
    the computation of the row fit, so the same coefficients (a start elsewhere, or another
    solver, would stop elsewhere within lbfgs's tolerance)."""
    model = _logistic(c)
    _fit(model, *_pairs(design, y))
    return np.concatenate([model.intercept_, model.coef_.reshape(-1)])


def fit_logistic_patterns(
    design: np.ndarray,
    y: LabelWeights,
    regularization: str,
    c: float,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, str | None]:
    """The logistic fit of methods.md §3.3 on patterns: (coefficients, intercept first; note).

    The same rule as :func:`_fit_logistic` on rows: unregularised (Newton's method from
    ``start``, default 0), refitted with the tiny ridge when the fit diverges (no convergence,
    or a coefficient above ``SEPARATION_COEF``); or L2 with ``c``. The L2 fits (and the ridge
    fallback) are scikit-learn's, as in the row fit.
    Raises :class:`ModelDegenerate` when every training weight is on one label.
    """
    if not np.any(y.positive > 0.0) or not np.any(y.negative > 0.0):
        value = 1 if np.any(y.positive > 0.0) else 0
        raise ModelDegenerate(f"its training label is constant ({value})")
    if regularization == "l2":
        return _lbfgs(design, y, c), None
    used = y.total > 0.0
    z = _with_intercept(design[used])
    beta0 = np.zeros(z.shape[1]) if start is None else start
    beta, converged = _mle(z, LabelWeights(y.positive[used], y.negative[used]), beta0)
    largest = float(np.max(np.abs(beta)))
    if converged and largest <= SEPARATION_COEF:
        return beta, None
    why = (
        f"diverges (separation: a coefficient of magnitude {largest:.1f})"
        if largest > SEPARATION_COEF
        else "did not converge"
    )
    note = (
        f"the unregularised logistic fit {why}; refitted with a tiny ridge "
        f"(L2, C = {RIDGE_FALLBACK_C:g})"
    )
    return _lbfgs(design, y, RIDGE_FALLBACK_C), note


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
    weights: np.ndarray | None = (
        None  # ATT weights on the comparison rows (times their sample weights)
    )
    fitted: np.ndarray | None = None  # outcome model on the comparison rows (event applied)
    training_label: np.ndarray | None = None  # I on the comparison rows (event applied)
    max_weight_ratio: float | None = None  # largest weight / median weight
    notes: tuple[str, ...] = ()  # fits that departed from the requested model (ridge fallback)
    # logistic coefficients (intercept first) of the propensity and outcome models, where they
    # were fitted on patterns (:class:`PatternModels`): the starts of the permutation fits
    coefficients: tuple[np.ndarray | None, np.ndarray | None] = (None, None)

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


def gaussian_sigma(delta: np.ndarray, rule: float | str, weight: np.ndarray) -> float | None:
    """sigma of the Gaussian score (methods.md §3.5): a fixed number, or the sample SD (ddof 1)
    of Delta floored at ``SIGMA_FLOOR``; None when the SD rule is degenerate (fewer than two
    rows or all Delta equal). ``weight``: the rows' sample weights (1 each without): the SD of
    the weighted rows, ddof 1 on the weights' total (whole-number weights: the SD of the rows
    repeated; unit weights: the plain sample SD, to the bit)."""
    if rule != SIGMA_SD:
        return float(rule)
    if len(delta) < 2 or np.ptp(delta) == 0.0:
        return None
    total = float(weight.sum())
    mean = float(np.average(delta, weights=weight))
    var = float((weight * (delta - mean) ** 2).sum()) / max(total - 1.0, 1e-12)
    return max(math.sqrt(var), SIGMA_FLOOR)


def outcome_design(data: CbsData, settings: CbsSettings) -> np.ndarray:
    """The outcome model's features on all rows: the model attributes, plus C when it is a model
    feature (scans that are not value-conditional, methods.md §3.3 step 4)."""
    if settings.condition is None:
        return np.column_stack([data.features, data.conditioning(settings)])
    return data.features


class Models(Protocol):
    """The two expectation models of methods.md §3.3 on one audit's rows."""

    def propensity(self, a: np.ndarray) -> ModelFit:
        """Pr(A = 1 | X) fitted on all rows (``fitted``: per row)."""
        ...

    def outcome(
        self, train: np.ndarray, new: np.ndarray, label: np.ndarray, weight: np.ndarray
    ) -> ModelFit:
        """E[I | C, X] fitted on the rows ``train`` (mask) with ``label`` and ``weight``,
        predicted on the rows ``new`` (mask)."""
        ...


@dataclass(frozen=True)
class RowModels:
    """Both models fitted by scikit-learn on the rows (identical rows merged): the observed run."""

    data: CbsData
    settings: CbsSettings

    def propensity(self, a: np.ndarray) -> ModelFit:
        x = self.data.features
        return fit_predict(
            self.settings.propensity_model,
            x,
            a.astype(np.float64),
            self.data.row_weight(),
            np.empty((0, x.shape[1])),
            regularization=self.settings.regularization,
            c=self.settings.l2_c,
        )

    def outcome(
        self, train: np.ndarray, new: np.ndarray, label: np.ndarray, weight: np.ndarray
    ) -> ModelFit:
        x = outcome_design(self.data, self.settings)
        return fit_predict(
            self.settings.outcome_model,
            x[train],
            label,
            weight,
            x[new],
            soft=self.settings.gaussian,
            regularization=self.settings.regularization,
            c=self.settings.l2_c,
        )


@dataclass(frozen=True)
class PatternModels:
    """Logistic models fitted on the distinct covariate patterns (:func:`fit_logistic_patterns`:
    unregularised by Newton's method from ``starts``; L2 and the ridge fallback by
    scikit-learn on the merged rows): the permutation replicates.

    A gradient boosting model stays on the rows (:class:`RowModels`): its trees and its
    calibration folds count rows, so merging rows would change the fit.
    """

    rows: RowModels
    propensity_patterns: Patterns
    outcome_patterns: Patterns
    starts: tuple[np.ndarray | None, np.ndarray | None] = (None, None)

    @classmethod
    def build(cls, data: CbsData, settings: CbsSettings, a: np.ndarray) -> PatternModels:
        """The patterns of both designs and the starts of the permutation fits: for the outcome
        model its fit on the real ``a``; for the propensity model the intercept-only fit, the
        logit of the share of protected rows, which every permutation keeps (A permuted is
        independent of X: its fit is near that, nearer than the fit on the real ``a``)."""
        cold = cls(
            RowModels(data, settings),
            Patterns.of(data.features),
            Patterns.of(outcome_design(data, settings)),
        )
        share = float(np.mean(a))
        propensity = np.zeros(data.features.shape[1] + 1)
        if 0.0 < share < 1.0:
            propensity[0] = np.log(share / (1.0 - share))
        outcome = estimate(data, settings, a, cold).coefficients[1]
        return cls(
            cold.rows, cold.propensity_patterns, cold.outcome_patterns, (propensity, outcome)
        )

    def _fit(
        self, patterns: Patterns, y: LabelWeights, start: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, str | None]:
        """(probability per pattern, coefficients, note)."""
        s = self.rows.settings
        beta, note = fit_logistic_patterns(patterns.design, y, s.regularization, s.l2_c, start)
        return expit(_with_intercept(patterns.design) @ beta), beta, note

    def propensity(self, a: np.ndarray) -> ModelFit:
        if self.rows.settings.propensity_model != "logistic":
            return self.rows.propensity(a)
        patterns = self.propensity_patterns
        every = np.ones(len(a), bool)
        y = patterns.labels(every, a.astype(np.float64), self.rows.data.row_weight())
        prob, beta, note = self._fit(patterns, y, self.starts[0])
        return ModelFit(prob[patterns.of_row], np.empty(0), note, beta)

    def outcome(
        self, train: np.ndarray, new: np.ndarray, label: np.ndarray, weight: np.ndarray
    ) -> ModelFit:
        if self.rows.settings.outcome_model != "logistic":
            return self.rows.outcome(train, new, label, weight)
        patterns = self.outcome_patterns
        prob, beta, note = self._fit(
            patterns, patterns.labels(train, label, weight), self.starts[1]
        )
        return ModelFit(prob[patterns.of_row[train]], prob[patterns.of_row[new]], note, beta)


@dataclass(frozen=True)
class _Expectations:
    """I-hat on the scanned rows and what the models left for the report."""

    ihat: np.ndarray
    propensity: np.ndarray | None = None
    weights: np.ndarray | None = None
    fitted: np.ndarray | None = None
    ratio: float | None = None
    notes: tuple[str, ...] = ()
    coefficients: tuple[np.ndarray | None, np.ndarray | None] = (None, None)


def _degenerate_reason(which: str, settings: CbsSettings, exc: ModelDegenerate) -> str:
    if which == "propensity":
        kind, rows_text = settings.propensity_model, "all rows, label: protected"
    else:
        kind, rows_text = settings.outcome_model, "the non-protected rows after the filter"
    return (
        f"the {which} model ({model_name(kind, settings)}; trained on {rows_text}) "
        f"cannot be fitted: {exc}"
    )


def _model_expectations(
    models: Models,
    settings: CbsSettings,
    a: np.ndarray,
    comparison: np.ndarray,
    protected: np.ndarray,
    train_label: np.ndarray,
    sample_weight: np.ndarray,
) -> _Expectations | str:
    """Steps 1-5 of methods.md §3.3: propensity, ATT weights, outcome model, I-hat; or why the
    run is not auditable. ``sample_weight`` (of the comparison rows) multiplies the ATT
    weights."""
    which = "propensity"
    try:
        prop = models.propensity(a)
        pa = np.clip(prop.fitted, EPS, 1.0 - EPS)
        att = pa[comparison] / (1.0 - pa[comparison])
        weights = att * sample_weight
        which = "outcome"
        out = models.outcome(comparison, protected, train_label, weights)
    except ModelDegenerate as exc:
        return _degenerate_reason(which, settings, exc)
    fits = (("propensity", prop), ("outcome", out))
    return _Expectations(
        ihat=out.predicted,
        propensity=prop.fitted,
        weights=weights,
        fitted=out.fitted,
        ratio=float(att.max() / np.median(att)),
        notes=tuple(f"{name} model: {fit.note}" for name, fit in fits if fit.note),
        coefficients=(prop.coef, out.coef),
    )


def _untestable(
    settings: CbsSettings, event: np.ndarray, comparison: np.ndarray, protected: np.ndarray
) -> str | None:
    """Why the run is not auditable before any model is fitted (methods.md §3.10), or None."""
    if not protected.any():
        return "no protected rows after the value filter"
    if not comparison.any():
        return "no non-protected rows after the value filter"
    train_label = event[comparison]
    if np.all(train_label == train_label[0]):
        return (
            "the event is constant among the non-protected rows: the expectation model degenerates"
        )
    if not settings.gaussian and np.all(event[protected] == event[protected][0]):
        return "the event is constant among the protected rows"
    return None


def estimate(
    data: CbsData, settings: CbsSettings, a: np.ndarray, models: Models | None = None
) -> CbsEstimate:
    """Steps 1-5 of methods.md §3.3 plus Delta and sigma (§3.4-3.5) for protected indicator ``a``.

    ``models``: how the two models are fitted (default :class:`RowModels`, scikit-learn on the
    rows). A model that cannot be fitted on its training set (:class:`ModelDegenerate`, e.g.
    gradient boosting + Platt scaling with fewer than 3 rows of a class) makes the run not
    auditable.
    """
    cond = data.conditioning(settings)
    rows = np.ones(len(a), bool) if settings.condition is None else cond == settings.condition
    protected = rows & a
    comparison = rows & ~a
    event = np.asarray(data.event(settings), dtype=np.float64)
    reason = _untestable(settings, event, comparison, protected)
    if reason is not None:
        return _not_auditable(reason, rows, protected, comparison)
    train_label = event[comparison]
    if data.expectations is not None:
        found: _Expectations | str = _Expectations(
            np.asarray(data.expectations[protected], dtype=np.float64)
        )
    else:
        found = _model_expectations(
            models or RowModels(data, settings),
            settings,
            a,
            comparison,
            protected,
            train_label,
            data.row_weight(comparison),
        )
    if isinstance(found, str):
        return _not_auditable(found, rows, protected, comparison)
    weight = data.row_weight(protected)
    return _scored(settings, event, rows, protected, comparison, train_label, found, weight)


def _scored(
    settings: CbsSettings,
    event: np.ndarray,
    rows: np.ndarray,
    protected: np.ndarray,
    comparison: np.ndarray,
    train_label: np.ndarray,
    found: _Expectations,
    weight: np.ndarray,
) -> CbsEstimate:
    """Observed values (or Delta and sigma, methods.md §3.4-3.5) and expectations of the scan,
    with the event complement applied (event = 0 cells)."""
    ihat = np.clip(found.ihat, 0.0, 1.0)
    observed = event[protected]
    flip = settings.event == 0
    sigma = None
    if settings.gaussian:
        observed_out = logit(observed) - logit(ihat)
        if flip:
            observed_out = -observed_out  # logit(1 - P) - logit(1 - I-hat)
        sigma = gaussian_sigma(observed_out, settings.sigma, weight)
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
    fitted = found.fitted
    if fitted is not None and flip:
        fitted = 1.0 - fitted
    return CbsEstimate(
        True,
        None,
        rows,
        protected,
        comparison,
        observed=observed_out,
        expected=1.0 - ihat if flip else ihat,
        sigma=sigma,
        propensity=found.propensity,
        weights=found.weights,
        fitted=fitted,
        training_label=1.0 - train_label if flip else train_label,
        max_weight_ratio=found.ratio,
        notes=found.notes,
        coefficients=found.coefficients,
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
    return scan_estimate(data, settings, est, seed)


def scan_estimate(data: CbsData, settings: CbsSettings, est: CbsEstimate, seed: int) -> CbsOutcome:
    """The scan of an estimate (nothing to scan when it is not auditable)."""
    if not est.auditable:
        return CbsOutcome(est, None, None, None)
    problem = est.problem(data.codes, settings)
    if data.weight is None:
        cells = problem.cells()
    else:  # weighted sums per cell: the cells of the rows repeated (whole-number weights)
        w = data.weight[est.protected]
        cells = compress(
            problem.codes, problem.observed * w, problem.expected, problem.cardinality, w
        )
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

    Logistic models are fitted on the distinct covariate patterns (:class:`PatternModels`):
    unregularised by Newton's method started near the answer (the same maximum-likelihood fit
    as the observed run's scikit-learn fit on the rows, to that fit's tolerance, in ~1/40 of
    its time), L2 and the ridge fallback by scikit-learn's own computation on the merged rows.
    The patterns and starts depend on the real data only, so a replicate's result does not
    depend on which process runs it or on the replicates run before it.
    """

    data: CbsData
    protected: np.ndarray  # (n,) bool, the real A
    settings: CbsSettings
    seed: np.random.SeedSequence

    @cached_property
    def models(self) -> PatternModels:
        """Built once per job (in the parent at replicate 0, then sent to the workers with it)."""
        return PatternModels.build(self.data, self.settings, self.protected)

    def prepared(self) -> CbsPermutation:
        """This job with :attr:`models` and this process's BLAS controller built, so that
        replicate 0, which :func:`fairscan.engine.randomization.run_replicates` times to decide
        on worker processes, costs what every replicate costs."""
        _ = self.models
        _blas_controller(_uses_scikit_learn(self.settings))
        return self

    def __call__(self, index: int) -> float:
        rng = replicate_rng(self.seed, index)
        a = rng.permutation(self.protected)
        with _one_blas_thread(self.settings):
            est = estimate(self.data, self.settings, a, self.models)
        seed = replicate_search_seed(self.seed, index)
        return scan_estimate(self.data, self.settings, est, seed).statistic


@functools.cache
def _blas_controller(scikit_learn: bool) -> Any:
    """This process's BLAS libraries (finding them takes milliseconds, limiting them through
    the controller microseconds); ``scikit_learn``: loaded first, so that scipy's BLAS is
    among them."""
    if scikit_learn:
        import sklearn.linear_model  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _uses_scikit_learn(settings: CbsSettings) -> bool:
    """Whether a permutation replicate fits with scikit-learn (L2, gradient boosting)."""
    models = (settings.propensity_model, settings.outcome_model)
    return settings.regularization == "l2" or "gradient_boosting" in models


def _one_blas_thread(settings: CbsSettings) -> Any:
    """One BLAS thread for a replicate's fits, as in :func:`run`: the matrices are tiny, so more
    threads only add synchronisation, and every process computes the same bits."""
    return _blas_controller(_uses_scikit_learn(settings)).limit(limits=1, user_api="blas")


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


# --------------------------------------------------------------------------------------------
# A given subgroup (issue 26): its conditional score under the permutation null, no search
# --------------------------------------------------------------------------------------------


def fixed_llr(est: CbsEstimate, inside: np.ndarray, settings: CbsSettings) -> float:
    """The unpenalised score F(S) of the subgroup whose rows (a mask over all rows) are
    ``inside``: the protected scanned rows in it against their expectations (0 when the run is
    not auditable or S holds none of them). The penalty of a fixed S is a constant."""
    if not est.auditable or est.observed is None or est.expected is None:
        return 0.0
    local = inside[est.protected]
    if not local.any():
        return 0.0
    observed = est.observed[local]
    expected = np.full(observed.shape[0], 0.5) if settings.gaussian else est.expected[local]
    problem = ScanProblem.build(np.zeros((observed.shape[0], 1), np.int32), observed, expected)
    selection = np.ones((1, 1), dtype=bool)
    return score_cells(problem.cells(), selection, settings, est.sigma).llr


@dataclass(frozen=True)
class CbsFixedPermutation:
    """Permutation replicate of one given subgroup: permute A over all rows, refit both models
    (the same rules as :class:`CbsPermutation`) and score the same subgroup, whose protected
    rows are now the permuted ones; a replicate whose models cannot be fitted scores 0."""

    data: CbsData
    protected: np.ndarray  # (n,) bool, the real A
    settings: CbsSettings
    inside: np.ndarray  # (n,) bool: the subgroup's rows
    seed: np.random.SeedSequence

    @cached_property
    def models(self) -> PatternModels:
        return PatternModels.build(self.data, self.settings, self.protected)

    def prepared(self) -> CbsFixedPermutation:
        _ = self.models
        _blas_controller(_uses_scikit_learn(self.settings))
        return self

    def __call__(self, index: int) -> float:
        a = replicate_rng(self.seed, index).permutation(self.protected)
        with _one_blas_thread(self.settings):
            est = estimate(self.data, self.settings, a, self.models)
        return fixed_llr(est, self.inside, self.settings)


def fixed_alternative(
    est: CbsEstimate,
    inside: np.ndarray,
    settings: CbsSettings,
    effect: float,
    seed: np.random.SeedSequence,
    replicates: int,
) -> np.ndarray:
    """F(S) under an effect of the baseline's size with the expectations held at their fitted
    values (the power's approximation: the models are not refitted): Bernoulli, the events of
    S's protected rows drawn with odds I-hat * ``effect`` (q); Gaussian, sum Delta over S drawn
    normal around |S| * ``effect`` (mu) with the spread of Delta in S."""
    out = np.zeros(replicates)
    if not est.auditable or est.observed is None or est.expected is None:
        return out
    local = inside[est.protected]
    n = int(local.sum())
    if not n:
        return out
    sigma = float(est.sigma if est.sigma is not None else 1.0)
    expected = est.expected[local]
    spread = float(np.std(est.observed[local], ddof=1)) if n > 1 else sigma
    for r in range(replicates):
        rng = replicate_rng(seed, r)
        if settings.gaussian:
            s = n * effect + np.sqrt(n) * spread * rng.standard_normal()
            out[r] = s * s / (2.0 * sigma * sigma * n) if s * settings.direction > 0 else 0.0
            continue
        p = effect * expected / (1.0 - expected + effect * expected)
        observed = rng.binomial(1, np.clip(p, 0.0, 1.0)).astype(np.float64)
        problem = ScanProblem.build(np.zeros((n, 1), np.int32), observed, expected)
        out[r] = score_cells(problem.cells(), np.ones((1, 1), bool), settings, None).llr
    return out
