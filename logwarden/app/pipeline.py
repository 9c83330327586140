"""The analysis pipeline: sources → events → windows → (LLM) → records → store, with metrics.

Owns the order of the stages, the LLM spending policy, batching windows for the engine (a window
whose rare lines do not fit one prompt sends several, each with its own grammar that admits only
the evidence ids that prompt shows), the retry / fall-back / circuit-breaker behaviour on engine
faults, and run metrics (tokens, rare-line coverage, the model's ungrounded entities). Each window is
written to the store in the same transaction as its records, so every line ends up in a record's
evidence, an analysed-benign window or an error row. A batch of files fills the engine's batches
across file ends (small files' windows wait for the next file's instead of going alone): a file's
offset is committed only in the transaction that holds its last window, or a later one, so a
crash loses nothing and a resume doubles nothing. Knows nothing of the CLI, terminals or
Streamlit (progress is a callback).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from logwarden.app.config import Settings, declared
from logwarden.app.detect import Detector, ruleset_for
from logwarden.app.digest import Digest, DigestPart, build_digest
from logwarden.app.events import ErrorRow, LogLine, Signal
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
    source_name,
)
from logwarden.app.mine import SourceMiner, Window, windows
from logwarden.app.parse import parse_stream
from logwarden.app.postprocess import LLMResult, Provenance, assess_window, result_of
from logwarden.app.store import SourceState, Store, WindowRow
from logwarden.engine.api import Engine
from logwarden.engine.sizing import cuda_batch
from logwarden.errors import LogwardenError
from logwarden.prompts import system_prompt
from logwarden.schemas.record import RiskRecord

log = logging.getLogger(__name__)

JSON_DOCUMENT_LINE_BYTES = 64 * 1024 * 1024
CHARS_PER_TOKEN = 4.0  # for the raw-side of the compression ratio when no tokenizer is used
# Words that make a window without any rule hit still worth the model's time ("suspicious" policy).
SUSPICIOUS_WORDS = ("fail", "denied", "invalid", "error", "refused", "unauthori", "forbidden", "attack",
                    "panic", "segfault", "killed", "illegal", "violation", "warning", "critical", "alert",
                    "root", "sudo", "admin", "password", "exploit", "malware", "powershell", "cmd.exe")
LLM_POLICIES = ("signals", "suspicious", "all")
SAMPLE_EVERY = 20  # "suspicious" policy: also ~1 in 20 quiet windows (deterministic by source and line)
BREAKER_FAILURES = 5


@dataclass(slots=True)
class RunOptions:
    rules_only: bool = False
    llm_policy: str = "suspicious"
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
    sigma: Sequence[str] = ()  # extra Sigma packs (--sigma), after the shipped, installed and configured ones

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> RunOptions:
        """The settings' run defaults, with the options a command was given (None = not given)."""
        options = cls(max_batch=settings.max_batch, max_new_tokens=settings.max_new_tokens,
                      window_max_lines=settings.window_max_lines, window_max_gap_s=settings.window_max_gap_s,
                      prompt_token_budget=settings.prompt_token_budget, node=settings.node,
                      quiet_final_s=settings.watch_partial_line_timeout_s)
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(slots=True)
class RunMetrics:
    files: int = 0
    lines: int = 0
    raw_chars: int = 0
    windows: int = 0
    windows_llm: int = 0
    windows_skipped_by_policy: int = 0
    llm_calls: int = 0
    llm_failures: int = 0
    windows_split: int = 0  # windows sent as more than one prompt
    rare_lines: int = 0  # lines of rare templates / rare value shapes, in every window with a digest (not rules-only)
    rare_lines_llm: int = 0  # ... in the windows sent to the model
    rare_lines_shown: int = 0  # ... shown to the model in some prompt
    findings: int = 0
    entities_named: int = 0  # entities (addresses, accounts, paths, numbers …) the model's texts named
    entities_ungrounded: int = 0  # ... absent from the digest it was given (their clauses removed)
    records: int = 0
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
    elapsed_s: float = 0.0
    formats: dict[str, str] = field(default_factory=dict)
    records_by_level: dict[str, int] = field(default_factory=dict)
    records_by_category: dict[str, int] = field(default_factory=dict)

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


Progress = Callable[[str, int], None]  # (counter name, increment)


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
class _Pending:
    """A window waiting for the model, with what its records need: one prompt per digest part."""

    window: Window
    signals: list[Signal]
    parts: list[DigestPart]


@dataclass(slots=True)
class _Ask:
    """One prompt of a pending window."""

    owner: int  # index of its window in the batch
    part: DigestPart


@dataclass(slots=True)
class _Buffer:
    """Rows written together in the next transaction."""

    records: list[RiskRecord] = field(default_factory=list)
    windows: list[WindowRow] = field(default_factory=list)
    errors: list[ErrorRow] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)  # finished sources' offsets and miner states


class Pipeline:
    """One run: `analyze(paths)` for files/folders, `process(...)` for any line source (watcher, stdin)."""

    def __init__(self, store: Store, engine: Engine | None, options: RunOptions, *,
                 progress: Progress = _no_progress, command: str = "analyze"):
        self.store = store
        self.engine = None if options.rules_only else engine
        self.options = options
        self.progress = progress
        self.metrics = RunMetrics()
        self.rules = ruleset_for(options.sigma)
        self._consecutive_failures = 0
        self._pending: list[_Pending] = []
        self._settling: list[dict] = []  # finished sources whose windows still wait for the model
        # Files being read by `analyze` and where their stored windows end: each chunk's commit
        # carries that position, so a kill -9 resumes a big file there, not at line 1.
        self._reading: dict[tuple[str, int, int], dict] = {}
        self._buffer = _Buffer()
        self._sources: dict[tuple[str, int], tuple[SourceMiner, Detector]] = {}
        self._started = time.perf_counter()
        self.run_id = store.start_run(command=command, config=self._config())
        self.provenance = Provenance.of(self.engine, self.run_id)

    def _config(self) -> dict:
        opts = {k: getattr(self.options, k) for k in self.options.__slots__}
        opts["include"], opts["exclude"] = list(self.options.include), list(self.options.exclude)
        opts["sigma"] = list(self.options.sigma)
        opts["engine"] = self.engine.describe() if self.engine else None
        return opts

    # ---- sources -------------------------------------------------------------------------

    def analyze(self, paths: Sequence[str | Path]) -> RunMetrics:
        for item in iter_files(paths, include=self.options.include, exclude=self.options.exclude):
            if isinstance(item, ErrorRow):
                self._errors([item])
                continue
            self.analyze_file(item)
        return self.finish()

    def analyze_file(self, path: Path) -> None:
        """One file of `analyze`: its last windows may wait for the next file's batch (`finish` sends them)."""
        self.metrics.files += 1
        start = self._start_of(path)
        final = (self.options.final or is_rotated_name(path.name) or is_compressed(path)
                 or _quiet_for(path, self.options.quiet_final_s))
        reader = TailRead(path, start_offset=start.offset, start_line=start.line_no + 1,
                          max_line_bytes=line_limit(path), final_partial=final,
                          expect=fingerprint_of(start) if start.offset else None)
        self.process(reader, source=start.path, inode=start.inode, generation=start.generation,
                     reference_time=_mtime(path), fmt=start.format, batch_on=True)
        if reader.changed:  # rewritten between looking at it and reading it: read it as what it is now
            self.metrics.files -= 1
            self.analyze_file(path)
            return
        if reader.held_back:
            self.metrics.held_back_lines += 1
            log.info("%s: its last line has no newline yet; left for --resume (or pass --final)", path)
        self._sources.pop((start.path, start.inode), None)  # a finished file's miner is persisted; free it

    def _start_of(self, path: Path) -> SourceState:
        """Where reading `path` starts, and as which source. With --resume, by content: a rotated,
        compressed or copied file continues the source it was where its reading stopped (so
        nothing is read twice, and line numbers go on). Otherwise from line 1, as itself: the same
        generation when it still is the same file (re-analysis replaces its rows), else a new one."""
        inode, size, compressed = _inode(path), _size(path), is_compressed(path)
        head = read_head(path) or b""
        name = source_name(path, self.options.node)
        known = self.store.list_sources(under=[source_name(path.parent, self.options.node)])
        if self.options.resume:  # truncated in place to a part already read: go on after it, not from line 1
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

    def process(self, items: PositionedLines, *, source: str, inode: int, generation: int = 0,
                reference_time: datetime | None = None, fmt: str | None = None, batch_on: bool = False) -> str:
        """Analyse one source's lines to the end; store windows, records, errors, miner state and
        the offset after the last line — the last part in ONE transaction with
        the last records, so a crash never commits an offset without its records or vice versa.
        `items` is a `TailRead` (or the watcher's batch): after iteration its `end_offset` and
        `next_line_no` say exactly where the next read must start, and that is what is persisted.
        `batch_on`: windows still waiting for the model may wait for the next source's (the engine's
        batch fills up); the offset then lands with them, in a later transaction. Without it (the
        watcher) everything of this call is committed before it returns. Returns the format used."""
        decision, events = parse_stream(self._without_errors(items), path=source,
                                        reference_time=reference_time, fmt=fmt)
        if fmt is None:
            self.metrics.formats[source] = decision.reason
            log.info("%s: %s", source, decision.reason)
        fmt = decision.name
        key = (source, inode, generation)
        if self.options.commit_every_windows and isinstance(items, TailRead):
            self._reading[key] = dict(path=source, inode=inode, generation=generation, format=fmt, head=items.head)
        miner, detector = self._source_state(source, inode)
        for window in windows(events, miner, source=source, inode=inode, fmt=fmt,
                              max_lines=self.options.window_max_lines, max_gap_s=self.options.window_max_gap_s,
                              generation=generation):
            self._window(window, detector.scan(window.events), miner)
            if self.options.commit_every_windows and len(self._buffer.windows) >= self.options.commit_every_windows:
                self._flush()
                self._commit()
        self._reading.pop(key, None)  # its final position follows with its last windows
        if items.changed:  # not the file that was expected: nothing read, its position stays
            self._flush()
            self._commit()
            return fmt
        self._settling.append(dict(path=source, inode=inode, generation=generation, offset=items.end_offset,
                                   line_no=items.next_line_no - 1, format=fmt, miner_state=miner.state(),
                                   **_identity(getattr(items, "head", None), items.fingerprint)))
        if not (batch_on and self._pending):
            self._flush()
            self._commit()
        return fmt

    def _source_state(self, source: str, inode: int) -> tuple[SourceMiner, Detector]:
        """Miner and detector of a source, kept for the run so bursts split across batches still add up."""
        key = (source, inode)
        if key not in self._sources:
            state = self.store.get_source(source, inode)
            self._sources[key] = (SourceMiner(state.miner_state if state else None), Detector(self.rules))
        return self._sources[key]

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
        self._count(window)
        if self.engine is None:  # rules only: no model reads a digest, so none is built
            self._store_window(window, signals, None)
            return
        digest = build_digest(window, miner, signals)
        self.metrics.rare_lines += len(digest.rare)
        text = digest.render()
        if not self._wants_llm(window, signals, text):
            self.metrics.digest_chars += len(text)
            self._store_window(window, signals, None)
            return
        parts = self._parts(digest)
        self.metrics.digest_chars += sum(len(part.prompt) for part in parts)
        self._pending.append(_Pending(window, signals, parts))
        if sum(len(p.parts) for p in self._pending) >= self.options.max_batch:
            self._flush()
            if self.options.commit_every_windows:  # analyze keeps every answered batch: a kill loses one at most
                self._commit()

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

    def _parts(self, digest: Digest) -> list[DigestPart]:
        parts = digest.parts(self.options.prompt_token_budget, self.engine.count_tokens,
                             max_parts=self.options.max_prompts_per_window)
        shown = {n for part in parts for n in part.shown_lines}
        self.metrics.rare_lines_llm += len(digest.rare)
        self.metrics.rare_lines_shown += sum(n in shown for n in digest.rare)
        self.metrics.windows_split += len(parts) > 1
        return parts

    def _wants_llm(self, window: Window, signals: Sequence[Signal], digest_text: str) -> bool:
        if self.metrics.breaker_open:
            return False
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

    def _flush(self) -> None:
        """Every waiting window to the model and into the buffer; the sources that waited on them
        with it (all their windows are in the buffer now)."""
        pending, self._pending = self._pending, []
        settled, self._settling = self._settling, []
        if pending:
            self._assess_pending(pending)
        self._buffer.sources += settled

    def _assess_pending(self, pending: Sequence[_Pending]) -> None:
        asks = [_Ask(i, part) for i, item in enumerate(pending) for part in item.parts]
        results = self._assess(asks)
        for i, item in enumerate(pending):
            self._store_window(item.window, item.signals, [r for a, r in zip(asks, results) if a.owner == i])

    def _assess(self, asks: Sequence[_Ask]) -> list[LLMResult]:
        """One batched call; failed prompts are retried alone once, then fall back to rules."""
        results = self._call(asks)
        for i, result in enumerate(results):
            if result.assessment is None and not self.metrics.breaker_open and len(asks) > 1:
                results[i] = self._call([asks[i]])[0]
        for result in results:
            self._account_failure(result)
        return results

    def _call(self, asks: Sequence[_Ask]) -> list[LLMResult]:
        """Each prompt carries its own schema: its evidence ids are the ones its digest part shows."""
        requests = [ask.part.request() for ask in asks]
        self.metrics.llm_calls += len(requests)
        self.progress("llm_calls", len(requests))
        try:
            generations = self.engine.generate(requests, max_new_tokens=self.options.max_new_tokens)
        except (LogwardenError, RuntimeError, OSError) as exc:  # engine down, OOM after back-off, timeout
            log.warning("engine failed on a batch of %d: %s", len(requests), exc)
            return [LLMResult(assessment=None, error=f"engine: {exc}", digest=a.part.text, lines_of=a.part.lines_of)
                    for a in asks]
        return [self._result(g, a.part) for g, a in zip(generations, asks)]

    def _result(self, generation, part: DigestPart) -> LLMResult:
        stats = generation.stats
        self.metrics.prompt_tokens += stats.prompt_tokens
        self.metrics.cached_prefix_tokens += stats.cached_prefix_tokens
        self.metrics.new_tokens += stats.new_tokens
        self.metrics.ttft_s_sum += stats.ttft_s
        self.metrics.generation_s += stats.total_s / max(stats.batch_size, 1)
        self.metrics.peak_memory_mb = max(self.metrics.peak_memory_mb, stats.peak_memory_mb)
        return result_of(generation, digest=part.text, lines_of=part.lines_of)

    def _account_failure(self, result: LLMResult) -> None:
        if result.assessment is not None:
            self._consecutive_failures = 0
            return
        self.metrics.llm_failures += 1
        self._consecutive_failures += 1
        if self._consecutive_failures >= BREAKER_FAILURES and not self.metrics.breaker_open:
            self.metrics.breaker_open = True
            log.warning("circuit breaker open: %d consecutive model failures; the rest of this run is rules-only",
                        self._consecutive_failures)

    def _store_window(self, window: Window, signals: Sequence[Signal], llm: Sequence[LLMResult] | None) -> None:
        outcome = assess_window(window, signals, llm, self.provenance)
        records = outcome.records
        self.metrics.findings += outcome.findings
        self.metrics.entities_named += outcome.entities
        self.metrics.entities_ungrounded += outcome.ungrounded
        if llm is not None:
            self.metrics.windows_llm += 1
        self._buffer.records += records
        reading = self._reading.get((window.source, window.inode, window.generation))
        if reading is not None and window.events[-1].end:  # 0: a whole-file JSON document has no resumable middle
            reading.update(offset=window.events[-1].end, line_no=window.line_end)
        self._buffer.windows.append(WindowRow(
            source=window.source, inode=window.inode, line_start=window.line_start, line_end=window.line_end,
            line_count=len(window.events), verdict=_verdict(records, llm), record_ids=[r.id for r in records],
            run_id=self.run_id, generation=window.generation))
        error = next((r.error for r in llm or () if r.error), None)
        if error:
            self._buffer.errors.append(ErrorRow(source=window.source, offset=window.events[0].offset, stage="engine",
                                                message=error[:2000], line_no=window.line_start))
        self._count_records(records)

    def _commit(self) -> None:
        buffer, self._buffer = self._buffer, _Buffer()
        with self.store.transaction() as tx:
            tx.upsert_records(buffer.records)
            tx.add_windows(buffer.windows)
            if buffer.errors:
                tx.add_errors(buffer.errors, run_id=self.run_id)
            partial = [_position(reading) for reading in self._reading.values() if "offset" in reading]
            for state in [*partial, *buffer.sources]:
                tx.set_source(state["path"], state["inode"], **{k: v for k, v in state.items()
                                                                 if k not in ("path", "inode")})

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
        self._flush()
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


def _verdict(records: Sequence[RiskRecord], llm: Sequence[LLMResult] | None) -> str:
    if records:
        return max(records, key=lambda r: r.risk_score).risk_level
    return "benign" if llm is None or all(r.assessment is not None for r in llm) else "benign-unassessed"


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
    model = getattr(engine, "model", None)
    if options.rules_only or model is None or getattr(model.device, "type", "cpu") != "cuda":
        return options
    prompt_tokens = engine.count_tokens(system_prompt()) + options.prompt_token_budget
    batch = cuda_batch(model, prompt_tokens=prompt_tokens, new_tokens=options.max_new_tokens)
    engine.max_batch = batch
    return dataclasses.replace(options, max_batch=batch)
