"""Reviewed examples retrieved into the model's prompts: the analyst teaches the model by example.

Owns: `Example` (a reviewed case: its evidence as text — lines, rules, category, with the host names
taken out — its verdict, the analyst's note), the shipped seed library (`data/reviewed_examples.json`:
generated scenarios with known answers), `examples_of_records` (closed records of the store → examples),
`ExampleSource` (seed + the store's reviews + any extra examples, later ones overriding earlier ones of
the same evidence, in one BM25 index — bm25s — built when first searched), `RetrievalOptions`
(`from_settings`: on/off, k, the examples' token cap) and `ExamplePrompter`: a digest part or a triage
prompt with the k most similar examples in the room its budget leaves (the evidence is never cut: the
examples are trimmed, then dropped, least similar first).
Nothing leaves the machine. Knows nothing of the store's tables (it reads `RiskRecord`s) or the engine
beyond a token counter.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from logwarden.app.config import Settings, declared
from logwarden.app.digest import DigestPart
from logwarden.engine.api import CountTokens, approx_tokens
from logwarden.prompts import examples_text
from logwarden.schemas.assessment import Category
from logwarden.schemas.record import RiskRecord

EXAMPLE_LINES = 6  # evidence lines an example keeps (its first ones): enough to recognise it by
LINE_CHARS = 200
NOTE_CHARS = 200
SEED_FILE = "reviewed_examples.json"
# what an analyst's close reason tells the model; `duplicate` teaches nothing and is left out
VERDICT_WORDS = {"true_positive": "closed: true_positive (a real attack)",
                 "benign_positive": "closed: benign_positive (real activity, harmless)",
                 "false_positive": "closed: false_positive (not what it looked like)"}
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Example:
    """One reviewed case as the index and the prompt read it."""

    id: str  # a record's id, a seed scenario's or a feedback row's: leave-one-out excludes by it
    lines: tuple[str, ...]
    verdict: str  # a close reason in VERDICT_WORDS
    category: str = "benign"
    rules: tuple[str, ...] = ()
    note: str = ""
    origin: str = "seed"  # seed | store | what a caller names its own (feedback)

    @property
    def text(self) -> str:
        """What is indexed and shown: category, rules, lines."""
        head = f"category={self.category}" + (f" rules={','.join(self.rules)}" if self.rules else "")
        return "\n".join([head, *self.lines])

    @property
    def key(self) -> str:
        """The evidence's fingerprint: two examples of the same lines and rules are duplicates."""
        return evidence_key(self.lines, self.rules)

    def shown(self, line_chars: int = LINE_CHARS) -> str:
        note = f"; analyst: {_clip(self.note, NOTE_CHARS)}" if self.note else ""
        lines = [f"  {_clip(line, line_chars)}" for line in self.lines]
        head = f"- verdict: {VERDICT_WORDS[self.verdict]}{note}"
        rules = f" rules: {', '.join(self.rules)}" if self.rules else ""
        return "\n".join([head, f"  category: {self.category}{rules}", *lines])


def evidence_key(lines: Iterable[str], rules: Iterable[str]) -> str:
    text = "\x1f".join([*(" ".join(line.split()) for line in lines), "\x1e", *sorted(rules)])
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:24]


def _clip(text: str, limit: int) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def without_hosts(text: str, hosts: Iterable[str]) -> str:
    """The text with the record's host names replaced: an example teaches by behaviour, and a host's
    name would make every record of that host look alike."""
    for host in sorted({h for h in hosts if len(h) > 1}, key=len, reverse=True):
        text = re.sub(rf"(?i)(?<![\w.-]){re.escape(host)}(?![\w-])", "<host>", text)
    return text


# ---- the seed library ---------------------------------------------------------------------------

class SeedScenario(BaseModel):
    """One shipped scenario: written for a technique or a behaviour, with its known verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9-]{3,60}$")
    category: Category
    verdict: Literal["true_positive", "benign_positive", "false_positive"]
    note: str = Field(min_length=1, max_length=NOTE_CHARS)
    rules: list[str] = Field(default_factory=list, max_length=8)
    lines: list[str] = Field(min_length=1, max_length=EXAMPLE_LINES)


class SeedLibrary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    scenarios: list[SeedScenario] = Field(min_length=1)


@lru_cache(maxsize=1)
def seed_examples() -> tuple[Example, ...]:
    """The shipped scenarios, validated (a malformed file is a bug: it raises)."""
    text = resources.files("logwarden").joinpath("data", SEED_FILE).read_text(encoding="utf-8")
    library = SeedLibrary.model_validate_json(text)
    ids = [s.id for s in library.scenarios]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{SEED_FILE}: scenario ids repeat")
    return tuple(Example(id=f"seed:{s.id}", lines=tuple(s.lines), verdict=s.verdict, category=s.category,
                         rules=tuple(s.rules), note=s.note, origin="seed") for s in library.scenarios)


# ---- the store's reviews -----------------------------------------------------------------------

def example_of_record(record: RiskRecord) -> Example | None:
    """A closed record as an example (None: not closed, closed as a duplicate, or no evidence lines)."""
    if record.status != "closed" or record.close_reason not in VERDICT_WORDS:
        return None
    lines = tuple(without_hosts(line.text, record.hosts) for line in record.evidence.exemplars[:EXAMPLE_LINES])
    if not lines:
        return None
    return Example(id=record.id, lines=lines, verdict=record.close_reason, category=record.category,
                   rules=tuple(record.rule_names()[:8]), note=record.analyst_note or "", origin="store")


def examples_of_records(records: Iterable[RiskRecord]) -> list[Example]:
    return [e for e in map(example_of_record, records) if e is not None]


# ---- the index ---------------------------------------------------------------------------------

@dataclass(slots=True)
class ExampleSource:
    """The examples the model may be shown, searchable by similarity (BM25 over their text).

    `add` is how other reviewed judgements join (the store's closed records at open time, an
    analyst's accepted or rejected model judgements): an example with the evidence of one already
    held replaces it, so the analyst's own review overrides a seed scenario of the same lines."""

    examples: list[Example] = field(default_factory=list)
    _index: object | None = None
    _tokenizer: object | None = None
    _snapshot: list[Example] = field(default_factory=list)  # the examples the index was built of
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def seeded(cls, extra: Iterable[Example] = ()) -> ExampleSource:
        source = cls(list(seed_examples()))
        source.add(extra)
        return source

    def add(self, examples: Iterable[Example]) -> ExampleSource:
        """Extend the library (later examples override earlier ones of the same evidence or id)."""
        with self._lock:
            held = {e.key: e for e in self.examples}
            for example in examples:
                if example.verdict not in VERDICT_WORDS:
                    raise ValueError(f"example {example.id}: verdict {example.verdict!r} is not one of "
                                     f"{', '.join(VERDICT_WORDS)}")
                held = {k: e for k, e in held.items() if e.id != example.id}
                held[example.key] = example
            self.examples = list(held.values())
            self._index = None
        return self

    def __len__(self) -> int:
        return len(self.examples)

    def similar(self, query: str, k: int, *, exclude: Collection[str] = ()) -> list[Example]:
        """The `k` examples most like `query`, best first; never one whose id or evidence key is in
        `exclude` (leave-one-out: a record never retrieves itself or its exact duplicate), never one
        that shares no word with it."""
        if k <= 0 or not self.examples:
            return []
        index, tokenizer, examples = self._built()
        tokens = tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
        scores = index.get_scores([t for t in tokens if t != 0])
        ranked = sorted(range(len(examples)), key=lambda i: (-float(scores[i]), examples[i].id))
        found: list[Example] = []
        for i in ranked:
            if float(scores[i]) <= 0 or len(found) >= k:
                break
            if examples[i].id not in exclude and examples[i].key not in exclude:
                found.append(examples[i])
        return found

    def _built(self):
        level = logging.getLogger("bm25s").level
        import bm25s  # its import sets its logger to DEBUG: the level the application chose is put back
        from bm25s.tokenization import Tokenizer

        logging.getLogger("bm25s").setLevel(level)

        with self._lock:
            if self._index is None:
                tokenizer = Tokenizer(stopwords="en")
                ids = tokenizer.tokenize([e.text for e in self.examples], return_as="ids", show_progress=False)
                index = bm25s.BM25()
                index.index(ids, show_progress=False)
                self._index, self._tokenizer, self._snapshot = index, tokenizer, list(self.examples)
            return self._index, self._tokenizer, self._snapshot


def store_source(store, *, limit: int = declared("retrieval_store_examples"), seed: bool = True) -> ExampleSource:
    """The seed library (unless `seed` is off) with the store's closed records over it (the most
    recently reviewed `limit`), read once: the index is derived, never stored. Every reader of the
    store's reviews (runs, triage, stories, backtest) gets its examples here."""
    from logwarden.app.store import RecordFilter

    records = store.query_records(RecordFilter(statuses=["closed"]), order_by="updated_at", limit=limit)
    source = (ExampleSource.seeded() if seed else ExampleSource()).add(examples_of_records(records))
    return source.add(examples_of_feedback(store.list_feedback(limit=limit)))


# The feedback reasons that say whether the lines were a threat; the others (wrong category,
# severity, technique, hallucinated, unhelpful, an accept) judge the model's text, not the lines.
FEEDBACK_VERDICTS = {"missed_threat": "true_positive", "not_a_threat": "false_positive"}


def examples_of_feedback(rows: Iterable) -> list[Example]:
    """An analyst's rejection of a model judgement as 'not a threat' or 'a missed threat', with the
    lines it judged, as a reviewed example (newest first: a later row of the same lines wins)."""
    examples = []
    for row in reversed(list(rows)):
        verdict = FEEDBACK_VERDICTS.get(row.reason)
        lines = tuple(line for line in (row.context or "").splitlines() if line.strip())
        if verdict and lines:
            examples.append(Example(id=f"feedback-{row.id}", lines=lines[:EXAMPLE_LINES], verdict=verdict,
                                    category=_judged_category(row.judged), note=row.note or "", origin="feedback"))
    return examples


def _judged_category(judged: str) -> str:
    try:
        value = json.loads(judged)
    except ValueError:
        return "benign"
    return str(value.get("category") or "benign") if isinstance(value, dict) else "benign"


# ---- into prompts ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RetrievalOptions:
    enabled: bool = declared("retrieval")
    k: int = declared("retrieval_k")
    max_tokens: int = declared("retrieval_tokens")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> RetrievalOptions:
        options = cls(enabled=settings.retrieval, k=settings.retrieval_k, max_tokens=settings.retrieval_tokens)
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(slots=True)
class ExamplePrompter:
    """Puts the most similar reviewed examples into prompts, within their budgets."""

    source: ExampleSource
    options: RetrievalOptions = field(default_factory=RetrievalOptions)
    count_tokens: CountTokens = approx_tokens
    prompt_budget: int = declared("prompt_token_budget")  # a digest part's budget: the examples get what it left

    def block(self, query: str, room: int, *, exclude: Collection[str] = ()) -> str:
        """The examples' text for a prompt with `room` tokens left (empty: none fit, or none alike):
        each example whole if it fits, else with shorter lines, else dropped, the least similar first."""
        room = min(room, self.options.max_tokens)
        if not self.options.enabled or room <= 0:
            return ""
        found = self.source.similar(query, self.options.k, exclude=exclude)
        while found:
            for line_chars in (LINE_CHARS, LINE_CHARS // 2, 60):
                text = examples_text([e.shown(line_chars) for e in found])
                if self.count_tokens(text) <= room:
                    return text
            found = found[:-1]
        return ""

    def part(self, part: DigestPart, *, exclude: Collection[str] = ()) -> DigestPart:
        """`part` with examples in the room its digest left of the prompt budget (the digest as it was)."""
        room = self.prompt_budget - self.count_tokens(part.text) - 1
        return dataclasses.replace(part, examples=self.block(part.text, room, exclude=exclude))

    def parts(self, parts: Sequence[DigestPart]) -> list[DigestPart]:
        return [self.part(p) for p in parts]
