"""Numeric constraints of spec settings, declared once.

A setting that can be given in more than one place (a scan field, the ``defaults:`` block, a
command-line override) takes its bounds from here: the model fields' ``ge=``/``le=`` bounds, the
``defaults:`` model, the CLI's own check of an override and typer's ``min=`` are all derived
from one :class:`Bounds`, so they cannot drift apart. (The idea of scikit-learn's declared
parameter constraints checked by one validator, reduced to what a spec needs.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """An interval a number must lie in; ``None`` leaves that side open."""

    ge: int | float | None = None
    le: int | float | None = None
    gt: int | float | None = None
    lt: int | float | None = None

    @property
    def minimum(self) -> int | None:
        """The inclusive lower bound of an integer setting (typer's ``min=``)."""
        return None if self.ge is None else int(self.ge)

    def violation(self, value: float) -> str | None:
        """Why ``value`` is out of bounds (``must be between 0 and 1,000,000, got 5``), or None."""
        low_ok = (self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
        high_ok = (self.le is None or value <= self.le) and (self.lt is None or value < self.lt)
        if low_ok and high_ok:
            return None
        return f"must be {self.words()}, got {value:,}"

    def words(self) -> str:
        """The bounds as a reader says them: ``between 1 and 256``, ``at least 0``."""
        if self.ge is not None and self.le is not None:
            return f"between {_number(self.ge)} and {_number(self.le)}"
        parts = []
        if self.ge is not None or self.gt is not None:
            parts.append(
                f"at least {_number(self.ge)}"
                if self.ge is not None
                else f"above {_number(self.gt)}"
            )
        if self.le is not None or self.lt is not None:
            parts.append(
                f"at most {_number(self.le)}"
                if self.le is not None
                else f"below {_number(self.lt)}"
            )
        return " and ".join(parts)


def _number(x: float | None) -> str:
    assert x is not None
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


# Limits of the significance settings, shared with the command-line overrides.
MAX_REPLICATES = 1_000_000
MAX_WORKERS = 256

REPLICATES = Bounds(ge=0, le=MAX_REPLICATES)
WORKERS = Bounds(ge=1, le=MAX_WORKERS)
SEED = Bounds(ge=0)
ALPHA = Bounds(gt=0, lt=1)
# settings a scan and `defaults:` share
PENALTY = Bounds(ge=0)
RESTARTS = Bounds(ge=1, le=100_000)
BOOTSTRAP = Bounds(ge=10, le=100_000)
