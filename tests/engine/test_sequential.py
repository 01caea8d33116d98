"""Sequential Monte-Carlo significance (issue 36, methods.md §9.5): the binomial mixture rule
against independent computations (the Beta-integral form of its wealth, the exact law of its
decisions by dynamic programming over the null's Pólya urn), its Type-I error over many null
sequences, and the runner's stop point for any worker count or executor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special

from fairscan.engine.mdss import ScanProblem
from fairscan.engine.randomization import (
    TIE_TOLERANCE,
    MdssReplicate,
    NullSettings,
    run_local,
    run_replicates,
    summarize,
)
from fairscan.engine.sequential import StoppingRule, losses_of


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
        rule = StoppingRule(alpha, 5000)
        c = 0.9 * alpha
        fewest = int(np.ceil(np.log(1 - c / alpha) / np.log(1 - c) - 1 - 1e-12))
        assert rule.reject_after == fewest
        assert rule.smallest_p_value() == pytest.approx(c / (1 - (1 - c) ** 5001))
    assert StoppingRule(0.05, 19).applies is False  # too few replicates: the fixed test runs
    assert StoppingRule(0.05, 50).applies is True


def _exact_law(rule: StoppingRule) -> tuple[float, float]:
    """(P(reject), E[replicates run]) under the null, by dynamic programming: with the observed
    statistic exchangeable with its replicates, the losses follow a Pólya urn,
    P(loss at t + 1 | L losses in t) = (L + 1) / (t + 2). The stop regions come from scipy's
    incomplete Beta function, not from the rule's own wealth."""
    c, alpha, top = rule.c, rule.alpha, rule.max_replicates
    # the running maximum of W only matters through "already >= 1/alpha", which stops the run
    mass = {0: 1.0}  # losses -> probability of being still running after t replicates
    reject = stopped_time = 0.0
    for t in range(top):
        nxt: dict[int, float] = {}
        for losses, prob in mass.items():
            up = (losses + 1) / (t + 2)
            for new, share in ((losses + 1, up), (losses, 1 - up)):
                nxt[new] = nxt.get(new, 0.0) + prob * share
        mass = {}
        for losses, prob in nxt.items():
            w = special.betainc(losses + 1, t + 1 - losses + 1, c) / c
            at_top = special.betainc(losses + 1, top - losses + 1, c) / c
            if w >= 1 / alpha:
                reject += prob
                stopped_time += prob * (t + 1)
            elif w <= alpha or at_top < 1 / alpha or t + 1 == top:
                stopped_time += prob * (t + 1)
            else:
                mass[losses] = prob
    return reject, stopped_time


def test_the_rule_matches_its_exact_law_under_the_null():
    rule = StoppingRule(0.05, 120)
    exact_reject, exact_time = _exact_law(rule)
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


def test_type_one_error_and_replicates_run_over_null_sequences():
    # uniform null scores, 999 at most: the rule rejects at most alpha of the time (Ville),
    # and stops early (mean replicates well under 100)
    rule = StoppingRule(0.05, 999)
    rng = np.random.default_rng(2024)
    n = 1500
    outcomes = [
        rule.outcome(losses_of(rng.uniform(), rng.uniform(size=999), TIE_TOLERANCE))
        for _ in range(n)
    ]
    share = np.mean([o.decision == "reject" for o in outcomes])
    assert share <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n)
    assert np.mean([o.replicates for o in outcomes]) < 100
    # the anytime-valid p-value is super-uniform: P(p <= u) <= u
    p = np.array([o.p_value for o in outcomes])
    for u in (0.05, 0.2, 0.5):
        assert np.mean(p <= u) <= u + 3 * np.sqrt(u * (1 - u) / n)


def test_a_sequence_far_below_the_observed_statistic_rejects_at_the_fewest_replicates():
    rule = StoppingRule(0.05, 999)
    out = rule.outcome(np.zeros(999, dtype=bool))
    assert (out.decision, out.replicates) == ("reject", rule.reject_after)
    assert out.p_value <= 0.05
    first_loss = rule.outcome(np.ones(999, dtype=bool))
    assert (first_loss.decision, first_loss.replicates) == ("accept", 1)


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
