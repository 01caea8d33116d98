"""Run fairscan's CLI as in a base install (``pip install fairscan``, no extras): the modules of
the extras cannot be imported, even where they are installed (an import hook refuses them).

    python scripts/without_extras.py run audits/sample.audit.yaml --out reports

What a base install must do without them (tests/test_base_install.py): the demo and a streamed
Parquet audit. The real fresh-venv check is scripts/check_lowest_versions.sh.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

# the top-level modules fairscan[sql], fairscan[notebook] and the drivers bring
EXTRAS = ("ibis", "sqlglot", "duckdb", "pandas", "pyarrow", "psycopg", "psycopg2")


class Refuse(MetaPathFinder):
    """An import hook that refuses the extras' modules, as if they were not installed."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname.split(".", 1)[0] in EXTRAS:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def refuse_extras() -> None:
    loaded = [name for name in sys.modules if name.split(".", 1)[0] in EXTRAS]
    if loaded:
        raise RuntimeError(f"already imported: {', '.join(sorted(loaded))}")
    sys.meta_path.insert(0, Refuse())


if __name__ == "__main__":
    refuse_extras()
    from fairscan.cli import main

    sys.argv[0] = "audit"
    main()
