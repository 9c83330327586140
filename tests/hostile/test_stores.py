"""Issue 32, items 8-9: stores and settings that are not ours. Read commands never write, create or
migrate; no command touches another application's database; a store in a read-only file or folder
can be read; a `.env` in the current folder is never read, and `config` / `db info` say where each
setting came from."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _hostile import brute_force, write_lines
from _repo import REPO
from click.testing import CliRunner
from sqlalchemy import insert
from sqlalchemy import text as sql

from logwarden.app.config import Settings, get_settings
from logwarden.app.store import open_store
from logwarden.app.store.database import make_engine
from logwarden.app.store.migrations import STEPS, _schema_migrations
from logwarden.cli.main import main

READS = (("records", "list"), ("records", "show", "abc"), ("db", "info"), ("export", "--format", "jsonl"),
         ("incidents", "list"), ("incidents", "show", "inc-abc"), ("export", "--kind", "incidents", "--format", "ocsf"))


def cli(*args: str, **kw):
    return CliRunner().invoke(main, list(args), **kw)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def foreign(tmp_path) -> Path:
    """Another application's SQLite file, with a `records` table of its own."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO records VALUES (1, 'theirs')")
    return path


# -- 8. foreign and read-only stores ----------------------------------------------------------------------


def test_no_command_reads_or_migrates_another_applications_database(tmp_path, foreign):
    before = sha(foreign)
    log = write_lines(tmp_path / "auth.log", brute_force())
    for args in (*READS, ("analyze", str(log), "--rules-only"), ("db", "migrate")):
        done = cli(*args, "--db", f"sqlite:///{foreign}")
        assert done.exit_code == 2, (args, done.output)
        assert "another application's database" in done.output and "Traceback" not in done.output
    assert sha(foreign) == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "auth.log"]


def test_on_postgresql_too_a_foreign_database_is_refused_and_an_empty_one_becomes_a_store(pg_cluster):
    from sqlalchemy import create_engine

    from logwarden.errors import StoreInputError

    foreign = pg_cluster.create_database()
    engine = create_engine(foreign)
    with engine.begin() as conn:
        conn.execute(sql("CREATE TABLE records (id INTEGER PRIMARY KEY, name TEXT)"))
    for readonly in (True, False):
        with pytest.raises(StoreInputError, match="another application's database"):
            open_store(foreign, readonly=readonly)
    with engine.connect() as conn:
        assert sorted(conn.execute(sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars()) == [
            "records"]
    engine.dispose()
    empty = pg_cluster.create_database()
    with pytest.raises(StoreInputError, match="no logwarden store yet"):
        open_store(empty, readonly=True)
    open_store(empty).close()
    open_store(empty, readonly=True).close()


def test_read_commands_create_nothing(tmp_path):
    for args in READS:
        done = cli(*args, "--db", f"sqlite:///{tmp_path / 'none' / 'lw.db'}")
        assert done.exit_code == 2 and "Traceback" not in done.output, (args, done.output)
    assert list(tmp_path.iterdir()) == []


def test_read_commands_do_not_migrate_an_older_store_and_db_migrate_does(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    with engine.begin() as conn:  # a store as logwarden made it before schema 9
        _schema_migrations.create(conn)
        for version, name, step in STEPS:
            if version < 9:
                step(conn)
                conn.execute(insert(_schema_migrations).values(version=version, name=name,
                                                               applied_at=__import__("datetime").datetime.now()))
    engine.dispose()
    before = sha(tmp_path / "old.db")
    listed = cli("records", "list", "--db", url)
    assert listed.exit_code == 2 and "db migrate" in " ".join(listed.output.split())  # the console wraps it
    older = max(version for version, _, _ in STEPS if version < 9)
    assert json.loads(cli("db", "info", "--json", "--db", url).stdout)["schema_version"] == older
    assert sha(tmp_path / "old.db") == before
    assert json.loads(cli("db", "migrate", "--json", "--db", url).stdout)["applied"] == [v for v, _, _ in STEPS if v >= 9]
    assert cli("records", "list", "--db", url).exit_code == 0


def _as_another_user(fn) -> int:
    """Run `fn` in a child without the right to write (root ignores file modes, so it drops to
    `nobody` there); returns the child's exit status."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            code = fn()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_store_in_a_read_only_folder_can_be_listed_and_exported(tmp_path):
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # outside pytest's 0700 tree: `nobody` must reach it
    try:
        url = f"sqlite:///{folder / 'lw.db'}"
        log = write_lines(tmp_path / "auth.log", brute_force())
        analyzed = subprocess.run([sys.executable, "-m", "logwarden.cli.main", "analyze", str(log), "--rules-only",
                                   "--final", "--db", url], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert analyzed.returncode == 0, analyzed.stderr  # it exited: no -wal or -shm is left open beside the file
        warm = f"sqlite:///{tmp_path / 'warm.db'}"  # the commands' imports, warmed before rights are dropped
        assert cli("analyze", str(log), "--rules-only", "--final", "--db", warm).exit_code == 0
        assert cli("records", "list", "--db", warm).exit_code == 0
        assert cli("export", "--format", "cef", "--db", warm).exit_code == 0
        (folder / "lw.db").chmod(0o444)
        folder.chmod(0o555)
        before = sorted(p.name for p in folder.iterdir())

        def read() -> int:
            listed = cli("records", "list", "--json", "--db", url)
            exported = cli("export", "--format", "cef", "--db", url)
            ok = listed.exit_code == 0 and len(json.loads(listed.stdout)) == 1 and exported.exit_code == 0
            return 0 if ok and "CEF:0" in exported.stdout else 3

        assert _as_another_user(read) == 0
        assert sorted(p.name for p in folder.iterdir()) == before  # nothing written beside it
    finally:
        folder.chmod(stat.S_IRWXU)
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


# -- 9. settings only from the environment and an explicit file ------------------------------------------


@pytest.fixture
def dotenv(tmp_path, monkeypatch) -> Path:
    """A .env in the folder the analyst stands in, as an attacker would leave it."""
    (tmp_path / ".env").write_text(f"LOGWARDEN_SIGMA_MIN_LEVEL=critical\nLOGWARDEN_HOME={tmp_path / 'moved'}\n"
                                   f"LOGWARDEN_DB=sqlite:///{tmp_path / 'moved.db'}\n")
    monkeypatch.chdir(tmp_path)
    for name in ("LOGWARDEN_SIGMA_MIN_LEVEL", "LOGWARDEN_DB", "LOGWARDEN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield tmp_path / ".env"
    os.environ.pop("LOGWARDEN_CONFIG", None)  # `--config` sets it for the process (and the UI it starts)
    get_settings.cache_clear()


def test_a_dotenv_in_the_current_folder_is_not_read(dotenv):
    settings = Settings()
    assert settings.sigma_min_level == "low" and "moved" not in settings.db_url
    log = write_lines(dotenv.parent / "auth.log", brute_force())
    done = cli("analyze", str(log), "--rules-only", "--final", "--json", "--db", f"sqlite:///{dotenv.parent / 'x.db'}")
    assert json.loads(done.stdout)["metrics"]["records"] == 1  # the medium brute-force rule still runs
    assert not (dotenv.parent / "moved").exists() and not (dotenv.parent / "moved.db").exists()


def test_an_explicit_config_file_is_read_and_config_says_where_each_setting_came_from(dotenv, monkeypatch):
    monkeypatch.setenv("LOGWARDEN_NODE", "web01")
    shown = json.loads(cli("--config", str(dotenv), "config", "--json").stdout)
    settings = shown["settings"]
    assert shown["config_file"] == str(dotenv)
    assert settings["sigma_min_level"] == {"value": "critical", "from": f"config file {dotenv}"}
    assert settings["node"] == {"value": "web01", "from": "environment LOGWARDEN_NODE"}
    assert settings["window_max_lines"]["from"] == "default"
    missing = cli("--config", str(dotenv.parent / "nope.env"), "config")
    assert missing.exit_code == 2 and "not a readable file" in missing.output


def test_db_info_says_where_the_store_url_came_from(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    open_store(url).close()
    assert json.loads(cli("db", "info", "--json", "--db", url).stdout)["url_from"] == "--db"
    monkeypatch.setenv("LOGWARDEN_DB", url)
    assert json.loads(cli("db", "info", "--json").stdout)["url_from"] == "environment LOGWARDEN_DB"


def test_the_store_marker_tells_logwarden_from_others(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    with store.engine.connect() as conn:
        assert conn.execute(sql("SELECT value FROM logwarden_store WHERE key = 'application'")).scalar() == "logwarden"
    store.close()
