"""Where a run reads each file from, and the position each commit of it carries.

Owns: `Positions.start_of` — where reading a file starts and as which source: with --resume by
content (`sources.resume_by_content`: where it stopped, or the next generation after the part of it
still what was read), else by the head (`ingest.identify`, `ingest.kept_part`), else from line 1 —;
the positions of the files `analyze` is reading, as far as their stored windows go (each chunk's
commit carries it, so a kill -9 resumes a big file there, not at line 1); the hashes of the lines
read and not committed yet (`sources.LineHashes`); and the source rows a commit writes with them
(offset, line, format, fingerprint, head, the last line's offset and hash, and the source's detector
state at that position — the correlations' counts, so a burst split by a restart adds up —); and
which saved detector state a read starts with (only the one saved at the line before its first).

Knows nothing of parsing, windows' contents or the model: the pipeline says which lines it read
and where its windows end; the checks themselves are app/sources.py's and ingest.identity's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from logwarden.app.events import ErrorRow, LogLine
from logwarden.app.ingest import (
    Fingerprint,
    SourceKey,
    identify,
    is_compressed,
    kept_part,
    lines_within,
    next_generation,
    read_head,
    source_name,
)
from logwarden.app.sources import Kept, LineHashes, resume_by_content
from logwarden.app.store import SourceState, Store, Transaction

log = logging.getLogger(__name__)



class PositionedLines(Protocol):
    """Lines that know, once read, where the next read starts (`TailRead`, the watcher's batch),
    the fingerprint of what was read (`ingest.identity`), and whether the file turned out not to
    be the one expected (`changed`: nothing was read, nothing may be persisted)."""

    start_line: int  # the number of the first line it reads
    end_offset: int
    next_line_no: int
    fingerprint: Fingerprint | None
    changed: bool

    def __iter__(self) -> Iterator[LogLine | ErrorRow]: ...


class Positions:
    """The positions of one run's sources, for the pipeline's commits."""

    def __init__(self, store: Store, *, resume: bool = False, node: str | None = None):
        self.store, self.resume, self.node = store, resume, node
        self._reading: dict[SourceKey, dict] = {}  # files being read by `analyze` and where their stored windows end
        self._hashes: dict[SourceKey, LineHashes] = {}  # hashes of the lines read and not yet committed

    # ---- where a file starts --------------------------------------------------------------------

    def start_of(self, path: Path) -> SourceState:
        """Where reading `path` starts, and as which source. With --resume, by content: a rotated,
        compressed or copied file continues the source it was where its reading stopped (so
        nothing is read twice, and line numbers go on). Otherwise from line 1, as itself: the same
        generation when it still is the same file (re-analysis replaces its rows), else a new one."""
        inode, size, compressed = _inode(path), _size(path), is_compressed(path)
        head = read_head(path) or b""
        name = source_name(path, self.node)
        known = self.store.list_sources(under=[source_name(path.parent, self.node)])
        if self.resume and not compressed and (resumed := self._resume_own(path, name, inode, head, known)):
            return resumed
        if self.resume:  # a store without line hashes: the head says whether a truncated file kept a part
            kept = [k for k in known if k.path == name and kept_part(k, inode=inode, size=size, head=head,
                                                                    compressed=compressed)]
            if kept:
                return _after_kept_part(max(kept, key=lambda k: k.generation), path, head,
                                        next_generation(known, name, inode))
        candidates = known if self.resume else [k for k in known if (k.path, k.inode) == (name, inode)]
        found = identify(candidates, name=name, inode=inode, size=size, head=head, compressed=compressed)
        if found is not None and self.resume:
            return found
        if found is not None:
            return dataclasses.replace(found, offset=0, line_no=0, format=None)
        return SourceState(path=name, inode=inode, offset=0, line_no=0, generation=next_generation(known, name, inode))

    def _resume_own(self, path: Path, name: str, inode: int, head: bytes,
                    known: Sequence[SourceState]) -> SourceState | None:
        """The source the file is by its inode (`sources.resume_by_content`), checked by content: where it
        stopped, or the next generation after the part of it that is still what was read."""
        found = resume_by_content(path, known, name=name, inode=inode, head=head,
                                  runs_of=lambda k: self.line_hashes((k.path, k.inode, k.generation)))
        if found is None:
            return None
        own, verdict = found
        if verdict is True:
            return own
        generation = next_generation(known, own.path, inode)
        log.info("%s: cut and written to since it was read; %d line(s) of it were read, going on after them",
                 path, verdict.lines)
        self.continue_after(verdict, (own.path, inode, generation))
        return dataclasses.replace(own, offset=verdict.offset, line_no=verdict.lines, generation=generation,
                                   miner_state=None, tail_offset=None, tail_hash=None,
                                   **_identity(head, Fingerprint.of(head, verdict.offset)))

    # ---- the lines read ---------------------------------------------------------------------------

    def hashed(self, lines: Iterable[LogLine], key: SourceKey) -> Iterator[LogLine]:
        """The lines, each leaving its hash for the commit that stores its position."""
        hashes = self._hashes.setdefault(key, LineHashes())
        for line in lines:
            hashes.add(line)
            yield line

    def line_hashes(self, key: SourceKey) -> list[tuple[int, bytes]]:
        """The hashes of source generation `key`'s lines: those committed, then those read and not yet
        committed (a kept part waits for the next commit: cut again before it, it is still known)."""
        runs = self.store.line_hashes(*key)
        pending = self._hashes.get(key)
        return [*runs, run] if pending is not None and (run := pending.run()) is not None else runs

    def continue_after(self, kept: Kept, key: SourceKey) -> None:
        """The next generation `key` of a truncated file starts after its kept part: the kept lines'
        hashes are committed again as its first lines."""
        self._hashes[key] = LineHashes.of_kept(kept)

    # ---- a file being read, its windows stored in chunks ------------------------------------------

    def reading(self, key: SourceKey, *, fmt: str, head: bytes | None) -> None:
        """`analyze` reads the file in chunks of windows: each chunk's commit carries where its windows end."""
        self._reading[key] = dict(path=key[0], inode=key[1], generation=key[2], format=fmt, head=head)

    def stored(self, key: SourceKey, *, end: int, line_no: int) -> None:
        """The windows of a file being read are stored up to byte `end`, line `line_no` (0: a whole-file
        JSON document has no resumable middle)."""
        reading = self._reading.get(key)
        if reading is not None and end:
            reading.update(offset=end, line_no=line_no)

    def done(self, key: SourceKey) -> None:
        """The file was read to its end: its final position follows with its last windows (`after`)."""
        self._reading.pop(key, None)

    @staticmethod
    def after(items: PositionedLines, key: SourceKey, *, fmt: str, miner_state: str | None) -> dict:
        """The source row after `items` were read to their end."""
        return dict(path=key[0], inode=key[1], generation=key[2], offset=items.end_offset,
                    line_no=items.next_line_no - 1, format=fmt, miner_state=miner_state,
                    **_identity(getattr(items, "head", None), items.fingerprint))

    # ---- detector state ---------------------------------------------------------------------------

    def saved_detector(self, key: SourceKey, start_line: int | None) -> dict | None:
        """The detector state saved with source generation `key`, when a read starting at line
        `start_line` goes on exactly after it (a re-analysis from line 1 starts with none)."""
        state = self.store.get_source(*key)
        if state is None or not state.detector_state or start_line is None:
            return None
        saved = json.loads(state.detector_state)
        return saved["detector"] if saved.get("line_no") == start_line - 1 else None

    # ---- a commit -----------------------------------------------------------------------------------

    def write(self, tx: Transaction, finished: Sequence[dict],
              detector_of: Callable[[SourceKey], dict | None] = lambda _key: None) -> None:
        """The source rows of this commit: the files still being read, as far as their stored windows
        go, and the `finished` ones; each with the hashes of its lines up to there and its detector's
        state (`detector_of`: what the source's windows stored so far left in it), in the same
        transaction as the windows' records."""
        partial = [_position(reading) for reading in self._reading.values() if "offset" in reading]
        for state in [*partial, *finished]:
            self._write_hashes(tx, state)
            detector = detector_of((state["path"], state["inode"], state.get("generation", 0)))
            if detector is not None:
                state = {**state, "detector_state": json.dumps({"line_no": state["line_no"], "detector": detector})}
            tx.set_source(state["path"], state["inode"], **{k: v for k, v in state.items()
                                                             if k not in ("path", "inode")})

    def _write_hashes(self, tx: Transaction, state: dict) -> None:
        """The hashes of a source's lines up to the position committed now, and its last line (tail)."""
        key = (state["path"], state["inode"], state.get("generation", 0))
        hashes = self._hashes.get(key)
        if hashes is None:
            return
        first, packed, last = hashes.take(state["line_no"])
        tx.add_line_hashes(*key, first_line=first, hashes=packed)
        if last is not None:
            state.update(tail_offset=last[0], tail_hash=last[1])


def _after_kept_part(known: SourceState, path: Path, head: bytes, generation: int) -> SourceState:
    """What is left of a truncated file was read: the next generation of its source starts after
    its last complete line, line numbers going on from there (the file's own); what is appended
    later gets records of its own, apart from those of the lines cut away."""
    offset, lines = lines_within(path, _size(path))
    fingerprint = Fingerprint.of(head, offset)
    return dataclasses.replace(known, offset=offset, line_no=lines, generation=generation, miner_state=None,
                               **_identity(head, fingerprint))


def _position(reading: dict) -> dict:
    """A file still being read, as far as its committed windows go."""
    return dict(path=reading["path"], inode=reading["inode"], generation=reading["generation"],
                offset=reading["offset"], line_no=reading["line_no"], format=reading["format"],
                **_identity(reading["head"], Fingerprint.of(reading["head"], reading["offset"])))


def _identity(head: bytes | None, fingerprint: Fingerprint | None) -> dict:
    """A source row's fingerprint columns, and the bytes it covers (`head`: None keeps the stored one)."""
    return dict(fingerprint=fingerprint.digest if fingerprint else None,
                fingerprint_len=fingerprint.length if fingerprint else 0,
                fingerprint_prefix=fingerprint.prefix if fingerprint else None,
                head=head[:fingerprint.length] if fingerprint and head else None)


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except OSError:
        return 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
