"""The watcher with real files: append, rename-rotation, copytruncate, partial lines, deletion, and a
real child process killed with SIGKILL mid-batch five times (nothing lost, nothing duplicated)."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _watch_helpers import append, covered
from _watch_helpers import spans as accounted

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.app.watch import Watcher


@pytest.fixture()
def setup(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    options = RunOptions(rules_only=True, commit_every_windows=None, incremental=True)
    pipeline = Pipeline(store, None, options, command="watch")
    watcher = Watcher([folder], pipeline, max_batch=50, max_delay_ms=0, partial_timeout_s=0.3, from_start=True)
    return folder, store, watcher


def test_appended_lines_are_analysed_once(setup):
    folder, store, watcher = setup
    log = folder / "auth.log"
    n = append(log, 0, 40)
    watcher.poll()
    n = append(log, n, 25)
    watcher.poll()
    watcher.poll()
    assert covered(accounted(store, log)) == list(range(1, n + 1))
    assert store.count_records() >= 1


def test_rename_rotation_drains_old_file_and_follows_new(setup):
    folder, store, watcher = setup
    log = folder / "auth.log"
    n = append(log, 0, 30)
    watcher.poll()
    old_inode = log.stat().st_ino
    n = append(log, n, 10)  # written just before rotation, not yet read
    log.rename(folder / "auth.log.1")
    append(log, 1000, 5)  # the new file
    watcher.poll()
    watcher.poll()
    assert covered(accounted(store, log, old_inode)) == list(range(1, n + 1))  # the rotated file was drained
    assert covered(accounted(store, log, log.stat().st_ino)) == [1, 2, 3, 4, 5]


def test_copytruncate_reads_new_content_from_zero(setup):
    folder, store, watcher = setup
    log = folder / "app.log"
    append(log, 0, 30)
    watcher.poll()
    log.write_text("")  # copytruncate: same inode, size 0
    append(log, 500, 3)
    watcher.poll()
    spans = accounted(store, log)
    assert sum(b - a + 1 for a, b in spans) == 33  # 30 before + 3 after, nothing lost or repeated


def test_partial_last_line_waits_then_flushes(setup):
    folder, store, watcher = setup
    log = folder / "auth.log"
    append(log, 0, 5)
    with open(log, "a") as fh:
        fh.write("Mar  1 10:05:00 web01 sshd[1]: Connection closed by 203.0.113.9")  # no newline yet
    watcher.poll()
    assert covered(accounted(store, log)) == [1, 2, 3, 4, 5]
    time.sleep(0.5)
    watcher.poll()  # quiet for longer than the partial-line timeout: flushed
    watcher.poll()
    assert covered(accounted(store, log)) == [1, 2, 3, 4, 5, 6]


def test_deleted_file_is_dropped(setup):
    folder, store, watcher = setup
    log = folder / "auth.log"
    append(log, 0, 5)
    watcher.poll()
    log.unlink()
    watcher.poll()
    assert watcher.tails == {}


def _start(folder: Path, db: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "watch", str(folder), "--rules-only",
                             "--from-start", "--max-delay-ms", "50", "--max-batch", "40", "--db", db],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_sigkill_five_times_loses_nothing_duplicates_nothing(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    log = folder / "auth.log"
    rng = random.Random(7)
    written = 0
    for _ in range(5):
        child = _start(folder, db)
        for _ in range(rng.randint(3, 6)):
            written = append(log, written, rng.randint(20, 120))
            time.sleep(rng.uniform(0.05, 0.4))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    child = _start(folder, db)
    store = open_store(db)
    deadline = time.time() + 120
    while time.time() < deadline and len(covered(accounted(store, log))) < written:
        time.sleep(0.5)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 0, child.stderr.read().decode()[-2000:]
    lines = covered(accounted(store, log))
    assert len(lines) == written  # nothing lost …
    assert lines == list(range(1, written + 1))  # … and no line analysed twice
    assert len({r.id for r in store.query_records(limit=10_000)}) == store.count_records()


def test_a_read_stops_at_its_memory_bound_and_the_next_polls_go_on(setup, monkeypatch):
    import logwarden.app.tails as tails

    folder, store, watcher = setup
    monkeypatch.setattr(tails, "READ_CHARS", 2_000)  # about 17 lines of text per read
    log = folder / "auth.log"
    n = append(log, 0, 120)
    watcher.poll()
    assert 0 < watcher.stats.lines < n  # one read did not take the whole file
    for _ in range(20):
        watcher.poll()
    watcher.pipeline.finish()
    assert covered(accounted(store, log)) == list(range(1, n + 1))


def test_a_sigterm_while_the_watcher_is_set_up_stops_its_run_cleanly(tmp_path, monkeypatch):
    """A service manager's stop can come after the run row is made and before the watcher follows
    anything (CI saw it: exit 143); that is a stop like any other: exit 0, the run `stopped`."""
    from click.testing import CliRunner

    import logwarden.app.watch as watch
    from logwarden.cli.main import main as cli

    folder = tmp_path / "logs"
    folder.mkdir()
    append(folder / "auth.log", 0, 10)
    built = watch.Watcher.__init__

    def build_then_signal(self, *args, **kwargs):
        built(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # delivered here, before `run` takes the signals over

    monkeypatch.setattr(watch.Watcher, "__init__", build_then_signal)
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["watch", str(folder), "--rules-only", "--from-start", "--db", db])
    assert result.exit_code == 0, result.output
    store = open_store(db)
    assert [run.status for run in store.list_runs()] == ["stopped"]
    assert covered(accounted(store, folder / "auth.log")) == list(range(1, 11))  # its final poll read them


def test_watch_prints_each_new_high_or_critical_record_as_one_line(tmp_path):
    """Issue 31: `watch` says what it stored as it stores it — one line a high/critical record on
    stdout (grep-able: level, time, host, category, anomaly, place, id); `--quiet` only those."""
    from _ui_helpers import ACCESS_LOG
    from click.testing import CliRunner

    from logwarden.cli.main import main as cli

    folder = tmp_path / "logs"
    folder.mkdir()
    append(folder / "auth.log", 0, 40)
    (folder / "access.log").write_text(ACCESS_LOG)
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["watch", str(folder), "--rules-only", "--from-start", "--quiet",
                                      "--max-seconds", "3", "--db", db])
    assert result.exit_code == 0, result.output
    alerts = [r for r in open_store(db).query_records(limit=100) if r.risk_level in ("high", "critical")]
    assert alerts
    lines = result.stdout.splitlines()
    assert len(lines) == len(alerts)
    for record in alerts:
        [line] = [line for line in lines if f"id {record.id[:12]}" in line]
        assert line.startswith(f"[{record.risk_level.upper()}] ") and f" {record.category}: " in line
    assert result.stderr == ""  # --quiet: no banner, no status line
