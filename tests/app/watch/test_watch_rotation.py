"""The watcher under rotation (issue 16, defects 1, 3 and 4): compressed files read once, rotated
and compressed files recognised by content, files that appear while the watcher is down read from
their first line, copytruncate restarting line numbers at 1 — with real files, in process."""

from __future__ import annotations

import gzip
import shutil
import time
from pathlib import Path

import pytest
from _repo import REPO
from _watch_helpers import (
    analysed_lines,
    append,
    copytruncate,
    covered,
    gzip_file,
    spans,
    sshd_line,
    watcher,
)

from logwarden.app.store import open_store

SAMPLE_GZ = REPO / "sample_logs" / "access.log.2.gz"


@pytest.fixture()
def folder(tmp_path):
    path = tmp_path / "logs"
    path.mkdir()
    return path


@pytest.fixture()
def store(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as s:
        yield s


def polls(w, n: int = 4) -> None:
    """`n` polls 0.1 s apart: a compressed file is read once it has been still for 0.3 s."""
    for _ in range(n):
        w.poll()
        time.sleep(0.1)


def gz_lines(path: Path) -> int:
    with gzip.open(path, "rt", errors="replace") as fh:
        return sum(1 for _ in fh)


# -- defect 1: compressed files ------------------------------------------------------------------


def test_a_compressed_file_present_at_start_is_not_read_at_all(folder, store):
    shutil.copy(SAMPLE_GZ, folder)
    w = watcher(store, folder)
    polls(w, 6)
    assert analysed_lines(store) == 0 and store.count_records() == 0


def test_a_compressed_file_that_appears_is_read_exactly_once(folder, store):
    w = watcher(store, folder)
    w.poll()
    target = folder / SAMPLE_GZ.name
    shutil.copy(SAMPLE_GZ, target)
    polls(w, 8)
    assert covered(spans(store, target)) == list(range(1, gz_lines(target) + 1))
    records = store.count_records()
    polls(w, 4)
    assert analysed_lines(store) == gz_lines(target) and store.count_records() == records


def test_rotated_then_compressed_file_is_the_continuation_not_a_new_file(folder, store):
    log = folder / "auth.log"
    w = watcher(store, folder, from_start=True)
    n = append(log, 0, 60)
    polls(w, 2)
    n = append(log, n, 15)  # not yet read when the file is rotated and compressed
    log.rename(folder / "auth.log.1")
    gzip_file(folder / "auth.log.1")
    append(log, 1000, 5)
    polls(w, 6)
    assert covered(spans(store, log)) == sorted(list(range(1, n + 1)) + [1, 2, 3, 4, 5])
    assert spans(store, folder / "auth.log.1.gz") == []  # the .gz is auth.log's continuation, not a source


# -- defect 3: files that appear or rotate while the watcher is down -----------------------------


def test_rotation_while_the_watcher_is_down_loses_nothing(folder, store):
    log = folder / "auth.log"
    n = append(log, 0, 100)
    first = watcher(store, folder)  # present at the first start: tailed from its end
    polls(first, 2)
    first.pipeline.finish()
    n = append(log, n, 30)  # written while down, then rotated
    log.rename(folder / "auth.log.1")
    append(log, 1000, 250)  # the new file, written while down
    second = watcher(store, folder)
    polls(second, 8)
    assert covered(spans(store, log)) == sorted(list(range(101, n + 1)) + list(range(1, 251)))


def test_a_new_file_whose_watcher_was_killed_before_its_first_commit_is_read_from_line_1(folder, store):
    first = watcher(store, folder)
    first.poll()  # the folder is now known to this store
    log = folder / "new.log"
    append(log, 0, 120)  # the first watcher dies before it reads it (no commit)
    second = watcher(store, folder)
    polls(second, 6)
    assert covered(spans(store, log)) == list(range(1, 121))


def test_copytruncate_that_regrew_past_the_old_size_is_read_from_line_1(folder, store):
    log = folder / "app.log"
    w = watcher(store, folder, from_start=True)
    append(log, 0, 50)
    polls(w, 2)
    with open(log, "r+") as fh:
        fh.truncate(0)
    append(log, 500, 150)  # longer than before the truncation by the next poll
    polls(w, 4)
    assert covered(spans(store, log)) == sorted(list(range(1, 51)) + list(range(1, 151)))


def test_copytruncate_while_the_watcher_is_down_restarts_at_line_1(folder, store):
    log = folder / "app.log"
    first = watcher(store, folder, from_start=True)
    append(log, 0, 40)
    polls(first, 2)
    first.pipeline.finish()
    with open(log, "r+") as fh:
        fh.truncate(0)
    append(log, 700, 90)
    second = watcher(store, folder)
    polls(second, 4)
    assert covered(spans(store, log)) == sorted(list(range(1, 41)) + list(range(1, 91)))


# -- defect 4: rotation must not duplicate -------------------------------------------------------


def test_copytruncate_does_not_analyse_the_copy_again(folder, store):
    log = folder / "app.log"
    w = watcher(store, folder, from_start=True)
    n = append(log, 0, 150)
    polls(w, 2)
    n = append(log, n, 50)  # unread when logrotate copies and truncates
    copytruncate(log, folder / "app.log.1")
    append(log, 900, 20)
    polls(w, 6)
    assert covered(spans(store, log)) == sorted(list(range(1, n + 1)) + list(range(1, 21)))
    assert spans(store, folder / "app.log.1") == []
    ids = [r.id for r in store.query_records(limit=10_000)]
    assert len(ids) == len(set(ids))
    _assert_evidence_is_real(store, {"app.log": n, "new": 20})


def _assert_evidence_is_real(store, _counts) -> None:
    """Every exemplar's text is the line the test wrote at that line number (of its generation)."""
    for record in store.query_records(limit=10_000):
        for line in record.evidence.exemplars:
            serial = int(line.text.split("invalid user u", 1)[1].split()[0])
            expected = serial + 1 if serial < 900 else serial - 900 + 1
            assert line.line_no == expected, (line.line_no, line.text)
            assert line.text + "\n" == sshd_line(serial)
