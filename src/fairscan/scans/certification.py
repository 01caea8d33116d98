"""Scan types ``certify`` and ``flag`` (methods.md §5.1-§5.7): simultaneous bounds / Boolean
certificates (FWER) or FDR-controlled flags over a fixed, user-given collection of groups.

* ``n`` is every row after the spec filter; the metric's population (e.g. outcome = 0 for FPR)
  enters through the group membership ``G x {population}`` and the target's reference set, as in
  the paper's conditional groups.
* ``target: overall`` = mean of L over the metric's population (influence function of a reference
  mean, §5.2); ``{reference: {column, value}}`` = mean over the population rows with that value;
  a number = known theta (psi = 0).
* ``bootstrap`` is B; alpha and the seed come from the top-level ``significance`` block.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from fairscan.scans.base import ScanContext, ScanType
from fairscan.spec.base import ScanSpecBase, StrictModel, rule_error

if TYPE_CHECKING:
    from fairscan.report.models import ScanResult

MetricName = Literal[
    "fpr",
    "fnr",
    "tpr",
    "tnr",
    "ppv",
    "npv",
    "positive_rate",
    "accuracy",
    "error",
    "brier",
    "calibration",
    "coverage",
    "squared_error",
]


class ReferenceValue(StrictModel):
    column: str = Field(description="Column identifying the reference rows.")
    value: str | int | float = Field(description="Value of `column` marking the reference rows.")


class ReferenceTarget(StrictModel):
    reference: ReferenceValue = Field(
        description="theta = mean of L over the metric's rows with column = value."
    )


class AttributeGroups(StrictModel):
    attributes: list[str] = Field(
        min_length=1, description="Attributes whose intersections form the groups."
    )
    max_order: int | None = Field(
        default=None, ge=1, description="Most attributes fixed at once (default: all)."
    )
    min_size: int = Field(
        default=1,
        ge=1,
        description="Groups with fewer rows of the metric's population are not tested.",
    )
    include_all: bool = Field(default=False, description="Also audit the everyone group.")


class IntervalSpec(StrictModel):
    attribute: str = Field(description="Numeric column.")
    grid: list[float] = Field(min_length=2, description="Strictly increasing interval endpoints.")

    @field_validator("grid")
    @classmethod
    def _increasing(cls, grid: list[float]) -> list[float]:
        if any(b <= a for a, b in itertools.pairwise(grid)) or not all(
            math.isfinite(g) for g in grid
        ):
            raise ValueError("grid must be finite and strictly increasing")
        return grid


class IntervalGroups(StrictModel):
    intervals: IntervalSpec = Field(description="All sub-intervals with endpoints on the grid.")
    min_size: int = Field(default=1, ge=1, description="Minimum rows per tested group.")


class NamedFilter(StrictModel):
    name: str = Field(min_length=1, description="Group name in the report.")
    filter: str = Field(min_length=1, description="SQL WHERE expression selecting the group.")

    @field_validator("filter")
    @classmethod
    def _parses(cls, text: str) -> str:
        from fairscan.data.filters import parse_filter
        from fairscan.errors import SpecError

        try:
            parse_filter(text)
        except SpecError as exc:
            raise ValueError(f"invalid filter: {exc.issues[0].message}") from exc
        return text


class RescaleSpec(StrictModel):
    p_star: float = Field(default=0.01, gt=0, le=1, description="p_*: small-group floor.")
    w0: float | Literal["inf"] = Field(
        default="inf", description="w_0 >= 0 (inf = scale by sd(L) only; 0 = studentize)."
    )

    @field_validator("w0")
    @classmethod
    def _nonneg(cls, w0: float | str) -> float | str:
        if not isinstance(w0, str) and not w0 >= 0:
            raise ValueError("w0 must be >= 0 or inf")
        return w0

    @property
    def w0_value(self) -> float:
        return math.inf if self.w0 == "inf" else float(self.w0)


class _AuditSpecBase(ScanSpecBase):
    metric: MetricName | None = Field(default=None, description="Per-record metric L.")
    loss: str | None = Field(default=None, description="Instead of `metric`: a numeric column L.")
    column: str | None = Field(
        default=None, description="metric coverage: the 0/1 column saying whether Y is covered."
    )
    target: Literal["overall"] | ReferenceTarget | float = Field(
        default="overall", description="theta: overall | {reference: {column, value}} | number."
    )
    groups: AttributeGroups | IntervalGroups | list[NamedFilter] = Field(
        description="Group collection: attribute intersections, intervals or named SQL filters."
    )
    tolerance: float | None = Field(default=None, description="epsilon_0.")
    side: Literal["above", "below", "both"] = Field(
        default="above", description="Alternative: eps > tol, eps < tol, or two-sided."
    )
    bootstrap: int = Field(default=500, ge=10, le=100_000, description="Bootstrap resamples B.")

    @model_validator(mode="after")
    def _metric_or_loss(self) -> _AuditSpecBase:
        if (self.metric is None) == (self.loss is None):
            raise rule_error("give exactly one of `metric` and `loss`", "metric")
        if self.metric == "coverage" and self.column is None:
            raise rule_error("metric coverage needs `column` (0/1 coverage indicator)", "column")
        if self.column is not None and self.metric != "coverage":
            raise rule_error("`column` is only used by metric coverage", "column")
        if isinstance(self.groups, list):
            if not self.groups:
                raise rule_error("the list of named filters is empty", "groups")
            names = [g.name for g in self.groups]
            if len(set(names)) != len(names):
                raise rule_error("named filter groups need distinct names", "groups")
        return self


class FlagSpec(_AuditSpecBase):
    type: Literal["flag"] = Field(description="Flag groups with FDR control (Algorithm 4 + BH).")
    correction: Literal["bh", "by"] = Field(default="bh", description="FDR procedure.")

    @model_validator(mode="after")
    def _needs_tolerance(self) -> FlagSpec:
        if self.tolerance is None:
            raise rule_error("flag needs `tolerance` (epsilon_0)", "tolerance")
        return self


class CertifySpec(_AuditSpecBase):
    type: Literal["certify"] = Field(description="Simultaneous bounds / certificates (FWER).")
    bound: Literal["lower", "upper", "two_sided", "boolean"] = Field(
        default="lower", description="Bound type, or a Boolean certificate about `tolerance`."
    )
    rescale: RescaleSpec | Literal[False] = Field(
        default_factory=RescaleSpec,
        description="Algorithm 2/7 scaling; false = Algorithms 1/3 (s = 1).",
    )

    @model_validator(mode="after")
    def _needs_tolerance(self) -> CertifySpec:
        if self.bound == "boolean" and self.tolerance is None:
            raise rule_error("a Boolean certificate needs `tolerance` (epsilon_0)", "tolerance")
        return self


def _extra_columns(spec: _AuditSpecBase) -> dict[str, str]:
    from fairscan.data.filters import filter_columns, parse_filter

    cols: dict[str, str] = {}
    if spec.loss is not None:
        cols[spec.loss] = "loss"
    if spec.column is not None:
        cols[spec.column] = "column"
    if isinstance(spec.target, ReferenceTarget):
        cols.setdefault(spec.target.reference.column, "target.reference.column")
    g = spec.groups
    if isinstance(g, AttributeGroups):
        for j, a in enumerate(g.attributes):
            cols.setdefault(a, f"groups.attributes[{j}]")
    elif isinstance(g, IntervalGroups):
        cols.setdefault(g.intervals.attribute, "groups.intervals.attribute")
    else:
        for j, nf in enumerate(g):
            for c in sorted(filter_columns(parse_filter(nf.filter))):
                cols.setdefault(c, f"groups[{j}].filter")
    return cols


def _label(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _numeric(ctx: ScanContext, column: str, field: str) -> np.ndarray:
    from fairscan.errors import ScanError

    values = ctx.data.extra.get(column)
    if values is None:
        raise ScanError(f"column {column!r} was not loaded", field=field)
    if values.dtype == object:
        raise ScanError(
            f"column {column!r} is not numeric", field=field, hint="use a numeric column"
        )
    return values.astype(np.float64)


def _matches(values: np.ndarray, wanted: object) -> np.ndarray:
    if values.dtype == object:
        return values == _label(wanted)
    try:
        return values == float(wanted)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return np.zeros(len(values), dtype=bool)


def _groups(spec: _AuditSpecBase, ctx: ScanContext):
    import polars as pl

    from fairscan.engine.audit_groups import from_masks, intersections, intervals
    from fairscan.errors import FairscanError, ScanError

    data = ctx.data
    g = spec.groups
    if isinstance(g, AttributeGroups):
        codes, labels = [], []
        for j, a in enumerate(g.attributes):
            if a in data.attribute_names:
                k = data.attribute_names.index(a)
                codes.append(data.codes[:, k])
                labels.append(data.attributes[k].labels)
            else:
                values = data.extra.get(a)
                if values is None:
                    raise ScanError(
                        f"attribute {a!r} was not loaded", field=f"groups.attributes[{j}]"
                    )
                uniq, inv = np.unique(values, return_inverse=True)
                codes.append(inv.ravel())
                labels.append(tuple(_label(u) for u in uniq))
        return intersections(
            np.stack(codes, axis=1), labels, list(g.attributes), g.max_order, g.include_all
        ), g.min_size
    if isinstance(g, IntervalGroups):
        values = _numeric(ctx, g.intervals.attribute, "groups.intervals.attribute")
        return intervals(values, g.intervals.grid, g.intervals.attribute), g.min_size
    frame = pl.DataFrame(
        {
            c: pl.Series(c, v.tolist(), dtype=pl.String)
            if v.dtype == object
            else pl.Series(c, v, dtype=pl.Float64)
            for c, v in data.extra.items()
        }
    )
    masks = np.zeros((data.n_rows, len(g)), dtype=bool)
    from fairscan.data.filters import filter_expression

    for j, nf in enumerate(g):
        try:
            expr = filter_expression(nf.filter, frame.schema)
            mask = frame.select(expr.fill_null(False)).to_series().to_numpy()
        except FairscanError as exc:
            raise ScanError(
                f"group {nf.name!r}: {exc.issues[0].message}", field=f"groups[{j}].filter"
            ) from exc
        masks[:, j] = mask.astype(bool)
    return from_masks(masks, [nf.name for nf in g], [nf.filter for nf in g]), 1


def _none(x: float) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def certificate_claim(bound: str, side: str) -> str:
    """What a certificate asserts, given the harmful ``side`` (above, below or both).

    "disparity": the certificate proves a gap beyond the tolerance in the harmful direction
    (a lower bound above it when higher is harmful, an upper bound below it when lower is, the
    one-sided two_sided/boolean certificates); certified groups are findings.
    "fairness": the certificate proves the gap stays within the tolerance (|eps| < tol, or a
    bound on the harmless side); groups that cannot be certified are findings.
    """
    if bound == "lower":
        return "fairness" if side == "below" else "disparity"
    if bound == "upper":
        return "disparity" if side == "below" else "fairness"
    return "fairness" if side == "both" else "disparity"


def run_audit(spec: _AuditSpecBase, ctx: ScanContext) -> ScanResult:
    from fairscan.engine import audit_bootstrap as ab
    from fairscan.engine.audit_metrics import METRICS, metric_values
    from fairscan.errors import ScanError
    from fairscan.report.models import (
        AuditGroup,
        AuditPlotData,
        CertificationResult,
        Population,
        ScanResult,
        ScanTiming,
    )

    started = time.perf_counter()
    data = ctx.data
    n = data.n_rows
    warnings: list[str] = []
    # 1. L and its population
    if spec.loss is not None:
        L = _numeric(ctx, spec.loss, "loss")
        pop = np.ones(n, dtype=bool)
        metric_name, metric_text, pop_text = f"loss {spec.loss}", spec.loss, "all rows"
    else:
        roles, metric_text, pop_text = METRICS[spec.metric]
        column = _numeric(ctx, spec.column, "column") if spec.column else None
        try:
            L, pop = metric_values(
                spec.metric, data.outcome, data.recommendation, data.prediction, column
            )
        except ValueError as exc:
            hint = (
                "set columns.recommendation (or columns.threshold with columns.prediction)"
                if "recommendation" in roles
                else "set columns.prediction"
            )
            raise ScanError(f"metric {spec.metric} {exc}", field="metric", hint=hint) from exc
        metric_name = spec.metric
    n_pop = int(pop.sum())
    if n_pop == 0:
        raise ScanError(
            f"metric {metric_name} is undefined: no row is in its population ({pop_text})",
            field="metric",
        )
    # 2. target
    reference = theta = None
    if spec.target == "overall":
        reference = pop.copy()
        target_text = f"overall mean over {pop_text}"
    elif isinstance(spec.target, ReferenceTarget):
        ref = spec.target.reference
        values = data.extra.get(ref.column)
        if values is None:
            raise ScanError(
                f"column {ref.column!r} was not loaded", field="target.reference.column"
            )
        hit = _matches(values, ref.value)
        if not hit.any():
            present = ", ".join(sorted({_label(v) for v in np.unique(values)})[:20])
            raise ScanError(
                f"no row has {ref.column} = {ref.value!r}",
                field="target.reference.value",
                hint=f"values present: {present}",
            )
        reference = hit & pop
        if not reference.any():
            raise ScanError(
                f"the reference {ref.column} = {ref.value!r} has no row in the metric's "
                f"population ({pop_text})",
                field="target.reference",
            )
        target_text = f"mean over {pop_text} with {ref.column} = {_label(ref.value)}"
    else:
        theta = float(spec.target)
        target_text = f"known value {theta:g}"
    # 3. groups
    gc, min_size = _groups(spec, ctx)
    problem = ab.AuditProblem(
        L=L,
        population=pop,
        atom=gc.atom,
        atom_groups=gc.atom_groups,
        reference=reference,
        theta=theta,
    )
    tolerance = float(spec.tolerance) if spec.tolerance is not None else 0.0
    alpha = ctx.alpha
    from fairscan.engine.randomization import child_seed

    seed = child_seed(ctx.seed, 0)
    is_flag = isinstance(spec, FlagSpec)
    if is_flag:
        out = ab.flag(
            problem,
            B=spec.bootstrap,
            alpha=alpha,
            seed=seed,
            tolerance=tolerance,
            side=spec.side,
            correction=spec.correction,
            min_size=min_size,
        )
        m = out.moments
        info = out.info
        s = out.s_star
        lower = upper = np.full(len(m.eps), np.nan)
        with np.errstate(invalid="ignore"):
            half = float(ab.ndtri(1 - alpha / 2)) * s  # marginal (unadjusted) Wald interval
        lower, upper = m.eps - half, m.eps + half
        hit = out.flagged
        tested = out.tested
        degenerate = m.var_L <= 0
        crit: dict[str, float] = {}
    else:
        p_star = None if spec.rescale is False else spec.rescale.p_star
        w0 = math.inf if spec.rescale is False else spec.rescale.w0_value
        cout = ab.certify(
            problem,
            B=spec.bootstrap,
            alpha=alpha,
            seed=seed,
            p_star=p_star,
            w0=w0,
            tolerance=tolerance,
            min_size=min_size,
        )
        m = cout.moments
        info = cout.info
        s = cout.scale
        br = ab.bounds(cout, spec.bound, spec.side, tolerance)
        lower, upper, hit = br.lower, br.upper, br.certified
        degenerate = cout.degenerate
        tested = (m.count > 0) if degenerate else cout.valid
        key = {"lower": ["lower"], "upper": ["upper"], "two_sided": ["abs"]}.get(
            spec.bound,
            {"above": ["above"], "below": ["below"], "both": ["both_upper", "both_lower"]}[
                spec.side
            ],
        )
        crit = {k: cout.t[k] for k in key}
    elapsed_boot = time.perf_counter()
    # 4. per-group status
    sum_L2 = ab.group_sums(problem, L * L)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_g = sum_L2 / m.count - m.mean**2
    status = np.full(len(m.eps), "ok", dtype=object)
    status[(m.count > 0) & (var_g <= 1e-12)] = "constant"
    status[m.count < min_size] = "too_small"
    status[m.count == 0] = "empty"
    if is_flag:
        status[(m.count >= min_size) & (out.present_share < 0.5)] = "unstable"
    elif not degenerate:
        status[(m.count >= min_size) & ~(np.isfinite(s) & (s > 0))] = "degenerate"
    if degenerate:
        status[m.count > 0] = "degenerate"
        warnings.append(
            "L is constant over the metric's population: every process is 0; bounds equal the "
            "estimates (methods.md §5.9)"
        )
    n_const = int(np.sum((status == "constant") & tested))
    if n_const:
        warnings.append(
            f"{n_const} tested group(s) have constant L; their scale reflects only the target's "
            "variability (Proposition 8 assumes Var(L | G) > 0)"
        )
    if info.redraws:
        warnings.append(f"{info.redraws} resample(s) without reference rows were redrawn")
    # 5. sort: hits first, then tested, then by p-value / gap
    pkey = np.where(np.isfinite(out.p_value), out.p_value, 2.0) if is_flag else np.zeros(len(m.eps))
    gap_key = np.where(np.isfinite(m.eps), -np.abs(m.eps), 0.0)
    order = np.lexsort((gap_key, pkey, ~tested, ~hit))
    groups = []
    for i in order:
        groups.append(
            AuditGroup(
                name=gc.names[i],
                subgroup=gc.subgroups[i],
                filter=gc.filters[i],
                size=int(m.count[i]),
                share=float(m.share[i]),
                estimate=_none(m.mean[i]),
                gap=_none(m.eps[i]),
                lower=_none(lower[i]) if tested[i] else None,
                upper=_none(upper[i]) if tested[i] else None,
                scale=_none(s[i]),
                p_value=_none(out.p_value[i]) if is_flag else None,
                adjusted_p_value=_none(out.adjusted[i]) if is_flag else None,
                flagged=bool(hit[i]) if is_flag else None,
                certified=(bool(hit[i]) if tested[i] else None) if not is_flag else None,
                status=str(status[i]),
            )
        )
    n_tested = int(tested.sum())
    n_hit = int(hit.sum())
    failed = 0 if is_flag else n_tested - n_hit
    claim = None if is_flag else certificate_claim(spec.bound, spec.side)
    result = CertificationResult(
        mode="flag" if is_flag else "certify",
        metric=metric_name,
        metric_description=f"L = {metric_text} on {pop_text}",
        rows=n,
        population_rows=n_pop,
        target=target_text,
        theta=m.theta,
        tolerance=tolerance,
        side=spec.side,
        bound=None if is_flag else spec.bound,
        alpha=alpha,
        bootstrap=spec.bootstrap,
        correction=spec.correction if is_flag else None,
        p_star=None if is_flag or spec.rescale is False else spec.rescale.p_star,
        w0=None if is_flag or spec.rescale is False else spec.rescale.w0,
        critical_values=crit,
        redraws=info.redraws,
        sampling=info.path,
        groups_total=len(m.eps),
        groups_tested=n_tested,
        hits=n_hit,
        failed=failed,
        claim=claim,
        groups=groups,
        plot=AuditPlotData(
            group=[g.name for g in groups],
            gap=[g.gap for g in groups],
            lower=[g.lower for g in groups],
            upper=[g.upper for g in groups],
        ),
    )
    # A finding is evidence of harm: a flag, a certified disparity, or a group whose fairness
    # could not be certified (see certificate_claim).
    findings = n_hit if is_flag or claim == "disparity" else failed
    if n_tested == 0:
        status_all = "no_finding"
        warnings.append("no group has enough rows to be tested")
    else:
        status_all = "significant" if findings else "not_significant"
    done = time.perf_counter()
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=status_all,
        parameters={**spec.model_dump(mode="json"), "alpha": alpha},
        timing=ScanTiming(
            search_seconds=0.0,
            significance_seconds=elapsed_boot - started,
            total_seconds=done - started,
        ),
        population=Population(
            description=pop_text,
            size=n_pop,
            observed_rate=float(L[pop].mean()),
            expected_rate=None,
            observed_label=f"mean of L ({metric_text})",
        ),
        certification=result,
        warnings=warnings,
    )


FLAG = ScanType(
    type="flag",
    spec_model=FlagSpec,
    runner=run_audit,
    needs=("outcome",),
    title="Flag groups (FDR)",
    summary=(
        "Flags the groups of a fixed collection whose metric exceeds (or falls short of) a "
        "target by more than a tolerance, with bootstrap MAD scales and Benjamini-Hochberg "
        "FDR control (Cherian & Candès, Algorithm 4)."
    ),
    extra_columns=_extra_columns,
)

CERTIFY = ScanType(
    type="certify",
    spec_model=CertifySpec,
    runner=run_audit,
    needs=("outcome",),
    title="Certify groups (FWER)",
    summary=(
        "Simultaneously valid lower/upper bounds, intervals or Boolean certificates for the "
        "metric gap of every group of a fixed collection (Cherian & Candès, Algorithms 1-3, 6, 7)."
    ),
    extra_columns=_extra_columns,
)
