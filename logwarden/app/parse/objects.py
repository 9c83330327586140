"""One JSON object per line: decoding it safely and the parser base every JSON family shares.

Owns: `load_object` (a nesting bomb is "not JSON"), `ObjectParser`, the note on an object that
wrote a key twice (`note_duplicate_keys`: the first value was kept) and two small field helpers.
Knows nothing of what an object holds (windows.py, cloud.py, jsonlog.py do).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from logwarden.app.events import Event, LogLine
from logwarden.app.parse import bounded_json


def load_object(text: str) -> dict | None:
    """The JSON object on this line, or None (not JSON, or JSON that is not an object)."""
    stripped = text.strip()
    if not stripped.startswith("{"):  # cheap reject before paying for an exception
        return None
    try:
        value = bounded_json.loads(stripped)  # a nesting bomb is "not JSON"
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class ObjectParser:
    """A parser of one JSON object per line; subclasses read the object in `parse_object`."""

    name = "json"

    def __init__(self, *, reference_time: datetime | None = None):
        self.reference_time = reference_time

    def parse(self, line: LogLine) -> Event | None:
        obj = load_object(line.text)
        return None if obj is None else note_duplicate_keys(self.parse_object(obj, line), obj)

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:  # pragma: no cover - abstract
        raise NotImplementedError


def note_duplicate_keys(event: Event | None, obj: Any) -> Event | None:
    """`event`, with `json_duplicate_keys` naming the keys `obj` wrote twice (their first value
    counted: `bounded_json.FirstKept`): a forged actor appended to an event shows, not wins."""
    duplicated = getattr(obj, "duplicate_keys", ())
    if event is not None and duplicated:
        event.fields["json_duplicate_keys"] = ",".join(duplicated)
    return event


def set_fields(fields: dict, **values: Any) -> None:
    """Add the values that are not None."""
    fields.update({k: v for k, v in values.items() if v is not None})


def text_of(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None
