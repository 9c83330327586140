"""One JSON object per line: decoding it safely and the parser base every JSON family shares.

Owns: `load_object` (a nesting bomb is "not JSON"), `ObjectParser` and two small field helpers.
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
        return None if obj is None else self.parse_object(obj, line)

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:  # pragma: no cover - abstract
        raise NotImplementedError


def set_fields(fields: dict, **values: Any) -> None:
    """Add the values that are not None."""
    fields.update({k: v for k, v in values.items() if v is not None})


def text_of(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None
