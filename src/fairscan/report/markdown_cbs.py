"""Markdown section of a Conditional Bias Scan (scan type ``cbs``)."""

from __future__ import annotations

from fairscan.report.models import CbsCalibration, CbsScanInfo
from fairscan.report.text import fmt_number, fmt_p

_f = fmt_number
_p = fmt_p


def _calibration(title: str, cal: CbsCalibration) -> list[str]:
    lines = [
        f"{title}: {cal.model}, fitted on {cal.fitted_on} ({cal.rows} rows); "
        f"Brier score {cal.brier:.4f}.",
        "",
        "| predicted in | rows | weight | mean predicted | mean observed |",
        "|---|---:|---:|---:|---:|",
    ]
    for b in cal.bins:
        lines.append(
            f"| [{b.low:.1f}, {b.high:.1f}) | {b.rows} | {b.weight:.1f} | {b.mean_predicted:.3f} "
            f"| {b.mean_observed:.3f} |"
        )
    lines.append("")
    return lines


def render_cbs(info: CbsScanInfo) -> list[str]:
    lines = [
        f"CBS cell: {info.cell}; direction {info.direction}; {info.likelihood} score; "
        f"I-hat from {info.expectations}.",
        "",
        "| protected class | status | scanned | comparison | J(S*) | F(S*) | p-value | alpha |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in info.runs:
        lines.append(
            f"| {run.protected} | {run.status.replace('_', ' ')} | {run.scanned_rows} "
            f"| {run.comparison_rows} | {_f(run.score)} | {_f(run.llr)} | {_p(run.p_value)} "
            f"| {run.alpha:.4g} |"
        )
    lines.append("")
    for run in info.runs:
        if run.reason:
            lines += [f"{run.protected}: not auditable: {run.reason}.", ""]
        if run.sigma is not None:
            lines += [
                f"{run.protected}: sigma = {run.sigma:.4f}, mean Delta = {_f(run.mean_delta, 4)} "
                "(a non-zero mean can be a Jensen gap, not bias; the permutation test calibrates it).",
                "",
            ]
        if run.propensity_calibration is not None:
            lines += _calibration(f"{run.protected}: propensity model", run.propensity_calibration)
        if run.outcome_calibration is not None:
            lines += _calibration(f"{run.protected}: outcome model", run.outcome_calibration)
    return lines
