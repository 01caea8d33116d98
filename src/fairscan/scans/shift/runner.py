"""The ``shift`` runner: validate -> inputs (L, features, tilts) -> engine -> result.

A named tilt is a finding, significant when its simultaneous bound excludes 0 on the harmful
side (a certified disparity under that shift): lower bound > 0 for ``side: lower``, upper bound
< 0 for ``side: upper``, either for ``both``. Without named tilts the scan still reports t* and
the worst-case tilt, with status ``no_finding``.
"""

from __future__ import annotations

import time

import numpy as np

from fairscan.data.netio import watched
from fairscan.engine import rkhs
from fairscan.engine.seeds import ShiftStream, child_seed
from fairscan.errors import FairscanError, ScanError
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
from fairscan.scans.base import ScanContext
from fairscan.scans.metric_inputs import MetricInputs, metric_inputs
from fairscan.scans.shift.models import (
    FeatureRange,
    ShiftResult,
    TiltProfile,
    TiltResult,
    ValidTilt,
    WorstCase,
)
from fairscan.scans.shift.spec import CenterTilt, SampleTilt, ShiftSpec

PROFILE_BINS = 20
LEVELS = np.array([0.1, 0.5, 0.9])


def _features(spec: ShiftSpec, ctx: ScanContext) -> np.ndarray:
    cols = []
    for j, f in enumerate(spec.features):
        values = ctx.data.extra.get(f)
        if values is None:
            raise ScanError(f"feature column {f!r} was not loaded", field=f"features[{j}]")
        if values.dtype == object:
            raise ScanError(
                f"feature column {f!r} is not numeric",
                field=f"features[{j}]",
                hint="the kernel needs numeric features; encode the column as numbers",
            )
        cols.append(values.astype(np.float64))
    return np.stack(cols, axis=1)


def _sample_centers(
    spec: ShiftSpec, tilt: SampleTilt, j: int, ctx: ScanContext, warnings: list[str]
) -> np.ndarray:
    from fairscan.data.load import read_table

    field = f"tilts[{j}].sample"
    try:
        frame = read_table(ctx.spec_dir / tilt.sample)  # relative to the spec file
    except FairscanError as exc:
        raise ScanError(f"tilt {tilt.name!r}: {exc.issues[0].message}", field=field) from exc
    missing = [f for f in spec.features if f not in frame.columns]
    if missing:
        raise ScanError(
            f"tilt {tilt.name!r}: the sample has no column {', '.join(map(repr, missing))}",
            field=field,
        )
    try:
        Z = np.stack(
            [frame[f].cast(float).to_numpy().astype(np.float64) for f in spec.features], axis=1
        )
    except Exception as exc:  # polars cast errors: a non-numeric column
        raise ScanError(
            f"tilt {tilt.name!r}: the sample's features are not all numeric", field=field
        ) from exc
    Z = Z[np.isfinite(Z).all(axis=1)]
    if len(Z) == 0:
        raise ScanError(f"tilt {tilt.name!r}: the sample has no complete row", field=field)
    if len(Z) > spec.exact_max_rows:
        rng = np.random.default_rng(child_seed(ctx.seed, ShiftStream.TILT, j))
        Z = Z[np.sort(rng.choice(len(Z), spec.exact_max_rows, replace=False))]
        warnings.append(
            f"tilt {tilt.name!r}: the sample's kernel mean uses {spec.exact_max_rows} of its "
            "rows, drawn at random (exact_max_rows)"
        )
    return Z


def _target_text(spec: ShiftSpec, metric: MetricInputs) -> str:
    if spec.target == "overall":
        return f"overall mean over {metric.population_text}"
    return f"known value {float(spec.target):g}"


def _weighted(h: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """A tilt's values times the rows' sample weights (mean 1): sums of it are weighted sums."""
    return h if weight is None else h * weight


def _profile(
    spec: ShiftSpec, Xraw: np.ndarray, h: np.ndarray, weight: np.ndarray | None = None
) -> TiltProfile | None:
    """Mean h per bin of the first feature over mean h (h >= 0: a density ratio); ``h`` is
    already times the sample ``weight`` of the rows, which then count in the bins."""
    x = Xraw[:, 0]
    lo_x, hi_x = (float(v) for v in np.quantile(x, [0.01, 0.99]))
    edges = np.linspace(lo_x, hi_x, PROFILE_BINS + 1)
    if not (edges[-1] > edges[0] and h.mean() > 0):
        return None
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, PROFILE_BINS - 1)
    sums = np.bincount(which, weights=h, minlength=PROFILE_BINS)
    counts = np.bincount(which, weights=weight, minlength=PROFILE_BINS)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = sums / counts / h.mean()
    return TiltProfile(
        feature=spec.features[0],
        x=[float(v) for v in (edges[:-1] + edges[1:]) / 2],
        ratio=[finite_or_none(float(r)) for r in ratio],
    )


def _valid_tilt(
    spec: ShiftSpec,
    X: np.ndarray,
    centers: np.ndarray,
    coef: np.ndarray,
    Lc: np.ndarray,
    t_star: float,
    theta: float,
    weight: np.ndarray | None = None,
) -> tuple[ValidTilt | None, np.ndarray | None]:
    """The non-negative tilt nearest the direction (RKHS norm), bounded like a named tilt; its
    values on the rows come back times their sample ``weight``."""
    bw = spec.kernel.bandwidth
    a, iterations = rkhs.nonnegative_projection(centers, coef, bw)
    if not (a > 0).any():
        return None, None
    h = _weighted(rkhs.kernel_apply(X, centers, a, bw), weight)
    norm2 = rkhs.tilt_norm2(centers, a, bw)
    if not h.mean() > 0:
        return None, None
    tb = rkhs.tilt_bound(h, Lc, norm2, t_star, t_star)
    diff = a - coef
    beta_norm2 = rkhs.tilt_norm2(centers, coef, bw)
    distance = float(np.sqrt(max(rkhs.tilt_norm2(centers, diff, bw), 0.0) / beta_norm2))
    return (
        ValidTilt(
            estimate=finite_or_none(tb.estimate),
            metric_under_tilt=finite_or_none(theta + tb.estimate),
            lower=finite_or_none(tb.lower) if spec.side in ("lower", "both") else None,
            upper=finite_or_none(tb.upper) if spec.side in ("upper", "both") else None,
            norm2=norm2,
            effective_sample_size=tb.effective_sample_size,
            centers=int((a > 0).sum()),
            distance=distance,
            projection=(
                "non-negative kernel coefficients closest to the direction's in the RKHS norm "
                f"(projected gradient, {iterations} iterations)"
            ),
        ),
        h,
    )


def _describe_worst(
    spec: ShiftSpec,
    Xraw: np.ndarray,
    X: np.ndarray,
    worst: rkhs.WorstCase,
    boot: rkhs.ShiftBootstrap,
    weight: np.ndarray | None = None,
) -> WorstCase:
    """The direction attaining the bound (an eigen-direction over the whole unit ball, which may
    weigh rows negatively: then it is not a population) and the closest valid tilt. ``weight``:
    the rows' sample weights (mean 1)."""
    bw = spec.kernel.bandwidth
    Lc = boot.L
    coef = worst.coef
    h = rkhs.kernel_apply(X, worst.centers, coef, bw)
    if _weighted(h, weight).sum() < 0:  # an eigenvector's sign is arbitrary: the larger mass
        h, coef = -h, -coef
    scale = float(np.abs(h).max()) if h.size else 0.0
    negative = h < -1e-12 * scale
    is_distribution = not negative.any()
    mean_h = float(_weighted(h, weight).mean())
    min_ratio = finite_or_none(float(h.min() / mean_h)) if mean_h > 0 else None
    hp = _weighted(np.maximum(h, 0.0), weight)
    est = float((hp * Lc).sum() / hp.sum()) if hp.sum() > 0 else None
    ess = float(hp.sum() ** 2 / (hp * hp).sum()) if hp.sum() > 0 else 0.0
    valid, hv = (None, None)
    if hp.sum() > 0:
        valid, hv = _valid_tilt(spec, X, worst.centers, coef, Lc, boot.t_star, boot.theta, weight)
    weights = hv if hv is not None else hp
    ranges = []
    parts = []
    for k, f in enumerate(spec.features):
        x = Xraw[:, k]
        lo, med, hi = rkhs.weighted_quantiles(x, weights, LEVELS)
        dlo, dmed, dhi = (
            np.quantile(x, LEVELS) if weight is None else rkhs.weighted_quantiles(x, weight, LEVELS)
        )
        ranges.append(
            FeatureRange(
                feature=f,
                low=float(lo),
                median=float(med),
                high=float(hi),
                data_low=float(dlo),
                data_median=float(dmed),
                data_high=float(dhi),
            )
        )
        parts.append(f"{f} {lo:.4g} to {hi:.4g} (all rows: {dlo:.4g} to {dhi:.4g})")
    negative_share = float(np.average(negative, weights=weight)) if h.size else 0.0
    if is_distribution:
        head = (
            "The direction that attains the bound (the extreme eigen-direction of the median "
            "bootstrap replicate) is a non-negative reweighting."
        )
    else:
        head = (
            "The direction that attains the bound (the extreme eigen-direction of the median "
            "bootstrap replicate) is not a distribution: it weighs "
            f"{100 * negative_share:.0f}% of the rows negatively (density ratio down to "
            f"{min_ratio:.3g}), so it describes no population."
        )
    if valid is not None:
        bound = ", ".join(
            f"{name} bound {value:+.4g}"
            for name, value in (("lower", valid.lower), ("upper", valid.upper))
            if value is not None
        )
        tail = (
            " The closest valid non-negative tilt puts 80% of its weight (10th to 90th "
            "percentile) at " + "; ".join(parts) + ": the metric's gap under "
            f"it is {valid.estimate:+.4g} ({bound}; effective sample size "
            f"{valid.effective_sample_size:.0f})."
            if valid.estimate is not None
            else ""
        )
    else:
        tail = " It has no non-negative part, so no valid tilt is close to it."
    return WorstCase(
        description=head + tail,
        eigenvalue=worst.eigenvalue,
        replicate=worst.replicate,
        estimate=est,
        effective_sample_size=ess,
        ranges=ranges,
        profile=_profile(spec, Xraw, hv, weight) if hv is not None else None,
        is_distribution=is_distribution,
        negative_share=negative_share,
        min_ratio=min_ratio,
        valid_tilt=valid,
    )


def _tilt_result(
    spec: ShiftSpec,
    tilt: CenterTilt | SampleTilt,
    Z: np.ndarray,
    a: np.ndarray,
    X: np.ndarray,
    boot: rkhs.ShiftBootstrap,
    weight: np.ndarray | None = None,
) -> TiltResult:
    bw = spec.kernel.bandwidth
    h = _weighted(rkhs.kernel_apply(X, Z, a, bw), weight)
    norm2 = rkhs.tilt_norm2(Z, a, bw)
    tb = rkhs.tilt_bound(h, boot.L, norm2, boot.t_star, boot.t_star)
    lower = tb.lower if spec.side in ("lower", "both") else None
    upper = tb.upper if spec.side in ("upper", "both") else None
    no_mass = not (tb.mean_h > 0 and np.isfinite(tb.estimate))
    certified = not no_mass and (
        (lower is not None and lower > 0) or (upper is not None and upper < 0)
    )
    status = "no_mass" if no_mass else ("degenerate" if boot.degenerate else "ok")
    return TiltResult(
        name=tilt.name,
        kind="centers" if isinstance(tilt, CenterTilt) else "sample",
        centers=len(Z),
        estimate=finite_or_none(tb.estimate),
        metric_under_tilt=finite_or_none(boot.theta + tb.estimate),
        lower=None if no_mass else finite_or_none(lower),
        upper=None if no_mass else finite_or_none(upper),
        norm2=norm2,
        mean_h=tb.mean_h,
        effective_sample_size=tb.effective_sample_size,
        certified=certified,
        status=status,
    )


def _statistic(spec: ShiftSpec, t: TiltResult) -> Statistic:
    if spec.side == "lower":
        return Statistic(name="lower_bound", value=t.lower)
    if spec.side == "upper":
        return Statistic(name="upper_bound", value=t.upper)
    return Statistic(name="gap", value=t.estimate)  # two-sided: the estimate, bounds in detail


def _description(t: TiltResult, result: ShiftResult) -> str:
    level = f"{100 * (1 - result.alpha):g}%"
    head = f"Shifted toward {t.name!r} (effective sample size {t.effective_sample_size:.0f} of {result.rows})"
    if t.estimate is None or t.metric_under_tilt is None:
        return f"{head}, the tilt has no weight on the audited rows, so it cannot be bounded."
    bounds = []
    if t.lower is not None:
        bounds.append(f"lower bound {t.lower:+.3f}")
    if t.upper is not None:
        bounds.append(f"upper bound {t.upper:+.3f}")
    verdict = (
        "a certified disparity under this shift"
        if t.certified
        else "no disparity can be certified under this shift"
    )
    return (
        f"{head}, the {result.metric_words} would be {t.metric_under_tilt:.3f} vs "
        f"{result.theta:.3f} ({result.target}), a gap of {t.estimate:+.3f} with simultaneous "
        f"{level} {' and '.join(bounds)}: {verdict}."
    )


def _finding(spec: ShiftSpec, t: TiltResult, result: ShiftResult) -> Finding:
    detail: dict[str, float | None] = {"estimate": t.estimate}
    if spec.side in ("lower", "both"):
        detail["lower"] = t.lower
    if spec.side in ("upper", "both"):
        detail["upper"] = t.upper
    detail["effective_sample_size"] = t.effective_sample_size
    ess = round(t.effective_sample_size)
    return Finding(
        subgroup=None,
        group=t.name,
        label=t.name,
        size=ess,
        statistic=_statistic(spec, t),
        effect=Effect(
            metric=result.metric_words,
            inside=t.metric_under_tilt,
            reference=result.theta,
            reference_name=result.target,
            inside_count=ess,
            reference_count=result.rows if spec.target == "overall" else None,
        ),
        p_value=None,
        adjusted_p_value=None,
        significant=t.certified,
        description=_description(t, result),
        detail=detail,
    )


def run_shift(spec: ShiftSpec, ctx: ScanContext) -> ScanResult:
    # The kernel sums are dense BLAS work; the CLI starts BLAS single-threaded (its spinning
    # threads cost every other run start-up time), so give this scan the run's workers.
    from threadpoolctl import threadpool_limits

    if spec.subgroups:
        return _run_given(spec, ctx)
    with threadpool_limits(limits=max(1, ctx.workers), user_api="blas"):
        return _run_shift(spec, ctx)


# 1 / (2 bandwidth^2) must be a finite float64 (bandwidths below ~1e-154 square to 0)
MIN_BANDWIDTH = 1e-150


# feature values beyond this magnitude overflow when squared (distances, variances)
MAX_FEATURE_MAGNITUDE = 1e150


def _check_scale(spec: ShiftSpec, X: np.ndarray) -> None:
    """A :class:`ScanError` for a bandwidth or feature values whose kernel cannot be computed
    in float64 (squares that overflow or vanish)."""
    if spec.kernel.bandwidth < MIN_BANDWIDTH:
        raise ScanError(
            f"the kernel bandwidth {spec.kernel.bandwidth:g} is too small to compute with "
            f"(below {MIN_BANDWIDTH:g}, its square is 0 in floating point)",
            field="kernel.bandwidth",
            hint="use a bandwidth of the features' scale (about 0.1 to 10 with standardize: true)",
        )
    for k in np.flatnonzero(np.abs(X).max(axis=0) > MAX_FEATURE_MAGNITUDE):
        raise ScanError(
            f"feature {spec.features[k]!r} has values beyond {MAX_FEATURE_MAGNITUDE:g}, too "
            "large to compute distances with (their squares overflow floating point)",
            field="features",
            hint="rescale the column (e.g. to thousands or a logarithm) or drop the outliers",
        )


def _check_cost(
    spec: ShiftSpec, ctx: ScanContext, n: int, d: int, exact: bool, centers: list[int]
) -> str | None:
    """Refuse a scan beyond the memory budget or the time bound; a warning when it will take
    over a minute. ``centers``: each named tilt's number of centers."""
    from fairscan.data.load import available_memory
    from fairscan.scans.shift.cost import check_shift_cost, shift_cost

    cost = shift_cost(n, d, spec.bootstrap, spec.rank, exact, ctx.workers, centers)
    return check_shift_cost(
        cost,
        available_memory(),
        n=n,
        exact=exact,
        bootstrap=spec.bootstrap,
        rank=spec.rank,
        features=d,
        centers=sum(centers),
    )


def _tilt_centers(
    spec: ShiftSpec, ctx: ScanContext, warnings: list[str]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each named tilt's centers (raw feature values) and their weights (summing to 1)."""
    out = []
    for j, tilt in enumerate(spec.tilts):
        if isinstance(tilt, CenterTilt):
            Z = np.array([[c[f] for f in spec.features] for c in tilt.centers], dtype=np.float64)
            a = np.asarray(tilt.weights if tilt.weights is not None else np.ones(len(Z)), float)
        else:
            Z = _sample_centers(spec, tilt, j, ctx, warnings)
            a = np.ones(len(Z))
        out.append((Z, a / a.sum()))
    return out


def _run_shift(spec: ShiftSpec, ctx: ScanContext) -> ScanResult:
    started = time.perf_counter()
    warnings: list[str] = []
    metric = metric_inputs(spec, ctx)
    Xall = _features(spec, ctx)
    pop = metric.population.copy()
    complete = np.isfinite(Xall).all(axis=1)
    if (pop & ~complete).any():
        warnings.append(
            f"{int((pop & ~complete).sum())} population row(s) with a missing feature are left out"
        )
    pop &= complete
    if not pop.any():
        raise ScanError(
            f"metric {metric.name} is undefined: no row with complete features is in its "
            f"population ({metric.population_text})",
            field="metric",
        )
    Xraw = Xall[pop]
    L = metric.L[pop].astype(np.float64)
    n, d = Xraw.shape
    # fractional sample weights (columns.weight), rescaled to mean 1 over the audited rows
    rows_weight = ctx.data.row_weight
    weight = None if rows_weight is None else rows_weight[pop] * (n / rows_weight[pop].sum())
    # the population's size: its rows, or the sum of their weights (every row's weight rescaled
    # to the data rows' count in fairscan.data.weights)
    size = n if rows_weight is None else round(float(rows_weight[pop].sum()))
    _check_scale(spec, Xraw)
    mu = np.zeros(d)
    sd = np.ones(d)
    if spec.kernel.standardize:
        # without weights np.average is the plain mean, and this the plain SD, to the bit
        mu = np.average(Xraw, axis=0, weights=weight)
        sd = np.sqrt(np.average((Xraw - mu) ** 2, axis=0, weights=weight))
        for k in np.flatnonzero(sd <= 0):
            warnings.append(f"feature {spec.features[k]!r} is constant: not rescaled")
        sd = np.where(sd > 0, sd, 1.0)
    X = (Xraw - mu) / sd
    bw = spec.kernel.bandwidth
    exact = n <= spec.exact_max_rows
    # the tilts' centers first (a sample file's rows): their projections count in the cost
    centers = _tilt_centers(spec, ctx, warnings)
    slow = _check_cost(spec, ctx, n, d, exact, [len(Z) for Z, _ in centers])
    if slow is not None:
        warnings.append(slow)
        ctx.progress.start(f"shift {slow.split(';')[0]}", None)  # said before the work starts

    def kernel_work() -> tuple[rkhs.Nystroem | None, rkhs.ShiftBootstrap]:
        approx = (
            None
            if exact
            else rkhs.nystroem(X, spec.rank, bw, child_seed(ctx.seed, ShiftStream.NYSTROEM))
        )
        boot = rkhs.shift_bootstrap(
            X,
            L,
            bandwidth=bw,
            B=spec.bootstrap,
            alpha=ctx.alpha,
            side=spec.side,
            seed=child_seed(ctx.seed, ShiftStream.BOOTSTRAP),
            theta=None if spec.target == "overall" else float(spec.target),
            approx=approx,
            weight=weight,
        )
        return approx, boot

    # dense kernel algebra holds the interpreter for seconds per call: run in a watched thread,
    # so Ctrl-C and SIGTERM end the run within the 2 s every phase promises (issue 24)
    approx, boot = watched(kernel_work, remote=False)
    boot_done = time.perf_counter()
    if boot.degenerate:
        warnings.append(
            "the metric is constant (the same value on every row of its population): no shift "
            "can change it, so the bounds equal the estimates"
        )
    worst = None
    if boot.worst is not None:
        worst = _describe_worst(spec, Xraw, X, boot.worst, boot, weight)
    tilts = []
    for tilt, (Z, a) in zip(spec.tilts, centers, strict=True):
        result_t = _tilt_result(spec, tilt, (Z - mu) / sd, a, X, boot, weight)
        if result_t.status == "no_mass":
            warnings.append(
                f"tilt {tilt.name!r} has (numerically) no weight on the audited rows; widen the "
                "bandwidth or move its centers"
            )
        tilts.append(result_t)
    metric_words = metric.words
    result = ShiftResult(
        metric=metric.name,
        metric_words=metric_words,
        metric_description=f"{metric.words} ({metric.text} among {metric.population_text})",
        rows=n,
        target=_target_text(spec, metric),
        theta=boot.theta,
        algorithm=8 if spec.target == "overall" else 5,
        side=spec.side,
        alpha=ctx.alpha,
        bootstrap=spec.bootstrap,
        t_star=boot.t_star,
        exact=exact,
        rank=n if exact else (approx.rank if approx is not None else n),
        bandwidth=bw,
        standardize=spec.kernel.standardize,
        features=list(spec.features),
        degenerate=boot.degenerate,
        worst_case=worst,
        tilts=tilts,
    )
    order = sorted(range(len(tilts)), key=lambda i: not tilts[i].certified)
    findings = [_finding(spec, tilts[i], result) for i in order]
    done = time.perf_counter()
    return ScanResult(
        id=spec.id,
        type=spec.type,
        status=scan_status(findings, tested=True, found=bool(tilts)),
        parameters={**spec.model_dump(mode="json"), "alpha": ctx.alpha},
        timing=ScanTiming(
            search_seconds=0.0,
            significance_seconds=boot_done - started,
            total_seconds=done - started,
        ),
        population=Population(
            description=metric.population_text,
            size=size,
            observed_rate=float(np.average(L, weights=weight)),
            expected_rate=None,
            observed_label=metric.words,
        ),
        findings=findings,
        detail=result.model_dump(mode="json"),
        warnings=warnings,
    )


# --- given subgroups (issue 26) ---------------------------------------------------------------


def _run_given(spec: ShiftSpec, ctx: ScanContext) -> ScanResult:
    """Each given subgroup's gap (the metric's mean over the subgroup minus theta: the tilt
    that is the subgroup's indicator) with the scan's bootstrap of that one group: no
    supremum over tilts, so no simultaneous (search) correction; the kernel is not used."""
    from fairscan.data.labels import subgroup_label
    from fairscan.data.subgroups import resolve_subgroups, subgroup_rows
    from fairscan.engine.fixed import GAP_BOOTSTRAP, gap_bootstrap, gap_p_value, gap_power
    from fairscan.scans.given import given_finding, given_result

    started = time.perf_counter()
    metric = metric_inputs(spec, ctx)
    pop = metric.population
    L = metric.L[pop].astype(np.float64)
    codes = ctx.data.codes[pop]
    theta = None if spec.target == "overall" else float(spec.target)
    target = _target_text(spec, metric)
    # fractional sample weights (columns.weight) of the population's rows
    weight = None if ctx.data.row_weight is None else ctx.data.row_weight[pop]
    attributes = ctx.data.attributes
    findings = []
    for k, subgroup in enumerate(resolve_subgroups(spec.subgroups or [], attributes)):
        inside = subgroup_rows(subgroup, attributes, codes)
        label = subgroup_label(subgroup, attributes)
        if not inside.any():
            raise ScanError(
                f"the given subgroup {label} has no row among {metric.population_text}",
                field=f"subgroups[{k}]",
            )
        boot = gap_bootstrap(
            L,
            inside,
            theta=theta,
            resamples=spec.bootstrap,
            seed=child_seed(ctx.seed, ShiftStream.FIXED, k),
            weight=weight,
        )
        p_value, exceed = gap_p_value(boot, spec.side)
        size = int(inside.sum()) if weight is None else round(float(weight[inside].sum()))
        finding = Finding(
            subgroup=subgroup,
            label=label,
            size=size,
            statistic=Statistic(name="gap", value=boot.estimate),
            effect=Effect(
                metric=metric.words,
                inside=boot.theta + boot.estimate,
                reference=boot.theta,
                reference_name=target,
                inside_count=size,
                reference_count=int(L.shape[0]) if theta is None else None,
            ),
            p_value=None,
            adjusted_p_value=None,
            significant=None,
            description=(
                f"The {size} rows with {label} have a {metric.words} of "
                f"{boot.theta + boot.estimate:.3f} vs {boot.theta:.3f} ({target}), a gap of "
                f"{boot.estimate:+.3f} (side {spec.side})."
            ),
            detail={"estimate": boot.estimate, "theta": boot.theta},
        )
        effect = ctx.detect[k] if k < len(ctx.detect) else None
        power = None
        if effect is not None and np.isfinite(effect):
            power = (gap_power(boot, spec.side, float(effect), ctx.alpha), effect, effect)
        findings.append(
            given_finding(
                finding,
                subgroup=subgroup,
                attributes=attributes,
                index=k,
                p_value=p_value,
                alpha=ctx.alpha,
                test=GAP_BOOTSTRAP,
                effect_size=boot.estimate,
                replicates=int(boot.centred.shape[0]),
                exceed_count=exceed,
                power=power,
                power_method="the bootstrap law moved to the baseline gap (location shift: an approximation)",
            )
        )
    done = time.perf_counter()
    result = ScanResult(
        id=spec.id,
        type=spec.type,
        status="no_finding",
        parameters={**spec.model_dump(mode="json"), "alpha": ctx.alpha},
        timing=ScanTiming(
            search_seconds=0.0, significance_seconds=done - started, total_seconds=done - started
        ),
        population=Population(
            description=metric.population_text,
            size=int(L.shape[0]),
            observed_rate=float(L.mean()) if L.size else None,
            expected_rate=None,
            observed_label=metric.words,
        ),
        findings=[],
    )
    return given_result(result, findings, [GAP_BOOTSTRAP] * len(findings))
