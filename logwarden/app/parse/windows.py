"""Windows Event Log and Sysmon events in every common JSON shape (EVTX→JSON, Winlogbeat, flat
exports, Log Analytics rows) and as rendered `<Event>` XML text (Sysmon for Linux, forwarded events).

Owns: recognising a Windows event's shape and flattening it into `docs/FIELDS.md` names.
Knows nothing about what an event means (app/detect) or which file it came from.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import Any

from logwarden.app.events import Event, LogLine
from logwarden.app.parse import bounded_json
from logwarden.app.parse.base import new_event
from logwarden.app.parse.messages import add_message_fields
from logwarden.app.parse.objects import ObjectParser, set_fields, text_of
from logwarden.app.parse.timestamps import parse_any
from logwarden.app.parse.web import split_host_port

_SUMMARY_MAX = 300
# EventData keys an analyst reads first; the summary shows these before the rest.
_WINDOWS_SUMMARY_KEYS = (
    "TargetUserName", "TargetDomainName", "SubjectUserName", "IpAddress", "WorkstationName",
    "LogonType", "Status", "SubStatus", "FailureReason", "Image", "CommandLine", "ParentImage",
    "User", "ServiceName", "ImagePath", "MemberName", "TargetSid", "ProcessName", "SourceIp",
    "DestinationIp", "DestinationPort", "QueryName", "TargetFilename", "TargetObject", "Details",
)


class WindowsParts:
    """The System part of a Windows event, whatever JSON shape it came in, plus its data."""

    __slots__ = ("event_id", "channel", "provider", "computer", "time", "data")

    def __init__(self, event_id: int, channel: Any, provider: Any, computer: Any, time: Any,
                 data: dict):
        self.event_id, self.channel, self.provider = event_id, channel, provider
        self.computer, self.time, self.data = computer, time, data


def windows_parts(obj: dict) -> WindowsParts | None:
    """Recognise EVTX→JSON, Winlogbeat 7+/ECS, Winlogbeat 6, flat (NXLog, Splunk, Security-Datasets,
    Get-WinEvent, Log Analytics' SecurityEvent/WindowsEvent tables) shapes, and rows that carry the
    whole event as XML text; None when the object is not a Windows event."""
    for shape in (_evtx_shape, _winlogbeat_shape, _flat_shape, _embedded_xml_shape):
        parts = shape(obj)
        if parts is not None:
            return parts
    return None


def _evtx_shape(obj: dict) -> WindowsParts | None:
    event = obj.get("Event")
    system = event.get("System") if isinstance(event, dict) else None
    if not isinstance(system, dict):
        return None
    event_id = event_number(system.get("EventID"))
    if event_id is None:
        return None
    data = _event_data(event.get("EventData"))
    data.update(_user_data(event.get("UserData")))
    return WindowsParts(event_id, system.get("Channel"), _attribute(system.get("Provider"), "Name"),
                        system.get("Computer"),
                        _attribute(system.get("TimeCreated"), "SystemTime"), data)


def _winlogbeat_shape(obj: dict) -> WindowsParts | None:
    winlog = obj.get("winlog")
    if isinstance(winlog, dict) and "event_id" in winlog:  # Winlogbeat 7+ (ECS)
        source, data = winlog, winlog.get("event_data")
        names = ("channel", "provider_name", "computer_name")
    elif "event_id" in obj and ("event_data" in obj or "log_name" in obj):  # Winlogbeat 6
        source, data = obj, obj.get("event_data")
        names = ("log_name", "source_name", "computer_name")
    else:
        return None
    event_id = event_number(source.get("event_id"))
    if event_id is None:
        return None
    channel, provider, computer = (source.get(n) for n in names)
    return WindowsParts(event_id, channel, provider, computer, obj.get("@timestamp"),
                        _event_data(data))


_FLAT_ID_KEYS = ("EventID", "EventId", "EventCode", "Id")
_FLAT_SYSTEM_KEYS = frozenset((
    *_FLAT_ID_KEYS, "Channel", "LogName", "EventLog", "SourceName", "ProviderName", "Provider", "Computer",
    "Hostname", "ComputerName", "MachineName", "@timestamp", "TimeCreated", "EventTime",
    "TimeGenerated", "EventData"))


def _flat_shape(obj: dict) -> WindowsParts | None:
    key = next((k for k in _FLAT_ID_KEYS if k in obj), None)
    if key is None or (key in ("Id", "EventCode") and not _has_any(obj, "LogName", "Channel")):
        return None  # a bare "Id" is any JSON's id, not a Windows event id
    event_id = event_number(obj[key])
    if event_id is None:
        return None
    nested = obj.get("EventData")
    if isinstance(nested, dict):
        data = _event_data(nested)
    else:  # the row's own columns, and a text EventData's keys (Log Analytics keeps both)
        data = {k: v for k, v in obj.items() if k not in _FLAT_SYSTEM_KEYS}
        if isinstance(nested, str):
            data |= _event_data(nested) or {"EventData": nested}
    return WindowsParts(
        # Log Analytics' Event table names them EventLog and Source ("Source" alone is too common a key)
        event_id, _first(obj, "Channel", "LogName", "EventLog"),
        _first(obj, "ProviderName", "SourceName", "Provider", *(("Source",) if "EventLog" in obj else ())),
        _first(obj, "Computer", "Hostname", "ComputerName", "MachineName"),
        _first(obj, "@timestamp", "TimeCreated", "EventTime", "TimeGenerated", "UtcTime"), data)


def _has_any(obj: dict, *keys: str) -> bool:
    return any(k in obj for k in keys)


def _first(obj: dict, *keys: str) -> Any:
    return next((obj[k] for k in keys if obj.get(k) not in (None, "")), None)


def event_number(value: Any) -> int | None:
    """An integer field as the Windows shapes write it (EventID, EventRecordID): a number, digits, or
    evtx_dump's {"#text": n, "#attributes": …}; None for anything else (a bool is not a number)."""
    if isinstance(value, dict):  # {"#text": 4625, "#attributes": {"Qualifiers": ...}}
        value = value.get("#text", value.get("value"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _attribute(value: Any, name: str) -> Any:
    """`{"#attributes": {"Name": x}}` (evtx_dump), `{"@Name": x}` (xmltodict), or the value."""
    if isinstance(value, dict):
        attributes = value.get("#attributes")
        if isinstance(attributes, dict) and name in attributes:
            return attributes[name]
        return value.get("@" + name, value.get(name))
    return value


def _event_data(value: Any) -> dict:
    """EventData as a flat dict, also from xmltodict's `{"Data": [{"@Name": k, "#text": v}]}` and
    from text: Log Analytics keeps it as a JSON string (the WindowsEvent table) or as the
    `<EventData>` XML (the SecurityEvent table)."""
    if isinstance(value, str):
        value = _decoded_event_data(value)
    if not isinstance(value, dict):
        return {}
    items = value.get("Data")
    if isinstance(items, dict):
        items = [items]
    if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
        named = {_data_name(i): i.get("#text", i.get("text")) for i in items if _data_name(i)}
        return named | _unnamed_data([i.get("#text", i.get("text")) for i in items if not _data_name(i)])
    return dict(value)


def _decoded_event_data(text: str) -> dict | None:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            value = bounded_json.loads(stripped)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    if stripped.startswith("<"):
        root = _xml_root(stripped)
        return None if root is None else _xml_event_data(root)
    return None


# --- Windows events as XML text (Log Analytics columns, forwarded rendered events) -------------------


def _embedded_xml_shape(obj: dict) -> WindowsParts | None:
    """A row whose column holds the whole `<Event>` XML: Log Analytics' Syslog table keeps Sysmon
    for Linux events so (`SyslogMessage`), and collectors that forward the rendered XML do the same."""
    for value in obj.values():
        parts = _rendered_event_parts(value) if isinstance(value, str) else None
        if parts is not None:
            return parts
    return None


def _rendered_event_parts(text: str) -> WindowsParts | None:
    """The parts of a rendered `<Event>` XML text (it starts with the element), or None when it is not one."""
    if not text.startswith("<Event") or "<System" not in text:
        return None
    root = _xml_root(text)
    return _xml_event_parts(root) if root is not None and _local(root.tag) == "Event" else None


def _xml_root(text: str) -> ElementTree.Element | None:
    # Event XML never has a DTD: refusing one means no entity is ever expanded (billion laughs)
    if "<!" in text:
        return None
    try:
        return ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(element: ElementTree.Element, name: str) -> ElementTree.Element | None:
    return next((c for c in element if _local(c.tag) == name), None)


def _xml_event_parts(root: ElementTree.Element) -> WindowsParts | None:
    system = _child(root, "System")
    if system is None:
        return None
    items = {_local(c.tag): c for c in system}
    empty = ElementTree.Element("missing")
    event_id = event_number(items.get("EventID", empty).text)
    if event_id is None:
        return None
    data = _xml_event_data(_child(root, "EventData"))
    user_data = _child(root, "UserData")
    for wrapper in [] if user_data is None else list(user_data):  # UserData wraps its keys in one element
        data.update({_local(c.tag): c.text for c in wrapper})
    return WindowsParts(event_id, items.get("Channel", empty).text, items.get("Provider", empty).get("Name"),
                        items.get("Computer", empty).text, items.get("TimeCreated", empty).get("SystemTime"), data)


def _xml_event_data(element: ElementTree.Element | None) -> dict:
    """`<Data Name="k">v</Data>` as {k: v}; unnamed `<Data>` as `_unnamed_data` keeps them."""
    if element is None:
        return {}
    items = [c for c in element if _local(c.tag) == "Data"]
    named = {c.get("Name"): c.text for c in items if c.get("Name")}
    return named | _unnamed_data([c.text or "" for c in items if not c.get("Name")])


def _unnamed_data(texts: list) -> dict:
    """`<Data>` elements without a Name (MSSQL audit, many Application events) are kept as one
    `Data` field, the way Sigma rules read them (`Data|contains`)."""
    texts = [t for t in texts if t is not None]
    if not texts:
        return {}
    return {"Data": texts[0] if len(texts) == 1 else texts}


def _data_name(item: dict) -> str | None:
    name = item.get("@Name", item.get("Name"))
    return name if isinstance(name, str) else None


def _user_data(value: Any) -> dict:
    """UserData wraps its keys in one element (e.g. `LogFileCleared`): unwrap it."""
    if not isinstance(value, dict):
        return {}
    inner = [v for k, v in value.items() if not k.startswith(("#", "@")) and isinstance(v, dict)]
    return {k: v for d in inner for k, v in d.items() if not k.startswith(("#", "@"))}


def _ip(value: Any) -> str | None:
    """An address as the event writes it, without the IPv4-mapped prefix or a port (RdpCoreTS's
    `ClientIP` is `10.0.0.5:50123`)."""
    if not isinstance(value, str) or value in ("", "-"):
        return None
    return split_host_port(value.removeprefix("::ffff:"))


def _user(value: Any) -> str | None:
    return value if isinstance(value, str) and value not in ("", "-") else None


def _summary(head: str, data: dict) -> str:
    keys = [k for k in _WINDOWS_SUMMARY_KEYS if k in data]
    keys += [k for k in data if k not in keys][: max(0, 6 - len(keys))]
    pairs = " ".join(f"{k}={data[k]}" for k in keys if data[k] not in (None, "", "-"))
    return f"{head}: {pairs}"[:_SUMMARY_MAX] if pairs else head

class WindowsParser(ObjectParser):
    """Windows Event Log / Sysmon events as JSON (see `windows_parts` for the shapes)."""

    name = "windows"

    def parse(self, line: LogLine) -> Event | None:
        text = line.text.lstrip()
        if text.startswith("<Event"):  # one rendered event as XML a line (Sysmon for Linux, exports)
            return xml_event(line, text)
        return super().parse(line)

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:
        parts = windows_parts(obj)
        return None if parts is None else windows_event(parts, line)


def xml_event(line: LogLine, text: str) -> Event | None:
    """The event of a rendered `<Event>` XML text (a whole line, or the message of a syslog line:
    Sysmon for Linux writes each event so to syslog), or None when it is not one."""
    parts = _rendered_event_parts(text.strip())
    return None if parts is None else windows_event(parts, line)


def windows_event(parts: WindowsParts, line: LogLine) -> Event:
    """A Windows (or Sysmon for Linux) event, whatever shape it came in, as a `windows` Event."""
    fields = dict(parts.data)
    fields.update(EventID=parts.event_id, Channel=parts.channel, Provider=parts.provider,
                  Computer=parts.computer)
    fields = {k: v for k, v in fields.items() if v is not None}
    src_ip = next(filter(None, map(_ip, map(parts.data.get, (
        "IpAddress", "SourceIp", "SourceAddress", "ClientAddress", "ClientIP")))), None)
    user = next(filter(None, map(_user, map(parts.data.get, (
        "TargetUserName", "User", "SubjectUserName")))), None)
    set_fields(fields, src_ip=src_ip, user=user)
    if isinstance(parts.data.get("payload"), str):  # Win32-OpenSSH: sshd's own log message in `payload`
        add_message_fields(fields, text_of(parts.data.get("process")), parts.data["payload"])
    head = f"EventID {parts.event_id} {parts.channel or ''}".rstrip()
    return new_event(line, "windows", ts=parse_any(parts.time), host=text_of(parts.computer),
                     program=text_of(parts.provider), message=_summary(head, parts.data),
                     fields=fields)

