"""A real, throw-away PostgreSQL server for the tests and benchmarks: Debian's binaries
(`/usr/lib/postgresql/*/bin`, or `LOGWARDEN_PG_BIN`), `initdb` into a temp folder, `pg_ctl` on a
free loopback port, one fresh database per test. As root, the server runs as the `postgres` OS
user (initdb refuses root). Missing binaries fail with how to install them — never a skip.

`pg_cluster` (session) and `pg_url` (one database per test) are pytest fixtures; `PgCluster` is
usable on its own (bench/watch.py).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

SERVER_OPTIONS = ("-c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off "
                  "-c synchronous_commit=off -c max_connections=200")  # a throw-away server


def pg_bin() -> Path:
    candidates = [os.environ.get("LOGWARDEN_PG_BIN", "")] + sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file():
            return Path(folder)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError("PostgreSQL server binaries not found (initdb, pg_ctl): install Debian's `postgresql` "
                       "package (scripts/install_system_deps.sh does) or set LOGWARDEN_PG_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    """initdb + pg_ctl start in a temp folder; `stop()` removes it all."""

    def __init__(self) -> None:
        self.bin = pg_bin()
        self.root = Path(tempfile.mkdtemp(prefix="lw-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.os_user = _server_user()
        self.started = False

    def start(self) -> PgCluster:
        if self.os_user is not None:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, user=self.os_user)
        self._run("initdb", "-D", str(self.data), "-U", "logwarden", "--auth=trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self.resume()
        return self

    def halt(self) -> None:
        """The server goes down (its connections are cut), its data kept: `resume` brings it back."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.started = False

    def resume(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                  "-o", f"-p {self.port} -k {self.root} {SERVER_OPTIONS}", "start")
        self.started = True

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://logwarden@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        import psycopg

        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=logwarden dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        command = [str(self.bin / tool), *args]
        if self.os_user is not None:
            command = ["runuser", "-u", self.os_user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if check and done.returncode != 0:
            log = (self.root / "server.log").read_text()[-2000:] if (self.root / "server.log").exists() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr[-2000:]}\n{log}")


def _server_user() -> str | None:
    """None when not root (the server runs as us); else an unprivileged user for it."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root, but there is no `postgres` user to run the test server as")


@pytest.fixture(scope="session")
def pg_cluster():
    cluster = PgCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture()
def pg_url(pg_cluster) -> str:
    """A fresh, empty database on the session's server."""
    return pg_cluster.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request, tmp_path) -> str:
    """The store on each backend: a SQLite file, and a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lw.db'}"
    return request.getfixturevalue("pg_cluster").create_database()
