"""Model review: what needs judgement, queued most suspicious first and answered within a budget;
what the budget leaves waits in the store, *awaiting review*, for `logwarden review --pending`, the
next `analyze`, or the watcher when it is idle.

Owns: `ReviewItem` (one prompt — a digest part of one window — with the window's events the part
names, the signals whose records its answer may change, and their record ids), its priority,
`Budget` (a duration, a number of tokens, or unlimited), and `Reviewer`: items in priority order →
engine batches → the records they touch replaced in the store, in the transaction that marks the
items done. The merge policy is postprocess's: a rule's or a deviation's level is never lowered;
the model's verdict on a deviation is kept on its record (attack raises it). Failed prompts are retried
alone once; five failures in a row open the circuit breaker (the rest stays pending). Knows
nothing of files, terminals or the CLI (progress is a callback).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

from logwarden.app.digest import DigestPart
from logwarden.app.events import ErrorRow, Event, Signal
from logwarden.app.examples import ExamplePrompter
from logwarden.app.fit import fit
from logwarden.app.mine import Window
from logwarden.app.postprocess import LLMResult, Provenance, assess_window, group_signals, result_of, reviewed_burst
from logwarden.engine.api import Engine, ModelUsage
from logwarden.errors import InputError, LogwardenError, RunStopped, StoreError
from logwarden.prompts import PROMPT_VERSION
from logwarden.schemas import risk_rank
from logwarden.schemas.record import RiskRecord

log = logging.getLogger(__name__)

BREAKER_FAILURES = 5
_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|tok|tokens?|k?tok)?\s*$", re.IGNORECASE)


# ---- the budget --------------------------------------------------------------------------------

@dataclass(slots=True)
class Budget:
    """How much model work a run may do: seconds of generation, tokens (prompt + new), or both None (unlimited)."""

    seconds: float | None = None
    tokens: int | None = None
    spec: str = "unlimited"

    @classmethod
    def parse(cls, spec: str) -> Budget:
        """`unlimited`, `90s`, `5m`, `1h`, `20000tok` (a bare number is seconds)."""
        text = spec.strip().lower()
        if text in ("unlimited", "none", "inf"):
            return cls(spec="unlimited")
        match = _BUDGET.match(text)
        if match is None:
            raise InputError(f"--llm-budget {spec!r}: give a duration (90s, 5m, 1h), a number of tokens "
                             f"(20000tok) or unlimited")
        value, unit = float(match.group(1)), (match.group(2) or "s").lower()
        if "tok" in unit:
            return cls(tokens=int(value), spec=spec)
        return cls(seconds=value * {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[unit], spec=spec)

    @property
    def unlimited(self) -> bool:
        return self.seconds is None and self.tokens is None

    def left(self, spent_s: float, spent_tokens: int) -> bool:
        return (self.seconds is None or spent_s < self.seconds) and (self.tokens is None or spent_tokens < self.tokens)


def default_budget(spec: str, engine: Engine | None) -> Budget:
    """`auto`: unlimited on a GPU (minutes of work take seconds there), else `CPU_BUDGET`."""
    if spec.strip().lower() != "auto":
        return Budget.parse(spec)
    if engine is not None and engine.device in ("cuda", "remote"):
        return Budget(spec="auto: unlimited (GPU or a model server)")
    budget = Budget.parse(CPU_BUDGET)
    budget.spec = f"auto: {CPU_BUDGET} (CPU)"
    return budget


CPU_BUDGET = "3m"  # the review and incident stories of make run (sample_logs) in it: ≤ 5 min in all on 2 cores


# ---- items ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class ReviewItem:
    """One prompt waiting for the model, and everything its answer needs to become records."""

    id: str
    source: str
    inode: int
    generation: int
    format: str
    span: tuple[int, int]
    host: str | None
    part: DigestPart
    events: list[Event]
    cluster_ids: list[int]
    signals: list[Signal]
    record_ids: list[str]
    priority: int
    run_id: str | None = None

    @classmethod
    def of(cls, window: Window, part: DigestPart, signals: Sequence[Signal], records: Sequence[RiskRecord],
           run_id: str | None) -> ReviewItem:
        """The item for `part` of `window`: the events its ids stand for, and every incident group with a
        signal on those lines, whole: the answer's records then are the rules' records of this window
        (same ids, same lines), improved — a group cut to the part's signals would overwrite its full
        record with fewer lines (a split SQL-injection group lost 45 attacks on realdata's held-out side)."""
        lines = {n for numbers in part.lines_of.values() for n in numbers}
        groups = group_signals(signals)
        near = [g for g in groups if any(lines.intersection(s.line_numbers) for s in g.signals)]
        # a group on lines within a near one's comes whole too: its record is folded into that one
        # (app/samelines.py), which the answer's record would otherwise overwrite without it
        near += [g for g in groups if g not in near and g.lines and any(g.lines <= n.lines for n in near)]
        touching = [s for g in near for s in g.signals]
        wanted = lines | {n for s in touching for n in s.line_numbers}
        kept = [(e, c) for e, c in zip(window.events, window.cluster_ids) if e.line_no in wanted]
        key = f"{window.source}\x1f{window.inode}\x1f{window.generation}\x1f{window.line_start}\x1f" \
              f"{window.line_end}\x1f{part.index}\x1f{PROMPT_VERSION}"
        touched = {n for s in touching for n in s.line_numbers}
        return cls(id=hashlib.sha256(key.encode()).hexdigest()[:24], source=window.source, inode=window.inode,
                   generation=window.generation, format=window.format, span=(window.line_start, window.line_end),
                   host=window.host(), part=part, events=[e for e, _ in kept], cluster_ids=[c for _, c in kept],
                   signals=list(touching),
                   record_ids=[r.id for r in records if touched.intersection(r.evidence.line_numbers)],
                   priority=priority(touching), run_id=run_id)

    def window(self) -> Window:
        """The window again, from the events this prompt names (its span and host as they were)."""
        window = Window(self.source, self.inode, self.format, events=list(self.events),
                        cluster_ids=list(self.cluster_ids), generation=self.generation, span=self.span)
        window._host = (self.host,)
        return window

    def to_json(self) -> dict:
        return {"id": self.id, "source": self.source, "inode": self.inode, "generation": self.generation,
                "format": self.format, "span": list(self.span), "host": self.host, "part": asdict(self.part),
                "events": [_event_json(e) for e in self.events], "cluster_ids": self.cluster_ids,
                "signals": [asdict(s) for s in self.signals], "record_ids": self.record_ids,
                "priority": self.priority, "run_id": self.run_id}

    @classmethod
    def from_json(cls, data: dict) -> ReviewItem:
        return cls(id=data["id"], source=data["source"], inode=data["inode"], generation=data["generation"],
                   format=data["format"], span=tuple(data["span"]), host=data["host"],
                   part=DigestPart(**data["part"]), events=[_event(e) for e in data["events"]],
                   cluster_ids=list(data["cluster_ids"]), signals=[Signal(**s) for s in data["signals"]],
                   record_ids=list(data["record_ids"]), priority=int(data["priority"]), run_id=data.get("run_id"))


def priority(signals: Sequence[Signal]) -> int:
    """Most suspicious first: the strongest deviation's level, then quiet windows (no rule fired:
    nobody else looked), then how many deviations agree."""
    deviations = [s for s in signals if s.rule_id.startswith("lw-baseline-")]
    level = max((risk_rank(s.level) for s in deviations), default=0)
    quiet = 1 if len(deviations) == len(signals) else 0
    return level * 1000 + quiet * 100 + min(len(deviations), 99)


def _event_json(event: Event) -> dict:
    data = asdict(event)
    data["ts"] = event.ts.isoformat() if event.ts else None
    return data


def _event(data: dict) -> Event:
    data = dict(data)
    data["ts"] = datetime.fromisoformat(data["ts"]) if data.get("ts") else None
    return Event(**data)


# ---- the reviewer ------------------------------------------------------------------------------------

@dataclass(slots=True)
class ReviewStats:
    asked: int = 0  # prompts sent (retries included)
    answered: int = 0  # items that got a valid answer
    failed: int = 0
    left: int = 0  # items the budget left awaiting review
    usage: ModelUsage = field(default_factory=ModelUsage)
    findings: int = 0
    entities_named: int = 0
    entities_ungrounded: int = 0
    dismissed: int = 0  # deviation records the model judged normal (their level kept)
    texts_rejected: Counter = field(default_factory=Counter)  # reason → model texts the gate turned down
    records: list[RiskRecord] = field(default_factory=list)
    breaker_open: bool = False


Progress = Callable[[str, int], None]  # (counter name, increment): what a run reports as it goes


class Reviewer:
    """Answers review items within a budget and writes what they change."""

    def __init__(self, store, engine, *, budget: Budget, max_batch: int, max_new_tokens: int,
                 provenance: Provenance, progress: Progress = lambda _name, _n: None,
                 cancelled: threading.Event | None = None, examples: ExamplePrompter | None = None):
        self.store, self.engine, self.budget = store, engine, budget
        self.examples = examples  # reviewed examples put into each prompt as it is asked (None: none)
        self.cancelled = cancelled or threading.Event()
        self.max_batch, self.max_new_tokens, self.provenance = max(1, max_batch), max_new_tokens, provenance
        self.progress = progress
        self.stats = ReviewStats()
        self._failures_in_row = 0
        self._started = time.perf_counter()

    def run(self, items: Iterable[ReviewItem]) -> ReviewStats:
        """Review `items` most suspicious first until the budget runs out or the breaker opens."""
        queue = sorted(items, key=lambda i: -i.priority)
        self._started = time.perf_counter()
        while queue and not self.stats.breaker_open and self._budget_left():
            if self.cancelled.is_set():
                raise RunStopped("stopped: the model's review was cancelled; what it had not answered waits for review")
            batch, queue = queue[: self.max_batch], queue[self.max_batch:]
            self._review(batch)
        self.stats.left += len(queue)
        return self.stats

    def _budget_left(self) -> bool:
        spent = time.perf_counter() - self._started
        return self.budget.left(spent, self.stats.usage.tokens)

    def _review(self, batch: Sequence[ReviewItem]) -> None:
        results = self._ask(batch)
        if self.cancelled.is_set():  # answers cut short by a stop are not answers: the items stay pending
            raise RunStopped("stopped: the model's review was cancelled; what it had not answered waits for review")
        for i, result in enumerate(results):
            if result.assessment is None and len(batch) > 1 and not self.stats.breaker_open:
                results[i] = self._ask([batch[i]])[0]  # a failure in a batch gets one try alone
        records, done, errors, bursts = [], [], [], set()
        for item, result in zip(batch, results):
            self._count_failure(result)
            if result.assessment is None:  # the rules' and baselines' records stand, marked with the failure
                outcome = assess_window(item.window(), item.signals, [result], self.provenance)
                records += outcome.records
                bursts |= outcome.bursts
                done.append((item.id, "failed", result.error))
                errors.append(ErrorRow(source=item.source, offset=None, stage="engine",
                                       message=(result.error or "no answer")[:2000], line_no=item.span[0]))
                continue
            records += self._records(item, result, bursts)
            done.append((item.id, "done", None))
        records = [self._whole_burst(r) if r.id in bursts else r for r in records]
        with self.store.transaction() as tx:
            tx.upsert_records(records)
            tx.finish_reviews(done)
            if errors:
                tx.add_errors(errors, run_id=self.provenance.run_id)
        self.stats.records += records

    def _ask(self, batch: Sequence[ReviewItem]) -> list[LLMResult]:
        requests = [self._part(item).request() for item in batch]
        self.stats.asked += len(requests)
        self.progress("llm_calls", len(requests))
        log.info("asking the model: %d prompt(s)", len(requests))
        try:
            generations = self.engine.generate(requests, max_new_tokens=self.max_new_tokens)
        except (LogwardenError, RuntimeError, OSError) as exc:  # engine down, OOM after back-off, timeout
            if self.cancelled.is_set():
                raise RunStopped("stopped: the model's review was cancelled") from None
            log.warning("engine failed on a batch of %d: %s", len(requests), exc)
            return [LLMResult(assessment=None, error=f"engine: {exc}", digest=i.part.text, lines_of=i.part.lines_of)
                    for i in batch]
        finally:
            self.progress("llm_done", len(requests))
        return [self._result(g, item.part) for g, item in zip(generations, batch)]

    def _part(self, item: ReviewItem) -> DigestPart:
        """The item's prompt with the reviewed examples most like it (chosen now: the latest reviews count)."""
        return item.part if self.examples is None else self.examples.part(item.part, exclude=item.record_ids)

    def _result(self, generation, part: DigestPart) -> LLMResult:
        s = generation.stats
        self.stats.usage.add(s)
        self.progress("prompt_tokens", s.prompt_tokens)
        self.progress("new_tokens", s.new_tokens)
        # fitted as triage's is: a grammar-less backend may still call an sshd line a web attack
        return fit(result_of(generation, digest=part.text, lines_of=part.lines_of), part.categories).result

    def _whole_burst(self, record: RiskRecord) -> RiskRecord:
        """A burst's record rebuilt from one window of it keeps what the other windows added to it."""
        stored = self.store.get_record(record.id)
        return reviewed_burst(stored, record) if stored is not None else record

    def _records(self, item: ReviewItem, result: LLMResult, bursts: set[str]) -> list[RiskRecord]:
        """What the answer changed: records it explained, confirmed or dismissed, and its own
        findings (a record the answer left as the rules made it is already stored); `bursts` gets
        the ids of the bursts' records among them."""
        outcome = assess_window(item.window(), item.signals, [result], self.provenance)
        bursts |= outcome.bursts
        self.stats.answered += 1
        self.stats.findings += outcome.findings
        self.stats.entities_named += outcome.entities
        self.stats.entities_ungrounded += outcome.ungrounded
        self.stats.texts_rejected.update(outcome.rejected)
        changed = [r for r in outcome.records if r.decided_by != "rules"]
        self.stats.dismissed += sum(1 for r in changed if r.id in item.record_ids and r.verdict.get("verdict") == "benign")
        return changed

    def _count_failure(self, result: LLMResult) -> None:
        if result.assessment is not None:
            self._failures_in_row = 0
            return
        self.stats.failed += 1
        self._failures_in_row += 1
        if self._failures_in_row >= BREAKER_FAILURES and not self.stats.breaker_open:
            self.stats.breaker_open = True
            log.warning("circuit breaker open: %d model failures in a row; the rest waits for review",
                        self._failures_in_row)


class ReviewWorker:
    """The watcher's reviewer: a thread that answers pending prompts a batch at a time while the
    watcher ingests (the model never blocks it), and waits when nothing is pending."""

    IDLE_S = 2.0

    def __init__(self, store, make_reviewer: Callable[[], Reviewer], batch: int):
        import threading

        self.store, self.make_reviewer, self.batch = store, make_reviewer, batch
        self.stats: list[ReviewStats] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="logwarden-review", daemon=True)

    def start(self) -> ReviewWorker:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> list[ReviewStats]:
        """Ask the thread to stop after its batch in flight; what it did."""
        self._stop.set()
        self._thread.join(timeout=timeout)
        return self.stats

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                waiting = [ReviewItem.from_json(i) for i in self.store.pending_reviews(limit=self.batch)]
                if not waiting:
                    self._stop.wait(self.IDLE_S)
                    continue
                self.stats.append(self.make_reviewer().run(waiting))
            except RunStopped:  # the watcher is stopping: what was not answered stays pending
                return
            except StoreError as exc:  # the store is down or locked (the watcher says so): later
                log.warning("the review waits for the store: %s", exc)
                self._stop.wait(self.IDLE_S)
            except Exception:  # noqa: BLE001 - the watcher goes on; the items stay pending
                log.exception("review of pending prompts failed; they stay pending")
                self._stop.wait(self.IDLE_S)
