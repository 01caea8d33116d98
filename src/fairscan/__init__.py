"""fairscan: audit classifiers for intersectional bias with statistical guarantees."""

from __future__ import annotations

__version__ = "0.1.0"
