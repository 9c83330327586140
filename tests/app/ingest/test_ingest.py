"""Ingestion: which files are found, in what order, and that offsets read back exactly."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os

import pytest
from _ingest_helpers import SSHD, write

from logwarden.app.events import ErrorRow, LogLine
from logwarden.app.ingest import TailRead, iter_files, read_complete_lines, read_lines, read_stream
from logwarden.errors import InputError

CONTENT = "\n".join(SSHD) + "\n"


def names(items) -> list[str]:
    return [p.name for p in items]


def test_iter_files_recurses_sorted_with_rotated_files_oldest_first(tmp_path):
    for name in ("auth.log", "auth.log.1", "auth.log.2.gz", "auth.log.10.gz", "syslog",
                 "nginx/access.log", "nginx/access.log.1", "nginx/error.log"):
        data = gzip.compress(b"x\n") if name.endswith(".gz") else b"x\n"
        write(tmp_path, name, data)
    found = list(iter_files([tmp_path]))
    assert all(p.is_absolute() for p in found)
    assert names(found) == ["auth.log.10.gz", "auth.log.2.gz", "auth.log.1", "auth.log",
                            "access.log.1", "access.log", "error.log", "syslog"]
    assert found == list(iter_files([tmp_path]))  # deterministic


def test_iter_files_include_and_exclude_match_name_and_relative_path(tmp_path):
    for name in ("auth.log", "auth.log.1", "nginx/access.log", "nginx/error.log", "notes.txt"):
        write(tmp_path, name, "x\n")
    assert names(iter_files([tmp_path], include=["*.log"])) == ["auth.log", "access.log",
                                                               "error.log"]
    assert names(iter_files([tmp_path], include=["nginx/*"], exclude=["error*"])) == [
        "access.log"]
    assert "notes.txt" not in names(iter_files([tmp_path], exclude=["*.txt"]))


def test_iter_files_explicit_file_is_kept_and_duplicates_are_dropped(tmp_path):
    log = write(tmp_path, "a/auth.log", "x\n")
    found = list(iter_files([log, tmp_path, tmp_path / "a"], exclude=["*.log"]))
    assert found == [log]


def test_iter_files_missing_path_raises_with_the_path_in_the_message(tmp_path):
    with pytest.raises(InputError, match="nope.log: no such file"):
        iter_files([tmp_path, tmp_path / "nope.log"])  # raised on the call, before any file


def test_iter_files_does_not_skip_by_name(tmp_path):
    write(tmp_path, "dump.bin", "Mar  3 10:00:00 h sshd[1]: text after all\n")
    assert names(iter_files([tmp_path])) == ["dump.bin"]


def test_offsets_seek_back_to_the_exact_line(tmp_path):
    text = "first\r\nsecond line é\n\nfourth\n"
    path = write(tmp_path, "a.log", text)
    lines = list(read_lines(path))
    assert [line.text for line in lines] == ["first", "second line é", "", "fourth"]
    raw = path.read_bytes()
    for line in lines:
        end = raw.index(b"\n", line.offset)
        assert raw[line.offset:end].rstrip(b"\r").decode() == line.text
    assert lines[0].inode == os.stat(path).st_ino and lines[0].source == str(path)


def test_resume_from_an_offset_gives_the_rest_with_the_right_line_numbers(tmp_path):
    path = write(tmp_path, "auth.log", CONTENT)
    every = list(read_lines(path))
    resumed = list(read_lines(path, start_offset=every[3].offset, start_line=4))
    assert resumed == every[3:]


def test_last_line_without_newline_is_yielded_by_default(tmp_path):
    path = write(tmp_path, "a.log", "one\ntwo")
    assert [line.text for line in read_lines(path)] == ["one", "two"]


def test_tail_mode_stops_before_the_partial_line_and_says_where(tmp_path):
    path = write(tmp_path, "a.log", "one\ntwo\nthr")
    tail = read_complete_lines(path)
    assert [line.text for line in tail] == ["one", "two"]
    assert (tail.end_offset, tail.next_line_no) == (8, 3)
    with open(path, "ab") as handle:
        handle.write(b"ee\nfour\n")
    resumed = read_complete_lines(path, start_offset=tail.end_offset, start_line=tail.next_line_no)
    assert [(line.line_no, line.text) for line in resumed] == [(3, "three"), (4, "four")]
    assert resumed.end_offset == path.stat().st_size


@pytest.mark.parametrize(("suffix", "compress"), [
    (".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed_files_read_with_decompressed_offsets(tmp_path, suffix, compress):
    path = write(tmp_path, "auth.log.2" + suffix, compress(CONTENT.encode()))
    lines = list(read_lines(path))
    assert [line.text for line in lines] == SSHD
    for line in lines:
        assert CONTENT.encode()[line.offset:].startswith(line.text.encode())
    resumed = list(read_lines(path, start_offset=lines[5].offset, start_line=6))
    assert resumed == lines[5:]


def test_compression_is_chosen_by_content_not_by_name(tmp_path):
    path = write(tmp_path, "auth.log.1", gzip.compress(CONTENT.encode()))  # no .gz suffix
    assert [line.text for line in read_lines(path)] == SSHD


def test_read_stream_numbers_lines_from_the_stream_start():
    lines = list(read_stream(io.BytesIO(b"a\r\nb\nc"), source="<stdin>"))
    assert lines == [LogLine("<stdin>", 0, 0, 1, "a", end=3), LogLine("<stdin>", 0, 3, 2, "b", end=5),
                     LogLine("<stdin>", 0, 5, 3, "c", end=6)]


def test_unreadable_file_is_an_error_row(tmp_path, monkeypatch):
    path = write(tmp_path, "secure", CONTENT)
    from logwarden.app.ingest import reader

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(reader, "open", denied, raising=False)
    (row,) = list(read_lines(path))
    assert isinstance(row, ErrorRow) and row.stage == "ingest" and "permission denied" in row.message


def test_file_that_vanished_is_an_error_row_not_an_exception(tmp_path):
    (row,) = list(read_lines(tmp_path / "rotated-away.log"))
    assert isinstance(row, ErrorRow) and "disappeared" in row.message


def test_an_evtx_file_is_read_as_one_json_line_per_record_and_resumes_by_record(tmp_path):
    import gzip as _gzip

    from _ingest_helpers import evtx_sample

    from logwarden.app.parse import parse_stream

    sample = evtx_sample()
    lines = list(read_lines(sample))
    assert [(line.offset, line.line_no) for line in lines] == [(i, i + 1) for i in range(5)]
    decision, events = parse_stream(lines, path=str(sample))
    events = list(events)
    assert decision.name == "windows" and [e.format for e in events] == ["windows"] * 5
    assert events[0].host == "DESKTOP-PJOQLJS" and events[0].fields["EventID"] == 1
    assert events[0].ts.isoformat() == "2021-07-22T15:44:21.416718+00:00"
    packed = tmp_path / "old.evtx.gz"
    packed.write_bytes(_gzip.compress(sample.read_bytes()))
    assert [line.text for line in read_lines(packed)] == [line.text for line in lines]
    rest = list(read_lines(sample, start_offset=3, start_line=4))  # resume after three records
    assert [(line.offset, line.line_no, line.text) for line in rest] == [(3, 4, lines[3].text), (4, 5, lines[4].text)]
    # a reader closed right after handing on a record (the watcher's read limit) resumes after it
    reader = TailRead(sample)
    taken = iter(reader)
    first_two = [next(taken), next(taken)]
    taken.close()
    again = list(read_lines(sample, start_offset=reader.end_offset, start_line=reader.next_line_no))
    assert [line.text for line in first_two + again] == [line.text for line in lines]
