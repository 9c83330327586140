"""Any JSON object — one per line, or whole files (`{"Records": [...]}`, a top-level array,
pretty-printed objects) expanded into one event per record — and which family an object is.

Owns: the generic JSON parser (app logs, journald, Docker, Suricata EVE, Kubernetes, M365, JSON
access logs…), `classify_object` and whole-document expansion. Windows shapes live in
windows.py, CloudTrail and cloud identities in cloud.py. Knows nothing about what an event means.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from logwarden.app.events import Event, LogLine
from logwarden.app.parse import bounded_json
from logwarden.app.parse.auditd import audit_event
from logwarden.app.parse.base import new_event
from logwarden.app.parse.cloud import CloudTrailParser, azure_claims_identity, cloudtrail_record, gcp_audit_identity
from logwarden.app.parse.messages import add_message_fields, app_failure_fields
from logwarden.app.parse.objects import ObjectParser, note_duplicate_keys, set_fields, text_of
from logwarden.app.parse.timestamps import parse_any
from logwarden.app.parse.web import json_access_fields, split_host_port, zeek_event
from logwarden.app.parse.windows import WindowsParser, windows_parts


def classify_object(obj: dict) -> str:
    """`windows`, `cloudtrail` or `json` for one decoded event object."""
    if cloudtrail_record(obj) is not None:
        return "cloudtrail"
    return "windows" if windows_parts(obj) is not None else "json"


_TIME_KEYS = ("@timestamp", "timestamp", "time", "ts", "datetime", "date", "eventTime",
              "requestReceivedTimestamp",  # Kubernetes audit
              "CreationTime",  # Microsoft 365 unified audit log
              "EdgeStartTimestamp",  # Cloudflare Logpush
              "EventTime", "time_local", "time_iso8601", "StartUTC", "asctime", "__REALTIME_TIMESTAMP",
              "eventTimestamp", "TimeGenerated")  # Azure activity log (REST / Event Hub, Log Analytics)
_MESSAGE_KEYS = ("message", "msg", "log", "text", "MESSAGE", "SyslogMessage")  # the last: Log Analytics
_HOST_KEYS = ("host", "hostname", "host.name", "host.hostname", "_HOSTNAME", "computer")
_PROGRAM_KEYS = ("program", "app", "application", "service", "service.name", "logger",
                 "logger_name", "process.name", "SYSLOG_IDENTIFIER", "_COMM")
_IP_KEYS = ("src_ip", "source.ip", "client.ip", "client_ip", "clientip", "remote_addr",
            "remote_ip", "srcip", "ip", "sourceIPAddress",
            "callerIpAddress", "ipAddress", "properties.ipAddress",  # Azure activity / Entra ID sign-ins
            "CallerIpAddress", "httpRequest.clientIpAddress", "claims.ipaddr",
            "ClientIP", "ClientIPAddress", "ActorIpAddress")  # Microsoft 365 unified audit log
_USER_KEYS = ("user", "user.name", "username", "userName", "usr", "account",
              "userPrincipalName", "properties.userPrincipalName",  # Entra ID sign-ins
              "caller", "Caller",  # Azure activity log (REST / Event Hub, Log Analytics)
              "user.username",  # Kubernetes audit
              "UserId")  # Microsoft 365 unified audit log
_PID_KEYS = ("pid", "process.pid", "_PID")


def flatten_one_level(obj: dict) -> dict:
    """`{"a": {"b": 1}, "c": 2}` → `{"a.b": 1, "c": 2}` (deeper values are kept as they are).
    When a dotted key and a nested one name the same field (`"host.name"` and `{"host":{"name"}}`)
    the one written first wins, as for a duplicated key (`bounded_json`)."""
    flat: dict = {}
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            for inner, inner_value in value.items():
                flat.setdefault(f"{key}.{inner}", inner_value)
        else:
            flat.setdefault(key, value)
    return flat


def _first_scalar(flat: dict, keys: Sequence[str]) -> Any:
    for key in keys:
        value = flat.get(key)
        if value not in (None, "") and isinstance(value, (str, int, float)):
            return value
    return None


class JsonParser(ObjectParser):
    """Any JSON object per line (app logs, journald `-o json`, Docker, Suricata EVE, …)."""

    name = "json"

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:
        flat = flatten_one_level(obj)
        fields = dict(flat)
        address = text_of(_first_scalar(flat, _IP_KEYS))
        set_fields(fields, src_ip=split_host_port(address) if address else None,  # M365 writes "IP:port"
                   user=text_of(_first_scalar(flat, _USER_KEYS)), pid=_pid(_first_scalar(flat, _PID_KEYS)))
        gcp_audit_identity(obj, fields)
        azure_claims_identity(obj, fields)
        if isinstance(obj.get("sourceIPs"), list) and obj["sourceIPs"]:  # Kubernetes audit: the client first
            set_fields(fields, src_ip=fields.get("src_ip") or text_of(obj["sourceIPs"][0]))
        if "id.orig_h" in obj and "uid" in obj:  # Zeek's JSON logs: http.log rows are access events
            event = zeek_event(line, obj)
            if event is not None:
                return event
        ts = parse_any(_first_scalar(flat, _TIME_KEYS))
        http = json_access_fields(obj, flat)
        if http is not None:  # a JSON access log (nginx, Traefik, Caddy, GCP LB, ECS…): the web rules apply
            return new_event(line, "access", ts=ts, host=http.get("vhost"), message=http["request"],
                             fields=fields | http)
        message = _first_scalar(flat, _MESSAGE_KEYS)
        if isinstance(message, str) and message.startswith("type="):  # an audit record a collector forwarded
            audit = audit_event(line, message, host=text_of(_first_scalar(flat, _HOST_KEYS)))
            if audit is not None:
                return audit
        if message is None:
            message = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)
        # journald's export is syslog in JSON: as a `syslog` event the auth/sudo/kernel rules apply
        fmt = "syslog" if _is_journald(obj) else "json"
        program = text_of(_first_scalar(flat, _PROGRAM_KEYS))
        if fmt == "syslog":
            add_message_fields(fields, program, str(message))
        elif "src_ip" not in fields:  # an app's "login failed … from 1.2.3.4" in its message
            fields.update({k: v for k, v in app_failure_fields(str(message)).items() if k not in fields})
        return new_event(line, fmt, ts=ts, host=text_of(_first_scalar(flat, _HOST_KEYS)),
                         program=program, message=str(message), fields=fields)

def _is_journald(obj: dict) -> bool:
    """`journalctl -o json` records: MESSAGE plus journald's own trusted fields."""
    return "MESSAGE" in obj and any(key in obj for key in ("__REALTIME_TIMESTAMP", "_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER"))


def _pid(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


# --- whole files -----------------------------------------------------------------------------

_JSON_PARSERS = {"windows": WindowsParser, "cloudtrail": CloudTrailParser, "json": JsonParser}


def parse_file_json(lines: Sequence[LogLine], *,
                    reference_time: datetime | None = None) -> list[Event] | None:
    """Expand a whole-file JSON document into one Event per record, or None if it is not one.

    Understands `{"Records": [...]}` (CloudTrail), `{"records": [...]}` (Azure Monitor exports), a
    top-level array, and one or more concatenated (pretty-printed) objects. Each record's Event points at the line and offset
    where the record starts; its `raw` is the record as compact JSON. A record that is not an
    object becomes a `generic` event. Lines between record starts belong to the record above.
    """
    if not lines:
        return None
    text = "\n".join(line.text for line in lines)
    records = _document_records(text)
    if records is None:
        return None
    starts = _line_starts(lines)
    parsers = {name: cls(reference_time=reference_time) for name, cls in _JSON_PARSERS.items()}
    return [_record_event(obj, lines[bisect_right(starts, pos) - 1], parsers)
            for pos, obj in records]


def _line_starts(lines: Sequence[LogLine]) -> list[int]:
    starts, position = [], 0
    for line in lines:
        starts.append(position)
        position += len(line.text) + 1
    return starts


def _record_event(obj: Any, first: LogLine, parsers: dict) -> Event:
    compact = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)
    line = LogLine(source=first.source, inode=first.inode, offset=first.offset,
                   line_no=first.line_no, text=compact, truncated=first.truncated)
    if not isinstance(obj, dict):
        return new_event(line, "generic", message=compact)
    return note_duplicate_keys(parsers[classify_object(obj)].parse_object(obj, line), obj)


_BETWEEN = re.compile(r"[\s,]*")  # whitespace and the commas that separate values


def _document_records(text: str) -> list[tuple[int, Any]] | None:
    """(start position, value) of every record in the document, or None if it is not JSON."""
    records: list[tuple[int, Any]] = []
    pos = _BETWEEN.match(text, 0).end()
    try:
        while pos < len(text):
            found, pos = _top_level_value(text, pos)
            records.extend(found)
            pos = _BETWEEN.match(text, pos).end()
    except (ValueError, IndexError):
        return None
    return records or None


def _top_level_value(text: str, pos: int) -> tuple[list[tuple[int, Any]], int]:
    if text[pos] == "[":
        return _array_items(text, pos)
    if text[pos] != "{":
        raise ValueError("not a JSON object or array")
    items, end = _records_of_object(text, pos)
    if items is not None:
        return items, end
    value, end = bounded_json.raw_decode(text, pos)
    return [(pos, value)], end


def _array_items(text: str, pos: int) -> tuple[list[tuple[int, Any]], int]:
    items: list[tuple[int, Any]] = []
    pos = _skip_space(text, pos + 1)
    while text[pos] != "]":
        value, end = bounded_json.raw_decode(text, pos)
        items.append((pos, value))
        pos = _BETWEEN.match(text, end).end()
    return items, pos + 1


def _records_of_object(text: str, pos: int) -> tuple[list[tuple[int, Any]] | None, int]:
    """Walk the keys of the object at `pos`; the items of its top-level "Records"/"records" array, if any."""
    items = None
    pos = _skip_space(text, pos + 1)
    while text[pos] != "}":
        key, pos = bounded_json.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        if text[pos] != ":":
            raise ValueError("expected ':'")
        pos = _skip_space(text, pos + 1)
        # CloudTrail, Azure Monitor exports, `aws cloudtrail lookup-events` output
        if key in ("Records", "records", "Events") and text[pos] == "[":
            items, pos = _array_items(text, pos)
        else:
            _, pos = bounded_json.raw_decode(text, pos)
        pos = _BETWEEN.match(text, pos).end()
    return items, pos + 1


def _skip_space(text: str, pos: int) -> int:
    while text[pos] in " \t\r\n":
        pos += 1
    return pos
