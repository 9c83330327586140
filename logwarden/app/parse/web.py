"""Web server logs: Apache/Nginx access logs (combined, common, vhost-prefixed), W3C extended
logs (IIS, CloudFront: `#Fields:` names the columns), Zeek logs (`#fields`, tab-separated; the
JSON form is read by `jsonlog`), AWS load balancer logs (`aws_lb`) and raw HTTP request dumps
(`http_request`: request line, headers, body) — all read into the access log's fields, as are
JSON access logs (`json_access_fields`, called by `jsonlog`), so every web rule applies — and
error logs (Apache 2.2, Apache 2.4, and Nginx's error format, all under the name `apache_error`).

Owns the line grammars and the request-line split. A request that is not `METHOD PATH PROTO`
(TLS bytes sent to a plain port, `-`, scanner junk) still parses: it is kept in `request`.
Knows nothing about what makes a request malicious (app/detect).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime

from logwarden.app.events import Event, LogLine
from logwarden.app.parse.base import new_event
from logwarden.app.parse.timestamps import MONTHS, make_datetime, micros, offset_tz, parse_any, parse_iso

_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_ACCESS = re.compile(rf"(?:(\S+) )?(\S+) (\S+) (\S+) \[([^\]]+)\] {_QUOTED} (\d{{3}}|-) (\d+|-)"
                     rf"(?: {_QUOTED} {_QUOTED})?(.*)")
_ACCESS_TIME = re.compile(r"(\d{1,2})/([A-Za-z]{3})/(\d{4}):(\d\d):(\d\d):(\d\d)(?:\.(\d+))?"
                          r" ?([+-]\d{4})?$")
_TIME_CACHE_MAX = 8192  # access logs repeat the same second many times

_APACHE_ERROR = re.compile(
    r"\[(?:[A-Z][a-z]{2} )?([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))? (\d{4})\]"
    r" \[(?:([^\]\s:]+):)?([a-z]+\d?)\](?: \[pid (\d+)(?::tid (\d+))?\])? ?(.*)")
_NGINX_ERROR = re.compile(r"(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d) \[([a-z]+)\] (\d+)#\d+: "
                          r"(.*)")
_CLIENT = re.compile(r"\[client ([^\]\s]+)\] ?")
_W3C_DATA = re.compile(r"\d{4}-\d\d-\d\d[ \t]\d\d:\d\d:\d\d")
# IIS's default columns when a file (a rotated piece, a copy) lacks its `#Fields:` header:
# IIS 7.5 writes 14, IIS 8.5+ adds cs(Referer).
_IIS_DEFAULT = "date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) {}sc-status sc-substatus sc-win32-status time-taken"
_IIS_COLUMNS = {14: _IIS_DEFAULT.format("").split(), 15: _IIS_DEFAULT.format("cs(Referer) ").split()}
# W3C column → access-log field (docs/FIELDS.md)
_W3C_FIELDS = {"c-ip": "src_ip", "cs-username": "user", "cs-method": "method", "cs-version": "protocol",
               "cs(user-agent)": "user_agent", "cs(referer)": "referrer", "cs-host": "vhost", "cs(host)": "vhost",
               "s-ip": "server_ip", "s-port": "server_port", "s-computername": "server",
               "sc-substatus": "substatus", "sc-win32-status": "win32_status", "time-taken": "time_taken_ms"}
_NGINX_CLIENT = re.compile(r", client: ([^,\s]+)")
_LB_TAIL = (r' (?P<status>\d{3}|-) (?:\d{3}|-) (?P<received>\d+|-) (?P<sent>\d+|-)'
            r' "(?P<request>[^"]*)" "(?P<agent>(?:[^"\\]|\\.)*)"')
_ALB = re.compile(r'(?:https?|h2|grpcs|wss?) (?P<time>\d{4}-\d\d-\d\dT\S+) (?P<lb>\S+) (?P<client>\S+) \S+'
                  r' \S+ \S+ \S+' + _LB_TAIL)
_ELB = re.compile(r'(?P<time>\d{4}-\d\d-\d\dT\S+) (?P<lb>[\w-]+) (?P<client>[0-9A-Fa-f:.]+:\d+) \S+'
                  r' \S+ \S+ \S+' + _LB_TAIL)
_HTTP_REQUEST = re.compile(r"([A-Z]{3,10}) (\S+) (HTTP/\d(?:\.\d)?)$")
_HTTP_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*): ?(.*)$")
_HEADER_FIELDS = {"user-agent": "user_agent", "referer": "referrer"}
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH"))
_ERROR_CODE = re.compile(r"\b(AH\d{5})\b")


class AccessParser:
    """`[vhost:port ]host ident user [time] "request" status bytes[ "referrer" "agent"][ extra]`."""

    name = "access"

    def __init__(self, *, reference_time: datetime | None = None):
        self._times: dict[str, datetime | None] = {}

    def parse(self, line: LogLine) -> Event | None:
        match = _ACCESS.match(line.text)
        if match is None:
            return None
        vhost, client, ident, user, stamp, request, status, size, referrer, agent, extra = (
            match.groups())
        ts = self._time(stamp)
        if ts is None:
            return None
        fields = {"src_ip": client, "request": request, **_split_request(request)}
        _put(fields, "ident", ident)
        _put(fields, "user", user)
        _put_status_and_bytes(fields, status, size)
        _put(fields, "referrer", referrer)
        _put(fields, "user_agent", agent)
        _put(fields, "extra", extra.strip() if extra else None)
        host = vhost.rsplit(":", 1)[0] if vhost else None
        _put(fields, "vhost", vhost)
        return new_event(line, "access", ts=ts, host=host, message=request, fields=fields)

    def _time(self, stamp: str) -> datetime | None:
        ts = self._times.get(stamp)
        if ts is None and stamp not in self._times:
            if len(self._times) >= _TIME_CACHE_MAX:
                self._times.clear()
            ts = self._times[stamp] = _access_time(stamp)
        return ts


class AwsLbParser:
    """AWS Application Load Balancer (`http 2024-… app/name/id client:port target:port … "GET
    http://host:80/p HTTP/1.1" "agent" …`) and Classic ELB (`2024-… name client:port …`) access
    logs, read into the access log's fields (`elb_status_code` is `status`, the client `src_ip`)."""

    name = "aws_lb"

    def __init__(self, *, reference_time: datetime | None = None):
        pass

    def parse(self, line: LogLine) -> Event | None:
        match = _ALB.match(line.text) or _ELB.match(line.text)
        if match is None:
            return None
        stamp, lb, client, status, received, sent, request, agent = (match.group(k) for k in (
            "time", "lb", "client", "status", "received", "sent", "request", "agent"))
        ts = parse_iso(stamp)
        if ts is None:
            return None
        fields: dict = {"src_ip": split_host_port(client), "request": request, "load_balancer": lb}
        split = _split_request(request)
        if split:
            vhost, path = _origin_form(split["path"])
            fields |= split | {"path": path}
            _put(fields, "vhost", vhost.rsplit(":", 1)[0] if vhost else None)
        _put_status_and_bytes(fields, status, sent)
        fields["received_bytes"] = _number(received)
        _put(fields, "user_agent", agent)
        return new_event(line, "access", ts=ts, host=fields.get("vhost"), message=request, fields=fields)


class W3CParser:
    """W3C extended log lines (`#Fields: date time c-ip cs-method cs-uri-stem …`), e.g. IIS, or
    CloudFront's tab-separated form.
    Stateful per file: each `#Fields:` directive sets the columns of the lines after it."""

    name = "w3c"

    def __init__(self, *, reference_time: datetime | None = None):
        self.columns: list[str] | None = None

    def parse(self, line: LogLine) -> Event | None:
        text = line.text
        if text.startswith("#"):
            if text.startswith("#Fields:"):
                self.columns = [c.lower() for c in text[len("#Fields:"):].split()]
            return None  # other directives (#Software, #Date) read as generic lines
        values = text.split("\t") if "\t" in text else text.split(" ")  # CloudFront separates with tabs
        columns = self.columns or _IIS_COLUMNS.get(len(values))
        if columns is None or len(values) != len(columns) or not _W3C_DATA.match(text):
            return None
        row = dict(zip(columns, values))
        if self.columns is None and not _looks_like_iis(row):
            return None  # a headerless guess must look like a request, not any dated 14-word line
        ts = parse_iso(f"{row.get('date', '')}T{row.get('time', '')}+00:00")  # W3C times are UTC
        if ts is None:
            return None
        fields = _w3c_fields(row)
        return new_event(line, "access", ts=ts, host=fields.get("server"), message=fields["request"],
                         fields=fields)


class ZeekParser:
    """Zeek's tab-separated logs (`#separator \\x09`, `#fields ts uid id.orig_h …`). http.log rows
    become `access` events; rows of other Zeek logs become `zeek` events with their fields."""

    name = "zeek"

    def __init__(self, *, reference_time: datetime | None = None):
        self.columns: list[str] | None = None

    def parse(self, line: LogLine) -> Event | None:
        text = line.text
        if text.startswith("#"):
            if text.startswith("#fields\t"):
                self.columns = text.split("\t")[1:]
            return None  # #separator, #path, #open …: generic lines
        if self.columns is None:
            return None
        values = text.split("\t")
        if len(values) != len(self.columns):
            return None
        row = {k: v for k, v in zip(self.columns, values) if v not in ("-", "(empty)")}
        return zeek_event(line, row)


class HttpRequestParser:
    """Raw HTTP/1.x requests, one after another (the CSIC 2010 web-attack dataset, request dumps of
    proxies and WAFs): a request line, header lines, and for POST/PUT/PATCH a body line. Stateful
    per file. The request line is an `access` event; so are the User-Agent and Referer headers
    (carrying that field) and the body (its parameters appended to the path as a query), so the
    web rules see every place a payload can sit. Other headers are `http_header` events. No
    status, client address or time: dumps have none."""

    name = "http_request"

    def __init__(self, *, reference_time: datetime | None = None):
        self.request: dict | None = None  # the fields of the request being read
        self.body_seen = False

    def parse(self, line: LogLine) -> Event | None:
        text = line.text.rstrip("\r")
        match = _HTTP_REQUEST.match(text)
        if match is not None:
            method, target, protocol = match.groups()
            vhost, path = _origin_form(target)
            self.request, self.body_seen = {"method": method, "path": path, "protocol": protocol}, False
            _put(self.request, "vhost", vhost)
            return self._access(line, {}, text)
        if self.request is None or not text:
            return None
        header = _HTTP_HEADER.match(text)
        if header is not None:
            name, value = header.group(1).lower(), header.group(2).strip()
            if name in _HEADER_FIELDS:  # without path or request: the request line already showed them to the rules
                fields = {k: v for k, v in self.request.items() if k != "path"} | {_HEADER_FIELDS[name]: value}
                return new_event(line, "access", host=fields.get("vhost"), message=text, fields=fields)
            return new_event(line, "http_header", message=text, fields={"header": name, "value": value})
        if self.request["method"] in _BODY_METHODS and not self.body_seen:
            self.body_seen = True
            path = self.request["path"]
            return self._access(line, {"path": f"{path}{'&' if '?' in path else '?'}{text}", "body": text}, text)
        return None

    def _access(self, line: LogLine, extra: dict, message: str) -> Event:
        fields = {**self.request, **extra}
        fields["request"] = f"{fields['method']} {self.request['path']} {fields['protocol']}"
        return new_event(line, "access", host=fields.get("vhost"), message=message, fields=fields)


# JSON access logs → the access log's fields: nginx `escape=json` formats, Traefik, Caddy, GCP
# load balancers (`httpRequest`), Cloudflare Logpush, ECS (Filebeat, Elastic), and app request
# logs. A dotted key is a path into the record ("httpRequest.status", ECS's "http.request.method").
_JSON_HTTP_KEYS = {
    "src_ip": ("remote_addr", "client_ip", "clientip", "remote_ip", "ClientHost", "ClientAddr", "httpRequest.remoteIp",
               "request.remote_ip", "request.client_ip", "client.ip", "source.ip", "c-ip", "ClientIP", "ip"),
    "method": ("request_method", "method", "RequestMethod", "httpRequest.requestMethod", "request.method",
               "http.request.method", "cs-method", "ClientRequestMethod"),
    "path": ("request_uri", "uri", "RequestPath", "path", "request.uri", "url.original", "httpRequest.requestUrl", "url",
             "cs-uri-stem", "ClientRequestURI", "ClientRequestPath"),
    "status": ("status", "DownstreamStatus", "httpRequest.status", "http.response.status_code", "response_status",
               "status_code", "sc-status", "EdgeResponseStatus", "OriginResponseStatus"),
    "user_agent": ("http_user_agent", "user_agent", "request_User-Agent", "httpRequest.userAgent", "user_agent.original",
                   "useragent", "cs(User-Agent)", "ClientRequestUserAgent"),
    "referrer": ("http_referer", "referer", "referrer", "request_Referer", "httpRequest.referer", "http.request.referrer",
                 "ClientRequestReferer"),
    "bytes": ("body_bytes_sent", "bytes_sent", "size", "DownstreamContentSize", "httpRequest.responseSize",
              "http.response.body.bytes", "sc-bytes", "EdgeResponseBytes"),
    "vhost": ("host", "http_host", "server_name", "RequestHost", "request.host", "url.domain", "ClientRequestHost"),
}


def json_access_fields(obj: dict, flat: dict) -> dict | None:
    """An HTTP request record (JSON) → the access log's fields, or None when it is not one: it
    needs a method and a request target (or nginx's `request` line), and a status or a client."""
    method, target, protocol = _pick(obj, flat, "method"), _pick(obj, flat, "path"), None
    request = flat.get("request")
    if isinstance(request, str) and (split := _split_request(request)):  # nginx: "GET /a?b HTTP/1.1"
        method, target, protocol = method or split["method"], target or split["path"], split.get("protocol")
    if not (isinstance(method, str) and method.isalpha() and isinstance(target, str) and target):
        return None  # most JSON logs leave here, after two lookups
    pick = {name: _pick(obj, flat, name) for name in ("src_ip", "status", "user_agent", "referrer", "bytes", "vhost")}
    if pick["status"] is None and pick["src_ip"] is None:
        return None
    host, path = _origin_form(target)
    fields = {"method": method.upper(), "path": path, "protocol": protocol or "HTTP/1.1"}
    fields["request"] = f"{fields['method']} {path} {fields['protocol']}"
    _put_status_and_bytes(fields, pick["status"], pick["bytes"])
    agent = pick["user_agent"] or _caddy_header(obj, "User-Agent")
    for name, value in (("src_ip", pick["src_ip"]), ("user_agent", agent), ("referrer", pick["referrer"]),
                        ("vhost", pick["vhost"] or host)):
        _put(fields, name, split_host_port(str(value)) if name == "src_ip" and value else value)
    return fields


def _pick(obj: dict, flat: dict, name: str) -> str | int | None:
    """The first non-empty scalar under one of `name`'s keys in `_JSON_HTTP_KEYS`."""
    values = (_lookup(obj, flat, key) for key in _JSON_HTTP_KEYS[name])
    return next((v for v in values if isinstance(v, (str, int)) and v != ""), None)


def _lookup(obj: dict, flat: dict, key: str) -> object:
    """`flat[key]`, else the value at that dotted path in the nested record (ECS nests 3 deep)."""
    if key in flat:
        return flat[key]
    value: object = obj
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _caddy_header(obj: dict, name: str) -> str | None:
    """Caddy logs headers as lists: `request.headers["User-Agent"] = ["curl/8.0"]`."""
    headers = (obj.get("request") or {}).get("headers") if isinstance(obj.get("request"), dict) else None
    values = headers.get(name) if isinstance(headers, dict) else None
    return values[0] if isinstance(values, list) and values and isinstance(values[0], str) else None


def _origin_form(target: str) -> tuple[str | None, str]:
    """`http://host:8080/a?b` → (`host:8080`, `/a?b`); `/a?b` → (None, `/a?b`)."""
    scheme, sep, rest = target.partition("://")
    if not sep or "/" in scheme:
        return None, target
    host, slash, path = rest.partition("/")
    return host or None, slash + path if slash else "/"


def zeek_event(line: LogLine, row: dict) -> Event | None:
    """One Zeek record (TSV row or JSON object) → an `access` event for http.log, else `zeek`."""
    ts = parse_any(row.get("ts"))
    if ts is None:
        return None
    http = zeek_http_fields(row)
    if http is not None:
        return new_event(line, "access", ts=ts, host=http.get("vhost"), message=http["request"], fields=http)
    fields = dict(row)
    _put(fields, "src_ip", row.get("id.orig_h"))
    _put(fields, "dst_ip", row.get("id.resp_h"))
    message = " ".join(f"{k}={v}" for k, v in row.items() if k not in ("ts", "uid"))
    return new_event(line, "zeek", ts=ts, message=message, fields=fields)


def zeek_http_fields(row: dict) -> dict | None:
    """Zeek http.log columns → the access log's fields; None when `row` is not an HTTP request."""
    method, uri = row.get("method"), row.get("uri")
    if not method or not uri or "id.orig_h" not in row:
        return None
    fields: dict = {"src_ip": str(row["id.orig_h"]), "method": str(method), "path": str(uri)}
    _put(fields, "vhost", row.get("host"))
    _put(fields, "user_agent", row.get("user_agent"))
    _put(fields, "referrer", row.get("referrer"))
    _put(fields, "user", row.get("username"))
    version = row.get("version")
    fields["protocol"] = f"HTTP/{version}" if version else "HTTP/1.1"
    fields["request"] = f"{method} {uri} {fields['protocol']}"
    _put_status_and_bytes(fields, row.get("status_code"), row.get("response_body_len"))
    _put(fields, "dst_ip", row.get("id.resp_h"))
    return fields


def _looks_like_iis(row: dict[str, str]) -> bool:
    return (row["cs-method"].isalpha() and row["cs-method"].isupper() and row["cs-uri-stem"].startswith("/")
            and len(row["sc-status"]) == 3 and row["sc-status"].isdigit() and _is_ip(row["c-ip"]))


def _w3c_fields(row: dict[str, str]) -> dict:
    """A W3C row → the access log's fields; '+' in user agents and referrers is an encoded space."""
    fields: dict = {}
    for column, value in row.items():
        name = _W3C_FIELDS.get(column)
        if name:
            _put(fields, name, value.replace("+", " ") if name in ("user_agent", "referrer") else value)
    path = row.get("cs-uri-stem", "-")
    if row.get("cs-uri-query", "-") != "-":
        path += "?" + row["cs-uri-query"]
    fields["path"] = path
    fields["request"] = f"{fields.get('method', '-')} {path} {fields.get('protocol', 'HTTP/1.1')}"
    _put_status_and_bytes(fields, row.get("sc-status"), row.get("sc-bytes"))
    return fields


def _number(value: object) -> int | None:
    """A count written as digits (a str or an int) → int; "-", "", None and anything else → None."""
    text = str(value) if value is not None else ""
    return int(text) if text.isdigit() else None


def _put_status_and_bytes(fields: dict, status: object, size: object) -> None:
    """`status` only when the log has one; `bytes` always (None when unknown), as access logs do."""
    if (code := _number(status)) is not None:
        fields["status"] = code
    fields["bytes"] = _number(size)


def _access_time(stamp: str) -> datetime | None:
    match = _ACCESS_TIME.match(stamp)
    if match is None:
        return parse_iso(stamp)  # nginx `$time_iso8601` inside the brackets
    d, mon, y, h, mi, s, frac, zone = match.groups()
    month = MONTHS.get(mon.title())
    if month is None:
        return None
    tz = offset_tz(zone) if zone else None
    return make_datetime(int(y), month, int(d), int(h), int(mi), int(s), micros(frac), tz)


def _split_request(request: str) -> dict:
    """`GET /a?b HTTP/1.1` → method, path, protocol; HTTP/0.9 `GET /` → method, path; else {}."""
    parts = request.split(" ")
    if not (2 <= len(parts) <= 3 and parts[0].isalpha() and parts[0].isupper()):
        return {}
    if len(parts) == 3:
        if not parts[2].startswith("HTTP/"):
            return {}
        return {"method": parts[0], "path": parts[1], "protocol": parts[2]}
    return {"method": parts[0], "path": parts[1]}


def _put(fields: dict, key: str, value: str | None) -> None:
    if value and value != "-":
        fields[key] = value


def split_host_port(token: str) -> str:
    """`1.2.3.4:5678` → `1.2.3.4`; `[::1]:80` → `::1`; a bare IPv6 `2001:db8::1:5678` → its
    address when the remainder is one, else the token as it was."""
    if token.startswith("["):
        return token[1:].partition("]")[0]
    if token.count(":") == 1:
        return token.split(":", 1)[0]
    if ":" in token:
        head, _, port = token.rpartition(":")
        if port.isdigit() and _is_ip(head) and not _is_ip(token):
            return head
    return token


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class ApacheErrorParser:
    """Apache 2.2 `[date] [level] …`, 2.4 `[date] [module:level] [pid N:tid M] …`, and
    Nginx `YYYY/MM/DD HH:MM:SS [level] pid#tid: …`."""

    name = "apache_error"

    def __init__(self, *, reference_time: datetime | None = None):
        self.reference_time = reference_time

    def parse(self, line: LogLine) -> Event | None:
        first = line.text[:1]
        if first == "[":
            return self._parse_apache(line)
        if first.isdigit():
            return self._parse_nginx(line)
        return None

    def _parse_apache(self, line: LogLine) -> Event | None:
        match = _APACHE_ERROR.match(line.text)
        if match is None or match[1] not in MONTHS:
            return None
        mon, d, h, mi, s, frac, y, module, level, pid, tid, rest = match.groups()
        ts = make_datetime(int(y), MONTHS[mon], int(d), int(h), int(mi), int(s), micros(frac))
        if ts is None:
            return None
        fields: dict = {"level": level}
        _put(fields, "module", module)
        if pid:
            fields["pid"] = int(pid)
        message = self._take_client(rest, fields)
        code = _ERROR_CODE.search(message)
        if code:
            fields["error_code"] = code[1]
        return new_event(line, "apache_error", ts=ts, program=module or "apache",
                         message=message, fields=fields)

    @staticmethod
    def _take_client(rest: str, fields: dict) -> str:
        """Move `[client IP:port]` into fields; the message keeps the text around it."""
        client = _CLIENT.search(rest)
        if client is None:
            return rest
        fields["src_ip"] = split_host_port(client[1])
        return rest[:client.start()] + rest[client.end():]

    def _parse_nginx(self, line: LogLine) -> Event | None:
        match = _NGINX_ERROR.match(line.text)
        if match is None:
            return None
        y, mo, d, h, mi, s, level, pid, message = match.groups()
        ts = make_datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
        if ts is None:
            return None
        fields: dict = {"level": level, "pid": int(pid)}
        client = _NGINX_CLIENT.search(message)
        if client:
            fields["src_ip"] = client[1]
        return new_event(line, "apache_error", ts=ts, program="nginx", message=message,
                         fields=fields)
