"""Build v2 reports (findings, scans, whole reports) for the renderer tests."""

from __future__ import annotations

from typing import Any

from fairscan.report.models import (
    AuditReport,
    Effect,
    Environment,
    Finding,
    NullDistribution,
    Population,
    Provenance,
    ScanResult,
    ScanTiming,
    Statistic,
    scan_status,
)
from fairscan.report.verdict import build_verdict

TIMING = ScanTiming(search_seconds=0.01, significance_seconds=2.0, total_seconds=2.01)


def finding(
    subgroup: dict[str, list[str]] | None = None,
    *,
    label: str | None = None,
    group: str | None = None,
    size: int = 349,
    statistic: tuple[str, float | None] = ("penalised_score", 95.82),
    metric: str = "false positive rate",
    inside: float | None = 232 / 349,
    reference: float | None = 0.2608,
    reference_name: str = "the other true negatives",
    reference_count: int | None = 3014,
    expected: float | None = 0.3027,
    p_value: float | None = 0.001,
    adjusted_p_value: float | None = None,
    significant: bool | None = None,
    description: str | None = None,
    detail: dict[str, Any] | None = None,
) -> Finding:
    if subgroup is None and group is None:
        subgroup = {"priors": ["Over 5"]}
    if label is None:
        label = (
            group
            if subgroup is None
            else " and ".join(
                f"{k} = {v[0]}" if len(v) == 1 else f"{k} in {{{', '.join(v)}}}"
                for k, v in (subgroup or {}).items()
            )
        )
    if significant is None and p_value is not None:
        significant = (adjusted_p_value if adjusted_p_value is not None else p_value) <= 0.05
    return Finding(
        subgroup=subgroup,
        group=group,
        label=label or "everyone",
        size=size,
        statistic=Statistic(name=statistic[0], value=statistic[1]),
        effect=Effect(
            metric=metric,
            inside=inside,
            reference=reference,
            reference_name=reference_name,
            inside_count=size,
            reference_count=reference_count,
            expected=expected,
        ),
        p_value=p_value,
        adjusted_p_value=adjusted_p_value,
        significant=significant,
        description=description or f"Among true negatives, the {size} rows with {label} differ.",
        detail=detail or {},
    )


def null(replicates: int = 999, scores: list[float] | None = None) -> NullDistribution:
    return NullDistribution(
        replicates=replicates,
        alpha=0.05,
        quantile=8.1,
        mean=5.0,
        max=12.0,
        exceed_count=0,
        scores=scores if scores is not None else [1.0, 2.0],
    )


def scan(
    findings: list[Finding],
    *,
    id: str = "fpr",
    type: str = "fpr_scan",
    null_distribution: NullDistribution | None = None,
    population: Population | None = None,
    detail: dict[str, Any] | None = None,
    tested: bool = True,
    error: str | None = None,
    warnings: list[str] | None = None,
) -> ScanResult:
    return ScanResult(
        id=id,
        type=type,
        status="error" if error else scan_status(findings, tested=tested),
        parameters={"penalty": 1.0},
        timing=TIMING,
        population=population,
        findings=findings,
        null_distribution=null_distribution,
        detail=detail or {},
        warnings=warnings or [],
        error=error,
    )


def population() -> Population:
    return Population(
        description="true negatives (y = 0)",
        size=3363,
        observed_rate=0.3027,
        expected_rate=0.3027,
        observed_label="recommended positive",
    )


def report(
    *scans: ScanResult,
    name: str = "compas-fpr",
    description: str | None = None,
    attributes: dict[str, list[str]] | None = None,
) -> AuditReport:
    return AuditReport(
        name=name,
        description=description,
        verdict=build_verdict(list(scans)),
        provenance=Provenance(
            tool_version="0.1.0",
            spec_path="s.audit.yaml",
            spec_sha256="a" * 64,
            data_path="d.csv",
            data_sha256="b" * 64,
            data_rows=7214,
            rows_after_filter=6172,
            filter=None,
            seed=0,
            seed_entropy="0",
            utc_time="2026-11-22T00:00:00Z",
            finished_utc_time="2026-11-22T00:00:01Z",
            total_seconds=1.0,
            workers=2,
            parameters={},
            environment=Environment(python="3.11", platform="x", packages={}),
        ),
        attributes=attributes or {"priors": ["None", "1 to 5", "Over 5"]},
        scans=list(scans),
    )
