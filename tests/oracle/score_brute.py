"""Brute force over every rectangular subgroup for any set score (pure numpy, no fairscan).

``brute_force(codes, cardinality, set_score, penalty)`` enumerates the
``prod_j (2^|V_j| - 1)`` subgroups ``S = (S_1, ..., S_m)`` and returns the best penalised
objective ``J(S) = set_score(rows of S) - penalty * c(S)``, with ``c(S)`` the number of selected
values in constrained attributes (methods.md §1.4). The set scores are closed forms:

* Poisson, direction d: ``max_{u} C u - E (e^u - 1)`` over u = log q on d's half of
  ``[log 1e-6, log 1e6]`` (:func:`poisson_score`);
* Gaussian with variances v_i: ``s^2 / (2 n)`` with ``s = sum Delta_i / v_i``,
  ``n = sum 1 / v_i`` when ``s`` has the direction's sign, else 0 (:func:`gaussian_score`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

U_LO, U_HI = math.log(1e-6), math.log(1e6)


def subgroups(cardinality: list[int]):
    """Every rectangular subgroup: a tuple of non-empty value sets, one per attribute."""
    per_attribute = [
        [frozenset(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)]
        for k in cardinality
    ]
    return itertools.product(*per_attribute)


def mask(codes: np.ndarray, subgroup) -> np.ndarray:
    inside = np.ones(codes.shape[0], bool)
    for j, values in enumerate(subgroup):
        inside &= np.isin(codes[:, j], list(values))
    return inside


def units(subgroup, cardinality: list[int]) -> int:
    return sum(len(v) for v, k in zip(subgroup, cardinality, strict=True) if len(v) < k)


def brute_force(
    codes: np.ndarray,
    cardinality: list[int],
    set_score: Callable[[np.ndarray], float],
    penalty: float,
) -> tuple[float, tuple]:
    """(best J, its subgroup) over every non-empty rectangular subgroup."""
    best, arg = -np.inf, ()
    for subgroup in subgroups(cardinality):
        inside = mask(codes, subgroup)
        if inside.any():
            value = set_score(inside) - penalty * units(subgroup, cardinality)
            if value > best:
                best, arg = value, subgroup
    return best, arg


def poisson_score(c: float, e: float, direction: int) -> float:
    if e <= 0:
        return 0.0
    lo, hi = (0.0, U_HI) if direction > 0 else (U_LO, 0.0)
    u = lo if c <= 0 else min(max(math.log(c / e), lo), hi)
    return c * u - e * math.expm1(u)


def gaussian_score(delta: np.ndarray, variance: np.ndarray, direction: int) -> float:
    s, n = float(np.sum(delta / variance)), float(np.sum(1.0 / variance))
    return s * s / (2.0 * n) if n > 0 and s * direction > 0 else 0.0
