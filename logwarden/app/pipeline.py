"""The analysis pipeline: sources → events → windows → rules + baselines → records → store, then
the model's review of what needs judgement, with metrics.

Owns the order of the stages, which windows need the model (the LLM policy: by default only those
holding a baseline deviation; lines the rules explain are a summary row, not shown), queuing their
prompts as review items, and run metrics. Rules' and baselines' records are stored as each window
is cut — the model never blocks ingestion: its review runs after (analyze) or beside (watch) it,
within a budget, most suspicious first (app/review.py); what the budget leaves waits in the store.
Each window is written in the same transaction as its records and its review items, so every line
ends up in a record's evidence, an analysed-benign window or an error row, and a file's position is
committed with each chunk of windows (analyze) and with its last one, with the hashes of the lines it
covers (app/sources.py): a crash loses nothing, a resume doubles nothing and goes on where the last
chunk ended — or, in a file cut and written to since, at its first line not read. Knows nothing
of the CLI, terminals or Streamlit (progress is a callback).

Progress contract: `progress(name, n)` with the counters "lines", "bytes", "windows", "records",
"errors", "llm_queued" (prompts queued for the model), "llm_calls" (prompts sent), "llm_done"
(prompts answered or failed), "prompt_tokens" and "new_tokens" (as the engine reports them). A
display can thus weigh the model's work, not only the lines read.

Stopping: `cancel()` (from a signal handler or another thread) cancels the engine's generations in
flight and makes the run raise `RunStopped` at its next window or between review batches; `finish`
then commits what was done; prompts not answered stay awaiting review.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from logwarden.app.baseline import Baseline
from logwarden.app.baseline.deviation import RULE_PREFIX as BASELINE_RULES
from logwarden.app.config import Settings, declared
from logwarden.app.detect import Detector, RuleSources, load_sources
from logwarden.app.digest import Digest, DigestPart, build_digest
from logwarden.app.events import ErrorRow, LogLine, Signal
from logwarden.app.incidents import IncidentOptions, Span, regroup
from logwarden.app.ingest import (
    DEFAULT_MAX_LINE_BYTES,
    Fingerprint,
    TailRead,
    fingerprint_of,
    identify,
    is_compressed,
    is_rotated_name,
    iter_files,
    kept_part,
    lines_within,
    next_generation,
    read_head,
    sniff_binary,
    source_name,
)
from logwarden.app.mine import SourceMiner, Window, windows
from logwarden.app.parse import NOT_LOGS, parse_stream
from logwarden.app.parse.dating import RunDates, sample_dates
from logwarden.app.postprocess import Provenance, assess_window
from logwarden.app.review import Progress, Reviewer, ReviewItem, ReviewWorker, default_budget
from logwarden.app.sources import Kept, LineHashes, resume_by_content
from logwarden.app.store import RecordFilter, SourceState, Store, WindowRow
from logwarden.engine.api import Engine
from logwarden.errors import RunStopped
from logwarden.prompts import system_prompt
from logwarden.schemas.record import RiskRecord

log = logging.getLogger(__name__)

JSON_DOCUMENT_LINE_BYTES = 64 * 1024 * 1024
CHARS_PER_TOKEN = 4.0  # for the raw-side of the compression ratio when no tokenizer is used
# Words that make a window without any rule hit still worth the model's time ("suspicious" policy).
SUSPICIOUS_WORDS = ("fail", "denied", "invalid", "error", "refused", "unauthori", "forbidden", "attack",
                    "panic", "segfault", "killed", "illegal", "violation", "warning", "critical", "alert",
                    "root", "sudo", "admin", "password", "exploit", "malware", "powershell", "cmd.exe")
# deviations: windows holding a baseline deviation, shown as the deviations' own lines (the default);
# signals: those and windows where a rule fired; suspicious: those and quiet windows with alarming
# words or in a 1-in-20 sample; all: every window — the last three show rare lines too.
LLM_POLICIES = ("deviations", "signals", "suspicious", "all")
DEFAULT_LLM_POLICY = LLM_POLICIES[0]
SAMPLE_EVERY = 20  # "suspicious" policy: also ~1 in 20 quiet windows (deterministic by source and line)


def unexplained(signals: Sequence[Signal]) -> list[Signal]:
    """The rules' signals and the baseline deviations no rule explains (none of their lines is a rule's):
    a request a rule already named SQL injection needs no judgement of its renamed parameter too."""
    ruled = {n for s in signals if not s.rule_id.startswith(BASELINE_RULES) for n in s.line_numbers}
    return [s for s in signals if not s.rule_id.startswith(BASELINE_RULES) or ruled.isdisjoint(s.line_numbers)]


@dataclass(slots=True)
class RunOptions:
    rules_only: bool = False
    llm_policy: str = DEFAULT_LLM_POLICY
    llm_budget: str = declared("llm_budget")  # auto | unlimited | 90s | 5m | 20000tok (app/review.Budget)
    max_batch: int = declared("max_batch")
    max_new_tokens: int = declared("max_new_tokens")
    window_max_lines: int = declared("window_max_lines")
    window_max_gap_s: float = declared("window_max_gap_s")
    prompt_token_budget: int = declared("prompt_token_budget")
    # A window with more rare lines than one prompt holds is split; at most this many prompts each
    # (None: as many as its rare lines need). The rare lines left out count against coverage.
    max_prompts_per_window: int | None = 4
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    resume: bool = False
    # Files nothing is appended to any more: an unterminated last line is a line, not a line being
    # written (compressed and rotated files are final anyway).
    final: bool = False
    # A file nothing has written to for this long is final too (None: only --final, compressed and
    # rotated files are): a downloaded CloudTrail .json is one line without a newline, and held
    # back it gave no record at all. The watcher flushes a partial line after the same quiet.
    quiet_final_s: float | None = None
    # Sources are named NODE:/path in a store shared by several hosts (None: the path alone).
    node: str | None = None
    # Long files commit records in chunks (bounded memory). The watcher sets None: a batch's
    # records and its offset must land in one transaction.
    commit_every_windows: int | None = 64
    rules: RuleSources | None = None  # the run's packs (from_settings: shipped, installed, configured, --sigma); None: shipped
    baseline: str = declared("baseline")  # judge | learn | off (app/baseline)
    year: int | None = None  # the year of year-less dates (--year); None: from the run's dated lines (parse.dating)
    # Incidents (app/incidents): grouping after the records are stored (analyze: once, after the review;
    # watch: after each batch), and the model's stories (analyze, within the LLM budget).
    incidents: IncidentOptions | None = field(default_factory=IncidentOptions)

    @classmethod
    def from_settings(cls, settings: Settings, *, sigma: Sequence[str | Path] = (), **overrides) -> RunOptions:
        """The settings' run defaults, with the options a command was given (None = not given);
        `sigma`: extra packs (--sigma), after the shipped, installed and configured ones."""
        options = cls(rules=RuleSources.from_settings(settings, sigma), max_batch=settings.max_batch,
                      max_new_tokens=settings.max_new_tokens,
                      window_max_lines=settings.window_max_lines, window_max_gap_s=settings.window_max_gap_s,
                      prompt_token_budget=settings.prompt_token_budget, node=settings.node,
                      quiet_final_s=settings.watch_partial_line_timeout_s, baseline=settings.baseline,
                      llm_budget=settings.llm_budget, incidents=IncidentOptions.from_settings(settings))
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(slots=True)
class RunMetrics:
    files: int = 0
    lines: int = 0
    raw_chars: int = 0
    windows: int = 0
    windows_llm: int = 0  # windows with prompts for the model
    windows_skipped_by_policy: int = 0
    prompts_queued: int = 0  # review items made
    llm_calls: int = 0
    llm_failures: int = 0
    reviews_pending: int = 0  # review items the budget left awaiting review
    deviations_dismissed: int = 0  # deviation records the model judged normal (kept at info)
    windows_split: int = 0  # windows sent as more than one prompt
    rare_lines: int = 0  # lines of rare templates / rare value shapes, in every window with a digest (not rules-only)
    rare_lines_llm: int = 0  # ... in the windows sent to the model
    rare_lines_shown: int = 0  # ... shown to the model in some prompt
    findings: int = 0
    entities_named: int = 0  # entities (addresses, accounts, paths, numbers …) the model's texts named
    entities_ungrounded: int = 0  # ... absent from the digest it was given (their clauses removed)
    texts_rejected: dict[str, int] = field(default_factory=dict)  # reason → model texts the gate turned down (textgate)
    records: int = 0
    deviations: int = 0  # baseline deviations reported (app/baseline)
    errors: int = 0
    held_back_lines: int = 0  # unterminated last lines left for a later --resume (file not final)
    truncated_lines: int = 0  # lines longer than the ingest limit, of which only the head was kept
    nul_bytes: int = 0  # NUL bytes dropped from lines (a padded or pre-allocated file is read, not skipped)
    raw_tokens: int = 0
    prompt_tokens: int = 0
    cached_prefix_tokens: int = 0  # of the prompt tokens, those llama.cpp's slot cache already held
    digest_chars: int = 0
    new_tokens: int = 0
    ttft_s_sum: float = 0.0
    generation_s: float = 0.0
    peak_memory_mb: float = 0.0
    breaker_open: bool = False
    budget: str = ""
    elapsed_s: float = 0.0
    formats: dict[str, str] = field(default_factory=dict)
    years: dict[str, str] = field(default_factory=dict)  # source → how its year-less dates got their year
    skipped: dict[str, str] = field(default_factory=dict)  # source → why it is not a log (markdown, labels)
    records_by_level: dict[str, int] = field(default_factory=dict)
    records_by_category: dict[str, int] = field(default_factory=dict)
    incidents: int = 0  # incidents written by the last grouping (new, extended or unchanged)
    stories: int = 0  # incidents whose story the model wrote and code grounded
    story_invented_ids: int = 0  # record ids a story cited that are not its incident's (rejected)
    story_ungrounded: int = 0  # entities a story named that its records lack (removed)

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__slots__}
        d["compression_ratio"] = self.compression_ratio
        d["lines_per_s"] = self.lines / self.elapsed_s if self.elapsed_s else 0.0
        d["tokens_per_s"] = self.new_tokens / self.generation_s if self.generation_s else 0.0
        d["mean_ttft_s"] = self.ttft_s_sum / self.llm_calls if self.llm_calls else 0.0
        d["llm_calls_per_1000_lines"] = 1000 * self.llm_calls / self.lines if self.lines else 0.0
        d["rare_line_coverage"] = self.rare_line_coverage
        d["ungrounded_rate"] = self.ungrounded_rate
        return d

    @property
    def rare_line_coverage(self) -> float | None:
        """Share of the rare lines of the windows sent to the model that some prompt showed it."""
        return self.rare_lines_shown / self.rare_lines_llm if self.rare_lines_llm else None

    @property
    def ungrounded_rate(self) -> float | None:
        """Share of the entities the model named that its digest did not contain."""
        return self.entities_ungrounded / self.entities_named if self.entities_named else None

    @property
    def compression_ratio(self) -> float | None:
        """Raw size ÷ prompt size (how many times smaller the model's input is); None when no
        digest was built (rules-only runs build none: no model would read it)."""
        if self.prompt_tokens:
            return self.raw_tokens / self.prompt_tokens
        return self.raw_chars / self.digest_chars if self.digest_chars else None




class PositionedLines(Protocol):
    """Lines that know, once read, where the next read starts (`TailRead`, the watcher's batch),
    the fingerprint of what was read (`ingest.identity`), and whether the file turned out not to
    be the one expected (`changed`: nothing was read, nothing may be persisted)."""

    end_offset: int
    next_line_no: int
    fingerprint: Fingerprint | None
    changed: bool

    def __iter__(self) -> Iterator[LogLine | ErrorRow]: ...


def _no_progress(_name: str, _n: int) -> None:
    return None


@dataclass(slots=True)
class _Buffer:
    """Rows written together in the next transaction."""

    records: list[RiskRecord] = field(default_factory=list)
    windows: list[WindowRow] = field(default_factory=list)
    errors: list[ErrorRow] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)  # finished sources' offsets and miner states
    reviews: list[ReviewItem] = field(default_factory=list)  # prompts waiting for the model


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
        # Files being read by `analyze` and where their stored windows end: each chunk's commit
        # carries that position, so a kill -9 resumes a big file there, not at line 1.
        self._reading: dict[tuple[str, int, int], dict] = {}
        # Hashes of the lines read and not yet committed, per (source, inode, generation) (app/sources.py).
        self._hashes: dict[tuple[str, int, int], LineHashes] = {}
        self._buffer = _Buffer()
        self._stored = Span()  # what this run stored: where its incidents are
        self._sources: dict[tuple[str, int], tuple[SourceMiner, Detector]] = {}
        self._named: set[str] = set()  # real paths of the files `analyze` was given by name
        self._dates = RunDates({}, year=options.year)  # `analyze` samples its files' dates first
        self._started = time.perf_counter()
        self._cancel = threading.Event()
        self.run_id = store.start_run(command=command, config=self._config())
        self.provenance = Provenance.of(self.engine, self.run_id)

    def _config(self) -> dict:
        opts = {k: getattr(self.options, k) for k in self.options.__slots__}
        opts["include"], opts["exclude"] = list(self.options.include), list(self.options.exclude)
        opts["rules"] = self.options.rules.describe() if self.options.rules else None
        opts["incidents"] = self.options.incidents.describe() if self.options.incidents else None
        opts["engine"] = self.engine.describe() if self.engine else None
        return opts

    # ---- sources -------------------------------------------------------------------------

    def analyze(self, paths: Sequence[str | Path]) -> RunMetrics:
        """Every file to the end (rules' and baselines' records stored as they come), then the
        model's review of what needs judgement, within the budget."""
        found = list(iter_files(paths, include=self.options.include, exclude=self.options.exclude))
        self._named = {os.path.realpath(p) for p in paths if os.path.isfile(p)}
        self._dates = self._run_dates([item for item in found if isinstance(item, Path)])
        try:
            for item in found:
                if isinstance(item, ErrorRow):
                    self._errors([item])
                    continue
                self.analyze_file(item)
            self.review()
            self.group()
            return self.finish()
        except RunStopped:
            self.finish("aborted")
            raise

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
        start = self._start_of(path)
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
        """What the first lines of the run's files say about dates (skipped under --year)."""
        if self.options.year is not None:
            return RunDates({}, year=self.options.year)
        return RunDates({str(path): sample_dates(_head_lines(path), str(path)) for path in files})

    def _reference_time(self, path: Path, source: str) -> datetime | None:
        choice = self._dates.choose(str(path), _mtime(path))
        if choice.reason:
            self.metrics.years[source] = choice.reason
        return choice.reference_time

    def _start_of(self, path: Path) -> SourceState:
        """Where reading `path` starts, and as which source. With --resume, by content: a rotated,
        compressed or copied file continues the source it was where its reading stopped (so
        nothing is read twice, and line numbers go on). Otherwise from line 1, as itself: the same
        generation when it still is the same file (re-analysis replaces its rows), else a new one."""
        inode, size, compressed = _inode(path), _size(path), is_compressed(path)
        head = read_head(path) or b""
        name = source_name(path, self.options.node)
        known = self.store.list_sources(under=[source_name(path.parent, self.options.node)])
        if self.options.resume and not compressed and (resumed := self._resume_own(path, name, inode, head, known)):
            return resumed
        if self.options.resume:  # a store without line hashes: the head says whether a truncated file kept a part
            kept = [k for k in known if k.path == name and kept_part(k, inode=inode, size=size, head=head,
                                                                    compressed=compressed)]
            if kept:
                return _after_kept_part(max(kept, key=lambda k: k.generation), path, head,
                                        next_generation(known, name, inode))
        candidates = known if self.options.resume else [k for k in known if (k.path, k.inode) == (name, inode)]
        found = identify(candidates, name=name, inode=inode, size=size, head=head, compressed=compressed)
        if found is not None and self.options.resume:
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

    def process(self, items: PositionedLines, *, source: str, inode: int, generation: int = 0,
                reference_time: datetime | None = None, fmt: str | None = None) -> str:
        """Analyse one source's lines to the end; store windows, records, review items, errors,
        miner state and the offset after the last line — the last part in ONE transaction with the
        last records, so a crash never commits an offset without its records or vice versa.
        `items` is a `TailRead` (or the watcher's batch): after iteration its `end_offset` and
        `next_line_no` say exactly where the next read must start, and that is what is persisted.
        Everything of this call is committed before it returns. Returns the format used."""
        key = (source, inode, generation)
        decision, events = parse_stream(self._hashed(self._without_errors(items), key), path=source,
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
            self._reading[key] = dict(path=source, inode=inode, generation=generation, format=fmt, head=items.head)
        miner, detector = self._source_state(source, inode)
        for window in windows(events, miner, source=source, inode=inode, fmt=fmt,
                              max_lines=self.options.window_max_lines, max_gap_s=self.options.window_max_gap_s,
                              generation=generation):
            signals = detector.scan(window.events) + self.baseline.signals(window, miner)
            self._window(window, signals, miner)
            if self.options.commit_every_windows and len(self._buffer.windows) >= self.options.commit_every_windows:
                self._commit()
        self._reading.pop(key, None)  # its final position follows with its last windows
        if items.changed:  # not the file that was expected: nothing read, its position stays
            self._commit()
            return fmt
        self._buffer.sources.append(dict(path=source, inode=inode, generation=generation, offset=items.end_offset,
                                         line_no=items.next_line_no - 1, format=fmt, miner_state=miner.state(),
                                         **_identity(getattr(items, "head", None), items.fingerprint)))
        self._commit()
        return fmt

    def _source_state(self, source: str, inode: int) -> tuple[SourceMiner, Detector]:
        """Miner and detector of a source, kept for the run so bursts split across batches still add up."""
        key = (source, inode)
        if key not in self._sources:
            state = self.store.get_source(source, inode)
            self._sources[key] = (SourceMiner(state.miner_state if state else None), Detector(self.rules))
        return self._sources[key]

    def _hashed(self, lines: Iterable[LogLine], key: tuple[str, int, int]) -> Iterator[LogLine]:
        """The lines, each leaving its hash for the commit that stores its position."""
        hashes = self._hashes.setdefault(key, LineHashes())
        for line in lines:
            hashes.add(line)
            yield line

    def line_hashes(self, key: tuple[str, int, int]) -> list[tuple[int, bytes]]:
        """The hashes of source generation `key`'s lines: those committed, then those read and not yet
        committed (a kept part waits for the next commit: cut again before it, it is still known)."""
        runs = self.store.line_hashes(*key)
        pending = self._hashes.get(key)
        return [*runs, run] if pending is not None and (run := pending.run()) is not None else runs

    def continue_after(self, kept: Kept, key: tuple[str, int, int]) -> None:
        """The next generation `key` of a truncated file starts after its kept part: the kept lines'
        hashes are committed again as its first lines."""
        self._hashes[key] = LineHashes.of_kept(kept)

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
        focus = self.options.llm_policy == "deviations"
        shown = unexplained(signals) if focus else signals
        if focus and not any(s.rule_id.startswith(BASELINE_RULES) for s in shown):
            self.metrics.windows_skipped_by_policy += 1
            return
        digest = build_digest(window, miner.templates(window.cluster_ids), shown, focus=focus)
        self.metrics.rare_lines += len(digest.rare)
        if not focus and not self._wants_llm(window, signals, digest.render()):
            return
        parts = self._parts(digest, focus)
        self.metrics.digest_chars += sum(len(part.prompt) for part in parts)
        self.metrics.windows_llm += 1
        self.metrics.prompts_queued += len(parts)
        self._buffer.reviews += [ReviewItem.of(window, part, signals, records, self.run_id) for part in parts]
        self.progress("llm_queued", len(parts))

    def _count(self, window: Window) -> None:
        """A window's lines and characters, counted once it is cut (every line is in one window)."""
        chars = window.raw_chars
        self.metrics.windows += 1
        self.metrics.lines += len(window.events)
        self.metrics.raw_chars += chars
        self.metrics.raw_tokens += round(chars / CHARS_PER_TOKEN)
        self.progress("lines", len(window.events))
        self.progress("bytes", chars)
        self.progress("windows", 1)

    def _parts(self, digest: Digest, focus: bool) -> list[DigestPart]:
        """Prompts for the window: every deviation shown (focus), else at most `max_prompts_per_window`."""
        parts = digest.parts(self.options.prompt_token_budget, self.engine.count_tokens,
                             max_parts=None if focus else self.options.max_prompts_per_window)
        shown = {n for part in parts for n in part.shown_lines}
        self.metrics.rare_lines_llm += len(digest.rare)
        self.metrics.rare_lines_shown += sum(n in shown for n in digest.rare)
        self.metrics.windows_split += len(parts) > 1
        return parts

    def _wants_llm(self, window: Window, signals: Sequence[Signal], digest_text: str) -> bool:
        policy = self.options.llm_policy
        if policy == "all" or signals:
            return True
        if policy == "suspicious":
            lowered = digest_text.lower()
            if any(word in lowered for word in SUSPICIOUS_WORDS) or \
                    stable_sample(f"{window.source}:{window.line_start}", SAMPLE_EVERY):
                return True
        self.metrics.windows_skipped_by_policy += 1
        return False

    def _store_window(self, window: Window, signals: Sequence[Signal]) -> list[RiskRecord]:
        outcome = assess_window(window, signals, None, self.provenance)
        records = outcome.records
        self._buffer.records += records
        reading = self._reading.get((window.source, window.inode, window.generation))
        if reading is not None and window.events[-1].end:  # 0: a whole-file JSON document has no resumable middle
            reading.update(offset=window.events[-1].end, line_no=window.line_end)
        self._buffer.windows.append(WindowRow(
            source=window.source, inode=window.inode, line_start=window.line_start, line_end=window.line_end,
            line_count=len(window.events), verdict=_verdict(records), record_ids=[r.id for r in records],
            run_id=self.run_id, generation=window.generation))
        self._count_records(records)
        return records

    # ---- the model's review -------------------------------------------------------------------

    def reviewer(self) -> Reviewer:
        """A reviewer with this run's budget, engine and provenance."""
        budget = default_budget(self.options.llm_budget, self.engine)
        self.metrics.budget = budget.spec
        return Reviewer(self.store, self.engine, budget=budget, max_batch=self.options.max_batch,
                        max_new_tokens=self.options.max_new_tokens, provenance=self.provenance,
                        progress=self.progress, cancelled=self._cancel)

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
        self.account(self.reviewer().run(items))

    def account(self, stats) -> None:
        """Add a reviewer's work to the run's metrics."""
        m = self.metrics
        m.llm_calls += stats.asked
        m.llm_failures += stats.failed
        m.reviews_pending = self.store.count_reviews(run_id=self.run_id)
        m.breaker_open = m.breaker_open or stats.breaker_open
        m.prompt_tokens += stats.prompt_tokens
        m.cached_prefix_tokens += stats.cached_prefix_tokens
        m.new_tokens += stats.new_tokens
        m.ttft_s_sum += stats.ttft_s_sum
        m.generation_s += stats.generation_s
        m.peak_memory_mb = max(m.peak_memory_mb, stats.peak_memory_mb)
        m.findings += stats.findings
        m.entities_named += stats.entities_named
        m.entities_ungrounded += stats.entities_ungrounded
        self._count_rejected(stats.texts_rejected)
        m.deviations_dismissed += stats.dismissed
        self._stored.add(stats.records)  # the review may raise or lower them: their incidents are regrouped
        self._recount(stats.records)

    def _recount(self, reviewed: Sequence[RiskRecord]) -> None:
        """The run's records by level and category again, after the review changed some."""
        if not reviewed:
            return
        rows = self.store.query_records(RecordFilter(run_id=self.run_id), limit=1_000_000)
        m = self.metrics
        m.records = len(rows)
        m.records_by_level, m.records_by_category = dict(Counter(r.risk_level for r in rows)), dict(
            Counter(r.category for r in rows))

    def _commit(self) -> None:
        buffer, self._buffer = self._buffer, _Buffer()
        with self.store.transaction() as tx:
            tx.upsert_records(buffer.records)
            tx.add_windows(buffer.windows)
            if buffer.reviews:
                tx.add_reviews(buffer.reviews)
            if buffer.errors:
                tx.add_errors(buffer.errors, run_id=self.run_id)
            partial = [_position(reading) for reading in self._reading.values() if "offset" in reading]
            for state in [*partial, *buffer.sources]:
                self._commit_hashes(tx, state)
                tx.set_source(state["path"], state["inode"], **{k: v for k, v in state.items()
                                                                 if k not in ("path", "inode")})
            self.baseline.flush(tx)
        self.metrics.deviations = self.baseline.deviations
        self._stored.add(buffer.records)
        if self.options.commit_every_windows is None and buffer.records:  # the watcher: extend open incidents
            self._group(_span_of(buffer.records))
        if self.on_stored is not None and buffer.records:
            self.on_stored(buffer.records)

    def _commit_hashes(self, tx, state: dict) -> None:
        """The hashes of a source's lines up to the position committed now, and its last line (tail)."""
        key = (state["path"], state["inode"], state.get("generation", 0))
        hashes = self._hashes.get(key)
        if hashes is None:
            return
        first, packed, last = hashes.take(state["line_no"])
        tx.add_line_hashes(*key, first_line=first, hashes=packed)
        if last is not None:
            state.update(tail_offset=last[0], tail_hash=last[1])

    # ---- incidents -----------------------------------------------------------------------------

    def group(self, around: Span | None = None) -> None:
        """Regroup the incidents around what this run stored (or `around`); with a model, write the
        stories of the incidents that need one, within what the run's budget left."""
        self._commit()
        self._group(around if around is not None else self._stored)

    def _group(self, around: Span) -> None:
        if self.options.incidents is None or not around:
            return
        regrouped = regroup(self.store, self.options.incidents, around=around)
        self.metrics.incidents = len(regrouped.incidents)
        if self._stories_due():
            self._stories(regrouped.incidents)

    def _stories_due(self) -> bool:
        """Stories come after the review: not in the watcher (its review runs beside it), not when the
        review's breaker opened, nor while the budget left review prompts waiting."""
        m = self.metrics
        return (self.engine is not None and self.options.commit_every_windows is not None
                and not m.breaker_open and not m.reviews_pending)

    def _stories(self, incidents) -> None:
        from logwarden.app.incidents.story import StoryWriter

        budget = default_budget(self.options.llm_budget, self.engine)
        spent = (self.metrics.generation_s, self.metrics.prompt_tokens + self.metrics.new_tokens)
        writer = StoryWriter(self.store, self.engine, budget=budget, spent=spent,
                             max_new_tokens=self.options.max_new_tokens, cancelled=self._cancel,
                             progress=self.progress)
        stats = writer.write(incidents, limit=self.options.incidents.stories)
        self.metrics.stories += stats.written
        self.metrics.story_invented_ids += stats.invented
        self.metrics.story_ungrounded += stats.ungrounded
        self._count_rejected(stats.texts_rejected)
        self.metrics.prompt_tokens += stats.prompt_tokens
        self.metrics.new_tokens += stats.new_tokens
        self.metrics.generation_s += stats.generation_s

    def _count_rejected(self, reasons: Counter) -> None:
        rejected = self.metrics.texts_rejected
        for reason, n in reasons.items():
            rejected[reason] = rejected.get(reason, 0) + n

    def _count_records(self, records: Sequence[RiskRecord]) -> None:
        self.metrics.records += len(records)
        self.progress("records", len(records))
        for r in records:
            self.metrics.records_by_level[r.risk_level] = self.metrics.records_by_level.get(r.risk_level, 0) + 1
            self.metrics.records_by_category[r.category] = self.metrics.records_by_category.get(r.category, 0) + 1

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


def _span_of(records: Sequence[RiskRecord]) -> Span:
    span = Span()
    span.add(records)
    return span


def _verdict(records: Sequence[RiskRecord]) -> str:
    return max(records, key=lambda r: r.risk_score).risk_level if records else "benign"


def line_limit(path: Path) -> int:
    """CloudTrail and other `.json` documents come as one huge line: read them whole."""
    return JSON_DOCUMENT_LINE_BYTES if ".json" in path.suffixes[-2:] else DEFAULT_MAX_LINE_BYTES


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


def _quiet_for(path: Path, seconds: float | None) -> bool:
    """Has nothing written to the file for `seconds`?"""
    if seconds is None:
        return False
    try:
        return time.time() - path.stat().st_mtime >= seconds
    except OSError:
        return False


def _head_lines(path: Path) -> list[LogLine]:
    """The complete lines of the file's first bytes (decompressed); none for a binary file (EVTX)."""
    head = read_head(path) or b""
    if sniff_binary(head):
        return []
    texts = head.decode("utf-8", "replace").split("\n")[:-1]  # the last piece may be cut
    return [LogLine(source=str(path), inode=0, offset=0, line_no=n, text=t.rstrip("\r"))
            for n, t in enumerate(texts, 1)]


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime)
    except OSError:
        return None


def stable_sample(key: str, every: int) -> bool:
    """Deterministic 1-in-`every` choice by key (same decision on every re-run)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % every == 0


def throughput_options(options: RunOptions, engine: Engine | None) -> RunOptions:
    """CUDA throughput mode for `analyze`: queue as many windows per engine call as the GPU's free
    memory holds (measured on the H200: 7B nf4 at batch 128 gives ~11× the records/s of batch 32
    plain generate, docs/GPU.md) instead of the CPU-sized default. The engine gets the same limit.
    Anything else (CPU, the OpenAI backend, rules only) gets `options` back unchanged."""
    if options.rules_only or engine is None or engine.device != "cuda":
        return options
    prompt_tokens = engine.count_tokens(system_prompt()) + options.prompt_token_budget
    return dataclasses.replace(options, max_batch=engine.fit_batch(prompt_tokens, options.max_new_tokens))
