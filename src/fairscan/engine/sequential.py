"""Monte-Carlo tests that stop once the decision at alpha is settled (methods.md §9.5).

The rule is the binomial mixture strategy of Fischer & Ramdas, "Sequential Monte-Carlo testing
by betting" (2024), with the paper's default ``c = 0.9 * alpha``. After ``t`` null replicates of
which ``L`` scored at least the observed statistic (a "loss"; ties count as losses), the wealth

    W_t = P(Binomial(t + 1, c) >= L + 1) / c

is the likelihood ratio of the loss sequence under "the observed statistic's p-value is uniform
on (0, c)" against the null, where the p-value is uniform on (0, 1) (the observed statistic is
exchangeable with its replicates). It is a test martingale starting at 1, so by Ville's
inequality P(sup_t W_t >= 1/alpha) <= alpha under the null. The rule

* rejects at the first ``t`` with ``W_t >= 1 / alpha``;
* accepts at the first ``t`` with ``W_t <= alpha`` (the paper's futility stop: rejection has
  become unlikely; stopping to accept never raises the Type-I error), or once even no further
  loss up to the maximum could lift ``W`` to ``1 / alpha`` (the decision cannot change);
* otherwise runs to the maximum and accepts.

The reported p-value is the anytime-valid ``min(1, 1 / max_{s <= t} W_s)`` at the replicates
actually run: valid at any stopping point. It cannot fall below about ``c``: the rule is built
to settle the decision at alpha, not to measure very small p-values (run with
``sequential: false`` for those). When even an all-win sequence cannot reach ``1 / alpha``
within the maximum (e.g. 19 replicates at alpha 0.05) the rule does not apply and the fixed
count runs (:attr:`StoppingRule.applies`).

numpy only: the binomial tail is summed from a log-factorial table (all terms positive, so the
sum is accurate in the far tail, where the futility stop reads it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# The paper's default bet: the alternative's p-values are uniform on (0, SHARE * alpha).
SHARE = 0.9
NAME = "binomial mixture (Fischer & Ramdas 2024)"


@dataclass(frozen=True)
class Outcome:
    """Where the rule stopped on a sequence of replicates."""

    replicates: int  # replicates run (the stop index, or all given when not settled)
    losses: int  # replicates among them scoring >= the observed statistic
    p_value: float  # anytime-valid: min(1, 1 / max wealth so far)
    decision: str  # "reject", "accept" (settled early) or "open" (not settled: more may run)


@dataclass(frozen=True)
class StoppingRule:
    """The stopping rule of one test at level ``alpha`` with at most ``max_replicates``."""

    alpha: float
    max_replicates: int
    share: float = SHARE
    _log_factorial: np.ndarray = field(init=False, repr=False, compare=False)
    # W by (replicates, losses): the rule reads the same states again and again
    _wealth: dict[tuple[int, int], float] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0 or self.max_replicates < 0:
            raise ValueError(f"not a test: alpha {self.alpha}, {self.max_replicates} replicates")
        n = self.max_replicates + 2
        table = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])
        object.__setattr__(self, "_log_factorial", table)

    @property
    def c(self) -> float:
        return self.share * self.alpha

    def wealth(self, replicates: int, losses: int) -> float:
        """``W_t`` after ``replicates`` replicates with ``losses`` losses among them."""
        known = self._wealth.get((replicates, losses))
        if known is None:
            known = self._wealth[(replicates, losses)] = self._tail(replicates, losses)
        return known

    def _tail(self, replicates: int, losses: int) -> float:
        """P(Binomial(t + 1, c) >= L + 1) / c, summed over the (positive) upper-tail terms."""
        n = replicates + 1
        if losses + 1 > n:
            return 0.0
        k = np.arange(losses + 1, n + 1)
        lf = self._log_factorial
        log_pmf = lf[n] - lf[k] - lf[n - k] + k * math.log(self.c) + (n - k) * math.log1p(-self.c)
        top = float(log_pmf.max())
        return math.exp(top + math.log(float(np.exp(log_pmf - top).sum()))) / self.c

    @cached_property
    def reject_after(self) -> int | None:
        """The fewest replicates that can reject (all of them below the observed statistic);
        None when even the maximum cannot."""
        for t in range(1, self.max_replicates + 1):
            if self.wealth(t, 0) >= 1.0 / self.alpha:
                return t
        return None

    @property
    def applies(self) -> bool:
        """Whether the rule can reject at all within the maximum (else the fixed count runs)."""
        return self.reject_after is not None

    def smallest_p_value(self) -> float:
        """The smallest p-value the rule can report within the maximum."""
        return min(1.0, 1.0 / self.wealth(self.max_replicates, 0))

    def outcome(self, losses: np.ndarray) -> Outcome:
        """Run the rule over ``losses`` (one flag per replicate, in replicate order) and stop at
        the first replicate where the decision is settled."""
        flags = np.asarray(losses, dtype=bool)[: self.max_replicates]
        running = np.cumsum(flags)
        best = 1.0  # W_0
        reach = 1.0 / self.alpha
        for t in range(1, len(flags) + 1):
            count = int(running[t - 1])
            w = self.wealth(t, count)
            best = max(best, w)
            p = min(1.0, 1.0 / best)
            if best >= reach:
                return Outcome(t, count, p, "reject")
            if w <= self.alpha or self.wealth(self.max_replicates, count) < reach:
                return Outcome(t, count, p, "accept")
        count = int(running[-1]) if len(flags) else 0
        ended = len(flags) == self.max_replicates
        return Outcome(len(flags), count, min(1.0, 1.0 / best), "accept" if ended else "open")

    def likely_replicates(self, first_loses: bool) -> int:
        """Replicates the rule runs when every replicate falls on the side replicate 0 fell."""
        return self.outcome(np.full(self.max_replicates, first_loses)).replicates

    def round_ends(self) -> list[int]:
        """Where the rounds of replicates end (replicate 0 alone first): doubling sizes, plus
        the fewest replicates that can reject. Fixed by index, so where the rule stops never
        depends on the rounds, the workers or the executor."""
        ends = {1, self.max_replicates}
        end = 2
        while end < self.max_replicates:
            ends.add(end)
            end *= 2
        if self.reject_after is not None:
            ends.add(self.reject_after)
        return sorted(e for e in ends if 1 <= e <= self.max_replicates)

    def describe(self) -> str:
        """The rule in plain words (report text)."""
        return (
            f"replicates stop once the answer at alpha {self.alpha:.3g} is settled (an "
            f"anytime-valid {NAME} rule, at most {self.max_replicates})"
        )


def losses_of(observed: float, scores: np.ndarray, tolerance: float) -> np.ndarray:
    """Per replicate: whether it scored at least the observed statistic (relative ``tolerance``
    for ties, as the fixed test counts them)."""
    threshold = observed - tolerance * max(1.0, abs(observed))
    return np.asarray(scores) >= threshold


__all__ = ["NAME", "SHARE", "Outcome", "StoppingRule", "losses_of"]
