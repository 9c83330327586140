"""`Detector`: runs compiled rules over events and emits `Signal`s with their evidence lines.

Owns the per-rule state that makes detection work across batches (a burst split over two `scan`
calls still fires), with bounded memory: per-key deques trimmed by the rule's window and an LRU cap
on the number of keys. Also owns merging: one Signal per rule + source + key per `scan` call
("42 SQLi attempts from 1.2.3.4", not 42 records), with line numbers capped (first and last kept)
and the true count in the description. A line can stand for several events: a regex group named
`count` (sshd's "PAM 5 more authentication failures") or the parser's `repeat` field (rsyslog's
"message repeated 5 times") weighs it in threshold counts. It does not know the rule file format
(see `rules.py`).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from logwarden.app.detect.rules import Rule, load_rules
from logwarden.app.detect.view import EventView
from logwarden.app.models import Event, Signal

MAX_LINE_NUMBERS = 500  # per signal; the first and last halves are kept, the count stays true
MAX_KEYS_PER_RULE = 20_000  # least recently seen keys are forgotten beyond this
MAX_HITS_PER_KEY = 5_000  # for distinct-counting rules, whose deques are not cleared at the threshold
MAX_LINE_WEIGHT = 10_000  # one line never counts for more events than this


@dataclass(slots=True)
class _Hit:
    t: float
    line_no: int
    distinct: str | None
    weight: int = 1  # events this line stands for


@dataclass(slots=True)
class _KeyState:
    """Matches of one key still inside the window, and whether a burst is in progress."""

    hits: deque[_Hit] = field(default_factory=deque)
    values: Counter[str] = field(default_factory=Counter)  # distinct field → hits in window
    events: int = 0  # sum of the hits' weights
    burst_last_t: float | None = None  # time of the last event of a burst that already fired

    def add(self, hit: _Hit) -> None:
        if len(self.hits) >= MAX_HITS_PER_KEY:
            self._drop_oldest()
        self.hits.append(hit)
        self.events += hit.weight
        if hit.distinct is not None:
            self.values[hit.distinct] += 1

    def trim(self, oldest_t: float) -> None:
        while self.hits and self.hits[0].t < oldest_t:
            self._drop_oldest()

    def measure(self, distinct: bool) -> int:
        return len(self.values) if distinct else self.events

    def clear(self) -> None:
        self.hits.clear()
        self.values.clear()
        self.events = 0

    def _drop_oldest(self) -> None:
        old = self.hits.popleft()
        self.events -= old.weight
        if old.distinct is not None:
            self.values[old.distinct] -= 1
            if self.values[old.distinct] <= 0:
                del self.values[old.distinct]


@dataclass(slots=True)
class _Open:
    """A signal being built during one scan call."""

    rule: Rule
    source: str
    key_field: str
    key: str
    first_t: float
    last_t: float
    lines: list[int] = field(default_factory=list)
    tail: deque[int] = field(default_factory=lambda: deque(maxlen=MAX_LINE_NUMBERS // 2))
    count: int = 0  # lines
    events: int = 0  # what the lines stand for (a "repeated 5 times" line is 5)
    distinct_values: set[str] = field(default_factory=set)

    def add(self, line_no: int, t: float, distinct: str | None = None, weight: int = 1) -> None:
        self.count += 1
        self.events += weight
        self.last_t = t
        if len(self.lines) < MAX_LINE_NUMBERS // 2:
            self.lines.append(line_no)
        else:
            self.tail.append(line_no)
        if distinct is not None and len(self.distinct_values) < 1000:
            self.distinct_values.add(distinct)

    def to_signal(self) -> Signal:
        spec = self.rule.spec
        return Signal(rule_id=spec.id, title=spec.title, level=self.rule.level, category=spec.category,
                      techniques=list(self.rule.techniques), source=self.source,
                      line_numbers=sorted(set(self.lines) | set(self.tail)), key=self.key,
                      description=self._describe())

    def _describe(self) -> str:
        spec = self.rule.spec
        what = f"{self.count} matching line{'s' if self.count != 1 else ''}"
        if self.events != self.count:
            what += f" standing for {self.events} events"
        if spec.aggregate and spec.aggregate.distinct and self.distinct_values:
            what += f", {len(self.distinct_values)} distinct {spec.aggregate.distinct}"
        where = f" for {self.key_field}={self.key}" if self.key else ""
        shown = len(set(self.lines) | set(self.tail))
        capped = f" (line numbers capped at {shown})" if shown < self.count else ""
        return f"{what}{where}{capped}. {spec.description}".strip()


class _Dispatch:
    """The rules of one format, arranged so that an event meets only rules it could satisfy.

    Rules whose every alternative requires a field value (program=sudo, EventID=4625) are indexed
    by it. Rules that require one of some substrings in a field are screened together: one regex of
    all those substrings finds which ones occur, and only the rules needing them are tried. The
    rest are always tried.
    """

    def __init__(self, rules: list[Rule]) -> None:
        self.always: list[Rule] = []
        self.gated: dict[tuple[str, bool], dict[str, list[Rule]]] = {}
        screened: dict[tuple[str, bool], dict[str, list[Rule]]] = {}
        for rule in rules:
            lower = not rule.spec.case_sensitive
            if (gate := rule.gate) is not None:
                index = self.gated.setdefault((gate[0], lower), {})
                for value in gate[1]:
                    index.setdefault(value, []).append(rule)
            elif (literals := rule.literal_gates) is not None:
                for name, needles in literals.items():
                    by_needle = screened.setdefault((name, lower), {})
                    for needle in needles:
                        by_needle.setdefault(needle, []).append(rule)
            else:
                self.always.append(rule)
        self.screened = [(name, lower, *_screen(by_needle)) for (name, lower), by_needle in screened.items()]

    def candidates(self, view: EventView) -> list[Rule]:
        rules, text = self.always, view.text
        for (name, lower), index in self.gated.items():
            if hit := index.get(text(name, lower)):  # absent fields read as "" and hit nothing
                rules = rules + hit
        found: dict[Rule, None] | None = None
        for name, lower, screen, rules_for in self.screened:
            subject = text(name, lower)
            match = screen.search(subject)
            while match is not None:  # restart one past each hit: needles may overlap
                if found is None:
                    found = {}
                found.update(rules_for[match.group()])
                match = screen.search(subject, match.start() + 1)
        if found is None:
            return rules
        return rules + [r for r in found if r not in rules]


def _screen(by_needle: dict[str, list[Rule]]) -> tuple[re.Pattern[str], dict[str, dict[Rule, None]]]:
    """A regex finding, at a position, the longest needle starting there, and for each needle the
    rules it satisfies. Every needle that matches at a position is a prefix of the longest one
    there, so a needle's rules include those of its prefixes."""
    needles = sorted(by_needle, key=lambda n: (-len(n), n))
    regex = re.compile("|".join(map(re.escape, needles)))
    rules_for = {n: dict.fromkeys(r for p in needles if n.startswith(p) for r in by_needle[p]) for n in needles}
    return regex, rules_for


class Detector:
    """Stateful rule runner: feed it events in order with `scan`; it returns the signals they make."""

    def __init__(self, rules: Sequence[Rule] | None = None, *, max_keys_per_rule: int = MAX_KEYS_PER_RULE) -> None:
        self.rules = list(load_rules() if rules is None else rules)
        self._max_keys = max_keys_per_rule
        self._any_format = [r for r in self.rules if not r.formats]
        self._by_format: dict[str, _Dispatch] = {}
        self._states: dict[str, OrderedDict[tuple[str, str], _KeyState]] = {r.id: OrderedDict() for r in self.rules}
        self._clock: dict[str, float] = {}  # last known time per source, for events without ts

    def scan(self, events: Iterable[Event]) -> list[Signal]:
        """Signals for these events (and for bursts that began in earlier calls), by first line."""
        opened: dict[tuple[str, str, str], _Open] = {}
        finished: list[_Open] = []
        for event in events:
            t = self._time(event)
            view = EventView(event)
            for rule in self._dispatch(event.format).candidates(view):
                self._apply(rule, view, t, opened, finished)
        finished.extend(opened.values())
        signals = [o.to_signal() for o in finished]
        return sorted(signals, key=lambda s: (s.source, s.line_numbers[0] if s.line_numbers else 0, s.rule_id))

    # --- dispatch --------------------------------------------------------------------------

    def _dispatch(self, fmt: str) -> _Dispatch:
        dispatch = self._by_format.get(fmt)
        if dispatch is None:
            dispatch = _Dispatch([r for r in self.rules if fmt in r.formats] + self._any_format)
            self._by_format[fmt] = dispatch
        return dispatch

    def _time(self, event: Event) -> float:
        # Events without a timestamp inherit the last one seen in their source (lines are in order).
        if event.ts is not None:
            t = event.ts.timestamp()
            self._clock[event.source] = t
            return t
        return self._clock.get(event.source, 0.0)

    def _apply(self, rule: Rule, view: EventView, t: float, opened: dict, finished: list) -> None:
        if rule.followed_by is not None:
            self._apply_sequence(rule, view, t, opened, finished)
            return
        captures = rule.matches(view)
        if captures is None:
            return
        if rule.spec.aggregate is None:
            self._add_single(rule, view, t, captures, opened, finished)
        else:
            self._add_counted(rule, view, t, captures, opened, finished)

    # --- single-event rules -----------------------------------------------------------------

    def _add_single(self, rule: Rule, view: EventView, t: float, captures: dict, opened: dict,
                    finished: list) -> None:
        key_field, key = _key_value(view, captures, rule.key_fields)
        slot = (rule.id, view.event.source, key)
        current = opened.get(slot)
        if current is not None and t - current.last_t > rule.spec.merge_gap_s:
            finished.append(opened.pop(slot))  # a separate episode: do not merge across long gaps
            current = None
        if current is None:
            current = opened[slot] = _Open(rule, view.event.source, key_field, key, t, t)
        current.add(view.event.line_no, t)

    # --- threshold rules --------------------------------------------------------------------

    def _add_counted(self, rule: Rule, view: EventView, t: float, captures: dict, opened: dict,
                     finished: list) -> None:
        agg = rule.spec.aggregate
        key = _key_value(view, captures, (agg.group_by,))[1]
        if not key:
            return
        distinct = _distinct_value(view, captures, agg.distinct)
        if agg.distinct and distinct is None:
            return
        source = view.event.source
        state = self._state(rule, source, key)
        slot = (rule.id, source, key)
        hit = _Hit(t, view.event.line_no, distinct, _weight(view, captures))
        if state.burst_last_t is not None and t - state.burst_last_t <= agg.window_s:
            state.burst_last_t = t  # the burst goes on: extend (or reopen, in a later call) its signal
            self._open(slot, rule, source, key, t, opened).add(hit.line_no, t, distinct, hit.weight)
            return
        state.burst_last_t = None
        state.add(hit)
        state.trim(t - agg.window_s)
        if state.measure(agg.distinct is not None) >= agg.threshold:
            self._fire(state, slot, rule, source, key, opened)
            state.burst_last_t = t

    def _fire(self, state: _KeyState, slot: tuple, rule: Rule, source: str, key: str, opened: dict) -> None:
        signal = self._open(slot, rule, source, key, state.hits[0].t, opened)
        for hit in state.hits:
            signal.add(hit.line_no, hit.t, hit.distinct, hit.weight)
        state.clear()

    @staticmethod
    def _open(slot: tuple, rule: Rule, source: str, key: str, t: float, opened: dict) -> _Open:
        current = opened.get(slot)
        if current is None:
            current = opened[slot] = _Open(rule, source, rule.spec.aggregate.group_by, key, t, t)
        return current

    def _state(self, rule: Rule, source: str, key: str) -> _KeyState:
        states = self._states[rule.id]
        state = states.get((source, key))
        if state is None:
            state = states[(source, key)] = _KeyState()
            if len(states) > self._max_keys:
                states.popitem(last=False)
        else:
            states.move_to_end((source, key))
        return state

    # --- sequence rules ---------------------------------------------------------------------

    def _apply_sequence(self, rule: Rule, view: EventView, t: float, opened: dict, finished: list) -> None:
        agg = rule.spec.aggregate
        captures = rule.matches(view)
        if captures is not None:
            key = _key_value(view, captures, (agg.group_by,))[1]
            if key:
                state = self._state(rule, view.event.source, key)
                state.add(_Hit(t, view.event.line_no, _distinct_value(view, captures, agg.distinct),
                                _weight(view, captures)))
                state.trim(t - agg.window_s)
            return
        after = rule.followed_by.evaluate(view)
        if after is not None:
            self._close_sequence(rule, view, t, after, finished)

    def _close_sequence(self, rule: Rule, view: EventView, t: float, captures: dict, finished: list) -> None:
        agg = rule.spec.aggregate
        key = _key_value(view, captures, (agg.group_by,))[1]
        state = self._states[rule.id].get((view.event.source, key)) if key else None
        if state is None:
            return
        state.trim(t - rule.spec.followed_by.within_s)
        if state.measure(agg.distinct is not None) < agg.threshold:
            return
        signal = _Open(rule, view.event.source, agg.group_by, key, state.hits[0].t, t)
        for hit in state.hits:
            signal.add(hit.line_no, hit.t, hit.distinct, hit.weight)
        signal.add(view.event.line_no, t)
        state.clear()
        finished.append(signal)


def _key_value(view: EventView, captures: dict[str, str], names: Sequence[str]) -> tuple[str, str]:
    """(field, value) of the first present named field (captures win); ('', '') when none is."""
    for name in names:
        value = captures.get(name)
        if value is None:
            value = view.get(name)
        if value not in (None, "", "-"):
            return name, str(value)
    return "", ""


def _weight(view: EventView, captures: dict[str, str]) -> int:
    """How many events the line stands for: a `count` capture, else the parser's `repeat`, else 1."""
    raw = captures.get("count") or view.get("repeat")
    try:
        return min(max(int(raw), 1), MAX_LINE_WEIGHT) if raw is not None else 1
    except (TypeError, ValueError):
        return 1


def _distinct_value(view: EventView, captures: dict[str, str], name: str | None) -> str | None:
    if name is None:
        return None
    value = _key_value(view, captures, (name,))[1]
    return value or None
