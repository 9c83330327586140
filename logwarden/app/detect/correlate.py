"""Sigma correlation rules (v2) evaluated on a stream: event_count, value_count, value_sum,
value_avg, temporal and temporal_ordered, with group-by (and aliases), timespan and conditions.

Owns the per-group state that spans `scan` calls (the pipeline keeps one detector per source for
the run, the watcher feeds it batch after batch), bounded: hits older than the timespan are
dropped, a group keeps at most `MAX_HITS_PER_GROUP` hits, and each correlation at most
`max_groups` groups (least recently seen forgotten first).

Its state can be saved and restored (`dump`, `load`: plain JSON-able data), so a burst split by a
restart adds up as one read would; `prune` first forgets the groups whose hits and burst all lie
more than the timespan before the stream's latest time (they can no longer count).

Semantics, streaming: a counting correlation fires when its condition first holds over the hits
in the timespan; the firing carries every hit in the window, and the burst then goes on —
later matches within a timespan of the last one extend the same finding instead of re-firing
(an extension names the burst by its firing's first line, `burst_line`: a later window, batch or
run grows that finding's record rather than making another).
A temporal correlation fires once all (or the condition's number of) referenced rules were seen
in the window (for temporal_ordered: in the order they arrived, as a log is read); its state is
then cleared, and so is the state of the correlations whose findings it used (five failures then
a success is one finding; the next needs five failures again). A line that stands for
several events (the parser's `repeat`: "message repeated 5 times", "PAM 5 more authentication
failures") counts that many in event_count. Firings feed correlations that reference this one.
Knows nothing about signals or rule files.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_HITS_PER_GROUP = 5_000
MAX_GROUPS = 20_000
MAX_LINE_WEIGHT = 10_000  # one line never counts for more events than this

Lookup = Callable[[str], Any]


@dataclass(slots=True)
class Hit:
    """A referenced rule matched (an event, or a correlation's firing) at time `t`."""

    ref: str  # the rule key it came from
    source: str
    t: float
    lines: list[int]
    lookup: Lookup  # field value by name (the event's fields, or a firing's group values)
    weight: int = 1
    origin: tuple | None = None  # a firing's (correlation key, state key): what consuming it resets


@dataclass(slots=True)
class Firing:
    """A correlation's condition held (or a burst that already fired goes on: `extension`)."""

    source: str
    group: dict[str, str]
    first_t: float
    last_t: float
    lines: list[int]
    events: int
    distinct: set[str] = field(default_factory=set)
    extension: bool = False
    burst_line: int = 0  # the first line of the burst's firing: which finding an extension grows
    burst_lines: int = 0  # the lines of the burst so far, its firing's included
    state_key: tuple = ()  # this correlation's group state that fired
    consumed: list[tuple] = field(default_factory=list)  # origins of the correlation firings it used


@dataclass(slots=True)
class _CountState:
    hits: deque = field(default_factory=deque)  # (t, lines, weight, value, value as a number)
    total: int = 0
    values: Counter = field(default_factory=Counter)
    value_sum: float = 0.0
    burst_last_t: float | None = None
    burst_values: set[str] = field(default_factory=set)
    burst_line: int = 0  # the first line of the firing the burst began with
    burst_lines: int = 0  # and how many lines it has had so far

    def add(self, t: float, lines: list[int], weight: int, value: Any, number: float = 0.0) -> None:
        if len(self.hits) >= MAX_HITS_PER_GROUP:
            self._drop()
        self.hits.append((t, lines, weight, value, number))
        self.total += weight
        self.value_sum += number
        if value is not None:
            self.values[value] += 1

    def trim(self, oldest_t: float) -> None:
        while self.hits and self.hits[0][0] < oldest_t:
            self._drop()

    def clear(self) -> None:
        self.hits.clear()
        self.values.clear()
        self.total, self.value_sum = 0, 0.0

    def _drop(self) -> None:
        _t, _lines, weight, value, number = self.hits.popleft()
        self.total -= weight
        self.value_sum -= number
        if value is not None:
            self.values[value] -= 1
            if self.values[value] <= 0:
                del self.values[value]


@dataclass(slots=True)
class _TemporalState:
    seen: list[deque]  # per referenced rule: (t, lines, arrival number, origin)

    def trim(self, oldest_t: float) -> None:
        for hits in self.seen:
            while hits and hits[0][0] < oldest_t:
                hits.popleft()

    def clear(self) -> None:
        for hits in self.seen:
            hits.clear()


def _as_number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


class Correlation:
    """One compiled correlation rule and its state."""

    def __init__(self, spec: dict, ref_keys: list[str], *, max_groups: int = MAX_GROUPS) -> None:
        self.kind: str = spec["type"]
        self.refs = ref_keys  # rule keys, in the rule's order
        self._ref_index = {key: i for i, key in enumerate(ref_keys)}
        self.group_by: list[str] = spec["group_by"]
        self.timespan: float = float(spec["timespan_s"])
        self.value_field: str | None = spec.get("field")
        self._test = _OPS[spec.get("op", ">=")]
        self._count = spec.get("count", len(ref_keys))
        self._expression = spec.get("expression")
        # group-by name → (referenced rule key → the field to read there)
        references = spec.get("references", {})
        self._field_of = {alias: {references.get(ref, ref): name for ref, name in mapping.items()}
                          for alias, mapping in spec.get("aliases", {}).items()}
        self._max_groups = max_groups
        self._arrivals = 0  # hits seen, to order them as they came
        self.states: OrderedDict[tuple, Any] = OrderedDict()

    @property
    def counting(self) -> bool:
        return self.kind in ("event_count", "value_count", "value_sum", "value_avg")

    def feed(self, hit: Hit) -> Firing | None:
        group = self._group(hit)
        if group is None:
            return None
        if self.counting:
            return self._feed_count(hit, group)
        return self._feed_temporal(hit, group)

    def _group(self, hit: Hit) -> dict[str, str] | None:
        values = {}
        for name in self.group_by:
            value = hit.lookup(self._field_of.get(name, {}).get(hit.ref, name))
            if value in (None, "", "-"):
                return None
            values[name] = str(value)
        return values

    def _state(self, key: tuple, factory: Callable[[], Any]) -> Any:
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = factory()
            if len(self.states) > self._max_groups:
                self.states.popitem(last=False)
        else:
            self.states.move_to_end(key)
        return state

    # --- counting -------------------------------------------------------------------------

    def _feed_count(self, hit: Hit, group: dict[str, str]) -> Firing | None:
        value = None
        if self.kind != "event_count":
            value = hit.lookup(self.value_field) if self.value_field else None
            if value in (None, ""):
                return None
            value = str(value)
        key = (hit.source, *group.values())
        state: _CountState = self._state(key, _CountState)
        if state.burst_last_t is not None and hit.t - state.burst_last_t <= self.timespan:
            state.burst_last_t = hit.t  # the burst goes on: the finding grows
            state.burst_lines += len(hit.lines)
            if value is not None and len(state.burst_values) < 1000:
                state.burst_values.add(value)
            return Firing(hit.source, group, hit.t, hit.t, list(hit.lines), hit.weight,
                          {value} if value is not None else set(), extension=True, burst_line=state.burst_line,
                          burst_lines=state.burst_lines, state_key=key)
        state.burst_last_t = None
        # (a number only where the rule sums: converting every user name raised and caught an error)
        state.add(hit.t, hit.lines, hit.weight, value,
                  _as_number(value) if self.kind in ("value_sum", "value_avg") else 0.0)
        state.trim(hit.t - self.timespan)
        if not self._test(self._measure(state), self._count):
            return None
        lines = [n for _t, hit_lines, *_rest in state.hits for n in hit_lines]
        firing = Firing(hit.source, group, state.hits[0][0], hit.t, lines, state.total, set(state.values),
                        burst_line=min(lines, default=0), burst_lines=len(lines), state_key=key)
        state.clear()
        state.burst_last_t = hit.t
        state.burst_values = set(firing.distinct)
        state.burst_line, state.burst_lines = firing.burst_line, firing.burst_lines
        return firing

    def _measure(self, state: _CountState) -> float:
        if self.kind == "event_count":
            return state.total
        if self.kind == "value_count":
            return len(state.values)
        if self.kind == "value_sum":
            return state.value_sum
        return state.value_sum / len(state.hits) if state.hits else 0.0  # value_avg

    # --- temporal -------------------------------------------------------------------------

    def _feed_temporal(self, hit: Hit, group: dict[str, str]) -> Firing | None:
        index = self._ref_index.get(hit.ref)
        if index is None:
            return None
        key = (hit.source, *group.values())
        state: _TemporalState = self._state(key, lambda: _TemporalState([deque() for _ in self.refs]))
        if self.kind == "temporal_ordered" and index > 0:
            state.trim(hit.t - self.timespan)
            if not state.seen[index - 1]:
                return None  # nothing it could follow: it cannot be part of an ordered sequence
        hits = state.seen[index]
        if len(hits) >= MAX_HITS_PER_GROUP:
            hits.popleft()
        self._arrivals += 1
        hits.append((hit.t, hit.lines, self._arrivals, hit.origin))
        state.trim(hit.t - self.timespan)
        if not self._temporal_holds(state):
            return None
        window = [h for hits in state.seen for h in hits]
        lines = sorted({n for _t, hit_lines, _n, _o in window for n in hit_lines})
        consumed = list(dict.fromkeys(h[3] for h in window if h[3] is not None))
        firing = Firing(hit.source, group, min(h[0] for h in window), hit.t, lines, len(window), state_key=key,
                        consumed=consumed)
        state.clear()
        return firing

    def reset(self, key: tuple) -> None:
        """Forget a group's state: a correlation that used this one's finding consumed it."""
        self.states.pop(key, None)

    # --- saved state ------------------------------------------------------------------------

    def latest(self) -> float:
        """The latest time any group of this correlation saw (0.0 when none)."""
        return max((_last_t(state) for state in self.states.values()), default=0.0)

    def prune(self, now: float) -> None:
        """Forget what can no longer count at `now`: hits older than the timespan, and groups left
        with nothing (no hit, no burst still going on)."""
        oldest = now - self.timespan
        for key in [key for key, state in self.states.items() if _last_t(state) < oldest]:
            del self.states[key]
        for state in self.states.values():
            state.trim(oldest)

    def dump(self) -> dict:
        """The groups' state as JSON-able data (least recently seen first, as kept)."""
        return {"arrivals": self._arrivals,
                "groups": [[list(key), _dump_state(state)] for key, state in self.states.items()]}

    def load(self, data: dict) -> None:
        """Take back what `dump` gave (of a correlation with the same spec)."""
        self._arrivals = int(data["arrivals"])
        self.states = OrderedDict((tuple(key), self._load_state(state)) for key, state in data["groups"])

    def _load_state(self, data: dict) -> Any:
        if self.counting:
            state = _CountState(burst_last_t=data["burst_last_t"], burst_values=set(data["burst_values"]),
                                burst_line=data["burst_line"], burst_lines=data["burst_lines"])
            for t, lines, weight, value, number in data["hits"]:
                state.add(t, lines, weight, value, number)
            return state
        return _TemporalState([deque((t, lines, n, (origin[0], tuple(origin[1])) if origin else None)
                                     for t, lines, n, origin in hits) for hits in data["seen"]])

    def _temporal_holds(self, state: _TemporalState) -> bool:
        seen = {self.refs[i] for i, hits in enumerate(state.seen) if hits}
        if self._expression is not None:
            return _evaluate(self._expression, seen)
        if self.kind == "temporal_ordered":
            return _in_order(state.seen)
        return self._test(len(seen), self._count)


def _last_t(state: _CountState | _TemporalState) -> float:
    """When a group last saw a hit (or its burst went on)."""
    if isinstance(state, _CountState):
        return max(state.hits[-1][0] if state.hits else 0.0, state.burst_last_t or 0.0)
    return max((hits[-1][0] for hits in state.seen if hits), default=0.0)


def _dump_state(state: _CountState | _TemporalState) -> dict:
    if isinstance(state, _CountState):
        return {"hits": [list(hit) for hit in state.hits], "burst_last_t": state.burst_last_t,
                "burst_values": sorted(state.burst_values), "burst_line": state.burst_line,
                "burst_lines": state.burst_lines}
    return {"seen": [[[t, lines, n, [origin[0], list(origin[1])] if origin else None]
                      for t, lines, n, origin in hits] for hits in state.seen]}


def _in_order(seen: list[deque]) -> bool:
    """Is there a hit of every referenced rule, each arriving before the next rule's? (Arrival
    order: a log is read in order, and lines often share a timestamp.)"""
    latest = float("inf")
    for hits in reversed(seen):
        earlier = [n for _t, _lines, n, _origin in hits if n < latest]
        if not earlier:
            return False
        latest = max(earlier)
    return True


def _evaluate(node: tuple, seen: set[str]) -> bool:
    op = node[0]
    if op == "rule":
        return node[1] in seen
    if op == "not":
        return not _evaluate(node[1], seen)
    results = (_evaluate(child, seen) for child in node[1])
    return all(results) if op == "and" else any(results)


def line_weight(value: Any) -> int:
    """How many events a line stands for (the parser's `repeat`), between 1 and MAX_LINE_WEIGHT."""
    try:
        return min(max(int(value), 1), MAX_LINE_WEIGHT) if value is not None else 1
    except (TypeError, ValueError):
        return 1
