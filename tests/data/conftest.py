"""A throwaway PostgreSQL cluster for the database-source tests: ``initdb`` + ``pg_ctl`` on
127.0.0.1 and a random port, with password (SCRAM) authentication, stopped and deleted after
the tests. As root the server runs as the ``postgres`` user (initdb refuses root). Skipped,
with the reason, when the server binaries are absent (``.ci/run`` installs Debian's
``postgresql`` package)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "auditor"
PG_PASSWORD = "pw-Zq81!x"  # the tests check that it never shows in a message or report


@dataclass(frozen=True)
class Postgres:
    port: int
    user: str
    password: str
    database: str = "postgres"

    def url(self, password: str = "${FAIRSCAN_TEST_PGPASSWORD}") -> str:
        return f"postgresql://{self.user}:{password}@127.0.0.1:{self.port}/{self.database}"

    def connect(self) -> object:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=self.database,
            autocommit=True,
        )


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_postgres() -> Iterator[Postgres]:
    """The cluster's lifetime, as a generator (the ``postgres`` fixture; also entered with
    ``contextlib.contextmanager`` by the fuzz round, tests/fuzz/round4.py: its skips raise
    ``pytest.skip.Exception``)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed")
    pytest.importorskip("psycopg", reason="the PostgreSQL driver psycopg is not installed")
    pytest.importorskip("ibis", reason="Ibis (fairscan[sql]) is not installed")
    root = Path(tempfile.mkdtemp(prefix="fairscan-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        import pwd

        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root, ignore_errors=True)
            pytest.skip("running as root and there is no 'postgres' user to run the server")
        os.chown(root, account.pw_uid, account.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    pwfile = root / "pw"
    pwfile.write_text(PG_PASSWORD + "\n")
    if prefix:
        os.chown(pwfile, account.pw_uid, account.pw_gid)
    data = root / "data"
    port = _free_port()

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120)

    try:
        run(
            initdb,
            "-D",
            str(data),
            "-U",
            PG_USER,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--locale=C",
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot start a PostgreSQL cluster: {exc.stderr.decode(errors='replace')}")
    try:
        yield Postgres(port, PG_USER, PG_PASSWORD)
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


postgres = pytest.fixture(scope="session", name="postgres")(start_postgres)
