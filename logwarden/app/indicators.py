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
from urllib.parse import urlsplit

from logwarden.app.models import Event
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
_USERS = re.compile(
    r"(?:Failed|Accepted) \S+ for (?:invalid user |illegal user )?(\S+) from"
    r"|\b(?:Invalid|Illegal) user (\S+) from"
    r"|\b(?:invalid|authenticating) user (\S+) [0-9A-Fa-f.:]+ port"
    r"|\b(?:r?user|logname|acct)=\"?([^\s;\"',]+)"
    r"|session (?:opened|closed) for user ([^\s(]+)"
    r"|^\s*([\w.-]+) : (?:TTY=|\d+ incorrect password|user NOT in sudoers|command not allowed)"
    r"|\(to (\S+)\) (\S+) on"
    r"|FAILED su for (\S+) by (\S+)"
    r"|new user: name=([^,\s]+)"
    r"|(?:add|delete user) '([^']+)'"
    r"|password changed for (\S+)"
    r"|\buser (\S+) added by",
    re.IGNORECASE)
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


def _texts(event: Event) -> Iterator[str]:
    """The free text of an event: its message, then every string-ish field value."""
    if event.message:
        yield event.message
    for value in event.fields.values():
        if isinstance(value, str):
            yield value
        elif isinstance(value, (dict, list)):
            yield json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not event.message and not event.fields:
        yield event.raw


def _from_fields(event: Event, out: _Collector) -> None:
    fields = event.fields
    for key in _IP_FIELDS:
        if key in fields and (ip := normalize_ip(str(fields[key]))):
            out.ips.add(ip)
    for key in _USER_FIELDS:
        if key in fields and (name := _name(fields[key])):
            out.users.add(name)
    for host in (event.host, *(fields.get(k) for k in _HOST_FIELDS)):
        if host is not None and (name := _name(host)) and normalize_ip(name) is None:
            out.hosts.add(name)
    for key in _DOMAIN_FIELDS:
        if key in fields and (name := _name(fields[key])) and normalize_ip(name) is None:
            out.domains.add(name.lower().rstrip("."))
    for process in (event.program, *(fields.get(k) for k in _PROCESS_FIELDS)):
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
    for match in _USERS.finditer(text):
        for group in match.groups():
            if group and (name := _name(group.rstrip(_TRAILING))):
                out.users.add(name)


def _from_text(text: str, out: _Collector) -> None:
    if not out.ips.full:
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
    if not out.hashes.full:
        _hashes_from(text, out)
    if not out.users.full:
        _users_from(text, out)


def extract_indicators(events: Iterable[Event]) -> Indicators:
    """Indicators of these events, each list in order of first appearance, at most LIST_MAX long."""
    out = _Collector()
    for event in events:
        _from_fields(event, out)
        for text in _texts(event):
            _from_text(text, out)
        if out.full:
            break
    return out.result()
