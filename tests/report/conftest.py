"""Report tests build reports from the v2 contract directly (report_builders.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# Tests run with --import-mode=importlib, which does not put test folders on sys.path; the
# builders in report_builders.py are shared by the test modules of this folder.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
