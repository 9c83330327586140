"""`EventView`: how a rule sees one `Event` — field lookup, derived fields, cached text forms.

Owns field resolution for rules (captures → Event attributes → `fields` → dotted paths into dict
values → derived fields such as the URL-decoded request) and caches the string/lowercase form of
each field so that many rules can test one event cheaply. It knows nothing about rules or state.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_plus

from logwarden.app.models import Event

_ATTRIBUTES = ("message", "raw", "program", "host", "format", "source")
_MAX_DECODE_ROUNDS = 3  # attackers double- and triple-encode to slip past naive filters


def url_decode(text: str) -> str:
    """Percent/plus-decode until stable (at most a few rounds), so `%2527` becomes `'`."""
    for _ in range(_MAX_DECODE_ROUNDS):
        if "%" not in text and "+" not in text:
            break
        decoded = unquote_plus(text)
        if decoded == text:
            break
        text = decoded
    return text


def _request_target(event: Event) -> str:
    fields = event.fields
    return str(fields.get("path") or fields.get("request") or event.message or "")


# Fields computed from others; rules name them like any field.
_DERIVED = {
    "path_decoded": lambda e: url_decode(_request_target(e)),
    "request_decoded": lambda e: url_decode(str(e.fields.get("request") or e.message or "")),
    "user_agent_decoded": lambda e: url_decode(str(e.fields.get("user_agent") or "")) or None,
}


def _dig(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        # compact separators so rules can look for `"Principal":"*"` as it appears in CloudTrail
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


class EventView:
    """A read-only lens on one event for rule evaluation (one per event, reused by every rule)."""

    __slots__ = ("event", "captures", "_values", "_plain", "_lower")

    def __init__(self, event: Event) -> None:
        self.event = event
        self.captures: dict[str, str] = {}  # named regex groups of the condition group in progress
        self._values: dict[str, Any] = {}
        self._plain: dict[str, str] = {}
        self._lower: dict[str, str] = {}

    def get(self, name: str) -> Any:
        """The field's value, or None when the event has no such field."""
        if self.captures and name in self.captures:
            return self.captures[name]
        try:
            return self._values[name]
        except KeyError:
            value = self._values[name] = self._resolve(name)
            return value

    def text(self, name: str, lower: bool) -> str:
        """The field as a string (dicts as compact JSON), lowercased when asked; '' when absent."""
        if self.captures and name in self.captures:
            value = self.captures[name]
            return value.lower() if lower else value
        cache = self._lower if lower else self._plain
        try:
            return cache[name]
        except KeyError:
            value = self.get(name)
            text = "" if value is None else value if type(value) is str else _stringify(value)
            cache[name] = text = text.lower() if lower else text
            return text

    def _resolve(self, name: str) -> Any:
        event = self.event
        if name in _ATTRIBUTES:
            return getattr(event, name)
        fields = event.fields
        if name in fields:
            return fields[name]
        if name in _DERIVED:
            return _DERIVED[name](event)
        if "." in name:
            head, *rest = name.split(".")
            return _dig(fields.get(head), rest)
        return None
