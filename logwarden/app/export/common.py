"""What every export format shares: product identity, the event time, severities, rule names,
ATT&CK references and indicator validation.

Owns: mappings from our vocabulary (risk levels, categories, statuses) to numbers SIEMs expect.
Does not know any one format's field layout.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime, timezone

from logwarden import __version__
from logwarden.schemas import RiskRecord

PRODUCT = "logwarden"
VENDOR = "logwarden"
VERSION = __version__
TITLE_MAX = 200

# OCSF severity_id captions; our five levels map onto 1..5 (0 Unknown and 6 Fatal are unused).
SEVERITY_IDS = {"info": 1, "low": 2, "medium": 3, "high": 4, "critical": 5}
SEVERITY_NAMES = {1: "Informational", 2: "Low", 3: "Medium", 4: "High", 5: "Critical"}
# CEF: 0-3 low, 4-6 medium, 7-8 high, 9-10 very high.
CEF_SEVERITY = {"info": 1, "low": 3, "medium": 5, "high": 8, "critical": 10}


def event_time(record: RiskRecord) -> datetime:
    """When it happened (the window's last line), else when it was found; always aware UTC."""
    ts = record.last_ts or record.first_ts or record.created_at
    return as_utc(ts)


def as_utc(ts: datetime) -> datetime:
    aware = ts if ts.tzinfo is not None else ts.astimezone()
    return aware.astimezone(timezone.utc)


def epoch_ms(ts: datetime) -> int:
    return int(as_utc(ts).timestamp() * 1000)


def iso_utc(ts: datetime) -> str:
    return as_utc(ts).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def rule_id(record: RiskRecord) -> str:
    """The deterministic detector that fired, else the category the model chose."""
    return record.detections[0] if record.detections else record.category


def title(record: RiskRecord) -> str:
    head = f"{record.category.replace('_', ' ')} ({record.risk_level})"
    where = f" on {record.host}" if record.host else ""
    first_sentence = record.anomaly.split("\n", 1)[0]
    return f"{head}{where}: {first_sentence}"[:TITLE_MAX]


def attack_url(technique_id: str) -> str:
    return "https://attack.mitre.org/techniques/" + technique_id.replace(".", "/") + "/"


def valid_ips(values: list[str]) -> list[str]:
    """Only plain addresses: SIEM ip fields reject anything else (also IPv6 zone ids such as
    `fe80::1%eth0`) and drop the whole event."""
    found = []
    for value in values:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            continue
        if getattr(address, "scope_id", None) is None:
            found.append(str(address))
    return found


def ipv4s(values: list[str]) -> list[str]:
    return [ip for ip in valid_ips(values) if ipaddress.ip_address(ip).version == 4]


def ipv6s(values: list[str]) -> list[str]:
    return [ip for ip in valid_ips(values) if ipaddress.ip_address(ip).version == 6]


def original_lines(record: RiskRecord) -> str:
    return "\n".join(line.text for line in record.evidence.exemplars)
