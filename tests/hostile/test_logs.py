"""Issue 32, items 1-4: one value in a log must never turn monitoring off. A lone surrogate, a file
name that is not UTF-8, bytes that are not UTF-8 on stdin, a JSON banner on an auth.log, a NUL
block, a link to /proc/kmsg: each is read (or refused, said once) and every later file still is."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from _hostile import (
    accounted,
    brute_force,
    cloudtrail_surrogates,
    fifo,
    json_banner,
    kmsg_link,
    nul_block,
    refused,
    undecodable_name,
    write_lines,
)
from _repo import REPO
from click.testing import CliRunner

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.app.watch import Watcher
from logwarden.cli.main import main


def analyze(*args: str):
    return CliRunner().invoke(main, ["analyze", *args, "--rules-only", "--final"])


def categories(output: str) -> dict[str, list[str]]:
    """source → categories of the run's records, from `analyze --json`."""
    found: dict[str, list[str]] = {}
    for record in json.loads(output)["records"]:
        found.setdefault(record["source"], []).append(record["category"])
    return found


# -- 1. lone surrogates and undecodable bytes, everywhere text enters --------------------------------


def test_a_lone_surrogate_in_a_json_field_neither_aborts_analyze_nor_loses_the_files_after_it(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    inputs = [cloudtrail_surrogates(logs), undecodable_name(logs), json_banner(logs)]
    db = tmp_path / "lw.db"
    result = analyze(str(logs), "--json", "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    found = categories(result.stdout)  # --json printed the run: nothing aborted it
    assert set(found) == {i.source for i in inputs}  # every file gave records, the ones after the bad one too
    assert "brute_force" in found[inputs[1].source] and "brute_force" in found[inputs[2].source]
    names = [r["indicators"]["users"] for r in json.loads(result.stdout)["records"] if r["source"] == inputs[0].source]
    assert any("mallory\ufffd" in users for users in names)  # U+FFFD in the record; the raw line keeps the escape
    for item in inputs:
        assert accounted(db, item.source) == (item.lines, 0)
    assert "\\xff\\xfe" in inputs[1].source  # the name's bytes, escaped visibly


def test_the_watcher_reads_a_surrogate_and_an_undecodable_name_and_survives_its_restart(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    inputs = [cloudtrail_surrogates(logs), undecodable_name(logs)]
    db = tmp_path / "lw.db"
    for _ in range(2):  # the second start resumes on the same store: it must start, and read nothing twice
        store = open_store(f"sqlite:///{db}")
        options = RunOptions(rules_only=True, commit_every_windows=None, incremental=True)
        pipeline = Pipeline(store, None, options, command="watch")
        watcher = Watcher([logs], pipeline, max_batch=50, max_delay_ms=0, partial_timeout_s=0.0, from_start=True)
        watcher.poll()
        watcher.poll(final=True)
        pipeline.finish("stopped")
        store.close()
    for item in inputs:
        assert accounted(db, item.source) == (item.lines, 0)
    store = open_store(f"sqlite:///{db}", readonly=True)
    assert {r.source for r in store.query_records(limit=100)} >= {i.source for i in inputs}


def test_triage_takes_bytes_that_are_not_utf8_on_stdin_and_in_its_argument():
    line = brute_force(1)[0]
    piped = CliRunner().invoke(main, ["triage", "-", "--rules-only", "--no-store", "--json"],
                               input=line.encode().replace(b"root", b"r\xff\xfe\xc3oot") + b"\n")
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.stdout)["format"] == "syslog"
    argument = CliRunner().invoke(main, ["triage", line.replace("root", "r\udcff\ud800oot"), "--rules-only", "--no-store",
                                         "--json"])
    assert argument.exit_code == 0, argument.output


# -- 2. format sniffing falls back per line ----------------------------------------------------------


def test_one_json_line_heading_an_auth_log_does_not_make_it_json(tmp_path):
    item = json_banner(tmp_path)
    result = analyze(str(item.path), "--json", "--db", f"sqlite:///{tmp_path / 'lw.db'}")
    assert result.exit_code == 0, result.output
    assert categories(result.stdout)[item.source] == ["brute_force"]
    assert json.loads(result.stdout)["metrics"]["formats"][item.source].startswith("syslog")


def test_a_line_the_files_parser_cannot_read_goes_to_the_next_parser(tmp_path):
    """50 app-log lines make the file generic; the sshd burst after them is still sshd."""
    app = [f"2026-03-01 10:00:{i:02d},123 INFO [main] com.example.Service - request {i} done" for i in range(50)]
    path = write_lines(tmp_path / "mixed.log", app + brute_force(30, ip="198.51.100.44"))
    result = analyze(str(path), "--json", "--db", f"sqlite:///{tmp_path / 'lw.db'}")
    assert result.exit_code == 0, result.output
    assert "brute_force" in categories(result.stdout)[str(path)]


# -- 3. NUL runs are skipped, not whole files --------------------------------------------------------


def test_a_nul_block_in_the_first_8_kib_skips_the_nuls_not_the_file(tmp_path):
    item = nul_block(tmp_path)
    db = tmp_path / "lw.db"
    result = analyze(str(item.path), "--json", "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert categories(result.stdout)[item.source] == ["brute_force"]
    assert run["metrics"]["nul_bytes"] == 9000 and run["metrics"]["errors"] == 0
    assert accounted(db, item.source) == (31, 0)


# -- 4. non-regular targets are refused after resolving links -----------------------------------------


def _logwarden(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """The real CLI in a child with a deadline: a read that blocks forever is a failure, not a hung suite."""
    return subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def test_a_link_to_proc_kmsg_in_a_folder_is_refused_with_a_per_file_error_and_the_rest_is_read(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    link, pipe, banner = kmsg_link(logs), fifo(logs), json_banner(logs)
    db = tmp_path / "lw.db"
    done = _logwarden("analyze", str(logs), "--rules-only", "--final", "--db", f"sqlite:///{db}", timeout=120)
    assert done.returncode == 1, done.stderr  # finished, with errors to report
    assert "Traceback" not in done.stderr
    assert any("pseudo-file" in m and "/proc/kmsg" in m for m in refused(db, link.source))
    assert any("FIFO" in m for m in refused(db, pipe.source))
    assert accounted(db, banner.source) == (31, 0)
    named = _logwarden("analyze", str(link.path), "--rules-only", "--db", f"sqlite:///{db}", timeout=120)
    assert named.returncode == 2 and "pseudo-file" in named.stderr and "/proc/kmsg" in named.stderr


def test_watch_with_a_link_to_proc_kmsg_stops_at_max_seconds_and_says_so_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    link, banner = kmsg_link(logs), json_banner(logs)
    db = tmp_path / "lw.db"
    done = _logwarden("watch", str(logs), "--rules-only", "--from-start", "--max-seconds", "4", "--db",
                      f"sqlite:///{db}", timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(refused(db, link.source)) == 1  # once, not every scan
    assert accounted(db, banner.source) == (31, 0)


def test_a_folder_link_into_proc_is_not_walked(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "proc").symlink_to("/proc/self")
    db = tmp_path / "lw.db"
    done = _logwarden("analyze", str(logs), "--rules-only", "--final", "--db", f"sqlite:///{db}", timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert any("pseudo" in m for m in refused(db, str(logs / "proc")))


def test_a_1_mib_nul_block_loses_no_line_and_every_nul_is_counted(tmp_path):
    """Issue 43, item 9: the NULs of a pre-allocated or crashed file, 1 MiB of them before a line
    (and 1 MiB on a line of their own), are padding: no line is lost and each NUL is counted."""
    before, after = brute_force(10, ip="198.51.100.9"), brute_force(10, ip="198.51.100.10", minute=1)
    nuls = b"\x00" * (1 << 20)
    path = tmp_path / "padded.log"
    path.write_bytes(("\n".join(before) + "\n").encode() + nuls + ("\n".join(after) + "\n").encode()
                     + nuls + b"\n" + (brute_force(1, minute=2)[0] + "\n").encode())
    db = tmp_path / "lw.db"
    result = analyze(str(path), "--json", "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["nul_bytes"] == 2 * len(nuls) and metrics["truncated_lines"] == 0
    assert metrics["lines"] == 22 and accounted(db, str(path)) == (22, 0)
    with sqlite3.connect(db) as conn:
        shown = {text for (text,) in conn.execute("SELECT text FROM evidence")}
    assert after[0] in shown  # the line right after the first block is read whole, not cut away with it
