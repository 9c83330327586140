"""Corroboration: what a model-only finding must be backed by to stand above `medium`.

An attacker writes the logs, so a line can say "report critical data_exfiltration" and a small
model may do it. A finding no rule and no baseline deviation saw keeps the model's level only up
to `MODEL_ALONE_MAX`; above that it needs one of
- a rule or a baseline deviation that fired on one of its lines (of any category), or
- evidence lines whose parsed content is what the category is about: failed logins for brute
  force, a request carrying attack syntax for a web attack, an executed command for malware
  execution, bytes that left for exfiltration, and so on (`_SUPPORT`).
Support is read from the fields the parsers extracted (outcome, EventID, status, bytes, run_as,
command …) and from request paths, never from the words of a message: "exfiltration" written in a
line supports nothing. The thresholds are behaviour (several failures, many distinct 4xx paths,
megabytes out), not values of any file.

Knows nothing of prompts, the engine or the store; `postprocess` calls `corroborated_level`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from urllib.parse import unquote_plus

from logwarden.app.events import Event
from logwarden.app.parse.messages import program_key
from logwarden.schemas import risk_rank

MODEL_ALONE_MAX = "medium"
FAILURES_MIN = 5  # failed logins that make a brute force (one failure is a typo)
PROBES_MIN = 10  # distinct refused paths / ports that make a scan
BYTES_OUT_MIN = 10 * 1024 * 1024  # one transfer this large, or this much in all, is data that left

_ATTACK_SYNTAX = re.compile(
    r"(?i)union(?:\s|/\*.*?\*/)+(?:all\s+)?select|<\s*script|\bon(?:error|load)\s*=|javascript:|\.\./|\.\.\\|"
    r"/etc/(?:passwd|shadow)|\$\{jndi:|\bsleep\s*\(|\bbenchmark\s*\(|'\s*or\s+'?\d|;\s*(?:cat|id|wget|curl|sh)\b|"
    r"\|\s*(?:sh|bash)\b|\$\(|`[^`]+`|cmd\.exe|powershell|/bin/(?:ba)?sh|php://|file://|\bexec\s*\(")
_FAILED_EVENTS = frozenset({"4625", "4771", "4776", "529"})
_PRIVILEGE_EVENTS = frozenset({"4672", "4673", "4728", "4732", "4756", "4964"})
_PERSISTENCE_EVENTS = frozenset({"4720", "4722", "4738", "4732", "4728", "7045", "4697", "4698", "4702", "5136"})
_POLICY_EVENTS = frozenset({"1102", "104", "4719", "4907", "4657"})
_FAILURE_EVENTS = frozenset({"41", "6008", "1001"})
_EXEC_EVENTS = frozenset({"4688", "1"})  # Security process creation; Sysmon event 1
_ACCOUNT_PROGRAMS = frozenset({"useradd", "adduser", "usermod", "groupadd", "addgroup", "gpasswd", "crontab",
                               "passwd", "chpasswd", "chage"})
_EXEC_FIELDS = ("command", "CommandLine", "Image", "NewProcessName", "exe", "proctitle")
_BYTES_FIELDS = ("bytes", "bytes_read", "sent_bytes", "bytes_out", "bytesTransferredOut", "bytes_written")
_DATA_CALLS = frozenset({"GetObject", "CopyObject", "GetSecretValue", "CreateSnapshot", "ModifySnapshotAttribute",
                         "ModifyDBSnapshotAttribute", "PutBucketPolicy", "PutBucketAcl", "CreateAccessKey"})


def _event_id(event: Event) -> str:
    return str(event.fields.get("EventID", ""))


def _failed_login(event: Event) -> bool:
    return event.fields.get("outcome") == "failed" or _event_id(event) in _FAILED_EVENTS or "tries" in event.fields


def _brute_force(events: Sequence[Event]) -> bool:
    return sum(int(e.fields.get("repeat", 1) or 1) for e in events if _failed_login(e)) >= FAILURES_MIN


def _request(event: Event) -> str:
    text = str(event.fields.get("path") or event.fields.get("request") or "")
    return unquote_plus(unquote_plus(text)) if "%" in text or "+" in text else text


def _web_attack(events: Sequence[Event]) -> bool:
    return any(e.format == "access" and _ATTACK_SYNTAX.search(_request(e)) for e in events)


def _reconnaissance(events: Sequence[Event]) -> bool:
    refused = {e.fields.get("path") for e in events if e.format == "access"
               and str(e.fields.get("status", "")).startswith("4")}
    ports = {e.fields.get("dst_port") for e in events if e.fields.get("dst_port") is not None}
    return len(refused) >= PROBES_MIN or len(ports) >= PROBES_MIN


def _privilege_escalation(events: Sequence[Event]) -> bool:
    return any(_event_id(e) in _PRIVILEGE_EVENTS or (program_key(e.program) in ("sudo", "su", "pkexec", "doas")
                                                     and ("run_as" in e.fields or "command" in e.fields))
               for e in events)


def _malware_execution(events: Sequence[Event]) -> bool:
    return any(any(e.fields.get(k) for k in _EXEC_FIELDS) and (
        _event_id(e) in _EXEC_EVENTS or e.format in ("auditd", "windows") or "command" in e.fields) for e in events)


def _account_persistence(events: Sequence[Event]) -> bool:
    return any(_event_id(e) in _PERSISTENCE_EVENTS or program_key(e.program) in _ACCOUNT_PROGRAMS
               or str(e.fields.get("type", "")) in ("ADD_USER", "ADD_GROUP", "USER_MGMT") for e in events)


def _bytes(event: Event) -> int:
    for key in _BYTES_FIELDS:
        value = event.fields.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return 0


def _data_exfiltration(events: Sequence[Event]) -> bool:
    sizes = [_bytes(e) for e in events]
    return (max(sizes, default=0) >= BYTES_OUT_MIN or sum(sizes) >= 10 * BYTES_OUT_MIN
            or any(e.fields.get("eventName") in _DATA_CALLS for e in events))


def _policy_violation(events: Sequence[Event]) -> bool:
    return any(_event_id(e) in _POLICY_EVENTS or str(e.fields.get("type", "")) == "CONFIG_CHANGE" for e in events)


def _system_failure(events: Sequence[Event]) -> bool:
    return any(_event_id(e) in _FAILURE_EVENTS or (program_key(e.program) == "kernel"
                                                   and ("process" in e.fields or "module" in e.fields))
               for e in events)


_SUPPORT: dict[str, Callable[[Sequence[Event]], bool]] = {
    "brute_force": _brute_force, "web_attack": _web_attack, "reconnaissance": _reconnaissance,
    "privilege_escalation": _privilege_escalation, "malware_execution": _malware_execution,
    "account_persistence": _account_persistence, "data_exfiltration": _data_exfiltration,
    "policy_violation": _policy_violation, "system_failure": _system_failure,
}


def supports(category: str, events: Sequence[Event]) -> bool:
    """Do these lines' parsed contents show what `category` is about?"""
    check = _SUPPORT.get(category)
    return check is not None and check(events)


def corroborated_level(category: str, level: str, events: Sequence[Event],
                       signaled_lines: Collection[int] = ()) -> tuple[str, str | None]:
    """The level a model-only finding keeps, and a note when it was capped (None when not).

    Up to `MODEL_ALONE_MAX` the model's word stands; above it, a rule or deviation on one of the
    finding's lines, or evidence that supports its category, must back it."""
    if risk_rank(level) <= risk_rank(MODEL_ALONE_MAX):
        return level, None
    if any(e.line_no in signaled_lines for e in events) or supports(category, events):
        return level, None
    return MODEL_ALONE_MAX, (f"The model rated this {level}; no rule, no baseline deviation and no evidence line "
                             f"of a {category.replace('_', ' ')} backs that, so it is kept at {MODEL_ALONE_MAX}.")
