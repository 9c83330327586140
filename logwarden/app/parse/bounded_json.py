"""JSON decoding that a hostile line cannot turn into a crash: nesting bombs are "not JSON".

`json` decodes recursively: `{"a":{"a":…` ten thousand deep raises `RecursionError`, and a
value a few hundred deep decodes but then blows the stack of whatever walks it later (parsers,
detectors, indicator extraction, `json.dumps`). Real log events nest a few levels (evtx_dump ~6,
CloudTrail ~15), so anything deeper than `MAX_DEPTH` is refused here, once, with a `ValueError`
like any other malformed JSON, and the line is read as text. Oversized integers (`int` refuses
more than 4,300 digits) already raise `ValueError`. A `\\ud800` escape decodes to a lone
surrogate, which every later stage (pydantic, the store, a UTF-8 writer) refuses with an
exception: such strings come out with U+FFFD instead (`safetext.clean`); the raw line keeps the escape.

A key written twice in one object is a forgery tool (the producer wrote the first; an attacker who
controls a later value appends `"src_ip":"10.0.0.5"`), and readers disagree on which one counts
(Python's `json` keeps the last, many SIEM pipelines the first). Here the **first** wins,
everywhere this module decodes — the parsers and the rule engine's view of `raw` alike — and the
decoded object is a `FirstKept` dict that names the duplicated keys, so the parser notes them.

Owns only these rules. Knows nothing about log formats.
"""

from __future__ import annotations

import json
from typing import Any

from logwarden.app.safetext import clean_value, may_hold_surrogates

MAX_DEPTH = 100
_SPACE = " \t\n\r"  # JSON's whitespace


class FirstKept(dict):
    """A decoded object in which some key was written more than once: the first value of each is
    kept; `duplicate_keys` names them (of this object or any object inside it)."""

    duplicate_keys: tuple[str, ...] = ()


class _Duplicate(Exception):
    """Raised by the fast decoder's hook: this text has a duplicated key, decode it the slow way."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    found = dict(pairs)  # C speed; a shorter dict than the pairs means a key came twice
    if len(found) != len(pairs):
        raise _Duplicate
    return found


_decoder = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def loads(text: str) -> Any:
    """`json.loads`, but a value nested deeper than `MAX_DEPTH` raises `ValueError` and a
    duplicated key keeps its first value (see `FirstKept`)."""
    value, end = raw_decode(text, len(text) - len(text.lstrip(_SPACE)))
    if text[end:].strip(_SPACE):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value


def raw_decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` at `pos` with the same rules as `loads`; returns (value, end)."""
    duplicated: tuple[str, ...] = ()
    try:
        try:
            value, end = _decoder.raw_decode(text, pos)
        except _Duplicate:
            value, end, duplicated = _decode_first_kept(text, pos)
    except RecursionError:
        raise _too_deep() from None
    _check_depth(value, text, pos, end)
    if may_hold_surrogates(text[pos:end]):
        value = clean_value(value)
    if duplicated and isinstance(value, dict):
        value = FirstKept(value)
        value.duplicate_keys = duplicated
    return value, end


def _decode_first_kept(text: str, pos: int) -> tuple[Any, int, tuple[str, ...]]:
    """The value at `pos` with the first of each duplicated key kept, and the keys that were."""
    duplicated: dict[str, None] = {}

    def first_kept(pairs: list[tuple[str, Any]]) -> dict:
        found: dict = {}
        for key, value in pairs:
            if key in found:
                duplicated[key] = None
            else:
                found[key] = value
        return found

    value, end = json.JSONDecoder(object_pairs_hook=first_kept).raw_decode(text, pos)
    return value, end, tuple(duplicated)


def _check_depth(value: Any, text: str, start: int, end: int) -> None:
    if _may_be_deep(text, start, end) and depth_exceeds(value, MAX_DEPTH):
        raise _too_deep()


def _too_deep() -> ValueError:
    return ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")


def _may_be_deep(text: str, start: int, end: int) -> bool:
    """Cheap C-speed bound: fewer brackets than the limit cannot nest past it."""
    return text.count("{", start, end) + text.count("[", start, end) > MAX_DEPTH


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when containers nest more than `limit` deep (iterative: the walk itself cannot overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
