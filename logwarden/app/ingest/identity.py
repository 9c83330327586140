"""Which file is this? Tell a new file from a rotated, compressed, copied or truncated one by its
content, not by its name or inode alone.

A source that has been read is remembered with a *fingerprint*: the sha256 of the first bytes of
its (decompressed) content, at most `FINGERPRINT_BYTES` and never more than what was read. A file
continues a known source when its head has that fingerprint (and, uncompressed, is at least as
long as what was read): `mv auth.log auth.log.1`, `gzip auth.log.1` and logrotate's copy all
keep the head, so they continue where reading stopped. Same path and inode but another head
(copytruncate, or a deleted file whose inode was reused) is a new *generation* of that source,
read from line 1. Inodes alone lie: they are reused, and a compressed or copied file has a new one.

A source's *name* is its path when first seen, prefixed with a node name (`web01:/var/log/auth.log`)
when one is set: in a store shared by several hosts the same path is another file on each.

Whether the part after the head is still what was read is `app/sources.py`'s question (line
hashes); `kept_part` here is the answer for stores from before them.

Owns: source names, fingerprints, a stream's head, and the matching rule. Knows nothing
about where known sources are stored (they come in as `Known` objects) or how files are followed.
"""

from __future__ import annotations

import hashlib
import lzma
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from logwarden.app.ingest.files import rotated_onward
from logwarden.app.safetext import os_text

FINGERPRINT_BYTES = 4096
PREFIX_BYTES = 64  # a second, short fingerprint: tells a new file from a copy being written at once
# What a damaged compressed stream raises mid-read (BadGzipFile is an OSError).
READ_ERRORS = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)
EVTX_HEADER_BYTES = 4096 + 512  # the file header and the first chunk's header change as events are added


@dataclass(frozen=True, slots=True)
class Fingerprint:
    length: int  # bytes hashed
    digest: str  # sha256 hex
    prefix: str | None = None  # sha256 hex of the first PREFIX_BYTES (None when shorter)

    @classmethod
    def of(cls, head: bytes, consumed: int) -> Fingerprint | None:
        """The fingerprint of what was read: the head's first `consumed` bytes (capped)."""
        length = min(len(head), consumed, FINGERPRINT_BYTES)
        if length <= 0:
            return None
        prefix = _sha(head[:PREFIX_BYTES]) if length >= PREFIX_BYTES else None
        return cls(length, _sha(head[:length]), prefix)

    def matches(self, head: bytes) -> bool:
        return len(head) >= self.length and _sha(head[:self.length]) == self.digest

    def may_grow_into(self, head: bytes) -> bool:
        """Could a file with this (shorter) head still turn out to have this fingerprint?"""
        if len(head) >= self.length:
            return False  # decidable now: `matches` says
        if self.prefix is None or len(head) < PREFIX_BYTES:
            return True
        return _sha(head[:PREFIX_BYTES]) == self.prefix


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Known(Protocol):
    """A source as the store remembers it (`store.SourceState` has these fields)."""

    path: str
    inode: int
    generation: int
    offset: int
    fingerprint: str | None
    fingerprint_len: int
    fingerprint_prefix: str | None
    head: bytes | None  # the bytes the fingerprint covers, when the store kept them


SourceKey = tuple[str, int, int]  # (source, inode, generation): what is being read, as the store names it


def key_of(known: Known) -> SourceKey:
    return (known.path, known.inode, known.generation)


def fingerprint_of(known: Known) -> Fingerprint | None:
    if not known.fingerprint or known.fingerprint_len <= 0:
        return None
    return Fingerprint(known.fingerprint_len, known.fingerprint, known.fingerprint_prefix)


def source_name(path: Path | str, node: str | None = None) -> str:
    """What a file at `path` is called as a source: its path, on `node` when one is set. A name's
    undecodable bytes and control characters are escaped (`\\x80`, `\\n`): a source name is stored,
    shown and put in prompts, where they would crash or forge lines."""
    name = os_text(path)
    return f"{node}:{name}" if node else name


def continues(known: Known, *, inode: int, size: int, head: bytes, compressed: bool) -> bool:
    """Does this file hold `known`'s content, so that reading may go on from `known.offset`?
    A copy may be shorter than what was read (still being written, or a prefix): it continues
    with nothing new to read yet. The same file shorter than what was read was truncated."""
    if inode == known.inode and not compressed and size < known.offset:
        return False
    fingerprint = fingerprint_of(known)
    if fingerprint is not None:
        return fingerprint.matches(head)
    # Nothing read yet, or a row from before fingerprints: only the inode can say.
    return known.inode == inode


def kept_part(known: Known, *, inode: int, size: int, head: bytes, compressed: bool) -> bool:
    """Was this file truncated in place to a part of what was read from it (`truncate -s`), rather
    than emptied and written anew? Only when that can be checked: the same inode, uncompressed,
    shorter than what was read but not empty, and its bytes equal to the stored `head` (or, past
    the head, matching the fingerprint). Then reading goes on after the part, which was read."""
    if compressed or inode != known.inode or not 0 < size < known.offset:
        return False
    fingerprint = fingerprint_of(known)
    stored = getattr(known, "head", None)
    if fingerprint is None or not stored or not fingerprint.matches(stored):
        return False  # a store from before heads were kept, or a head that no longer fits
    if size >= fingerprint.length:
        return fingerprint.matches(head)
    return head[:size] == stored[:size]


def identify(known: Iterable[Known], *, name: str, inode: int, size: int, head: bytes,
             compressed: bool) -> Known | None:
    """The known source a file continues, or None for a new file; `name` is what the file would be
    called as a new source (`source_name`). Prefers, in order: the same name and inode, the same
    inode (renamed), then the longest fingerprint (the closest match). A source nothing was read
    from has no content to compare, so its inode alone would take a new file on a deleted file's
    reused inode for it: it is followed only to its own name or where rotation moves it."""
    matches = [k for k in known if (k.offset > 0 or k.path == name or rotated_onward(k.path, name))
               and continues(k, inode=inode, size=size, head=head, compressed=compressed)]
    if not matches:
        return None
    return max(matches, key=lambda k: (k.path == name and k.inode == inode, k.inode == inode,
                                       k.fingerprint_len, k.generation))


def undecided(known: Iterable[Known], head: bytes) -> bool:
    """A head shorter than a known fingerprint whose first bytes it shares cannot rule that source
    out: a copy (or a compressed file) still being written, or a new file's first bytes. Wait
    for more, or for quiet. A head whose first 64 bytes differ is decided at once."""
    return any(fp.may_grow_into(head) for fp in map(fingerprint_of, known) if fp is not None)


def next_generation(known: Iterable[Known], name: str, inode: int) -> int:
    """The generation a new file named `name` with `inode` gets: one more than any remembered."""
    return 1 + max((k.generation for k in known if k.path == name and k.inode == inode), default=-1)


def head_of(stream, *, evtx: bool = False, size: int = FINGERPRINT_BYTES) -> bytes:
    """The first `size` bytes of an open binary stream (left at its start). EVTX: the first events' bytes."""
    try:
        if evtx:
            stream.seek(EVTX_HEADER_BYTES)
        head = stream.read(size)
        stream.seek(0)
    except READ_ERRORS:
        return b""
    return head
