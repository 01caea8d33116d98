"""Semi-synthetic evaluation of CBS (methods.md §3.8, the paper's Algorithm 1).

Evaluation tooling, not part of the package: `scripts/cbs_evaluate.py`, `benchmarks/bench_cbs.py`
and tests/engine/test_cbs.py import it from here.

From a real table of categorical covariates: pick an attribute value as the protected class A
(and drop that attribute), simulate Y, P and P_bin from random one-hot weights, inject a bias
into a random subgroup S_bias of the protected rows, run the four non-value-conditional scans
and measure the Jaccard similarity between S_bias and the detected subgroup (protected rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairscan.engine import cbs

CLIP = 1e-6

# the four simulation scans (§3.8): name -> (family, on, direction)
SIM_SCANS = {
    "sep-rec": ("separation", "recommendations", 1),
    "sep-pred": ("separation", "predictions", 1),
    "suf-rec": ("sufficiency", "recommendations", -1),
    "suf-pred": ("sufficiency", "predictions", -1),
}


@dataclass(frozen=True)
class Injection:
    mu_sep: float = 0.0
    mu_suf: float = 0.0
    delta: float = 0.0
    n_bias: int = 2
    p_bias: float = 0.5
    sigma_true: float = 0.6
    sigma_predict: float = 0.2
    weight_sd: float = 0.2


@dataclass(frozen=True)
class SyntheticDataset:
    data: cbs.CbsData
    protected: np.ndarray  # (n,) bool
    bias: np.ndarray  # (n,) bool: S_bias (protected rows only)
    protected_attribute: int  # index into the input columns
    bias_attributes: tuple[int, ...]  # indices into the remaining columns


def _one_hot(codes: np.ndarray) -> np.ndarray:
    blocks = [np.eye(int(codes[:, j].max()) + 1)[codes[:, j]] for j in range(codes.shape[1])]
    return np.hstack(blocks) if blocks else np.zeros((codes.shape[0], 0))


def generate(codes: np.ndarray, injection: Injection, rng: np.random.Generator) -> SyntheticDataset:
    """One D_inj from integer-coded covariates ``codes`` (n, m), m >= 2."""
    codes = np.asarray(codes)
    n, m = codes.shape
    while True:  # A must leave both classes non-empty
        attr = int(rng.integers(m))
        values = np.unique(codes[:, attr])
        value = values[rng.integers(len(values))]
        protected = codes[:, attr] == value
        if 0 < protected.sum() < n:
            break
    rest = np.delete(codes, attr, axis=1)
    rest = np.column_stack([np.unique(rest[:, j], return_inverse=True)[1] for j in range(m - 1)])
    x = _one_hot(rest)
    w = rng.normal(0.0, injection.weight_sd, x.shape[1])
    l_true = x @ w + rng.normal(0.0, injection.sigma_true, n)
    l_pred = l_true + rng.normal(0.0, injection.sigma_predict, n)
    p_true = 1.0 / (1.0 + np.exp(-l_true))
    y = (rng.random(n) < p_true).astype(np.float64)
    p = 1.0 / (1.0 + np.exp(-l_pred))

    # S_bias: n_bias attributes, each value kept with probability p_bias (non-empty)
    k = min(injection.n_bias, m - 1)
    while True:
        attrs = tuple(int(a) for a in rng.choice(m - 1, size=k, replace=False))
        inside = np.ones(n, bool)
        for a in attrs:
            card = int(rest[:, a].max()) + 1
            chosen = np.zeros(card, bool)
            while not chosen.any():
                chosen = rng.random(card) < injection.p_bias
            inside &= chosen[rest[:, a]]
        bias = inside & protected
        if bias.any():
            break
    if injection.delta:
        p_true = np.where(bias, np.clip(p_true + injection.delta, 0.0, 1.0), p_true)
        p = np.where(bias, p + injection.delta, p)
    if injection.mu_sep:
        p = np.where(bias, p + injection.mu_sep, p)
    if injection.mu_suf:
        p_true = np.where(bias, np.clip(p_true - injection.mu_suf, 0.0, 1.0), p_true)
    if injection.mu_suf or injection.delta:
        redraw = (rng.random(n) < p_true).astype(np.float64)
        y = np.where(bias, redraw, y)
    p = np.clip(p, CLIP, 1.0 - CLIP)
    data = cbs.CbsData(
        codes=np.ascontiguousarray(rest, dtype=np.int32),
        features=x[:, 1:] if x.shape[1] else x,
        outcome=y,
        prediction=p,
        recommendation=(p >= 0.5).astype(np.float64),
    )
    return SyntheticDataset(data, protected, bias, attr, attrs)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = np.count_nonzero(a | b)
    return 1.0 if union == 0 else np.count_nonzero(a & b) / union


def evaluate_once(
    dataset: SyntheticDataset,
    scans: list[str],
    restarts: int,
    penalty: float,
    seed: int,
    *,
    sigma: float | str = 1.0,
    regularization: str = "none",
    l2_c: float = 1.0,
) -> dict[str, float]:
    """Jaccard accuracy of each simulation scan on one dataset (protected rows).

    ``sigma`` (Gaussian scans) and ``regularization`` / ``l2_c`` (logistic models) as in
    :class:`fairscan.engine.cbs.CbsSettings`; the defaults are the scan's.
    """
    out = {}
    for name in scans:
        family, on, direction = SIM_SCANS[name]
        settings = cbs.CbsSettings(
            family=family,
            on=on,
            condition=None,
            event=1,
            direction=direction,
            penalty=penalty,
            restarts=restarts,
            sigma=sigma,
            regularization=regularization,
            l2_c=l2_c,
        )
        res = cbs.run(dataset.data, settings, dataset.protected, seed)
        if res.best is None or res.best.llr <= 0.0:
            detected = np.zeros(len(dataset.protected), bool)
        else:
            assert res.problem is not None
            detected = res.problem.rows_in(dataset.data.codes, res.best.selection)
            detected &= dataset.protected
        out[name] = jaccard(detected, dataset.bias)
    return out
