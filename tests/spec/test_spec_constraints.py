"""Constraints of spec settings are declared once (issue 22): the scan fields, `defaults:`, the
significance block and the command-line checks all read the same bounds."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from fairscan.scans.certification.spec import CertifySpec
from fairscan.scans.shift.spec import ShiftSpec
from fairscan.spec import constraints
from fairscan.spec.base import MdssScanSpecBase
from fairscan.spec.constraints import Bounds
from fairscan.spec.models import ScanDefaults, SignificanceSpec


def _bounds(model: type, field: str) -> dict[str, object]:
    """The field's bounds: on the field, or on the numeric member of its union
    (``seed: Annotated[int, Field(ge=0)] | Literal["random"] | None``)."""
    info = model.model_fields[field]
    items = list(info.metadata)
    for member in get_args(info.annotation):
        items += [m for arg in get_args(member)[1:] for m in getattr(arg, "metadata", [arg])]
    found: dict[str, object] = {}
    for item in items:
        for side in ("ge", "le", "gt", "lt"):
            if getattr(item, side, None) is not None:
                found[side] = getattr(item, side)
    return found


def _declared(bounds: Bounds) -> dict[str, object]:
    sides = ("ge", "le", "gt", "lt")
    return {side: getattr(bounds, side) for side in sides if getattr(bounds, side) is not None}


@pytest.mark.parametrize(
    ("model", "field", "bounds"),
    [
        (MdssScanSpecBase, "penalty", constraints.PENALTY),
        (ScanDefaults, "penalty", constraints.PENALTY),
        (MdssScanSpecBase, "restarts", constraints.RESTARTS),
        (ScanDefaults, "restarts", constraints.RESTARTS),
        (CertifySpec, "bootstrap", constraints.BOOTSTRAP),
        (ShiftSpec, "bootstrap", constraints.BOOTSTRAP),
        (ScanDefaults, "bootstrap", constraints.BOOTSTRAP),
        (SignificanceSpec, "replicates", constraints.REPLICATES),
        (SignificanceSpec, "workers", constraints.WORKERS),
        (SignificanceSpec, "seed", constraints.SEED),
        (SignificanceSpec, "alpha", constraints.ALPHA),
    ],
)
def test_every_field_takes_its_declared_bounds(model: type, field: str, bounds: Bounds) -> None:
    assert _bounds(model, field) == _declared(bounds)


def test_defaults_reject_what_a_scan_would_reject() -> None:
    with pytest.raises(ValidationError):
        ScanDefaults(bootstrap=5)  # certify/flag/shift need at least 10 resamples
    assert ScanDefaults(bootstrap=10).bootstrap == 10


def test_violations_read_as_the_cli_says_them() -> None:
    assert constraints.REPLICATES.violation(10**9) == (
        "must be between 0 and 1,000,000, got 1,000,000,000"
    )
    assert constraints.WORKERS.violation(0) == "must be between 1 and 256, got 0"
    assert constraints.WORKERS.violation(256) is None
    assert constraints.ALPHA.violation(1) == "must be above 0 and below 1, got 1"
    assert constraints.SEED.violation(-1) == "must be at least 0, got -1"
    assert constraints.SEED.minimum == 0 and constraints.WORKERS.minimum == 1


def test_cli_options_take_their_minimum_from_the_declaration() -> None:
    import typer.main

    from fairscan.cli import run

    for option, bounds in (
        (run.SeedOption, constraints.SEED),
        (run.ReplicatesOption, constraints.REPLICATES),
        (run.WorkersOption, constraints.WORKERS),
    ):
        info = option.__metadata__[0]
        assert isinstance(info, typer.models.OptionInfo)
        assert info.min == bounds.minimum
