"""The pivot values of one record: host, account, source address, logon id, process GUID, file hash.

Taken from what the record already holds deterministically (its hosts, its regex-extracted
indicators, the raw text of its evidence lines for logon ids and process GUIDs), normalised so that
`WS-FIN-07.corp.example.com` and `ws-fin-07`, `CORP\\svc-sql` and `svc-sql` are one value. Values
that say nothing about a story (loopback addresses, the SYSTEM logon, machine accounts) are not
pivots. Knows nothing of the store or of how pivots link records (grouping.py).
"""

from __future__ import annotations

import ipaddress
import re

from logwarden.schemas.record import RiskRecord

PIVOT_KINDS = ("host", "user", "ip", "logon", "process", "hash")
WEAK_KINDS = frozenset({"host", "user"})  # broad: they bridge only the short gap
HOST_KINDS = frozenset({"host"})

# Built-in principals and logons every Windows host has: shared by everything, they tell nothing.
_GENERIC_USERS = frozenset({"system", "localsystem", "local service", "network service", "anonymous logon",
                            "anonymous", "-", "n/a", "unknown", "nobody", "dwm-1", "umfd-0", "umfd-1"})
_GENERIC_LOGONS = frozenset({"0x0", "0x3e7", "0x3e4", "0x3e5"})
_LOGON_ID = re.compile(r'"(?:Target|Subject)?LogonId"\s*:\s*"(0x[0-9a-fA-F]+)"')
_PROCESS_GUID = re.compile(r'"(?:Parent|Source|Target)?ProcessGuid"\s*:\s*"\{?([0-9a-fA-F-]{36})\}?"')

Pivot = tuple[str, str]  # (kind, normalised value)


def pivots_of(record: RiskRecord, kinds: frozenset[str] | None = None) -> set[Pivot]:
    """Every pivot of `record` of the kinds asked for (all when None)."""
    found = {("host", h) for h in map(host_key, [*record.hosts, *record.indicators.hosts]) if h}
    found |= {("user", u) for u in map(user_key, record.indicators.users) if u}
    found |= {("ip", ip) for ip in map(ip_key, record.indicators.ips) if ip}
    found |= {("hash", h.lower()) for h in record.indicators.hashes if h}
    texts = [line.text for line in record.evidence.exemplars]
    found |= {("logon", v.lower()) for t in texts for v in _LOGON_ID.findall(t) if v.lower() not in _GENERIC_LOGONS}
    found |= {("process", v.lower()) for t in texts for v in _PROCESS_GUID.findall(t) if set(v) - {"0", "-"}}
    return {p for p in found if kinds is None or p[0] in kinds}


def host_key(name: str) -> str:
    """A host's short name, lower case (an address stays whole)."""
    name = name.strip().lower().rstrip(".")
    if not name or name in ("-", "localhost"):
        return ""
    if ip_key(name):
        return name
    return name.split(".", 1)[0]


def user_key(name: str) -> str:
    """An account without its domain, lower case; "" for built-in principals and machine accounts."""
    name = name.strip().lower()
    name = name.rsplit("\\", 1)[-1].split("@", 1)[0]
    if not name or name in _GENERIC_USERS or name.endswith("$") or len(name) > 64:
        return ""
    return name


def ip_key(text: str) -> str:
    """A routable-looking address in canonical form; "" for loopback, unspecified, link-local or non-addresses."""
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return ""
    if address.is_loopback or address.is_unspecified or address.is_link_local or address.is_multicast:
        return ""
    return str(address)
