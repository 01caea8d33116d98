"""``audit explain SCAN_TYPE``: what a scan tests, its null hypothesis, parameters and reading.

Built from the scan registry (``title``, ``summary``, ``reading``) and the scan's spec model
(field names, defaults and descriptions), so it cannot drift from what the spec accepts.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticUndefined

if TYPE_CHECKING:
    from fairscan.scans.base import ScanType

_MDSS_READING = (
    "The report gives the top subgroup (attributes and values), its size, observed and "
    "expected rates, the odds multiplier q and the penalised score. The p-value is a "
    "randomization test: the share of null replicates (data redrawn under the null hypothesis) "
    "whose best score reaches the observed one; the finding is significant when p <= alpha. "
    "With replicates 0 the scan is not tested. A larger penalty favours simpler subgroups."
)

# How to read a result, per scan type, unless the registry entry sets `reading`.
READING = {
    "fpr_scan": _MDSS_READING,
    "tpr_scan": _MDSS_READING,
    "bias_scan": _MDSS_READING,
    "ijdi_scan": _MDSS_READING
    + " The IJDI criterion compares the observed rate gap with the gap lambda x base-rate gap "
    "would justify.",
    "cbs": _MDSS_READING
    + " Each protected class is a run (Bonferroni over runs); the finding compares the metric "
    "in the subgroup for protected and comparable non-protected records.",
    "subroc": (
        "The report lists the top-k patterns with their measure on the search and validation "
        "splits, the relative score (overall minus subgroup) and a p-value adjusted for "
        "multiple testing; a pattern is significant when the adjusted p-value <= alpha."
    ),
    "certify": (
        "Each group has a bound or interval for its gap eps(G) = group metric - target, valid "
        "for all groups at once (family-wise error alpha). With claim disparity, certified "
        "groups are findings; with claim fairness, tested groups that cannot be certified are."
    ),
    "flag": (
        "Each group has a gap, a bootstrap scale and an adjusted p-value; flagged groups "
        "(rejected by BH/BY at alpha) are findings, with the false discovery rate controlled."
    ),
}

NULL_HYPOTHESIS = {
    "certify": "the group's metric gap is within the tolerance of the target (per group).",
    "flag": "the group's metric does not exceed the target by more than the tolerance.",
    "subroc": "the subgroup performs like a random subset of the same size and class balance.",
}


def _null_hypothesis(type_: str, summary: str) -> tuple[str, str | None]:
    marker = "Null hypothesis:"
    if marker in summary:
        head, _, tail = summary.partition(marker)
        return head.strip(), tail.strip()
    return summary.strip(), NULL_HYPOTHESIS.get(type_)


def _type_name(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    text = re.sub(r"Annotated\[([^,\[\]]+), [^\]]*\]", r"\1", text.replace("typing.", ""))
    return re.sub(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+\.([A-Za-z_]\w*)", r"\1", text)


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return json.dumps(value)


def parameters(type_: str) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) of each field of the scan's spec model."""
    from fairscan.scans import SCAN_TYPES

    model = SCAN_TYPES[type_].spec_model
    rows = []
    for name, field in model.model_fields.items():
        if name == "type":
            continue
        rows.append((name, _type_name(field.annotation), _default(field), field.description or ""))
    return rows


ROLE_TEXT = {
    "outcome": "outcome",
    "probability": "prediction (a probability in [0, 1])",
    "score": "prediction (any real-valued score)",
    "recommendation": "recommendation (a 0/1 column, or the prediction against a threshold)",
}


def needs_text(entry: ScanType) -> str:
    """The data roles a scan type needs, in words."""
    if entry.needs_doc:
        return entry.needs_doc
    if callable(entry.needs):
        return "depends on its settings (see the parameters below)"
    return ", ".join(ROLE_TEXT[role] for role in entry.needs)


def explain(type_: str) -> str:
    """Plain-text explanation of a registered scan type (raises KeyError if unknown)."""
    import textwrap

    from fairscan.scans import SCAN_TYPES

    entry = SCAN_TYPES[type_]
    what, null = _null_hypothesis(type_, entry.summary)
    wrap = textwrap.TextWrapper(width=92, initial_indent="  ", subsequent_indent="  ")
    lines = [f"{entry.title} (type: {entry.type})", "", "What it tests:", wrap.fill(what), ""]
    if null:
        lines += ["Null hypothesis:", wrap.fill(null), ""]
    lines += ["Needs columns: " + needs_text(entry), "", "Parameters:"]
    param_wrap = textwrap.TextWrapper(width=92, initial_indent="      ", subsequent_indent="      ")
    for name, kind, default, description in parameters(type_):
        lines.append(f"  {name}: {kind} (default: {default})")
        if description:
            lines.append(param_wrap.fill(description))
    reading = entry.reading or READING.get(type_)
    if reading:
        lines += ["", "Reading the result:", wrap.fill(reading)]
    lines += [
        "",
        "Shared settings: significance.alpha, significance.replicates, significance.seed "
        "(see `audit schema`).",
    ]
    return "\n".join(lines) + "\n"


def reference_markdown() -> str:
    """docs/scans.md: every scan's `audit explain` text, so the docs and the CLI cannot drift."""
    from fairscan.scans import SCAN_TYPES

    parts = [
        "# Scan reference",
        "",
        "Generated from the scan registry by `python -m fairscan.explain` (`make docs`); the same",
        "text as `audit explain SCAN_TYPE`. A test fails when this file is stale.",
        "",
    ]
    for type_, entry in SCAN_TYPES.items():
        parts += [f"## `{type_}`: {entry.title}", "", "```text", explain(type_).rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    import sys
    from pathlib import Path

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/scans.md")
    target.write_text(reference_markdown(), encoding="utf-8")
    print(f"wrote {target}")
