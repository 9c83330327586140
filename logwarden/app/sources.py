"""Where reading a known file resumes, checked against what was read: by content, not by length.

The head fingerprint (`ingest.identity`) says a file is the source it was; it cannot say whether the
part after the head is still what was read. So each committed line leaves its hash (`line_hash`,
kept in the store in runs of consecutive lines) and the source remembers where its last line read
starts (`tail_offset`) and that line's hash. A file whose line at `tail_offset` still has that hash
and ends at the stored offset goes on from there (`holds_what_was_read`). One that does not — cut
to a part of what was read, then written to, shorter or longer than before — is compared line by
line with the hashes: the lines that match were read; reading goes on at the first that does not
(`kept_part`), as the next generation of the source (its records apart from those of the lines cut
away), so truncation + append neither loses the appended lines nor reads the kept ones twice.

Owns: line hashes, their accumulation as lines pass (`LineHashes`) and the two checks. Knows nothing
about how the store keeps them (rows come in and go out as `(first line, bytes)`), nor about the CLI.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from logwarden.app.events import LogLine
from logwarden.app.ingest import TailRead, fingerprint_of

HASH_TYPE = "I"  # 4 bytes a line: a CRC-32 (collisions are told apart by the line's position too)


def line_hash(text: str) -> int:
    """The hash a line is remembered by: CRC-32 of its text as the reader gave it (C speed)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class LineHashes:
    """The hashes of the lines of one source read but not yet committed, in line order."""

    first_line: int = 0  # the line number of hashes[0]
    hashes: array = field(default_factory=lambda: array(HASH_TYPE))
    offsets: array = field(default_factory=lambda: array("q"))  # where each line starts (a commit's tail)

    def add(self, line: LogLine) -> None:
        if not self.hashes or line.line_no != self.first_line + len(self.hashes):
            self.first_line, self.hashes, self.offsets = line.line_no, array(HASH_TYPE), array("q")  # a new run
        self.hashes.append(line_hash(line.text))
        self.offsets.append(line.offset)

    def take(self, upto_line: int) -> tuple[int, bytes, tuple[int, int] | None]:
        """The run of lines up to `upto_line` (committed now): (first line, packed hashes, (offset,
        hash) of the last one or None); they are forgotten, the later ones kept."""
        count = max(0, min(len(self.hashes), upto_line - self.first_line + 1))
        if count == 0:
            return self.first_line, b"", None
        taken, first = self.hashes[:count], self.first_line  # (an array slice is a copy)
        last = (self.offsets[count - 1], taken[-1])
        del self.hashes[:count], self.offsets[:count]
        self.first_line += count
        return first, _packed(taken), last

    def run(self) -> tuple[int, bytes] | None:
        """The lines held, as a run like those the store keeps (first line, packed hashes); None if none."""
        return (self.first_line, _packed(self.hashes)) if self.hashes else None

    @classmethod
    def of_kept(cls, kept: Kept) -> LineHashes:
        """The kept part's lines, to be committed again as the first lines of the next generation
        (a later truncation of it is then checked from line 1 too)."""
        offsets = array("q", bytes(8 * len(kept.hashes)))
        if kept.hashes:
            offsets[-1] = kept.tail_offset
        return cls(1 if kept.hashes else 0, kept.hashes, offsets)


@dataclass(frozen=True, slots=True)
class Kept:
    """The part of a file that is what was read: it ends at `offset`, after `lines` lines (hashes
    `hashes`); the last of them starts at `tail_offset`."""

    offset: int
    lines: int
    hashes: array
    tail_offset: int


def _packed(hashes: array) -> bytes:
    if sys.byteorder != "little":
        hashes = array(HASH_TYPE, hashes)
        hashes.byteswap()
    return hashes.tobytes()


def _unpacked(blob: bytes) -> array:
    hashes = array(HASH_TYPE)
    hashes.frombytes(blob)
    if sys.byteorder != "little":
        hashes.byteswap()
    return hashes


def holds_what_was_read(path: Path, *, offset: int, tail_offset: int | None, tail_hash: int | None) -> bool:
    """Does the line read last still lie where it was, ending at `offset`, with its text? True when
    nothing tells (no line read yet, a store from before line hashes)."""
    if tail_offset is None or tail_hash is None or offset <= 0:
        return True
    # final_partial: the line read last may be an unterminated one the reader took as final
    reader = TailRead(path, start_offset=tail_offset, final_partial=True)
    for item in reader:
        return isinstance(item, LogLine) and item.end == offset and line_hash(item.text) == tail_hash
    return False


def kept_part(path: Path, runs: Sequence[tuple[int, bytes]]) -> Kept | None:
    """The part of `path` that is what was read, line for line, from line 1; None when no hashes
    cover line 1 (a store from before them, or a file first read from its end): then nothing can be
    checked. Reads the file once, up to the first line that differs."""
    if not runs or runs[0][0] != 1:
        return None
    expected = _expected(runs)
    reader = TailRead(path, final_partial=True)  # an unterminated last line read as final was read
    hashes, tail = array(HASH_TYPE), 0
    for item in reader:
        if not isinstance(item, LogLine):
            break
        value = line_hash(item.text)
        if next(expected, None) != value:
            return Kept(item.offset, item.line_no - 1, hashes, tail)
        hashes.append(value)
        tail = item.offset
    return Kept(reader.end_offset, reader.next_line_no - 1, hashes, tail)


def resume_own(path: Path, known: Known, head: bytes, runs_of: Callable[[], Sequence[tuple[int, bytes]]]
               ) -> Kept | bool | None:
    """Where a source's own file (its path and inode, uncompressed) goes on: True — at `known.offset`,
    it still holds what was read; a `Kept` — what was read was cut and the file written to since: the
    next generation starts after the kept part (from line 1 when no line was kept); None — nothing
    tells (a store from before line hashes): the head fingerprint decides, as before."""
    if known.offset <= 0 or known.tail_offset is None:
        return None
    fingerprint = fingerprint_of(known)
    if (fingerprint is None or fingerprint.matches(head)) and holds_what_was_read(
            path, offset=known.offset, tail_offset=known.tail_offset, tail_hash=known.tail_hash):
        return True
    kept = kept_part(path, runs_of())
    if kept is None:
        return None
    return True if (kept.offset, kept.lines) == (known.offset, known.line_no) else kept


def resume_by_content(path: Path, known: Iterable[Known], *, name: str, inode: int, head: bytes,
                      runs_of: Callable[[Known], Sequence[tuple[int, bytes]]]) -> tuple[Known, Kept | bool] | None:
    """The source a file is by its inode and content, and `resume_own`'s verdict on it. The latest
        generation of each source with this inode is asked, those of the file's name first: the first
        whose lines the file still holds (some of them at least) wins; else the file's own name's,
        which then starts over as its next generation. None when nothing tells (no line hashes, or
        only other names' sources, none of whose lines it holds: a new file on a reused inode)."""
    latest: dict[str, Known] = {}
    for k in known:
        if k.inode == inode and (k.path not in latest or k.generation > latest[k.path].generation):
            latest[k.path] = k
    fallback = None
    for k in sorted(latest.values(), key=lambda k: (k.path != name, k.path)):
        verdict = resume_own(path, k, head, lambda k=k: runs_of(k))
        if verdict is True or (isinstance(verdict, Kept) and verdict.lines):
            return k, verdict
        if verdict is not None and k.path == name:
            fallback = (k, verdict)
    return fallback


class Known(Protocol):
    """A source as the store remembers it (`store.SourceState` has these fields)."""

    path: str
    inode: int
    generation: int
    offset: int
    line_no: int
    fingerprint: str | None
    fingerprint_len: int
    fingerprint_prefix: str | None
    tail_offset: int | None
    tail_hash: int | None


def _expected(runs: Iterable[tuple[int, bytes]]) -> Iterator[int]:
    """The hashes of lines 1, 2, … in order, as far as the runs are consecutive (a gap ends them)."""
    following = 1
    for first, blob in runs:
        if first != following:
            return
        hashes = _unpacked(blob)
        yield from hashes
        following += len(hashes)
