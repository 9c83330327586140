"""The watcher: tail growing files in folders and analyse new lines in batches, crash-safely.

Owns: following files through rotation by what they hold, not by name or inode alone
(`ingest.identity`): a renamed file (`auth.log` → `auth.log.1`) is drained under its first name;
a compressed or copied file (`auth.log.1.gz`, logrotate's copy before a copytruncate) that holds
a followed source's content continues it from where reading stopped instead of being read again
— and while the original is still followed, the copy waits; a file whose head changed under the
same path (copytruncate, a recreated file) is the next *generation* of its source, read from line
1 — or, cut to a part of what was read and written to again, from its first line not read
(`app/sources.py`; a renamed file is checked so too: it is still the inode that was read) — so
line numbers are always the file's own. Compressed files are read once, when they have
stopped changing. Deletion drops a file. A file present before this store's watcher ever
followed its folder is tailed from its end (unless `from_start`); anything that appears later —
also while the watcher was down — is read from line 1.

Also owns holding back an unterminated last line until it is completed or has been quiet for a
while, batching lines by size and delay, clean shutdown on SIGINT/SIGTERM (app/signals.py), and
outliving its store: while the store does not answer (a PostgreSQL restart, a SQLite lock held past
the busy timeout) reading pauses where it is, the batch whose commit failed waits whole, the wait
between tries grows to a few seconds, the outage is said on stderr and counted in the run's metrics,
and following goes on once the store answers;
a followed file's state and a bounded read of it are app/tails.py's. A batch's records
and the source position after it are committed in one transaction by the pipeline, so a crash at
any point loses nothing and duplicates nothing. watchdog events wake the loop early; a periodic
scan makes missed events harmless. Knows nothing of parsing or the model.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from logwarden.app.events import ErrorRow
from logwarden.app.ingest import (
    Skipped,
    SourceKey,
    TailRead,
    identify,
    is_compressed,
    key_of,
    next_generation,
    read_head,
    source_name,
    undecided,
)
from logwarden.app.pipeline import Pipeline
from logwarden.app.signals import stop_signals
from logwarden.app.sources import Kept, holds_what_was_read, kept_part, resume_by_content
from logwarden.app.store import SourceState
from logwarden.app.tails import READ_BATCHES, FileId, Look, Tail, end_of, stat_of, take
from logwarden.errors import InputError, RunStopped, StoreError

log = logging.getLogger(__name__)
SCAN_INTERVAL_S = 1.0
OUTAGE_WAIT_S, OUTAGE_WAIT_MAX_S = 0.5, 8.0  # the first wait for a store that does not answer, and the longest


@dataclass(slots=True)
class WatchStats:
    lines: int = 0
    batches: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)
    last_record: str = ""
    stopped: bool = False  # ended by a stop (a signal, `stop()`), not by `max_seconds`

    def line(self, queue: int) -> str:
        rate = self.lines / max(time.monotonic() - self.started, 1e-9)
        errors = f" errors {self.errors:,}" if self.errors else ""
        return (f"lines {self.lines:,} ({rate:,.0f}/s) batches {self.batches:,} queued {queue:,}{errors} "
                f"last: {self.last_record}")


class _Wake(FileSystemEventHandler):
    def __init__(self, event: threading.Event):
        self._event = event

    def on_any_event(self, event) -> None:
        self._event.set()


class Watcher:
    def __init__(self, folders: Sequence[str | Path], pipeline: Pipeline, *, max_batch: int = 500,
                 max_delay_ms: int = 2000, partial_timeout_s: float = 5.0, from_start: bool = False,
                 status: Callable[[str], None] | None = None, node: str | None = None,
                 stop: threading.Event | None = None):
        self.folders = [Path(os.path.abspath(f)) for f in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise InputError(f"{folder}: not a folder; `logwarden watch` takes folders to follow")
        self.pipeline = pipeline
        self.max_batch = max_batch
        self.max_delay_s = max_delay_ms / 1000
        self.partial_timeout_s = partial_timeout_s
        self.from_start = from_start
        self.status = status
        self.node = node  # sources are called NODE:/path (a store shared by several hosts)
        self.stats = WatchStats()
        self.tails: dict[FileId, Tail] = {}
        self._stop = stop or threading.Event()  # given: the caller takes stop requests before `run`
        self._wake = threading.Event()
        self._first_scan = True
        store = pipeline.store
        # What this store has read in these folders (any generation), kept current as batches commit.
        named = [self._name(f) for f in self.folders]
        self._known: dict[SourceKey, SourceState] = {key_of(s): s for s in store.list_sources(under=named)}
        watched = [Path(p) for p in store.watched_folders()]
        self._new_folders = [f for f in self.folders
                             if not any(Path(self._name(f)).is_relative_to(w) for w in watched)]
        self._present_at_start: list[Tail] = []
        self._settling: dict[FileId, tuple[Look, float]] = {}  # files not identified yet: last look, since
        self._refused: set[str] = set()  # entries reported as not readable (special or pseudo files)
        self._unsaved: tuple | None = None  # (tail, batch, …) analysed but not committed: the store failed
        self._outage_since: float | None = None  # when the store stopped answering (None: it answers)
        self._outage_wait = OUTAGE_WAIT_S

    # ---- lifecycle -----------------------------------------------------------------------

    def stop(self, _signum: int | None = None) -> None:
        """Stop following; with a model, its generations in flight are cancelled (their batch is
        read again next time: its records and offset were not committed)."""
        self._stop.set()
        self._wake.set()
        if self.pipeline.engine is not None:
            self.pipeline.cancel()

    def run(self, *, max_seconds: float | None = None) -> WatchStats:
        """Follow until stopped (signal, `stop()`, or `max_seconds`); the batch in flight completes."""
        observer = Observer()
        for folder in self.folders:
            observer.schedule(_Wake(self._wake), str(folder), recursive=True)
        observer.start()
        deadline = time.monotonic() + max_seconds if max_seconds else None
        worker = self.pipeline.review_worker()  # the model reviews beside the watcher, never in its way
        status = "failed"  # unless following ends as asked
        try:
            with stop_signals(self.stop):
                self._follow(deadline)
            status = "stopped"
            self.stats.stopped = self._stop.is_set()
        finally:
            observer.stop()
            observer.join(timeout=5)
            for stats in worker.stop() if worker else ():
                self.pipeline.account(stats)
            self._finish(status)
        return self.stats

    def _finish(self, status: str) -> None:
        """The run's end, as it was; a store that does not answer leaves it `running`, which the next
        start on this host marks `aborted` (its process is gone)."""
        try:
            self.pipeline.finish(status)
        except StoreError as exc:
            log.warning("the run could not be marked %s: %s", status, exc)
            if status == "stopped":
                raise

    def _follow(self, deadline: float | None) -> None:
        """Poll until stopped, then read what is there (rules-only; a stop cancels model work); while
        the store is unreachable, wait for it (`_outage`)."""
        try:
            while not self._stop.is_set() and (deadline is None or time.monotonic() < deadline):
                if self._store_answers():
                    self._wake.wait(min(SCAN_INTERVAL_S, self.max_delay_s))
                    self._wake.clear()
            if self._stop.is_set() and (self.pipeline.cancelled or self._outage_since is not None):
                return
            self.poll(final=True)
        except RunStopped:
            log.info("stopped during model work; the batch in flight is read again next time")

    def _store_answers(self) -> bool:
        """One poll, after the batch a failed commit left (it is committed first, as it was: nothing
        is read again nor dropped). False while the store does not answer: the wait before the next
        try doubles up to OUTAGE_WAIT_MAX_S, reading stops where it is (memory stays bounded)."""
        try:
            if self._unsaved is not None:
                self._save(*self._unsaved)
            self.poll()
        except StoreError as exc:
            self._outage(exc)
            return False
        if self._outage_since is not None:
            waited = time.monotonic() - self._outage_since
            self.pipeline.metrics.store_outage_s += waited
            log.warning("the store answers again after %.1f s; following goes on", waited)
            self._outage_since, self._outage_wait = None, OUTAGE_WAIT_S
        return True

    def _outage(self, exc: StoreError) -> None:
        if self._outage_since is None:
            self._outage_since = time.monotonic()
            self.pipeline.metrics.store_outages += 1
            log.warning("the store does not answer (%s); reading is paused where it is, trying again", exc)
        self._stop.wait(self._outage_wait)  # a stop ends the wait
        self._outage_wait = min(self._outage_wait * 2, OUTAGE_WAIT_MAX_S)

    def poll(self, *, final: bool = False) -> None:
        """One pass: discover files, read what was appended, analyse the batches that are due."""
        self._scan()
        now = time.monotonic()
        for file_id in list(self.tails):
            self._read(self.tails[file_id], now)
            tail = self.tails.get(file_id)  # the read may have found a new generation, or let it go
            if tail is not None and tail.pending and (final or len(tail.pending) >= self.max_batch
                                                      or now - tail.pending_since >= self.max_delay_s):
                self._analyse(tail)
        if self.status:
            self.status(self.stats.line(sum(len(t.pending) for t in self.tails.values())))

    # ---- discovery: what each file is --------------------------------------------------------

    def _scan(self) -> None:
        present = list(self._present())
        here = {file_id for _, file_id, _ in present}
        for file_id in [f for f in self.tails if f not in here]:
            self._drop(self.tails.pop(file_id))
        self._settling = {f: v for f, v in self._settling.items() if f in here}
        now = time.monotonic()
        for path, file_id, look in present:
            tail = self.tails.get(file_id)
            if tail is None:
                tail = self._discover(path, file_id, look, now)
                if tail is not None:
                    tail.seen, tail.last_growth = self._settling.pop(file_id, (None, now))  # quiet since
                    self.tails[file_id] = tail
            elif tail.path != path:
                log.info("%s rotated to %s; draining it", tail.path, path)
                tail.path = path
        if self._first_scan:
            self._remember_first_watch()
            self._first_scan = False

    def _present(self) -> Iterator[tuple[Path, FileId, Look]]:
        """Regular files in the folders, oldest rotated file first."""
        try:
            found = list(self.pipeline.files(self.folders))
        except InputError:  # a watched folder was removed: nothing there now
            return
        for item in found:
            if isinstance(item, ErrorRow):
                self._report_once(item)
                continue
            if isinstance(item, Skipped):  # a link out of the folders, the store's own files
                if item.source not in self.pipeline.metrics.skipped:
                    self.pipeline.skip(item)
                continue
            try:
                st = item.stat()
            except OSError:
                continue
            yield item, (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns)

    def _discover(self, path: Path, file_id: FileId, look: Look, now: float) -> Tail | None:
        """A file not followed yet: the continuation of a known source, or a new one. None (ask
        again at the next scan) while it cannot be told yet: a compressed file or a copy still
        being written, a new file's first bytes, or a copy of a file still being followed
        (logrotate's copy before it truncates)."""
        head = read_head(path)
        compressed = is_compressed(path)
        quiet = self._quiet(file_id, look, now) or (self._first_scan and self._in_new_folder(path))
        if not quiet and (head is None or compressed):
            return None
        head = head or b""
        if not compressed and (own := self._own_source(path, file_id, head)) is not None:
            return own
        found = identify(self._known.values(), name=self._name(path), inode=file_id[1], size=look[0], head=head,
                         compressed=compressed)
        if found is None:
            if not quiet and undecided(self._known.values(), head):
                return None
            return self._new_tail(path, file_id, compressed)
        if key_of(found) in {t.key for t in self.tails.values()}:
            return None
        log.info("%s continues %s from line %d", path, found.path, found.line_no + 1)
        return Tail.continuing(found, path, file_id, compressed=compressed)

    def _own_source(self, path: Path, file_id: FileId, head: bytes) -> Tail | None:
        """The source the file is by its inode (`sources.resume_by_content`), checked by content: where it
        stopped, or the next generation after the part of it still what was read; None when that
        cannot be told (no line hashes) or it is followed already."""
        followed = {t.key for t in self.tails.values()}
        found = resume_by_content(path, [k for k in self._known.values() if key_of(k) not in followed],
                                  name=self._name(path), inode=file_id[1], head=head,
                                  runs_of=lambda k: self.pipeline.positions.line_hashes(key_of(k)))
        if found is None:
            return None
        own, verdict = found
        tail = Tail.continuing(own, path, file_id)  # (its tail_offset is known: resume_by_content decided)
        return tail if verdict is True else self._after_kept(tail, verdict)

    def _after_kept(self, tail: Tail, kept: Kept) -> Tail:
        """The next generation of the tail's source, after the part of it still what was read
        (from line 1 when none is)."""
        new = tail.next_generation(next_generation(self._known.values(), tail.source, tail.inode), kept)
        if kept.lines:  # what is left of what was read is not read again
            log.info("%s was cut to %d line(s) already read and written to: going on after them", tail.path,
                     kept.lines)
            self.pipeline.positions.continue_after(kept, new.key)
        else:
            log.info("%s was truncated or replaced: reading it from line 1", tail.path)
        self._known[new.key] = new.state()
        return new

    def _new_tail(self, path: Path, file_id: FileId, compressed: bool) -> Tail:
        inode = file_id[1]
        name = self._name(path)
        tail = Tail(name, inode, next_generation(self._known.values(), name, inode), path, file_id, 0, 1,
                    compressed=compressed)
        if self._first_scan and not self.from_start and self._in_new_folder(path):
            tail.offset, tail.next_line, tail.fingerprint = end_of(path)
            self._present_at_start.append(tail)
        self._known[tail.key] = tail.state()
        return tail

    def _quiet(self, file_id: FileId, look: Look, now: float) -> bool:
        """Unchanged for the quiet time (`partial_timeout_s`) since it was first looked at so?"""
        first = self._settling.get(file_id)
        if first is None or first[0] != look:
            self._settling[file_id] = (look, now)
            return False
        return now - first[1] >= self.partial_timeout_s

    def _name(self, path: Path) -> str:
        return source_name(path, self.node)

    def _in_new_folder(self, path: Path) -> bool:
        return any(path.is_relative_to(folder) for folder in self._new_folders)

    def _remember_first_watch(self) -> None:
        """The folders are now watched, and where the files present in them were tailed from (one
        transaction: a crash before it simply makes the next start the first one again)."""
        with self.pipeline.store.transaction() as tx:
            tx.add_watched_folders([self._name(f) for f in self._new_folders])
            for tail in self._present_at_start:
                state = tail.state()
                tx.set_source(state.path, state.inode, generation=state.generation, offset=state.offset,
                              line_no=state.line_no, fingerprint=state.fingerprint,
                              fingerprint_len=state.fingerprint_len, fingerprint_prefix=state.fingerprint_prefix)
        self._new_folders, self._present_at_start = [], []

    def _drop(self, tail: Tail) -> None:
        if tail.pending:
            self._analyse(tail)
        log.info("%s deleted; no longer followed", tail.path)

    # ---- reading and analysing -----------------------------------------------------------

    def _read(self, tail: Tail, now: float) -> None:
        seen = stat_of(tail.path, tail.file_id)
        if seen is None or tail.broken:
            return
        if seen != tail.seen:
            tail.seen, tail.last_growth = seen, now
        quiet = now - tail.last_growth >= self.partial_timeout_s
        if tail.compressed and not quiet:
            return  # being written (gzip, a copy): read it once it has stopped changing
        if seen == tail.read_at and not tail.behind and not (tail.partial and quiet):
            return
        start, start_line, expected = tail.position
        # The content check goes by inode, not by name: a file cut, written to again and renamed
        # (rotated) between two looks is still the inode that was read, and its head may well be
        # unchanged, so only the line read last tells that reading cannot go on where it stopped.
        # Whether it is then the source cut or a new file on a reused inode is `_restart`'s to say.
        if start and tail.last and tail.is_first_inode and not holds_what_was_read(
                tail.path, offset=start, tail_offset=tail.last[0], tail_hash=tail.last[1]):
            self._restart(tail, now)  # cut and written to again, perhaps past where reading stopped
            return
        reader = TailRead(tail.path, start_offset=start, start_line=start_line,
                          final_partial=quiet or tail.compressed, expect=expected if start else None)
        lines, errors, tail.behind = take(reader, self.max_batch * READ_BATCHES)
        if reader.missing:
            return  # renamed or deleted between the look and the read: the next scan knows where it went
        if reader.short and not tail.is_first_inode:
            return  # a copy still being written: nothing new in it yet (the read inode is cut: `_restart`)
        if reader.changed:
            self._restart(tail, now)
            return
        tail.read_at, tail.partial = seen, reader.held_back
        if errors:
            self._report(errors)
            tail.broken = not lines
        if lines:
            tail.hold(lines, reader, now)

    def _restart(self, tail: Tail, now: float) -> None:
        """The file no longer holds what was read. When it is the inode the source was read from,
        the next generation of its source goes on after the part of it still what was read (from
        line 1 when none is, or nothing can be checked); but a file under another name whose first
        line is not what was read is another file on the reused inode, and a copy or compressed
        continuation whose content changed is another file too: forgotten, the next scan says what
        it is (a source of its own name, or one it continues)."""
        if tail.pending:
            self._analyse(tail)
        self.tails.pop(tail.file_id, None)
        if not tail.is_first_inode:
            return
        kept = kept_part(tail.path, self.pipeline.positions.line_hashes(tail.key))
        if kept is not None and not kept.lines and not self._own_file(tail):
            return
        new = self._after_kept(tail, kept or Kept(0, 0, array("I"), 0))
        self.tails[tail.file_id] = new
        self._read(new, now)

    def _own_file(self, tail: Tail) -> bool:
        return tail.is_own(self._name(tail.path))

    def _analyse(self, tail: Tail) -> None:
        batch = tail.batch()
        before, refused = self.pipeline.metrics.records, self.pipeline.metrics.windows_quarantined
        try:
            tail.fmt = self.pipeline.process(batch, source=tail.source, inode=tail.inode,
                                             generation=tail.generation, fmt=tail.fmt) or tail.fmt
        except StoreError:
            if self.pipeline.uncommitted:  # analysed, not committed: only its commit is tried again
                self._unsaved = (tail, batch, before, refused)
            raise
        self._analysed(tail, batch, before, refused)

    def _save(self, tail: Tail, batch, before: int, refused: int) -> None:
        """The commit the store failed, again; then the batch is done."""
        self.pipeline.commit()
        self._unsaved = None
        self._analysed(tail, batch, before, refused)

    def _analysed(self, tail: Tail, batch, before: int, refused: int) -> None:
        tail.analysed(batch)
        self._known[tail.key] = tail.state()
        self.stats.lines += len(batch)
        self.stats.batches += 1
        self.stats.errors += self.pipeline.metrics.windows_quarantined - refused  # the database refused a window
        if self.pipeline.metrics.records > before:
            self.stats.last_record = f"{self.pipeline.metrics.records - before} record(s) from {tail.source}"

    def _report_once(self, error: ErrorRow) -> None:
        """A refused entry (a link to /proc/kmsg, a FIFO) is said once per watch, not every scan."""
        if error.message not in self._refused:
            self._refused.add(error.message)
            log.warning("%s", error.message)
            self._report([error])

    def _report(self, errors: list[ErrorRow]) -> None:
        self.pipeline.store.add_errors(errors, run_id=self.pipeline.run_id)
        self.stats.errors += len(errors)

