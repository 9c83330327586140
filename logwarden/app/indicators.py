"""Deterministic indicator extraction: IPs, users, hosts, URLs, domains, hashes, processes.

Owns the regexes and field names that pull indicators out of parsed `Event`s (docs/FIELDS.md):
named fields first (src_ip, user, Computer, Image, Hashes, ...), then the free text (message and
string field values). Every list is deduplicated in order of first appearance and capped at the
schema's maximum. The regexes are written to run in linear time on hostile input (no nested
unbounded quantifiers); candidates are validated (`ipaddress`, hash lengths) rather than trusted.
It knows nothing about rules, the model or storage; the model never writes indicators.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from urllib.parse import urlsplit

from logwarden.app.events import Event
from logwarden.schemas import Indicators
from logwarden.schemas.record import LIST_MAX

_IP_FIELDS = ("src_ip", "IpAddress", "SourceIp", "SourceAddress", "DestinationIp", "sourceIPAddress", "addr",
              "client_ip", "rhost")
_USER_FIELDS = ("user", "TargetUserName", "SubjectUserName", "User", "acct", "UserName", "AccountName")
_HOST_FIELDS = ("Computer", "WorkstationName", "DestinationHostname", "SourceHostname", "hostname", "rhost")
_DOMAIN_FIELDS = ("QueryName", "DestinationHostname")
_PROCESS_FIELDS = ("Image", "ParentImage", "NewProcessName", "ParentProcessName", "ProcessName", "SourceImage",
                   "TargetImage", "exe", "comm", "Application")
_HASH_FIELDS = ("Hashes", "Hash", "md5", "sha1", "sha256", "MD5", "SHA1", "SHA256")
_GROUP_EVENTS = frozenset(map(str, (*range(4727, 4738), *range(4744, 4765))))  # group created/changed/member added
_NOT_A_NAME = frozenset({"", "-", "?", "(unknown)", "unknown", "n/a", "none", "null", "(none)"})

# The lookbehinds keep version numbers such as "Chrome/120.0.0.0" from looking like addresses.
_IPV4 = re.compile(r"(?<![\w.])(?<![A-Za-z0-9]/)(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)(?!\w)")
# A colon-bearing run of hex/colon/dot characters; ipaddress decides whether it is IPv6.
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f.]*:)[0-9A-Fa-f:.]{2,45}(?![\w:.])")
_URL = re.compile(r"\bhttps?://[^\s\"'<>\\^`{|}]{1,2000}", re.IGNORECASE)
_DOMAIN = re.compile(
    r"(?<![\w.@/-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){1,10}"
    r"(?:com|net|org|edu|gov|mil|int|io|ru|cn|info|biz|xyz|top|online|site|club|me|co|uk|de|fr|nl|jp|br|in|"
    r"tk|ml|ga|cf|gq|pw|cc|su|ir|kp|onion|local|internal|corp|lan|cloud|dev|app|tech|ly|to|ws)(?![\w-])",
    re.IGNORECASE)
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{32,}")
_HASH_LENGTHS = frozenset({32, 40, 64})
# (keyword, regex): the keyword is a cheap `in` test so that most lines skip the regex entirely.
_USER_PATTERNS = [(key, re.compile(rx)) for key, rx in (
    (" for ", r"(?:Failed|Accepted) \S+ for (?:invalid user |illegal user )?(\S+) from"),
    ("user ", r"\b(?:Invalid|Illegal|invalid|authenticating) user (\S+) (?:from|[0-9A-Fa-f.:]+ port)"),
    ("=", r"(?<![\w.-])(?:r?user|logname|acct|USER|user_name|username)=\"?([^\s;\"',]+)"),
    ("for user ", r"session (?:opened|closed) for user ([^\s(]+)"),
    (" : ", r"^\s*([\w.-]+) : (?:TTY=|\d+ incorrect password|user NOT in sudoers|command not allowed)"),
    ("(to ", r"\(to (\S+)\) (\S+) on"),
    ("FAILED su", r"FAILED su for (\S+) by (\S+)"),
    ("name=", r"new user: name=([^,\s]+)"),
    ("'", r"(?:add|delete user) '([^']+)'"),
    ("changed for", r"password changed for (\S+)"),
    ("added by", r"\buser (\S+) added by"),
    ("user '", r"\bfor user '([^']+)'"),
)]
# Fields whose values are never free text worth scanning (codes, numbers, names handled above).
_NOT_TEXT = frozenset({"program", "pid", "method", "protocol", "status", "bytes", "ident", "EventID", "Channel",
                       "Provider", "level", "module", "error_code", "type", "audit_id", "eventType", "awsRegion",
                       "eventName", "eventSource", "LogonType", "Status", "SubStatus", "msgid", "app_name",
                       "userIdentity_type", "arch", "syscall", "success", "exit", "ses", "auid", "uid", "gid",
                       "euid", "suid", "fsuid", "egid", "sgid", "fsgid", "tty", "subj", "res", "argc", "items"})
# Browser version strings look like addresses and domains; only their URLs (bot pages) count.
_URL_ONLY = frozenset({"user_agent", "userAgent", "UserAgent"})
_SHORTEST_INDICATOR = 7  # "1.2.3.4", "a.io/x": anything shorter holds no address, URL, domain or hash
_TRAILING = ".,;:)]}>'\""


class _Bucket:
    """An ordered, deduplicated, capped list."""

    __slots__ = ("items", "_seen")

    def __init__(self) -> None:
        self.items: list[str] = []
        self._seen: set[str] = set()

    @property
    def full(self) -> bool:
        return len(self.items) >= LIST_MAX

    def add(self, value: str) -> None:
        if value and value not in self._seen and len(self.items) < LIST_MAX:
            self._seen.add(value)
            self.items.append(value)


class _Collector:
    def __init__(self) -> None:
        self.ips, self.users, self.hosts, self.urls = _Bucket(), _Bucket(), _Bucket(), _Bucket()
        self.domains, self.hashes, self.processes = _Bucket(), _Bucket(), _Bucket()

    def result(self) -> Indicators:
        return Indicators(ips=self.ips.items, users=self.users.items, hosts=self.hosts.items, urls=self.urls.items,
                          domains=self.domains.items, hashes=self.hashes.items, processes=self.processes.items)

    @property
    def full(self) -> bool:
        return all(b.full for b in (self.ips, self.users, self.hosts, self.urls, self.domains, self.hashes,
                                    self.processes))


@lru_cache(maxsize=4096)  # the same few addresses recur in every record; ipaddress parses slowly
def normalize_ip(text: str) -> str | None:
    """The canonical address, or None if `text` is not a usable IP (unspecified addresses are not)."""
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # sshd logs IPv4 clients as ::ffff:a.b.c.d on dual-stack sockets
    return None if address.is_unspecified else str(address)


def _name(value: object) -> str | None:
    text = str(value).strip().strip("'\"")
    return None if text.lower() in _NOT_A_NAME else text


def _texts(event: Event) -> Iterator[tuple[str, str]]:
    """(field, text) for the free text of an event: its message, then the string-ish field values
    that may hold indicators (not codes or numbers, not already part of the message)."""
    user = event.fields.get("user")
    spaced = isinstance(user, str) and " " in user
    message = _without_user(event.message, user) if spaced else event.message
    if message and event.format != "cloudtrail":  # CloudTrail's message only restates its fields
        yield "message", message
    for key, value in event.fields.items():
        if key in _NOT_TEXT or (spaced and key == "user"):
            continue
        if isinstance(value, str):
            if len(value) >= _SHORTEST_INDICATOR and value not in message:
                yield key, value
        elif isinstance(value, (dict, list)):
            yield key, json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not message and not event.fields:
        yield "raw", event.raw


def _without_user(message: str, user: str) -> str:
    """The message without an account name holding spaces that the parser found in it: sshd logs a
    typed name verbatim, and "x from 10.0.0.5 port 22" inside one names no address of this event
    (the parser read the real one from the right). Real account names have no spaces."""
    return message.replace(user, " ")


def _from_fields(event: Event, out: _Collector) -> None:
    fields = event.fields
    for key in _IP_FIELDS:
        if key in fields and (ip := normalize_ip(str(fields[key]))):
            out.ips.add(ip)
    group_change = event.format == "windows" and str(fields.get("EventID", "")) in _GROUP_EVENTS
    for key in _USER_FIELDS:
        if group_change and key in ("TargetUserName", "user"):
            continue  # there it names the group, not an account
        if key in fields and (name := _name(fields[key])):
            out.users.add(name)
    for host in (event.host, *(fields.get(k) for k in _HOST_FIELDS)):
        if host is not None and (name := _name(host)) and normalize_ip(name) is None:
            out.hosts.add(name)
    for key in _DOMAIN_FIELDS:
        if key in fields and (name := _name(fields[key])) and normalize_ip(name) is None:
            out.domains.add(name.lower().rstrip("."))
    program = event.program if event.format not in ("windows", "cloudtrail", "auditd") else None
    for process in (program, *(fields.get(k) for k in _PROCESS_FIELDS)):
        if process is not None and (name := _name(process)):
            out.processes.add(name)
    if event.format == "access" and (path := fields.get("path")):
        out.urls.add(str(path)[:2000])
    for key in _HASH_FIELDS:
        if key in fields:
            _hashes_from(str(fields[key]), out)


def _hashes_from(text: str, out: _Collector) -> None:
    """md5/sha1/sha256-length hex runs that stand alone (Sysmon `SHA256=...,MD5=...` included)."""
    for match in _HEX_RUN.finditer(text):
        start, end = match.span()
        if end - start not in _HASH_LENGTHS or match.group().isdigit():
            continue
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or after.isalnum()):
            out.hashes.add(match.group().lower())


def _urls_from(text: str, out: _Collector) -> None:
    for match in _URL.finditer(text):
        url = match.group().rstrip(_TRAILING)
        out.urls.add(url)
        try:
            host = urlsplit(url).hostname
        except ValueError:
            continue
        if host:
            ip = normalize_ip(host)
            out.ips.add(ip) if ip else out.domains.add(host.lower().rstrip("."))


def _users_from(text: str, out: _Collector) -> None:
    found: list[tuple[int, str]] = []  # (position, name): names join in the order the line says them
    for keyword, pattern in _USER_PATTERNS:
        if keyword not in text:
            continue
        for match in pattern.finditer(text):
            found += [(match.start(i), g) for i, g in enumerate(match.groups(), 1) if g]
    for _, group in sorted(found):
        if name := _name(group.rstrip(_TRAILING)):
            out.users.add(name)


def _from_text(text: str, out: _Collector, *, free_text: bool) -> None:
    if not out.ips.full:
        if "." in text:
            for match in _IPV4.finditer(text):
                out.ips.add(normalize_ip(match.group()) or "")
        if ":" in text:
            for match in _IPV6.finditer(text):
                if match.group().count(":") >= 2:
                    out.ips.add(normalize_ip(match.group()) or "")
    if "://" in text and not out.urls.full:
        _urls_from(text, out)
    if not out.domains.full and "." in text:
        for match in _DOMAIN.finditer(text):
            out.domains.add(match.group().lower())
    if not out.hashes.full and len(text) >= 32:
        _hashes_from(text, out)
    if free_text and not out.users.full:
        _users_from(text, out)


def extract_indicators(events: Iterable[Event]) -> Indicators:
    """Indicators of these events, each list in order of first appearance, at most LIST_MAX long."""
    out = _Collector()
    for event in events:
        _from_fields(event, out)
        for key, text in _texts(event):
            if key in _URL_ONLY:
                if "://" in text and not out.urls.full:
                    _urls_from(text, out)
                continue
            # user names are read from log prose (the message); structured fields gave theirs above
            _from_text(text, out, free_text=key in ("message", "raw"))
        if out.full:
            break
    return _without_host_domains(out.result())


def _without_host_domains(found: Indicators) -> Indicators:
    """A host's FQDN is already under hosts; domains keep the other names."""
    hosts = {h.lower() for h in found.hosts}
    found.domains = [d for d in found.domains if d not in hosts]
    return found
