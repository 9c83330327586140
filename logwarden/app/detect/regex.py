"""Regular expressions from rule packs, compiled so that no pattern can stall a run.

A rule pack is untrusted input: `(a+)+$` against a long line takes exponential time in a
backtracking engine. Patterns go to RE2 (`google-re2`, linear time) when it accepts them; the few
it refuses (look-arounds, back-references) go to the `regex` module, whose every search carries a
time limit (`MATCH_TIMEOUT_S`). A search that runs out of time counts as no match and is counted
in `timeouts`, so one bad rule costs at most that much per event and the run goes on.

Knows nothing about rules or events: `compile_safe(pattern, flags)` → an object with `search(text)`.
"""

from __future__ import annotations

import logging

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
            self._search = lambda text: compiled.search(text) is not None

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


def _flag_bits(flags: str) -> int:
    bits = 0
    for flag in flags:
        bits |= _REGEX_FLAGS[flag]
    return bits


def compile_safe(pattern: str, flags: str = "") -> SafeRegex:
    """Raises `regex.error` (a ValueError) when neither engine accepts the pattern."""
    return SafeRegex(pattern, flags)
