"""Markdown section of a SubROC scan (scan type ``subroc``)."""

from __future__ import annotations

from fairscan.report.models import SubrocResult
from fairscan.report.text import describe_subgroup, fmt_number, fmt_p

_f = fmt_number
_p = fmt_p

MEASURE_TEXT = {"roc_auc": "ROC AUC", "pr_auc": "PR AUC", "ranking_loss": "average ranking loss"}


def render_subroc(result: SubrocResult) -> list[str]:
    name = MEASURE_TEXT.get(result.measure, result.measure)
    lines = [
        f"{name} overall: {_f(result.overall_search)} on the search set "
        f"({result.search_rows} rows), {_f(result.overall_validation)} on the validation set "
        f"({result.validation_rows} rows).",
        "",
    ]
    shown = [p for p in result.patterns if p.reported]
    if shown:
        lines += [
            f"| # | subgroup | {name} (search) | overall | cover | share outcome 0 | score "
            f"| {name} (validation) | p | adjusted p |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in shown:
            val = p.validation
            lines.append(
                f"| {p.rank} | {describe_subgroup(p.subgroup)} | {_f(p.search.measure)} "
                f"| {_f(result.overall_search)} | {p.search.size} "
                f"| {_f(p.search.negative_ratio, 2)} | {p.score:.4g} "
                f"| {_f(val.measure if val else None)} | {_p(p.p_value)} "
                f"| {_p(p.adjusted_p_value)} |"
            )
        lines.append("")
    else:
        lines += ["No pattern survives the significance filter.", ""]
    tested = (
        f"{result.subsets} random subsets per (positives, negatives) pair "
        f"({result.null_distributions} distinct pairs), {result.correction.upper()} correction, "
        f"alpha = {result.alpha:g}"
        if result.subsets
        else "no significance test"
    )
    lines += [
        f"Search: {result.candidates_evaluated} candidate patterns evaluated "
        f"({result.candidates_valid} met the cover and class constraints), {result.pruned} pruned by "
        f"optimistic estimates, {result.skipped} skipped as specialisations of pruned or too small "
        f"patterns; {len(result.patterns)} top candidates tested ({tested}); "
        f"{result.reported} reported.",
        "",
    ]
    return lines
