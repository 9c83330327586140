"""JSON decoding that a hostile line cannot turn into a crash: nesting bombs are "not JSON".

`json` decodes recursively: `{"a":{"a":…` ten thousand deep raises `RecursionError`, and a
value a few hundred deep decodes but then blows the stack of whatever walks it later (parsers,
detectors, indicator extraction, `json.dumps`). Real log events nest a few levels (evtx_dump ~6,
CloudTrail ~15), so anything deeper than `MAX_DEPTH` is refused here, once, with a `ValueError`
like any other malformed JSON, and the line is read as text. Oversized integers (`int` refuses
more than 4,300 digits) already raise `ValueError`. A `\\ud800` escape decodes to a lone
surrogate, which every later stage (pydantic, the store, a UTF-8 writer) refuses with an
exception: such strings come out with U+FFFD instead (`safetext.clean`); the raw line keeps the escape.

Owns only these rules. Knows nothing about log formats.
"""

from __future__ import annotations

import json
from typing import Any

from logwarden.app.safetext import clean_value, may_hold_surrogates

MAX_DEPTH = 100
_decoder = json.JSONDecoder()


def loads(text: str) -> Any:
    """`json.loads`, but a value nested deeper than `MAX_DEPTH` raises `ValueError`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep() from None
    _check_depth(value, text, 0, len(text))
    return clean_value(value) if may_hold_surrogates(text) else value


def raw_decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` at `pos` with the same depth rule; returns (value, end)."""
    try:
        value, end = _decoder.raw_decode(text, pos)
    except RecursionError:
        raise _too_deep() from None
    _check_depth(value, text, pos, end)
    if may_hold_surrogates(text[pos:end]):
        value = clean_value(value)
    return value, end


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
