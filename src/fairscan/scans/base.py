"""The scan interface: what a scan module declares to the registry, and what its runner receives.

A scan type is one module (or package) that declares

* its spec model (a :class:`~fairscan.spec.base.ScanSpecBase` subclass with a ``type`` literal),
* the data roles it needs (:data:`Role`; fixed, or a function of its spec),
* the further data columns its spec names (``extra_columns``),
* its spec-level checks, run by ``audit validate`` without data (``check``),
* its runner (spec, context) -> :class:`~fairscan.report.models.ScanResult`,
* optional render hooks for its ``detail`` (:class:`~fairscan.report.hooks.RenderHooks`),

and adds one :class:`ScanType` entry to the registry (``fairscan.scans``).
"""

from __future__ import annotations

import builtins
import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from fairscan.errors import Issue, ScanError
from fairscan.progress import NullProgress, Progress
from fairscan.report.hooks import RenderHooks
from fairscan.report.models import ScanTiming
from fairscan.spec.base import ScanSpecBase

if TYPE_CHECKING:
    from fairscan.data.table import PreparedData
    from fairscan.engine.evidence import Profiles
    from fairscan.engine.jobs import Executor, ReplicateJob
    from fairscan.engine.randomization import NullResult
    from fairscan.engine.sequential import StoppingRule
    from fairscan.report.models import Finding, ScanResult

# outcome: the binary outcome (or the scan's `outcome_type`); probability: the prediction used
# as a probability in [0, 1]; score: the prediction as any real number; recommendation: the
# binary decision (a column, or the prediction against a threshold); expectation: the
# prediction as the expected outcome if one is given (a probability for binary outcomes, a mean
# otherwise), else none: the scan then expects the outcome's overall mean.
Role = Literal["outcome", "probability", "score", "recommendation", "expectation"]
# How a scan type's runner takes sample weights (columns.weight) and a streamed dataset's row
# counts, both ``ctx.data.row_weight``:
# * "rows": one row per data row: counts and whole-number weights repeat rows, fractional
#   weights are refused;
# * "fractional": as "rows", but fractional weights come as weighted rows (weighted statistics,
#   fits and resamples);
# * "counts": always the weighted rows (counts, whole-number and fractional weights alike).
WeightUse = Literal["rows", "fractional", "counts"]


@dataclass(frozen=True)
class RoleArrays:
    """One scan's role columns, resolved from ``columns`` and the scan's own overrides."""

    # (n,) int8 in {0, 1}; float64 for continuous/count/ordinal, strings for nominal outcomes
    outcome: np.ndarray | None = None
    prediction: np.ndarray | None = None  # (n,) float64 (a probability where the scan needs one)
    recommendation: np.ndarray | None = None  # (n,) int8 in {0, 1}
    # nominal outcomes: class label -> (n,) float64 predicted probability of that class
    classes: dict[str, np.ndarray] = field(default_factory=dict)


_ROLE_FIX = {
    "outcome": "set columns.outcome (or the scan's `outcome`)",
    "prediction": "set columns.prediction (or the scan's `prediction`)",
    "recommendation": "set columns.recommendation, or columns.threshold with columns.prediction",
}


@dataclass
class ScanContext:
    """Everything a runner needs besides its own spec."""

    data: PreparedData
    alpha: float
    replicates: int
    seed: np.random.SeedSequence  # this scan's own stream (spawned from the run's root)
    workers: int = 1
    # where null replicates run (significance.executor); None: this machine
    executor: Executor | None = None
    progress: Progress = field(default_factory=NullProgress)
    role_names: dict[str, str] = field(default_factory=dict)  # role -> column name, for wording
    roles: RoleArrays = field(default_factory=RoleArrays)
    # the resolved recommendation rule (scan threshold_rule, else columns.threshold_rule)
    threshold_rule: Literal["ge", "gt"] = "ge"
    # folder of the spec file that wrote this scan: relative paths in a scan spec start here
    spec_dir: Path = field(default_factory=Path.cwd)
    # re-test of a baseline (given subgroups): per subgroup, the effect (odds or rate
    # multiplier) whose detection power the re-test reports; None: no power asked for
    detect: tuple[float | None, ...] = ()
    # significance.sequential: the replicates stop once the decision at alpha is settled
    # (fairscan.engine.sequential); False: the fixed count, as before
    sequential: bool = False
    # the factor gate.correction applies to alpha for one scan's decision (1 / the scans it
    # corrects over, 1 without a correction): the rule settles the decision at that level
    alpha_share: float = 1.0

    def _role(self, name: str) -> np.ndarray:
        value = getattr(self.roles, name)
        if value is None:  # the registry's `needs` make this unreachable for a valid spec
            raise ScanError(f"this scan needs a {name} column", hint=_ROLE_FIX[name])
        assert isinstance(value, np.ndarray)
        return value

    @property
    def outcome(self) -> np.ndarray:
        return self._role("outcome")

    @property
    def prediction(self) -> np.ndarray:
        return self._role("prediction")

    @property
    def recommendation(self) -> np.ndarray:
        return self._role("recommendation")

    def stopping_rule(self, alpha: float) -> StoppingRule | None:
        """The sequential rule of a test at ``alpha`` (before gate.correction), or None where
        the fixed count runs (sequential off, or a maximum too small for the rule to reject)."""
        if not self.sequential or self.replicates <= 0:
            return None
        from fairscan.engine.sequential import StoppingRule

        rule = StoppingRule(alpha * self.alpha_share, self.replicates)
        return rule if rule.applies else None

    def replicate_scores(
        self,
        job: ReplicateJob,
        title: str,
        observed: float | None = None,
        alpha: float | None = None,
    ) -> np.ndarray:
        """``job``'s scores over this run's ``replicates``, on its workers and executor, with
        ``title`` on the progress display meanwhile (one home for how a scan runs its null).

        Given the ``observed`` statistic, the replicates stop where the test's stopping rule at
        ``alpha`` (the context's by default) settles the decision: fewer scores come back."""
        from fairscan.engine.randomization import run_replicates

        rule = (
            None if observed is None else self.stopping_rule(self.alpha if alpha is None else alpha)
        )
        self.progress.start(title, self.replicates)
        try:
            return run_replicates(
                job,
                self.replicates,
                workers=self.workers,
                on_progress=self.progress.advance,
                executor=self.executor,
                observed=observed,
                rule=rule,
                on_estimate=getattr(self.progress, "estimate", None),
            )
        finally:
            self.progress.done()

    def null_test(
        self, job: ReplicateJob, title: str, observed: float, alpha: float | None = None
    ) -> NullResult:
        """The randomization test of ``observed`` against ``job``'s replicates at ``alpha``
        (the context's by default), stopped early by the sequential rule where it applies."""
        from fairscan.engine.randomization import summarize

        level = self.alpha if alpha is None else alpha
        scores = self.replicate_scores(job, title, observed, level)
        return summarize(observed, scores, level, self.stopping_rule(level))


@dataclass
class ScanTimer:
    """Search and significance seconds of a scan that alternates the two (loops, mitigation)."""

    search: float = 0.0
    significance: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    def timing(self) -> ScanTiming:
        return ScanTiming(
            search_seconds=self.search,
            significance_seconds=self.significance,
            total_seconds=time.perf_counter() - self.started,
        )


Runner = Callable[[Any, ScanContext], "ScanResult"]

# monitoring (spec `monitor:`, issue 35): one run's evidence about one subgroup under the scan's
# own null, as a log-likelihood over the effect grid of :mod:`fairscan.engine.evidence`; it
# takes the boolean mask of the subgroup's profiles (fairscan.engine.evidence.Profiles of the
# run's data): each process then costs O(profiles), not O(rows)
RunEvidence = Callable[[np.ndarray], np.ndarray]
# (scan spec, the data the scan read, its role arrays, the data's profiles) -> the run's
# evidence function, or the reason this scan cannot be monitored (the monitor reports it;
# nothing is approximated)
MonitorHook = Callable[[Any, "PreparedData", RoleArrays, "Profiles"], "RunEvidence | str"]


def replicate_floor(spec: Any, replicates: int) -> float:
    """The smallest p-value (1 + 0) / (1 + R) of a test of ``replicates`` null replicates (1
    with none: no test ran)."""
    return 1.0 / (max(replicates, 0) + 1)


def lazy_runner(module: str, name: str) -> Runner:
    """A runner imported on its first call, so listing the registry (``audit validate``,
    ``audit explain``, start-up) never imports the compiled kernels, scipy or scikit-learn."""

    def run(spec: Any, ctx: ScanContext) -> ScanResult:
        runner: Runner = getattr(importlib.import_module(module), name)
        return runner(spec, ctx)

    run.__name__ = run.__qualname__ = name
    return run


def lazy_exports_of(sources: dict[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` re-exporting names of several modules (module -> its names),
    each imported on first access."""
    where = {name: module for module, names in sources.items() for name in names}

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    return getattr_


def lazy_hooks(module: str, name: str) -> RenderHooks:
    """Render hooks imported when a report of the type is first drawn, so that start-up never
    loads a scan type's detail models and renderers (a hook that type lacks renders nothing)."""

    def hooks() -> RenderHooks:
        loaded: RenderHooks = getattr(importlib.import_module(module), name)
        return loaded

    def markdown(scan: ScanResult) -> list[str]:
        hook = hooks().markdown
        return hook(scan) if hook is not None else []

    def html(scan: ScanResult) -> str:
        hook = hooks().html
        return hook(scan) if hook is not None else ""

    def lead_markdown(scan: ScanResult) -> list[str]:
        hook = hooks().lead_markdown
        return hook(scan) if hook is not None else []

    def lead_html(scan: ScanResult) -> str:
        hook = hooks().lead_html
        return hook(scan) if hook is not None else ""

    def finding_markdown(scan: ScanResult, finding: Finding) -> list[str]:
        hook = hooks().finding_markdown
        return hook(scan, finding) if hook is not None else []

    def finding_html(scan: ScanResult, finding: Finding) -> str:
        hook = hooks().finding_html
        return hook(scan, finding) if hook is not None else ""

    def sarif_rule(scan: ScanResult, metric: str) -> str | None:
        hook = hooks().sarif_rule
        return hook(scan, metric) if hook is not None else None

    return RenderHooks(
        markdown=markdown,
        html=html,
        lead_markdown=lead_markdown,
        lead_html=lead_html,
        finding_markdown=finding_markdown,
        finding_html=finding_html,
        sarif_rule=sarif_rule,
    )


# spec-level checks without data: (scan spec, the whole audit spec) -> issues whose `field` is
# relative to the scan (e.g. "mitigation"); the caller prefixes "scans[i]."
SpecCheck = Callable[[Any, Any], list[Issue]]


@dataclass(frozen=True)
class ScanDocs:
    """What ``audit explain`` and the documentation site say about a scan type (its own words,
    kept in its package: :mod:`fairscan.explain` only lays them out)."""

    title: str
    # what the scan tests; may end with "Null hypothesis: ..."
    summary: str
    # how to read a result
    reading: str
    # the null hypothesis, when the summary does not state it
    null_hypothesis: str | None = None
    # the data roles in words, when ScanType.needs depends on the settings
    needs: str | None = None


@dataclass(frozen=True)
class Retest:
    """How a baseline re-test (issue 26) treats this type's findings.

    ``effect``: the effect of a finding, as the parameter its given-subgroup test computes a
    power against (None: default, the finding's odds or rate multiplier ``detail.q``). ``key``:
    what besides the subgroup tells its findings apart (CBS: the protected class), so a re-test
    is matched with the baseline finding it re-tests. ``named``: for a type of named groups
    that the run itself evaluates on the new data (flag), the re-test of a baseline finding
    read from this run's scan, (baseline finding, scan) -> (the re-test as a finding with a
    ``given_subgroup`` block, or None and the reason)."""

    effect: Callable[[Finding], float | None] | None = None
    key: Callable[[Finding], str | None] | None = None
    named: Callable[[Finding, ScanResult], tuple[Finding | None, str]] | None = None


@dataclass(frozen=True)
class ScanType:
    """Registry entry: a scan ``type`` with its spec model, roles, checks, runner and hooks;
    its words (:class:`ScanDocs`) and re-test rules (:class:`Retest`) as records of their own."""

    type: str
    spec_model: builtins.type[ScanSpecBase]  # `type` is a field name here
    runner: Runner
    # data roles the scan needs: fixed, or computed from its spec (e.g. by its metric)
    needs: tuple[Role, ...] | Callable[[Any], Iterable[Role]]
    docs: ScanDocs
    # further data columns a scan spec names: spec -> {column: field path within the scan spec}
    extra_columns: Callable[[Any], dict[str, str]] | None = None
    check: SpecCheck | None = None
    render: RenderHooks = field(default_factory=RenderHooks)
    # how the runner takes sample weights and row counts (:data:`WeightUse`), for every spec
    # or per spec
    weights: WeightUse | Callable[[Any], WeightUse] = "rows"
    retest: Retest = field(default_factory=Retest)
    # a type whose p-values come from a randomization test: the smallest p-value that test
    # can give for a spec under ``significance.replicates`` (:func:`replicate_floor`), so the
    # gate can tell a scan that could never reach alpha (untested) from a clean one. None: no
    # randomization test (certify, flag, shift), never untested for want of replicates
    p_value_floor: Callable[[Any, int], float] | None = None
    # monitoring (spec `monitor:`): how a run's data bears on a subgroup under this type's
    # null (:data:`MonitorHook`). None: no anytime-valid evidence is known for this type, and
    # the monitor reports its scans as unsupported
    monitor_evidence: MonitorHook | None = None
    # what a source may push down of this type's prediction: (scan spec, the prediction's kind)
    # -> the direction (+1 positive, -1 negative) when the scan reads its probability column
    # only as per-row expectations that an engine may return in bins with exact per-profile
    # sums (fairscan.data.plan.Calibration); None: the scan reads the values themselves
    probability_summary: Callable[[Any, str], int | None] | None = None

    def baseline_effect(self, finding: Finding) -> float | None:
        """The effect a re-test of ``finding`` computes its power against."""
        if self.retest.effect is not None:
            return self.retest.effect(finding)
        q = finding.detail.get("q")
        return float(q) if isinstance(q, int | float) else None

    def finding_key(self, finding: Finding) -> str | None:
        return self.retest.key(finding) if self.retest.key is not None else None

    def weight_use(self, spec: Any) -> WeightUse:
        """How the runner of ``spec`` takes sample weights and row counts."""
        return self.weights(spec) if callable(self.weights) else self.weights

    def roles_for(self, spec: Any) -> frozenset[Role]:
        """The roles this scan needs for ``spec``."""
        needs = self.needs(spec) if callable(self.needs) else self.needs
        return frozenset(needs)
