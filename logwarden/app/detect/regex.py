"""Regular expressions from rule packs, compiled so that no pattern can stall a run.

A rule pack is untrusted input: `(a+)+$` against a long line takes exponential time in a
backtracking engine. Patterns go to RE2 (`google-re2`, linear time) when it accepts them; the few
it refuses (look-arounds, back-references) go to the `regex` module, whose every search carries a
time limit (`MATCH_TIMEOUT_S`). A search that runs out of time counts as no match and is counted
in `timeouts`, so one bad rule costs at most that much per event and the run goes on.

`LiteralSet` answers which of many literals occur in a text, in one RE2 pass (the detector's
prefilter). Knows nothing about rules or events: `compile_safe(pattern, flags)` → an object with
`search(text)`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import re2
import regex

log = logging.getLogger(__name__)

MATCH_TIMEOUT_S = 0.05
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is expected (it falls back), not an error to print
_REGEX_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL}


class SafeRegex:
    """`search(text) -> bool`, linear-time (RE2) or time-bounded (`regex`); `engine` says which."""

    __slots__ = ("pattern", "engine", "timeouts", "_search")

    def __init__(self, pattern: str, flags: str = "") -> None:
        self.pattern = pattern
        self.timeouts = 0
        prefix = f"(?{''.join(sorted(set(flags)))})" if flags else ""
        try:
            compiled = re2.compile(prefix + pattern, options=_RE2_OPTIONS)
        except re2.error:
            self.engine = "regex"
            bounded = regex.compile(pattern, _flag_bits(flags) | regex.VERSION0)
            self._search = lambda text: self._bounded(bounded, text)
        else:
            self.engine = "re2"
            self._search = _re2_search(compiled)

    def search(self, text: str) -> bool:
        return self._search(text)

    def _bounded(self, compiled: regex.Pattern, text: str) -> bool:
        try:
            return compiled.search(text, timeout=MATCH_TIMEOUT_S) is not None
        except TimeoutError:
            self.timeouts += 1
            if self.timeouts == 1:
                log.warning("regex %r ran out of time (%.0f ms) on a %d-character value; counted as no match",
                            self.pattern[:80], MATCH_TIMEOUT_S * 1000, len(text))
            return False


def _re2_search(compiled: re2._Regexp):
    """RE2's own Match on the UTF-8 bytes: the Python wrapper's search also maps every match
    offset back to characters, which costs more than the search itself on short fields."""
    match, unanchored, no_match = compiled._regexp.Match, re2._re2.RE2.Anchor.UNANCHORED, (-1, -1)

    def search(text: str) -> bool:
        data = text.encode("utf-8", "surrogatepass")
        return match(unanchored, data, 0, len(data))[0] != no_match

    return search


def _flag_bits(flags: str) -> int:
    bits = 0
    for flag in flags:
        bits |= _REGEX_FLAGS[flag]
    return bits


def compile_safe(pattern: str, flags: str = "") -> SafeRegex:
    """Raises `regex.error` (a ValueError) when neither engine accepts the pattern."""
    return SafeRegex(pattern, flags)


class PatternSet:
    """Which of many (trusted, generated) patterns match a text, in one linear pass (RE2::Set).

    `found(text)` returns the indexes (in `patterns` order) of those that match."""

    __slots__ = ("patterns", "_match")

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns
        options = re2.Options()
        options.log_errors = False
        options.max_mem = 128 << 20  # thousands of patterns: let the DFA grow instead of falling back
        matcher = re2.Set.SearchSet(options)
        for pattern in patterns:
            matcher.Add(pattern)
        matcher.Compile()
        self._match = matcher._set.Match

    def found(self, text: str) -> list[int]:
        return self._match(text.encode("utf-8", "surrogatepass")) or ()


class LiteralSet(PatternSet):
    """Which of many literals occur in a text (RE2::Set over the escaped literals); `caseless`: in
    any case (for ASCII text, cheaper than lowering a long text first)."""

    __slots__ = ("literals",)

    def __init__(self, literals: Sequence[str], *, caseless: bool = False) -> None:
        self.literals = literals
        flags = "(?i)" if caseless else ""
        super().__init__([flags + re2.escape(literal) for literal in literals])


@functools.lru_cache(maxsize=1024)
def shared_literal_set(literals: tuple[str, ...], *, caseless: bool = False) -> LiteralSet:
    """One compiled `LiteralSet` per distinct list of literals: logsources share fields and keyword
    rules (SigmaHQ's Mimikatz keywords apply to every Windows logsource), and compiling the same
    set again for each of them was half the time to build the detector's dispatches."""
    return LiteralSet(literals, caseless=caseless)
