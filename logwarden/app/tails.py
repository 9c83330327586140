"""A followed file (`Tail`) and the watcher's reads of it.

Owns: what a tail reads (its source, inode and generation, as the store names them) and where it
is now (its path and file id: a compressed or copied continuation has another name and inode),
where its next read starts, the lines read and not analysed yet (held until their batch is due),
the batch handed to the pipeline (`Batch`, with the position to persist after it), and a read
bounded in lines and characters (`take`). Knows nothing of discovery, rotation or the pipeline:
the watcher (app/watch.py) decides what each file is and when its batch goes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logwarden.app.events import ErrorRow, LogLine
from logwarden.app.ingest import Fingerprint, SourceKey, TailRead, fingerprint_of, is_compressed, read_head
from logwarden.app.sources import Kept, line_hash
from logwarden.app.store import SourceState

# One read takes at most this many batches' worth of lines, and at most READ_CHARS of text
# (bounded memory even for 64 KiB lines). 20 batches, not 4: fewer reopen/fingerprint round trips
# per catch-up (bench/watch.py: ~10% more lines per CPU second).
READ_BATCHES = 20
READ_CHARS = 16 * 1024 * 1024

FileId = tuple[int, int]  # (st_dev, st_ino): inodes are unique per device only
Look = tuple[int, int]  # (st_size, st_mtime_ns): has the file changed since the last look?


@dataclass(slots=True)
class Tail:
    """One followed file. `source`, `inode` and `generation` name the content being read (the file
    as first seen); `path` and `file_id` are where it is now (a compressed or copied continuation
    has another name and inode)."""

    source: str
    inode: int
    generation: int
    path: Path
    file_id: FileId
    offset: int
    next_line: int
    fingerprint: Fingerprint | None = None
    fmt: str | None = None
    compressed: bool = False
    seen: tuple[int, int] | None = None  # (size, mtime_ns) when last looked at
    read_at: tuple[int, int] | None = None  # … when last read to its end
    behind: bool = False  # the last read stopped early: more is there
    partial: bool = False  # an unterminated last line is held back
    broken: bool = False  # unreadable (binary, permissions): reported once, not read again
    pending: list[LogLine] = field(default_factory=list)
    pending_since: float = 0.0
    pending_end: int = 0
    pending_next_line: int = 0
    pending_fingerprint: Fingerprint | None = None
    last_growth: float = field(default_factory=time.monotonic)
    last: tuple[int, int] | None = None  # (offset, hash) of the last line read (app/sources.py)

    @classmethod
    def continuing(cls, known: SourceState, path: Path, file_id: FileId, *, compressed: bool = False) -> Tail:
        """The file at `path` goes on with the source `known` where its reading stopped."""
        last = (known.tail_offset, known.tail_hash) if known.tail_offset is not None else None
        return cls(known.path, known.inode, known.generation, path, file_id, known.offset, known.line_no + 1,
                   fingerprint=fingerprint_of(known), fmt=known.format, compressed=compressed, last=last)

    def next_generation(self, generation: int, kept: Kept) -> Tail:
        """Generation `generation` of the tail's source, after the part of the file still what was
        read (from line 1 when none is)."""
        new = Tail(self.source, self.inode, generation, self.path, self.file_id, 0, 1)
        if kept.lines:  # what is left of what was read is not read again
            new.offset, new.next_line, new.last = kept.offset, kept.lines + 1, (kept.tail_offset, kept.hashes[-1])
            new.fingerprint = Fingerprint.of(read_head(self.path) or b"", kept.offset)
        return new

    @property
    def key(self) -> SourceKey:
        return (self.source, self.inode, self.generation)

    @property
    def position(self) -> tuple[int, int, Fingerprint | None]:
        """Where the next read starts: after the pending lines, if any."""
        if self.pending:
            return self.pending_end, self.pending_next_line, self.pending_fingerprint
        return self.offset, self.next_line, self.fingerprint

    def is_own(self, name: str) -> bool:
        """Is the tail reading its source's own file (first path — `name` is its path's source name —,
        first inode), not a copy or a compressed continuation?"""
        return name == self.source and self.is_first_inode

    @property
    def is_first_inode(self) -> bool:
        """Is the file the inode the source was first read from (under any name now: renamed by
        rotation, or a new file on that inode reused), not a copy or a compressed continuation?"""
        return self.file_id[1] == self.inode and not self.compressed

    def hold(self, lines: Sequence[LogLine], reader: TailRead, now: float) -> None:
        """Lines read, held until their batch is due; the next read starts after them."""
        if not self.pending:
            self.pending_since = now
        self.pending += lines
        self.last = (lines[-1].offset, line_hash(lines[-1].text))
        self.pending_end, self.pending_next_line = reader.end_offset, reader.next_line_no
        self.pending_fingerprint = reader.fingerprint

    def batch(self) -> Batch:
        return Batch(self.pending, self.pending_end, self.pending_next_line, self.pending_fingerprint)

    def analysed(self, batch: Batch) -> None:
        """The batch is committed: the tail's position is after it, nothing is pending."""
        self.offset, self.next_line, self.fingerprint = batch.end_offset, batch.next_line_no, batch.fingerprint
        self.pending, self.pending_end, self.pending_next_line, self.pending_fingerprint = [], 0, 0, None

    def state(self) -> SourceState:
        """The source as the store now has it (nothing pending): with its last line read, so that
        the file found renamed and cut later in this run is checked by content (`resume_by_content`)."""
        fp = self.fingerprint
        tail_offset, tail_hash = self.last or (None, None)
        return SourceState(path=self.source, inode=self.inode, generation=self.generation, offset=self.offset,
                           line_no=self.next_line - 1, format=self.fmt, fingerprint=fp.digest if fp else None,
                           fingerprint_len=fp.length if fp else 0, fingerprint_prefix=fp.prefix if fp else None,
                           tail_offset=tail_offset, tail_hash=tail_hash)


class Batch(list):
    """Lines handed to the pipeline, with the position to persist after them (TailRead's names)."""

    changed = False

    def __init__(self, lines: Sequence[LogLine], end_offset: int, next_line_no: int,
                 fingerprint: Fingerprint | None):
        super().__init__(lines)
        self.start_line = lines[0].line_no if lines else next_line_no
        self.end_offset = end_offset
        self.next_line_no = next_line_no
        self.fingerprint = fingerprint


def take(reader: TailRead, max_lines: int) -> tuple[list[LogLine], list[ErrorRow], bool]:
    """The reader's lines and errors, at most `max_lines` lines or `READ_CHARS` of text; and whether
    it stopped early (then its position is after the last line taken)."""
    lines: list[LogLine] = []
    errors: list[ErrorRow] = []
    chars = 0
    items = iter(reader)
    for item in items:
        if isinstance(item, LogLine):
            lines.append(item)
            chars += len(item.text)
        else:
            errors.append(item)
        if len(lines) >= max_lines or chars >= READ_CHARS:
            items.close()
            return lines, errors, True
    return lines, errors, False


def stat_of(path: Path, file_id: FileId) -> tuple[int, int] | None:
    """(size, mtime_ns) of the file, or None when the path is gone or now holds another file."""
    try:
        st = path.stat()
    except OSError:
        return None
    if (st.st_dev, st.st_ino) != file_id:
        return None  # replaced under this name: the next scan sorts it out
    return st.st_size, st.st_mtime_ns


def end_of(path: Path) -> tuple[int, int, Fingerprint | None]:
    """Offset of the end of the last complete line, the number the next line will get, and the
    fingerprint of what lies before it."""
    reader = TailRead(path, final_partial=is_compressed(path))
    for _ in reader:
        pass
    return reader.end_offset, reader.next_line_no, reader.fingerprint
