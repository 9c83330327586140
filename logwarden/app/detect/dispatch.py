"""`Dispatch`: which of a logsource's rules one event can match, and their answers, remembered.

Rules are indexed by their gate clauses (`compile.gate_clauses`): each screened field maps its value
to the clause ids it satisfies (one dictionary lookup for exact values, one RE2::Set pass for
literals); only rules whose every clause holds are tried; rules without a usable literal ("always"
rules) are tried on every event. Logs repeat their images, DLLs, users and paths, so each step is
remembered: a field's answer by its value, the rules to try by the hit pattern, a rule's answer by
the values it reads. Every memo is bounded and switches itself off where its keys hardly repeat
(GUIDs, hashes, random temp names), so a log of unique values costs about what it would without.
Knows nothing about signals, correlations or how events are parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from logwarden.app.detect.logsource import Route
from logwarden.app.detect.pack import CompiledRule
from logwarden.app.detect.regex import shared_literal_set
from logwarden.app.detect.view import ATTRIBUTE_FIELDS, DERIVED_FIELDS, EventView, lower_text, rendered

_MEMO_MAX = 8192  # values remembered per screened field, hit patterns per dispatch
_RESULTS_MAX = 1024  # value tuples remembered per rule and dispatch
_ANSWERS_MAX = 256  # value tuples remembered per hit pattern (at most _MEMO_MAX patterns per dispatch)
_MEMO_PROBE = 1024  # misses after which a memo whose keys hardly repeat is switched off
_KEY_TYPES = frozenset((str, int, type(None), tuple))  # values that key a rule's result (bool, float: 1 == True == 1.0)
_NONE: frozenset[int] = frozenset()


class _Memo:
    """A bounded cache of a pure function's results that switches itself off when its keys hardly
    repeat (command lines with GUIDs, hashes), where the lookups would only cost."""

    __slots__ = ("table", "known", "size", "probe", "lookups", "misses")

    def __init__(self, size: int = _MEMO_MAX) -> None:
        self.table: dict | None = {}
        self.known: dict = self.table  # what was remembered (empty once switched off): for inline lookups
        self.size = size
        self.probe = min(size, _MEMO_PROBE)
        self.lookups = self.misses = 0

    def store(self, key: object, value: object) -> None:
        table = self.table
        if table is None:
            return
        self.misses += 1
        if len(table) >= self.size:
            table.clear()
        table[key] = value
        if self.misses == self.probe and self.lookups < self.probe * 1.1:
            self.table, self.known = None, {}  # ≥ 90 % of the keys so far were new

    def recall(self, key: object, compute: Callable[[Any], Any], argument: object) -> Any:
        """`compute(argument)`, remembered by `key` (which must decide it)."""
        self.lookups += 1
        found = self.known.get(key)
        if found is None:
            found = compute(argument)
            self.store(key, found)
        return found


class _Trial:
    """A candidate rule as a dispatch tries it: its matcher, remembered by the values it reads
    (a rule's answer depends on nothing else, and logs repeat their images, DLLs and paths)."""

    __slots__ = ("rule", "reads", "direct", "memo")

    def __init__(self, rule: CompiledRule, is_direct: Callable[[str], bool]) -> None:
        self.rule = rule
        self.reads = rule.reads
        self.memo = _Memo(_RESULTS_MAX) if self.reads else None  # a keyword rule reads the whole event
        # keyed by the raw values when every field is read straight from `Event.fields` (they
        # determine what the view makes of them), else by what the view reads
        self.direct = bool(self.reads) and all(map(is_direct, self.reads))

    def holds(self, view: EventView) -> bool:
        memo = self.memo
        if memo is None or memo.table is None:
            return self.rule.match(view)
        key = tuple(map(view.fields.get if self.direct else view.get, self.reads))
        if not _KEY_TYPES.issuperset(map(type, key)):
            return self.rule.match(view)
        return memo.recall(key, self.rule.match, view)


class _Choice:
    """The rules to try for one pattern of gate hits, and the fields their answers depend on (None
    when some rule reads more than plain fields: a keyword, an alias, a derived field)."""

    __slots__ = ("trials", "reads", "memo")

    def __init__(self, trials: list[_Trial]) -> None:
        self.trials = trials
        self.reads = (tuple(sorted(set().union(*(t.reads for t in trials))))
                      if trials and all(t.direct for t in trials) else None)
        self.memo = _Memo(_ANSWERS_MAX) if self.reads is not None else None

    def matches(self, view: EventView) -> list[CompiledRule]:
        """The rules among the trials that this event matches: remembered by the values they read
        (together those decide every answer), else each rule by its own values (`_Trial.holds`)."""
        memo = self.memo
        if memo is not None and memo.table is not None:
            values = tuple(map(view.fields.get, self.reads))
            if _KEY_TYPES.issuperset(map(type, values)):
                return memo.recall(values, self._try, view)
        return self._try(view)

    def _try(self, view: EventView) -> list[CompiledRule]:
        return [trial.rule for trial in self.trials if trial.holds(view)]


class _Field:
    """One screened field of a dispatch: which gate clauses its (lowercase) text satisfies, by one
    dictionary lookup for exact values and one RE2::Set pass for literals; remembered per value."""

    __slots__ = ("name", "eq", "literals", "ids", "memo")

    def __init__(self, name: str | None, eq: dict[str, list[int]], sub: dict[str, list[int]], *,
                 caseless: bool = False) -> None:
        self.name = name
        self.eq = {text: frozenset(ids) for text, ids in eq.items()}
        literals = sorted(sub)
        self.literals = shared_literal_set(tuple(literals), caseless=caseless) if literals else None
        self.ids = [frozenset(sub[literal]) for literal in literals]
        self.memo = _Memo()

    def clauses(self, value: object) -> frozenset[int]:
        """The clause ids this value satisfies (`_NONE` for none). Remembered by the value, or by its
        lowercase text when it is a number (the answer depends on that text alone)."""
        if type(value) is not str:
            if type(value) is not int:
                return self._other(value)
            value = str(value)
        memo = self.memo
        memo.lookups += 1
        found = memo.known.get(value)
        return self.learn(value) if found is None else found

    def learn(self, value: str) -> frozenset[int]:
        """`clauses` of a text value not remembered yet."""
        found = self._scan(value.lower())
        self.memo.store(value, found)
        return found

    def _scan(self, text: str) -> frozenset[int]:
        if "%%" in text:  # a message code: screened in both forms, as the view shows it (`with_message_text`)
            return self._scan_one(text) | self._scan_one(rendered(text).lower())
        return self._scan_one(text)

    def _scan_one(self, text: str) -> frozenset[int]:
        found = self.eq.get(text, _NONE) if self.eq else _NONE  # (keywords: no equalities, no hashing of a long text)
        if self.literals is not None:
            hits = self.literals.found(text)
            if hits:
                ids = self.ids
                found = found.union(*[ids[i] for i in hits])
        return found

    def _other(self, value: object) -> frozenset[int]:
        """A number, a list (it meets an equality when one element does) or None from the view."""
        text = lower_text(value)
        if text is None:
            return _NONE
        if type(text) is str:
            return self._scan(text)
        found = self._scan("\n".join(text))
        equal = [self.eq[item] for item in text if item in self.eq]
        return found.union(*equal) if equal else found


class Dispatch:
    """The rules one kind of event can meet, indexed by their gates.

    A rule is tried when all its gate clauses hold. Each screened field of an event maps its value to
    the clause ids it satisfies (`_Field`, remembered per value); the union of those answers maps to
    the rules to try (remembered too: events with new values but the same answers, as most are, cost
    one lookup per present field and one for the union); each tried rule's answer is remembered by
    the values it reads (`_Trial`)."""

    def __init__(self, rules: Sequence[CompiledRule], route: Route) -> None:
        self.aliases = route.alias_map() or None
        self.always = [_Trial(r, self._is_direct) for r in rules if not r.clauses]
        # Rules share clauses (35 network rules test Initiated=true): each distinct clause is one id.
        # A rule is looked up by its first clause (the most selective, see `gate_clauses`).
        self._primary: dict[int, list[tuple[_Trial, tuple[int, ...]]]] = {}
        clause_ids: dict[frozenset, int] = {}
        for rule in rules:
            if rule.clauses:
                ids = tuple(clause_ids.setdefault(clause, len(clause_ids)) for clause in rule.clauses)
                self._primary.setdefault(ids[0], []).append((_Trial(rule, self._is_direct), ids[1:]))
        eq: dict[str | None, dict[str, list[int]]] = {}
        sub: dict[str | None, dict[str, list[int]]] = {}
        for clause, clause_id in clause_ids.items():
            for kind, name, text in clause:
                (eq if kind == "eq" else sub).setdefault(name, {}).setdefault(text, []).append(clause_id)
        # Keywords are screened on the raw line (a JSON event: its record, holding every value), in
        # any case: lowering a Windows record first cost as much as the screen (BENCHMARKS.md).
        keywords = sub.pop(None, {})
        self._keywords = _Field(None, {}, keywords, caseless=True) if keywords else None
        fields = [_Field(name, eq.get(name, {}), sub.get(name, {})) for name in set(eq) | set(sub)]
        # Fields present in `Event.fields` under their name are screened straight from there (an
        # absent field satisfies no atom: every atom needs a value); aliases, attributes, derived
        # and dotted names through the view.
        self._direct = {f.name: f for f in fields if self._is_direct(f.name)}
        self._spaced_names = frozenset(name for name in self._direct if " " in name)
        self._other = [(f, self._getter(f.name)) for f in fields if not self._is_direct(f.name)]
        self._chosen = _Memo()
        self._by_answers = _Memo()

    def _getter(self, name: str) -> Callable[[EventView], object]:
        """How the screen reads a field that is not in `Event.fields` by that name: an event
        attribute (message, program …) straight, as `EventView.get` would; anything else through it."""
        if name in ATTRIBUTE_FIELDS and not (self.aliases and name in self.aliases):
            def attribute(view: EventView) -> object:
                fields = view.fields
                return fields[name] if name in fields else getattr(view.event, name)
            return attribute
        return lambda view: view.get(name)

    def _is_direct(self, name: str | None) -> bool:
        """Is the field read straight from `Event.fields`?"""
        return (name is not None and not (self.aliases and name in self.aliases) and name not in ATTRIBUTE_FIELDS
                and name not in DERIVED_FIELDS and "." not in name)

    def matches(self, view: EventView) -> Sequence[CompiledRule]:
        """The rules this event matches."""
        choice = self.candidates(view)
        return choice.matches(view) if choice.trials else ()  # most events pass no gate

    def candidates(self, view: EventView) -> _Choice:
        """The rules that the gate clauses this event satisfies let through."""
        fields = view.fields
        direct = self._direct
        answers = []
        spaced = False
        for name, value in fields.items():
            field = direct.get(name)
            if field is None:
                if " " in name:
                    spaced = True
                continue
            if type(value) is str:  # `field.clauses(value)`, inline for the common case: a value seen before
                memo = field.memo
                memo.lookups += 1
                found = memo.known.get(value)
                if found is None:
                    found = field.learn(value)
            else:
                found = field.clauses(value)
            if found:
                answers.append(found)
        if self._spaced_names and not spaced:  # a name with a space that a rule reads as it is
            spaced = not fields.keys().isdisjoint(self._spaced_names)
        if spaced and view.event.format == "windows":  # Defender's "Threat Name": Sigma's ThreatName
            answers += [direct[name].clauses(value) for name, value in view.add_spaceless_names().items()
                        if name in direct]
        if self._other:
            answers += [f.clauses(get(view)) for f, get in self._other]
        if self._keywords is not None:
            raw = view.event.raw
            # (Python lowers some non-ASCII letters to two characters: for those, exactly as the rules
            # do; a keyword searches the text as logged, message codes not rendered)
            answers.append(self._keywords._scan_one(raw if raw.isascii() else raw.lower()))
        # The rules to try, remembered by the answers themselves (objects the field memos keep, whose
        # hashes are cached), then by their union, which would cost a set and its hash every event.
        key = tuple(answers)
        by_answers = self._by_answers
        by_answers.lookups += 1
        chosen = by_answers.known.get(key)
        if chosen is None:
            hits = _NONE.union(*answers)
            chosen = self._chosen.recall(hits, self._choice, hits)
            by_answers.store(key, chosen)
        return chosen

    def _choice(self, hits: frozenset[int]) -> _Choice:
        return _Choice(self._choose(hits))

    def _choose(self, hits: frozenset[int]) -> list[_Trial]:
        """The rules all of whose clauses are among the hits, and the rules without a gate."""
        chosen = list(self.always)
        if not hits:
            return chosen
        primary = self._primary
        for clause_id in hits:
            for trial, others in primary.get(clause_id, ()):
                if not others or all(other in hits for other in others):
                    chosen.append(trial)
        return chosen
