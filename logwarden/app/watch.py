"""The watcher: tail growing files in folders and analyse new lines in batches, crash-safely.

Owns: following files by inode (rename-rotation: the old file is drained, the new one starts at
0; copytruncate: a file that shrinks is read again from 0; deletion: the source is dropped),
holding back an unterminated last line until it is completed or has been quiet for a while,
batching lines by size and delay, and clean shutdown on SIGINT/SIGTERM. A batch's records and
the source offset after it are committed in one transaction by the pipeline, so a crash at any
point loses nothing and duplicates nothing. watchdog events wake the loop early; a periodic
scan makes missed events harmless. Knows nothing of parsing or the model.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from logwarden.errors import InputError
from logwarden.app.ingest import TailRead, iter_files
from logwarden.app.models import ErrorRow, LogLine
from logwarden.app.pipeline import Pipeline

log = logging.getLogger(__name__)
SCAN_INTERVAL_S = 1.0


@dataclass(slots=True)
class Tail:
    """One followed file, identified by inode; `source` is the path it had when first seen."""

    source: str
    inode: int
    path: Path
    offset: int
    next_line: int
    fmt: str | None = None
    pending: list[LogLine] = field(default_factory=list)
    pending_since: float = 0.0
    pending_end: int = 0
    pending_next_line: int = 0
    last_growth: float = field(default_factory=time.monotonic)


class _Batch(list):
    """Lines handed to the pipeline, with the position to persist after them (TailRead's names)."""

    def __init__(self, lines: Sequence[LogLine], end_offset: int, next_line_no: int):
        super().__init__(lines)
        self.end_offset = end_offset
        self.next_line_no = next_line_no


@dataclass(slots=True)
class WatchStats:
    lines: int = 0
    batches: int = 0
    started: float = field(default_factory=time.monotonic)
    last_record: str = ""

    def line(self, queue: int) -> str:
        rate = self.lines / max(time.monotonic() - self.started, 1e-9)
        return f"lines {self.lines:,} ({rate:,.0f}/s) batches {self.batches:,} queued {queue:,} last: {self.last_record}"


class _Wake(FileSystemEventHandler):
    def __init__(self, event: threading.Event):
        self._event = event

    def on_any_event(self, event) -> None:
        self._event.set()


class Watcher:
    def __init__(self, folders: Sequence[str | Path], pipeline: Pipeline, *, max_batch: int = 500,
                 max_delay_ms: int = 2000, partial_timeout_s: float = 5.0, from_start: bool = False,
                 status: Callable[[str], None] | None = None):
        self.folders = [Path(f) for f in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise InputError(f"{folder}: not a folder; `logwarden watch` takes folders to follow")
        self.pipeline = pipeline
        self.max_batch = max_batch
        self.max_delay_s = max_delay_ms / 1000
        self.partial_timeout_s = partial_timeout_s
        self.from_start = from_start
        self.status = status
        self.stats = WatchStats()
        self.tails: dict[int, Tail] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._first_scan = True
        # Known sources by inode: a file rotated while we were down resumes under its new name.
        self._known = {state.inode: state for state in pipeline.store.list_sources() if state.inode}

    # ---- lifecycle -----------------------------------------------------------------------

    def stop(self, *_args) -> None:
        self._stop.set()
        self._wake.set()

    def run(self, *, max_seconds: float | None = None) -> WatchStats:
        """Follow until stopped (signal, `stop()`, or `max_seconds`); the batch in flight completes."""
        observer = Observer()
        for folder in self.folders:
            observer.schedule(_Wake(self._wake), str(folder), recursive=True)
        observer.start()
        previous = {sig: signal.signal(sig, self.stop) for sig in (signal.SIGINT, signal.SIGTERM)} \
            if threading.current_thread() is threading.main_thread() else {}
        deadline = time.monotonic() + max_seconds if max_seconds else None
        try:
            while not self._stop.is_set() and (deadline is None or time.monotonic() < deadline):
                self.poll()
                self._wake.wait(min(SCAN_INTERVAL_S, self.max_delay_s))
                self._wake.clear()
            self.poll(final=True)
        finally:
            observer.stop()
            observer.join(timeout=5)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.pipeline.finish("stopped")
        return self.stats

    def poll(self, *, final: bool = False) -> None:
        """One pass: discover files, read what was appended, analyse the batches that are due."""
        self._scan()
        now = time.monotonic()
        for tail in list(self.tails.values()):
            self._read(tail, now)
            if tail.pending and (final or len(tail.pending) >= self.max_batch
                                 or now - tail.pending_since >= self.max_delay_s):
                self._analyse(tail)
        if self.status:
            self.status(self.stats.line(sum(len(t.pending) for t in self.tails.values())))

    # ---- discovery: inodes, rotation, truncation, deletion -------------------------------

    def _scan(self) -> None:
        seen: dict[int, Path] = {}
        for item in iter_files(self.folders):
            if isinstance(item, ErrorRow):
                continue
            try:
                seen[item.stat().st_ino] = item
            except OSError:
                continue
        for inode in list(self.tails):
            if inode not in seen:
                self._drop(self.tails.pop(inode))
        for inode, path in seen.items():
            tail = self.tails.get(inode)
            if tail is None:
                self.tails[inode] = self._new_tail(path, inode)
            elif tail.path != path:
                log.info("%s rotated to %s; draining it", tail.path, path)
                tail.path = path
        self._first_scan = False

    def _new_tail(self, path: Path, inode: int) -> Tail:
        state = self._known.get(inode)
        if state is not None and (state.path == str(path) or not Path(state.path).exists()
                                  or Path(state.path).stat().st_ino != inode):
            return Tail(state.path, inode, path, state.offset, state.line_no + 1, fmt=state.format)
        tail = Tail(str(path), inode, path, 0, 1)
        if self._first_scan and not self.from_start:
            tail.offset, tail.next_line = _end_of(path)
            with self.pipeline.store.transaction() as tx:  # remember where we started tailing
                tx.set_source(tail.source, inode, offset=tail.offset, line_no=tail.next_line - 1)
        return tail

    def _drop(self, tail: Tail) -> None:
        if tail.pending:
            self._analyse(tail)
        log.info("%s deleted; no longer followed", tail.path)

    # ---- reading and analysing -----------------------------------------------------------

    def _read(self, tail: Tail, now: float) -> None:
        start = tail.pending_end if tail.pending else tail.offset
        size = _size(tail.path)
        if size is None:
            return
        if size < start:  # copytruncate: the same inode restarted from empty
            log.info("%s shrank (%d < %d): copytruncate, reading from 0", tail.path, size, start)
            if tail.pending:
                self._analyse(tail)
            tail.offset = start = 0
        if size == start:
            return
        quiet = now - tail.last_growth >= self.partial_timeout_s
        reader = TailRead(tail.path, start_offset=start, start_line=tail.pending_next_line or tail.next_line,
                          final_partial=quiet)
        lines = [item for item in reader if isinstance(item, LogLine)]
        if reader.end_offset != start:
            tail.last_growth = now
        if lines:
            if not tail.pending:
                tail.pending_since = now
            tail.pending += lines
            tail.pending_end, tail.pending_next_line = reader.end_offset, reader.next_line_no

    def _analyse(self, tail: Tail) -> None:
        batch = _Batch(tail.pending, tail.pending_end, tail.pending_next_line)
        before = self.pipeline.metrics.records
        tail.fmt = self.pipeline.process(batch, source=tail.source, inode=tail.inode, fmt=tail.fmt) or tail.fmt
        tail.offset, tail.next_line = tail.pending_end, tail.pending_next_line
        tail.pending, tail.pending_end, tail.pending_next_line = [], 0, 0
        self.stats.lines += len(batch)
        self.stats.batches += 1
        if self.pipeline.metrics.records > before:
            self.stats.last_record = f"{self.pipeline.metrics.records - before} record(s) from {tail.source}"


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _end_of(path: Path) -> tuple[int, int]:
    """Offset of the end of the last complete line, and the number the next line will get."""
    reader = TailRead(path, final_partial=False)
    for _ in reader:
        pass
    return reader.end_offset, reader.next_line_no
