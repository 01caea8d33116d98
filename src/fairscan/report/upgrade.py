"""Read old reports: convert a schema_version 1 JSON report to the version 2 contract.

``audit diff`` and ``audit run --baseline`` compare findings; a version 1 report kept its
SubROC patterns and certify/flag groups outside ``findings``. :func:`upgrade_report` moves every
v1 result that counted as a finding into ``scans[].findings`` with the v2 core keys and keeps
the v1 type-specific blocks under ``detail``:

* subset-scan findings (fpr/tpr/bias/ijdi/cbs): statistic ``penalised_score``; effect = observed
  rate inside vs outside the subgroup (CBS: protected vs comparable non-protected rows);
  ``score``, ``llr``, ``q``, ``penalty_cost``, the counts, ``null_quantile``, ``ijdi`` and
  ``cbs`` go to the finding's ``detail``;
* reported SubROC patterns: statistic ``interestingness``, the adjusted p-value, effect = the
  measure on the search set vs everyone in it; covers, scores and ROC points in ``detail``;
* certify/flag groups that were hits (flag: flagged; certify with claim ``disparity``:
  certified; claim ``fairness``: not certified; status ok or constant): one finding per group,
  with its subgroup (intersection groups) or, for a named filter or interval group, ``group`` =
  its name (as the v2 scans report them); the v1 group (marked ``finding``) is its ``detail``;
* the scan-level ``critical_value``, ``subroc``, ``ijdi``, ``certification`` and ``cbs`` blocks
  go to ``scans[].detail`` under the same names (SubROC patterns and IJDI mitigation steps get
  the ``label`` the v2 blocks carry).

Works on plain JSON data (no v1 model is needed); a version 2 report is returned unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

from fairscan.data.labels import subgroup_label
from fairscan.report.models import REPORT_SCHEMA_VERSION

V1_SCAN_BLOCKS = ("critical_value", "subroc", "ijdi", "certification", "cbs")
V1_FINDING_EXTRAS = (
    "score",
    "llr",
    "penalty_cost",
    "observed_count",
    "expected_count",
    "q",
    "null_quantile",
    "ijdi",
    "cbs",
)
SUBROC_FINDING_DETAIL = (
    "rank",
    "weighted_score",
    "relative_score",
    "optimistic_estimate",
    "search",
    "validation",
    "validation_statistic",
    "roc",
)
MEASURE_TEXT = {"roc_auc": "ROC AUC", "pr_auc": "PR AUC", "ranking_loss": "average ranking loss"}
RATE_TEXT = {"fpr_scan": "false positive rate", "tpr_scan": "true positive rate"}

Json = dict[str, Any]


def upgrade_report(data: dict[str, Any]) -> dict[str, Any]:
    """A schema_version 1 report (parsed JSON) as a version 2 report; v2 input is unchanged."""
    version = data.get("schema_version", 1)
    if version != 1:
        return data
    out = copy.deepcopy(data)
    out["scans"] = [_scan(scan) for scan in out.get("scans", [])]
    out["schema_version"] = REPORT_SCHEMA_VERSION
    verdict = out.get("verdict")
    if isinstance(verdict, dict):
        verdict["significant_findings"] = sum(
            1 for scan in out["scans"] for f in scan["findings"] if f.get("significant") is True
        )
    return out


def _scan(scan: Json) -> Json:
    blocks = {key: scan.pop(key, None) for key in V1_SCAN_BLOCKS}
    population = scan.get("population")
    cbs_runs = len((blocks["cbs"] or {}).get("runs") or [])
    findings = [_subset_finding(f, scan["type"], population, cbs_runs) for f in scan["findings"]]
    if blocks["subroc"] is not None:
        findings += _subroc_findings(blocks["subroc"])
    if blocks["certification"] is not None:
        findings += _group_findings(blocks["certification"])
    for step in (blocks["ijdi"] or {}).get("mitigation") or []:
        step.setdefault("label", subgroup_label(step["subgroup"]))
    scan["findings"] = findings
    scan["detail"] = {key: value for key, value in blocks.items() if value is not None}
    return scan


def _subset_finding(f: Json, scan_type: str, population: Json | None, cbs_runs: int) -> Json:
    """A v1 MDSS finding (fpr/tpr/bias/ijdi/cbs)."""
    size = int(f["size"])
    cbs = f.get("cbs")
    ijdi = f.get("ijdi")
    if cbs is not None:
        effect = {
            "metric": cbs["metric"],
            "inside": cbs.get("protected_metric"),
            "reference": cbs.get("comparison_metric"),
            "reference_name": "non-protected rows in the same subgroup",
            "inside_count": int(cbs.get("protected_rows", size)),
            "reference_count": cbs.get("comparison_rows"),
            "expected": cbs.get("protected_expected"),
        }
    else:
        if ijdi is not None:
            metric = ijdi["rate_name"]
        elif scan_type in RATE_TEXT:
            metric = RATE_TEXT[scan_type]
        elif population is not None:
            metric = f"rate of {population['observed_label']}"
        else:
            metric = "observed rate"
        outside = None if population is None else int(population["size"]) - size
        effect = {
            "metric": metric,
            "inside": f.get("observed_rate"),
            "reference": f.get("outside_rate"),
            "reference_name": "outside the subgroup",
            "inside_count": size,
            "reference_count": outside,
            "expected": f.get("expected_rate"),
        }
    p = f.get("p_value")
    adjusted = (
        min(1.0, p * cbs_runs) if cbs is not None and cbs_runs > 1 and p is not None else None
    )
    subgroup = f.get("subgroup") or {}
    return {
        "subgroup": subgroup,
        "group": None,
        "label": subgroup_label(subgroup),
        "size": size,
        "statistic": {"name": "penalised_score", "value": f.get("score")},
        "effect": effect,
        "p_value": p,
        "adjusted_p_value": adjusted,
        "significant": f.get("significant"),
        "description": f.get("description", ""),
        "detail": {key: f[key] for key in V1_FINDING_EXTRAS if f.get(key) is not None},
    }


def _subroc_findings(result: Json) -> list[Json]:
    """The reported patterns of a v1 SubROC result."""
    measure = MEASURE_TEXT.get(result["measure"], result["measure"])
    findings = []
    for pattern in result.get("patterns", []):
        pattern.setdefault("label", subgroup_label(pattern["subgroup"]))
        if not pattern.get("reported"):
            continue
        search = pattern["search"]
        subgroup = pattern["subgroup"]
        findings.append(
            {
                "subgroup": subgroup,
                "group": None,
                "label": subgroup_label(subgroup),
                "size": int(search["size"]),
                "statistic": {"name": "interestingness", "value": pattern.get("score")},
                "effect": {
                    "metric": measure,
                    "inside": search.get("measure"),
                    "reference": result.get("overall_search"),
                    "reference_name": "everyone in the search set",
                    "inside_count": int(search["size"]),
                    "reference_count": result.get("search_rows"),
                    "expected": None,
                },
                "p_value": pattern.get("p_value"),
                "adjusted_p_value": pattern.get("adjusted_p_value"),
                "significant": pattern.get("significant"),
                "description": pattern.get("description", ""),
                "detail": {key: pattern.get(key) for key in SUBROC_FINDING_DETAIL},
            }
        )
    return findings


def _is_hit(cert: Json, group: Json) -> bool:
    if group.get("status") not in ("ok", "constant"):
        return False
    if cert["mode"] == "flag":
        return group.get("flagged") is True
    if cert.get("claim") == "fairness":
        return group.get("certified") is False
    return group.get("certified") is True


def _group_statistic(cert: Json, group: Json) -> Json:
    if cert["mode"] == "certify" and cert.get("bound") in ("lower", "upper"):
        return {"name": f"{cert['bound']}_bound", "value": group.get(cert["bound"])}
    return {"name": "gap", "value": group.get("gap")}


def _group_description(cert: Json, group: Json, label: str) -> str:
    est = group.get("estimate")
    gap = group.get("gap")
    values = (
        f" ({'n/a' if est is None else f'{est:.3f}'} vs target {cert['theta']:.3f}, "
        f"gap {'n/a' if gap is None else f'{gap:+.3f}'})"
    )
    if cert["mode"] == "flag":
        what = f"flagged at FDR {cert['alpha']:g}"
    elif cert.get("claim") == "fairness":
        what = f"cannot be certified within tolerance {cert['tolerance']:+g}"
    else:
        what = f"certified ({cert.get('bound')} bound) at {100 * (1 - cert['alpha']):g}%"
    return f"{label}: {cert['metric_description']}{values}; {what}."


def _group_findings(cert: Json) -> list[Json]:
    """The hits of a v1 certify/flag result, one finding per group."""
    known_target = str(cert.get("target", "")).startswith("known value")
    findings = []
    for group in cert.get("groups", []):
        group["finding"] = _is_hit(cert, group)
        if not group["finding"]:
            continue
        subgroup = group.get("subgroup") or None
        label = subgroup_label(subgroup) if subgroup else group["name"]
        findings.append(
            {
                "subgroup": subgroup,
                "group": None if subgroup else group["name"],
                "label": label,
                "size": int(group["size"]),
                "statistic": _group_statistic(cert, group),
                "effect": {
                    "metric": cert["metric_description"],
                    "inside": group.get("estimate"),
                    "reference": cert.get("theta"),
                    "reference_name": f"target: {cert.get('target')}",
                    "inside_count": int(group["size"]),
                    "reference_count": None if known_target else cert.get("population_rows"),
                    "expected": None,
                },
                "p_value": group.get("p_value"),
                "adjusted_p_value": group.get("adjusted_p_value"),
                "significant": True,
                "description": _group_description(cert, group, label),
                "detail": dict(group),
            }
        )
    return findings
