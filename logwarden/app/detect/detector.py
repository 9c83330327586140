"""`Detector`: runs a rule set over events and emits `Signal`s with their evidence lines.

Per event: its logsource route (cached per kind of event) picks a `Dispatch` — the rules of that
logsource, indexed by their gates: one dictionary lookup per field for exact values, one
RE2::Set scan per field for literals — so only rules whose every gate clause
holds are evaluated; rules without a usable literal ("always" rules) run on every event of their
logsource. Matches become signals, and feed the correlations that reference their rule.

Owns merging: one Signal per rule + source + key per `scan` call ("42 SQLi attempts from
1.2.3.4", not 42 records), the key being the first present of the rule's key fields
(`logwarden: {key: [...]}`, default src_ip then host) or a correlation's group-by values;
line numbers are capped (first and last kept) with the true count in the description. State that
spans `scan` calls (correlations, the clock) is bounded (see `correlate.py`). Knows nothing about
rule files (`pack.py`) or how events are parsed.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from logwarden.app.detect.correlate import MAX_GROUPS, Correlation, Firing, Hit, line_weight
from logwarden.app.detect.logsource import Route, route_of
from logwarden.app.detect.pack import CompiledRule, RuleSet
from logwarden.app.detect.regex import LiteralSet
from logwarden.app.detect.view import ATTRIBUTE_FIELDS, DERIVED_FIELDS, EventView, lower_text
from logwarden.app.models import Event, Signal

MAX_LINE_NUMBERS = 500  # per signal; the first and last halves are kept, the count stays true
_SAMPLE_MASK = 63  # clause hits are counted on 1 event in 64 ...
_RELEARN_MASK = 4095  # ... and primaries re-chosen every 4,096 screened events
_MEMO_MAX = 8192  # screened value tuples remembered per dispatch
_MEMO_PROBE = 4096  # misses after which a dispatch whose values hardly repeat stops remembering
_SEP = "\x1e"  # joins an event's screened values (a record separator: never in a literal)
_STR_ONLY = {str}


def _screen_text(value: object, slot: int, lists: list) -> str:
    """A non-string value as the screen reads it; a list's lowered elements are also kept in `lists`."""
    text = lower_text(value)
    if text is None:
        return ""
    if type(text) is str:
        return text
    lists.append((slot, text))
    return "\n".join(text)


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

    def add(self, line_no: int, t: float, weight: int = 1) -> None:
        self.count += 1
        self.events += weight
        self.last_t = t
        if len(self.lines) < MAX_LINE_NUMBERS // 2:
            self.lines.append(line_no)
        else:
            self.tail.append(line_no)

    def add_firing(self, firing: Firing) -> None:
        for line_no in firing.lines:
            self.add(line_no, firing.last_t, 0)
        self.events += firing.events
        if len(self.distinct) < 1000:
            self.distinct |= firing.distinct

    def to_signal(self) -> Signal:
        rule = self.rule
        return Signal(rule_id=rule.id, title=rule.title, level=rule.level, category=rule.category,
                      techniques=list(rule.techniques), source=self.source,
                      line_numbers=sorted(set(self.lines) | set(self.tail)), key=self.key,
                      description=self._describe(), references=list(rule.ir.references),
                      falsepositives=list(rule.ir.falsepositives))

    def _describe(self) -> str:
        rule = self.rule
        what = f"{self.count} matching line{'s' if self.count != 1 else ''}"
        if self.events != self.count:
            what += f" standing for {self.events} events"
        value_field = (rule.correlation or {}).get("field")
        if value_field and self.distinct:
            what += f", {len(self.distinct)} distinct {value_field}"
        where = f" for {self.key_field}={self.key}" if self.key else ""
        shown = len(set(self.lines) | set(self.tail))
        capped = f" (line numbers capped at {shown})" if shown < self.count else ""
        return f"{what}{where}{capped}. {rule.description}".strip()


class Dispatch:
    """The rules one kind of event can meet, indexed by their gates."""

    def __init__(self, rules: Sequence[CompiledRule], route: Route) -> None:
        self.aliases = route.alias_map() or None
        self.always: list[CompiledRule] = [r for r in rules if not r.clauses]
        # A rule is tried when all its clauses hold; it is looked up by one of them, its "primary":
        # first the statically most selective one, then the one seen least often (see `_learn`).
        # Rules share clauses (35 network rules test Initiated=true): each distinct clause is one id.
        self._primary: dict[int, list[tuple[CompiledRule, tuple[int, ...]]]] = {}
        self._clauses_of: list[tuple[CompiledRule, tuple[int, ...]]] = []
        self._seen: Counter[int] = Counter()
        self._events = 0
        self._memo: dict[tuple, frozenset[int]] | None = {}
        self._memo_misses = self._events_screened = 0
        clause_ids: dict[frozenset, int] = {}
        for rule in rules:
            if rule.clauses:
                ids = tuple(clause_ids.setdefault(clause, len(clause_ids)) for clause in rule.clauses)
                self._primary.setdefault(ids[0], []).append((rule, ids[1:]))
                if len(ids) > 1:
                    self._clauses_of.append((rule, ids))
        eq: dict[str | None, dict[str, list[int]]] = {}
        sub: dict[str | None, dict[str, list[int]]] = {}
        for clause, clause_id in clause_ids.items():
            for kind, name, text in clause:
                (eq if kind == "eq" else sub).setdefault(name, {}).setdefault(text, []).append(clause_id)
        # Every screened field of an event is read, lowered and scanned at once: the values joined by
        # \x1e, lowered in one call, split back; equality atoms are one dictionary lookup per field,
        # literals one RE2::Set pass over the joined text, each literal found then checked in the
        # fields that name it. Aliases, attributes, derived and dotted names go through the view.
        keywords = sub.pop(None, {})
        self._keywords = _literal_set(keywords) if keywords else None
        names = sorted(set(eq) | set(sub), key=lambda n: (not self._direct(n), n))
        self._direct_names = [n for n in names if self._direct(n)]
        self._blanks = [""] * len(self._direct_names)
        self._other_names = [n for n in names if not self._direct(n)]
        self._other_getters = [self._getter(n) for n in self._other_names]
        slot = {name: i for i, name in enumerate(names)}
        self._eq = [(slot[n], {t: tuple(ids) for t, ids in index.items()}) for n, index in eq.items()]
        self._eq_of = dict(self._eq)
        by_literal: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for name, index in sub.items():
            for literal, ids in index.items():
                by_literal.setdefault(literal, []).append((slot[name], tuple(ids)))
        literals = sorted(by_literal)
        self._literals = LiteralSet(literals) if literals else None
        self._places = [(literal, by_literal[literal]) for literal in literals]

    def _getter(self, name: str) -> Callable[[EventView], object]:
        """How the screen reads a field that is not in `Event.fields` by that name: an event
        attribute (message, program …) straight, as `EventView.get` would; anything else through it."""
        if name in ATTRIBUTE_FIELDS and not (self.aliases and name in self.aliases):
            def attribute(view: EventView) -> object:
                fields = view.fields
                return fields[name] if name in fields else getattr(view.event, name)
            return attribute
        return lambda view: view.get(name)

    def _direct(self, name: str | None) -> bool:
        """Is the field read straight from `Event.fields`?"""
        return (name is not None and not (self.aliases and name in self.aliases) and name not in ATTRIBUTE_FIELDS
                and name not in DERIVED_FIELDS and "." not in name)

    def candidates(self, view: EventView) -> list[CompiledRule]:
        hits: set[int] = set()
        if self._eq or self._literals is not None:
            self._screen_memo(view, hits)
        if self._keywords is not None:  # screened on the raw line (a JSON event: its record) holding every value
            literals, ids = self._keywords
            for index in literals.found(view.event.raw.lower()):
                hits.update(ids[index])
        if not hits:
            return self.always
        self._events += 1
        if self._clauses_of and not self._events & _SAMPLE_MASK:
            self._learn(hits)
        chosen = list(self.always)
        primary = self._primary
        for clause_id in hits:
            for rule, others in primary.get(clause_id, ()):
                if not others or all(other in hits for other in others):
                    chosen.append(rule)
        return chosen

    def _screen_memo(self, view: EventView, hits: set[int]) -> None:
        """`_screen`, remembered by the screened values: the same values always hit the same clauses,
        and logs repeat (cron, systemd, a scanner's requests). Bounded; switched off for a route
        whose values hardly repeat (command lines with GUIDs), where the lookups would only cost."""
        values = list(map(view.fields.get, self._direct_names, self._blanks))  # absent: ""
        if self._other_names:
            values += [get(view) for get in self._other_getters]
        memo = self._memo
        self._events_screened += 1
        if memo is None:
            self._screen(values, hits)
            return
        try:
            key = tuple(values)
            found = memo.get(key)
        except TypeError:  # a list value: not hashable, screened as it is
            self._screen(values, hits)
            return
        if found is None:
            self._screen(values, hits)
            self._memo_misses += 1
            if len(memo) >= _MEMO_MAX:
                memo.clear()
            memo[key] = frozenset(hits)
            if self._memo_misses == _MEMO_PROBE and self._events_screened < _MEMO_PROBE * 1.1:
                self._memo = None  # ≥ 90 % of the values so far were new: not worth remembering
        else:
            hits.update(found)

    def _screen(self, values: list, hits: set[int]) -> None:
        lists: list[tuple[int, tuple[str, ...]]] = []
        if set(map(type, values)) != _STR_ONLY:  # numbers, lists, None from the view: rare, so a loop
            for i, value in enumerate(values):
                if type(value) is not str:
                    values[i] = _screen_text(value, i, lists)
        joined = _SEP.join(values)
        if joined.count(_SEP) != len(values) - 1:  # a value holding the separator must not shift the others
            joined = _SEP.join(v.replace(_SEP, " ") for v in values)
        lowered = joined.lower()
        texts = lowered.split(_SEP)
        for i, index in self._eq:
            found = index.get(texts[i])
            if found:
                hits.update(found)
        for i, items in lists:  # a list meets an equality when one of its elements does
            index = self._eq_of.get(i)
            if index is not None:
                for item in items:
                    if item in index:
                        hits.update(index[item])
        if self._literals is not None:
            for found in self._literals.found(lowered):
                literal, places = self._places[found]
                for i, ids in places:
                    if literal in texts[i]:
                        hits.update(ids)

    def _learn(self, hits: set[int]) -> None:
        """Count clause hits on a sample of events; now and then make each rule's rarest clause its primary."""
        self._seen.update(hits)
        if self._events & _RELEARN_MASK:
            return
        seen = self._seen
        primary: dict[int, list[tuple[CompiledRule, tuple[int, ...]]]] = {}
        for clause_id, entries in self._primary.items():  # rules with one clause stay where they are
            kept = [(rule, others) for rule, others in entries if not others]
            if kept:
                primary[clause_id] = kept
        for rule, ids in self._clauses_of:
            rarest = min(ids, key=seen.__getitem__)
            primary.setdefault(rarest, []).append((rule, tuple(i for i in ids if i != rarest)))
        self._primary = primary


def _literal_set(index: dict[str, list[int]]) -> tuple[LiteralSet, list[tuple[int, ...]]]:
    literals = sorted(index)
    return LiteralSet(literals), [tuple(index[literal]) for literal in literals]


class Detector:
    """Stateful rule runner: feed it events in order with `scan`; it returns the signals they make."""

    def __init__(self, rules: RuleSet | Iterable[CompiledRule] | None = None, *,
                 max_keys_per_rule: int = MAX_GROUPS) -> None:
        if rules is None:
            from logwarden.app.detect import shipped_ruleset

            rules = shipped_ruleset()
        self.rules = rules if isinstance(rules, RuleSet) else RuleSet(rules=_with_feeders(list(rules)))
        active = self.rules.rules
        self._detections = [r for r in active if r.correlation is None]
        self._correlations = {r.key: Correlation(r.correlation, r.correlation["rules"], max_groups=max_keys_per_rule)
                              for r in active if r.correlation is not None}
        self._dispatch: dict[Route, Dispatch] = self.rules.dispatches  # built once per rule set and route
        self._clock: dict[str, float] = {}  # last known time per source, for events without ts

    @property
    def _states(self) -> dict[str, object]:
        """Correlation state per rule (bounded: see correlate.py)."""
        return {key: corr.states for key, corr in self._correlations.items()}

    def scan(self, events: Iterable[Event]) -> list[Signal]:
        """Signals for these events (and for bursts that began in earlier calls), by first line."""
        opened: dict[tuple[str, str, str], _Open] = {}
        finished: list[_Open] = []
        dispatches = self._dispatch
        for event in events:
            t = self._time(event)
            route = route_of(event)
            dispatch = dispatches.get(route)
            if dispatch is None:
                dispatch = dispatches[route] = self._build(route)
            view = EventView(event, dispatch.aliases)
            for rule in dispatch.candidates(view):
                if rule.match(view):
                    self._matched(rule, view, t, opened, finished)
        finished.extend(opened.values())
        signals = [o.to_signal() for o in finished]
        return sorted(signals, key=lambda s: (s.source, s.line_numbers[0] if s.line_numbers else 0, s.rule_id))

    def _build(self, route: Route) -> Dispatch:
        return Dispatch([r for r in self._detections if route.matches(*r.logsource)], route)

    def _time(self, event: Event) -> float:
        # Events without a timestamp inherit the last one seen in their source (lines are in order).
        if event.ts is not None:
            t = event.ts.timestamp()
            self._clock[event.source] = t
            return t
        return self._clock.get(event.source, 0.0)

    def _matched(self, rule: CompiledRule, view: EventView, t: float, opened: dict, finished: list) -> None:
        if rule.emits:
            self._add_single(rule, view, t, opened, finished)
        if rule.consumers:
            event = view.event
            hit = Hit(rule.key, event.source, t, [event.line_no], view.get, line_weight(view.get("repeat")))
            self._feed(rule.consumers, hit, opened, finished)

    def _add_single(self, rule: CompiledRule, view: EventView, t: float, opened: dict, finished: list) -> None:
        key_field, key = _key_value(view, rule.key_fields)
        slot = (rule.key, view.event.source, key)
        current = opened.get(slot)
        if current is not None and t - current.last_t > rule.merge_gap_s:
            finished.append(opened.pop(slot))  # a separate episode: do not merge across long gaps
            current = None
        if current is None:
            current = opened[slot] = _Open(rule, view.event.source, key_field, key, t, t)
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
