"""Issue 44 item 2: a burst the watcher sees in two parts, with a restart between them — a real child
process killed with SIGKILL, or a clean stop — gives its record once, as an unbroken watch does: the
correlation state is committed with each batch's position and restored where the restart goes on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from _watch_helpers import covered, spans, watcher

from logwarden.app.store import open_store

TIMEOUT = 120  # cold imports on a loaded machine; not a performance bound


def failed(i: int) -> str:
    return f"Mar  1 10:00:{i:02d} web01 sshd[{1000 + i}]: Failed password for root from 203.0.113.7 port {30000 + i} ssh2\n"


def write(log: Path, first: int, n: int) -> None:
    with open(log, "a") as fh:
        fh.writelines(failed(i) for i in range(first, first + n))


def brute_force(store) -> list:
    return [r for r in store.query_records() if r.category == "brute_force"]


def _start(folder: Path, db: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "watch", str(folder), "--rules-only",
                             "--from-start", "--max-delay-ms", "50", "--db", db],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for(store, log: Path, lines: int) -> None:
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and len(covered(spans(store, log))) < lines:
        time.sleep(0.2)
    assert len(covered(spans(store, log))) == lines


def test_a_watcher_killed_mid_burst_and_restarted_gives_the_record_once(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    log = folder / "auth.log"
    store = open_store(db)
    child = _start(folder, db)
    write(log, 0, 4)
    _wait_for(store, log, 4)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert brute_force(store) == []  # 4 failures: below the rule's 5
    write(log, 4, 4)
    child = _start(folder, db)
    _wait_for(store, log, 8)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 0, child.stderr.read().decode()[-2000:]
    [record] = brute_force(store)
    assert record.indicators.ips == ["203.0.113.7"] and "8 matching lines" in record.anomaly


def test_a_watcher_stopped_and_started_again_mid_burst_gives_the_record_once(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "auth.log"
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    write(log, 0, 4)
    first = watcher(store, folder, from_start=True)
    first.poll()
    first.pipeline.finish()
    write(log, 4, 4)
    second = watcher(store, folder)  # a new process: what the first knew is only in the store
    second.poll()
    [record] = brute_force(store)
    assert "8 matching lines" in record.anomaly


def test_a_burst_reported_before_a_restart_grows_its_record_after_it(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "auth.log"
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    write(log, 0, 6)  # fires at the 5th and goes on
    first = watcher(store, folder, from_start=True)
    first.poll()
    [reported] = brute_force(store)
    write(log, 6, 4)
    second = watcher(store, folder)
    second.poll()
    [record] = brute_force(store)
    assert record.id == reported.id and (record.line_start, record.line_end, record.line_count) == (1, 10, 10)
    assert "10 matching lines" in record.anomaly
