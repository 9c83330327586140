"""JSON events: Windows/Sysmon (every common JSON shape of an event), CloudTrail, and any other
JSON object — one per line, or whole files (`{"Records": [...]}`, a top-level array,
pretty-printed objects) expanded into one event per record.

Owns: recognising which shape an object has and flattening it into `docs/FIELDS.md` names.
Knows nothing about what an event means (app/detect).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from logwarden.app.models import Event, LogLine
from logwarden.app.parse import bounded_json
from logwarden.app.parse.auditd import audit_event
from logwarden.app.parse.base import new_event
from logwarden.app.parse.messages import add_message_fields, app_failure_fields
from logwarden.app.parse.timestamps import parse_any
from logwarden.app.parse.web import json_access_fields, split_host_port, zeek_event

_SUMMARY_MAX = 300
# EventData keys an analyst reads first; the summary shows these before the rest.
_WINDOWS_SUMMARY_KEYS = (
    "TargetUserName", "TargetDomainName", "SubjectUserName", "IpAddress", "WorkstationName",
    "LogonType", "Status", "SubStatus", "FailureReason", "Image", "CommandLine", "ParentImage",
    "User", "ServiceName", "ImagePath", "MemberName", "TargetSid", "ProcessName", "SourceIp",
    "DestinationIp", "DestinationPort", "QueryName", "TargetFilename", "TargetObject", "Details",
)


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


def classify_object(obj: dict) -> str:
    """`windows`, `cloudtrail` or `json` for one decoded event object."""
    if cloudtrail_record(obj) is not None:
        return "cloudtrail"
    return "windows" if windows_parts(obj) is not None else "json"


def cloudtrail_record(obj: dict) -> dict | None:
    """The CloudTrail record an object holds: itself; an EventBridge event's `detail` ("AWS API Call
    via CloudTrail", how CloudTrail reaches Lambda, SQS and most SIEM pipelines); an item of
    `aws cloudtrail lookup-events` (its `CloudTrailEvent`: the record as a JSON string)."""
    if "eventSource" in obj and "eventName" in obj:
        return obj
    detail = obj.get("detail")
    if isinstance(detail, dict) and "eventSource" in detail and "eventName" in detail:
        return detail
    text = obj.get("CloudTrailEvent")
    inner = load_object(text) if isinstance(text, str) else None
    if inner is not None and "eventSource" in inner and "eventName" in inner:
        return inner
    return None


def is_cloudtrail_file(obj: dict) -> bool:
    """A CloudTrail delivery file: `{"Records": [ {...}, ... ]}`."""
    records = obj.get("Records")
    return isinstance(records, list) and all(isinstance(r, dict) for r in records[:5])


def is_azure_export(obj: dict) -> bool:
    """An Azure Monitor export blob (activity, sign-in or diagnostic logs): `{"records": [...]}`
    and nothing else (an app log line may carry a "records" list of its own)."""
    records = obj.get("records")
    return set(obj) == {"records"} and isinstance(records, list) and all(isinstance(r, dict) for r in records[:5])


# --- Windows ---------------------------------------------------------------------------------

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
    event_id = _event_id(system.get("EventID"))
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
    event_id = _event_id(source.get("event_id"))
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
    event_id = _event_id(obj[key])
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


def _event_id(value: Any) -> int | None:
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
    event_id = _event_id(items.get("EventID", empty).text)
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


class _ObjectParser:
    """A parser of one JSON object per line; subclasses read the object in `parse_object`."""

    name = "json"

    def __init__(self, *, reference_time: datetime | None = None):
        self.reference_time = reference_time

    def parse(self, line: LogLine) -> Event | None:
        obj = load_object(line.text)
        return None if obj is None else self.parse_object(obj, line)

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:  # pragma: no cover - abstract
        raise NotImplementedError


class WindowsParser(_ObjectParser):
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
    _set(fields, src_ip=src_ip, user=user)
    if isinstance(parts.data.get("payload"), str):  # Win32-OpenSSH: sshd's own log message in `payload`
        add_message_fields(fields, _text(parts.data.get("process")), parts.data["payload"])
    head = f"EventID {parts.event_id} {parts.channel or ''}".rstrip()
    return new_event(line, "windows", ts=parse_any(parts.time), host=_text(parts.computer),
                     program=_text(parts.provider), message=_summary(head, parts.data),
                     fields=fields)


def _set(fields: dict, **values: Any) -> None:
    fields.update({k: v for k, v in values.items() if v is not None})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- CloudTrail ------------------------------------------------------------------------------

_CLOUDTRAIL_KEYS = ("eventName", "eventSource", "eventType", "awsRegion", "sourceIPAddress",
                    "userAgent", "errorCode", "errorMessage", "requestParameters",
                    "responseElements", "additionalEventData", "vpcEndpointId", "sessionCredentialFromConsole",
                    "readOnly", "recipientAccountId", "eventCategory", "managementEvent", "eventID")
_CLOUDTRAIL_DICTS = frozenset(("requestParameters", "responseElements", "additionalEventData"))


def cloudtrail_user(identity: Any) -> str | None:
    """userName, else the last part of the ARN, else "root" for the Root identity."""
    if not isinstance(identity, dict):
        return None
    if identity.get("userName"):
        return str(identity["userName"])
    arn = identity.get("arn")
    if isinstance(arn, str) and "/" in arn:
        return arn.rsplit("/", 1)[1]
    return "root" if identity.get("type") == "Root" else None


class CloudTrailParser(_ObjectParser):
    """AWS CloudTrail records (one per line; whole files go through `parse_file_json`)."""

    name = "cloudtrail"

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:
        obj = cloudtrail_record(obj)
        if obj is None:
            return None
        fields = {k: obj.get(k) for k in _CLOUDTRAIL_KEYS if k in obj or k in _CLOUDTRAIL_DICTS}
        identity = obj.get("userIdentity")
        identity = identity if isinstance(identity, dict) else {}
        _set(fields, userIdentity_type=identity.get("type"), userIdentity_arn=identity.get("arn"),
             user=cloudtrail_user(identity), src_ip=_text(obj.get("sourceIPAddress")),
             user_agent=_text(obj.get("userAgent")))  # the digest's "top user_agent": rclone/aws-cli vs the console
        params = fields.get("requestParameters")
        bucket = _text(params.get("bucketName")) if isinstance(params, dict) else None
        # the bucket names what S3 data events touched: the digest's templates carry it to the model
        message = " ".join(str(v) for v in (fields.get("eventSource"), fields.get("eventName"), fields.get("user"), bucket,
                                            fields.get("errorCode")) if v)
        return new_event(line, "cloudtrail", ts=parse_any(obj.get("eventTime")),
                         program=_text(obj.get("eventSource")), message=message, fields=fields)


# --- any other JSON --------------------------------------------------------------------------

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
_UPN_CLAIMS = ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn", "upn", "unique_name",
               "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name", "name")
_PID_KEYS = ("pid", "process.pid", "_PID")


def flatten_one_level(obj: dict) -> dict:
    """`{"a": {"b": 1}, "c": 2}` → `{"a.b": 1, "c": 2}` (deeper values are kept as they are)."""
    flat: dict = {}
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            for inner, inner_value in value.items():
                flat[f"{key}.{inner}"] = inner_value
        else:
            flat[key] = value
    return flat


def _first_scalar(flat: dict, keys: Sequence[str]) -> Any:
    for key in keys:
        value = flat.get(key)
        if value not in (None, "") and isinstance(value, (str, int, float)):
            return value
    return None


class JsonParser(_ObjectParser):
    """Any JSON object per line (app logs, journald `-o json`, Docker, Suricata EVE, …)."""

    name = "json"

    def parse_object(self, obj: dict, line: LogLine) -> Event | None:
        flat = flatten_one_level(obj)
        fields = dict(flat)
        address = _text(_first_scalar(flat, _IP_KEYS))
        _set(fields, src_ip=split_host_port(address) if address else None,  # M365 writes "IP:port"
             user=_text(_first_scalar(flat, _USER_KEYS)), pid=_pid(_first_scalar(flat, _PID_KEYS)))
        _gcp_audit_identity(obj, fields)
        _azure_claims_identity(obj, fields)
        if isinstance(obj.get("sourceIPs"), list) and obj["sourceIPs"]:  # Kubernetes audit: the client first
            _set(fields, src_ip=fields.get("src_ip") or _text(obj["sourceIPs"][0]))
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
            audit = audit_event(line, message, host=_text(_first_scalar(flat, _HOST_KEYS)))
            if audit is not None:
                return audit
        if message is None:
            message = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)
        # journald's export is syslog in JSON: as a `syslog` event the auth/sudo/kernel rules apply
        fmt = "syslog" if _is_journald(obj) else "json"
        program = _text(_first_scalar(flat, _PROGRAM_KEYS))
        if fmt == "syslog":
            add_message_fields(fields, program, str(message))
        elif "src_ip" not in fields:  # an app's "login failed … from 1.2.3.4" in its message
            fields.update({k: v for k, v in app_failure_fields(str(message)).items() if k not in fields})
        return new_event(line, fmt, ts=ts, host=_text(_first_scalar(flat, _HOST_KEYS)),
                         program=program, message=str(message), fields=fields)


def _gcp_audit_identity(obj: dict, fields: dict) -> None:
    """GCP audit log entries keep the caller two levels down: `protoPayload.requestMetadata.callerIp`
    and `protoPayload.authenticationInfo.principalEmail` become `src_ip` and `user`."""
    payload = obj.get("protoPayload")
    if not isinstance(payload, dict):
        return
    caller = (payload.get("requestMetadata") or {}).get("callerIp")
    principal = (payload.get("authenticationInfo") or {}).get("principalEmail")
    _set(fields, src_ip=fields.get("src_ip") or _text(caller), user=fields.get("user") or _text(principal))


def _azure_claims_identity(obj: dict, fields: dict) -> None:
    """Azure Monitor's activity-log export keeps the caller in `identity.claims` (Key Vault's in
    `identity.claim`): its UPN claim and `ipaddr`, two levels down."""
    identity = obj.get("identity")
    claims = (identity.get("claims") or identity.get("claim")) if isinstance(identity, dict) else None  # Key Vault: "claim"
    if not isinstance(claims, dict):
        return
    upn = next((claims[k] for k in _UPN_CLAIMS if isinstance(claims.get(k), str) and claims[k]), None)
    _set(fields, src_ip=fields.get("src_ip") or _text(claims.get("ipaddr")), user=fields.get("user") or _text(upn))


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
    return parsers[classify_object(obj)].parse_object(obj, line)


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
