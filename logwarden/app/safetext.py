"""Text from outside — log lines, JSON values, file names, stdin, rule packs — made safe to hold,
store and show, whatever an attacker wrote into it.

Three rules, each applied once at the edge where the text enters or leaves:
- `clean`: a Python string may hold lone surrogates (a JSON `"\\ud800"` escape, a file name's
  undecodable bytes) that pydantic, SQLite drivers and UTF-8 writers refuse with an exception;
  they become U+FFFD. The raw line keeps its original escape as evidence.
- `os_text`: a name from the operating system (a path, an argument) keeps its undecodable bytes
  as a visible `\\xNN` and its control characters escaped, so it can be stored, shown and put in a
  prompt without forging lines or carrying terminal sequences.
- `visible`: what goes to a terminal or a line-oriented export: control characters (C0, DEL, C1:
  ESC/OSC/CSI sequences, NUL, carriage returns) become `\\xNN` escapes and bidirectional overrides
  become `<U+202E>`, so a value can neither drive the terminal nor reorder what is shown.

Knows nothing of where the text goes.
"""

from __future__ import annotations

import os
import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls (TAB and LF decided by the caller), DEL, and the C1 controls (0x9b is a one-byte CSI)
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Bidirectional formatting characters (Trojan Source) and the line/paragraph separators
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_UNSAFE = {
    (False, False): re.compile(f"[\t\n{_CONTROL}{_BIDI}]"),
    (True, False): re.compile(f"[\n{_CONTROL}{_BIDI}]"),
    (False, True): re.compile(f"[\t{_CONTROL}{_BIDI}]"),
    (True, True): re.compile(f"[{_CONTROL}{_BIDI}]"),
}
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# What json.dumps(ensure_ascii=False) leaves raw inside strings and a terminal or a reader may obey
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}]")
_JSON_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def clean(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (valid text is returned as it is)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def clean_value(value: Any) -> Any:
    """A decoded JSON value with `clean` applied to every string in it, keys included."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def may_hold_surrogates(json_text: str) -> bool:
    """Can decoding this JSON text give a lone surrogate? Only through a `\\uD800`–`\\uDFFF`
    escape (raw surrogates cannot be in a decoded line): C-speed test before any walk."""
    return "\\u" in json_text and _JSON_SURROGATE_ESCAPE.search(json_text) is not None


def os_text(name: str | os.PathLike) -> str:
    """A path or argument as text: undecodable bytes as `\\xNN`, controls and bidi escaped."""
    raw = os.fsencode(name)
    return visible(raw.decode("utf-8", "backslashreplace"))


def from_os_bytes(text: str) -> str:
    """Text the OS decoded with surrogateescape (argv, a C-locale stdin) as real text: the
    undecodable bytes become U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # surrogates that are not escaped bytes
        return clean(text)


def visible(text: str, *, tabs: bool = False, newlines: bool = False) -> str:
    """`text` with control characters and bidi controls shown as escapes instead of acting.

    `tabs`/`newlines` keep those two as they are (multi-line text; tables). Everything else
    below 0x20, DEL, the C1 range and the bidi controls become `\\xNN`, `\\uNNNN` or `\\r`.
    """
    pattern = _UNSAFE[(tabs, newlines)]
    if text.isascii() and text.isprintable():  # the common case: nothing to do, C speed
        return text
    return pattern.sub(_escape, clean(text))


def json_safe(json_text: str) -> str:
    """Serialised JSON with the characters it may carry raw (DEL, C1, bidi controls, U+2028/9)
    written as `\\uXXXX` escapes instead: the same JSON value, nothing left for a terminal to obey.
    (Outside strings JSON has none of them, so every one is inside a string.)"""
    if json_text.isascii() and "\x7f" not in json_text:
        return json_text
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", clean(json_text))


def _escape(match: re.Match) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"<U+{code:04X}>"
