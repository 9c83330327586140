"""`Detector`: runs a rule set over events and emits `Signal`s with their evidence lines.

Per event: its logsource route (cached per kind of event) picks a `Dispatch` (`dispatch.py`: the
rules of that logsource, indexed by their gates, which says which of them the event matches).
Matches become signals, and feed the correlations that reference their rule.

Owns merging: one Signal per rule + source + key per `scan` call ("42 SQLi attempts from
1.2.3.4", not 42 records), the key being the first present of the rule's key fields
(`logwarden: {key: [...]}`, default src_ip then host) or a correlation's group-by values;
line numbers are capped (first and last kept) with the true count in the description. State that
spans `scan` calls (correlations, the clock) is bounded (see `correlate.py`), and can be saved
(`dump`: pruned to what can still count) and restored (`restore`) under the rule set's fingerprint
and `STATE_VERSION`, so a burst split by a restart fires as if read at once; state saved by other
rules is not applied. Knows nothing about rule files (`pack.py`), how events are parsed, or where
the state is kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from logwarden.app.detect.correlate import MAX_GROUPS, Correlation, Firing, Hit, line_weight
from logwarden.app.detect.dispatch import Dispatch
from logwarden.app.detect.logsource import Route, route_of
from logwarden.app.detect.pack import CompiledRule, RuleSet, shipped_ruleset
from logwarden.app.detect.view import EventView
from logwarden.app.events import Event, Signal

MAX_LINE_NUMBERS = 500  # per signal; the first and last halves are kept, the count stays true
STATE_VERSION = 1  # bump when `dump`'s shape or the correlations' state changes meaning


@dataclass(slots=True)
class _Open:
    """A signal being built during one scan call."""

    rule: CompiledRule
    source: str
    key_field: str
    key: str
    first_t: float
    last_t: float
    lines: list[int] = field(default_factory=list)
    tail: deque[int] = field(default_factory=lambda: deque(maxlen=MAX_LINE_NUMBERS // 2))
    count: int = 0  # lines
    events: int = 0  # what the lines stand for (a "repeated 5 times" line is 5)
    distinct: set[str] = field(default_factory=set)
    burst_line: int = 0  # a counting correlation's burst: its first line
    burst_lines: int = 0  # its lines so far, those of earlier scans included
    continues: bool = True  # every firing of this scan went on with a burst an earlier scan reported

    def add(self, line_no: int, t: float, weight: int = 1) -> None:
        self.count += 1
        self.events += weight
        self.last_t = t
        if len(self.lines) < MAX_LINE_NUMBERS // 2:
            self.lines.append(line_no)
        else:
            self.tail.append(line_no)

    def add_firing(self, firing: Firing) -> None:
        self.burst_line = self.burst_line or firing.burst_line
        self.burst_lines = max(self.burst_lines, firing.burst_lines)
        self.continues = self.continues and firing.extension
        for line_no in firing.lines:
            self.add(line_no, firing.last_t, 0)
        self.events += firing.events
        if len(self.distinct) < 1000:
            self.distinct |= firing.distinct

    def to_signal(self) -> Signal:
        rule = self.rule
        line_numbers = sorted(set(self.lines).union(self.tail))
        return Signal(rule_id=rule.id, title=rule.title, level=rule.level, category=rule.category,
                      techniques=list(rule.techniques), source=self.source, line_numbers=line_numbers,
                      key=self.key, description=self._describe(len(line_numbers)),
                      references=list(rule.ir.references), falsepositives=list(rule.ir.falsepositives),
                      burst_line=self.burst_line, continues=bool(self.burst_line) and self.continues)

    def _describe(self, shown: int) -> str:
        rule = self.rule
        lines = max(self.count, self.burst_lines)  # a burst that went on from earlier scans: all of it
        what = f"{lines} matching line{'s' if lines != 1 else ''}"
        if self.events != self.count and lines == self.count:
            what += f" standing for {self.events} events"
        value_field = (rule.correlation or {}).get("field")
        if value_field and self.distinct:
            what += f", {len(self.distinct)} distinct {value_field}"
        where = f" for {self.key_field}={self.key}" if self.key else ""
        capped = f" (line numbers capped at {shown})" if shown < self.count else ""
        return f"{what}{where}{capped}. {rule.description}".strip()


class Detector:
    """Stateful rule runner: feed it events in order with `scan`; it returns the signals they make."""

    def __init__(self, rules: RuleSet | Iterable[CompiledRule] | None = None, *,
                 max_keys_per_rule: int = MAX_GROUPS) -> None:
        if rules is None:
            rules = shipped_ruleset()
        self.rules = rules if isinstance(rules, RuleSet) else RuleSet(rules=_with_feeders(list(rules)))
        active = self.rules.rules
        self._detections: dict[tuple, list[CompiledRule]] = {}  # by logsource: a route tests each once
        for rule in active:
            if rule.correlation is None:
                self._detections.setdefault(rule.logsource, []).append(rule)
        self._correlations = {r.key: Correlation(r.correlation, r.correlation["rules"], max_groups=max_keys_per_rule)
                              for r in active if r.correlation is not None}
        self._dispatch: dict[Route, Dispatch] = self.rules.dispatches  # built once per rule set and route
        self._clock: dict[str, datetime] = {}  # last known time per source, for events without ts
        self._fingerprint: str | None = None  # of the rule set, for saved state (computed when first needed)

    @property
    def _states(self) -> dict[str, object]:
        """Correlation state per rule (bounded: see correlate.py)."""
        return {key: corr.states for key, corr in self._correlations.items()}

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = self.rules.fingerprint()
        return self._fingerprint

    def dump(self) -> dict:
        """The state that spans `scan` calls, as JSON-able data: the correlations' groups (those that
        can no longer count at the latest time seen dropped first) and the clock."""
        now = max((corr.latest() for corr in self._correlations.values()), default=0.0)
        for corr in self._correlations.values():
            corr.prune(now)
        return {"version": STATE_VERSION, "rules": self.fingerprint,
                "clock": {source: ts.isoformat() for source, ts in self._clock.items()},
                "correlations": {key: corr.dump() for key, corr in self._correlations.items() if corr.states}}

    def restore(self, data: dict) -> bool:
        """Take back a `dump` of this rule set (same fingerprint and version); False: not applied."""
        if data.get("version") != STATE_VERSION or data.get("rules") != self.fingerprint:
            return False
        self._clock = {source: datetime.fromisoformat(ts) for source, ts in data["clock"].items()}
        for key, state in data["correlations"].items():
            if key in self._correlations:
                self._correlations[key].load(state)
        return True

    def scan(self, events: Iterable[Event], *, source: str | None = None) -> list[Signal]:
        """Signals for these events (and for bursts that began in earlier calls), by first line.
        `source`: the name their state is kept under (default: each event's own file): the pipeline
        names the source as first seen, so a rotated file read under another name goes on with the
        bursts and the clock of what it continues."""
        opened: dict[tuple[str, str, str], _Open] = {}
        finished: list[_Open] = []
        dispatches = self._dispatch
        clock = self._clock
        for event in events:
            name = source or event.source
            if event.ts is not None:
                clock[name] = event.ts
            route = route_of(event)
            dispatch = dispatches.get(route)
            if dispatch is None:
                dispatch = dispatches[route] = self._build(route)
            view = EventView(event, dispatch.aliases)
            matched = dispatch.matches(view)
            if matched:
                t = self._time(event, name)
                for rule in matched:
                    self._matched(rule, view, name, t, opened, finished)
        finished.extend(opened.values())
        signals = [o.to_signal() for o in finished]
        return sorted(signals, key=lambda s: (s.source, s.line_numbers[0] if s.line_numbers else 0, s.rule_id))

    def _build(self, route: Route) -> Dispatch:
        return Dispatch([rule for logsource, rules in self._detections.items() if route.matches(*logsource)
                         for rule in rules], route)

    def _time(self, event: Event, source: str) -> float:
        """The event's time; one without a timestamp inherits the last one seen in its source (lines
        are in order). Converted only for events a rule matched: most events match none."""
        ts = event.ts if event.ts is not None else self._clock.get(source)
        return ts.timestamp() if ts is not None else 0.0

    def _matched(self, rule: CompiledRule, view: EventView, source: str, t: float, opened: dict,
                 finished: list) -> None:
        if rule.emits:
            self._add_single(rule, view, source, t, opened, finished)
        if rule.consumers:
            hit = Hit(rule.key, source, t, [view.event.line_no], view.get, line_weight(view.get("repeat")))
            self._feed(rule.consumers, hit, opened, finished)

    def _add_single(self, rule: CompiledRule, view: EventView, source: str, t: float, opened: dict,
                    finished: list) -> None:
        key_field, key = _key_value(view, rule.key_fields)
        slot = (rule.key, source, key)
        current = opened.get(slot)
        if current is not None and t - current.last_t > rule.merge_gap_s:
            finished.append(opened.pop(slot))  # a separate episode: do not merge across long gaps
            current = None
        if current is None:
            current = opened[slot] = _Open(rule, source, key_field, key, t, t)
        current.add(view.event.line_no, t, line_weight(view.get("repeat")))

    @staticmethod
    def _add_firing(rule: CompiledRule, correlation: Correlation, firing: Firing, opened: dict, finished: list) -> None:
        """A counting correlation's firings (and its burst) make one signal per key and batch; each
        temporal one is a finding of its own (this sequence of events)."""
        key = ", ".join(firing.group.values())
        signal = _Open(rule, firing.source, ", ".join(firing.group), key, firing.first_t, firing.last_t)
        if correlation.counting:
            signal = opened.setdefault((rule.key, firing.source, key), signal)
        else:
            finished.append(signal)
        signal.add_firing(firing)

    def _feed(self, consumers: Sequence[CompiledRule], hit: Hit, opened: dict, finished: list) -> None:
        for rule in consumers:
            correlation = self._correlations.get(rule.key)
            if correlation is None:  # a correlation left out of this detector's rules
                continue
            firing = correlation.feed(hit)
            if firing is None:
                continue
            for corr_key, state_key in firing.consumed:
                consumed = self._correlations.get(corr_key)
                if consumed is not None:
                    consumed.reset(state_key)
            if rule.emits:
                self._add_firing(rule, correlation, firing, opened, finished)
            if rule.consumers:
                self._feed(rule.consumers, Hit(rule.key, firing.source, firing.last_t, firing.lines,
                                               firing.group.get, 1, (rule.key, firing.state_key)), opened, finished)


def _with_feeders(rules: list[CompiledRule]) -> list[CompiledRule]:
    """A plain list of rules plus whatever the correlations among them reference."""
    out: dict[str, CompiledRule] = {}
    pending = list(rules)
    while pending:
        rule = pending.pop()
        if rule.key not in out:
            out[rule.key] = rule
            pending.extend(rule.feeders)
    return list(out.values())


def _key_value(view: EventView, names: Sequence[str]) -> tuple[str, str]:
    """(field, value) of the first present named field; ('', '') when none is."""
    for name in names:
        value = view.get(name)
        if value not in (None, "", "-"):
            return name, str(value)
    return "", ""
