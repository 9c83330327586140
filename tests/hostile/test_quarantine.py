"""Issue 43, item 1: a window whose rows the database refuses is quarantined as an error row, and
the run goes on. The refusal is real: a trigger in the SQLite store refuses the evidence of one
host's lines (as a CHECK constraint, or a value the database cannot hold, would), after that
window's record row was already written — so the test also proves the savepoint's rollback."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from _hostile import accounted, brute_force, write_lines
from _repo import REPO
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main

REFUSE_POISON = """CREATE TRIGGER refuse_poison BEFORE INSERT ON evidence WHEN NEW.text LIKE '% poison sshd%'
BEGIN SELECT RAISE(ABORT, 'evidence from host poison refused'); END"""


def burst(hour: int, host: str) -> list[str]:
    """30 sshd failures in one minute: one window, one brute-force record."""
    return [line.replace("10:00:", f"{hour}:00:").replace(" web01 ", f" {host} ") for line in brute_force(30)]


@pytest.fixture
def refusing_store(tmp_path):
    """A real logwarden SQLite store whose database refuses the evidence of host `poison`."""
    db = tmp_path / "lw.db"
    open_store(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as conn:
        conn.execute(REFUSE_POISON)
    return db


@pytest.fixture
def logs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    poisoned = write_lines(folder / "auth.log", burst(10, "web01") + burst(11, "poison") + burst(12, "web01"))
    clean = write_lines(folder / "other.log", burst(10, "web02"))
    return folder, poisoned, clean


def stored(db, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def test_a_refused_window_is_an_error_row_and_analyze_keeps_the_rest(refusing_store, logs):
    folder, poisoned, clean = logs
    url = f"sqlite:///{refusing_store}"
    result = CliRunner().invoke(main, ["analyze", str(folder), "--rules-only", "--final", "--json", "--db", url])
    assert result.exit_code == 1, result.output  # finished, with an error to report
    run = json.loads(result.stdout)
    assert run["metrics"]["windows_quarantined"] == 1 and run["metrics"]["lines_quarantined"] == 30
    assert run["metrics"]["errors"] == 1 and run["metrics"]["lines"] == 120
    assert sorted(r["host"] for r in run["records"]) == ["web01", "web01", "web02"]
    assert run["metrics"]["records"] == 3 == sum(run["metrics"]["records_by_level"].values())
    # the refused window's record row was written before its evidence: rolled back with it
    assert stored(refusing_store, "SELECT COUNT(*) FROM records WHERE host = 'poison'") == [(0,)]
    assert accounted(refusing_store, str(poisoned)) == (60, 1) and accounted(refusing_store, str(clean)) == (30, 0)
    [(stage, line_no, message)] = stored(refusing_store, "SELECT stage, line_no, message FROM errors")
    assert stage == "store" and line_no == 31 and "lines 31-60" in message and "evidence from host poison" in message
    # its lines count as read: the position is the file's end, and a resume reads nothing again
    assert stored(refusing_store, "SELECT offset, line_no FROM sources WHERE path = ?", str(poisoned)) == [
        (poisoned.stat().st_size, 90)]
    again = CliRunner().invoke(main, ["analyze", str(folder), "--rules-only", "--final", "--resume", "--json",
                                      "--db", url])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["metrics"]["lines"] == 0
    assert stored(refusing_store, "SELECT COUNT(*) FROM errors") == [(1,)]


def test_the_watcher_quarantines_a_refused_window_and_goes_on(refusing_store, logs):
    folder, poisoned, clean = logs
    done = subprocess.run([sys.executable, "-m", "logwarden.cli.main", "watch", str(folder), "--rules-only",
                           "--from-start", "--max-seconds", "4", "--db", f"sqlite:///{refusing_store}"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert accounted(refusing_store, str(poisoned)) == (60, 1) and accounted(refusing_store, str(clean)) == (30, 0)
    assert stored(refusing_store, "SELECT host FROM records ORDER BY host") == [("web01",), ("web01",), ("web02",)]
    [(metrics,)] = stored(refusing_store, "SELECT metrics FROM runs WHERE command LIKE 'watch %'")
    assert json.loads(metrics)["windows_quarantined"] == 1
