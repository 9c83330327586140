"""PostgreSQL as the shared store (issue 16), on a real throw-away server: the CLI end to end, the
UI's pages, and several watcher processes writing one database at once — one of them killed with
SIGKILL and restarted — with no line lost or analysed twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _ui_helpers import APP, fill_store
from _watch_helpers import append, covered, spans
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli

TIMEOUT = 120  # cold imports on a loaded machine; not a performance bound


def test_cli_analyze_records_export_and_db_info(tmp_path, pg_url):
    log = tmp_path / "auth.log"
    append(log, 0, 40)
    runner = CliRunner()
    analysed = runner.invoke(cli, ["analyze", str(log), "--rules-only", "--json", "--db", pg_url])
    assert analysed.exit_code == 0, analysed.output
    run = json.loads(analysed.stdout[analysed.stdout.index("{"):])
    assert run["metrics"]["lines"] == 40 and run["records"]
    listed = runner.invoke(cli, ["records", "list", "--json", "--limit", "0", "--db", pg_url])
    assert [r["id"] for r in json.loads(listed.stdout)] == [r["id"] for r in run["records"]]
    out = tmp_path / "out.jsonl"
    exported = runner.invoke(cli, ["export", "--format", "ecs", "--out", str(out), "--db", pg_url])
    assert exported.exit_code == 0 and len(out.read_text().splitlines()) == len(run["records"])
    info = json.loads(runner.invoke(cli, ["db", "info", "--json", "--db", pg_url]).stdout)
    assert info["dialect"] == "postgresql" and info["tables"]["records"] == len(run["records"])


@pytest.mark.parametrize("page", [None, "records", "runs"])
def test_ui_pages_render_from_postgresql(tmp_path, monkeypatch, pg_url, page):
    _, store = fill_store(tmp_path, url=pg_url)
    monkeypatch.setenv("LOGWARDEN_DB", pg_url)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    if page:
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    if page is None:
        records = next(m.value for m in at.metric if m.label == "Records")
        assert records == str(store.count_records()) and store.count_records() > 0


def _watch(folder: Path, db: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "watch", str(folder), "--rules-only",
                             "--max-delay-ms", "50", "--max-batch", "40", "--db", db, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_several_watchers_write_one_database_at_once(tmp_path, pg_url):
    folders = [tmp_path / f"host{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
    open_store(pg_url).close()  # migrated once; the watchers then start together
    watchers = [_watch(folder, pg_url, "--from-start") for folder in folders]
    written = [0, 0, 0]

    def write(i: int) -> None:
        for _ in range(12):
            written[i] = append(folders[i] / "auth.log", written[i], 50)
            time.sleep(0.05)

    writers = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for thread in writers:
        thread.start()
    store = open_store(pg_url)
    started = time.time()
    while not spans(store, folders[0] / "auth.log") and time.time() < started + 60:
        time.sleep(0.05)  # it has committed a batch: its run exists
    watchers[0].send_signal(signal.SIGKILL)  # one host's watcher dies mid-stream …
    watchers[0].wait(timeout=30)
    for thread in writers:
        thread.join()
    watchers[0] = _watch(folders[0], pg_url, "--from-start")  # … and comes back
    deadline = time.time() + 120
    while len(store.list_runs()) < 4 and time.time() < deadline:
        time.sleep(0.1)  # its run exists: it is up (a SIGTERM before that finds it still importing)
    while time.time() < deadline and any(len(covered(spans(store, f / "auth.log"))) < n
                                         for f, n in zip(folders, written)):
        time.sleep(0.5)
    for child in watchers:
        child.send_signal(signal.SIGTERM)
    for child in watchers:
        assert child.wait(timeout=60) == 0, child.stderr.read().decode()[-2000:]
    for folder, n in zip(folders, written):
        assert covered(spans(store, folder / "auth.log")) == list(range(1, n + 1))  # none lost, none twice
    ids = [r.id for r in store.query_records(limit=100_000)]
    assert ids and len(ids) == len(set(ids))
    statuses = sorted(run.status for run in store.list_runs())
    assert statuses == ["aborted", "stopped", "stopped", "stopped"]  # the killed run, seen by its successor


def test_hosts_with_the_same_paths_keep_their_own_sources(tmp_path, pg_url):
    """Every host has a /var/log/auth.log: named by node, each host's watcher follows its own file
    (here: two nodes follow one folder, as two hosts with identical paths would)."""
    folder = tmp_path / "log"
    folder.mkdir()
    log = folder / "auth.log"
    append(log, 0, 50)  # there before either watcher: both tail it from its end
    store = open_store(pg_url)
    nodes = ("web01", "web02")
    watchers = [_watch(folder, pg_url, "--node", node) for node in nodes]
    started = time.time()
    while len(store.watched_folders()) < 2 and time.time() < started + 60:
        time.sleep(0.1)
    append(log, 50, 30)
    while time.time() < started + 120 and any(len(covered(spans(store, f"{n}:{log}"))) < 30 for n in nodes):
        time.sleep(0.2)
    for child in watchers:
        child.send_signal(signal.SIGTERM)
    for child in watchers:
        assert child.wait(timeout=60) == 0, child.stderr.read().decode()[-2000:]
    for node in nodes:
        assert covered(spans(store, f"{node}:{log}")) == list(range(51, 81))
    assert store.watched_folders() == [f"{node}:{folder}" for node in nodes]
    assert {r.source for r in store.query_records(limit=1000)} == {f"{node}:{log}" for node in nodes}
