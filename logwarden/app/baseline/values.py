"""What one request parameter's values look like, and how a new value differs (Kruegel & Vigna's
per-attribute models, kept small and mergeable).

Owns: the value model of one parameter — the clients that sent it, its length (mean, variance,
maximum: a Chebyshev bound says how far out a length is), the character classes its values use
(letters, digits, space, bytes ≥ 0x80, and each punctuation character on its own, each with the
clients it came from), an enumeration when the parameter takes few distinct values, and a numeric
range when it is always a number — and judging a value against it. Also what "attack syntax" is
in a value. Knows nothing of endpoints, sites or the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from logwarden.app.baseline.sketch import Moments, Support

VALUE_MAX_BYTES = 4096  # a longer value is judged on its head (its length is still its length)
CLASS_K = 4  # a character class needs only "seen from 1, 2, 3… clients"
PARAM_K = 32
ENUM_MAX = 12  # more distinct values than this: not an enumeration
ENUM_MIN_CLIENTS = 20  # an enumeration is believed once this many clients used the parameter
ENUM_SHARE = 0.2  # … and its distinct values are at most this share of them
DIVERSE_PUNCTUATION = 4  # a parameter whose values already use this many punctuation characters is free text
LENGTH_BOUND = 0.01  # Chebyshev bound under which a length longer than any seen is a deviation
NUMERIC_MARGIN = 1.0  # a number beyond [min, max] by more than this many ranges is a deviation
# Characters whose first appearance in a parameter is telling even when the parameter is free text.
META = frozenset("'\"<>;()`|&$\\{}[]\x00\r\n")
# Characters names, logins, addresses and dates take up sooner or later: new only to a strict
# parameter (a number, an enumeration) is telling.
MILD = frozenset(" -_.,/:@+")

_ATTACK = re.compile(
    r"(?:'|\"|\))\s*(?:(?:or|and|union|select|having|order\s+by)\b|--|#|;)"
    r"|\bunion\b[\s(/*]+(?:all\s+)?select\b|\bselect\b.+\bfrom\b|\b(?:sleep|benchmark|pg_sleep|waitfor)\s*\("
    r"|\b(?:drop|insert|update|delete)\s+(?:table|into|from|\w+\s+set)\b|/\*.*\*/|@@version|\bxp_cmdshell\b"
    r"|<\s*/?\s*(?:script|iframe|img|svg|body|object|embed|style|link|meta)\b|\bon[a-z]+\s*=|javascript\s*:"
    r"|\.\./|\.\.\\|/etc/passwd|\bwin\.ini\b|%00|\x00"
    r"|[;|`]\s*(?:cat|ls|id|whoami|uname|wget|curl|nc|ncat|bash|sh|ping|echo|rm)\b|\$\(|\$\{"
    r"|\r\n|\n(?:set-cookie|location|content-)",
    re.IGNORECASE)


def decoded(value: str) -> bytes:
    """The value's bytes after one round of URL decoding ('+' is a space); invalid escapes stay as they are."""
    return unquote_to_bytes(value[: VALUE_MAX_BYTES * 3].replace("+", " "))[:VALUE_MAX_BYTES]


def _class_of(byte: int) -> str:
    char = chr(byte)
    if byte >= 0x80:
        return "h"
    if char.isalpha():
        return "a"
    if char.isdigit():
        return "9"
    if char == " ":
        return " "
    return "c" if byte < 0x20 and char not in "\r\n" else char


_CLASS_TABLE = bytes(ord(_class_of(b)) if len(_class_of(b)) == 1 else b for b in range(256))


def char_classes(data: bytes) -> frozenset[str]:
    """Letters 'a', digits '9', space ' ', bytes ≥ 0x80 'h', control characters 'c', punctuation as itself."""
    return frozenset(map(chr, set(data.translate(_CLASS_TABLE))))


def attack_syntax(data: bytes) -> bool:
    """Does the value carry SQL, script, traversal, command or header-injection syntax (decoded twice)?"""
    text = data.decode("latin-1")
    if _ATTACK.search(text):
        return True
    twice = decoded(text).decode("latin-1")
    return twice != text and bool(_ATTACK.search(twice))


def _number(data: bytes) -> float | None:
    try:
        return float(data) if data and len(data) <= 18 and data.strip().lstrip(b"-+").replace(b".", b"", 1).isdigit() \
            else None
    except ValueError:
        return None


class Value:
    """What is learned and judged of one value, computed once: the raw text (its first 200
    characters, for enumerations), the decoded bytes, their length, classes and number."""

    __slots__ = ("raw", "data", "length", "classes", "number")
    _cache: dict[str, Value] = {}

    def __init__(self, raw: str):
        self.raw = raw[:200]
        self.data = decoded(raw)
        self.length = len(self.data)
        self.classes = char_classes(self.data)
        self.number = _number(self.data)

    @classmethod
    def of(cls, raw: str) -> Value:
        """Short values repeat (ids, enumerations, flags): those are made once."""
        if len(raw) > 64:
            return cls(raw)
        found = cls._cache.get(raw)
        if found is None:
            if len(cls._cache) >= 20_000:
                cls._cache.clear()
            found = cls._cache[raw] = cls(raw)
        return found


@dataclass(slots=True)
class ValueDeviation:
    kind: str  # class | length | enum | range
    text: str  # what was seen against what is usual


class ValueModel:
    """The values one parameter of one endpoint took, from which clients."""

    __slots__ = ("support", "length", "classes", "enum", "low", "high", "numeric")

    def __init__(self) -> None:
        self.support = Support(PARAM_K)
        self.length = Moments()
        self.classes: dict[str, Support] = {}
        self.enum: dict[str, int] | None = {}  # value → count; None once it had too many values
        self.low: float | None = None
        self.high: float | None = None
        self.numeric = True  # every value so far was a number

    # ---- learning ----------------------------------------------------------------------------

    def learn(self, value: Value, client: int) -> None:
        self.support.add(client)
        self.length.add(value.length)
        for cls in value.classes:
            support = self.classes.get(cls)
            if support is None:
                support = self.classes[cls] = Support(CLASS_K)
            support.add(client)
        self._learn_enum(value.raw)
        self._learn_number(value.number)

    def _learn_enum(self, raw: str) -> None:
        if self.enum is None:
            return
        if raw in self.enum or len(self.enum) < ENUM_MAX:
            self.enum[raw] = self.enum.get(raw, 0) + 1
        else:
            self.enum = None

    def _learn_number(self, number: float | None) -> None:
        if number is None:
            self.numeric = False
            return
        self.low = number if self.low is None else min(self.low, number)
        self.high = number if self.high is None else max(self.high, number)

    def merge(self, other: ValueModel) -> None:
        self.support.merge(other.support)
        self.length.merge(other.length)
        for cls, support in other.classes.items():
            self.classes.setdefault(cls, Support(CLASS_K)).merge(support)
        if self.enum is not None and other.enum is not None:
            for value, count in other.enum.items():
                self.enum[value] = self.enum.get(value, 0) + count
            if len(self.enum) > ENUM_MAX:
                self.enum = None
        else:
            self.enum = None
        self.numeric = self.numeric and other.numeric
        self.low = _extreme(min, self.low, other.low)
        self.high = _extreme(max, self.high, other.high)

    # ---- judging -----------------------------------------------------------------------------

    def judge(self, value: Value, name: str) -> list[ValueDeviation]:
        """How this value differs from the parameter's usual values (nothing when it does not)."""
        return [d for d in (self._classes(value, name), self._length(value, name), self._enum(value.raw, name),
                            self._range(value.number, name)) if d is not None]

    def _classes(self, value: Value, name: str) -> ValueDeviation | None:
        if value.classes.issubset(self.classes.keys()):
            return None
        new = sorted(c for c in value.classes if c not in self.classes)
        if self._free_text():  # passwords, addresses, comments: only metacharacters are telling
            new = [c for c in new if c in META]
        elif not self._strict():
            new = [c for c in new if c not in MILD]
        if not new:
            return None
        usual = " ".join(sorted(map(_shown, self.classes))) or "none"
        return ValueDeviation("class", f"{name}= holds {' '.join(map(_shown, new))}, never seen in its values "
                                       f"(usual: {usual})")

    def _strict(self) -> bool:
        """Always a number, or one of a few values: any new character is telling."""
        return (self.numeric and self.low is not None) or self.is_enumeration()

    def _free_text(self) -> bool:
        return sum(1 for c in self.classes if c not in ("a", "9", " ", "h")) >= DIVERSE_PUNCTUATION

    def _length(self, value: Value, name: str) -> ValueDeviation | None:
        size = value.length
        if self.length.n < 2 or size <= self.length.high or self.length.chebyshev_bound(size) >= LENGTH_BOUND:
            return None
        return ValueDeviation("length", f"{name}= is {size} bytes long; usual {self.length.mean:.0f} ± "
                                        f"{self.length.variance ** 0.5:.0f}, at most {self.length.high:.0f}")

    def is_enumeration(self) -> bool:
        clients = self.support.clients()
        return (self.enum is not None and clients >= ENUM_MIN_CLIENTS and len(self.enum) <= ENUM_SHARE * clients)

    def _enum(self, raw: str, name: str) -> ValueDeviation | None:
        if not self.is_enumeration() or raw in self.enum:
            return None
        usual = ", ".join(sorted(self.enum)[:6])
        return ValueDeviation("enum", f"{name}={raw[:60]!r} is not one of its {len(self.enum)} usual values ({usual})")

    def _range(self, number: float | None, name: str) -> ValueDeviation | None:
        if not self.numeric or number is None or self.low is None or self.support.clients() < ENUM_MIN_CLIENTS:
            return None
        margin = NUMERIC_MARGIN * max(self.high - self.low, 1.0)
        if self.low - margin <= number <= self.high + margin:
            return None
        return ValueDeviation("range", f"{name}={number:g} is outside its usual range {self.low:g}..{self.high:g}")

    # ---- storage -----------------------------------------------------------------------------

    def to_json(self) -> dict:
        return {"clients": self.support.to_json(), "length": self.length.to_json(),
                "classes": {c: s.to_json() for c, s in self.classes.items()}, "enum": self.enum,
                "range": [self.low, self.high] if self.numeric else None}

    @classmethod
    def from_json(cls, data: dict) -> ValueModel:
        model = cls()
        model.support = Support.from_json(PARAM_K, data.get("clients"))
        model.length = Moments.from_json(data["length"])
        model.classes = {c: Support.from_json(CLASS_K, s) for c, s in (data.get("classes") or {}).items()}
        model.enum = data.get("enum")
        bounds = data.get("range")  # None: not always a number; [None, None]: no value yet
        model.numeric = bounds is not None
        model.low, model.high = (bounds if bounds else (None, None))
        return model


def _extreme(pick, a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else pick(a, b)


def _shown(cls: str) -> str:
    return {"a": "letters", "9": "digits", " ": "space", "h": "bytes>=0x80", "c": "control",
            "\r": "\\r", "\n": "\\n", "\x00": "\\0"}.get(cls, cls)
