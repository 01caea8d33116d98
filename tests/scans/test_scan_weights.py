"""A scan type's one weight declaration (``ScanType.weights``, issue 37) and what it means."""

from __future__ import annotations

from typing import get_args

import pytest

from fairscan.scans import SCAN_TYPES
from fairscan.scans.base import ScanDocs, ScanType, WeightUse


def _bias(**settings: object) -> object:
    return SCAN_TYPES["bias_scan"].spec_model.model_validate(
        {"id": "x", "type": "bias_scan", **settings}
    )


def test_every_registered_type_declares_one_weight_use() -> None:
    for name, entry in SCAN_TYPES.items():
        declared = entry.weights
        assert callable(declared) or declared in get_args(WeightUse), name


@pytest.mark.parametrize(
    ("spec", "use"),
    [
        (_bias(), "counts"),  # binary Bernoulli: the streamed counts
        (_bias(outcome_type="continuous", score="gaussian"), "fractional"),
        (_bias(outcome_type="count", score="poisson"), "fractional"),
    ],
)
def test_bias_scan_reads_counts_only_for_the_binary_bernoulli_score(spec: object, use: str) -> None:
    assert SCAN_TYPES["bias_scan"].weight_use(spec) == use


def test_a_new_type_works_on_rows_unless_it_says_otherwise() -> None:
    """The default refuses fractional weights (run/execute.py asks check_weight_support)."""
    entry = SCAN_TYPES["fpr_scan"]
    plain = ScanType(
        type="plain",
        spec_model=entry.spec_model,
        runner=entry.runner,
        needs=("outcome",),
        docs=ScanDocs(title="plain", summary="a type that declares nothing", reading=""),
    )
    assert plain.weight_use(None) == "rows"
    assert entry.weight_use(None) == "counts"
