"""Detection rules as data: the YAML format, its validation, and compiled matchers.

Owns the Sigma-flavoured rule format (see `data/*.yaml` for the shipped rules) and turns each rule
into a `Rule` whose `match`/`exclude` can be evaluated against an `EventView`. It does not know
about state, windows or signals (that is `detector.py`), nor how events are parsed.

A condition key is `field` or `field|op` or `field|op|all`:
  - no op: equals (a list means "any of"); `contains`, `startswith`, `endswith`: substring tests
    (a list means any, `|all` means every); `re`: a regex search whose named groups become fields
    for `group_by`/`distinct`/`key`; `exists`: true/false; `fieldref`: equals another field;
    `gte`/`lte`: numeric comparison.
  - strings compare case-insensitively unless the rule says `case_sensitive: true`.
`match` is one map (all conditions hold) or a list of maps (any map holds); `exclude` likewise.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from logwarden.app.detect.view import EventView
from logwarden.errors import ConfigError
from logwarden.schemas import CATEGORIES

SIGMA_LEVELS = {"informational": "info", "info": "info", "low": "low", "medium": "medium",
                "high": "high", "critical": "critical"}
OPS = ("eq", "contains", "startswith", "endswith", "re", "exists", "fieldref", "gte", "lte")
# Cheap tests run first so that a regex only runs on lines that already look relevant.
_COST = {"exists": 0, "eq": 1, "fieldref": 1, "gte": 1, "lte": 1, "startswith": 2, "endswith": 2,
         "contains": 3, "re": 9}
_TECHNIQUE_TAG = re.compile(r"^attack\.(t\d{4}(?:\.\d{3})?)$", re.IGNORECASE)

ConditionMap = dict[str, Any]


class Aggregate(BaseModel):
    """Count matching events per `group_by` value within `window_s` seconds."""

    model_config = ConfigDict(extra="forbid")
    group_by: str
    threshold: int = Field(ge=1)
    window_s: float = Field(gt=0)
    distinct: str | None = None  # count distinct values of this field instead of events


class FollowedBy(BaseModel):
    """Sequence: an event matching `match` for a key that reached the threshold within `within_s`."""

    model_config = ConfigDict(extra="forbid")
    match: ConditionMap | list[ConditionMap]
    within_s: float = Field(gt=0)


class RuleSpec(BaseModel):
    """One rule as written in YAML (validated, not yet compiled)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{2,79}$")
    title: str = Field(min_length=3, max_length=200)
    level: Literal["informational", "info", "low", "medium", "high", "critical"]
    category: str
    tags: list[str] = Field(default_factory=list)
    description: str = ""
    formats: list[str] = Field(default_factory=list)  # empty = every format
    match: ConditionMap | list[ConditionMap]
    exclude: ConditionMap | list[ConditionMap] | None = None
    key: str | list[str] = Field(default_factory=lambda: ["src_ip", "host"])
    case_sensitive: bool = False
    aggregate: Aggregate | None = None
    followed_by: FollowedBy | None = None
    merge_gap_s: float = Field(default=3600.0, gt=0)

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"category {value!r} is not one of {', '.join(CATEGORIES)}")
        return value

    @model_validator(mode="after")
    def _sequence_needs_aggregate(self) -> RuleSpec:
        if self.followed_by is not None and self.aggregate is None:
            raise ValueError("followed_by needs an aggregate (group_by, threshold, window_s)")
        return self


@dataclass(slots=True)
class Condition:
    """One compiled field test."""

    field: str
    op: str
    test: Callable[[EventView], bool]  # does the event's field satisfy it?
    regex: re.Pattern[str] | None = None
    values: frozenset[str] = frozenset()  # for eq: the normalised values
    needles: tuple[str, ...] = ()  # for contains/startswith/endswith (any-of): substrings one of which must occur

    @property
    def cost(self) -> int:
        return _COST[self.op]


@dataclass(slots=True)
class Matcher:
    """Any-of a list of all-of condition groups."""

    groups: list[list[Condition]]

    def gate(self) -> tuple[str, frozenset[str]] | None:
        """(field, values) when every group requires that field to equal one of those values.

        The detector indexes rules by it, so an event only meets the rules its program/EventID/
        eventName/type can satisfy.
        """
        fields = [{c.field: c for c in group if c.op == "eq"} for group in self.groups]
        common = set.intersection(*(set(f) for f in fields)) if fields else set()
        if not common:
            return None
        name = sorted(common)[0]
        return name, frozenset().union(*(f[name].values for f in fields))

    def literal_gates(self) -> dict[str, frozenset[str]] | None:
        """{field: substrings} such that every group needs one of its field's substrings.

        The detector folds these into one regex per field and format, so a benign line is
        dismissed by a single scan instead of one test per rule. None when some group has no
        substring test to screen on.
        """
        gates: dict[str, set[str]] = {}
        for group in self.groups:
            candidates = [c for c in group if c.needles]
            if not candidates:
                return None
            # screen on the most selective test: the one whose shortest substring is longest
            screen = max(candidates, key=lambda c: min(map(len, c.needles)))
            gates.setdefault(screen.field, set()).update(screen.needles)
        return {name: frozenset(needles) for name, needles in gates.items()}

    def evaluate(self, view: EventView) -> dict[str, str] | None:
        """The captured named groups when a group holds, else None."""
        for conditions in self.groups:
            captures = _evaluate_group(conditions, view)
            if captures is not None:
                return captures
        return None


@dataclass(slots=True, eq=False)  # identity semantics: rules are hashed into dispatch tables
class Rule:
    """A compiled rule: the spec plus its matchers, level mapped to logwarden's names."""

    spec: RuleSpec
    match: Matcher
    exclude: Matcher | None
    followed_by: Matcher | None
    level: str
    techniques: list[str]
    key_fields: tuple[str, ...]
    formats: frozenset[str] = field(default_factory=frozenset)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def gate(self) -> tuple[str, frozenset[str]] | None:
        """The field/values every event this rule can use must have (see `Matcher.gate`)."""
        gates = [m.gate() for m in (self.match, self.followed_by) if m is not None]
        if any(g is None for g in gates) or len({g[0] for g in gates}) != 1:
            return None
        return gates[0][0], frozenset().union(*(g[1] for g in gates))

    @property
    def literal_gates(self) -> dict[str, frozenset[str]] | None:
        gates: dict[str, frozenset[str]] = {}
        for matcher in (self.match, self.followed_by):
            if matcher is None:
                continue
            found = matcher.literal_gates()
            if found is None:
                return None
            for name, needles in found.items():
                gates[name] = gates.get(name, frozenset()) | needles
        return gates

    def matches(self, view: EventView) -> dict[str, str] | None:
        """Captures when the event matches and is not excluded, else None."""
        captures = self.match.evaluate(view)
        if captures is None:
            return None
        if self.exclude is not None and self.exclude.evaluate(view) is not None:
            return None
        return captures


_NO_CAPTURES: dict[str, str] = {}


def _evaluate_group(conditions: list[Condition], view: EventView) -> dict[str, str] | None:
    if view.captures:
        view.captures.clear()
    for condition in conditions:
        if not condition.test(view):
            return None
    return dict(view.captures) if view.captures else _NO_CAPTURES


# --- compiling conditions -------------------------------------------------------------------


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _norm(value: Any, cased: bool) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if cased else text.lower()


def _compile_condition(key: str, value: Any, cased: bool) -> Condition:
    name, *mods = key.split("|")
    op = mods[0] if mods else "eq"
    if op not in OPS or mods[1:] not in ([], ["all"]):
        raise ValueError(f"condition {key!r}: use field, field|op or field|contains|all with op in {OPS}")
    every = mods[1:] == ["all"]
    builder = _BUILDERS[op]
    return builder(name, value, cased, every)


def _build_eq(name: str, value: Any, cased: bool, every: bool) -> Condition:
    wanted = frozenset(_norm(v, cased) for v in _as_list(value))
    lower = not cased

    def test(view: EventView) -> bool:
        return view.text(name, lower) in wanted  # an absent field reads as ""

    return Condition(name, "eq", test, values=wanted)


def _build_substring(op: str) -> Callable[[str, Any, bool, bool], Condition]:
    def build(name: str, value: Any, cased: bool, every: bool) -> Condition:
        needles = tuple(_norm(v, cased) for v in _as_list(value))
        lower = not cased
        if every:
            method = {"contains": str.__contains__, "startswith": str.startswith, "endswith": str.endswith}[op]

            def test(view: EventView) -> bool:
                text = view.text(name, lower)
                return all(method(text, n) for n in needles)
        elif op == "contains":
            # one regex of escaped literals: a single C-level scan instead of a Python loop per needle
            any_needle = re.compile("|".join(map(re.escape, needles)))

            def test(view: EventView) -> bool:
                return any_needle.search(view.text(name, lower)) is not None
        else:
            method = str.startswith if op == "startswith" else str.endswith

            def test(view: EventView) -> bool:
                return method(view.text(name, lower), needles)

        return Condition(name, op, test, needles=() if every else needles)

    return build


def _build_re(name: str, value: Any, cased: bool, every: bool) -> Condition:
    if not isinstance(value, str):
        raise ValueError(f"{name}|re needs one regex string")
    regex = re.compile(value, 0 if cased else re.IGNORECASE)

    def test(view: EventView) -> bool:
        if view.get(name) is None:
            return False
        hit = regex.search(view.text(name, False))
        if hit is None:
            return False
        view.captures.update({k: v for k, v in hit.groupdict().items() if v is not None})
        return True

    return Condition(name, "re", test, regex)


def _build_exists(name: str, value: Any, cased: bool, every: bool) -> Condition:
    wanted = bool(value)
    return Condition(name, "exists", lambda view: (view.get(name) not in (None, "")) == wanted)


def _build_fieldref(name: str, value: Any, cased: bool, every: bool) -> Condition:
    other = str(value)
    lower = not cased

    def test(view: EventView) -> bool:
        found = view.get(name) is not None and view.get(other) is not None
        return found and view.text(name, lower) == view.text(other, lower)

    return Condition(name, "fieldref", test)


def _build_numeric(op: str) -> Callable[[str, Any, bool, bool], Condition]:
    def build(name: str, value: Any, cased: bool, every: bool) -> Condition:
        bound = float(value)

        def test(view: EventView) -> bool:
            try:
                number = float(view.get(name))
            except (TypeError, ValueError):
                return False
            return number >= bound if op == "gte" else number <= bound

        return Condition(name, op, test)

    return build


_BUILDERS: dict[str, Callable[[str, Any, bool, bool], Condition]] = {
    "eq": _build_eq, "contains": _build_substring("contains"), "startswith": _build_substring("startswith"),
    "endswith": _build_substring("endswith"), "re": _build_re, "exists": _build_exists,
    "fieldref": _build_fieldref, "gte": _build_numeric("gte"), "lte": _build_numeric("lte"),
}


def _order_key(conditions: list[Condition]) -> Callable[[Condition], int]:
    """Cheap tests first, except that a test of a field a regex captures must follow that regex."""
    captured = {name for c in conditions if c.regex is not None for name in c.regex.groupindex}
    return lambda c: c.cost + (_COST["re"] + 1 if c.field in captured else 0)


def compile_matcher(spec: ConditionMap | list[ConditionMap], cased: bool) -> Matcher:
    groups = []
    for group in _as_list(spec):
        if not isinstance(group, dict) or not group:
            raise ValueError("a match/exclude group must be a non-empty map of conditions")
        conditions = [_compile_condition(str(k), v, cased) for k, v in group.items()]
        groups.append(sorted(conditions, key=_order_key(conditions)))
    return Matcher(groups)


def techniques_from_tags(tags: Sequence[str]) -> list[str]:
    """Sigma `attack.t1110.001` tags → `T1110.001` ids, in order, without duplicates."""
    found = [m.group(1).upper() for t in tags if (m := _TECHNIQUE_TAG.match(t))]
    return list(dict.fromkeys(found))


def compile_rule(spec: RuleSpec) -> Rule:
    cased = spec.case_sensitive
    exclude = compile_matcher(spec.exclude, cased) if spec.exclude else None
    follow = compile_matcher(spec.followed_by.match, cased) if spec.followed_by else None
    return Rule(spec=spec, match=compile_matcher(spec.match, cased), exclude=exclude, followed_by=follow,
                level=SIGMA_LEVELS[spec.level], techniques=techniques_from_tags(spec.tags),
                key_fields=tuple(_as_list(spec.key)), formats=frozenset(spec.formats))


# --- loading ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def shipped_rules() -> tuple[Rule, ...]:
    """The shipped rules, read and compiled once per process (rules are stateless: every
    `Detector` keeps its own state), for callers that build many detectors, e.g. triage."""
    return tuple(load_rules())


def shipped_rule_files() -> list[Path]:
    folder = resources.files("logwarden.app.detect") / "data"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith((".yaml", ".yml")))


def _read_yaml(path: Path) -> list[Any]:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read rule file {path}: {exc.strerror}; check the path") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"rule file {path} is not valid YAML: {exc}") from exc
    rules = document.get("rules") if isinstance(document, dict) else document
    if not isinstance(rules, list):
        raise ConfigError(f"rule file {path}: expected a list of rules (or a map with a 'rules' list)")
    return rules


def _load_one(path: Path, index: int, raw: Any) -> Rule:
    rule_id = raw.get("id", f"#{index + 1}") if isinstance(raw, dict) else f"#{index + 1}"
    try:
        return compile_rule(RuleSpec.model_validate(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'rule'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"rule {rule_id} in {path}: {problems}") from exc
    except (ValueError, re.error) as exc:
        raise ConfigError(f"rule {rule_id} in {path}: {exc}") from exc


def load_rules(paths: Sequence[Path] | None = None) -> list[Rule]:
    """Load and validate rules from YAML files (default: the shipped ones). Ids must be unique."""
    files = shipped_rule_files() if paths is None else [Path(p) for p in paths]
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    for path in files:
        for index, raw in enumerate(_read_yaml(path)):
            rule = _load_one(path, index, raw)
            if rule.id in seen:
                raise ConfigError(f"rule {rule.id} in {path} duplicates the one in {seen[rule.id]}; rename one")
            seen[rule.id] = path
            rules.append(rule)
    return rules
