"""Monte-Carlo tests that stop once the decision at alpha is settled (methods.md §9.5).

After ``t`` null replicates of which ``L`` scored at least the observed statistic (a "loss";
ties count as losses) the rule stops

* to **reject** once the binomial mixture wealth of Fischer & Ramdas, "Sequential Monte-Carlo
  testing by betting" (2024), with the paper's default ``c = 0.9 * alpha``,

      M_t = P(Binomial(t + 1, c) >= L + 1) / c,

  reaches ``1 / alpha`` (with no loss: after 50 replicates at alpha 0.05);
* to **accept** once even an observed statistic whose true p-value were alpha itself would
  reach the threshold ``k`` at the maximum ``n`` with probability ``FUTILITY`` at most (the
  classical conditional-power futility stop: ``P(L + Binomial(n - t, alpha) <= k) <=
  FUTILITY``), once the evidence that the true p-value exceeds alpha reaches
  ``1 / EVIDENCE`` (the likelihood ratio of the losses, mixed over a uniform p-value on
  (alpha, 1), against a p-value of alpha: by Ville's inequality this stop fires with
  probability at most ``EVIDENCE`` whenever the true p-value is alpha or less, so it costs at
  most that much power; with every replicate a loss it stops after 3), or once the decision
  can no longer change;
* otherwise at the maximum, rejecting when ``L <= k``.

``k`` is the largest threshold for which the whole design (both early stops included) rejects
with probability at most alpha under the null, computed exactly: with the observed statistic
exchangeable with its replicates the losses follow a Pólya urn, P(loss at t + 1 | L losses in
t) = (L + 1) / (t + 2), and backward induction over the states (t, L) gives ``V(t, L)``, the
null probability that the design rejects from there. At 999 replicates and alpha 0.05, ``k`` is
46 (the fixed count rejects at 49): near the boundary the rule keeps the fixed test's power, where
the mixture alone (rejecting at the maximum only below about 3.5 % losses) lost up to a third.

The reported p-value is ``V(0, 0)`` when the rule rejects, else ``min(1, alpha / max_{s <= t}
V(s, L_s))``. ``V(t, L_t) / alpha`` is the wealth of the betting strategy that recovers this
test (the paper's Section 6, "every permutation test can be recovered by betting"): a
supermartingale under the null (a martingale without ties, which only add losses) starting at
``V(0, 0) / alpha <= 1``. By Ville's inequality the p-value is valid at any stopping point (for a
level below ``V(0, 0)`` nothing can reach it, between ``V(0, 0)`` and alpha it is the rule's own
rejection, of probability ``V(0, 0)``), and it is at most alpha exactly when the rule rejects.
It cannot fall below ``V(0, 0)`` (about 0.9 alpha to alpha): the rule settles the decision at alpha, it does not
measure very small p-values (run with ``sequential: false`` for those). When even an all-win
sequence cannot reach the mixture's ``1 / alpha`` within the maximum (e.g. 19 replicates at
alpha 0.05) the rule does not apply and the fixed count runs (:attr:`StoppingRule.applies`).

The design depends on (alpha, maximum) only; it is computed once per process (about 0.3 s at
999 replicates) with numpy and scipy's binomial law (``scipy.special``, not ``scipy.stats``,
whose import costs more than the design).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

# The paper's default bet: the alternative's p-values are uniform on (0, SHARE * alpha).
SHARE = 0.9
# The futility stop's conditional power: accept once a true p-value of alpha itself would
# reject at the maximum with at most this probability.
FUTILITY = 0.01
# The evidence stop's level: accept once the evidence that the p-value exceeds alpha reaches
# 1 / EVIDENCE (at most this much power lost at any true p-value <= alpha).
EVIDENCE = 0.001
NAME = "binomial mixture (Fischer & Ramdas 2024) with an exact truncation at the maximum"
# Above this maximum the exact design (a backward induction over every (t, L), about 0.3 s at
# 999 and growing with the square of the maximum) gives way to the mixture alone: it stops
# to accept once M_t <= alpha or once 1 / alpha is out of reach, and reports 1 / max M.
EXACT_UP_TO = 5_000
MIXTURE_NAME = "binomial mixture (Fischer & Ramdas 2024)"


@dataclass(frozen=True)
class Outcome:
    """Where the rule stopped on a sequence of replicates."""

    replicates: int  # replicates run (the stop index, or all given when not settled)
    losses: int  # replicates among them scoring >= the observed statistic
    p_value: float  # anytime-valid: V(0, 0) on a rejection, else min(1, alpha / max V so far)
    decision: str  # "reject", "accept" (settled early) or "open" (not settled: more may run)


@dataclass(frozen=True)
class Design:
    """The rule's stop regions and its null rejection probabilities, for one (alpha, maximum).

    V(t, L) is 1 where the rule rejects (stops, or is sure to), 0 where it accepts, and in
    between the null probability that it rejects from there. Only the band in between is kept:
    ``starts[t]`` is its first L (V = 1 below it), ``bands[t]`` its values (V = 0 above it)."""

    threshold: int  # k: reject at the maximum when at most k losses
    starts: np.ndarray
    bands: tuple[np.ndarray, ...]

    @property
    def level(self) -> float:
        """The exact null probability that the design rejects, V(0, 0) (at most alpha)."""
        return self.value(0, 0)

    def value(self, replicates: int, losses: int) -> float:
        i = losses - int(self.starts[replicates])
        if i < 0:
            return 1.0
        band = self.bands[replicates]
        return float(band[i]) if i < len(band) else 0.0


def _largest_below(
    cdf: Callable[[np.ndarray], np.ndarray], high: np.ndarray, target: float
) -> np.ndarray:
    """Per entry: the largest j in [-1, high] with cdf(j) <= target, by bisection on all
    entries at once (cdf non-decreasing in j, cdf(-1) = 0; -1 when none)."""
    low = np.full(high.shape, -1, dtype=np.int64)
    high = high.astype(np.int64) + 1  # cdf(high + 1) is treated as above the target
    while np.any(high - low > 1):
        mid = (low + high) // 2
        ok = cdf(mid) <= target
        low = np.where(ok & (high - low > 1), mid, low)
        high = np.where(~ok & (high - low > 1), mid, high)
    return low


def _mixture_reject_bounds(alpha: float, share: float, top: int) -> np.ndarray:
    """Per t (0..top): the most losses at which the mixture wealth reaches 1 / alpha (-1:
    none): M_t >= 1/alpha <=> P(Binomial(t + 1, c) <= L) <= 1 - c / alpha."""
    from scipy.special import bdtr

    c = share * alpha
    t = np.arange(top + 1)
    bounds = _largest_below(lambda j: bdtr(j, t + 1, c), t, 1.0 - c / alpha)
    bounds[0] = -1  # nothing stops before the first replicate
    return bounds


def _futility_margins(alpha: float, top: int) -> np.ndarray:
    """Per t: the most further losses j with P(Binomial(top - t, alpha) <= j) <= FUTILITY
    (-1: none). The rule accepts at (t, L) when L >= k - j: the end threshold k is then out of
    reach with probability >= 1 - FUTILITY even at a true p-value of alpha."""
    from scipy.special import bdtr

    remaining = top - np.arange(top + 1)
    return _largest_below(lambda j: bdtr(j, remaining, alpha), remaining, FUTILITY)


def _evidence_bounds(alpha: float, top: int) -> np.ndarray:
    """Per t: the fewest losses at which the evidence that the p-value exceeds alpha reaches
    1 / EVIDENCE (t + 1: never). The evidence after L losses in t replicates is the
    likelihood ratio of a p-value q uniform on (alpha, 1) against q = alpha,
    int_alpha^1 q^L (1 - q)^(t - L) dq / ((1 - alpha) alpha^L (1 - alpha)^(t - L)),
    increasing in L; its log is compared, from the regularised incomplete Beta function."""
    from scipy.special import betainc, betaln

    t = np.arange(top + 1)

    def log_evidence(losses: np.ndarray) -> np.ndarray:
        a, b = losses + 1.0, t - losses + 1.0
        with np.errstate(divide="ignore"):  # a tail of exactly 0: no evidence (log 0)
            tail = np.log1p(-betainc(a, b, alpha))
        return (
            betaln(a, b) + tail - losses * math.log(alpha) - (t - losses + 1) * math.log1p(-alpha)
        )

    below = _largest_below(log_evidence, t, math.log(1.0 / EVIDENCE))
    return below + 1


def _induction(
    threshold: int, rejects: np.ndarray, margins: np.ndarray, evidence: np.ndarray
) -> Design:
    """V by backward induction over the null's Pólya urn (P(loss at t + 1 | L losses in t) =
    (L + 1) / (t + 2)), for the end threshold ``threshold``, band by band."""
    top = len(rejects) - 1
    starts = np.empty(top + 1, dtype=np.int64)
    bands: list[np.ndarray] = [np.empty(0)] * (top + 1)
    starts[top] = max(threshold, int(rejects[top])) + 1
    bands[top] = np.empty(0)
    for t in range(top - 1, -1, -1):
        start = int(rejects[t]) + 1
        stop = min(t + 1, threshold - int(margins[t]), int(evidence[t])) if t > 0 else t + 1
        losses = np.arange(start, max(start, stop))
        after = bands[t + 1]
        offset = int(starts[t + 1])
        # V(t + 1, .) at L and L + 1: 1 below the next band, 0 above it
        padded = np.concatenate([[1.0], after, [0.0]])
        stay = padded[np.clip(losses - offset, -1, len(after)) + 1]
        lose = padded[np.clip(losses + 1 - offset, -1, len(after)) + 1]
        up = (losses + 1) / (t + 2)
        bands[t] = up * lose + (1.0 - up) * stay
        starts[t] = start
    return Design(threshold, starts, tuple(bands))


@cache
def design(alpha: float, share: float, top: int) -> Design:
    """The largest end threshold whose design rejects with null probability <= alpha, at most
    the fixed count's own (which has level alpha without the early stops)."""
    rejects = _mixture_reject_bounds(alpha, share, top)
    margins = _futility_margins(alpha, top)
    evidence = _evidence_bounds(alpha, top)
    low, high = int(rejects[top]), max(int(rejects[top]), math.floor(alpha * (top + 1)) - 1)
    best = _induction(low, rejects, margins, evidence)
    while high > low:
        mid = (low + high + 1) // 2
        trial = _induction(mid, rejects, margins, evidence)
        if trial.level <= alpha:
            low, best = mid, trial
        else:
            high = mid - 1
    return best


@dataclass(frozen=True)
class StoppingRule:
    """The stopping rule of one test at level ``alpha`` with at most ``max_replicates``."""

    alpha: float
    max_replicates: int
    share: float = SHARE
    _log_factorial: np.ndarray = field(init=False, repr=False, compare=False)

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
        """The mixture's ``M_t`` after ``replicates`` replicates with ``losses`` among them:
        P(Binomial(t + 1, c) >= L + 1) / c, summed over the (positive) upper-tail terms."""
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
        None when even the maximum cannot reach the mixture's 1 / alpha."""
        for t in range(1, self.max_replicates + 1):
            if self.wealth(t, 0) >= 1.0 / self.alpha:
                return t
        return None

    @property
    def applies(self) -> bool:
        """Whether the rule can stop early to reject (else the fixed count runs)."""
        return self.reject_after is not None

    @property
    def design(self) -> Design:
        return design(self.alpha, self.share, self.max_replicates)

    def smallest_p_value(self) -> float:
        """The smallest p-value the rule can report: the design's exact level (the mixture
        alone: 1 / its wealth after an all-win sequence)."""
        if self.exact:
            return min(1.0, self.design.level)
        return min(1.0, 1.0 / self.wealth(self.max_replicates, 0))

    @property
    def exact(self) -> bool:
        """Whether the exact design runs (else the mixture alone: maxima above EXACT_UP_TO)."""
        return self.max_replicates <= EXACT_UP_TO

    @property
    def name(self) -> str:
        return NAME if self.exact else MIXTURE_NAME

    def outcome(self, losses: np.ndarray) -> Outcome:
        """Run the rule over ``losses`` (one flag per replicate, in replicate order) and stop at
        the first replicate where the decision is settled."""
        flags = np.asarray(losses, dtype=bool)[: self.max_replicates]
        running = np.cumsum(flags)
        settle = self._exact_step if self.exact else self._mixture_step
        best = self.design.level if self.exact else 1.0  # the wealth starts at 1
        for t in range(1, len(flags) + 1):
            count = int(running[t - 1])
            best, decision = settle(t, count, best)
            if decision != "open":
                return Outcome(t, count, self._p_value(best, decision), decision)
        count = int(running[-1]) if len(flags) else 0
        return Outcome(len(flags), count, self._p_value(best, "open"), "open")

    def _p_value(self, best: float, decision: str) -> float:
        """Anytime-valid: the exact design's V(0, 0) on a rejection, else alpha / the largest V
        so far; the mixture alone: 1 / its largest wealth so far."""
        if not self.exact:
            return min(1.0, 1.0 / best)
        if decision == "reject":
            return self.design.level
        return min(1.0, self.alpha / best) if best > 0 else 1.0

    def _exact_step(self, t: int, losses: int, best: float) -> tuple[float, str]:
        v = self.design.value(t, losses)
        decision = "reject" if v == 1.0 else "accept" if v == 0.0 else "open"
        return max(best, v), decision

    def _mixture_step(self, t: int, losses: int, best: float) -> tuple[float, str]:
        w = self.wealth(t, losses)
        best = max(best, w)
        reach = 1.0 / self.alpha
        if best >= reach:
            return best, "reject"
        if w <= self.alpha or self.wealth(self.max_replicates, losses) < reach:
            return best, "accept"
        return best, "accept" if t == self.max_replicates else "open"

    def likely_replicates(self, first_loses: bool) -> int:
        """Replicates the rule runs when every replicate falls on the side replicate 0 fell."""
        return self.outcome(np.full(self.max_replicates, first_loses)).replicates

    def round_ends(self) -> list[int]:
        """Where the rounds of replicates end (replicate 0 alone first): doubling sizes, plus
        the fewest replicates that can reject and the fewest that can accept (nothing to find:
        every replicate a loss). Fixed by index, so where the rule stops never depends on the
        rounds, the workers or the executor."""
        ends = {1, self.max_replicates}
        end = 2
        while end < self.max_replicates:
            ends.add(end)
            end *= 2
        if self.reject_after is not None:
            ends.add(self.reject_after)
            ends.add(self.likely_replicates(True))
        return sorted(e for e in ends if 1 <= e <= self.max_replicates)

    def describe(self) -> str:
        """The rule in plain words (report text)."""
        return (
            f"replicates stop once the answer at alpha {self.alpha:.3g} is settled (an "
            f"anytime-valid rule: {self.name}, at most {self.max_replicates})"
        )


def losses_of(observed: float, scores: np.ndarray, tolerance: float) -> np.ndarray:
    """Per replicate: whether it scored at least the observed statistic (relative ``tolerance``
    for ties, as the fixed test counts them)."""
    threshold = observed - tolerance * max(1.0, abs(observed))
    return np.asarray(scores) >= threshold


__all__ = [
    "EXACT_UP_TO",
    "FUTILITY",
    "MIXTURE_NAME",
    "NAME",
    "SHARE",
    "Design",
    "Outcome",
    "StoppingRule",
    "design",
    "losses_of",
]
