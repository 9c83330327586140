"""The incident's story, written by the model and checked by code.

The model reads its records' summaries (id, time, host, level, category, ATT&CK, indicators, the
anomaly line — a few hundred tokens, never raw logs) and answers `IncidentStory` under a schema
whose `cited` items are an enum of exactly the ids it was shown. Code checks again: a story citing
any id that is not the incident's is rejected whole (Elastic's lesson: small models invent alert
ids), and the summary and each next step pass the text gate (`textgate.check`: grounding, echoes
of the instructions, bare words, copies, loops); a field that failed keeps the rules' text and is
noted in `rejected`. The title is always the deterministic one, made from the records (category,
hosts, count): the model's title is read from text a log line can steer, so it is checked (its
rejections and ungrounded entities counted) but never shown. A story needs a summary that passed.

A lone record at high or above is a candidate the regrouping did not store (regroup.py): its story,
once written and checked, makes it an incident.

Owns: the records' digest, the requests, the checks, the budget loop, and `write_stories`, the story
phase both `analyze` (after its review, within what the run's budget left) and `incidents group`
run. Knows nothing of grouping or of terminals and pages.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

from logwarden.app.config import declared
from logwarden.app.postprocess import Provenance
from logwarden.app.review import Budget, default_budget
from logwarden.app.store import Store
from logwarden.app.textgate import check
from logwarden.engine.api import Engine, ModelUsage, Request
from logwarden.prompts import INCIDENT_PROMPT_VERSION, incident_prompt, system_prompt
from logwarden.schemas import risk_rank
from logwarden.schemas.incident import Incident, IncidentStory, story_json_schema
from logwarden.schemas.record import RiskRecord

log = logging.getLogger(__name__)

RECORDS_SHOWN = 12  # the riskiest records of a big incident; the prompt stays a few hundred tokens
ANOMALY_CHARS = 160
VALUES_SHOWN = 4
BATCH = 4
STORY_MIN_RISK = "medium"


@dataclass(slots=True)
class StoryStats:
    written: int = 0
    rejected: int = 0  # unparsable, citing an id not the incident's, or nothing grounded left
    failed: int = 0  # asked, but the engine failed
    invented: int = 0
    ungrounded: int = 0
    alone: int = 0  # of those written, lone records' stories: each made its record an incident
    texts_rejected: Counter = field(default_factory=Counter)  # reason → titles, summaries, steps the gate turned down
    usage: ModelUsage = field(default_factory=ModelUsage)

    def as_dict(self) -> dict:
        """Flat, the usage's fields beside the counts (not asdict: it rebuilds the reason Counter
        from its items, counting (reason, n) pairs)."""
        counts = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "usage"}
        return counts | self.usage.as_dict()


def records_digest(records: Sequence[RiskRecord]) -> tuple[str, list[str]]:
    """The lines the model reads, and the ids they show (riskiest records first, then in time order)."""
    shown = sorted(records, key=lambda r: (-risk_rank(r.risk_level), _when(r), r.id))[:RECORDS_SHOWN]
    shown.sort(key=lambda r: (_when(r), r.id))
    return "\n".join(_record_line(r) for r in shown), [r.id for r in shown]


def _when(r: RiskRecord) -> str:
    return r.first_ts.isoformat() if r.first_ts else ""


def _record_line(r: RiskRecord) -> str:
    when = f"{r.first_ts:%Y-%m-%d %H:%M:%S}" if r.first_ts else "-"
    attack = " ".join(t.id for t in r.techniques[:3])
    facts = [f"{kind}={','.join(values[:VALUES_SHOWN])}" for kind, values in
             (("host", r.hosts), ("users", r.indicators.users), ("ips", r.indicators.ips),
              ("processes", r.indicators.processes), ("files", r.indicators.hashes[:1])) if values]
    anomaly = " ".join(r.anomaly.split())[:ANOMALY_CHARS]
    return f"{r.id} {when} {r.risk_level} {r.category} {attack} {' '.join(facts)} | {anomaly}"


def story_request(records: Sequence[RiskRecord]) -> tuple[Request, str, list[str]]:
    text, ids = records_digest(records)
    request = Request(system_prompt(INCIDENT_PROMPT_VERSION), incident_prompt(text), schema=story_json_schema(ids))
    return request, text, ids


def check_story(incident: Incident, answer_text: str, digest: str, stats: StoryStats) -> Incident | None:
    """The incident with the model's story, checked; None when the answer is rejected."""
    try:
        story = IncidentStory.model_validate(json.loads(answer_text))
    except ValueError:
        stats.rejected += 1
        return None
    invented = [i for i in story.cited if i not in set(incident.record_ids)]
    if invented or not story.cited:
        stats.invented += len(invented)
        stats.rejected += 1
        return None
    checked = _grounded(incident, story, digest, stats)
    stats.rejected += checked is None
    return checked


def _grounded(incident: Incident, story: IncidentStory, digest: str, stats: StoryStats) -> Incident | None:
    title, summary = check(_uncut(story.title), digest), check(_uncut(story.summary), digest)
    steps = [check(_uncut(step), digest, min_words=1) for step in story.next_steps]
    checked_texts = (title, summary, *steps)
    missing = list(dict.fromkeys(e for c in checked_texts for e in c.grounded.ungrounded))
    stats.ungrounded += len(missing)
    stats.texts_rejected.update(c.reason for c in checked_texts if c.reason)
    if not summary.text:
        return None
    checked = incident.model_copy(deep=True)  # the title stays the records' own (`rollup.deterministic_title`)
    checked.summary, checked.stages = summary.text, list(dict.fromkeys(story.stages))
    checked.next_steps = list(dict.fromkeys(s.text for s in steps if len(s.text.split()) >= MIN_STEP_WORDS))
    checked.cited, checked.ungrounded, checked.story_by = list(dict.fromkeys(story.cited)), missing, "llm"
    checked.rejected = {name: c.reason for name, c in (("title", title), ("summary", summary)) if c.reason}
    if failed := next((c.reason for c in steps if c.reason), None):
        checked.rejected["next_steps"] = failed
    return checked


def _uncut(text: str) -> str:
    """Without its last sentence when the length bound cut it off (no closing punctuation)."""
    sentences = _SENTENCE.split(text.strip())
    if len(sentences) > 1 and not sentences[-1].rstrip().endswith(_ENDS):
        sentences = sentences[:-1]
    return " ".join(sentences)


_SENTENCE = re.compile(r"(?<=[.;!?])\s+")
_ENDS = (".", "!", "?", ")")
MIN_STEP_WORDS = 2  # "analyze", "kill": not a step an analyst can take


def write_stories(store: Store, engine: Engine, incidents: Sequence[Incident], *, llm_budget: str, limit: int,
                  max_new_tokens: int = declared("incident_story_max_new_tokens"), spent: tuple[float, int] = (0.0, 0),
                  cancelled: threading.Event | None = None,
                  progress: Callable[[str, int], None] = lambda _name, _n: None) -> StoryStats:
    """The stories of at most `limit` of the incidents that need one, within the budget `llm_budget`
    (app/review.Budget's spec) of which `spent` (seconds, tokens) is gone already.

    A story's prompt holds its records alone, no reviewed examples (app/examples): examples are verdicts
    on single records, and with them the 0.5B copied the prompt's frame back ("review the examples",
    "records between the markers"): 3 of 10 stories passed the text gate with them, 9 of 10 without
    (the same incident, ten runs each, 2026-12-08)."""
    writer = StoryWriter(store, engine, budget=default_budget(llm_budget, engine), spent=spent,
                         max_new_tokens=max_new_tokens, cancelled=cancelled, progress=progress)
    return writer.write(incidents, limit=limit)


class StoryWriter:
    """Writes the stories of incidents that need one, riskiest first, while the budget lasts."""

    def __init__(self, store: Store, engine: Engine, *, budget: Budget, spent: tuple[float, int] = (0.0, 0),
                 max_new_tokens: int = declared("incident_story_max_new_tokens"), cancelled: threading.Event | None = None,
                 progress: Callable[[str, int], None] = lambda _name, _n: None):
        self.store, self.engine, self.budget, self.progress = store, engine, budget, progress
        self.spent = spent  # (seconds, tokens) of the budget gone before this writer's first story
        self.max_new_tokens = max_new_tokens  # a story cut here is rejected; citing each member once at most keeps stories short
        self.cancelled = cancelled or threading.Event()
        self.model = Provenance.of(engine).model

    def write(self, incidents: Sequence[Incident], *, limit: int) -> StoryStats:
        stats = StoryStats()
        todo = needing_story(incidents)[:limit]
        self.progress("phase:stories", len(todo))
        for start in range(0, len(todo), BATCH):
            if self.cancelled.is_set() or not self._budget_left(stats.usage):
                break
            if not self._batch(todo[start:start + BATCH], stats):
                break
        return stats

    def _budget_left(self, usage: ModelUsage) -> bool:
        seconds, tokens = self.spent
        return self.budget.left(seconds + usage.generation_s, tokens + usage.tokens)

    def _batch(self, incidents: Sequence[Incident], stats: StoryStats) -> bool:
        """Ask for a batch of stories; False when the engine failed (no more are asked this run)."""
        prepared = [(i, *story_request(self._members(i))) for i in incidents]
        log.info("asking the model for %d incident story(ies)", len(prepared))
        self.progress("stories_started", len(prepared))
        started = time.perf_counter()
        try:
            answers = self.engine.generate([p[1] for p in prepared], max_new_tokens=self.max_new_tokens)
        except Exception as exc:  # noqa: BLE001 - any engine failure: the titles stay deterministic
            log.warning("the model wrote no incident story: %s", exc)
            stats.failed += len(prepared)
            return False
        finally:
            self.progress("stories_done", len(prepared))
        share = (time.perf_counter() - started) / max(len(answers), 1)  # the batch's wall time, split
        for (incident, _, digest, _), answer in zip(prepared, answers):
            stats.usage.add(answer.stats, seconds=share)
            self.progress("prompt_tokens", answer.stats.prompt_tokens)
            self.progress("new_tokens", answer.stats.new_tokens)
            checked = None if answer.error else check_story(incident, answer.text, digest, stats)
            if checked is not None:
                checked.model = str(self.model) if self.model else None
                if self.store.incidents.set_story(checked):
                    stats.written += 1
                    stats.alone += len(checked.record_ids) == 1
        return True

    def _members(self, incident: Incident) -> list[RiskRecord]:
        """The incident's records; a candidate's (a lone record, not stored as an incident) by id."""
        return self.store.incidents.members(incident.id) or [
            r for r in map(self.store.get_record, incident.record_ids) if r is not None]


def needing_story(incidents: Sequence[Incident]) -> list[Incident]:
    """Incidents at or above STORY_MIN_RISK without a model story, riskiest and biggest first."""
    todo = [i for i in incidents if i.story_by == "rules" and risk_rank(i.risk_level) >= risk_rank(STORY_MIN_RISK)]
    return sorted(todo, key=lambda i: (-risk_rank(i.risk_level), -len(i.record_ids), i.id))
