"""`EventView`: how a rule sees one `Event` — field lookup by Sigma name, text forms, cached.

Owns field resolution for rules: the event's `fields` → the logsource's aliases (Sigma taxonomy
names such as `Image` on a Security 4688 event, `cs-uri-query` on an access event) → Event
attributes (`message`, `program`, `host`, …) → derived fields (`path_decoded`, … normalised by `normalise.py`) → dotted paths
into nested values, and for JSON events into the original record (`userIdentity.arn`,
`actor.alternateId`; case-insensitive as a last resort). Values become text once per event and
field (lists stay lists: a rule matches when any element does). Knows nothing about rules.
"""

from __future__ import annotations

import json
import re
from typing import Any

from logwarden.app.detect.logsource import Alias
from logwarden.app.detect.normalise import forms
from logwarden.app.events import Event
from logwarden.app.parse import bounded_json
from logwarden.app.parse.cloud import cloudtrail_record

ATTRIBUTE_FIELDS = frozenset(("message", "raw", "program", "host", "format", "source"))
_JSON_FORMATS = frozenset(("json", "cloudtrail", "windows"))
_MISSING = object()


def _request_target(event: Event) -> str:
    fields = event.fields
    return str(fields.get("path") or fields.get("request") or event.message or "")


# Fields computed from others; rules name them like any field. The `_decoded` fields are the text as
# the attacker meant it, in each of its normal forms (`normalise.forms`: a rule matches any of them).
DERIVED_FIELDS = {
    "path_decoded": lambda e: forms(_request_target(e)),
    "request_decoded": lambda e: forms(str(e.fields.get("request") or e.message or "")),
    "user_agent_decoded": lambda e: forms(str(e.fields.get("user_agent") or "")) or None,
}


def to_text(value: Any) -> str | tuple[str, ...] | None:
    """A field value as rules compare it: str, a tuple of str for a list, None when unset."""
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return value
    if kind is bool:
        return "true" if value else "false"
    if kind in (int, float):
        return str(value)
    if kind in (list, tuple):
        return tuple(t for t in map(to_text, value) if isinstance(t, str))
    if isinstance(value, dict):
        # compact separators so rules can look for `"Principal":"*"` as it appears in CloudTrail
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return str(value)


def lower_text(value: Any) -> str | tuple[str, ...] | None:
    """`to_text`, lowercased."""
    if type(value) is str:
        return value.lower()
    text = to_text(value)
    if text is None or type(text) is str:
        return text if text is None else text.lower()
    return tuple(t.lower() for t in text)


# Security-auditing message strings (msobjs.dll) that events store as `%%NNNN` and the Event Viewer
# shows as text: SigmaHQ rules test either form (`AccessList|contains: '%%4417'` and `... 'WriteData'`).
# The access-right tables of Microsoft's 4656/4663/5145 (files, keys) and 4662 (directory) documentation.
MESSAGE_STRINGS = {
    "1537": "DELETE", "1538": "READ_CONTROL", "1539": "WRITE_DAC", "1540": "WRITE_OWNER", "1541": "SYNCHRONIZE",
    "1542": "ACCESS_SYS_SEC", "4416": "ReadData (or ListDirectory)", "4417": "WriteData (or AddFile)",
    "4418": "AppendData (or AddSubdirectory or CreatePipeInstance)", "4419": "ReadEA", "4420": "WriteEA",
    "4421": "Execute/Traverse", "4422": "DeleteChild", "4423": "ReadAttributes", "4424": "WriteAttributes",
    "4432": "Query key value", "4433": "Set key value", "4434": "Create sub-key", "4435": "Enumerate sub-keys",
    "4436": "Notify about changes to keys", "4437": "Create Link", "7680": "Create Child", "7681": "Delete Child",
    "7682": "List Contents", "7683": "Write Self", "7684": "Read Property", "7685": "Write Property",
    "7686": "Delete Tree", "7687": "List Object", "7688": "Control Access",
}
_MESSAGE_CODE = re.compile(r"%%(\d{4})")


def rendered(text: str) -> str:
    """`%%4416 %%4417` → `ReadData (or ListDirectory) WriteData (or AddFile)` (unknown codes stay)."""
    return _MESSAGE_CODE.sub(lambda m: MESSAGE_STRINGS.get(m.group(1), m.group(0)), text)


def with_message_text(value: Any) -> Any:
    """A value holding `%%NNNN` message codes, also as its text: the pair is a list, so a rule
    matches when either form does (Windows events; elsewhere the codes are not there)."""
    if type(value) is str and "%%" in value:
        text = rendered(value)
        if text != value:
            return (value, text)
    return value


def _dig(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(value, dict):
            return _MISSING
        if part in value:
            value = value[part]
            continue
        folded = part.lower()
        match = next((k for k in value if isinstance(k, str) and k.lower() == folded), _MISSING)
        if match is _MISSING:
            return _MISSING
        value = value[match]
    return value


class EventView:
    """A read-only lens on one event for rule evaluation (one per event, shared by every rule)."""

    __slots__ = ("event", "fields", "aliases", "_values", "_lower", "_cased", "_record", "_haystack")

    def __init__(self, event: Event, aliases: dict[str, Alias] | None = None) -> None:
        self.event = event
        self.fields = event.fields  # under the names Sigma rules use (see `add_spaceless_names`)
        self.aliases = aliases  # the logsource's Sigma name → field (or function of the event)
        self._values: dict[str, Any] = {}
        self._lower: dict[str, Any] = {}
        self._cased: dict[str, Any] = {}
        self._record: Any = _MISSING
        self._haystack: str | None = None

    def add_spaceless_names(self) -> dict[str, Any]:
        """A Windows event's EventData names with spaces (Defender's "Threat Name") also without
        ("ThreatName"), as Sigma rules name them. The detector's screen calls this when it meets a
        name with a space (it reads every name anyway). Returns the names added."""
        added = {key.replace(" ", ""): value for key, value in self.fields.items() if " " in key}
        self.fields = self.fields | added
        self._values.clear()
        return added

    # Each value is worked out once per event and kept. (A lookup that misses is told by a sentinel,
    # not by catching KeyError: most fields are read once per event, and a raised KeyError cost
    # ~1 µs, three of them for a field's first lowercase read.)

    def get(self, name: str) -> Any:
        """The field's value, or None when the event has no such field."""
        value = self._values.get(name, _MISSING)
        if value is _MISSING:
            value = self._values[name] = self._resolve(name)
        return value

    def lower(self, name: str) -> str | tuple[str, ...] | None:
        """The field as lowercase text (a tuple for a list), None when absent."""
        text = self._lower.get(name, _MISSING)
        if text is _MISSING:
            text = self.cased(name)
            if text is not None:
                text = text.lower() if type(text) is str else tuple(t.lower() for t in text)
            self._lower[name] = text
        return text

    def cased(self, name: str) -> str | tuple[str, ...] | None:
        text = self._cased.get(name, _MISSING)
        if text is _MISSING:
            text = self._cased[name] = to_text(self.get(name))
        return text

    def haystack(self) -> str:
        """What a keyword (field-less) detection searches: the raw line of a text log; the message
        and every field value of a JSON event."""
        if self._haystack is None:
            event = self.event
            if event.format in _JSON_FORMATS:
                self._haystack = event.message + "\n" + "\n".join(map(str, event.fields.values()))
            else:
                self._haystack = event.raw
        return self._haystack

    def haystack_lower(self) -> str:
        text = self._lower.get("\x00haystack")
        if text is None:
            text = self._lower["\x00haystack"] = self.haystack().lower()
        return text

    def _resolve(self, name: str) -> Any:
        event = self.event
        fields = self.fields
        if name in fields:
            value = fields[name]
            return with_message_text(value) if event.format == "windows" else value
        if self.aliases:
            alias = self.aliases.get(name)
            if alias is not None:
                return self.get(alias) if isinstance(alias, str) else alias(event)
        if name in ATTRIBUTE_FIELDS:
            return getattr(event, name)
        if name in DERIVED_FIELDS:
            return DERIVED_FIELDS[name](event)
        if "." in name:
            return self._dotted(name)
        return None

    def _dotted(self, name: str) -> Any:
        parts = name.split(".")
        fields = self.event.fields
        for cut in range(len(parts) - 1, 0, -1):  # "a.b" flattened by the parser, then the rest inside it
            head = ".".join(parts[:cut])
            if head in fields:
                found = _dig(fields[head], parts[cut:])
                if found is not _MISSING:
                    return found
        if self.event.format not in _JSON_FORMATS or self.event.format == "windows":
            return None
        found = _dig(self._original(), parts)
        return None if found is _MISSING else found

    def _original(self) -> Any:
        if self._record is _MISSING:
            try:
                self._record = bounded_json.loads(self.event.raw)
            except ValueError:
                self._record = None
            if self.event.format == "cloudtrail" and isinstance(self._record, dict):  # unwrapped from its envelope
                self._record = cloudtrail_record(self._record) or self._record
        return self._record
