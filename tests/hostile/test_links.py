"""Issue 43, item 9: what a link in a log folder may make logwarden read. A link out of an analysed
or watched folder (to /etc/shadow, say) is not followed unless --follow-links: it is skipped and
listed, and none of its bytes reach the store; a link to a file inside the folder is that file,
read once. The store's own files (the database, -wal, -shm, -journal) are never read as logs,
however they are reached."""

from __future__ import annotations

import json
import sqlite3

from _hostile import accounted, brute_force, write_lines
from click.testing import CliRunner

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.app.watch import Watcher
from logwarden.cli.main import main

SECRET = "root:$6$SECRETHASHxyz$abcdefgh:19000:0:99999:7:::"


def analyze(*args: str):
    return CliRunner().invoke(main, ["analyze", *args, "--rules-only", "--final", "--json"])


def dump(db) -> str:
    """Every row of the store, as text."""
    with sqlite3.connect(db) as conn:
        return "\n".join(conn.iterdump())


def sources(db) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {path for (path,) in conn.execute("SELECT path FROM sources")}


def linked_folder(tmp_path):
    """logs/ with an auth.log, a link to it, a link to a shadow file outside and a link to a folder outside."""
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "shadow").write_text("\n".join([SECRET] * 20) + "\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    auth = write_lines(logs / "auth.log", brute_force())
    (logs / "again.log").symlink_to(auth)
    (logs / "shadow.log").symlink_to(outside / "shadow")
    (logs / "etc").symlink_to(outside)
    return logs, auth


def watch_once(db, folder, **options) -> Pipeline:
    store = open_store(f"sqlite:///{db}")
    pipeline = Pipeline(store, None, RunOptions(rules_only=True, commit_every_windows=None, incremental=True,
                                                **options), command="watch")
    watcher = Watcher([folder], pipeline, max_batch=50, max_delay_ms=0, partial_timeout_s=0.0, from_start=True)
    watcher.poll()
    watcher.poll(final=True)
    pipeline.finish("stopped")
    store.close()
    return pipeline


def test_a_link_out_of_an_analysed_folder_is_skipped_and_listed_and_nothing_of_it_is_stored(tmp_path):
    logs, auth = linked_folder(tmp_path)
    db = tmp_path / "lw.db"
    result = analyze(str(logs), "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output  # a choice, not an error
    skipped = json.loads(result.stdout)["metrics"]["skipped"]
    assert set(skipped) == {str(logs / "shadow.log"), str(logs / "etc")}
    assert all("link out of" in why for why in skipped.values())
    assert "SECRETHASH" not in dump(db)
    assert sources(db) == {str(auth)} or sources(db) == {str(logs / "again.log")}  # the file inside, read once
    assert sum(accounted(db, s)[0] for s in sources(db)) == 30


def test_follow_links_reads_a_link_out_of_the_folder(tmp_path):
    logs, _ = linked_folder(tmp_path)
    db = tmp_path / "lw.db"
    result = analyze(str(logs), "--follow-links", "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    read = sources(db) & {str(logs / "shadow.log"), str(logs / "etc" / "shadow")}
    assert len(read) == 1  # read, once: the folder link leads to the same file
    assert json.loads(result.stdout)["metrics"]["skipped"] == {}


def test_the_watcher_does_not_follow_a_link_out_of_its_folder(tmp_path):
    logs, _ = linked_folder(tmp_path)
    db = tmp_path / "lw.db"
    pipeline = watch_once(db, logs)
    assert str(logs / "shadow.log") in pipeline.metrics.skipped
    assert "SECRETHASH" not in dump(db)
    assert len(sources(db)) == 1
    watch_once(db, logs, follow_links=True)
    assert sources(db) & {str(logs / "shadow.log"), str(logs / "etc" / "shadow")}


def test_the_store_in_an_analysed_folder_and_links_to_it_are_never_read_as_logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    auth = write_lines(logs / "auth.log", brute_force())
    db = logs / "lw.db"
    (logs / "store.log").symlink_to(db)  # a link inside the folder, to the store
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "wal.log").symlink_to(logs / "lw.db-wal")
    for args in ((str(logs),), (str(logs), "--resume"), (str(elsewhere), str(db), "--follow-links")):
        result = analyze(*args, "--db", f"sqlite:///{db}")
        assert result.exit_code == 0, result.output
        skipped = json.loads(result.stdout)["metrics"]["skipped"]
        assert all("store's own" in why for why in skipped.values()) and skipped
    assert sources(db) == {str(auth)}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM errors").fetchone() == (0,)


def test_the_watcher_never_reads_its_own_database(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    auth = write_lines(logs / "auth.log", brute_force())
    db = logs / "lw.db"
    (logs / "db.log").symlink_to(db)
    for _ in range(2):  # the second start finds the -wal and -shm there too
        pipeline = watch_once(db, logs)
        assert pipeline.metrics.errors == 0
    assert sources(db) == {str(auth)}
    assert str(logs / "db.log") in pipeline.metrics.skipped
