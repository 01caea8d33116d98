"""The fourth hostile round (issue 34): a seeded generator of hostile cases over the surfaces of
that turn (SQL text, URLs and secrets, console/Actions output, Markdown sinks, pyproject
tables), each run as a real ``audit`` command in a subprocess, in a fresh folder, with
sentinels that make every forbidden effect visible:

* a secret token in the environment (``FAIRSCAN_FUZZ_SECRET``) and, literally, in connection
  URLs, ``${VAR}`` values and query parameters: it must appear in no output (stdout, stderr,
  any file the run wrote: reports, history, GitHub outputs), compared case-insensitively;
* canary files outside the audit folder whose content (and one's name) is a read token, with
  their access time set before their modification time, so that the first read moves it
  (``relatime``): the token must never show and the access time must not move;
* write targets in that folder, database files whose content must not change (DuckDB,
  SQLite), and a PostgreSQL victim table whose rows must not change;
* ``GITHUB_ACTIONS=true`` with ``GITHUB_STEP_SUMMARY``/``GITHUB_OUTPUT`` files: no output line
  may be a workflow command fairscan did not write as its own annotation;
* the Markdown reports and the job summary rendered by two parsers (markdown-it-py, CommonMark;
  python-markdown, as GitHub-like viewers and the issue's Chromium check did): no raw HTML,
  dangerous link or remote image from data or spec text.

Outcomes (one per case, the first that applies in this order): crash, hang, secret leak, file
read, side effect, injection, silent pass, internal error, clean. ``scripts/fuzz_round4.py``
runs the whole round; ``tests/fuzz/test_fuzz_round4.py`` a fixed subset.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import yaml

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
sys.path.insert(0, str(ROOT / "tests" / "cli"))
from cli_support import TRACEBACK, synthetic_frame  # noqa: E402

SURFACES = ("sql", "secrets", "console", "markdown", "pyproject")
OUTCOMES = (
    "clean",
    "injection",
    "side effect",
    "file read",
    "secret leak",
    "silent pass",
    "internal error",
    "crash",
    "hang",
    "skipped",
)
# the first class found in this order is the case's outcome (the others stay in its evidence)
PRIORITY = (
    "crash",
    "hang",
    "secret leak",
    "file read",
    "side effect",
    "injection",
    "silent pass",
    "internal error",
)
CANARIES = ("canary.txt", "canary.csv", "canary.parquet")
MARK = "fzx"  # in every injected Actions/Markdown payload, and nowhere else
EXIT_CODES = {0, 1, 2, 130, 143}
TIMEOUT_S = 60.0
NAME = "fuzz4"  # the spec's name: reports are out/fuzz4.*

# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One hostile input. Texts hold placeholders (``@SECRET@``, ``@OUTSIDE@``, ...) that
    :meth:`Sandbox.fill` replaces in the case's own folder."""

    id: str
    surface: str
    family: str
    spec: dict[str, Any] | None  # dumped as YAML to audit/<spec_name>; None: write no spec
    spec_name: str = f"{NAME}.audit.yaml"
    data: str = "csv"  # csv | duckdb | sqlite | postgres | none
    edit: tuple[str, str, str] | None = None  # ("value"|"column", old, new) on the data
    args: tuple[str, ...] = ()  # after `run SPEC`
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # extra files (path: latin-1 text)
    cwd: str = "audit"
    followups: tuple[tuple[str, ...], ...] = ()  # further audit commands (placeholders too)
    expect_finding: bool = True  # the data holds a significant finding under a sane gate
    untested: bool = False  # the run cannot reach alpha: exit 0 with PASS is a silent pass
    relaxed: str | None = None  # a setting relaxes the gate: a stderr line must name this
    strict_child: bool = False  # a stricter nearer table: exit 0 is a silent pass
    allow: tuple[str, ...] = ()  # further paths (case-relative prefixes) the run may write
    listen: bool = False  # a TCP listener on @LISTEN@ records connections

    def describe(self) -> dict[str, Any]:
        return asdict(self)


def _spec(
    data: dict[str, Any] | None = None,
    *,
    attributes: Sequence[str] = ("sex", "region", "age_group"),
    scans: list[dict[str, Any]] | None = None,
    significance: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"version": 1, "name": NAME}
    for key in ("extends", "description", "model"):
        if key in extra:
            spec[key] = extra.pop(key)
    spec["data"] = data if data is not None else {"path": "data.parquet"}
    spec["columns"] = {"outcome": "y", "prediction": "p", "recommendation": "rec"}
    spec["attributes"] = list(attributes)
    spec["scans"] = scans or [{"id": "fpr", "type": "fpr_scan", "penalty": 0.5, "restarts": 2}]
    spec["significance"] = {"replicates": 19, "alpha": 0.05, "seed": 7, "workers": 1}
    spec["significance"].update(significance or {})
    spec["output"] = {
        "dir": "out",
        "formats": ["json", "markdown", "html", "sarif", "junit"],
        "history": "hist.db",
    }
    spec.update(extra)
    return spec


def _db(engine: str, **data: str) -> dict[str, Any]:
    connection = {
        "duckdb": "duckdb:///@AUDIT@/db.duckdb",
        "sqlite": "sqlite:///@AUDIT@/db.sqlite",
        "postgres": "postgresql://auditor:${FAIRSCAN_FUZZ_PGPASSWORD}@127.0.0.1:@PGPORT@/postgres",
    }[engine]
    out = {"connection": connection}
    out.update(data)
    return out


def _vary(rng: random.Random, sql: str) -> str:
    """A seeded respelling of a statement: keyword case, spacing, a trailing separator."""
    choice = rng.randrange(4)
    if choice == 1:
        sql = re.sub(
            r"\b(select|from|copy|attach|delete|drop|create|with|pragma|set)\b",
            lambda m: m.group(1).upper(),
            sql,
        )
    elif choice == 2:
        sql = sql.replace("; ", ";\n  ")
    elif choice == 3:
        sql = sql + " ;"
    return sql


# statements over the table `credit` (y, p, rec, sex, region, age_group) and a table `victim`
READ_REGION = "(select content from read_text('@CANARY@')) as region"
DUCKDB_SQL = [
    "select * from credit; copy (select 42 as x) to '@OUTSIDE@/w_copy.csv'",
    "copy (select 42 as x) to '@OUTSIDE@/w_copy_first.csv'; select * from credit",
    "select * from credit; delete from victim",
    "select * from credit; drop table victim; create table pwned as select 1 as x",
    "attach '@OUTSIDE@/other.duckdb' as o (read_only false); select * from credit",
    "attach '@OUTSIDE@/new.duckdb' as n; create table n.t as select 1; select * from credit",
    "export database '@OUTSIDE@/exported'; select * from credit",
    "install httpfs; select * from credit",
    "load parquet; select * from credit",
    "pragma enable_profiling='json'; pragma profiling_output='@OUTSIDE@/profile.json'; "
    "select * from credit",
    "set enable_external_access = true; select * from credit",
    "set temp_directory = '@OUTSIDE@/spill'; select * from credit",
    "set lock_configuration = false; select * from credit",
    f"select * exclude (region), {READ_REGION} from credit",
    "select * from credit where region <> (select content from read_text('@CANARY@'))",
    "select * exclude (region), (select string_agg(file, ',') from glob('@OUTSIDE@/*')) "
    "as region from credit",
    "select * from read_csv('@CANARYCSV@')",
    "select * from '@CANARYCSV@'",
    "select * from read_parquet('@CANARYPQ@')",
    "select c.*, t.* from credit c, read_csv('@CANARYCSV@') t",
    "select * exclude (region), (select content from read_text('/proc/self/environ')) "
    "as region from credit",
    "select * exclude (region), getenv('FAIRSCAN_FUZZ_SECRET') as region from credit",
    "select * from credit /* ; */ ; copy (select 1) to '@OUTSIDE@/w_comment.csv'",
    "select * from credit -- ;\n; copy (select 1) to '@OUTSIDE@/w_line_comment.csv'",
    ";",
    ";;",
    "  ",
    "copy (select 1) to '@OUTSIDE@/w_only_copy.csv'",
    "with t as (select * from credit) select * from t; checkpoint",
    "select * from credit union all select * from credit where false; vacuum",
    "create temp table t as select * from credit; select * from t",
    "select * from credit; call pragma_version()",
    "select * from credit; detach database if exists o",
    "select *, '*' as \"*\" from credit",
]
SQLITE_SQL = [
    "select * from credit; delete from victim",
    "select * from credit; drop table victim",
    "delete from victim returning *",
    "attach database '@OUTSIDE@/new.sqlite' as n",
    "vacuum into '@OUTSIDE@/vacuumed.sqlite'",
    "select * from credit; vacuum into '@OUTSIDE@/vacuumed2.sqlite'",
    "pragma journal_mode = wal",
    "select * from credit; pragma user_version = 7",
    "select *, load_extension('@OUTSIDE@/ext') as z from credit",
    "select * from credit /* ; */ ; delete from victim",
    "with d as (select 1) delete from victim",
    ";",
    "create table pwned as select * from credit",
    "select *, (select null) as region2 from credit",
    "select sex, null as region, age_group, y, p, rec from credit",
]
POSTGRES_SQL = [
    "select * from credit; delete from @VICTIM@",
    "select * from credit; drop table @VICTIM@",
    "delete from @VICTIM@; select * from credit",
    "with d as (delete from @VICTIM@ returning 1) select c.* from credit c",
    "with d as (update @VICTIM@ set v = 'x' returning 1) select * from credit",
    "select * from credit; create table @PWNED@ as select 1 as x",
    "select * from credit where pg_read_file('@CANARY@') is not null",
    "select sex, pg_read_file('@CANARY@') as region, age_group, y, p, rec from credit",
    "select sex, (select string_agg(f, ',') from pg_ls_dir('@OUTSIDE@') f) as region, "
    "age_group, y, p, rec from credit",
    "select * from credit; copy (select 1) to '@OUTSIDE@/pg_copy.csv'",
    "copy (select 1) to '@OUTSIDE@/pg_copy_only.csv'",
    "select * from credit; select lo_export(lo_from_bytea(0, 'x'), '@OUTSIDE@/pg_lo.bin')",
    "set default_transaction_read_only = off; select * from credit",
    "select * from credit; set session characteristics as transaction read write",
    "select *, set_config('default_transaction_read_only', 'off', false) as z from credit",
    "select * from credit /* ; */ ; delete from @VICTIM@",
    "select * from credit -- x\n; insert into @VICTIM@ values (999, 'x')",
    ";",
    "select *, '*' as \"*\" from credit",
    "select * from credit; select pg_sleep(0)",
]
TABLE_NAMES = [
    "credit; drop table victim",
    'credit"; drop table victim; --',
    "credit where 1=1; delete from victim",
    "read_text('@CANARY@')",
    "'@CANARYCSV@'",
    "read_csv('@CANARYCSV@')",
    "(select * from credit)",
    "main.credit; copy (select 1) to '@OUTSIDE@/w_table.csv'",
]
FILTERS = [
    "region = 'S'; delete from victim",
    "1=1) ; drop table victim; --",
    "region = 'x'' ; delete from victim; --'",
    "read_text('@CANARY@') = 'x'",
    "region in (select content from read_text('@CANARY@'))",
    "region = 'S' or 1 = (select count(*) from victim)",
    "region = 'S' -- ; delete from victim",
    "sex = 'F' /* ; copy (select 1) to '@OUTSIDE@/w_filter.csv' */",
]
URL_SETTINGS = [
    "access_mode=read_write",
    "access_mode=READ_WRITE",
    "enable_external_access=true",
    "allow_unsigned_extensions=true",
    "autoinstall_known_extensions=true&autoload_known_extensions=true",
    "lock_configuration=false",
    "temp_directory=@OUTSIDE@/spill",
    "enable_fsst_vectors=true",
]


def _sql_cases(rng: random.Random) -> Iterator[Case]:
    for engine in ("duckdb", "sqlite", "postgres"):  # controls: the oracles see nothing
        yield Case(
            "",
            "sql",
            f"{engine}-control-sql",
            _spec(_db(engine, sql="select * from credit")),
            data=engine,
        )
        yield Case(
            "", "sql", f"{engine}-control-table", _spec(_db(engine, table="credit")), data=engine
        )
    for engine, statements in (
        ("duckdb", DUCKDB_SQL),
        ("sqlite", SQLITE_SQL),
        ("postgres", POSTGRES_SQL),
    ):
        for n, sql in enumerate(statements):
            for variant in range(2 if rng.random() < 1 / 3 else 1):
                text = sql if variant == 0 else _vary(rng, sql)
                if variant and text == sql:
                    continue
                yield Case(
                    "", "sql", f"{engine}-sql-{n}", _spec(_db(engine, sql=text)), data=engine
                )
        for n, name in enumerate(TABLE_NAMES):
            name = name.replace("victim", "@VICTIM@") if engine == "postgres" else name
            yield Case(
                "", "sql", f"{engine}-table-{n}", _spec(_db(engine, table=name)), data=engine
            )
        for n, text in enumerate(FILTERS):
            text = text.replace("victim", "@VICTIM@") if engine == "postgres" else text
            yield Case(
                "",
                "sql",
                f"{engine}-filter-{n}",
                _spec(_db(engine, table="credit", filter=text)),
                data=engine,
            )
    for n, setting in enumerate(URL_SETTINGS):
        for sql in (
            "select * from credit; drop table victim; create table pwned as select 1 as x",
            f"select * exclude (region), {READ_REGION} from credit",
        ):
            data = {"connection": f"duckdb:///@AUDIT@/db.duckdb?{setting}", "sql": sql}
            yield Case("", "sql", f"duckdb-url-{n}", _spec(data), data="duckdb")


# --- URLs and secrets ------------------------------------------------------------------------

SECRET_KEYS = [
    "password",
    "sslpassword",
    "access_token",
    "passfile",
    "credentials_info",
    "secret",
    "token",
    "api_key",
    "private_key",
    "client_secret",
    "aws_secret_access_key",
    "refresh_token",
]
PG_OK = "postgresql://auditor:${FAIRSCAN_FUZZ_PGPASSWORD}@127.0.0.1:@PGPORT@/postgres"
PG_CLOSED = "postgresql://auditor:${FAIRSCAN_FUZZ_PGPASSWORD}@127.0.0.1:@CLOSED@/postgres"


def _casing(rng: random.Random, key: str) -> str:
    return rng.choice(
        [
            key,
            key.upper(),
            key.capitalize(),
            "".join(c.upper() if rng.random() < 0.5 else c for c in key),
        ]
    )


def _secret_cases(rng: random.Random) -> Iterator[Case]:
    def case(family: str, connection: str, data: str, **kw: Any) -> Case:
        return Case(
            "",
            "secrets",
            family,
            _spec({"connection": connection, "table": "credit"}),
            data=data if data != "none" else "csv",
            **kw,
        )

    for key in SECRET_KEYS:
        for base, data in ((PG_OK, "postgres"), (PG_CLOSED, "none")):
            where = "ok" if data == "postgres" else "closed"
            spelled = _casing(rng, key)
            yield case(f"param-literal-{where}", f"{base}?{spelled}=@SECRET@", data)
            yield case(f"param-env-{where}", f"{base}?{spelled}=${{FAIRSCAN_FUZZ_SECRET}}", data)
    # libpq options carrying a password; a passfile named by the secret
    for url, data in (
        (PG_OK + "?options=-c%20password%3D@SECRET@", "postgres"),
        (PG_OK + "?options=-c%20application_name%3D@SECRET@", "postgres"),
        (PG_OK + "?passfile=@OUTSIDE@/@SECRET@&sslmode=disable", "postgres"),
        (PG_CLOSED + "?options=-c%20password%3D@SECRET@", "none"),
    ):
        yield case("libpq-options", url, data)
    # the secret in the userinfo: literal, from ${VAR}, with separators in the value
    for value in (
        "@SECRET@",
        "@SECRET@@evil.invalid:1/x?y",
        "a:@SECRET@",
        "@SECRET@/x#y",
        "@SECRET@?sslmode=disable",
    ):
        env = {"FAIRSCAN_FUZZ_VALUE": value}
        for port, data in (("@PGPORT@", "postgres"), ("@CLOSED@", "none")):
            yield case(
                "userinfo-env",
                f"postgresql://auditor:${{FAIRSCAN_FUZZ_VALUE}}@127.0.0.1:{port}/postgres",
                data,
                env=env,
            )
            yield case(
                "user-env",
                f"postgresql://${{FAIRSCAN_FUZZ_VALUE}}@127.0.0.1:{port}/postgres",
                data,
                env=env,
            )
    yield case(
        "userinfo-literal", "postgresql://auditor:@SECRET@@127.0.0.1:@CLOSED@/postgres", "none"
    )
    yield case(
        "userinfo-literal-ok",
        "postgresql://auditor:@SECRET@@127.0.0.1:@PGPORT@/postgres",
        "postgres",
    )
    # a ${VAR} host echoed by the driver lower-cased; a ${VAR} database name
    for value in ("@SECRET@.invalid", "@SECRET@"):
        env = {"FAIRSCAN_FUZZ_HOST": value.upper() if rng.random() < 0.5 else value}
        yield case(
            "host-env",
            "postgresql://auditor:${FAIRSCAN_FUZZ_PGPASSWORD}"
            "@${FAIRSCAN_FUZZ_HOST}:@CLOSED@/postgres",
            "none",
            env=env,
        )
    yield case(
        "dbname-env",
        "postgresql://auditor:${FAIRSCAN_FUZZ_PGPASSWORD}@127.0.0.1:"
        "@PGPORT@/${FAIRSCAN_FUZZ_SECRET}",
        "postgres",
    )
    # other engines: drivers absent or servers closed, the message must mask the secret
    for url in (
        "snowflake://user:${FAIRSCAN_FUZZ_SECRET}@account/db/schema",
        "snowflake://user@account/db?password=@SECRET@",
        "bigquery://project/dataset?credentials_info=@SECRET@",
        "trino://user@127.0.0.1:@CLOSED@/catalog?access_token=@SECRET@",
        "mysql://user:${FAIRSCAN_FUZZ_SECRET}@127.0.0.1:@CLOSED@/db",
        "mssql://user@127.0.0.1:@CLOSED@/db?Pwd=@SECRET@",
        "duckdb:///@AUDIT@/db.duckdb?s3_secret_access_key=@SECRET@",
        "duckdb:///@AUDIT@/db.duckdb?http_bearer_token=@SECRET@",
        "duckdb:///@AUDIT@/db.duckdb?custom_user_agent=@SECRET@",
    ):
        data = "duckdb" if url.startswith("duckdb") else "none"
        yield case("engine-url", url, data)
    # the tracking server's URL (MLflow's own variable) with a password in it
    yield Case(
        "",
        "secrets",
        "mlflow-uri",
        _spec(output={"dir": "out", "formats": ["json"], "mlflow": {"experiment": "e"}}),
        env={
            "MLFLOW_TRACKING_URI": "http://user:@SECRET@@127.0.0.1:@CLOSED@/",
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        },
    )


# --- console / Actions -----------------------------------------------------------------------

ACTIONS_PAYLOADS = [
    f"\n::stop-commands::{MARK}stop",
    f"\n::add-mask::{MARK}",
    f"\n::error ::{MARK} injected",
    f"\r\n##[error]{MARK} injected",
    f"\u2028::warning ::{MARK} injected",
    f"\r::notice ::{MARK} injected",
    f"\n::set-output name=verdict::{MARK}",
    f"\n##[group]{MARK}",
    f"\n   ::debug::{MARK}",
    f"\x85::error ::{MARK} nel",
    f"\n::warning file=x.py,line=1::{MARK}",
]


def _placements(payload: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Where data- or spec-derived text reaches the console: family name and Case fields."""
    flag = {
        "id": "f",
        "type": "flag",
        "metric": "positive_rate",
        "target": "overall",
        "tolerance": 0.05,
        "bootstrap": 50,
        "groups": [{"name": f"grp{payload}", "filter": "region = 'S' and age_group = 'a'"}],
    }
    history = (("history", "hist.db"),)
    yield (
        "data-value",
        {"spec": _spec(), "edit": ("value", "S", f"S{payload}"), "followups": history},
    )
    yield (
        "column-name",
        {
            "spec": _spec(attributes=("sex", f"region{payload}", "age_group")),
            "edit": ("column", "region", f"region{payload}"),
            "followups": history,
        },
    )
    yield "flag-group", {"spec": _spec(scans=[flag]), "followups": history}
    yield "model-description", {"spec": _spec(model={"name": "m", "description": f"m{payload}"})}
    yield "description", {"spec": _spec(description=f"d{payload}")}
    yield (
        "out-flag",
        {"spec": _spec(), "args": ("--out", f"out{payload}"), "allow": (f"audit/out{payload}",)},
    )
    yield (
        "output-dir",
        {
            "spec": _spec(output={"dir": f"out{payload}", "formats": ["json"]}),
            "allow": (f"audit/out{payload}",),
        },
    )
    yield (
        "spec-file-name",
        {
            "spec": _spec(),
            "spec_name": f"s{payload}.audit.yaml",
            "followups": (("validate", f"s{payload}.audit.yaml"),),
        },
    )
    yield (
        "scan-id",
        {
            "spec": _spec(scans=[{"id": f"s{payload}", "type": "fpr_scan"}]),
            "expect_finding": False,
            "followups": (("validate", "SPEC"),),
        },
    )
    yield "data-path", {"spec": _spec({"path": f"missing{payload}.csv"}), "expect_finding": False}
    yield (
        "filter-literal",
        {"spec": _spec({"path": "data.parquet", "filter": f"region != '{payload}'"})},
    )
    yield (
        "filter-column",
        {
            "spec": _spec({"path": "data.parquet", "filter": f'"r{payload}" = 1'}),
            "expect_finding": False,
        },
    )
    yield (
        "table-name",
        {
            "spec": _spec(_db("duckdb", table=f"credit{payload}")),
            "data": "duckdb",
            "expect_finding": False,
        },
    )
    yield (
        "baseline-path",
        {"spec": _spec(), "args": ("--baseline", f"b{payload}.json"), "expect_finding": False},
    )


def _console_cases(rng: random.Random) -> Iterator[Case]:
    """Each placement with a seeded half of the payloads (every payload in some placements)."""
    for n, payload in enumerate(ACTIONS_PAYLOADS):
        for family, fields in _placements(payload):
            if rng.random() < 0.5:
                yield Case("", "console", f"{family}-{n}", **fields)


# --- Markdown sinks --------------------------------------------------------------------------

MARKDOWN_PAYLOADS = [
    f"<script>alert('{MARK}')</script>",
    f"```\n<script>alert('{MARK}')</script>\n```",
    f"~~~\n<script src=//{MARK}.example/x.js></script>\n~~~",
    f"\n```\n<script>alert('{MARK}')</script>\n```",
    f"\n\n```\n<script>alert('{MARK}')</script>\n```\n\n",
    f"\n```js\n<script>alert('{MARK}')</script>\n```",
    f"\n````\n<script>alert('{MARK}')</script>\n```\n<script>alert('{MARK}2')</script>",
    f"\n~~~\n<script>alert('{MARK}')</script>\n```\n",
    f"\n   ```\n<script>alert('{MARK}')</script>\n   ```",
    f"x\n\n    <script>alert('{MARK}')</script>\n\ny",
    f"`` ` ``<script>/*{MARK}*/</script>",
    f"[x](javascript:alert('{MARK}'))",
    f"[x](JaVaScRiPt:alert('{MARK}'))",
    f"[x](data:text/html,{MARK})",
    f"![x](http://{MARK}.example/a.png)",
    f"![x](//{MARK}.example/a.png)",
    f"[x][r]\n\n[r]: http://{MARK}.example/evil",
    f"\n[r]: javascript:alert('{MARK}')\n",
    f"<javascript:alert('{MARK}')>",
    f"<http://{MARK}.example/autolink>",
    f"&#60;script&#62;alert('{MARK}')&#60;/script&#62;",
    f"<img src=x onerror=alert('{MARK}')>",
    f"<!-- {MARK} -->",
    f"| x | <b onmouseover={MARK}>",
    f"\\<script>/*{MARK}*/</script>",
    f"<details open ontoggle=alert('{MARK}')>",
    f"[x](<javascript:alert('{MARK}')>)",
]


def _markdown_cases(rng: random.Random) -> Iterator[Case]:
    diff = ("diff", f"out/{NAME}.json", f"out/{NAME}.json")
    page = ("history", "hist.db", "--html", "out/history.html")
    for n, payload in enumerate(MARKDOWN_PAYLOADS):
        flag = {
            "id": "f",
            "type": "flag",
            "metric": "positive_rate",
            "target": "overall",
            "tolerance": 0.05,
            "bootstrap": 50,
            "groups": [{"name": f"g{payload}", "filter": "region = 'S' and age_group = 'a'"}],
        }
        others = [
            Case(
                "",
                "markdown",
                f"column-name-{n}",
                _spec(attributes=("sex", f"r{payload}", "age_group")),
                edit=("column", "region", f"r{payload}"),
                followups=(diff,),
            ),
            Case(
                "",
                "markdown",
                f"model-description-{n}",
                _spec(model={"name": "m", "description": payload}),
            ),
            Case("", "markdown", f"description-{n}", _spec(description=payload)),
            Case("", "markdown", f"flag-group-{n}", _spec(scans=[flag])),
        ]
        # every payload in a data value (its report, diff and history page), a seeded
        # third of them in each other placement
        yield Case(
            "",
            "markdown",
            f"data-value-{n}",
            _spec(),
            edit=("value", "S", payload),
            followups=(diff, page) if rng.random() < 1 / 3 else (diff,),
        )
        yield from (c for c in others if rng.random() < 1 / 3)


# --- pyproject tables and the gate -----------------------------------------------------------

PARENTS = {
    "exit-zero": ("exit-zero = true", "relaxed"),
    "replicates-0": ("replicates = 0", "untested"),
    "replicates-1": ("replicates = 1", "untested"),
    "replicates-9": ("replicates = 9", "untested"),
}
CHILDREN = {
    "none": None,
    "standard": "[tool.fairscan]\n{key}\n",
    "dotted": "tool.fairscan.{key}\n",
    "inline": "tool = {{fairscan = {{{key}}}}}\n",
    "tool-inline": "[tool]\nfairscan = {{{key}}}\n",
    "bom": "\ufeff[tool.fairscan]\n{key}\n",
    "latin1": "# caf\xe9\n[tool.fairscan]\n{key}\n",
    "crlf": "[tool.fairscan]\r\n{key}\r\n",
    "broken": "[tool.fairscan]\n{key}\nexit-zero = fals\n",
    "unknown-key": "[tool.fairscan]\n{key}\nexit_zero = false\n",
    "empty": "[tool.fairscan]\n",
}
STRICT = {"exit-zero": "exit-zero = false", "replicates": "replicates = 19"}


def _pyproject_cases(rng: random.Random) -> Iterator[Case]:
    for parent, (line, kind) in PARENTS.items():
        strict = STRICT["exit-zero" if parent == "exit-zero" else "replicates"]
        for child, template in CHILDREN.items():
            files = {"proj/pyproject.toml": f"[tool.fairscan]\n{line}\n"}
            if template is not None:
                files["proj/audit/pyproject.toml"] = template.format(key=strict)
            yield Case(
                "",
                "pyproject",
                f"parent-{parent}-child-{child}",
                _spec(),
                files=files,
                cwd="proj/audit",
                untested=kind == "untested" and template is None,
                relaxed="pyproject.toml" if kind == "relaxed" else None,
                strict_child=template is not None,
            )
    for value in ("0", "1", "9"):
        yield Case(
            "",
            "pyproject",
            f"env-replicates-{value}",
            _spec(),
            env={"FAIRSCAN_REPLICATES": value},
            untested=True,
        )
        yield Case(
            "",
            "pyproject",
            f"flag-replicates-{value}",
            _spec(),
            args=("--replicates", value),
            untested=True,
        )
        yield Case(
            "",
            "pyproject",
            f"spec-replicates-{value}",
            _spec(significance={"replicates": int(value)}),
            untested=True,
            followups=(("validate", "SPEC"),),
        )
    yield Case(
        "", "pyproject", "spec-alpha-0.01-r19", _spec(significance={"alpha": 0.01}), untested=True
    )
    three = [
        {"id": f"s{i}", "type": t, "penalty": 0.5, "restarts": 2}
        for i, t in enumerate(("fpr_scan", "tpr_scan", "fpr_scan"))
    ]
    yield Case(
        "",
        "pyproject",
        "bonferroni-3-scans-r19",
        _spec(scans=three, gate={"correction": "bonferroni"}),
        untested=True,
    )
    yield Case(
        "", "pyproject", "flag-exit-zero", _spec(), args=("--exit-zero",), relaxed="--exit-zero"
    )
    yield Case(
        "",
        "pyproject",
        "env-replicates-0-sample-shape",
        _spec(),
        env={"FAIRSCAN_REPLICATES": "0"},
        args=("--workers", "1"),
        untested=True,
    )
    extends = {"version": 1, "name": "parent", "significance": {"replicates": 0}}
    yield Case(
        "",
        "pyproject",
        "extends-replicates-0",
        _spec(extends="parent.audit.yaml"),
        files={"audit/parent.audit.yaml": yaml.safe_dump(extends)},
        untested=True,
    )
    for where in ("parent", "env"):
        files = {"proj/pyproject.toml": '[tool.fairscan]\nexecutor = "dask://127.0.0.1:@LISTEN@"\n'}
        yield Case(
            "",
            "pyproject",
            f"executor-{where}",
            _spec(),
            files=files if where == "parent" else {},
            env={} if where == "parent" else {"FAIRSCAN_EXECUTOR": "dask://127.0.0.1:@LISTEN@"},
            cwd="proj/audit" if where == "parent" else "audit",
            listen=True,
            relaxed="pyproject.toml" if where == "parent" else "FAIRSCAN_EXECUTOR",
            expect_finding=False,
        )


GENERATORS: dict[str, Callable[[random.Random], Iterator[Case]]] = {
    "sql": _sql_cases,
    "secrets": _secret_cases,
    "console": _console_cases,
    "markdown": _markdown_cases,
    "pyproject": _pyproject_cases,
}


def generate(
    seed: int = 4, surfaces: Sequence[str] = SURFACES, limit: int | None = None
) -> list[Case]:
    """Every case of the round, numbered; with ``limit``, a seeded sample of that many per
    surface (the same sample for the same seed)."""
    cases: list[Case] = []
    for surface in surfaces:
        rng = random.Random(f"{seed}:{surface}")
        found = list(GENERATORS[surface](rng))
        if limit is not None and len(found) > limit:
            found = [found[i] for i in sorted(rng.sample(range(len(found)), limit))]
        for n, case in enumerate(found):
            case.id = f"{surface}-{n:04d}-{case.family}"
        cases.extend(found)
    return cases


# --------------------------------------------------------------------------------------------
# The round's environment: tokens, base data and databases, a PostgreSQL server
# --------------------------------------------------------------------------------------------


def _pg_module() -> Any:
    """tests/data/conftest.py (its PostgreSQL cluster and password), imported by path."""
    path = ROOT / "tests" / "data" / "conftest.py"
    spec = importlib.util.spec_from_file_location("fairscan_fuzz_pg_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[Any, str | None]]:
    """(the tests' throwaway PostgreSQL cluster, None), or (None, why not) when it cannot
    start (no initdb, no driver): the PostgreSQL cases are then skipped with that reason."""
    import pytest

    module = _pg_module()
    try:
        with contextlib.contextmanager(module.start_postgres)() as server:
            yield server, None
    except pytest.skip.Exception as exc:
        yield None, str(exc.msg)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once it is closed


@dataclass
class Round:
    """What every case shares: the tokens, the base files, the server."""

    root: Path
    seed: int
    secret: str
    read: str
    pg: Any = None
    pg_reason: str | None = None
    closed_port: int = 0

    @classmethod
    def create(cls, root: Path, seed: int, pg: Any = None, pg_reason: str | None = None) -> Round:
        digest = hashlib.sha256(f"fairscan-fuzz4:{seed}".encode()).hexdigest()
        rng = random.Random(digest)
        secret = "Sk" + "".join(c.upper() if rng.random() < 0.5 else c for c in digest[:22])
        made = cls(root, seed, secret, "rd" + digest[22:44], pg, pg_reason, _closed_port())
        made._base_files()
        if pg is not None:
            made._pg_tables()
        return made

    @property
    def base(self) -> Path:
        return self.root / "_base"

    def frame(self) -> pl.DataFrame:
        return synthetic_frame(800, seed=0, bias=True)

    def _base_files(self) -> None:
        import duckdb

        self.base.mkdir(parents=True, exist_ok=True)
        frame = self.frame()
        frame.write_parquet(self.base / "data.parquet")
        victim = pl.DataFrame({"id": list(range(50)), "v": [f"v{i}" for i in range(50)]})
        for name in ("db.duckdb", "other.duckdb"):
            con = duckdb.connect(str(self.base / name))
            con.register("f", frame.to_arrow())
            con.register("vf", victim.to_arrow())
            con.execute("create table credit as select * from f")
            con.execute("create table victim as select * from vf")
            con.close()
        for name in ("db.sqlite", "other.sqlite"):
            con2 = sqlite3.connect(self.base / name)
            con2.execute(
                "create table credit (sex text, region text, age_group text, "
                "y integer, p real, rec integer)"
            )
            con2.executemany("insert into credit values (?, ?, ?, ?, ?, ?)", frame.iter_rows())
            con2.execute("create table victim (id integer, v text)")
            con2.executemany("insert into victim values (?, ?)", victim.iter_rows())
            con2.commit()
            con2.close()
        (self.base / "canary.txt").write_text(self.read)
        pl.DataFrame({f"col_{self.read}": [self.read]}).write_csv(self.base / "canary.csv")
        pl.DataFrame({"region": [self.read]}).write_parquet(self.base / "canary.parquet")

    def _pg_tables(self) -> None:
        with self.pg.connect() as con:
            con.execute("drop table if exists credit")
            con.execute(
                "create table credit (sex text, region text, age_group text, "
                "y int, p double precision, rec int)"
            )
            with con.cursor().copy("copy credit from stdin") as copy:
                for row in self.frame().iter_rows():
                    copy.write_row(row)

    def substitutions(self, case_dir: Path, index: int) -> dict[str, str]:
        pg_port = str(self.pg.port) if self.pg is not None else str(self.closed_port)
        return {
            "@AUDIT@": str(case_dir / "audit"),
            "@OUTSIDE@": str(case_dir / "outside"),
            "@CANARYCSV@": str(case_dir / "outside" / "canary.csv"),
            "@CANARYPQ@": str(case_dir / "outside" / "canary.parquet"),
            "@CANARY@": str(case_dir / "outside" / "canary.txt"),
            "@SECRET@": self.secret,
            "@PGPORT@": pg_port,
            "@CLOSED@": str(self.closed_port),
            "@VICTIM@": f"victim_{index}",
            "@PWNED@": f"pwned_{index}",
        }


# --------------------------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------------------------


@dataclass
class Command:
    argv: list[str]
    code: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Result:
    case: Case
    outcome: str
    evidence: dict[str, list[str]]
    commands: list[Command]

    def record(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "outcome": self.outcome,
            "evidence": self.evidence,
            "input": self.case.describe(),
            "commands": [
                {
                    "argv": c.argv,
                    "exit": c.code,
                    "seconds": round(c.seconds, 2),
                    "stdout": c.stdout[-3000:],
                    "stderr": c.stderr[-3000:],
                }
                for c in self.commands
            ],
        }


class Listener:
    """A TCP port that records whether anything connected (an inherited executor)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _fill(value: Any, subs: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in subs.items():
            value = value.replace(key, text)
        return value
    if isinstance(value, dict):
        return {_fill(k, subs): _fill(v, subs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_fill(v, subs) for v in value)
    return value


def _snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: size, modification time and a content hash."""
    out: dict[str, tuple[int, int, str]] = {}
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            with contextlib.suppress(OSError):
                st = path.lstat()
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
                out[str(path.relative_to(folder))] = (st.st_size, st.st_mtime_ns, digest)
    return out


class Sandbox:
    """The case's folder: ``audit/`` (the spec, its data and databases; the working directory
    unless the case says otherwise), ``outside/`` (canaries and write targets), ``gh/`` (the
    Actions files), ``home/`` and ``tmp/``."""

    def __init__(self, rnd: Round, case: Case, index: int) -> None:
        self.rnd, self.case, self.index = rnd, case, index
        self.dir = rnd.root / f"c{index:04d}"
        self.subs = rnd.substitutions(self.dir, index)
        self.listener: Listener | None = None

    def prepare(self) -> None:
        d, base = self.dir, self.rnd.base
        for sub in ("audit", "outside", "gh", "home", "tmp"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
        os.chmod(d / "outside", 0o777)  # the PostgreSQL server (another user) may write here
        for name in ("canary.txt", "canary.csv", "canary.parquet", "other.duckdb", "other.sqlite"):
            shutil.copy(base / name, d / "outside" / name)
        (d / "outside" / f"{self.rnd.read}.name").write_text("x")
        if self.case.listen:
            self.listener = Listener()
            self.subs["@LISTEN@"] = str(self.listener.port)
        cwd = d / self.case.cwd
        cwd.mkdir(parents=True, exist_ok=True)
        self._data(cwd)
        for rel, text in self.case.files.items():
            target = d / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(
                _fill(text, self.subs).encode("latin-1", "strict")
                if "\ufeff" not in text
                else _fill(text, self.subs).encode()
            )
        if self.case.spec is not None:
            spec = _fill(self.case.spec, self.subs)
            text = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=10**6)
            (cwd / self.case.spec_name).write_text(text, encoding="utf-8")
        (d / "gh" / "summary.md").write_text("")
        (d / "gh" / "output").write_text("")
        if self.case.data == "postgres" and self.rnd.pg is not None:
            with self.rnd.pg.connect() as con:
                con.execute(f"drop table if exists victim_{self.index}, pwned_{self.index}")
                con.execute(
                    f"create table victim_{self.index} as "
                    "select g as id, 'v' || g as v from generate_series(0, 49) g"
                )
        self.before = _snapshot(d)  # reads every file: before the canaries' access times
        self.atimes = {}
        for name in CANARIES:  # atime before mtime: the next read moves it (relatime)
            path = d / "outside" / name
            st = path.stat()
            os.utime(path, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))
            self.atimes[name] = path.stat().st_atime_ns
        self.victim_before = self._victim()

    def _data(self, cwd: Path) -> None:
        base = self.rnd.base
        if self.case.data == "duckdb":
            shutil.copy(base / "db.duckdb", cwd / "db.duckdb")
        elif self.case.data == "sqlite":
            shutil.copy(base / "db.sqlite", cwd / "db.sqlite")
        if self.case.edit is None:
            shutil.copy(base / "data.parquet", cwd / "data.parquet")
            return
        kind, old, new = self.case.edit
        frame = self.rnd.frame()
        if kind == "value":
            frame = frame.with_columns(
                pl.when(pl.col("region") == old)
                .then(pl.lit(new))
                .otherwise(pl.col("region"))
                .alias("region")
            )
        else:
            frame = frame.rename({old: new})
        frame.write_parquet(cwd / "data.parquet")

    def _victim(self) -> str | None:
        if self.case.data != "postgres" or self.rnd.pg is None:
            return None
        with self.rnd.pg.connect() as con:
            rows = (
                con.execute(
                    f"select count(*), md5(coalesce(string_agg(id::text || ':' || v, ',' "
                    f"order by id), '')) from victim_{self.index}"
                ).fetchone()
                if self._exists(con, f"victim_{self.index}")
                else ("gone",)
            )
            pwned = self._exists(con, f"pwned_{self.index}")
        return f"{rows} pwned={pwned}"

    @staticmethod
    def _exists(con: Any, table: str) -> bool:
        return con.execute("select to_regclass(%s) is not null", (table,)).fetchone()[0]

    def env(self) -> dict[str, str]:
        d = self.dir
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(d / "home"),
            "TMPDIR": str(d / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(SRC),
            "PYTHONDONTWRITEBYTECODE": "1",
            "COLUMNS": "200",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(d / "audit"),
            "GITHUB_STEP_SUMMARY": str(d / "gh" / "summary.md"),
            "GITHUB_OUTPUT": str(d / "gh" / "output"),
            "FAIRSCAN_FUZZ_SECRET": self.rnd.secret,
            "FAIRSCAN_FUZZ_PGPASSWORD": self.rnd.pg.password
            if self.rnd.pg is not None
            else "unused-pg-password",
        }
        env.update(_fill(self.case.env, self.subs))
        return env

    def argvs(self) -> list[list[str]]:
        spec = self.case.spec_name
        first = ["run", spec, *_fill(list(self.case.args), self.subs)]
        more = [
            [spec if a == "SPEC" else _fill(a, self.subs) for a in f] for f in self.case.followups
        ]
        return [first, *more] if self.case.spec is not None else more

    def cleanup(self, keep: bool) -> None:
        if self.listener is not None:
            self.listener.close()
        if self.case.data == "postgres" and self.rnd.pg is not None:
            with contextlib.suppress(Exception), self.rnd.pg.connect() as con:
                con.execute(f"drop table if exists victim_{self.index}, pwned_{self.index}")
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_command(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Command:
    """``python -m fairscan.cli ARGV`` in its own process group, killed whole on timeout."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairscan.cli", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Command(
        argv,
        code,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        time.monotonic() - start,
    )


def run_case(
    rnd: Round, case: Case, index: int, *, timeout: float = TIMEOUT_S, keep: bool = False
) -> Result:
    if case.data == "postgres" and rnd.pg is None:
        return Result(case, "skipped", {"skipped": [rnd.pg_reason or "no PostgreSQL"]}, [])
    box = Sandbox(rnd, case, index)
    try:
        box.prepare()
        env, cwd = box.env(), box.dir / case.cwd
        commands = []
        for argv in box.argvs():
            commands.append(run_command(argv, cwd, env, timeout))
            if commands[-1].code is None:
                break
        evidence = judge(box, commands)
        outcome = next((k for k in PRIORITY if evidence.get(k)), "clean")
        return Result(case, outcome, {k: v for k, v in evidence.items() if v}, commands)
    finally:
        box.cleanup(keep)


# --------------------------------------------------------------------------------------------
# Judging: what the run printed and left behind
# --------------------------------------------------------------------------------------------

# fairscan's own annotations: ::error/::warning/::notice with escaped properties (no ':' or ','
# in a value) among them its title, then the escaped message (github.annotation)
OWN_ANNOTATION = re.compile(
    r"^::(error|warning|notice) (?:[a-zA-Z]+=[^,:\r\n]*,)*title=fairscan[^,:\r\n]*"
    r"(?:,[a-zA-Z]+=[^,:\r\n]*)*::"
)
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # how the runner splits a step's output into lines
OUTPUT_KEYS = {"significant-findings", "verdict", "exit-code", "report-paths"}
DANGEROUS_TAGS = {
    "script",
    "iframe",
    "object",
    "embed",
    "style",
    "form",
    "base",
    "meta",
    "link",
    "svg",
    "math",
    "frame",
    "frameset",
    "applet",
    "input",
    "textarea",
}
BAD_SCHEMES = ("javascript:", "vbscript:", "data:")


def live_commands(text: str) -> list[str]:
    """Output lines the Actions runner would take as workflow commands (``::cmd`` or
    ``##[cmd`` after leading blanks) that are not fairscan's own annotations."""
    found = []
    for line in LINE_BREAK.split(text):
        stripped = line.lstrip()
        if not (stripped.startswith("::") or stripped.startswith("##[")):
            continue
        if stripped == line and OWN_ANNOTATION.match(line) and not _payload_message(line):
            continue
        found.append(line[:200])
    return found


def _payload_message(line: str) -> bool:
    """An annotation whose message is a payload's (``::error ::fzx``), not fairscan's."""
    _head, _, message = line.partition("::")[2].partition("::")
    return message.lower().startswith(MARK)


def output_keys(text: str) -> list[str]:
    """The step outputs a ``$GITHUB_OUTPUT`` file sets (``k=v`` and ``k<<DELIM`` forms)."""
    keys, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            keys.append(key)
            i += 1
            while i < len(lines) and lines[i] != delim:
                i += 1
        elif "=" in line:
            keys.append(line.split("=", 1)[0])
        i += 1
    return keys


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text = tag + " " + " ".join(f"{k}={v}" for k, v in attrs)
        if MARK in text.lower():
            self.problems.append(f"tag from data: <{text[:120]}>")
        if tag in DANGEROUS_TAGS:
            self.problems.append(f"raw <{tag}>")
            self._script = tag == "script"
        for key, value in attrs:
            target = re.sub(r"[\x00-\x20]", "", html.unescape(value or "")).lower()
            if key in ("href", "src") and target.startswith(BAD_SCHEMES):
                self.problems.append(f"dangerous link {key}={value!r}")
            if tag == "img" and key == "src" and re.match(r"^(https?:|ftp:|//)", target):
                self.problems.append(f"remote image {value!r}")

    def handle_data(self, data: str) -> None:
        if self._script and MARK in data.lower():
            self.problems.append(f"script content from data: {data[:80]!r}")

    def handle_endtag(self, tag: str) -> None:
        self._script = False


def markdown_problems(text: str) -> list[str]:
    """Raw HTML, dangerous links and remote images in ``text`` rendered by markdown-it-py
    (CommonMark, HTML on) and python-markdown (its defaults, as the issue's Chromium check
    rendered it; and with tables and fenced code)."""
    import markdown
    from markdown_it import MarkdownIt

    problems = []
    renderers = (
        ("markdown-it", lambda t: MarkdownIt("commonmark").enable("table").render(t)),
        ("python-markdown", lambda t: markdown.markdown(t)),
        (
            "python-markdown+fences",
            lambda t: markdown.markdown(t, extensions=["tables", "fenced_code"]),
        ),
    )
    for name, render in renderers:
        parser = _Tags()
        parser.feed(render(text))
        problems += [f"{name}: {p}" for p in dict.fromkeys(parser.problems)]
    return problems


def html_problems(text: str) -> list[str]:
    """A report page: only tags or attributes carrying the payload marker, and dangerous links
    (the page has scripts of its own)."""
    parser = _Tags()
    parser.feed(text)
    return [p for p in parser.problems if not p.startswith("raw <")]


def _changed(box: Sandbox, after: dict[str, tuple[int, int, str]]) -> list[str]:
    return sorted(k for k, v in after.items() if box.before.get(k) != v)


def judge(box: Sandbox, commands: list[Command]) -> dict[str, list[str]]:
    case, d = box.case, box.dir
    ev: dict[str, list[str]] = {k: [] for k in PRIORITY}
    for name, before in box.atimes.items():  # before the snapshot reads them
        if (d / "outside" / name).stat().st_atime_ns != before:
            ev["file read"].append(f"outside/{name} was read (its access time moved)")
    after = _snapshot(d)
    changed = _changed(box, after)
    texts = {f"{c.argv[0]}:stdout": c.stdout for c in commands}
    texts.update({f"{c.argv[0]}:stderr": c.stderr for c in commands})
    for rel in changed:
        if (d / rel).is_file():
            texts[rel] = (d / rel).read_bytes().decode("utf-8", "replace")
    # process ends
    for c in commands:
        if c.code is None:
            ev["hang"].append(f"{c.argv[0]}: no end within the timeout")
        elif c.code < 0 or c.code in (134, 137, 139):
            ev["crash"].append(f"{c.argv[0]}: exit {c.code}")
        elif c.code not in EXIT_CODES:
            ev["internal error"].append(f"{c.argv[0]}: exit {c.code}")
        elif "internal error" in c.stdout + c.stderr or TRACEBACK in c.stdout + c.stderr:
            line = next(
                (
                    ln
                    for ln in (c.stderr + c.stdout).splitlines()
                    if "internal error" in ln or "Error" in ln
                ),
                "",
            )
            ev["internal error"].append(f"{c.argv[0]}: exit {c.code}: {line[:200]}")
    # secrets and read tokens anywhere in the outputs
    secrets = [box.rnd.secret]
    if box.rnd.pg is not None and case.data == "postgres":
        secrets.append(box.rnd.pg.password)
    for where, text in texts.items():
        low = text.lower()
        for secret in secrets:
            if secret.lower() in low:
                ev["secret leak"].append(f"{where}: {_around(text, secret)}")
        if box.rnd.read in low:
            ev["file read"].append(f"{where}: {_around(text, box.rnd.read)}")
    # writes: anything new or changed outside the reports, history, Actions files and tmp
    allowed = (*(f"{case.cwd}/{p}" for p in ("out/", "hist.db")), "gh/", "tmp/", *case.allow)
    for rel in changed:
        if not rel.startswith(allowed):
            ev["side effect"].append(f"wrote {rel}")
    victim = box._victim()
    if victim != box.victim_before:
        ev["side effect"].append(f"PostgreSQL victim {box.victim_before} -> {victim}")
    if box.listener is not None and box.listener.connections:
        named = case.relaxed and any(
            case.relaxed in ln for c in commands for ln in c.stderr.splitlines()
        )
        if not named:
            ev["side effect"].append(
                f"{box.listener.connections} connection(s) to the inherited executor, "
                "no stderr line names its source"
            )
    # workflow commands, step outputs, Markdown and HTML sinks
    for c in commands:
        for stream in ("stdout", "stderr"):
            for line in live_commands(getattr(c, stream)):
                ev["injection"].append(f"{c.argv[0]} {stream}: live command {line!r}")
    keys = output_keys((d / "gh" / "output").read_text("utf-8", "replace"))
    for key in keys:
        if key not in OUTPUT_KEYS:
            ev["injection"].append(f"GITHUB_OUTPUT sets {key!r}")
    first = commands[0] if commands and commands[0].argv[0] == "run" else None
    if (
        first is not None
        and first.code == 1
        and case.expect_finding
        and not any(
            OWN_ANNOTATION.match(ln) and "significant finding" in ln
            for ln in LINE_BREAK.split(first.stderr + first.stdout)
        )
    ):
        ev["injection"].append("fairscan's own annotation of the finding is missing")
    for where, text in texts.items():
        if where.endswith(".md") or where == "gh/summary.md" or where == "diff:stdout":
            ev["injection"] += [f"{where}: {p}" for p in markdown_problems(text)]
        elif where.endswith(".html"):
            ev["injection"] += [f"{where}: {p}" for p in html_problems(text)]
    # the gate
    if first is not None and first.code == 0:
        said_pass = "PASS" in first.stdout + first.stderr
        named = case.relaxed is not None and any(
            case.relaxed in ln for ln in first.stderr.splitlines()
        )
        if case.untested and said_pass:
            ev["silent pass"].append("exit 0, PASS, on a run that cannot reach alpha")
        elif case.relaxed is not None and not named and case.expect_finding:
            ev["silent pass"].append(f"exit 0, no stderr line names {case.relaxed!r}")
        elif case.strict_child:
            ev["silent pass"].append("exit 0 although the nearer table is stricter")
    return ev


def _around(text: str, token: str) -> str:
    at = text.lower().find(token.lower())
    return repr(text[max(0, at - 80) : at + len(token) + 40])


# --------------------------------------------------------------------------------------------
# A round
# --------------------------------------------------------------------------------------------


def run_round(
    cases: Sequence[Case],
    rnd: Round,
    *,
    jobs: int = 2,
    timeout: float = TIMEOUT_S,
    keep: bool = False,
    progress: Callable[[Result, int], None] | None = None,
) -> list[Result]:
    from concurrent.futures import ThreadPoolExecutor

    def one(index: int) -> Result:
        try:
            result = run_case(rnd, cases[index], index, timeout=timeout, keep=keep)
        except Exception as exc:  # the harness's own failure: shown, never counted as clean
            result = Result(cases[index], "harness error", {"harness error": [repr(exc)]}, [])
        if progress is not None:
            progress(result, index)
        return result

    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        return list(pool.map(one, range(len(cases))))
    finally:  # on Ctrl-C, drop the cases not started (the running ones end on their own)
        pool.shutdown(wait=True, cancel_futures=True)


def table(results: Sequence[Result]) -> str:
    """Counts by surface x outcome, as a Markdown table."""
    outcomes = [o for o in OUTCOMES if any(r.outcome == o for r in results)]
    outcomes += sorted({r.outcome for r in results} - set(outcomes))
    rows = [
        "| surface | cases | " + " | ".join(outcomes) + " |",
        "|---|---:|" + "---:|" * len(outcomes),
    ]
    surfaces = [s for s in SURFACES if any(r.case.surface == s for r in results)]
    for surface in [*surfaces, "all"]:
        picked = [r for r in results if surface in ("all", r.case.surface)]
        counts = [sum(r.outcome == o for r in picked) for o in outcomes]
        name = f"**{surface}**" if surface == "all" else surface
        rows.append(f"| {name} | {len(picked)} | " + " | ".join(map(str, counts)) + " |")
    return "\n".join(rows)


def write_failures(results: Sequence[Result], path: Path, header: dict[str, Any]) -> None:
    body = dict(header)
    body["counts"] = {o: sum(r.outcome == o for r in results) for o in OUTCOMES}
    body["failures"] = [r.record() for r in results if r.outcome not in ("clean", "skipped")]
    body["skipped"] = [
        {"id": r.case.id, "why": r.evidence} for r in results if r.outcome == "skipped"
    ]
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False), encoding="utf-8")


def round_root(parent: str | None = None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="fairscan-fuzz4-", dir=parent))
    os.chmod(root, 0o755)  # the PostgreSQL server (another user) reaches the canaries
    return root
