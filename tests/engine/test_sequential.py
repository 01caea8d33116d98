"""Sequential Monte-Carlo significance (issue 36, methods.md §9.5): the stopping rule against
independent computations (the Beta-integral form of the mixture's wealth, the exact law of its
decisions by dynamic programming over the null's Pólya urn with scipy's own laws), its Type-I
error over many null sequences, its power next to the fixed count, and the runner's stop point
for any worker count or executor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special, stats

from fairscan.engine.mdss import ScanProblem
from fairscan.engine.randomization import (
    TIE_TOLERANCE,
    MdssReplicate,
    NullSettings,
    run_local,
    run_replicates,
    summarize,
)
from fairscan.engine.sequential import EVIDENCE, EXACT_UP_TO, FUTILITY, StoppingRule, losses_of


def test_wealth_is_the_uniform_mixture_likelihood_ratio():
    # W_t = (1/c) * integral_0^c p^L (1-p)^(t-L) dp / B(L+1, t-L+1) = I_c(L+1, t-L+1) / c
    rule = StoppingRule(0.05, 999)
    for t, losses in [(1, 0), (1, 1), (10, 0), (50, 0), (50, 3), (400, 20), (999, 40), (999, 0)]:
        expected = special.betainc(losses + 1, t - losses + 1, rule.c) / rule.c
        assert rule.wealth(t, losses) == pytest.approx(expected, rel=1e-9)
    assert rule.wealth(0, 0) == pytest.approx(1.0)


def test_fewest_replicates_to_reject_and_smallest_p_value_follow_the_closed_form():
    # with no loss, W_t = (1 - (1 - c)^(t + 1)) / c: it reaches 1 / alpha once
    # (1 - c)^(t + 1) <= 1 - c / alpha
    for alpha in (0.05, 0.01, 0.1):
        c = 0.9 * alpha
        fewest = int(np.ceil(np.log(1 - c / alpha) / np.log(1 - c) - 1 - 1e-12))
        exact = StoppingRule(alpha, 999)
        assert exact.reject_after == fewest and exact.exact
        assert exact.smallest_p_value() == exact.design.level <= alpha
        # above EXACT_UP_TO the mixture alone runs: its smallest p-value is 1 / W_max
        mixture = StoppingRule(alpha, EXACT_UP_TO + 1)
        assert mixture.reject_after == fewest and not mixture.exact
        top = EXACT_UP_TO + 2
        assert mixture.smallest_p_value() == pytest.approx(c / (1 - (1 - c) ** top))
    assert StoppingRule(0.05, 19).applies is False  # too few replicates: the fixed test runs
    assert StoppingRule(0.05, 50).applies is True


def _evidence_reached(alpha: float, t, losses):
    """Whether the likelihood ratio of a p-value uniform on (alpha, 1) against alpha after
    ``losses`` of ``t`` reaches 1 / EVIDENCE, in logs from the Beta law's log survival
    function (the rule sums the incomplete Beta)."""
    a, b = losses + 1, t - losses + 1
    log_integral = special.betaln(a, b) + stats.beta.logsf(alpha, a, b)
    log_null = losses * np.log(alpha) + (t - losses + 1) * np.log1p(-alpha)
    return log_integral - log_null >= np.log(1 / EVIDENCE)


def _stops(rule: StoppingRule, t: int, losses: int, threshold: int) -> str:
    """The rule's regions from scipy: reject once the mixture's wealth (its Beta-integral
    form) reaches 1 / alpha; accept once P(L + Binomial(n - t, alpha) <= threshold) <=
    FUTILITY or the evidence for a p-value above alpha reaches 1 / EVIDENCE; at the maximum
    n, reject when L <= threshold."""
    alpha, top = rule.alpha, rule.max_replicates
    wealth = special.betainc(losses + 1, t - losses + 1, rule.c) / rule.c
    if wealth >= 1 / alpha or (t == top and losses <= threshold):
        return "reject"
    if t == top or stats.binom.cdf(threshold - losses, top - t, alpha) <= FUTILITY:
        return "accept"
    return "accept" if _evidence_reached(alpha, t, losses) else "open"


def _exact_law(rule: StoppingRule, threshold: int) -> tuple[float, float]:
    """(P(reject), E[replicates run]) under the null for end threshold ``threshold``, by
    dynamic programming: with the observed statistic exchangeable with its replicates, the
    losses follow a Pólya urn, P(loss at t + 1 | L losses in t) = (L + 1) / (t + 2)."""
    mass = {0: 1.0}  # losses -> probability of being still running after t replicates
    reject = stopped_time = 0.0
    for t in range(rule.max_replicates):
        nxt: dict[int, float] = {}
        for losses, prob in mass.items():
            up = (losses + 1) / (t + 2)
            for new, share in ((losses + 1, up), (losses, 1 - up)):
                nxt[new] = nxt.get(new, 0.0) + prob * share
        mass = {}
        for losses, prob in nxt.items():
            stop = _stops(rule, t + 1, losses, threshold)
            if stop == "open":
                mass[losses] = prob
                continue
            reject += prob if stop == "reject" else 0.0
            stopped_time += prob * (t + 1)
    return reject, stopped_time


@pytest.mark.parametrize(("alpha", "top"), [(0.05, 120), (0.05, 300), (0.1, 200)])
def test_the_end_threshold_is_the_largest_with_an_exact_level_of_alpha(alpha, top):
    rule = StoppingRule(alpha, top)
    threshold = rule.design.threshold
    level, _ = _exact_law(rule, threshold)
    assert rule.design.level == pytest.approx(level, abs=1e-12)
    assert level <= alpha < _exact_law(rule, threshold + 1)[0]


def test_the_rule_matches_its_exact_law_under_the_null():
    rule = StoppingRule(0.05, 120)
    exact_reject, exact_time = _exact_law(rule, rule.design.threshold)
    assert exact_reject <= rule.alpha
    rng = np.random.default_rng(7)
    n = 4000
    rejected, ran = 0, 0
    for _ in range(n):
        observed = rng.uniform()
        out = rule.outcome(losses_of(observed, rng.uniform(size=120), TIE_TOLERANCE))
        rejected += out.decision == "reject"
        ran += out.replicates
    se = np.sqrt(exact_reject * (1 - exact_reject) / n)
    assert abs(rejected / n - exact_reject) < 4 * se
    assert ran / n == pytest.approx(exact_time, rel=0.1)


@pytest.mark.parametrize("top", [999, pytest.param(EXACT_UP_TO + 1, marks=pytest.mark.slow)])
def test_type_one_error_and_replicates_run_over_null_sequences(top):
    # uniform null scores: the rule rejects at most alpha of the time, stops early (mean
    # replicates well under 100), and its p-value is super-uniform: P(p <= u) <= u
    rule = StoppingRule(0.05, top)
    rng = np.random.default_rng(2024)
    n = 1500
    outcomes = [
        rule.outcome(losses_of(rng.uniform(), rng.uniform(size=top), TIE_TOLERANCE))
        for _ in range(n)
    ]
    share = np.mean([o.decision == "reject" for o in outcomes])
    assert share <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n)
    assert np.mean([o.replicates for o in outcomes]) < 100
    p = np.array([o.p_value for o in outcomes])
    for u in (0.05, 0.2, 0.5):
        assert np.mean(p <= u) <= u + 3 * np.sqrt(u * (1 - u) / n)
    assert all((o.p_value <= 0.05) == (o.decision == "reject") for o in outcomes)


def _regions(rule: StoppingRule, t: int, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """(reject, accept) over L = 0..t after t replicates: :func:`_stops` for every L at once."""
    alpha, top, losses = rule.alpha, rule.max_replicates, np.arange(t + 1)
    wealth = special.betainc(losses + 1, t - losses + 1, rule.c) / rule.c
    reject = (wealth >= 1 / alpha) | ((t == top) & (losses <= threshold))
    futile = stats.binom.cdf(threshold - losses, top - t, alpha) <= FUTILITY
    futile |= _evidence_reached(alpha, t, losses)
    return reject, ~reject & (futile | (t == top))


def _power(rule: StoppingRule, q: float) -> float:
    """P(reject) when each replicate beats the observed statistic with probability q (its
    true p-value), by dynamic programming over the losses with the regions of :func:`_stops`."""
    mass = np.array([1.0])
    power = 0.0
    for t in range(1, rule.max_replicates + 1):
        nxt = np.zeros(t + 1)
        nxt[1:] += mass * q
        nxt[:-1] += mass * (1 - q)
        reject, accept = _regions(rule, t, rule.design.threshold)
        power += nxt[reject].sum()
        nxt[reject | accept] = 0.0
        mass = nxt
    return power


def test_power_stays_with_the_fixed_count_near_the_boundary():
    # against the fixed 999 (reject when at most 49 losses): the same power well inside alpha,
    # a few points at p-values just under alpha (the mixture alone lost a third there)
    rule = StoppingRule(0.05, 999)
    assert rule.design.threshold == 46
    for q, fixed_minus in [(0.01, 0.0005), (0.02, 0.0005), (0.03, 0.005), (0.04, 0.07)]:
        fixed = stats.binom.cdf(49, 999, q)
        assert _power(rule, q) >= fixed - fixed_minus


def test_a_sequence_far_below_the_observed_statistic_rejects_at_the_fewest_replicates():
    rule = StoppingRule(0.05, 999)
    out = rule.outcome(np.zeros(999, dtype=bool))
    assert (out.decision, out.replicates) == ("reject", rule.reject_after)
    assert out.p_value <= 0.05
    # one early loss is no reason to stop (the futility stop asks for many)
    one_loss = rule.outcome(np.r_[True, np.zeros(998, dtype=bool)])
    assert one_loss.decision == "reject" and one_loss.replicates > rule.reject_after
    every_loss = rule.outcome(np.ones(999, dtype=bool))
    assert every_loss.decision == "accept" and every_loss.replicates == 3
    assert every_loss.p_value == 1.0
    # 3 losses of 3: the evidence for a p-value above alpha is (1 - alpha^4) / (4 alpha^3
    # (1 - alpha)) >= 1 / EVIDENCE; 2 of 2 give (1 - alpha^3) / (3 alpha^2 (1 - alpha)) < it
    alpha = 0.05
    assert (1 - alpha**4) / (4 * alpha**3 * (1 - alpha)) >= 1 / EVIDENCE
    assert (1 - alpha**3) / (3 * alpha**2 * (1 - alpha)) < 1 / EVIDENCE


def _job_problem(bias: float) -> ScanProblem:
    rng = np.random.default_rng(3)
    n = 400
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 3)])
    expected = np.full(n, 0.3)
    observed = (rng.random(n) < expected + bias * (codes[:, 1] == 0)).astype(float)
    return ScanProblem.build(codes, observed, expected)


@dataclass(frozen=True)
class ReversedExecutor:
    """Runs each round's replicates last index first, in chunks of 3: another executor."""

    name: str = "local"

    def run_rest(self, job, scores, per_replicate, workers, on_progress, start=1):
        for r in range(len(scores) - 1, start - 1, -1):
            scores[r] = job(r)


@pytest.mark.parametrize("observed", [1.0, 4.0, 30.0])
def test_the_stop_point_is_the_same_for_any_worker_count_and_executor(monkeypatch, observed):
    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    job = MdssReplicate(
        _job_problem(0.0).cells(), NullSettings(1, 0.5, 3), np.random.SeedSequence(5)
    )
    rule = StoppingRule(0.05, 120)
    one = run_replicates(job, 120, workers=1, observed=observed, rule=rule)
    two = run_replicates(job, 120, workers=2, observed=observed, rule=rule)
    other = run_replicates(
        job, 120, workers=1, observed=observed, rule=rule, executor=ReversedExecutor()
    )
    assert np.array_equal(one, two) and np.array_equal(one, other)
    # the stop point is the rule's on the full sequence: the first settled replicate
    full = run_replicates(job, 120, workers=1)
    stop = rule.outcome(losses_of(observed, full, TIE_TOLERANCE))
    assert len(one) == stop.replicates
    assert np.array_equal(one, full[: stop.replicates])
    result = summarize(observed, one, 0.05, rule)
    assert result.p_value == stop.p_value and result.rule is rule


def test_without_a_rule_the_fixed_count_and_its_p_value_are_unchanged():
    job = MdssReplicate(
        _job_problem(0.0).cells(), NullSettings(1, 0.5, 3), np.random.SeedSequence(5)
    )
    scores = run_replicates(job, 60, observed=30.0, rule=None)
    assert len(scores) == 60
    manual = np.empty(60)
    manual[0] = job(0)
    run_local(job, manual, 0.0, 1, None)
    assert np.array_equal(scores, manual)
    result = summarize(30.0, scores, 0.05)
    exceed = int(np.count_nonzero(scores >= 30.0 - TIE_TOLERANCE * 30.0))
    assert result.p_value == (1 + exceed) / 61 and result.rule is None
    # a rule that cannot reach alpha within the maximum leaves the fixed test in place
    small = StoppingRule(0.05, 19)
    assert len(run_replicates(job, 19, observed=30.0, rule=small)) == 19
    assert summarize(30.0, scores[:19], 0.05, small).rule is None


def test_the_estimate_names_the_likely_replicates_and_the_ways_out():
    job = MdssReplicate(
        _job_problem(0.0).cells(), NullSettings(1, 0.5, 3), np.random.SeedSequence(5)
    )
    said: list[str] = []
    rule = StoppingRule(0.05, 999)
    run_replicates(job, 999, observed=1e6, rule=rule, on_estimate=said.append)
    (text,) = said
    assert f"likely after ~{rule.reject_after}" in text and "up to 999 replicates" in text
    assert "significance.replicates" in text and "--executor dask://" in text


@dataclass(frozen=True)
class _Pid:
    """A replicate job that scores the process it ran in."""

    def __call__(self, index: int) -> float:
        import os

        return float(os.getpid())


def test_a_round_of_one_replicate_never_starts_a_pool(monkeypatch):
    # the rule's rounds 1 | 2 | 3 hold one replicate each: each runs here, even when the
    # workers' start is free
    import os

    monkeypatch.setattr("fairscan.engine.randomization.WORKER_STARTUP_SECONDS", 0.0)
    scores = np.zeros(3)
    run_local(_Pid(), scores, 10.0, 2, None, start=2)
    assert scores[2] == os.getpid()


def test_the_likely_time_adds_up_the_rounds_as_they_run():
    from fairscan.engine.randomization import cost_estimate

    rule = StoppingRule(0.05, 999)
    assert rule.likely_replicates(True) == 3 and {1, 2, 3} <= set(rule.round_ends())
    # nothing to find: replicate 0, then the rounds [1, 2) and [2, 3), one replicate each
    text = cost_estimate(2.0, 999, 2, "local", rule, 3)
    assert "about 6 s" in text and "likely after ~3" in text
