"""The parsed key fields of one stored evidence line, for a reader: `EventID`, `Image`, `CommandLine`
of a Windows event, a CloudTrail call's name and caller, a web request's path and parameters.

Owns: re-parsing one line of text (in its source's format when known, else sniffed) and choosing
the few fields an analyst reads first. Knows nothing of the store, terminals or pages.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from logwarden.app.digest import SALIENT_FIELDS
from logwarden.app.events import Event, LogLine
from logwarden.app.parse import parse_stream

MAX_FIELDS = 12
VALUE_CHARS = 300
WEB_FIELDS = ("src_ip", "method", "path", "status", "bytes", "user", "vhost", "user_agent")
# Syslog-like lines are read as they are; their fields only repeat the text (program, pid).
_TEXT_FORMATS = frozenset({"syslog", "rfc5424", "generic", "apache_error"})


def key_fields(text: str, fmt: str | None = None) -> list[tuple[str, str]]:
    """(name, value) pairs of a line's key fields, re-parsed from its text (in `fmt` when known,
    else sniffed); [] for a plain text line or one that no longer parses (a stored line cut short)."""
    line = LogLine(source="<evidence>", inode=0, offset=0, line_no=1, text=text)
    try:
        _, events = parse_stream([line], fmt=fmt)
        event = next(events, None)
    except Exception:  # noqa: BLE001 - a line that no longer parses simply has no key fields
        return []
    return event_key_fields(event) if event is not None else []


def event_key_fields(event: Event) -> list[tuple[str, str]]:
    """(name, value) pairs of a parsed event's key fields, most telling first; [] for text lines."""
    if event.format in _TEXT_FORMATS:
        return []
    pairs = _web_fields(event) if event.format in ("access", "zeek") else _salient(event)
    return [(name, _short(value)) for name, value in pairs[:MAX_FIELDS]]


def _salient(event: Event) -> list[tuple[str, object]]:
    fields = event.fields
    return [(key, fields[key]) for key in SALIENT_FIELDS if fields.get(key) not in (None, "", "-", [], {})]


def _web_fields(event: Event) -> list[tuple[str, object]]:
    fields = event.fields
    pairs: list[tuple[str, object]] = [(key, fields[key]) for key in WEB_FIELDS
                                       if fields.get(key) not in (None, "", "-")]
    query = urlsplit(str(fields.get("path", ""))).query
    pairs += [(f"param {name}", value) for name, value in parse_qsl(query, keep_blank_values=True)]
    return pairs


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"
