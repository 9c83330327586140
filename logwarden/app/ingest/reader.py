"""Reading one file or stream into `LogLine`s with byte offsets a reader can resume from.

Owns: opening (plain, gzip, bzip2, xz: chosen by magic bytes, not by name), Windows EVTX files
(each event record becomes one line of JSON; their offsets count records), sniffing binary
content, splitting on `\\n` in large binary reads, decoding UTF-8 without dropping a line,
truncating overlong lines with a visible marker, and reporting damage as `ErrorRow`s.
Offsets of compressed files are offsets in the decompressed stream. A read that resumes checks
first that the file still has the fingerprint of what was read before (`identity`); if not,
it reads nothing and says so (`changed`). It knows nothing about log formats or where offsets
are persisted.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import logging
import lzma
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from logwarden.app.events import ErrorRow, LogLine
from logwarden.app.ingest.identity import FINGERPRINT_BYTES, READ_ERRORS, Fingerprint, head_of
from logwarden.app.safetext import clean, os_text

log = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 65536
SNIFF_BYTES = 8192
_SKIP_CHUNK = 1 << 20
_OPENERS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))
# Errors a damaged compressed stream raises mid-read (BadGzipFile is an OSError).
_STREAM_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)
# Bytes that never occur in text logs; \t \n \r \f \b and ESC (ANSI colours) do.
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\f\b\x1b") + b"\x7f"
# Binary: more than this share of the sampled bytes is control or invalid, and so is this share
# of its lines (executables, images, databases: ≥ 0.5 of their lines in an 8 KiB sample)
_BINARY_BYTES, _BINARY_LINES = 0.30, 1 / 3
EVTX_HEADER_BLOCK = 4096  # the file header's block; 64 KiB chunks follow it
EVTX_CHUNK = 65536
EVTX_HEADER_FIELDS = 44  # through the chunk count (offset 42, 2 bytes)
_EVTX_MAX_FAILURES = 50  # damaged chunks in one EVTX file before reading it is abandoned


def sniff_binary(sample: bytes) -> bool:
    """True when `sample` (a file's first bytes, or several pieces of it joined by newlines) is
    not text: many control or invalid bytes, spread over many of its lines. A few bad lines (a
    `logger` line of 3,000 0xFF bytes near the top of an auth.log) do not make a log binary: they
    are read with U+FFFD in place of the bad bytes, and the rest of the file with them.

    NULs are not counted: a run of them is a log pre-allocated, or padded after a crash, and its
    lines are read with the NULs dropped (and counted, `LogLine.nul_bytes`), not the whole file skipped.
    """
    sample = sample.replace(b"\x00", b"")
    if not sample or _bad_share(sample) <= _BINARY_BYTES:
        return False
    lines = [line for line in sample.split(b"\n") if line.strip()]
    return sum(_bad_share(line) > _BINARY_BYTES for line in lines) >= _BINARY_LINES * len(lines)


def _bad_share(data: bytes) -> float:
    control = len(data) - len(data.translate(None, _CONTROL))
    return (control + data.decode("utf-8", "replace").count("\ufffd")) / len(data)


def read_lines(path: Path, *, start_offset: int = 0, start_line: int = 1,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               final_partial: bool = True) -> Iterator[LogLine | ErrorRow]:
    """Yield the lines of `path` from `start_offset` (numbered from `start_line`).

    `final_partial=False` stops before an unterminated last line (for tailers; see
    `read_complete_lines`, which also tells where it stopped). Never raises for unreadable,
    binary or damaged files: those become `ErrorRow`s (stage "ingest").
    """
    return iter(TailRead(path, start_offset=start_offset, start_line=start_line,
                         max_line_bytes=max_line_bytes, final_partial=final_partial))


def is_compressed(path: Path) -> bool:
    """gzip, bzip2 or xz by its magic bytes (a compressed file is final: nothing is appended)."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError:
        return False
    return any(magic.startswith(prefix) for prefix, _ in _OPENERS)


def content_size(path: Path) -> int | None:
    """The size offsets are counted in: the file's size, or a gzip file's uncompressed size (its
    trailer's ISIZE: exact for one member under 4 GiB, the case of rotated logs); None where it
    cannot be told without decompressing everything (bzip2, xz, a gzip whose trailer is unusable)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            magic = fh.read(6)
            if not any(magic.startswith(prefix) for prefix, _ in _OPENERS):
                return size
            if not magic.startswith(b"\x1f\x8b") or size < 18:
                return None
            fh.seek(-4, os.SEEK_END)
            return int.from_bytes(fh.read(4), "little")
    except OSError:
        return None


@contextmanager
def open_content(path: Path) -> Iterator[tuple[BinaryIO, bool]]:
    """The file's content as a binary stream (decompressed when it is compressed) and whether it
    is an EVTX file. Raises `OSError` when it cannot be opened."""
    with open(path, "rb") as raw:
        stream = _decompressing(raw)
        try:
            yield stream, _is_evtx(stream)
        finally:
            stream.close()


def read_head(path: Path, size: int = FINGERPRINT_BYTES) -> bytes | None:
    """The first `size` bytes of the file's (decompressed) content; None when unreadable."""
    try:
        with open_content(path) as (stream, evtx):
            return head_of(stream, evtx=evtx, size=size)
    except READ_ERRORS:
        return None


def lines_within(path: Path, size: int) -> tuple[int, int]:
    """(offset after the last newline within the first `size` bytes, how many lines end there)."""
    offset = lines = boundary = 0
    with open(path, "rb") as handle:
        while offset < size and (chunk := handle.read(min(_SKIP_CHUNK, size - offset))):
            lines += chunk.count(b"\n")
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                boundary = offset + cut + 1
            offset += len(chunk)
    return boundary, lines


def read_complete_lines(path: Path, *, start_offset: int = 0, start_line: int = 1,
                        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> TailRead:
    """Only newline-terminated lines; after iterating, `.end_offset`/`.next_line_no` say where
    to resume (the start of the unterminated last line, if any)."""
    return TailRead(path, start_offset=start_offset, start_line=start_line,
                    max_line_bytes=max_line_bytes, final_partial=False)


def read_stream(stream: BinaryIO, *, source: str = "<stdin>",
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[LogLine]:
    """Lines of an already open binary stream (stdin); inode 0, offsets from the stream start."""
    yield from _LineSplitter(stream, _Cursor(0, 1), source=source, inode=0, max_line_bytes=max_line_bytes)


class TailRead:
    """An iterable read of one file that records how far it got.

    `end_offset` is the byte offset just after the last yielded line and `next_line_no` the
    number the next line will get: exactly what a tailer persists to resume without loss or dup.
    `fingerprint` identifies what was read (see `identity`). With `expect` (the fingerprint
    stored with `start_offset`), a file whose head no longer has it, or that is shorter than
    `start_offset`, is not read: `changed` is set instead (copytruncate, another file, or a copy
    still being written: `short` says it is only shorter).
    `held_back` says an unterminated last line was left for later (`final_partial=False`).
    """

    def __init__(self, path: Path, *, start_offset: int = 0, start_line: int = 1,
                 max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, final_partial: bool = True,
                 expect: Fingerprint | None = None):
        self.path = Path(path)
        self.source = os_text(path)  # undecodable bytes, controls and newlines escaped
        self.start_offset = start_offset
        self.start_line = start_line
        self._cursor = _Cursor(start_offset, start_line)  # advanced past each line yielded
        self.max_line_bytes = max_line_bytes
        self.final_partial = final_partial
        self.expect = expect
        self.inode = 0
        self.head = b""
        self.compressed = False
        self.changed = False
        self.short = False
        self.held_back = False
        self.missing = False  # gone when it was opened (renamed or deleted a moment before)
        self._evtx = False

    @property
    def end_offset(self) -> int:
        return self._cursor.offset

    @property
    def next_line_no(self) -> int:
        return self._cursor.line_no

    @property
    def fingerprint(self) -> Fingerprint | None:
        """What was read so far, as `identity` remembers it (EVTX offsets count records)."""
        consumed = len(self.head) if self.end_offset and self._evtx else self.end_offset
        return Fingerprint.of(self.head, consumed)

    def __iter__(self) -> Iterator[LogLine | ErrorRow]:
        try:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed below, also when damaged
        except OSError as exc:
            self.missing = isinstance(exc, FileNotFoundError)
            yield self._error(None, _open_failure(exc))
            return
        with raw:
            try:
                stream = _decompressing(raw)
            except OSError as exc:
                yield self._error(None, f"cannot read ({exc.strerror or exc})")
                return
            self.compressed = stream is not raw
            try:
                yield from self._read(stream)
            finally:
                stream.close()  # a decompressor leaves `raw` open; `with raw` closes it

    def _read(self, stream: BinaryIO) -> Iterator[LogLine | ErrorRow]:
        self.inode = _inode(stream)
        self._evtx = _is_evtx(stream)
        self.head = head_of(stream, evtx=self._evtx)
        if self._identity_changed(stream):
            self.changed = True
            return
        if self._evtx:
            yield from self._evtx_records(stream)
            return
        problem = self._check_content(stream)
        if problem is not None:
            yield problem
            return
        splitter = _LineSplitter(stream, self._cursor, source=self.source, inode=self.inode,
                                 max_line_bytes=self.max_line_bytes, final_partial=self.final_partial)
        try:
            yield from splitter
        except _STREAM_ERRORS as exc:
            error = self._error(self.end_offset, f"damaged or truncated compressed data after "
                                f"offset {self.end_offset} ({exc}); the lines before it were read")
            error.line_no = self.next_line_no
            yield error
        self.held_back = splitter.held_back

    def _identity_changed(self, stream: BinaryIO) -> bool:
        if self.expect is not None and not self.expect.matches(self.head):
            return True
        if self.compressed or self._evtx:
            return False
        try:
            self.short = os.fstat(stream.fileno()).st_size < self.start_offset
        except (OSError, AttributeError, io.UnsupportedOperation):
            return False
        return self.short

    def _check_content(self, stream: BinaryIO) -> ErrorRow | None:
        """Sniff the first bytes, then position the stream at `start_offset`."""
        try:
            sample = stream.read(SNIFF_BYTES)
            spread = b"" if self.compressed else _spread_sample(stream)
            stream.seek(self.start_offset)
        except _STREAM_ERRORS as exc:
            return self._error(0, f"cannot decompress ({exc}); the file is damaged or not in "
                               f"the format its header claims")
        if sample[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return self._error(0, "UTF-16 text is not supported; convert it first, e.g. "
                               "`iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8`")
        if sniff_binary(sample) and sniff_binary(sample + b"\n" + spread):
            log.warning("%s: binary file skipped", self.source)
            return self._error(0, "binary file skipped (not text); exclude it or pass a log file")
        return None

    def _evtx_records(self, stream: BinaryIO) -> Iterator[LogLine | ErrorRow]:
        """A Windows EVTX file: one line of compact JSON per event record, in evtx_dump's shape
        (`{"Event": {"System": ..., "EventData": ...}}`), which the `windows` parser reads.
        Offsets count records, not bytes. A damaged chunk is an `ErrorRow`; the rest is read."""
        import evtx  # the Rust parser (pyevtx-rs); imported here: only EVTX files need it

        # a plain file is read by the parser itself (no copy); a compressed one is inflated in memory
        plain = isinstance(stream, io.BufferedReader)
        source = str(self.path) if plain else io.BytesIO(stream.read())
        size = os.fstat(stream.fileno()).st_size if plain else len(source.getbuffer())
        header = stream.read(EVTX_HEADER_FIELDS) if plain else source.getvalue()[:EVTX_HEADER_FIELDS]
        short = evtx_shortfall(header, size)
        if short and self.start_offset == 0:  # said once, on the first read of the file
            yield self._error(0, short)
        try:
            records = evtx.PyEvtxParser(source, number_of_threads=1).records_json()
        except OSError as exc:  # no whole header block: nothing to read
            if not short:
                yield self._error(0, f"unreadable EVTX file ({exc})")
            return
        index = failures = 0
        cursor = self._cursor
        while failures < _EVTX_MAX_FAILURES:
            try:
                record = next(records)
            except StopIteration:
                return
            except RuntimeError as exc:  # the parser's error for a damaged chunk; it moves on to the next
                failures += 1
                yield self._error(index, f"damaged EVTX data after record {index} ({exc})")
                continue
            index += 1
            if index <= self.start_offset:
                continue
            try:  # a lone UTF-16 surrogate in an event is U+FFFD, not a crash later on
                text = clean(json.dumps(json.loads(record["data"]), separators=(",", ":"), ensure_ascii=False))
            except (ValueError, KeyError, TypeError) as exc:
                failures += 1
                error = self._error(index - 1, f"unreadable EVTX record {index} ({exc})")
                error.line_no = cursor.line_no
                cursor.offset, cursor.line_no = index, cursor.line_no + 1  # accounted for by its error
                yield error
                continue
            line = LogLine(self.source, self.inode, index - 1, cursor.line_no, text, False, index)
            # moved past the record before it is handed on (as the line splitter does): a reader
            # closed right after taking it must not give the record again on the next read
            cursor.offset, cursor.line_no = index, cursor.line_no + 1
            yield line
        yield self._error(index, f"gave up after {failures} damaged EVTX chunks")

    def _error(self, offset: int | None, message: str) -> ErrorRow:
        return ErrorRow(source=self.source, offset=offset, stage="ingest",
                        message=f"{self.source}: {message}")


def evtx_shortfall(header: bytes, size: int) -> str | None:
    """Why an EVTX file of `size` bytes is cut short, or None: its header counts its 64 KiB chunks,
    and the parser itself reads a cut chunk as no records, silently (a copy taken mid-write, a
    download cut off)."""
    if len(header) < EVTX_HEADER_FIELDS:
        return f"truncated EVTX file: {size} bytes, shorter than its {EVTX_HEADER_BLOCK}-byte header; nothing to read"
    chunks = int.from_bytes(header[42:44], "little")
    expected = EVTX_HEADER_BLOCK + chunks * EVTX_CHUNK
    if size >= expected:
        return None
    return (f"truncated EVTX file: its header counts {chunks} chunk{'s' if chunks != 1 else ''} "
            f"({expected} bytes) but it has {size}; the events of the missing part, and of a chunk cut "
            "in the middle, cannot be read. Copy the file again once Windows has closed it (wevtutil epl).")


@dataclass(slots=True)
class _Cursor:
    """Where the next line starts (a byte offset; in an EVTX file, a record index) and its number."""

    offset: int
    line_no: int


class _LineSplitter:
    """Yields the `LogLine`s of a binary stream from the cursor on, moving it past each line.

    Uses the stream's own buffered `readline(limit)` (C speed) and never holds more than
    `max_line_bytes` of one line in memory. With `final_partial=False` an unterminated last line
    is not yielded: `held_back` is set and the cursor stays before it.
    """

    def __init__(self, stream: BinaryIO, cursor: _Cursor, *, source: str, inode: int, max_line_bytes: int,
                 final_partial: bool = True):
        self.readline = stream.readline
        self.cursor = cursor
        self.source = source
        self.inode = inode
        self.max = max_line_bytes
        self.final_partial = final_partial
        self.held_back = False

    def __iter__(self) -> Iterator[LogLine]:
        readline, limit, cursor = self.readline, self.max + 1, self.cursor
        source, inode = self.source, self.inode
        while raw := readline(limit):
            size, dropped, nuls, terminated = len(raw), 0, 0, raw[-1:] == b"\n"
            if not terminated and size == limit:  # over the limit (or padded with NULs)
                raw, size, dropped, nuls, terminated = self._long_line(raw)
            if not terminated and not self.final_partial:  # still being written
                self.held_back = True
                return
            line = _log_line(source, inode, cursor.offset, cursor.line_no, raw, dropped, cursor.offset + size, nuls)
            cursor.offset += size
            cursor.line_no += 1
            yield line

    def _long_line(self, head: bytes) -> tuple[bytes, int, int, int, bool]:
        """A line longer than the limit as read, from its head on: (its text without NULs, cut at the
        limit; bytes consumed; text bytes cut; NULs dropped; terminated). NULs do not count towards
        the limit: a megabyte of them before a line (a pre-allocated or crashed file) is padding,
        and the line after it is read whole, its NULs all counted."""
        size, nuls = len(head), head.count(0)
        kept = head.replace(b"\x00", b"") if nuls else head
        while len(kept) <= self.max and (chunk := self.readline(_SKIP_CHUNK)):  # only NULs made room
            size += len(chunk)
            if 0 in chunk:
                nuls += chunk.count(0)
                chunk = chunk.replace(b"\x00", b"")
            kept += chunk
            if chunk[-1:] == b"\n":
                break
        terminated = kept[-1:] == b"\n"
        text = kept[:-1] if terminated else kept
        if len(text) <= self.max:
            return kept, size, 0, nuls, terminated
        dropped = len(text) - self.max
        if not terminated:
            rest, skipped, skipped_nuls, terminated = self._skip_rest()
            size, dropped, nuls = size + rest, dropped + skipped - skipped_nuls, nuls + skipped_nuls
        return text[:self.max], size, dropped, nuls, terminated

    def _skip_rest(self) -> tuple[int, int, int, bool]:
        """Consume the rest of an overlong line: (bytes consumed, content bytes skipped, NULs among
        them, terminated)."""
        consumed = nuls = 0
        while chunk := self.readline(_SKIP_CHUNK):
            consumed += len(chunk)
            nuls += chunk.count(0)
            if chunk[-1:] == b"\n":
                return consumed, consumed - 1, nuls, True
        return consumed, consumed, nuls, False


def _log_line(source: str, inode: int, offset: int, line_no: int, raw: bytes,
              dropped: int, end: int, nuls: int = 0) -> LogLine:
    """`nuls`: those already dropped from `raw` (an overlong line's)."""
    if raw[-1:] == b"\n":
        raw = raw[:-2] if raw[-2:-1] == b"\r" else raw[:-1]
    if 0 in raw:  # NUL padding or injected NULs: keep the line, lose the NULs (an int: `0 in` is a memchr)
        nuls += raw.count(0)
        raw = raw.replace(b"\x00", b"")
    text = raw.decode("utf-8", "replace")
    if dropped:
        text = f"{text.rstrip(chr(13))}… [truncated {dropped} bytes]"
    # positional: a dataclass's __init__ with keywords costs twice as much, once per line
    return LogLine(source, inode, offset, line_no, text, bool(dropped), end, nuls)


def _spread_sample(stream: BinaryIO) -> bytes:
    """`SNIFF_BYTES` at a quarter, half and three quarters of a plain file (b"" for a small one or
    a stream): junk written at the top of a log must not make the whole file look binary."""
    try:
        size = os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        return b""
    if size < 4 * SNIFF_BYTES:
        return b""
    pieces = []
    for quarter in (1, 2, 3):
        stream.seek(size * quarter // 4)
        pieces.append(stream.read(SNIFF_BYTES).partition(b"\n")[2])  # from a line's start
    return b"\n".join(pieces)


def _decompressing(raw: BinaryIO) -> BinaryIO:
    """`raw` itself, or a decompressing reader over it when its magic bytes say so.

    Closing the returned reader leaves `raw` open (the caller closes it).
    """
    magic = raw.read(6)
    raw.seek(0)
    for prefix, opener in _OPENERS:
        if magic.startswith(prefix):
            return opener(raw)
    return raw


def _is_evtx(stream: BinaryIO) -> bool:
    """The EVTX file header's magic ("ElfFile\\0"); the stream is left at its start."""
    try:
        magic = stream.read(8)
        stream.seek(0)
    except _STREAM_ERRORS:
        return False
    return magic == b"ElfFile\x00"


def _inode(stream: BinaryIO) -> int:
    inner = getattr(stream, "fileobj", None) or getattr(stream, "_fp", None) or stream
    try:
        return os.fstat(inner.fileno()).st_ino
    except (OSError, AttributeError, io.UnsupportedOperation):
        return 0


def _open_failure(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied; run as a user who can read it (e.g. in group adm) or exclude it"
    if isinstance(exc, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(exc, FileNotFoundError):
        return "disappeared before it could be read (rotated or deleted)"
    return f"cannot open ({exc.strerror or exc})"
