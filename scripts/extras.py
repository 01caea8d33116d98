"""Print the requirements of some of pyproject.toml's extras, one per line (for ``pip install -r``).

``make test`` adds the test and docs extras to the venv that ``make demo`` made with the runtime
dependencies only; ``pip install -e '.[test,docs]'`` would rebuild the kernels for that.

    python scripts/extras.py test docs > .venv/extras.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip's vendored copy of the same parser
    from pip._vendor import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirements(extras: list[str]) -> list[str]:
    table = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    unknown = sorted(set(extras) - set(table))
    if unknown:
        raise SystemExit(f"pyproject.toml has no extra {', '.join(unknown)}")
    return list(dict.fromkeys(r for extra in extras for r in table[extra]))


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
