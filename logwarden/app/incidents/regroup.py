"""Grouping applied to the store: after records are written (analyze, watch) the incidents around
them are computed again and replace the ones they touch, in one transaction.

The scope is the stored records (at or above the minimum level) within reach of the new ones,
widened to the whole span of every incident already touching them, so an open incident is
extended, two incidents a new record bridges become one, and re-running changes nothing (the same
records give the same groups and ids). An incident keeps its review (state, close reason, owner, note,
reviewer) from
the old incident it overlaps most, and its story while its members are the same.

An incident is a chain: two records or more linked by a pivot within its gap. A record alone stays
an alert (a record, in no incident), unless it is at `ALONE_MIN_RISK` or above and has a story: such
a record is a candidate (`Regrouped.candidates`, not stored) that the story phase makes an incident
when the model tells it (story.py), and it stays one while its story lasts (issue 45: 74 of 76
incidents of a loghub run were one record each).

Knows nothing of the CLI, the UI or the model (stories are story.py's).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logwarden.app.incidents.grouping import group_records
from logwarden.app.incidents.options import IncidentOptions
from logwarden.app.incidents.rollup import build_incident
from logwarden.app.store import RecordFilter, Store
from logwarden.app.store.tables import to_utc
from logwarden.errors import RunStopped
from logwarden.schemas import RiskRecord, risk_rank
from logwarden.schemas.incident import Incident

log = logging.getLogger(__name__)
ALL = 10**9
ALONE_MIN_RISK = "high"  # a lone record this risky is an incident once the model tells its story
WIDEN_ROUNDS = 8
STORY_FIELDS = ("title", "summary", "stages", "next_steps", "cited", "story_by", "model", "ungrounded", "invented", "rejected")
REVIEW_FIELDS = ("status", "close_reason", "owner", "analyst_note", "reviewer", "reviewed_at")


@dataclass(slots=True)
class Regrouped:
    incidents: list[Incident]  # the incidents written (new, extended or unchanged)
    removed: list[str]  # ids that no longer exist (merged into another, their records gone, or alone)
    candidates: list[Incident] = field(default_factory=list)  # lone risky records a story would make incidents (not stored)

    @property
    def to_tell(self) -> list[Incident]:
        """What the story phase is given: the incidents and the candidates."""
        return [*self.incidents, *self.candidates]


@dataclass(slots=True)
class Span:
    """What a run stored: the time span of its timed records and its untimed ones."""

    low: datetime | None = None
    high: datetime | None = None
    untimed: dict[str, RiskRecord] = field(default_factory=dict)  # by id: a reviewed record replaces its first

    def add(self, records: Sequence[RiskRecord]) -> None:
        for r in records:
            times = [to_utc(t) for t in (r.first_ts, r.last_ts) if t is not None]  # naive = local, as stored
            if not times:
                self.untimed[r.id] = r
                continue
            self.low = min([self.low, *times]) if self.low else min(times)
            self.high = max([self.high, *times]) if self.high else max(times)

    def __bool__(self) -> bool:
        return self.low is not None or bool(self.untimed)


def regroup(store: Store, options: IncidentOptions, *, around: Span | None = None,
            cancelled: threading.Event | None = None) -> Regrouped:
    """Group the records around `around` (None: the whole store) and store the incidents. Once
    `cancelled` is set (a stop), it raises `RunStopped` between its steps and within its loops:
    the incidents stay as they were (they are written in one transaction, last)."""
    stop = _Stop(cancelled)
    with store.incidents.grouping_lock():
        return _regroup(store, options, around, stop)


def _regroup(store: Store, options: IncidentOptions, around: Span | None, stop: _Stop) -> Regrouped:
    scope = _whole_store(store, options) if around is None else _scope(store, options, around)
    log.info("grouping %d record(s) into incidents", len(scope))
    stop.check()
    by_id = {r.id: r for r in scope}
    groups = group_records(scope, options.policy, check=stop.check) if scope else []
    incidents = [build_incident(g, by_id) for g in stop.each(groups)]
    old = _old_incidents(store, around, scope)
    carry = _Reviews(old)
    for incident in stop.each(incidents):
        carry.over(incident)
    incidents, candidates = _chains(incidents)
    removed = sorted(set(old) - {i.id for i in incidents})
    stop.check()
    store.incidents.replace(old=sorted(old), incidents=incidents)
    return Regrouped(incidents, removed, candidates)


def _chains(grouped: Sequence[Incident]) -> tuple[list[Incident], list[Incident]]:
    """The groups that are incidents (a chain, or a lone risky record whose story was carried over),
    and the candidates: lone records at `ALONE_MIN_RISK` or above with no story yet. The other lone
    records stay alerts."""
    incidents, candidates = [], []
    for incident in grouped:
        risky = risk_rank(incident.risk_level) >= risk_rank(ALONE_MIN_RISK)
        if len(incident.record_ids) > 1 or (risky and incident.story_by != "rules"):
            incidents.append(incident)
        elif risky:
            candidates.append(incident)
    return incidents, candidates


class _Stop:
    """A regrouping's look at the stop request: `check` raises `RunStopped` once it is set."""

    EVERY = 256  # items between two looks in a loop (a look is cheap; a group of 20k records is not)

    def __init__(self, cancelled: threading.Event | None) -> None:
        self.cancelled = cancelled

    def check(self) -> None:
        if self.cancelled is not None and self.cancelled.is_set():
            raise RunStopped("stopped: the incidents were not regrouped; the next run or `incidents group` does it")

    def each(self, items: Sequence):
        for n, item in enumerate(items):
            if n % self.EVERY == 0:
                self.check()
            yield item


def _whole_store(store: Store, options: IncidentOptions) -> list[RiskRecord]:
    return store.query_records(RecordFilter(min_risk=options.min_risk), limit=ALL)


def _scope(store: Store, options: IncidentOptions, around: Span) -> list[RiskRecord]:
    """The stored records within reach of `around`, widened to the incidents they touch."""
    reach = timedelta(seconds=max(options.policy.gap_s, options.policy.weak_gap_s))
    scope: list[RiskRecord] = []
    if around.low is not None and around.high is not None:
        low, high = around.low, around.high
        for _ in range(WIDEN_ROUNDS):  # widened by ids; the records themselves are read once
            reached = RecordFilter(min_risk=options.min_risk, since=low - reach, until=high + reach)
            wider = _incident_span(store, store.record_ids(reached), low, high)
            if wider == (low, high):
                break
            low, high = wider
        scope = store.query_records(reached, limit=ALL)
    seen = {r.id for r in scope}
    return scope + _at_least([r for r in around.untimed.values() if r.id not in seen], options.min_risk)


def _incident_span(store: Store, record_ids: Sequence[str], low: datetime, high: datetime):
    touched = set(store.incidents.of_records(record_ids).values())
    for first, last in store.incidents.spans(sorted(touched)).values():
        if first is not None:
            low, high = min(low, first), max(high, last or first)
    return low, high


def _at_least(records: Sequence[RiskRecord], min_risk: str) -> list[RiskRecord]:
    return [r for r in records if risk_rank(r.risk_level) >= risk_rank(min_risk)]


def _old_incidents(store: Store, around: Span | None, scope: Sequence[RiskRecord]) -> dict[str, Incident]:
    """The stored incidents the regrouping replaces: all of them (whole store), or those holding a record
    of the scope or of its span at any level (a record lowered below the minimum leaves its incident)."""
    if around is None:
        return {i.id: i for i in store.incidents.query(limit=ALL)}
    records = {r.id for r in scope} | set(around.untimed)
    if around.low is not None and around.high is not None:
        low, high = min([around.low, *(_times(scope))]), max([around.high, *(_times(scope))])
        records.update(store.record_ids(RecordFilter(since=low, until=high)))
    ids = set(store.incidents.of_records(records).values())
    return store.incidents.get_many(sorted(ids))


def _times(records: Sequence[RiskRecord]) -> list[datetime]:
    return [t for r in records for t in (r.first_ts, r.last_ts) if t is not None]


class _Reviews:
    """The old incidents indexed by member and by story key, so that carrying their reviews and
    stories over costs each new incident its own members, not a pass over every old incident."""

    def __init__(self, old: dict[str, Incident]) -> None:
        self.old = old
        self.holder = {r: o.id for o in old.values() for r in o.record_ids}
        self.stories: dict[str, Incident] = {}
        for o in old.values():  # the first in id order, as a scan of `old` finds it
            if o.story_by != "rules":
                self.stories.setdefault(o.story_key, o)

    def over(self, incident: Incident) -> None:
        """The review of the old incident it shares most records with; the story if its members are the same."""
        shared = Counter(self.holder[r] for r in incident.record_ids if r in self.holder)
        if shared:
            best = min(shared, key=lambda o: (-shared[o], o != incident.id, o))
            found = self.old[best]
            for name in REVIEW_FIELDS:
                setattr(incident, name, getattr(found, name))
        same = self.stories.get(incident.story_key)
        if same is not None:
            for name in STORY_FIELDS:
                setattr(incident, name, getattr(same, name))
