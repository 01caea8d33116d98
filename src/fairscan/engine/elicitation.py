"""Eliciting lambda from a user's answers (IJDI paper App. C, methods.md §4.3).

Each answer is a triple (z1, z2, z3) of percentages: two unequal false positive rates z1 != z2
(with z1 + z2 even) and the equal rate z3 at which the user becomes indifferent. With
x = |z1 - z2| and y = z3 - (z1 + z2) / 2, one answer gives c_dFPR / c_FP = 4 y / x; several give
the least-squares line through the origin, 4 sum(x y) / sum(x^2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ElicitationError(ValueError):
    """An answer that the elicitation protocol rejects (the user should be asked again)."""


@dataclass(frozen=True)
class LambdaEstimate:
    disparity_cost_ratio: float  # c_dFPR / c_FP (negatives) or c_dTPR / c_FN (positives)
    lam: float
    side: str


def validate_answer(z1: int, z2: int, z3: int) -> tuple[float, float]:
    for name, z in (("z1", z1), ("z2", z2), ("z3", z3)):
        if not 0 <= z <= 100:
            raise ElicitationError(f"{name} = {z} must be a percentage between 0 and 100")
    if z1 == z2:
        raise ElicitationError("z1 and z2 must differ (they are two unequal rates)")
    if (z1 + z2) % 2:
        raise ElicitationError("z1 + z2 must be even, so that their midpoint is a whole percentage")
    mid = (z1 + z2) / 2
    if z3 < mid:
        raise ElicitationError(
            f"z3 = {z3} is below the midpoint {mid:g} of z1 and z2: an equal system with a lower "
            "error rate than the unequal one's average should always be preferred; ask again"
        )
    return abs(z1 - z2), z3 - mid


def disparity_cost_ratio(answers: Sequence[tuple[int, int, int]]) -> float:
    """4 sum(x y) / sum(x^2) over the answers (one answer: 4 y / x)."""
    if not answers:
        raise ElicitationError("give at least one answer z1,z2,z3")
    pairs = [validate_answer(*a) for a in answers]
    return 4.0 * sum(x * y for x, y in pairs) / sum(x * x for x, _ in pairs)


def elicit_lambda(
    cfn_over_cfp: float, answers: Sequence[tuple[int, int, int]], side: str = "negatives"
) -> LambdaEstimate:
    """lambda_N = (1 + c_FN/c_FP) / (c_dFPR/c_FP); lambda_P = (1 + c_FP/c_FN) / (c_dTPR/c_FN)."""
    if cfn_over_cfp <= 0:
        raise ElicitationError("c_FN / c_FP must be positive")
    ratio = disparity_cost_ratio(answers)
    if ratio <= 0:
        raise ElicitationError(
            "every answer puts z3 at the midpoint: disparity costs nothing, so lambda is unbounded"
        )
    numerator = 1.0 + cfn_over_cfp if side == "negatives" else 1.0 + 1.0 / cfn_over_cfp
    return LambdaEstimate(disparity_cost_ratio=ratio, lam=numerator / ratio, side=side)
