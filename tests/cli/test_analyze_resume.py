"""`analyze --resume` across rotation and unterminated last lines (issue 16, defects 4 and 5):
a rotated file is the same source, not a new one; a last line without a newline is held back
unless the file is final, and resuming later gives every line its real number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _watch_helpers import append, copytruncate, covered, gzip_file, spans, sshd_line
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli


def analyze(db: str, *paths: Path, extra: tuple[str, ...] = ()) -> dict:
    result = CliRunner().invoke(cli, ["analyze", *map(str, paths), "--rules-only", "--json", "--db", db, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{"):])


@pytest.fixture()
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'lw.db'}"


def test_resume_after_rename_rotation_does_not_read_the_rotated_file_again(tmp_path, db):
    log = tmp_path / "auth.log"
    n = append(log, 0, 200)
    first = analyze(db, log, extra=("--resume",))
    assert first["metrics"]["lines"] == 200
    n = append(log, n, 10)  # written just before rotation
    log.rename(tmp_path / "auth.log.1")
    append(log, 1000, 30)
    second = analyze(db, tmp_path / "auth.log.1", log, extra=("--resume",))
    assert second["metrics"]["lines"] == 40  # the 10 late lines of the rotated file + the new file
    store = open_store(db)
    assert covered(spans(store, log)) == sorted(list(range(1, n + 1)) + list(range(1, 31)))
    ids = [r.id for r in store.query_records(limit=10_000)]
    assert len(ids) == len(set(ids))


def test_resume_after_rotation_and_compression(tmp_path, db):
    log = tmp_path / "auth.log"
    n = append(log, 0, 120)
    analyze(db, log, extra=("--resume",))
    n = append(log, n, 7)
    log.rename(tmp_path / "auth.log.1")
    archive = gzip_file(tmp_path / "auth.log.1")
    again = analyze(db, archive, extra=("--resume",))
    assert again["metrics"]["lines"] == 7
    assert covered(spans(open_store(db), log)) == list(range(1, n + 1))


def test_an_unterminated_last_line_is_held_back_and_resume_numbers_lines_correctly(tmp_path, db):
    log = tmp_path / "auth.log"
    n = append(log, 0, 30)
    with open(log, "a") as fh:
        fh.write(sshd_line(n)[:40])  # the writer is in the middle of line 31
    first = analyze(db, log, extra=("--resume",))
    assert first["metrics"]["lines"] == 30
    with open(log, "a") as fh:
        fh.write(sshd_line(n)[40:])
    n = append(log, n + 1, 19)
    second = analyze(db, log, extra=("--resume",))
    assert second["metrics"]["lines"] == 20
    store = open_store(db)
    assert covered(spans(store, log)) == list(range(1, n + 1))
    for record in store.query_records(limit=1000):
        for line in record.evidence.exemplars:
            assert line.text + "\n" == sshd_line(line.line_no - 1)


def test_final_files_keep_their_unterminated_last_line(tmp_path, db):
    log = tmp_path / "auth.log"
    append(log, 0, 9)
    with open(log, "a") as fh:
        fh.write(sshd_line(9).rstrip("\n"))
    assert analyze(db, log, extra=("--final",))["metrics"]["lines"] == 10
    rotated = tmp_path / "old" / "auth.log.1"
    rotated.parent.mkdir()
    rotated.write_bytes(log.read_bytes().replace(b"u9 ", b"v9 "))
    assert analyze(db, rotated)["metrics"]["lines"] == 10  # a rotated file is final
    archive = gzip_file(rotated)
    assert analyze(f"sqlite:///{tmp_path / 'other.db'}", archive)["metrics"]["lines"] == 10


def test_a_file_left_untouched_is_final(tmp_path, db):
    """A downloaded CloudTrail export is one JSON document without a final newline: once nothing
    has written to the file for the partial-line timeout (as the watcher waits), it is read."""
    import os
    import time

    record = {"eventVersion": "1.08", "eventTime": "2026-03-01T10:00:00Z", "eventSource": "cloudtrail.amazonaws.com",
              "eventName": "StopLogging", "awsRegion": "us-east-1", "sourceIPAddress": "198.51.100.7",
              "userIdentity": {"type": "IAMUser", "userName": "alice", "arn": "arn:aws:iam::123456789012:user/alice"},
              "requestParameters": {"name": "main"}, "eventType": "AwsApiCall"}
    export = tmp_path / "123456789012_CloudTrail_us-east-1_20260301T1000Z_x.json"
    export.write_text(json.dumps({"Records": [record]}))
    assert analyze(db, export)["metrics"]["lines"] == 0  # just written: it may still grow
    old = time.time() - 60
    os.utime(export, (old, old))
    again = analyze(f"sqlite:///{tmp_path / 'other.db'}", export)
    assert again["metrics"]["lines"] == 1
    assert any(r["category"] == "policy_violation" and r["risk_level"] in ("high", "critical") for r in again["records"])


def test_resume_after_copytruncate_drains_the_copy_and_restarts_the_file_at_line_1(tmp_path, db):
    log = tmp_path / "app.log"
    n = append(log, 0, 50)
    analyze(db, log, extra=("--resume",))
    n = append(log, n, 8)  # not yet read when logrotate copies and truncates
    copy = tmp_path / "app.log.1"
    copytruncate(log, copy)
    append(log, 900, 20)
    again = analyze(db, copy, log, extra=("--resume",))
    assert again["metrics"]["lines"] == 28  # the copy's 8 unread lines + the 20 new ones
    store = open_store(db)
    assert covered(spans(store, log)) == sorted(list(range(1, n + 1)) + list(range(1, 21)))
    assert spans(store, copy) == []
    for record in store.query_records(limit=1000):
        for line in record.evidence.exemplars:
            serial = int(line.text.split("invalid user u", 1)[1].split()[0])
            assert line.line_no == (serial - 899 if serial >= 900 else serial + 1)
