"""Base classes shared by the audit spec and the per-scan spec models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StrictModel(BaseModel):
    """Unknown keys are errors: a misspelt key must never silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


SCAN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class ScanSpecBase(StrictModel):
    """Fields every scan has. Each scan module subclasses this with a ``type`` literal."""

    id: str = Field(
        pattern=SCAN_ID_PATTERN,
        description="Identifier of the scan, unique within the spec; used in reports.",
        examples=["fpr"],
    )


class MdssScanSpecBase(ScanSpecBase):
    """Settings shared by the multidimensional subset scans (methods.md §1.4)."""

    penalty: float = Field(
        default=0.0,
        ge=0,
        description=(
            "Complexity penalty per attribute value in a constrained attribute "
            "(J(S) = F(S) - penalty * c(S)); 0 = no penalty."
        ),
    )
    restarts: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="Random restarts of the coordinate ascent (restart 1 starts from all values).",
    )
