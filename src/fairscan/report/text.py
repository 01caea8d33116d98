"""Plain-language phrasing shared by the scans (finding descriptions) and the renderers."""

from __future__ import annotations

from fairscan.report.models import Finding

# Statistic identifiers (``findings[].statistic.name``) in plain words; others: "_" -> " ".
STATISTIC_WORDS = {
    "penalised_score": "score",
    "interestingness": "interestingness",
    "gap": "gap",
    "lower_bound": "lower bound",
    "upper_bound": "upper bound",
}


def fmt_number(x: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """Fixed-point number for reports; ``signed`` shows a + on positive gaps; None -> n/a."""
    if x is None:
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def fmt_value(x: float | None, missing: str = "n/a") -> str:
    """A statistic or metric of any scale: 2 decimals from 1 up, 4 significant digits below."""
    if x is None:
        return missing
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.4g}"


def fmt_p(p: float | None, missing: str = "not tested") -> str:
    """A p-value: four decimals, scientific below 1e-4; ``missing`` when there is none."""
    if p is None:
        return missing
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def percent(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{100.0 * x:.{digits}f}%"


def statistic_words(name: str) -> str:
    """``penalised_score`` -> "score", ``lower_bound`` -> "lower bound"."""
    return STATISTIC_WORDS.get(name, name.replace("_", " "))


def significance_words(significant: bool | None) -> str:
    return "not tested" if significant is None else ("yes" if significant else "no")


def headline_p(finding: Finding) -> float | None:
    """The p-value a summary shows: the adjusted one when there is one."""
    return finding.adjusted_p_value if finding.adjusted_p_value is not None else finding.p_value
