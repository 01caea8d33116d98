"""Secrets of a connection URL (issue 34): every URL fairscan shows or stores keeps only the
query parameters known to be harmless (:mod:`fairscan.redact`), ``${NAME}`` values are
percent-encoded before they are spliced in, and a driver's message has every secret masked,
case-insensitively. Run through ``audit run`` on an SQLite file and a throwaway PostgreSQL
server (tests/data/conftest.py)."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from lazy_import import require
from typer.testing import CliRunner

from fairscan.cli import app
from fairscan.redact import interpolated, literal_secret, mask_text, shown_url

from .conftest import Postgres

require("ibis", reason="Ibis (fairscan[sql]) is not installed")

ROOT = Path(__file__).resolve().parents[2]
CREDIT = ROOT / "sample_data" / "credit.csv"
COLUMNS = ("sex", "ethnicity", "age_group", "region", "default", "high_risk")
SPEC = """\
version: 1
name: secrets
data:
  connection: '{connection}'
  table: credit
columns: {{outcome: default, recommendation: high_risk}}
attributes: [sex, ethnicity, age_group, region]
scans:
  - {{id: fpr, type: fpr_scan, restarts: 5}}
significance: {{replicates: 39, seed: 1, workers: 1}}
output: {{dir: out, formats: [json, markdown, html, sarif]}}
"""


def _audit(*args: str | Path) -> tuple[int, str]:
    """``audit ARGS`` in this process: the exit code and everything printed."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout + result.stderr


def _spec(folder: Path, connection: str) -> Path:
    spec = folder / "secrets.audit.yaml"
    spec.write_text(SPEC.format(connection=connection), encoding="utf-8")
    return spec


def _written(folder: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((folder / "out").iterdir()))


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # annotations are printed too
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)


@pytest.fixture(scope="module")
def credit() -> pl.DataFrame:
    return pl.read_csv(CREDIT).select(COLUMNS)


@pytest.fixture
def sqlite_file(tmp_path: Path, credit: pl.DataFrame) -> Path:
    path = tmp_path / "credit.sqlite"
    con = sqlite3.connect(path)
    con.execute('create table credit (sex, ethnicity, age_group, region, "default", high_risk)')
    con.executemany("insert into credit values (?, ?, ?, ?, ?, ?)", credit.iter_rows())
    con.commit()
    con.close()
    return path


# --- the allow-list, the splicing and the masking themselves ------------------------------------


def test_shown_url_keeps_only_harmless_parameters() -> None:
    url = (
        "postgresql://me:${PW}@${DB_HOST}:5432/ml?sslmode=require&application_name=a"
        "&sslpassword=${X}&access_token=t0k&passfile=/p/x&options=-c%20password%3Dz"
        "&credentials_info=abc#frag"
    )
    assert shown_url(url) == (
        "postgresql://${DB_HOST}:5432/ml?sslmode=require&application_name=a"
        "&sslpassword=***&access_token=***&passfile=***&options=***&credentials_info=***"
    )
    assert shown_url("sqlite:////abs/f.sqlite") == "sqlite:////abs/f.sqlite"
    assert shown_url("credit.duckdb") == "credit.duckdb"
    assert shown_url("host=h password=pw dbname=d") == "host=h password=*** dbname=d"


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("postgresql://u:pw@h/db", "password"),
        ("postgresql://h/db?sslpassword=LIT", "sslpassword"),
        ("postgresql://h/db?access_token=LIT", "access_token"),
        ("postgresql://h/db?options=-c%20password%3DLIT", "options"),
        ("bigquery://p/d?credentials_info=LIT", "credentials_info"),
        ("postgresql://h/db?Client_Secret=LIT", "Client_Secret"),
        ("snowflake://u@a/db?api_key=LIT", "api_key"),
        ("postgresql://u:${PW}@h/db?sslpassword=${SSL}&passfile=/p&sslkey=/k", None),
        ("postgresql://h/db?options=-c%20password%3D${PW}", None),
    ],
)
def test_literal_secrets_are_found(url: str, secret: str | None) -> None:
    assert literal_secret(url) == secret


def test_spliced_values_cannot_move_the_connection() -> None:
    env = {"PW": "x@evil.example:1/db?", "HOST": "Evil.example/x@y", "APP": "a&password=b"}
    url = interpolated("postgresql://me:${PW}@${HOST}:5432/ml?application_name=${APP}", env)
    from urllib.parse import parse_qsl, unquote_plus, urlsplit

    parts = urlsplit(url)
    assert parts.port == 5432 and parts.path == "/ml" and parts.username == "me"
    assert unquote_plus(parts.password or "") == env["PW"]  # as Ibis decodes it
    assert dict(parse_qsl(parts.query)) == {"application_name": "a&password=b"}
    assert "evil.example:1" not in (parts.hostname or "")
    assert interpolated("postgresql://${H}:5432/db", {"H": "[::1]"}) == "postgresql://[::1]:5432/db"


def test_masking_is_case_insensitive_and_catches_encoded_forms() -> None:
    text = (
        'could not translate host name "db-secret.example" (p%40ss%2F) at https://u:p@h/x?token=1'
    )
    masked = mask_text(text, ["DB-Secret.Example", "p@ss/"])
    assert masked == 'could not translate host name "***" (***) at https://h/x?token=***'


# --- through audit run ----------------------------------------------------------------------


def test_unknown_parameters_never_reach_a_report(sqlite_file: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"sqlite:///{sqlite_file}?passfile=/etc/Secret-Pass-File&threads=2")
    code, printed = _audit("run", spec, "--no-progress")
    assert code in (0, 1), printed
    written = _written(tmp_path)
    assert "Secret-Pass-File" not in written + printed
    report = json.loads((tmp_path / "out" / "secrets.json").read_text(encoding="utf-8"))
    shown = f"sqlite:///{sqlite_file}?passfile=***&threads=2"
    assert report["provenance"]["parameters"]["data"]["connection"] == shown
    code, resolved = _audit("validate", spec, "--show-resolved")
    assert code == 0 and "Secret-Pass-File" not in resolved and "passfile=***" in resolved

    from fairscan.report.mlflow_log import report_params
    from fairscan.report.read import read_report

    params = report_params(read_report(tmp_path / "out" / "secrets.json"))
    assert "Secret-Pass-File" not in json.dumps(params)


@pytest.mark.parametrize(
    "query",
    [
        "sslpassword=Lit-Secret-1",
        "access_token=Lit-Secret-1",
        "options=-c%20password%3DLit-Secret-1",
        "credentials_info=Lit-Secret-1",
    ],
)
def test_a_literal_secret_is_refused_without_being_shown(
    sqlite_file: Path, tmp_path: Path, query: str
) -> None:
    spec = _spec(tmp_path, f"sqlite:///{sqlite_file}?{query}")
    code, printed = _audit("run", spec, "--no-progress")
    assert (
        code == 2
        and "data.connection" in printed
        and "secrets come from the environment" in printed
    )
    assert "Lit-Secret-1" not in printed and not (tmp_path / "out").exists()


# --- a real server: PostgreSQL ---------------------------------------------------------------

TRICKY = "p@ss:w/rd?#+ &x=Y"  # every character that moves a URL's parts


@pytest.fixture(scope="module")
def tricky(postgres: Postgres, credit: pl.DataFrame) -> Iterator[Postgres]:
    """A role whose password holds URL delimiters, owning a table of its own."""
    with postgres.connect() as con:
        con.execute("drop table if exists secrets_credit")
        con.execute("drop role if exists tricky")
        con.execute("create role tricky login password 'p@ss:w/rd?#+ &x=Y'")
        con.execute(
            "create table secrets_credit (sex text, ethnicity text, age_group text, "
            'region text, "default" int, high_risk int)'
        )
        with con.cursor().copy("copy secrets_credit from stdin") as copy:
            for row in credit.iter_rows():
                copy.write_row(row)
        con.execute("grant select on secrets_credit to tricky")
    yield Postgres(postgres.port, "tricky", TRICKY)


def test_a_password_with_delimiters_connects_to_the_named_host(
    tricky: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRSCAN_TEST_TRICKY", TRICKY)
    monkeypatch.setenv("FAIRSCAN_TEST_SSLPW", "Ssl-Secret-Value")
    url = (
        f"postgresql://tricky:${{FAIRSCAN_TEST_TRICKY}}@127.0.0.1:{tricky.port}/postgres"
        "?sslmode=disable&sslpassword=${FAIRSCAN_TEST_SSLPW}&passfile=/no/Secret-Passfile"
    )
    spec = _spec(tmp_path, url)
    spec.write_text(spec.read_text().replace("table: credit", "table: secrets_credit"))
    code, printed = _audit("run", spec, "--no-progress")
    assert code in (0, 1), printed
    everything = printed + _written(tmp_path)
    for secret in ("p@ss", "Ssl-Secret-Value", "Secret-Passfile", "tricky"):
        assert secret not in everything, secret
    report = json.loads((tmp_path / "out" / "secrets.json").read_text(encoding="utf-8"))
    shown = f"postgresql://127.0.0.1:{tricky.port}/postgres?sslmode=disable&sslpassword=***&passfile=***"
    assert report["provenance"]["data_source"]["connection"] == shown


def test_a_value_with_a_host_in_it_does_not_reach_that_host(
    tricky: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spliced raw, ``wrong@127.0.0.1:OTHER/x?`` sent the connection to port OTHER, while the
    message named the spec's host; encoded, the spec's server refuses the password."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        other = s.getsockname()[1]
    monkeypatch.setenv("FAIRSCAN_TEST_MOVED", f"Wrong-Secret@127.0.0.1:{other}/x?")
    spec = _spec(
        tmp_path, f"postgresql://tricky:${{FAIRSCAN_TEST_MOVED}}@127.0.0.1:{tricky.port}/postgres"
    )
    code, printed = _audit("run", spec, "--no-progress")
    assert code == 2 and "authentication failed" in printed, printed
    assert "wrong-secret" not in printed.lower()


def test_a_failing_connection_masks_every_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host from the environment is echoed lower-cased by the driver; a parameter outside the
    allow-list is echoed as written: neither shows."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("FAIRSCAN_TEST_HOST", "Secret-Host.INVALID")
    monkeypatch.setenv("FAIRSCAN_TEST_PW", "Pw-Secret-9")
    for url in (
        "postgresql://u:${FAIRSCAN_TEST_PW}@${FAIRSCAN_TEST_HOST}:5432/db?connect_timeout=2",
        f"postgresql://u:${{FAIRSCAN_TEST_PW}}@127.0.0.1:{port}/db?passfile=/x/Secret-Passfile",
    ):
        spec = _spec(tmp_path, url)
        code, printed = _audit("run", spec, "--no-progress")
        assert code == 2 and "data.connection" in printed, printed
        for secret in ("secret-host", "pw-secret-9", "secret-passfile"):
            assert secret not in printed.lower(), printed
