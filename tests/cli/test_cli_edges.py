"""The CLI's small promises (issue 16, item 7): nothing silent, nothing confusing, no traceback for a
bad path or database, nothing written by a read-only command, no run left `running`, long lines
counted, triage's answer always shown, and stderr free of the libraries' noise."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _repo import REPO
from _store_helpers import make_record
from _watch_helpers import append
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli

ROOT = REPO


def run(*args: str) -> CliRunner:
    return CliRunner().invoke(cli, list(args))


def logwarden(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """The real CLI in a child process (atexit and signals behave as for a user)."""
    return subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, **kw)


@pytest.fixture()
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'lw.db'}"


def brute_force_log(tmp_path: Path) -> Path:
    log = tmp_path / "auth.log"
    append(log, 0, 30)
    return log


# -- records list: N of M, --limit 0 ---------------------------------------------------------------


def test_records_list_says_how_many_it_left_out_and_limit_0_means_all(db):
    open_store(db).upsert_records([make_record(line_start=i * 10 + 1, line_end=i * 10 + 5) for i in range(60)])
    first = run("records", "list", "--json", "--db", db)
    assert first.exit_code == 0
    assert len(json.loads(first.stdout)) == 50
    assert "50 of 60 matching records" in first.stderr and "--limit 0" in first.stderr
    everything = run("records", "list", "--json", "--limit", "0", "--db", db)
    assert len(json.loads(everything.stdout)) == 60 and "60 of 60" in everything.stderr
    assert run("records", "list", "--limit", "-1", "--db", db).exit_code == 2


# -- analyze --json --export ------------------------------------------------------------------------


def test_analyze_json_with_an_export_to_stdout_is_refused_before_any_work(tmp_path, db):
    log = brute_force_log(tmp_path)
    refused = run("analyze", str(log), "--rules-only", "--json", "--export", "cef", "--db", db)
    assert refused.exit_code == 2 and "--out" in refused.output
    assert refused.stdout == "" and not (tmp_path / "lw.db").exists()
    out = tmp_path / "records.cef"
    done = run("analyze", str(log), "--rules-only", "--json", "--export", "cef", "--out", str(out), "--db", db)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)  # pure JSON on stdout
    assert len(out.read_text().splitlines()) == len(report["records"]) >= 1
    assert all(line.startswith("CEF:") for line in out.read_text().splitlines())


# -- bad --out -------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["missing/folder/out.jsonl", ".", "/proc/version"])
def test_export_to_an_unwritable_target_is_a_clear_error(tmp_path, db, target):
    open_store(db).upsert_records([make_record()])
    out = target if target.startswith("/") else str(tmp_path / target)
    for args in (("export", "--format", "jsonl", "--out", out, "--db", db),
                 ("analyze", str(brute_force_log(tmp_path)), "--rules-only", "--export", "jsonl", "--out", out,
                  "--db", db)):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "--out" in result.stderr and "Traceback" not in result.output


# -- bad --db --------------------------------------------------------------------------------------


def test_a_db_that_is_not_sqlite_or_is_corrupt_is_a_clear_error(tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("these are my notes, not a database\n" * 200)
    corrupt = tmp_path / "corrupt.db"
    store = open_store(f"sqlite:///{corrupt}")
    store.upsert_records([make_record()])
    store.close()
    _checkpoint(corrupt)
    data = bytearray(corrupt.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page overwritten
    corrupt.write_bytes(bytes(data))
    for url in (f"sqlite:///{text_file}", f"sqlite:///{corrupt}", str(text_file), str(corrupt)):
        for command in (("records", "list"), ("db", "info"), ("analyze", str(brute_force_log(tmp_path)), "--rules-only")):
            result = run(*command, "--db", url)
            assert result.exit_code == 2, (url, command, result.output)
            assert "Traceback" not in result.output and "error:" in result.stderr
            assert "immutable" not in result.stderr  # the user's URL, not the read-only one opened


def test_a_db_path_is_the_sqlite_file_there(tmp_path, monkeypatch):
    """Issue 45: `--db ./lw.db` was 'Bad database URL'; a relative or absolute path (or LOGWARDEN_DB)
    names the SQLite file, the same one whatever the folder the next command runs in."""
    monkeypatch.chdir(tmp_path)
    result = run("analyze", str(brute_force_log(tmp_path)), "--rules-only", "--json", "--db", "./lw.db")
    assert result.exit_code == 0, result.output
    stored = len(json.loads(result.stdout)["records"])
    assert stored > 0 and (tmp_path / "lw.db").is_file()
    for args in (("records", "list", "--json", "--db", str(tmp_path / "lw.db")),
                 ("records", "list", "--json", "--db", "lw.db")):
        listed = run(*args)
        assert listed.exit_code == 0, listed.output
        assert len(json.loads(listed.stdout)) == stored
    monkeypatch.setenv("LOGWARDEN_DB", "./lw.db")
    info = run("db", "info", "--json")
    assert info.exit_code == 0, info.output
    assert json.loads(info.stdout)["url"] == f"sqlite:///{tmp_path / 'lw.db'}"


def test_a_store_damaged_past_its_schema_is_refused_by_every_command(tmp_path):
    """Pages of records overwritten, the schema intact: `db info` counted from intact indexes and
    `analyze --resume` went on (rc 0) while `records list` refused the same file."""
    logs = brute_force_log(tmp_path)
    damaged = tmp_path / "damaged.db"
    url = f"sqlite:///{damaged}"
    store = open_store(url)
    store.upsert_records([make_record(line_start=n, line_end=n, anomaly="x" * 3000) for n in range(1, 400)])
    store.close()
    _checkpoint(damaged)
    data = bytearray(damaged.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle:middle + 4 * 4096] = b"\xa5" * (4 * 4096)  # four pages of the records' tree
    damaged.write_bytes(bytes(data))
    for command in (("db", "info"), ("db", "info", "--json"), ("analyze", str(logs), "--rules-only", "--resume"),
                    ("records", "list"), ("incidents", "list"), ("export", "--format", "jsonl")):
        result = run(*command, "--db", url)
        assert result.exit_code == 2, (command, result.output)
        assert "Traceback" not in result.output and "is damaged" in result.stderr, (command, result.stderr)
    assert damaged.read_bytes() == bytes(data)  # refused before anything was written


def _checkpoint(path: Path) -> None:
    """Everything into the main file, and no -wal/-shm left (as after the last writer closed)."""
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)


# -- db info writes nothing ------------------------------------------------------------------------


def test_db_info_creates_nothing(tmp_path):
    missing = tmp_path / "not" / "there" / "lw.db"
    result = run("db", "info", "--db", f"sqlite:///{missing}")
    assert result.exit_code == 2 and "No database" in result.stderr
    assert not (tmp_path / "not").exists()


def test_db_info_on_an_existing_store_changes_no_byte(tmp_path):
    path = tmp_path / "lw.db"
    store = open_store(f"sqlite:///{path}")
    store.upsert_records([make_record()])
    store.close()
    _checkpoint(path)
    before = path.read_bytes()
    result = run("db", "info", "--json", "--db", f"sqlite:///{path}")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tables"]["records"] == 1
    assert path.read_bytes() == before and not Path(f"{path}-wal").exists()


# -- FIFOs and devices -------------------------------------------------------------------------------


def test_a_fifo_or_a_device_given_explicitly_is_refused_not_read_forever(tmp_path, db):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        result = logwarden("analyze", path, "--rules-only", "--db", db, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "not a regular file" in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


# -- runs are never left running -----------------------------------------------------------------


def test_a_run_that_fails_with_exit_2_is_marked_aborted(tmp_path, db):
    log = brute_force_log(tmp_path)
    result = logwarden("analyze", str(log), str(tmp_path / "missing.log"), "--rules-only", "--db", db)
    assert result.returncode == 2
    assert [r.status for r in open_store(db).list_runs()] in ([], ["aborted"])


def _started(store, n: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline and len(store.list_runs()) < n:
        time.sleep(0.05)


def test_a_killed_run_is_aborted_by_the_next_start_and_a_terminated_one_is_stopped(tmp_path, db):
    folder = tmp_path / "logs"
    folder.mkdir()
    append(folder / "auth.log", 0, 10)
    store = open_store(db)
    watcher = subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "watch", str(folder), "--rules-only",
                                "--db", db], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _started(store, 1)
    watcher.send_signal(signal.SIGKILL)
    watcher.wait(timeout=60)
    assert [r.status for r in store.list_runs()] == ["running"]  # nobody could say otherwise yet
    big = tmp_path / "big.log"
    with open(big, "w") as fh:
        fh.writelines(f"Mar  1 10:00:00 web01 app[1]: request {i} served\n" for i in range(400_000))
    analyze = subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "analyze", str(big), "--rules-only",
                                "--db", db], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _started(store, 2)
    assert [r.status for r in store.list_runs()] == ["running", "aborted"]  # the killed watcher's run
    analyze.send_signal(signal.SIGTERM)
    assert analyze.wait(timeout=60) == 128 + signal.SIGTERM
    assert [r.status for r in store.list_runs()] == ["stopped", "aborted"]  # the analyze run, stopped by SIGTERM


# -- long lines ----------------------------------------------------------------------------------------


def test_a_line_over_64_kib_is_counted_and_marked(tmp_path, db):
    log = tmp_path / "app.log"
    log.write_text("Mar  1 10:00:00 web01 app[1]: " + "A" * 100_000 + "\nMar  1 10:00:01 web01 app[1]: ok\n")
    result = run("analyze", str(log), "--rules-only", "--json", "--db", db)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"]["truncated_lines"] == 1
    assert "longer than the line limit" in result.stderr
    from logwarden.app.ingest import read_lines
    from logwarden.app.parse import parse_stream

    _, events = parse_stream(read_lines(log))
    first = next(iter(events))
    assert first.fields.get("truncated") is True and first.raw.endswith("bytes]")


# -- triage --json ------------------------------------------------------------------------------------


def test_triage_json_always_prints_verdict_assessment_and_stats():
    benign = run("triage", "Mar  1 10:00:00 web01 CRON[1]: (root) CMD (run-parts /etc/cron.hourly)",
                 "--rules-only", "--no-store", "--json")
    assert benign.exit_code == 0
    report = json.loads(benign.stdout)
    assert report["verdict"] == "benign" and report["records"] == []
    assert {"assessment", "stats", "model_error", "format", "rules"} <= set(report)
    attack = run("triage", "\n".join(f"Mar  1 10:00:{i:02d} web01 sshd[9]: Failed password for root from "
                                     f"198.51.100.4 port {4000 + i} ssh2" for i in range(12)),
                 "--rules-only", "--no-store", "--json")
    report = json.loads(attack.stdout)
    assert report["verdict"] == report["records"][0]["risk_level"] and report["rules"]


# -- third-party noise -----------------------------------------------------------------------------


NOISY_COMMAND = textwrap.dedent('''
    import logging, sys, warnings
    import click
    from logwarden.cli.main import main

    @main.command("noisy")
    def noisy():
        logging.getLogger("bitsandbytes.backends.cpu.ops").warning("Failed to load CPU gemm_4bit_forward")
        logging.getLogger("transformers.modeling_utils").warning("transformers says something")
        warnings.warn("`is_gradient_checkpointing` is deprecated", FutureWarning)
        logging.getLogger("logwarden.app.watch").warning("logwarden's own warning")
        click.echo("done", err=True)

    main(sys.argv[1:])
''')


@pytest.mark.parametrize(("flags", "shown"), [((), False), (("-vv",), True)])
def test_library_noise_on_stderr_only_at_debug(flags, shown):
    result = subprocess.run([sys.executable, "-c", NOISY_COMMAND, *flags, "noisy"], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "logwarden's own warning" in result.stderr and "done" in result.stderr
    for noise in ("gemm_4bit_forward", "transformers says something", "is_gradient_checkpointing"):
        assert (noise in result.stderr) == shown, (noise, result.stderr)
