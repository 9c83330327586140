"""The analysis pipeline: sources → events → windows → rules + baselines → records → store, then
the model's review of what needs judgement, then incidents and their stories.

Owns the order of the stages, the run's transactions and queuing the prompts of the windows that
need the model as review items. Rules' and baselines' records are stored as each window is cut —
the model never blocks ingestion: its review runs after (analyze) or beside (watch) it, within a
budget, most suspicious first (app/review.py); what the budget leaves waits in the store. Each
window is written in the same transaction as its records and its review items, so every line ends
up in a record's evidence, an analysed-benign window or an error row — a window whose rows the
database refuses (a constraint, a value it cannot hold) is rolled back to its savepoint and
quarantined as an error row naming its lines, and the run goes on —, and a file's position is
committed with each chunk of windows (analyze) and with its last one, with the hashes of the lines
it covers: a crash loses nothing, a resume doubles nothing and goes on where the last chunk ended —
or, in a file cut and written to since, at its first line not read.

Does not own, but calls: where a file starts and what a commit's source rows carry
(app/positions.py), which windows need the model (app/policy.py), the run's metrics
(app/metrics.py), the story phase (`incidents.story.write_stories`). Knows nothing of the CLI,
terminals or Streamlit (progress is a callback).

Progress contract: `progress(name, n)` with the counters "lines", "bytes", "windows", "records",
"errors", "llm_queued" (prompts queued for the model), "llm_calls" (prompts sent), "llm_done"
(prompts answered or failed), "prompt_tokens" and "new_tokens" (as the engine reports them),
"stories_started" and "stories_done" (incident stories asked for, written or not); and a phase's
start after reading, `phase:review` (n: the prompts to review), `phase:grouping` (n: the run's
records) and `phase:stories` (n: the stories to write). A display can thus weigh the model's
work, not only the lines read, and say which phase runs.

Stopping: `cancel()` (from a signal handler or another thread) cancels the engine's generations in
flight and makes the run raise `RunStopped` at its next window, between review batches, within the
incidents' regrouping or between stories; `finish` then commits what was done and marks the run
`stopped`; prompts not answered stay awaiting review.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from logwarden.app.backends import model_facts
from logwarden.app.baseline import Baseline
from logwarden.app.detect import Detector, load_sources
from logwarden.app.events import ErrorRow, LogLine, Signal
from logwarden.app.examples import ExamplePrompter, store_source
from logwarden.app.incidents.regroup import Span, regroup
from logwarden.app.ingest import (
    DEFAULT_MAX_LINE_BYTES,
    Skipped,
    TailRead,
    fingerprint_of,
    is_compressed,
    is_rotated_name,
    iter_files,
)
from logwarden.app.metrics import RunMetrics
from logwarden.app.mine import SourceMiner, Window, windows
from logwarden.app.parse import NOT_LOGS, parse_stream
from logwarden.app.parse.dating import RunDates, date_files
from logwarden.app.policy import prompts_for
from logwarden.app.positions import PositionedLines, Positions
from logwarden.app.postprocess import Provenance, assess_window, merge_records
from logwarden.app.review import Progress, Reviewer, ReviewItem, ReviewStats, ReviewWorker, default_budget
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, Store, Transaction, WindowRow
from logwarden.engine.api import Engine
from logwarden.errors import RunStopped, StoreError
from logwarden.prompts import system_prompt
from logwarden.schemas.record import RiskRecord

log = logging.getLogger(__name__)

JSON_DOCUMENT_LINE_BYTES = 64 * 1024 * 1024
MAX_BURSTS = 10_000  # bursts' records a run keeps at hand to grow (older ones are read back from the store)


def _no_progress(_name: str, _n: int) -> None:
    return None


@dataclass(slots=True)
class _WindowWrite:
    """One window's rows: stored together, or — when the database refuses one of them — none, and
    an error row says which lines were read but not stored."""

    row: WindowRow
    offset: int  # of the window's first line
    records: list[RiskRecord]
    reviews: list[ReviewItem] = field(default_factory=list)  # prompts waiting for the model


@dataclass(slots=True)
class _Buffer:
    """Rows written together in the next transaction."""

    windows: list[_WindowWrite] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)  # finished sources' offsets and miner states


class Pipeline:
    """One run: `analyze(paths)` for files/folders, `process(...)` for any line source (watcher, stdin)."""

    def __init__(self, store: Store, engine: Engine | None, options: RunOptions, *,
                 progress: Progress = _no_progress, command: str = "analyze",
                 on_stored: Callable[[Sequence[RiskRecord]], None] | None = None):
        self.store = store
        self.engine = None if options.rules_only else engine
        self.options = options
        self.progress = progress
        self.on_stored = on_stored  # told of each transaction's records once they are committed
        self.metrics = RunMetrics()
        self.rules = load_sources(options.rules)
        self.baseline = Baseline(store, mode=options.baseline)
        self.positions = Positions(store, resume=options.resume, node=options.node)
        self._buffer = _Buffer()
        self._stored = Span()  # what this run stored: where its incidents are
        self._regroup_due = Span()  # what the watcher's commits stored and no regrouping has covered yet
        self._sources: dict[tuple[str, int], tuple[SourceMiner, Detector, int]] = {}  # and the generation
        self._bursts: OrderedDict[str, RiskRecord] = OrderedDict()  # bursts' records as last stored, by id
        self._named: set[str] = set()  # real paths of the files `analyze` was given by name
        self._dates = RunDates({}, year=options.year)  # `analyze` samples its files' dates first
        self._started = time.perf_counter()
        self._cancel = threading.Event()
        self._examples: ExamplePrompter | None = None  # built at the first review (examples())
        self.run_id = store.start_run(command=command, config=self._config())
        store.remember_rules({rule.id: rule.title for rule in self.rules.rules})  # SigmaHQ's ids are UUIDs
        self.provenance = Provenance.of(self.engine, self.run_id)

    def _config(self) -> dict:
        opts = {k: getattr(self.options, k) for k in self.options.__slots__}
        opts["include"], opts["exclude"] = list(self.options.include), list(self.options.exclude)
        opts["rules"] = self.options.rules.describe() if self.options.rules else None
        opts["incidents"] = self.options.incidents.describe() if self.options.incidents else None
        opts["retrieval"] = dataclasses.asdict(self.options.retrieval)
        opts["engine"] = self.engine.describe() if self.engine else None
        opts["model_facts"] = model_facts(self.engine)  # what `records show` says of a record's model
        return opts

    # ---- sources -------------------------------------------------------------------------

    def analyze(self, paths: Sequence[str | Path]) -> RunMetrics:
        """Every file to the end (rules' and baselines' records stored as they come), then the
        model's review of what needs judgement, within the budget."""
        found = list(self.files(paths))
        self._named = {os.path.realpath(p) for p in paths if os.path.isfile(p)}
        self._dates = self._run_dates([item for item in found if isinstance(item, Path)])
        try:
            for item in found:
                if isinstance(item, ErrorRow):
                    self._errors([item])
                elif isinstance(item, Skipped):
                    self.skip(item)
                else:
                    self.analyze_file(item)
            self.review()
            self.group()
            self._check_cancelled()  # a stop during the last stage is a stop, not a run that ended `ok`
            return self.finish()
        except RunStopped:
            self.finish("stopped")
            raise

    def files(self, paths: Sequence[str | Path]) -> Iterator[Path | ErrorRow | Skipped]:
        """The files of `paths` as this run reads them (globs, links), never the store's own."""
        return iter_files(paths, include=self.options.include, exclude=self.options.exclude,
                          follow_links=self.options.follow_links, never=self.store.own_files())

    def skip(self, item: Skipped) -> None:
        """A file not read by choice: in the run's skipped list, said now when it was named."""
        self.metrics.skipped[item.source] = item.reason
        named = os.path.realpath(item.source) in self._named
        log.log(logging.WARNING if named else logging.INFO, "%s: not read: %s", item.source, item.reason)

    # ---- stopping ----------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop now: the engine's generations in flight are cancelled and the run raises
        `RunStopped` at its next window or review batch. Signal-safe."""
        self._cancel.set()
        if self.engine is not None:
            self.engine.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise RunStopped("stopped: the model's work was cancelled")

    def analyze_file(self, path: Path) -> None:
        """One file of `analyze`, committed when it ends."""
        self.metrics.files += 1
        start = self.positions.start_of(path)
        final = (self.options.final or is_rotated_name(path.name) or is_compressed(path)
                 or _quiet_for(path, self.options.quiet_final_s))
        reader = TailRead(path, start_offset=start.offset, start_line=start.line_no + 1,
                          max_line_bytes=line_limit(path), final_partial=final,
                          expect=fingerprint_of(start) if start.offset else None)
        self.process(reader, source=start.path, inode=start.inode, generation=start.generation,
                     reference_time=self._reference_time(path, start.path), fmt=start.format)
        if reader.changed:  # rewritten between looking at it and reading it: read it as what it is now
            self.metrics.files -= 1
            self.analyze_file(path)
            return
        if reader.held_back:
            self.metrics.held_back_lines += 1
            log.info("%s: its last line has no newline yet; left for --resume (or pass --final)", path)
        self._sources.pop((start.path, start.inode), None)  # a finished file's miner is persisted; free it

    def _run_dates(self, files: Sequence[Path]) -> RunDates:
        """What the first lines of each of the run's files say about its dates."""
        return date_files(files, year=self.options.year)

    def _reference_time(self, path: Path, source: str) -> datetime | None:
        choice = self._dates.choose(str(path))
        if choice.reason:
            self.metrics.years[source] = choice.reason
        return choice.reference_time

    def process(self, items: PositionedLines, *, source: str, inode: int, generation: int = 0,
                reference_time: datetime | None = None, fmt: str | None = None) -> str:
        """Analyse one source's lines to the end; store windows, records, review items, errors,
        miner state, the detector's state and the offset after the last line — the last part in ONE transaction with the
        last records, so a crash never commits an offset without its records or vice versa.
        `items` is a `TailRead` (or the watcher's batch): after iteration its `end_offset` and
        `next_line_no` say exactly where the next read must start, and that is what is persisted.
        Everything of this call is committed before it returns. Returns the format used."""
        key = (source, inode, generation)
        start_line = items.start_line  # read before iterating: the parser's sample advances a reader
        decision, events = parse_stream(self.positions.hashed(self._without_errors(items), key), path=source,
                                        reference_time=reference_time, fmt=fmt)
        if fmt is None:
            self.metrics.formats[source] = decision.reason
            log.info("%s: %s", source, decision.reason)
        fmt = decision.name
        if fmt in NOT_LOGS:  # README.md, labels.jsonl: skipped, nothing stored (they are looked at again next time)
            self.metrics.skipped[source] = decision.reason
            if os.path.realpath(source) in self._named:  # the user asked for this file: say so now, not at the end
                log.warning("%s: named on the command line but not read: %s", source, decision.reason)
            self.metrics.files -= 1
            return fmt
        if self.options.commit_every_windows and isinstance(items, TailRead):
            self.positions.reading(key, fmt=fmt, head=items.head)
        miner, detector = self._source_state(key, start_line)
        for window in windows(events, miner, source=source, inode=inode, fmt=fmt,
                              max_lines=self.options.window_max_lines, max_gap_s=self.options.window_max_gap_s,
                              generation=generation):
            signals = detector.scan(window.events, source=source) + self.baseline.signals(window, miner)
            self._window(window, signals, miner)
            if self.options.commit_every_windows and len(self._buffer.windows) >= self.options.commit_every_windows:
                self._commit()
        self.positions.done(key)  # its final position follows with its last windows
        if items.changed:  # not the file that was expected: nothing read, its position stays
            self._commit()
            return fmt
        self._buffer.sources.append(Positions.after(items, key, fmt=fmt, miner_state=miner.state()))
        self._commit()
        return fmt

    def _source_state(self, key: tuple[str, int, int], start_line: int) -> tuple[SourceMiner, Detector]:
        """Miner and detector of a source, kept for the run so bursts split across batches still add up;
        a read that goes on where a committed one stopped (--resume, a restarted watcher) starts with
        the detector state committed there, so bursts split across runs add up too. A new generation
        (the file started over: copytruncate) keeps the miner but gets its own detector: its times
        start again, and the old content's bursts would pass for its own (and its saved state was
        pruned against the old content's later times, so a restart split its bursts)."""
        source, inode, generation = key
        found = self._sources.get((source, inode))
        if found is None or found[2] != generation:
            miner = found[0] if found else self._miner(source, inode)
            detector = Detector(self.rules)
            saved = self.positions.saved_detector(key, start_line)
            if saved is not None and not detector.restore(saved):
                log.info("%s: the correlation state saved with it was made by other rules; starting afresh", source)
            self._sources[(source, inode)] = (miner, detector, generation)
        miner, detector, _generation = self._sources[(source, inode)]
        return miner, detector

    def _miner(self, source: str, inode: int) -> SourceMiner:
        """A source's miner as its last committed read left it (a new one for a new source)."""
        state = self.store.get_source(source, inode)
        return SourceMiner(state.miner_state if state else None, max_templates=self.options.max_templates)

    def _detector_state(self, key: tuple[str, int, int]) -> dict | None:
        """What a source generation's detector carries over to the next read of it (None: no detector
        of it this run)."""
        found = self._sources.get((key[0], key[1]))
        return found[1].dump() if found is not None and found[2] == key[2] else None

    def _without_errors(self, items: Iterable[LogLine | ErrorRow]) -> Iterator[LogLine]:
        for item in items:
            if isinstance(item, ErrorRow):
                self._errors([item])
            else:
                self.metrics.truncated_lines += item.truncated
                self.metrics.nul_bytes += item.nul_bytes
                yield item

    # ---- windows ----------------------------------------------------------------------------

    def _window(self, window: Window, signals: list[Signal], miner: SourceMiner) -> None:
        """Store the window's rules' and baselines' records now; queue its prompts when it needs the model."""
        self._check_cancelled()
        self._count(window)
        records = self._store_window(window, signals)
        if self.engine is None:  # rules only: no model reads a digest, so none is built
            return
        parts = prompts_for(window, signals, miner, policy=self.options.llm_policy,
                            token_budget=self.options.prompt_token_budget,
                            max_parts=self.options.max_prompts_per_window, count_tokens=self.engine.count_tokens,
                            metrics=self.metrics)
        if parts is None:
            return
        self.metrics.digest_chars += sum(len(part.prompt) for part in parts)
        self.metrics.windows_llm += 1
        self.metrics.prompts_queued += len(parts)
        self._buffer.windows[-1].reviews += [ReviewItem.of(window, part, signals, records, self.run_id)
                                             for part in parts]
        self.progress("llm_queued", len(parts))

    def _count(self, window: Window) -> None:
        self.metrics.add_window(window)
        self.progress("lines", len(window.events))
        self.progress("bytes", window.raw_chars)
        self.progress("windows", 1)

    def _store_window(self, window: Window, signals: Sequence[Signal]) -> list[RiskRecord]:
        outcome = assess_window(window, signals, None, self.provenance)
        records = [self._grown(r) if r.id in outcome.continues else r for r in outcome.records]
        for record in records:
            if record.id in outcome.bursts:
                self._bursts[record.id] = record
                self._bursts.move_to_end(record.id)
        while len(self._bursts) > MAX_BURSTS:
            self._bursts.popitem(last=False)
        self.positions.stored((window.source, window.inode, window.generation), end=window.events[-1].end,
                              line_no=window.line_end)
        row = WindowRow(source=window.source, inode=window.inode, line_start=window.line_start,
                        line_end=window.line_end, line_count=len(window.events), verdict=_verdict(records),
                        record_ids=[r.id for r in records], run_id=self.run_id, generation=window.generation)
        self._buffer.windows.append(_WindowWrite(row, window.events[0].offset, records))
        self._count_records([r for r in records if r.id not in outcome.continues])  # a grown burst counts once
        return records

    def _grown(self, record: RiskRecord) -> RiskRecord:
        """A burst's record that an earlier window (of this run: perhaps not committed yet; or of an
        earlier one, restored with the detector's state) reported, grown by this window's part."""
        earlier = self._bursts.get(record.id) or self.store.get_record(record.id)
        return merge_records(earlier, record) if earlier is not None else record

    # ---- the model's review -------------------------------------------------------------------

    def reviewer(self) -> Reviewer:
        """A reviewer with this run's budget, engine and provenance."""
        budget = default_budget(self.options.llm_budget, self.engine)
        self.metrics.budget = budget.spec
        return Reviewer(self.store, self.engine, budget=budget, max_batch=self.options.max_batch,
                        max_new_tokens=self.options.max_new_tokens, provenance=self.provenance,
                        progress=self.progress, cancelled=self._cancel, examples=self.examples())

    def examples(self) -> ExamplePrompter | None:
        """The reviewed examples this run's prompts get (None: no model, or retrieval off): the seed
        library and the store's closed records, indexed once per run."""
        if self.engine is None or not self.options.retrieval.enabled:
            return None
        if self._examples is None:
            self._examples = ExamplePrompter(store_source(self.store), self.options.retrieval,
                                             self.engine.count_tokens, self.options.prompt_token_budget)
        return self._examples

    def review_worker(self) -> ReviewWorker | None:
        """The watcher's background reviewer (None without a model)."""
        if self.engine is None:
            return None
        return ReviewWorker(self.store, self.reviewer, batch=self.options.max_batch).start()

    def review(self, items: Sequence[ReviewItem] | None = None) -> None:
        """Review this run's waiting prompts (or `items`) within the budget; the rest stays pending."""
        if self.engine is None:
            return
        self._commit()
        if items is None:  # this run's; with --resume what earlier runs' budgets left too
            run_id = None if self.options.resume else self.run_id
            items = [ReviewItem.from_json(i) for i in self.store.pending_reviews(run_id=run_id)]
        self.progress("phase:review", len(items))
        self.account(self.reviewer().run(items))

    def account(self, stats: ReviewStats) -> None:
        """Add a reviewer's work to the run's metrics."""
        self.metrics.add_review(stats, pending=self.store.count_reviews(run_id=self.run_id))
        self._stored.add(stats.records)  # the review may raise or lower them: their incidents are regrouped
        if stats.records:  # the run's records by level and category again
            self.metrics.recount(self.store.query_records(RecordFilter(run_id=self.run_id), limit=1_000_000))

    @property
    def uncommitted(self) -> bool:
        """A commit the store failed (down, locked) left its windows and positions waiting: `commit` again."""
        return bool(self._buffer.windows or self._buffer.sources)

    def commit(self) -> None:
        """Write what waits (a batch whose commit the store failed): the watcher's retry."""
        self._commit()

    def _commit(self) -> None:
        buffer, self._buffer = self._buffer, _Buffer()
        try:
            with self.store.transaction() as tx:
                refused = _write_windows(tx, buffer.windows)
                if refused:
                    tx.add_errors([self._quarantine(write, why) for write, why in refused], run_id=self.run_id)
                self.positions.write(tx, buffer.sources, self._detector_state)
                self.baseline.flush(tx)
        except StoreError:  # rolled back whole: the same rows wait for the next commit, nothing is lost
            self._buffer = buffer
            raise
        self.metrics.deviations = self.baseline.deviations
        left_out = {id(write) for write, _ in refused}
        records = [r for write in buffer.windows if id(write) not in left_out for r in write.records]
        self._stored.add(records)
        if self.options.incremental and records:  # extend open incidents
            self._regroup_due.add(records)
            self._group_due()
        if self.on_stored is not None and records:
            self.on_stored(records)

    def _group_due(self) -> None:
        """The watcher's regrouping of what its commits stored; if the store fails it (the records are
        committed), it is done with the next commit's."""
        try:
            self._group(self._regroup_due)
        except StoreError as exc:
            log.warning("the incidents were not regrouped (%s); the next batch's regrouping includes them", exc)
            return
        self._regroup_due = Span()

    def _quarantine(self, write: _WindowWrite, why: str) -> ErrorRow:
        """A window the database refused: its lines were read (its position and line hashes are
        committed as any other's: it is not read again) but are not stored; an error row says which."""
        row = write.row
        self.metrics.quarantine(row.line_count, write.records, write.reviews)
        self.progress("errors", 1)
        log.warning("%s: lines %d-%d not stored, the database refused them: %s", row.source, row.line_start,
                    row.line_end, why)
        return ErrorRow(source=row.source, offset=write.offset, stage="store", line_no=row.line_start,
                        message=f"{row.source}: lines {row.line_start}-{row.line_end} ({row.line_count} lines) "
                                f"were read but not stored: the database refused the window's rows ({why})")

    # ---- incidents -----------------------------------------------------------------------------

    def group(self, around: Span | None = None) -> None:
        """Regroup the incidents around what this run stored (or `around`); with a model, write the
        stories of the incidents that need one, within what the run's budget left."""
        self._commit()
        log.info("regrouping the incidents around this run's %d record(s)", self.metrics.records)
        self.progress("phase:grouping", self.metrics.records)
        self._group(around if around is not None else self._stored)

    def _group(self, around: Span) -> None:
        if self.options.incidents is None or not around:
            return
        regrouped = regroup(self.store, self.options.incidents, around=around, cancelled=self._cancel)
        self.metrics.incidents = len(regrouped.incidents)
        if self._stories_due():
            self._stories(regrouped.to_tell)

    def _stories_due(self) -> bool:
        """Stories come after the review: not in an incremental run (the watcher's review runs beside it),
        not when the review's breaker opened, nor while the budget left review prompts waiting."""
        m = self.metrics
        return self.engine is not None and not self.options.incremental and not m.breaker_open and not m.reviews_pending

    def _stories(self, incidents) -> None:
        from logwarden.app.incidents.story import write_stories

        self.metrics.add_stories(write_stories(
            self.store, self.engine, incidents, llm_budget=self.options.llm_budget, limit=self.options.incidents.stories,
            max_new_tokens=self.options.incidents.story_tokens, spent=self.metrics.spent, cancelled=self._cancel,
            progress=self.progress))

    def _count_records(self, records: Sequence[RiskRecord]) -> None:
        self.metrics.add_records(records)
        self.progress("records", len(records))

    def _errors(self, rows: Sequence[ErrorRow]) -> None:
        self.metrics.errors += len(rows)
        self.progress("errors", len(rows))
        self.store.add_errors(rows, run_id=self.run_id)

    def finish(self, status: str | None = None) -> RunMetrics:
        self._commit()
        self.metrics.elapsed_s = time.perf_counter() - self._started
        status = status or ("failed" if self.metrics.errors else "ok")
        self.store.finish_run(self.run_id, status=status, metrics=self.metrics.as_dict())
        return self.metrics


def _write_windows(tx: Transaction, writes: Sequence[_WindowWrite]) -> list[tuple[_WindowWrite, str]]:
    """Write the windows' rows, all in one savepoint; if the database refuses that, each window in
    its own, so that one refused value costs its window only. Returns the refused windows and why."""
    if not writes or tx.attempt(lambda t: _write(t, writes)) is None:
        return []
    refused = [(write, tx.attempt(lambda t, w=write: _write(t, [w]))) for write in writes]
    return [(write, why) for write, why in refused if why is not None]


def _write(tx: Transaction, writes: Sequence[_WindowWrite]) -> None:
    tx.upsert_records([r for write in writes for r in write.records])
    tx.add_windows([write.row for write in writes])
    reviews = [item for write in writes for item in write.reviews]
    if reviews:
        tx.add_reviews(reviews)


def _verdict(records: Sequence[RiskRecord]) -> str:
    return max(records, key=lambda r: r.risk_score).risk_level if records else "benign"


def line_limit(path: Path) -> int:
    """CloudTrail and other `.json` documents come as one huge line: read them whole."""
    return JSON_DOCUMENT_LINE_BYTES if ".json" in path.suffixes[-2:] else DEFAULT_MAX_LINE_BYTES


def _quiet_for(path: Path, seconds: float | None) -> bool:
    """Has nothing written to the file for `seconds`?"""
    if seconds is None:
        return False
    try:
        return time.time() - path.stat().st_mtime >= seconds
    except OSError:
        return False


def throughput_options(options: RunOptions, engine: Engine | None) -> RunOptions:
    """CUDA throughput mode for `analyze`: queue as many windows per engine call as the GPU's free
    memory holds (measured on the H200: 7B nf4 at batch 128 gives ~11× the records/s of batch 32
    plain generate, docs/GPU.md) instead of the CPU-sized default. The engine gets the same limit.
    Anything else (CPU, the OpenAI backend, rules only) gets `options` back unchanged."""
    if options.rules_only or engine is None or engine.device != "cuda":
        return options
    prompt_tokens = engine.count_tokens(system_prompt()) + options.prompt_token_budget
    return dataclasses.replace(options, max_batch=engine.fit_batch(prompt_tokens, options.max_new_tokens))
