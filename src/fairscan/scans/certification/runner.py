"""The certify/flag runner: validate -> inputs (L, target, groups) -> engine -> result.

Which groups are findings has one home, :func:`finding_mask`: flagged groups (flag), certified
groups when a certificate proves a disparity, tested groups that cannot be certified when it
would prove fairness (:func:`~fairscan.scans.certification.spec.certificate_claim`). The
findings, the hit counts and the scan status all follow from it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from fairscan.data.labels import subgroup_label
from fairscan.engine import audit_bootstrap as ab
from fairscan.engine.audit_groups import GroupCollection, from_masks, intersections, intervals
from fairscan.engine.seeds import AuditStream, child_seed
from fairscan.errors import FairscanError, ScanError
from fairscan.metric_table import CATALOGUE
from fairscan.report.models import (
    Effect,
    Finding,
    Population,
    ScanResult,
    ScanTiming,
    Statistic,
    finite_or_none,
    scan_status,
)
from fairscan.report.text import p_equals
from fairscan.scans.base import ScanContext
from fairscan.scans.certification.models import (
    DETAIL_KEY,
    AuditGroup,
    AuditPlotData,
    CertificationResult,
    flag_region,
)
from fairscan.scans.certification.spec import (
    AttributeGroups,
    AuditSpec,
    CertifySpec,
    Claim,
    FlagSpec,
    IntervalGroups,
    NamedFilter,
    ReferenceTarget,
    certificate_claim,
)
from fairscan.scans.metric_inputs import MetricInputs, metric_inputs, numeric_column


@dataclass(frozen=True)
class Target:
    """theta: estimated from reference rows, or a known number."""

    reference: np.ndarray | None  # (n,) bool, None for a known theta
    theta: float | None  # known theta, None when estimated
    text: str


@dataclass(frozen=True)
class EngineOutput:
    """Per-group figures of either engine (flag or certify), aligned with the collection."""

    moments: ab.Moments
    info: ab.BootstrapInfo
    scale: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    hit: np.ndarray  # flagged (flag) / certified (certify)
    tested: np.ndarray
    degenerate: bool
    critical_values: dict[str, float]
    p_value: np.ndarray | None = None  # flag only
    adjusted: np.ndarray | None = None  # flag only
    present_share: np.ndarray | None = None  # flag only


# --- validate and inputs ----------------------------------------------------------------------


def _label(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _matches(values: np.ndarray, wanted: object) -> np.ndarray:
    if values.dtype == object:
        return np.asarray(values == _label(wanted), dtype=bool)
    try:
        return np.asarray(values == float(wanted), dtype=bool)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return np.zeros(len(values), dtype=bool)


def target_of(spec: AuditSpec, ctx: ScanContext, metric: MetricInputs) -> Target:
    """theta: the metric over its population, over reference rows, or a known number."""
    pop = metric.population
    pop_text = metric.population_text
    if spec.target == "overall":
        return Target(pop.copy(), None, f"overall mean over {pop_text}")
    if not isinstance(spec.target, ReferenceTarget):
        theta = float(spec.target)
        return Target(None, theta, f"known value {theta:g}")
    ref = spec.target.reference
    values = ctx.data.extra.get(ref.column)
    if values is None:
        raise ScanError(f"column {ref.column!r} was not loaded", field="target.reference.column")
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
    return Target(reference, None, f"mean over {pop_text} with {ref.column} = {_label(ref.value)}")


def _attribute_groups(g: AttributeGroups, ctx: ScanContext) -> GroupCollection:
    data = ctx.data
    codes, labels = [], []
    for j, a in enumerate(g.attributes):
        if a in data.attribute_names:
            k = data.attribute_names.index(a)
            codes.append(data.codes[:, k])
            labels.append(data.attributes[k].labels)
            continue
        values = data.extra.get(a)
        if values is None:
            raise ScanError(f"attribute {a!r} was not loaded", field=f"groups.attributes[{j}]")
        uniq, inv = np.unique(values, return_inverse=True)
        codes.append(inv.ravel())
        labels.append(tuple(_label(u) for u in uniq))
    return intersections(
        np.stack(codes, axis=1), labels, list(g.attributes), g.max_order, g.include_all
    )


def _filter_groups(g: list[NamedFilter], ctx: ScanContext) -> GroupCollection:
    import polars as pl

    from fairscan.data.filter_compile import filter_expression

    data = ctx.data
    frame = pl.DataFrame(
        {
            c: pl.Series(c, v.tolist(), dtype=pl.String)
            if v.dtype == object
            else pl.Series(c, v, dtype=pl.Float64)
            for c, v in data.extra.items()
        }
    )
    masks = np.zeros((data.n_rows, len(g)), dtype=bool)
    for j, nf in enumerate(g):
        try:
            expr = filter_expression(nf.filter, frame.schema)
            mask = frame.select(expr.fill_null(False)).to_series().to_numpy()
        except FairscanError as exc:
            raise ScanError(
                f"group {nf.name!r}: {exc.issues[0].message}", field=f"groups[{j}].filter"
            ) from exc
        masks[:, j] = mask.astype(bool)
    return from_masks(masks, [nf.name for nf in g], [nf.filter for nf in g])


def groups_of(spec: AuditSpec, ctx: ScanContext) -> tuple[GroupCollection, int]:
    """The group collection and its minimum tested size."""
    g = spec.groups
    if isinstance(g, AttributeGroups):
        return _attribute_groups(g, ctx), g.min_size
    if isinstance(g, IntervalGroups):
        values = numeric_column(ctx, g.intervals.attribute, "groups.intervals.attribute")
        return intervals(values, g.intervals.grid, g.intervals.attribute), g.min_size
    return _filter_groups(g, ctx), 1


# --- engine -----------------------------------------------------------------------------------


def _run_flag(
    spec: FlagSpec,
    problem: ab.AuditProblem,
    alpha: float,
    seed: np.random.SeedSequence,
    min_size: int,
) -> EngineOutput:
    out = ab.flag(
        problem,
        B=spec.bootstrap,
        alpha=alpha,
        seed=seed,
        tolerance=float(spec.tolerance or 0.0),
        side=spec.side,
        correction=spec.correction,
        min_size=min_size,
    )
    m = out.moments
    with np.errstate(invalid="ignore"):
        half = float(ab.ndtri(1 - alpha / 2)) * out.s_star  # marginal (unadjusted) Wald interval
    limits = gap_limits(spec, problem.theta) or (-np.inf, np.inf)  # within the gap's range
    return EngineOutput(
        moments=m,
        info=out.info,
        scale=out.s_star,
        lower=np.clip(m.eps - half, *limits),
        upper=np.clip(m.eps + half, *limits),
        hit=out.flagged,
        tested=out.tested,
        degenerate=bool(m.var_L <= 0),
        critical_values={},
        p_value=out.p_value,
        adjusted=out.adjusted,
        present_share=out.present_share,
    )


def _critical_keys(bound: str, side: str) -> list[str]:
    if bound in ("lower", "upper"):
        return [bound]
    if bound == "two_sided":
        return ["abs"]
    return {"above": ["above"], "below": ["below"], "both": ["both_upper", "both_lower"]}[side]


def gap_limits(spec: AuditSpec, theta: float | None) -> tuple[float, float] | None:
    """The range the gap eps = group metric - theta can take: the metric's range [lo, hi]
    minus a known theta, or [lo - hi, hi - lo] for an estimated one (a rate: [-1, 1]); None
    for a loss column or an unbounded metric, whose range is not known."""
    span = None if spec.metric is None else CATALOGUE[spec.metric].range
    if span is None:
        return None
    lo, hi = span
    return (lo - theta, hi - theta) if theta is not None else (lo - hi, hi - lo)


def _run_certify(
    spec: CertifySpec,
    problem: ab.AuditProblem,
    alpha: float,
    seed: np.random.SeedSequence,
    min_size: int,
) -> EngineOutput:
    tolerance = float(spec.tolerance) if spec.tolerance is not None else 0.0
    out = ab.certify(
        problem,
        B=spec.bootstrap,
        alpha=alpha,
        seed=seed,
        p_star=None if spec.rescale is False else spec.rescale.p_star,
        w0=math.inf if spec.rescale is False else spec.rescale.w0_value,
        tolerance=tolerance,
        min_size=min_size,
    )
    m = out.moments
    br = ab.bounds(out, spec.bound, spec.side, tolerance, gap_limits(spec, problem.theta))
    return EngineOutput(
        moments=m,
        info=out.info,
        scale=out.scale_boolean if spec.bound == "boolean" else out.scale,
        lower=br.lower,
        upper=br.upper,
        hit=br.certified,
        tested=(m.count > 0) if out.degenerate else out.valid,
        degenerate=out.degenerate,
        critical_values={k: out.t[k] for k in _critical_keys(spec.bound, spec.side)},
    )


def run_engine(
    spec: AuditSpec, ctx: ScanContext, problem: ab.AuditProblem, min_size: int
) -> EngineOutput:
    seed = child_seed(ctx.seed, AuditStream.BOOTSTRAP)
    if isinstance(spec, FlagSpec):
        return _run_flag(spec, problem, ctx.alpha, seed, min_size)
    return _run_certify(spec, problem, ctx.alpha, seed, min_size)


# --- result -----------------------------------------------------------------------------------


def claim_of(spec: AuditSpec) -> Claim | None:
    """certify: what its certificate asserts; None for flag."""
    return None if isinstance(spec, FlagSpec) else certificate_claim(spec.bound, spec.side)


def finding_mask(spec: AuditSpec, out: EngineOutput) -> np.ndarray:
    """The one home of "is this group a finding" (evidence of harm): a flag, a certified
    disparity, or a tested group whose fairness could not be certified."""
    if claim_of(spec) == "fairness":
        return np.asarray(out.tested & ~out.hit, dtype=bool)
    return np.asarray(out.hit, dtype=bool)


def _group_status(
    problem: ab.AuditProblem, out: EngineOutput, min_size: int
) -> tuple[np.ndarray, list[str]]:
    """Per-group status words, and the warnings they call for."""
    m = out.moments
    sum_L2 = ab.group_sums(problem, problem.L * problem.L)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_g = sum_L2 / m.count - m.mean**2
    status = np.full(len(m.eps), "ok", dtype=object)
    status[(m.count > 0) & (var_g <= 1e-12)] = "constant"
    status[m.count < min_size] = "too_small"
    status[m.count == 0] = "empty"
    s = out.scale
    if out.present_share is not None:
        status[(m.count >= min_size) & (out.present_share < 0.5)] = "unstable"
    elif not out.degenerate:
        status[(m.count >= min_size) & ~(np.isfinite(s) & (s > 0))] = "degenerate"
    warnings = []
    if out.degenerate:
        status[m.count > 0] = "degenerate"
        warnings.append(
            "the metric is constant (the same value on every row of its population): no group "
            "can differ from the target; bounds equal the estimates"
        )
    n_const = int(np.sum((status == "constant") & out.tested))
    if n_const:
        warnings.append(
            f"{n_const} tested group(s) have the same metric value on every row; their "
            "intervals reflect only the uncertainty of the target"
        )
    if out.info.redraws:
        warnings.append(f"{out.info.redraws} resample(s) without reference rows were redrawn")
    return status, warnings


def _order(out: EngineOutput) -> np.ndarray:
    """Hits first, then tested groups, then by p-value (flag) and |gap|."""
    g = len(out.moments.eps)
    p = out.p_value
    pkey = np.where(np.isfinite(p), p, 2.0) if p is not None else np.zeros(g)
    eps = out.moments.eps
    gap_key = np.where(np.isfinite(eps), -np.abs(eps), 0.0)
    return np.lexsort((gap_key, pkey, ~out.tested, ~out.hit))


def _audit_group(
    gc: GroupCollection, out: EngineOutput, i: int, status: str, finding: bool, flag: bool
) -> AuditGroup:
    m = out.moments
    tested = bool(out.tested[i])
    return AuditGroup(
        name=gc.names[i],
        subgroup=gc.subgroups[i],
        filter=gc.filters[i],
        size=int(m.count[i]),
        share=float(m.share[i]),
        estimate=finite_or_none(m.mean[i]),
        gap=finite_or_none(m.eps[i]),
        lower=finite_or_none(out.lower[i]) if tested else None,
        upper=finite_or_none(out.upper[i]) if tested else None,
        scale=finite_or_none(out.scale[i]),
        p_value=finite_or_none(out.p_value[i]) if out.p_value is not None else None,
        adjusted_p_value=finite_or_none(out.adjusted[i]) if out.adjusted is not None else None,
        flagged=bool(out.hit[i]) if flag else None,
        certified=(bool(out.hit[i]) if tested else None) if not flag else None,
        finding=finding,
        status=status,
    )


def _statistic(spec: AuditSpec, group: AuditGroup) -> Statistic:
    bound = getattr(spec, "bound", None)
    if bound == "lower":
        return Statistic(name="lower_bound", value=group.lower)
    if bound == "upper":
        return Statistic(name="upper_bound", value=group.upper)
    return Statistic(name="gap", value=group.gap)


def _signed(x: float) -> str:
    return "0" if x == 0 else f"{x:+g}"


def _asserted(spec: AuditSpec, tolerance: float) -> str:
    """The region of the gap a flag or certificate is about, e.g. 'above +0.05'."""
    side = spec.side
    if isinstance(spec, CertifySpec) and spec.bound in ("lower", "upper"):
        side = "above" if spec.bound == "lower" else "below"
    if side == "both":
        return f"{'outside' if isinstance(spec, FlagSpec) else 'within'} ±{abs(tolerance):g}"
    return f"{side} {_signed(tolerance)}"


def _bounds_text(group: AuditGroup, level: str) -> str:
    lower, upper = group.lower, group.upper
    if lower is not None and upper is not None:
        return f"simultaneous {level} bounds [{lower:+.3f}, {upper:+.3f}]"
    if lower is not None:
        return f"simultaneous {level} lower bound {lower:+.3f}"
    if upper is not None:
        return f"simultaneous {level} upper bound {upper:+.3f}"
    return "no bound"


def short_target(text: str) -> str:
    """The target in a few words: ``overall``, ``the known value 0.1``, ``for sex = F``."""
    if text.startswith("overall"):
        return "overall"
    if text.startswith("known value"):
        return "the " + text
    if " with " in text:
        return "for " + text.rsplit(" with ", 1)[1]
    return text


def num(x: float | None) -> str:
    """A rate or mean, short: 0.54, 0.031, n/a."""
    if x is None:
        return "n/a"
    return f"{x:.2f}" if x == 0 or abs(x) >= 0.1 else f"{x:.2g}"


def _description(
    spec: AuditSpec,
    label: str,
    group: AuditGroup,
    metric: MetricInputs,
    result: CertificationResult,
) -> str:
    gap = "n/a" if group.gap is None else f"{group.gap:+.3f}"
    head = (
        f"{label}: {metric.short} {num(group.estimate)} vs "
        f"{num(result.theta)} {short_target(result.target)} (gap {gap})"
    )
    if isinstance(spec, FlagSpec):
        return (
            f"{head}; flagged: {flag_region(spec.side, result.tolerance)} with "
            f"{p_equals(group.adjusted_p_value, name='FDR-adjusted p')}."
        )
    region = _asserted(spec, result.tolerance)
    bounds = _bounds_text(group, f"{100 * (1 - result.alpha):g}%")
    if result.claim == "disparity":
        return f"{head}; certified {region} ({bounds})."
    return f"{head}; cannot be certified {region} ({bounds})."


def _finding(
    spec: AuditSpec,
    ctx: ScanContext,
    group: AuditGroup,
    metric: MetricInputs,
    target: Target,
    result: CertificationResult,
) -> Finding:
    subgroup = group.subgroup
    label = subgroup_label(subgroup, ctx.data.attributes) if subgroup is not None else group.name
    return Finding(
        subgroup=subgroup,
        group=None if subgroup is not None else group.name,
        label=label,
        size=group.size,
        statistic=_statistic(spec, group),
        effect=Effect(
            metric=metric.words,
            inside=group.estimate,
            reference=result.theta,
            reference_name=result.target,
            inside_count=group.size,
            reference_count=int(target.reference.sum()) if target.reference is not None else None,
        ),
        p_value=group.p_value,
        adjusted_p_value=group.adjusted_p_value,
        # a flag or a certified disparity is evidence; a group whose fairness cannot be
        # certified is only "not certified" (its interval may well contain 0), never significant
        significant=result.claim != "fairness",
        description=_description(spec, label, group, metric, result),
        detail=group.model_dump(mode="json"),
        certified=None if result.claim is None else result.claim == "disparity",
    )


def _summary(
    spec: AuditSpec,
    ctx: ScanContext,
    metric: MetricInputs,
    target: Target,
    out: EngineOutput,
    groups: list[AuditGroup],
) -> CertificationResult:
    cert = spec if isinstance(spec, CertifySpec) else None
    rescale = cert.rescale if cert is not None else False
    n_tested = int(out.tested.sum())
    n_hit = int(out.hit.sum())
    return CertificationResult(
        mode="certify" if cert is not None else "flag",
        metric=metric.name,
        metric_description=f"{metric.words} ({metric.text} among {metric.population_text})",
        rows=ctx.data.n_rows,
        population_rows=int(metric.population.sum()),
        target=target.text,
        theta=out.moments.theta,
        tolerance=float(spec.tolerance) if spec.tolerance is not None else 0.0,
        side=spec.side,
        bound=cert.bound if cert is not None else None,
        alpha=ctx.alpha,
        bootstrap=spec.bootstrap,
        correction=spec.correction if isinstance(spec, FlagSpec) else None,
        p_star=rescale.p_star if rescale is not False else None,
        w0=rescale.w0 if rescale is not False else None,
        critical_values=out.critical_values,
        redraws=out.info.redraws,
        sampling=out.info.path,
        groups_total=len(out.moments.eps),
        groups_tested=n_tested,
        hits=n_hit,
        failed=n_tested - n_hit if cert is not None else 0,
        claim=claim_of(spec),
        groups=groups,
        plot=AuditPlotData(
            group=[g.name for g in groups],
            gap=[g.gap for g in groups],
            lower=[g.lower for g in groups],
            upper=[g.upper for g in groups],
        ),
    )


def build_result(
    spec: AuditSpec,
    ctx: ScanContext,
    metric: MetricInputs,
    target: Target,
    gc: GroupCollection,
    problem: ab.AuditProblem,
    out: EngineOutput,
    min_size: int,
) -> tuple[list[Finding], CertificationResult, list[str]]:
    """Findings (most important first), the scan detail and warnings."""
    status, warnings = _group_status(problem, out, min_size)
    is_finding = finding_mask(spec, out)
    flag = isinstance(spec, FlagSpec)
    order = _order(out)
    groups = [
        _audit_group(gc, out, int(i), str(status[i]), bool(is_finding[i]), flag) for i in order
    ]
    result = _summary(spec, ctx, metric, target, out, groups)
    findings = [_finding(spec, ctx, g, metric, target, result) for g in groups if g.finding]
    if result.groups_tested == 0:
        warnings.append("no group has enough rows to be tested")
    return findings, result, warnings


def run_audit(spec: AuditSpec, ctx: ScanContext) -> ScanResult:
    started = time.perf_counter()
    metric = metric_inputs(spec, ctx)
    if not metric.population.any():
        raise ScanError(
            f"metric {metric.name} is undefined: no row is in its population "
            f"({metric.population_text})",
            field="metric",
        )
    target = target_of(spec, ctx, metric)
    gc, min_size = groups_of(spec, ctx)
    problem = ab.AuditProblem(
        L=metric.L,
        population=metric.population,
        atom=gc.atom,
        atom_groups=gc.atom_groups,
        reference=target.reference,
        theta=target.theta,
        weight=ctx.data.row_weight,  # fractional sample weights (whole ones: rows repeated)
    )
    out = run_engine(spec, ctx, problem, min_size)
    boot_done = time.perf_counter()
    findings, result, warnings = build_result(spec, ctx, metric, target, gc, problem, out, min_size)
    done = time.perf_counter()
    pop = metric.population
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(findings, tested=True, found=result.groups_tested > 0),
        parameters={**spec.model_dump(mode="json"), "alpha": ctx.alpha},
        timing=ScanTiming(
            search_seconds=0.0,
            significance_seconds=boot_done - started,
            total_seconds=done - started,
        ),
        population=Population(
            description=metric.population_text,
            size=round(float(problem.row_weight[pop].sum())),
            observed_rate=float(np.average(metric.L[pop], weights=problem.row_weight[pop])),
            expected_rate=None,
            observed_label=metric.words,
        ),
        findings=findings,
        detail={DETAIL_KEY: result.model_dump(mode="json")},
        warnings=warnings,
    )
