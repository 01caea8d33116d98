"""Issue 34's acceptance subset of the fourth hostile round (tests/fuzz/round4.py): one or two
cases of each family that failed on ede6a24, each a real ``audit`` subprocess in its own
folder, all of them clean: no write, no file read, no secret, no live workflow command, no raw
HTML or dangerous link in a Markdown sink, no silent PASS, no internal error. The whole round
(459 cases; tests/fuzz/ROUND4.md) is ``scripts/fuzz_round4.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lazy_import import require

sys.path.insert(0, str(Path(__file__).resolve().parent))
import round4

pytestmark = pytest.mark.slow

require("duckdb")
require("ibis", reason="Ibis (fairscan[sql]) is not installed")
require("markdown_it")
require("markdown")

# (surface, family, a word the case's input must hold or "") -> the first such generated case;
# every one but the control failed on ede6a24
PICKS = [
    ("sql", "postgres-control-table", ""),
    ("sql", "duckdb-sql-0", ""),  # select; copy ... to a file outside
    ("sql", "duckdb-sql-13", ""),  # read_text of a canary into an attribute
    ("sql", "duckdb-url-0", ""),  # ?access_mode=read_write and a drop
    ("sql", "sqlite-sql-14", ""),  # an all-NULL attribute
    ("sql", "postgres-sql-0", ""),  # select; delete from victim
    ("sql", "postgres-sql-16", ""),  # an INSERT after a line comment and a separator
    ("sql", "duckdb-sql-24", ""),  # ";" alone
    ("secrets", "param-literal-ok", "sslpassword"),
    ("secrets", "param-literal-closed", "access_token"),
    ("secrets", "libpq-options", "password%3d"),
    ("secrets", "userinfo-env", "/x#y"),  # a ${VAR} value with / and #
    ("secrets", "host-env", ""),
    ("console", "data-value-", ""),
    ("console", "column-name-", ""),
    ("console", "flag-group-", ""),
    ("console", "spec-file-name-", ""),
    ("markdown", "data-value-11", ""),  # [x](javascript:...)
    ("markdown", "data-value-14", ""),  # ![x](http://host/a.png)
    ("markdown", "model-description-", "```"),
    ("pyproject", "parent-exit-zero-child-none", ""),
    ("pyproject", "parent-exit-zero-child-dotted", ""),
    ("pyproject", "parent-replicates-1-child-bom", ""),
    ("pyproject", "flag-replicates-0", ""),
]


def _pick() -> list[round4.Case]:
    cases = round4.generate()
    picked = []
    for surface, family, word in PICKS:
        exact = not family.endswith("-")
        found = next(
            c
            for c in cases
            if c.surface == surface
            and (c.family == family if exact else c.family.startswith(family))
            and word in str(c.describe()).lower()
        )
        picked.append(found)
    return picked


CASES = _pick()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, round4.Result]]:
    root = tmp_path_factory.mktemp("fuzz4")
    root.chmod(0o755)  # the PostgreSQL server (another user) reads the canaries
    with round4.postgres_server() as (pg, why):
        rnd = round4.Round.create(root, 4, pg, why)
        done = round4.run_round(CASES, rnd, jobs=2)
        yield {r.case.id: r for r in done}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_round4_case_is_clean(results: dict[str, round4.Result], case: round4.Case) -> None:
    result = results[case.id]
    if result.outcome == "skipped":
        pytest.skip(result.evidence["skipped"][0])
    assert result.outcome == "clean", round4.json.dumps(result.record(), indent=1)[:6000]
