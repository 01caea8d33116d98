"""Plain-language phrasing shared by the scans (finding descriptions) and the renderers."""

from __future__ import annotations

from fairscan.report.models import Finding, ScanResult

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


# The smallest p-value printed as a number. Below it (and at 0, where a float underflowed) the
# text is "< 1e-300": a positive p-value is never printed as 0. The JSON keeps the number; an
# exact tail too small for a float is stored as the smallest positive one (fairscan.engine.fixed).
P_TEXT_FLOOR = 1e-300


def fmt_p(p: float | None, missing: str = "not tested", *, precise: bool = False) -> str:
    """The one home of a p-value's text: four decimals, scientific below 1e-4 (``precise``: four
    significant digits, as a finding's sentence gives them), ``< 1e-300`` below the floor;
    ``missing`` when there is none."""
    if p is None:
        return missing
    if p < P_TEXT_FLOOR:
        return f"< {P_TEXT_FLOOR:g}"
    if precise:
        return f"{p:.4g}"
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def p_equals(
    p: float | None, missing: str = "not tested", *, name: str = "p", precise: bool = False
) -> str:
    """``p = 0.0123``, ``p < 1e-300`` below the floor (never ``p = < ...``), or ``missing``."""
    if p is None:
        return missing
    text = fmt_p(p, precise=precise)
    return f"{name} {text}" if text.startswith("<") else f"{name} = {text}"


def compared(observed: float | None, reference: float | None) -> int:
    """What the data show: +1 when ``observed`` is above ``reference``, -1 below, 0 when they
    are equal (to 1e-9 relative) or either is missing. Sentences take their direction words
    ("under-estimated", "above", "more often") from this, never from the scan's spec: a given
    subgroup can deviate the other way from the direction a scan searches (issue 34)."""
    if observed is None or reference is None:
        return 0
    if abs(observed - reference) <= 1e-9 * max(1.0, abs(observed), abs(reference)):
        return 0
    return 1 if observed > reference else -1


def percent(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{100.0 * x:.{digits}f}%"


def statistic_words(name: str) -> str:
    """``penalised_score`` -> "score", ``lower_bound`` -> "lower bound"."""
    return STATISTIC_WORDS.get(name, name.replace("_", " "))


def significance_words(significant: bool | None) -> str:
    return "not tested" if significant is None else ("yes" if significant else "no")


def finding_significance(finding: Finding) -> str:
    """A finding's significance in words: ``not certified`` for a group certify could not
    certify (never "significant": its interval may contain 0), else yes / no / not tested."""
    if finding.certified is False:
        return "not certified"
    return significance_words(finding.significant)


def findings_tally(scan: ScanResult) -> str:
    """``3 findings, 1 significant``, with ``, 2 not certified`` where certify could not certify
    groups (counted apart: they are not significant findings)."""
    noun = "finding" if len(scan.findings) == 1 else "findings"
    text = f"{len(scan.findings)} {noun}, {scan.significant_count()} significant"
    uncertified = scan.not_certified_count()
    return text + (f", {uncertified} not certified" if uncertified else "")


def headline_p(finding: Finding) -> float | None:
    """The p-value a summary shows: the adjusted one when there is one."""
    return finding.adjusted_p_value if finding.adjusted_p_value is not None else finding.p_value


def p_floor_note(p: float | None, replicates: int | None) -> str | None:
    """Why a p-value cannot be smaller: ``None`` unless ``p`` is the randomization test's
    floor 1 / (replicates + 1), the value a score above every null replicate gets."""
    if p is None or not replicates or replicates < 1:
        return None
    floor = 1.0 / (replicates + 1)
    if abs(p - floor) > 1e-9 * floor:
        return None
    return f"the smallest possible with {replicates} replicates"


def fmt_p_floor(p: float | None, replicates: int | None, missing: str = "not tested") -> str:
    """``p = ...`` (:func:`p_equals`), with the replicate floor explained where it is at it:
    ``p = 0.0050, the smallest possible with 199 replicates``."""
    note = p_floor_note(p, replicates)
    return p_equals(p, missing) + ("" if note is None else f", {note}")


def is_rate(metric: str, *values: float | None) -> bool:
    """A proportion (a rate or a probability, between 0 and 1), shown as a percentage."""
    words = metric.lower()
    if not any(w in words for w in ("rate", "probability", "proportion", "share")):
        return False
    return all(v is None or 0.0 <= v <= 1.0 for v in values)


def rate_with_count(x: float | None, count: int | None) -> str:
    """A rate as a percentage with the rows behind it: ``71.0% (142 of 200)`` when the count of
    events is whole (unweighted rows), ``60.3% (n = 353)`` for a mean of probabilities."""
    if x is None:
        return "n/a"
    text = percent(x, 1)
    if count is None:
        return text
    events = x * count
    if count > 0 and abs(events - round(events)) < 1e-6 * max(1.0, events):
        return f"{text} ({round(events)} of {count})"
    return f"{text} (n = {count})"


def wilson_interval(events: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval (95% by default) of a proportion ``events / n``."""
    if n <= 0:
        return (0.0, 1.0)
    p = events / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return (max(0.0, centre - half), min(1.0, centre + half))
