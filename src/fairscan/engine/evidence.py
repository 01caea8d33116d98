"""Anytime-valid evidence over a series of audits (methods.md §9; docs/methods/monitoring.md).

Every monitored process keeps one state: the cumulative log-likelihood of its data at each
effect on a fixed grid of odds ratios, up to a constant that cancels in likelihood ratios.

- Grid and weights: ``GRID`` holds 41 odds ratios log-spaced from 1/4 to 4 (1.0 in the middle,
  steps of about 7%). ``WEIGHTS`` are uniform over the 40 points other than 1.0 and zero at 1.0
  (a weight on the null adds a constant and only dilutes the evidence). Fixed before any data,
  so every mixture below is a test martingale under the null (Ville: P(sup E >= 1/a) <= a).
- Calibration null (bias_scan, a probability per row): the likelihood of the rows' outcomes if
  their odds were multiplied by g; g = 1 is the null (methods.md §9.2).
- Error-rate null (fpr_scan/tpr_scan, rate unknown): Fisher's non-central hypergeometric
  likelihood of the flagged count inside the subgroup given the run's margins; psi = 1 is the
  null and the unknown rate cancels.
- Monitored subgroup: E_t = sum_g w_g L_{1..t}(g) / L_{1..t}(1) (a mixture of products).
- Scan process ("scan, then bet"; the subgroup changes every run): E_t = prod_s e_s with the
  per-run factor e_s = sum_g w_g L_s(g) / L_s(1) (a product of mixtures).
- Onset detector (e-CUSUM, Shin, Ramdas, Rinaldo): C_t = e_t * max(C_{t-1}, 1) with the per-run
  factor e_t; C_t is the largest product of factors over the runs since any start j.
- Thresholds: the family-wise error alpha is split in half between evidence alarms and onset
  alarms, so that P(any false alarm of either kind, over every run and every process) <= alpha.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import gammaln

GRID_SIZE = 41
GRID: np.ndarray = np.exp(np.linspace(math.log(0.25), math.log(4.0), GRID_SIZE))
NULL_INDEX = GRID_SIZE // 2
GRID[NULL_INDEX] = 1.0  # exactly, not exp(tiny rounding)
WEIGHTS: np.ndarray = np.full(GRID_SIZE, 1.0 / (GRID_SIZE - 1))
WEIGHTS[NULL_INDEX] = 0.0
_LOG_GRID = np.log(GRID)
with np.errstate(divide="ignore"):
    _LOG_WEIGHTS = np.log(WEIGHTS)

_CHUNK_ROWS = 1 << 13  # rows per block of the grid x rows matrix (2.6 MiB of float64)


def bernoulli_loglik(y: np.ndarray, p: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """The log-likelihood at every grid odds ratio g of outcomes y given probabilities p.

    Per row: y log g - log(1 - p + g p) (the odds p/(1-p) multiplied by g), summed. With
    ``counts`` the inputs are cells: y the positives in a cell, counts the rows in it, p the
    cell's probability. Constant terms (the same at every g) are left out.
    """
    y, p, n = _bernoulli_inputs(y, p, counts)
    return float(np.sum(y)) * _LOG_GRID - _sum_log_odds_terms(p, n)


def bernoulli_cell_loglik(
    y: np.ndarray, p: np.ndarray, cell: np.ndarray, n_cells: int
) -> np.ndarray:
    """``bernoulli_loglik`` of the rows of every cell at once: an (n_cells, grid) array.

    One pass over the rows; a subgroup's log-likelihood is then the sum of its cells' rows,
    so each monitored process costs O(cells), not O(rows).
    """
    y, p, _ = _bernoulli_inputs(y, p, None)
    cell = np.asarray(cell, dtype=np.int64).ravel()
    if cell.shape != p.shape:
        raise ValueError(f"cell has {cell.size} entries but p has {p.size}")
    if cell.size and (cell.min() < 0 or cell.max() >= n_cells):
        raise ValueError(f"cell ids must lie in [0, {n_cells})")
    out = np.multiply.outer(np.bincount(cell, weights=y, minlength=n_cells), _LOG_GRID)
    # a stable sort of small integers is a radix sort in numpy: O(rows)
    order = np.argsort(cell.astype(np.uint16) if n_cells <= 1 << 16 else cell, kind="stable")
    cell, p = cell[order], p[order]
    ratio = (GRID - 1.0)[:, None]
    for start in range(0, p.size, _CHUNK_ROWS):
        ids = cell[start : start + _CHUNK_ROWS]
        terms = np.log(1.0 + ratio * p[None, start : start + _CHUNK_ROWS])
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        out[ids[starts]] -= np.add.reduceat(terms, starts, axis=1).T
    return out


def _bernoulli_inputs(
    y: np.ndarray, p: np.ndarray, counts: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    y = np.asarray(y, dtype=np.float64).ravel()
    p = np.asarray(p, dtype=np.float64).ravel()
    if y.shape != p.shape:
        raise ValueError(f"y has {y.size} entries but p has {p.size}")
    if p.size and not (np.all(np.isfinite(p)) and np.min(p) >= 0.0 and np.max(p) <= 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    if counts is None:
        if p.size and not np.all((y == 0.0) | (y == 1.0)):
            raise ValueError("row outcomes must be 0 or 1")
        return y, p, None
    n = np.asarray(counts, dtype=np.float64).ravel()
    if n.shape != p.shape:
        raise ValueError(f"counts has {n.size} entries but p has {p.size}")
    if np.any((y < 0) | (y > n)):
        raise ValueError("a cell's positive count must lie between 0 and its row count")
    return y, p, n


def _sum_log_odds_terms(p: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """sum_i counts_i log(1 - p_i + g p_i) at every grid g, in blocks of rows (grid x rows:
    summing along the contiguous axis is the fast layout)."""
    total = np.zeros(GRID_SIZE)
    ratio = (GRID - 1.0)[:, None]
    for start in range(0, p.size, _CHUNK_ROWS):
        terms = np.log(1.0 + ratio * p[None, start : start + _CHUNK_ROWS])
        total += (
            terms.sum(axis=1) if counts is None else terms @ counts[start : start + _CHUNK_ROWS]
        )
    return total


# Up to this many attribute combinations, a row's profile is its combination's number (no sort
# of the rows); beyond, the combinations present are numbered.
_DIRECT_PROFILES = 1 << 16


@dataclass(frozen=True)
class Profiles:
    """A run's rows grouped by attribute profile (their combination of attribute codes).

    A subgroup is a union of profiles, so a monitored process's evidence is a sum over
    profiles: O(profiles) per process after one pass over the rows.
    """

    of_row: np.ndarray  # (rows,) int64: each row's profile
    codes: np.ndarray  # (profiles, attributes): each profile's codes

    @property
    def count(self) -> int:
        return int(self.codes.shape[0])

    @classmethod
    def of(cls, codes: np.ndarray) -> Profiles:
        """The profiles of the rows' attribute ``codes`` (rows x attributes, codes >= 0)."""
        codes = np.asarray(codes)
        rows, width = codes.shape
        if width == 0 or rows == 0:
            return cls(np.zeros(rows, dtype=np.int64), np.zeros((1, width), dtype=np.int64))
        sizes = tuple(int(v) + 1 for v in codes.max(axis=0))
        combinations = math.prod(sizes)
        columns = tuple(codes[:, j].astype(np.int64) for j in range(width))
        if combinations <= _DIRECT_PROFILES:
            of_row = np.ravel_multi_index(columns, sizes)
            present = np.arange(combinations)
        elif combinations < 2**62:
            present, of_row = np.unique(np.ravel_multi_index(columns, sizes), return_inverse=True)
        else:
            unique, of_row = np.unique(codes, axis=0, return_inverse=True)
            return cls(np.asarray(of_row, dtype=np.int64).ravel(), unique.astype(np.int64))
        table = np.stack(np.unravel_index(present, sizes), axis=1).astype(np.int64)
        return cls(np.asarray(of_row, dtype=np.int64).ravel(), table)


def hypergeometric_loglik(x: int, n: int, k: int, m: int) -> np.ndarray:
    """Fisher's non-central hypergeometric log-pmf of x at every grid odds ratio psi.

    Of n units (negatives for fpr_scan, positives for tpr_scan) k are flagged and m lie in the
    subgroup; x is the flagged count inside it. Under the null (same flag rate inside and out,
    psi = 1) x is hypergeometric whatever the rate. Exact: log C(m, x) + log C(n - m, k - x)
    + x log psi minus the log of the same sum over the whole support.
    """
    x, n, k, m = int(x), int(n), int(k), int(m)
    if n < 0 or not (0 <= k <= n and 0 <= m <= n):
        raise ValueError(f"margins out of range: n={n}, k={k}, m={m}")
    low, high = max(0, m + k - n), min(m, k)
    if not low <= x <= high:
        raise ValueError(f"x={x} lies outside its support [{low}, {high}]")
    at = np.array([x, k - x], dtype=np.float64)
    log_x = float(_log_choose(m, at[:1])[0] + _log_choose(n - m, at[1:])[0])
    return log_x + x * _LOG_GRID - _log_normalisers(n, k, m, low, high)


# Each psi's normalising sum is taken over this many standard deviations (of the central
# hypergeometric) around its mode; the terms outside are bounded and checked (below).
_WINDOW_SDS = 12.0
# the bound on the terms left out, relative to the sum: 10^4 times below a double's rounding (2.2e-16)
_TAIL_RELATIVE = 1e-20


def _log_normalisers(n: int, k: int, m: int, low: int, high: int) -> np.ndarray:
    """log sum_x C(m, x) C(n - m, k - x) psi^x at every grid psi, over the support [low, high].

    Over the whole support this costs (support size) x (grid) terms (0.6 s at n = 10^6); each
    psi's sum is taken over a window around its mode instead. The terms fall on each side of
    the mode at least geometrically (the ratio of successive terms decreases in x), so the
    terms outside the window sum to at most edge term / (1 - ratio at the edge): where that
    bound is not negligible, that psi's sum runs over the whole support.
    """
    variance = m * (k / n) * (1 - k / n) * (n - m) / max(n - 1, 1) if n else 0.0
    half = int(_WINDOW_SDS * math.sqrt(variance)) + 64
    support = np.arange(low, high + 1, dtype=np.float64)
    if 2 * half + 1 >= support.size:
        return _logsumexp(_log_terms(n, k, m, support[None, :], _LOG_GRID[:, None]), axis=1)
    xs = _modes(n, k, m, low, high)[:, None] + np.arange(-half, half + 1)[None, :]
    xs = np.clip(xs, low, high)
    terms = _log_terms(n, k, m, xs, _LOG_GRID[:, None])
    # a clipped x repeats the support's end: count it once
    terms[:, 1:][xs[:, 1:] == xs[:, :-1]] = -np.inf
    out = _logsumexp(terms, axis=1)
    for g in np.flatnonzero(~_tails_negligible(n, k, m, low, high, xs, terms, out)):
        out[g] = _logsumexp(_log_terms(n, k, m, support, _LOG_GRID[g]))
    return out


def _log_terms(n: int, k: int, m: int, x: np.ndarray, log_psi: np.ndarray) -> np.ndarray:
    return _log_choose(m, x) + _log_choose(n - m, k - x) + x * log_psi


def _tails_negligible(
    n: int, k: int, m: int, low: int, high: int, xs: np.ndarray, terms: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Per psi: whether the terms beyond the window's two ends sum to less than
    _TAIL_RELATIVE of the window's sum (geometric bounds from the ratios at the ends)."""
    ok = np.ones(GRID_SIZE, dtype=bool)
    left, right = xs[:, 0], xs[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        # beyond the right end: ratio term(x+1)/term(x) at x = right
        r_right = GRID * (m - right) * (k - right) / ((right + 1) * (n - m - k + right + 1))
        # beyond the left end, going down: ratio term(x-1)/term(x) at x = left
        r_left = left * (n - m - k + left) / (GRID * (m - left + 1) * (k - left + 1))
    bound = math.log(_TAIL_RELATIVE)
    for end, at, ratio in ((right, high, r_right), (left, low, r_left)):
        open_end = end != at
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = (terms[:, 0] if end is left else terms[:, -1]) - np.log1p(-ratio)
        ok &= ~open_end | ((ratio < 1.0) & (tail - out < bound))
    return ok


def _modes(n: int, k: int, m: int, low: int, high: int) -> np.ndarray:
    """The mode of the non-central hypergeometric at every grid psi: the x where the ratio of
    successive terms psi (m - x)(k - x) / ((x + 1)(n - m - k + x + 1)) falls below 1
    (bisection on all grid points at once; the ratio decreases in x)."""
    lo = np.full(GRID_SIZE, float(low))
    hi = np.full(GRID_SIZE, float(high))
    while np.any(hi - lo > 1.0):
        mid = np.floor((lo + hi) / 2.0)
        ratio = GRID * (m - mid) * (k - mid) / ((mid + 1.0) * (n - m - k + mid + 1.0))
        rising = ratio >= 1.0
        lo = np.where(rising, mid, lo)
        hi = np.where(rising, hi, mid)
    return hi


def _logsumexp(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """log sum exp along ``axis`` (numpy: scipy's version costs a millisecond a call)."""
    top = np.max(values, axis=axis, keepdims=True)
    total = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return total.squeeze() if axis is None else np.squeeze(total, axis=axis)


def _log_choose(n: float, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


@dataclass(frozen=True, eq=False)  # eq on arrays is ambiguous: compare to_json() instead
class ProcessState:
    """One monitored process. All evidence values are kept as natural logarithms.

    loglik: cumulative log-likelihood at each grid effect; log_e: the process's evidence;
    log_running_max: the largest log_e so far (0 at the start, E_0 = 1); log_cusum: the onset
    detector's statistic (C_0 = 1); runs: runs the process has seen; first_alarm_run: the run
    index of its first alarm (set by the caller through ``record_alarms``).
    """

    loglik: np.ndarray = field(default_factory=lambda: np.zeros(GRID_SIZE))
    log_e: float = 0.0
    log_running_max: float = 0.0
    log_cusum: float = 0.0
    runs: int = 0
    first_alarm_run: int | None = None

    def to_json(self) -> str:
        """Plain JSON (floats written with their shortest exact representation)."""
        return json.dumps(
            {
                "grid_size": GRID_SIZE,
                "loglik": [float(v) for v in self.loglik],
                "log_e": float(self.log_e),
                "log_running_max": float(self.log_running_max),
                "log_cusum": float(self.log_cusum),
                "runs": int(self.runs),
                "first_alarm_run": self.first_alarm_run,
            },
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, text: str) -> ProcessState:
        try:
            data = json.loads(text)
            if data.get("grid_size") != GRID_SIZE or len(data["loglik"]) != GRID_SIZE:
                raise ValueError("the stored evidence uses a different effect grid")
            first = data["first_alarm_run"]
            return cls(
                loglik=np.asarray(data["loglik"], dtype=np.float64),
                log_e=float(data["log_e"]),
                log_running_max=float(data["log_running_max"]),
                log_cusum=float(data["log_cusum"]),
                runs=int(data["runs"]),
                first_alarm_run=None if first is None else int(first),
            )
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as error:
            raise ValueError(f"not a stored monitor state ({error!r})") from error


def _log_mixture(loglik: np.ndarray, at: int = NULL_INDEX) -> float:
    """log sum_g w_g exp(loglik[g] - loglik[at]): the mixture likelihood ratio against ``at``."""
    return float(_logsumexp(_LOG_WEIGHTS + loglik - loglik[at]))


def _checked(run_loglik: np.ndarray) -> np.ndarray:
    run_loglik = np.asarray(run_loglik, dtype=np.float64)
    if run_loglik.shape != (GRID_SIZE,) or not np.all(np.isfinite(run_loglik)):
        raise ValueError(f"a run's log-likelihood must be {GRID_SIZE} finite values")
    return run_loglik


def _advance(
    state: ProcessState, loglik: np.ndarray, log_e: float, log_factor: float
) -> ProcessState:
    return replace(
        state,
        loglik=loglik,
        log_e=log_e,
        log_running_max=max(state.log_running_max, log_e),
        log_cusum=log_factor + max(state.log_cusum, 0.0),
        runs=state.runs + 1,
    )


def update_subgroup(state: ProcessState, run_loglik: np.ndarray) -> ProcessState:
    """Add one run of a fixed subgroup: evidence = the mixture of the cumulative likelihoods."""
    run_loglik = _checked(run_loglik)
    loglik = state.loglik + run_loglik
    return _advance(state, loglik, _log_mixture(loglik), _log_mixture(run_loglik))


def update_scan(state: ProcessState, run_loglik: np.ndarray) -> ProcessState:
    """Add one run of the scan process: evidence times this run's mixture factor.

    ``run_loglik`` must come from a subgroup chosen on earlier runs only (scan, then bet).
    """
    run_loglik = _checked(run_loglik)
    log_factor = _log_mixture(run_loglik)
    return _advance(state, state.loglik + run_loglik, state.log_e + log_factor, log_factor)


def e_value(state: ProcessState) -> float:
    """The process's current evidence E_t (1 = none; may overflow to inf, stored as a log)."""
    return math.exp(min(state.log_e, 709.0))


def p_value_anytime(state: ProcessState) -> float:
    """min(1, 1 / max_s E_s): valid at any run, however the series is stopped (Ville)."""
    return min(1.0, math.exp(-state.log_running_max))


def p_value_adjusted(state: ProcessState, k: int) -> float:
    """min(1, 2k / max_s E_s): at most alpha exactly when the running maximum has crossed the
    evidence threshold of ``thresholds(alpha, k, horizon)`` (e-Bonferroni over k processes)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return min(1.0, 2.0 * k * math.exp(-state.log_running_max))


def confidence_sequence(state: ProcessState, alpha: float) -> tuple[float, float]:
    """Odds ratios not rejected at level alpha, valid simultaneously over all runs.

    The effect g is kept while sum_h w_h L(h) / L(g) < 1/alpha (the mixture martingale under
    "effect = g"). The log-likelihood is concave in log g, so the kept set is an interval; it
    is widened to the next rejected grid point on each side (0 or inf past the grid's ends), so
    it covers effects between grid points too. (0, inf) before any data.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    log_numerator = _logsumexp(_LOG_WEIGHTS + state.loglik)
    kept = np.flatnonzero(log_numerator - state.loglik < -math.log(alpha))
    first, last = int(kept[0]), int(kept[-1])
    low = float(GRID[first - 1]) if first > 0 else 0.0
    high = float(GRID[last + 1]) if last < GRID_SIZE - 1 else math.inf
    return low, high


def thresholds(alpha: float, k: int, horizon: int) -> tuple[float, float]:
    """(evidence threshold, onset threshold) for k processes over ``horizon`` runs.

    Half of alpha goes to each kind of alarm. Evidence (e-Bonferroni): E >= 2k / alpha, so
    P(any evidence alarm) <= alpha / 2 at any time. Onset: C_t >= 2 k horizon / alpha; C_t
    crosses only if a product started at some run j does, each with chance at most
    alpha / (2 k horizon) (Ville), so P(any onset alarm within horizon runs) <= alpha / 2, and
    each process's mean time to a false onset alarm is at least the threshold in runs.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if k < 1 or horizon < 1:
        raise ValueError(f"k and horizon must be at least 1, got k={k}, horizon={horizon}")
    return 2.0 * k / alpha, 2.0 * k * horizon / alpha


def label(
    state: ProcessState,
    *,
    threshold: float,
    onset_threshold: float,
    tolerance: float | None,
    alpha: float,
) -> str:
    """new, persists, resolved or inconclusive (docs/methods/monitoring.md).

    new: no run seen yet. persists: an onset alarm now, or the evidence has crossed
    ``threshold`` at some run and the effect is not resolved. resolved: the confidence
    sequence at ``alpha`` lies inside [1/tolerance, tolerance]. Otherwise inconclusive.

    The scan process (``tolerance`` None: its subgroup changes between runs, so it has no
    effect to resolve) persists only while its evidence reaches a new high above the
    threshold or the onset detector fires: once the bias it found is gone its evidence falls,
    and the subgroup it found carries on as a subgroup process of its own.
    """
    if state.runs == 0:
        return "new"
    if state.log_cusum >= math.log(onset_threshold):
        return "persists"
    if tolerance is None:
        return "persists" if _new_high_above(state, threshold) else "inconclusive"
    low, high = confidence_sequence(state, alpha)
    if 1.0 / tolerance <= low and high <= tolerance:
        return "resolved"
    if state.log_running_max >= math.log(threshold):
        return "persists"
    return "inconclusive"


def _new_high_above(state: ProcessState, threshold: float) -> bool:
    """Whether this run's evidence is the highest so far and above ``threshold``."""
    return state.log_e >= state.log_running_max and state.log_e >= math.log(threshold)


def record_alarms(
    state: ProcessState,
    run_index: int,
    *,
    threshold: float,
    onset_threshold: float,
    tolerance: float | None,
    alpha: float,
) -> tuple[ProcessState, list[str]]:
    """The alarms the state raises on this run ("evidence", "onset"), and the state to keep:
    ``first_alarm_run`` set to ``run_index`` if this is its first alarm, and the onset
    detector restarted (C = 1) after an onset alarm, so that it fires again only on new
    evidence (every alarm is still a product of factors since some run crossing the onset
    threshold: the bound of :func:`thresholds` holds).

    evidence: a subgroup process whose running maximum has crossed ``threshold`` and whose
    label is persists; the scan process (``tolerance`` None) in a run where its evidence
    reaches a new high above ``threshold``. onset: the detector crosses ``onset_threshold``.
    """
    kinds: list[str] = []
    if tolerance is None:
        crossed = _new_high_above(state, threshold)
    else:
        current = label(
            state,
            threshold=threshold,
            onset_threshold=onset_threshold,
            tolerance=tolerance,
            alpha=alpha,
        )
        crossed = current == "persists" and state.log_running_max >= math.log(threshold)
    if crossed:
        kinds.append("evidence")
    if state.log_cusum >= math.log(onset_threshold):
        kinds.append("onset")
        state = replace(state, log_cusum=0.0)
    if kinds and state.first_alarm_run is None:
        state = replace(state, first_alarm_run=run_index)
    return state, kinds
