"""Bad input, one test each: nothing raises, nothing is silently dropped, the damage is reported."""

from __future__ import annotations

import gzip
import io
import logging
import os

from _ingest_helpers import evtx_sample, log_lines, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logwarden.app.events import ErrorRow, LogLine
from logwarden.app.ingest import files as ingest_files
from logwarden.app.ingest import iter_files, read_lines, read_stream
from logwarden.app.parse import FORMATS, parse_lines


def test_invalid_utf8_is_replaced_and_the_line_kept(tmp_path):
    path = write(tmp_path, "a.log", b"user \xff\xfe\xc3 login\nok\n")
    first, second = read_lines(path)
    assert first.text == "user \ufffd\ufffd\ufffd login" and second.text == "ok"


def test_nul_bytes_are_removed_and_the_line_kept(tmp_path):
    path = write(tmp_path, "a.log", b"\x00\x00\x00\nMar  3 10:00:00 h sshd[1]: a\x00b\n")
    padding, line = read_lines(path)
    assert (padding.text, padding.line_no) == ("", 1)
    assert line.text == "Mar  3 10:00:00 h sshd[1]: ab" and line.offset == 4


def test_a_1mb_line_is_truncated_with_a_marker_and_offsets_stay_exact(tmp_path):
    long_line = b"GET /" + b"A" * 1_048_576
    path = write(tmp_path, "a.log", b"before\n" + long_line + b"\nafter\n")
    before, long, after = read_lines(path, max_line_bytes=65536)
    assert long.truncated and not before.truncated and not after.truncated
    dropped = len(long_line) - 65536
    assert long.text == "GET /" + "A" * (65536 - 5) + f"… [truncated {dropped} bytes]"
    assert after.offset == 7 + len(long_line) + 1 and after.line_no == 3


def test_empty_file_gives_no_lines_and_no_error(tmp_path):
    assert list(read_lines(write(tmp_path, "empty.log", b""))) == []
    assert list(parse_lines([], "syslog")) == []


def test_truncated_gzip_keeps_the_lines_before_the_damage_then_an_error_row(tmp_path):
    content = b"".join(b"Mar  3 10:00:%02d h sshd[1]: line %d\n" % (i % 60, i)
                       for i in range(20000))
    packed = gzip.compress(content)
    path = write(tmp_path, "auth.log.2.gz", packed[: len(packed) // 2])
    *lines, error = read_lines(path)
    assert len(lines) > 1000 and all(isinstance(line, LogLine) for line in lines)
    assert [line.text.encode() + b"\n" for line in lines] == content.splitlines(True)[:len(lines)]
    assert isinstance(error, ErrorRow) and error.stage == "ingest"
    assert error.offset == lines[-1].offset + len(lines[-1].text) + 1
    assert error.line_no == len(lines) + 1 and "truncated" in error.message


def test_garbage_with_a_gzip_header_is_an_error_row(tmp_path):
    path = write(tmp_path, "x.gz", b"\x1f\x8b\x08\x00" + os.urandom(64))
    rows = list(read_lines(path))
    assert len(rows) == 1 and isinstance(rows[0], ErrorRow)


def test_a_folder_without_permission_is_an_error_row_and_the_walk_goes_on(tmp_path,
                                                                          monkeypatch):
    write(tmp_path, "ok/auth.log", "x\n")
    locked = tmp_path / "locked"
    write(tmp_path, "locked/secret.log", "x\n")
    real_scandir = os.scandir

    def scandir(path):  # root ignores chmod, so refuse the way the kernel would
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(ingest_files.os, "scandir", scandir)
    error, found = list(iter_files([tmp_path]))
    assert isinstance(error, ErrorRow) and error.stage == "ingest"
    assert error.source == str(locked) and "permission denied" in error.message
    assert found.name == "auth.log"


def test_json_lines_that_are_not_objects_are_generic_events():
    texts = ["[1,2]", '"x"', "42", "null", '{"msg": "a real one"}', "{broken"]
    events = list(parse_lines(log_lines(texts), "json"))
    assert [e.format for e in events] == ["generic"] * 4 + ["json", "generic"]
    assert [e.raw for e in events] == texts


def test_syslog_line_with_an_impossible_date_stays_syslog_without_a_time_and_the_text_kept():
    # issue 16: a forged or damaged stamp must not hide the sshd line from the detectors
    texts = ["Feb 30 10:00:00 host sshd[1]: Failed password for root", "Mar 99 25:61:00 h x: y"]
    events = list(parse_lines(log_lines(texts), "syslog"))
    assert [(e.format, e.ts, e.program, e.message) for e in events] == [
        ("syslog", None, "sshd", "Failed password for root"), ("syslog", None, "x", "y")]
    assert [e.fields["timestamp_invalid"] for e in events] == ["Feb 30 10:00:00", "Mar 99 25:61:00"]
    assert [e.raw for e in events] == texts


def test_binary_file_is_one_error_row_and_a_warning(tmp_path, caplog):
    path = write(tmp_path, "core.dump", b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 64)
    with caplog.at_level(logging.WARNING):
        rows = list(read_lines(path))
    assert len(rows) == 1 and isinstance(rows[0], ErrorRow)
    assert "binary file skipped" in rows[0].message and "binary file skipped" in caplog.text


def test_a_damaged_evtx_chunk_is_an_error_row_and_reading_goes_on(tmp_path):
    data = bytearray(evtx_sample().read_bytes())
    data[5000:6000] = b"\xff" * 1000  # inside the first (and only) chunk's string table
    rows = list(read_lines(write(tmp_path, "Security.evtx", bytes(data))))
    assert rows and all(isinstance(r, ErrorRow) for r in rows)
    assert "damaged EVTX data after record 0" in rows[0].message


def test_a_truncated_evtx_file_is_reported_not_read_as_empty(tmp_path):
    """The parser reads a cut chunk as no records and says nothing: 0 lines, 0 errors, rc 0 before."""
    data = evtx_sample().read_bytes()
    for cut in (100, 4096, 4096 + 30000, len(data) - 1000):  # header cut, header only, mid-chunk, chunk's end
        rows = list(read_lines(write(tmp_path, f"cut{cut}.evtx", data[:cut])))
        assert len(rows) == 1 and isinstance(rows[0], ErrorRow), (cut, rows)
        assert "truncated EVTX file" in rows[0].message and f"has {cut}" in rows[0].message
    whole = list(read_lines(write(tmp_path, "whole.evtx", data)))
    assert len(whole) == 5 and not any(isinstance(r, ErrorRow) for r in whole)


def test_utf16_file_is_an_error_row_that_says_how_to_convert(tmp_path):
    path = write(tmp_path, "events.log", "\ufeffhello\r\n".encode("utf-16-le"))
    (row,) = list(read_lines(path))
    assert isinstance(row, ErrorRow) and "iconv" in row.message


def test_a_log_padded_with_nuls_is_text_not_binary(tmp_path):
    path = write(tmp_path, "messages", b"\x00" * 9000 + b"\nMar  3 10:00:00 h k: up\n")
    lines = list(read_lines(path))
    assert [line.text for line in lines] == ["", "Mar  3 10:00:00 h k: up"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"Feb 30 10:00:00 h x[1]: y", b'{"EventID": "x"}', b'{"Records": 5}',
                     b"[Sun Dec 04 04:47:44 2005] [", b'1.2.3.4 - - [x] "-" - -',
                     b"type=X msg=audit(1:2): a0=ZZ", b"<999>1 - - - - - -", b"{" * 50]),
), max_size=20))
def test_every_parser_gives_exactly_one_event_per_line_for_arbitrary_bytes(chunks):
    lines = list(read_stream(io.BytesIO(b"\n".join(chunks))))
    for fmt in FORMATS:
        events = list(parse_lines(lines, fmt))
        assert len(events) == len(lines)
        assert [e.line_no for e in events] == [line.line_no for line in lines]
        assert [e.raw for e in events] == [line.text for line in lines]
