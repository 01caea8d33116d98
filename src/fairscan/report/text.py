"""Plain-language phrasing shared by the scans (finding descriptions) and the renderers."""

from __future__ import annotations


def fmt_number(x: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """Fixed-point number for reports; ``signed`` shows a + on positive gaps; None -> n/a."""
    if x is None:
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def fmt_p(p: float | None, missing: str = "not tested") -> str:
    """A p-value: four decimals, scientific below 1e-4; ``missing`` when there is none."""
    if p is None:
        return missing
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def percent(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{100.0 * x:.{digits}f}%"


def describe_subgroup(subgroup: dict[str, list[str]]) -> str:
    """``{"priors": ["Over 5"], "race": ["A", "B"]}`` -> "priors = Over 5 and race in {A, B}"."""
    if not subgroup:
        return "everyone (no attribute constrained)"
    parts = []
    for attribute, values in subgroup.items():
        if len(values) == 1:
            parts.append(f"{attribute} = {values[0]}")
        else:
            parts.append(f"{attribute} in {{{', '.join(values)}}}")
    return " and ".join(parts)
