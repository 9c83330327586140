"""Rule IR → Python closures that test one `EventView`, and the literal gates that pre-screen events.

`compile_condition(ir)` builds the matcher once per rule: leaves are field tests (Sigma strings
compare case-insensitively unless `cased`; regexes are case-sensitive unless their `i` flag, and
run on RE2 or a time-bounded engine, see `regex.py`), `and`/`or`/`not` are short-circuit loops, and
an `or` of plain string tests on one field becomes one test (a set, a prefix/suffix tuple, one
RE2 alternation).

`gate_clauses(ir)` derives what the detector screens on: clauses (AND of ORs) of atoms
`("eq", field, text)` / `("sub", field, literal)`, each a necessary condition for a match: an
event can only match if, for every clause, one atom holds on its lowercase field text. The
detector finds atoms with one dictionary lookup (eq) or one RE2::Set scan (sub) per field.
Knows nothing about logsources, correlations or signals.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import json
import re
import re._parser as sre_parse
from collections.abc import Callable, Sequence
from typing import Any

from logwarden.app.detect.regex import compile_safe
from logwarden.app.detect.view import EventView

Matcher = Callable[[EventView], bool]
Atom = tuple[str, str | None, str]  # (eq|sub, field or None for the keyword haystack, lowercase text)

MAX_CLAUSES = 3  # per rule: the most selective ones
_SIMPLE = frozenset(("eq", "prefix", "suffix", "contains"))


class CompileError(ValueError):
    """A condition cannot be compiled (e.g. a regex neither engine accepts)."""


# --- matchers ---------------------------------------------------------------------------------


def compile_condition(node: tuple) -> Matcher:
    op = node[0]
    if op == "and":
        return _all(sorted((compile_condition(c) for c in node[1]), key=_cost))
    if op == "or":
        return _any(_or_children(node[1]))
    if op == "not":
        inner = compile_condition(node[1])
        negated = lambda v: not inner(v)  # noqa: E731
        negated.cost = getattr(inner, "cost", 5)  # type: ignore[attr-defined]
        return negated
    if op == "field":
        return _field(node[1], node[2])
    if op == "keyword":
        return _keyword(node[1])
    raise CompileError(f"unknown condition node {op!r}")


def _cost(matcher: Matcher) -> int:
    return getattr(matcher, "cost", 5)


def _costed(matcher: Matcher, cost: int) -> Matcher:
    matcher.cost = cost  # type: ignore[attr-defined]
    return matcher


def _all(matchers: list[Matcher]) -> Matcher:
    if len(matchers) == 1:
        return matchers[0]
    if len(matchers) == 2:
        a, b = matchers
        return _costed(lambda v: a(v) and b(v), _cost(a))

    def every(v: EventView) -> bool:
        for m in matchers:
            if not m(v):
                return False
        return True

    return _costed(every, _cost(matchers[0]))


def _any(matchers: list[Matcher]) -> Matcher:
    if len(matchers) == 1:
        return matchers[0]

    def some(v: EventView) -> bool:
        for m in matchers:
            if m(v):
                return True
        return False

    return _costed(some, max(map(_cost, matchers)))


def _or_children(children: Sequence[tuple]) -> list[Matcher]:
    """Plain string tests on one field are folded into one test per field."""
    folded: dict[str, list[tuple]] = {}
    networks: dict[str, list[str]] = {}
    rest: list[Matcher] = []
    for child in children:
        if child[0] == "field" and child[2][0] == "str" and child[2][1] in _SIMPLE and not child[2][3]:
            folded.setdefault(child[1], []).append(child[2])
        elif child[0] == "field" and child[2][0] == "cidr":
            networks.setdefault(child[1], []).append(child[2][1])
        else:
            rest.append(compile_condition(child))
    merged = [_field_test(name, _string_set(values), cased=False, cost=2) for name, values in folded.items()]
    merged += [_field_test(name, _cidr_test(nets), cased=True, cost=4) for name, nets in networks.items()]
    return sorted(merged + rest, key=_cost)


def _field_test(name: str, test: Callable[[str], bool], *, cased: bool, cost: int) -> Matcher:
    get = EventView.cased if cased else EventView.lower

    def leaf(v: EventView) -> bool:
        text = get(v, name)
        if text is None:
            return False
        if type(text) is str:
            return test(text)
        return any(map(test, text))

    return _costed(leaf, cost)


def _string_set(values: Sequence[tuple]) -> Callable[[str], bool]:
    """One test for an OR of eq/prefix/suffix/contains strings (already lowercase-able)."""
    eqs = frozenset(v[2].lower() for v in values if v[1] == "eq")
    prefixes = tuple(v[2].lower() for v in values if v[1] == "prefix")
    suffixes = tuple(v[2].lower() for v in values if v[1] == "suffix")
    needles = [v[2].lower() for v in values if v[1] == "contains"]
    contains = _contains_any(needles)
    tests: list[Callable[[str], bool]] = []
    if eqs:
        tests.append(eqs.__contains__)
    if prefixes:
        tests.append(lambda t: t.startswith(prefixes))
    if suffixes:
        tests.append(lambda t: t.endswith(suffixes))
    if contains is not None:
        tests.append(contains)
    if len(tests) == 1:
        return tests[0]
    return lambda t: any(test(t) for test in tests)


def _contains_any(needles: list[str]) -> Callable[[str], bool] | None:
    if not needles:
        return None
    if "" in needles:
        return lambda t: True
    if len(needles) <= 4:
        few = tuple(needles)

        def contains_one(t: str) -> bool:  # a plain loop: a generator under any() cost twice as much
            for needle in few:
                if needle in t:
                    return True
            return False

        return contains_one
    alternation = compile_safe("|".join(map(re.escape, sorted(set(needles), key=len, reverse=True))))
    return alternation.search  # RE2: one linear scan for any number of needles


def _string_test(kind: str, text: str, cased: bool) -> Callable[[str], bool]:
    wanted = text if cased else text.lower()
    if kind == "eq":
        return lambda t: t == wanted
    if kind == "prefix":
        return lambda t: t.startswith(wanted)
    if kind == "suffix":
        return lambda t: t.endswith(wanted)
    if kind == "contains":
        return lambda t: wanted in t
    regex = compile_safe(f"^(?:{text})$", "s" if cased else "is")  # a glob: `*`/`?` already translated
    return regex.search


def _field(name: str, value: tuple) -> Matcher:
    kind = value[0]
    if kind == "str":
        cased = value[3]
        return _field_test(name, _string_test(value[1], value[2], cased), cased=cased,
                           cost=3 if value[1] == "glob" else 2)
    if kind == "re":
        try:
            regex = compile_safe(value[1], value[2])
        except Exception as exc:  # re2.error, regex.error: the pattern is broken for both engines
            raise CompileError(f"regex {value[1]!r} does not compile: {exc}") from exc
        return _field_test(name, regex.search, cased=True, cost=8)
    if kind == "any":
        return _any([_field(name, v) for v in value[1]])
    builder = _VALUE_LEAVES.get(kind)
    if builder is None:
        raise CompileError(f"unknown value kind {kind!r}")
    return builder(name, value)


def _keyword(value: tuple) -> Matcher:
    if value[0] == "any":
        return _any([_keyword(v) for v in value[1]])
    if value[0] == "str":
        test = _string_test(value[1], value[2], value[3])
        cased = value[3]
        return _costed(lambda v: test(v.haystack() if cased else v.haystack_lower()), 6)
    if value[0] == "re":
        regex = compile_safe(value[1], value[2])
        return _costed(lambda v: regex.search(v.haystack()), 9)
    raise CompileError(f"a keyword detection cannot use a {value[0]} value")


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return x
    try:
        return float(str(x).strip())
    except ValueError:
        return None


def _num_leaf(name: str, value: tuple) -> Matcher:
    wanted = value[1]

    def leaf(v: EventView) -> bool:
        x = v.get(name)
        if x is None:
            return False
        if type(x) in (list, tuple):
            return any(_number(i) == wanted for i in x)
        return x == wanted if type(x) is int else _number(x) == wanted

    return _costed(leaf, 1)


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "!=": lambda a, b: a != b}


def _cmp_leaf(name: str, value: tuple) -> Matcher:
    test, bound = _OPS[value[1]], value[2]

    def leaf(v: EventView) -> bool:
        x = v.get(name)
        if x is None:
            return False
        if type(x) in (list, tuple):
            return any((n := _number(i)) is not None and test(n, bound) for i in x)
        n = _number(x)
        return n is not None and test(n, bound)

    return _costed(leaf, 1)


def _bool_leaf(name: str, value: tuple) -> Matcher:
    wanted = value[1]

    def leaf(v: EventView) -> bool:
        x = v.get(name)
        if isinstance(x, bool):
            return x is wanted
        return isinstance(x, str) and x.strip().lower() == ("true" if wanted else "false")

    return _costed(leaf, 1)


def _null_leaf(name: str, value: tuple) -> Matcher:
    # Sigma keeps `null` (no value: the field is absent or JSON null) apart from `''` (an empty value,
    # e.g. an empty <Data> element): SigmaHQ rules filter each on its own, as pySigma's SQL backends
    # do (`IS NULL` vs `= ''`)
    return _costed(lambda v: v.get(name) is None, 1)


def _exists_leaf(name: str, value: tuple) -> Matcher:
    wanted = value[1]
    return _costed(lambda v: (v.get(name) is not None) is wanted, 0)


@functools.lru_cache(maxsize=65536)
def ip_of(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as logs write it (IPv4-mapped IPv6 read as IPv4), None when it is not one."""
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _cidr_test(networks: Sequence[str]) -> Callable[[str], bool]:
    """Is the address in any of the networks: a binary search over their merged ranges."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    for network in map(ipaddress.ip_network, networks):
        ranges.setdefault(network.version, []).append((int(network.network_address), int(network.broadcast_address)))
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for version, spans in ranges.items():
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        starts[version], ends[version] = [s for s, _ in merged], [e for _, e in merged]

    def inside(text: str) -> bool:
        key = _ip_key(text)
        if key is None or key[0] not in starts:
            return False
        version, number = key
        i = bisect.bisect_right(starts[version], number) - 1
        return i >= 0 and number <= ends[version][i]

    return inside


@functools.lru_cache(maxsize=65536)
def _ip_key(text: str) -> tuple[int, int] | None:
    address = ip_of(text)
    return None if address is None else (address.version, int(address))


def _cidr_leaf(name: str, value: tuple) -> Matcher:
    return _field_test(name, _cidr_test([value[1]]), cased=True, cost=4)


def _fieldref_leaf(name: str, value: tuple) -> Matcher:
    other, mode = value[1], value[2]

    def leaf(v: EventView) -> bool:
        a, b = v.lower(name), v.lower(other)
        if type(a) is not str or type(b) is not str:
            return False
        return a == b if mode == "eq" else a.startswith(b) if mode == "prefix" else a.endswith(b)

    return _costed(leaf, 2)


_VALUE_LEAVES: dict[str, Callable[[str, tuple], Matcher]] = {
    "num": _num_leaf, "cmp": _cmp_leaf, "bool": _bool_leaf, "null": _null_leaf, "exists": _exists_leaf,
    "cidr": _cidr_leaf, "fieldref": _fieldref_leaf,
}


def condition_fields(node: tuple | None) -> tuple[str, ...] | None:
    """The fields a condition reads (its answer depends on their values alone), sorted; None when
    it also reads the whole event (a keyword detection)."""
    names: set[str] = set()

    def walk(node: tuple) -> bool:
        op = node[0]
        if op in ("and", "or"):
            return all(walk(child) for child in node[1])
        if op == "not":
            return walk(node[1])
        if op == "field":
            names.add(node[1])
            values = [node[2]]
            while values:  # a fieldref reads its other field too, also inside a list
                value = values.pop()
                if value[0] == "fieldref":
                    names.add(value[1])
                elif value[0] == "any":
                    values += value[1]
            return True
        return False

    return tuple(sorted(names)) if node is not None and walk(node) else None


# --- gates ------------------------------------------------------------------------------------


def gate_clauses(node: tuple) -> list[frozenset[Atom]]:
    """The most selective necessary clauses of a condition (at most MAX_CLAUSES; [] = none)."""
    clauses = sorted(set(_clauses(node)), key=clause_score, reverse=True)
    return clauses[:MAX_CLAUSES]


def _clauses(node: tuple) -> list[frozenset[Atom]]:
    op = node[0]
    if op == "and":
        return [clause for child in node[1] for clause in _clauses(child)]
    if op == "or":
        best = []
        for child in node[1]:
            options = _clauses(child)
            if not options:
                return []
            best.append(max(options, key=clause_score))
        return [frozenset().union(*best)]
    if op == "field":
        atoms = _value_atoms(node[1], node[2])
        return [atoms] if atoms else []
    if op == "keyword":
        atoms = _value_atoms(None, node[1])
        return [atoms] if atoms else []
    return []  # not: says nothing about what must be present


def _value_atoms(name: str | None, value: tuple) -> frozenset[Atom] | None:
    kind = value[0]
    if kind == "any":
        parts = [_value_atoms(name, v) for v in value[1]]
        return None if not parts or any(p is None for p in parts) else frozenset().union(*parts)
    literal: str | None = None
    if kind == "str":
        if value[1] == "eq" and name is not None:
            return frozenset([("eq", name, value[2].lower())])
        literal = value[4] if value[1] == "glob" else value[2]
    elif kind == "re":
        literal = regex_literal(value[1], value[2])
    elif kind == "num" and isinstance(value[1], int) and name is not None:
        return frozenset([("eq", name, str(value[1]))])
    if literal is None or not _selective(literal):
        return None
    if name is None:  # keywords are screened on the raw line: JSON writes \ and " escaped
        forms = {literal.lower(), json.dumps(literal.lower())[1:-1], json.dumps(literal.lower(), ensure_ascii=False)[1:-1]}
        return frozenset(("sub", None, form) for form in forms)
    return frozenset([("sub", name, literal.lower())])


def _selective(literal: str) -> bool:
    """Any literal screens: RE2::Set pays per text, not per occurrence, so a weak one (`;`) costs at
    most what a rule without a gate costs; the scores rank a rule's clauses, the best first."""
    return bool(literal)


def atom_score(atom: Atom) -> int:
    kind, name, text = atom
    if kind == "eq":  # exact, but short values (true, 3, tcp) are common ones
        return min(8 + 2 * len(text), 60)
    rare = 0 if text.isascii() else 10  # a non-ASCII character is rare in benign logs
    short = 0 if len(text) >= 3 or not text.isalnum() else -5  # "ab" is in every other word
    return min(len(text) + rare + short, 40) - (3 if name is None else 0)


def clause_score(clause: frozenset[Atom]) -> int:
    return min(map(atom_score, clause)) if clause else 0


def regex_literal(pattern: str, flags: str = "") -> str | None:
    """The longest run of literal characters every match contains, if Python's parser reads it."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return None
    runs: list[str] = []
    _literal_runs(list(parsed), runs, [])
    return max(runs, key=len, default=None)


def _literal_runs(items: list, runs: list[str], current: list[str]) -> None:
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            current.append(chr(arg))
            continue
        if name == "AT":
            continue  # anchors do not break a run of literals
        if current:
            runs.append("".join(current))
            current.clear()
        if name == "SUBPATTERN":
            _literal_runs(list(arg[-1]), runs, [])
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] >= 1:
            _literal_runs(list(arg[2]), runs, [])
    if current:
        runs.append("".join(current))
        current.clear()
