"""First-seen activity per host: who logs on from where and how, which program starts which, how
a common program is called, and which services, scheduled tasks and Run keys exist.

Owns: reading those entities out of events (Windows Security/System/Sysmon, Sysmon for Linux,
sshd), the per-host entity profiles (counts and first day of each combination; the host's
`Age` is its own row), and judging a
combination never seen on a host that has a long enough history (`HOST_EVENTS` events over
`HOST_DAYS` distinct days: a first look at a host judges nothing). Knows nothing of the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logwarden.app.baseline.deviation import Deviation, Ref
from logwarden.app.baseline.sketch import Age
from logwarden.app.events import Event

HOST_EVENTS = 2000
HOST_DAYS = 2
IMAGE_CALLS = 20  # a command-line shape is judged only for a program the host has run this often

# kind → (category, ATT&CK, what it is)
KINDS = {
    "logon": ("policy_violation", ["T1078"], "logon"),
    "lineage": ("malware_execution", ["T1059"], "process lineage"),
    "cmdline": ("malware_execution", ["T1059"], "command line"),
    "service": ("account_persistence", ["T1543.003"], "service"),
    "task": ("account_persistence", ["T1053.005"], "scheduled task"),
    "runkey": ("account_persistence", ["T1547.001"], "Run key"),
}
_SERVICE_IDS, _TASK_IDS, _LOGON_IDS = {7045, 4697}, {4698, 106}, {4624}
_PROCESS_IDS = {1, 4688}
_SHAPE = re.compile(r"\"[^\"]*\"|'[^']*'|[A-Za-z]:\\[^\s]*|/[^\s]*|\b[0-9a-fA-F]{8,}\b|\d+")
_QUIET_USERS = frozenset(("system", "local service", "network service", "anonymous logon", "-", ""))


@dataclass(slots=True)
class Entity:
    kind: str
    host: str
    combo: str  # the combination, as it is keyed
    shown: str  # how an analyst reads it
    image: str | None = None  # cmdline: the program whose calls are counted


def _basename(path) -> str:
    return re.split(r"[\\/]", str(path or "-"))[-1].lower()[:120]


def shape_of(command_line: str) -> str:
    """A command line with its quoted strings, paths, hex and numbers replaced: its flags remain."""
    return " ".join(_SHAPE.sub("*", command_line[:2000]).split())[:300]


def entities_of(event: Event) -> list[Entity]:
    host = str(event.host or event.fields.get("Computer") or "-").lower()[:200]
    if event.format == "windows":
        return _windows(event, host)
    if event.format in ("syslog", "rfc5424") and event.program == "sshd" and event.message.startswith("Accepted"):
        user, address = event.fields.get("user"), event.fields.get("src_ip")
        return [Entity("logon", host, f"{user}|{address}|ssh", f"{user} over ssh from {address}")]
    return []


def _windows(event: Event, host: str) -> list[Entity]:
    f, event_id = event.fields, event.fields.get("EventID")
    if event_id in _LOGON_IDS and str(f.get("TargetUserName", "")).lower() not in _QUIET_USERS \
            and not str(f.get("TargetUserName", "")).endswith("$"):
        user, address, kind = f.get("TargetUserName"), f.get("IpAddress") or "-", f.get("LogonType", "?")
        return [Entity("logon", host, f"{str(user).lower()}|{address}|{kind}",
                       f"{user} logon type {kind} from {address}")]
    if event_id in _PROCESS_IDS and (f.get("Image") or f.get("NewProcessName")):
        image = _basename(f.get("Image") or f.get("NewProcessName"))
        parent = _basename(f.get("ParentImage") or f.get("ParentProcessName"))
        out = [Entity("lineage", host, f"{parent}>{image}", f"{parent} started {image}")]
        if f.get("CommandLine"):
            shape = shape_of(str(f["CommandLine"]))
            out.append(Entity("cmdline", host, f"{image}: {shape}", f"{image} called as {shape!r}", image=image))
        return out
    if event_id in _SERVICE_IDS and f.get("ServiceName"):
        return [Entity("service", host, str(f["ServiceName"]).lower()[:200],
                       f"service {f['ServiceName']} ({_basename(f.get('ImagePath') or f.get('ServiceFileName'))})")]
    if event_id in _TASK_IDS and f.get("TaskName"):
        return [Entity("task", host, str(f["TaskName"]).lower()[:200], f"scheduled task {f['TaskName']}")]
    target = str(f.get("TargetObject") or "")
    if event_id in (12, 13, 14) and "\\currentversion\\run" in target.lower():
        return [Entity("runkey", host, target.lower()[:300], f"Run key {target}")]
    return []


class EntityStats:
    """One combination on one host (or, keyed `calls IMAGE`, how often a program ran): count and first day."""

    __slots__ = ("count", "first_day")

    def __init__(self, count: int = 0, first_day: int | None = None):
        self.count, self.first_day = count, first_day

    def learn(self, day: int | None) -> None:
        self.count += 1
        if day is not None and (self.first_day is None or day < self.first_day):
            self.first_day = day

    def merge(self, other: EntityStats) -> None:
        self.count += other.count
        if other.first_day is not None and (self.first_day is None or other.first_day < self.first_day):
            self.first_day = other.first_day

    def weight(self) -> int:
        return 0  # a host's entity rows are capped by when they were last seen alone

    def to_json(self) -> dict:
        return {"count": self.count, "first_day": self.first_day}

    @classmethod
    def from_json(cls, data: dict) -> EntityStats:
        return cls(int(data["count"]), data.get("first_day"))


def host_warm(age: Age) -> bool:
    return age.warm(HOST_EVENTS, HOST_DAYS)


def entity_key(entity: Entity) -> str:
    return f"{entity.kind} {entity.combo}"


def calls_key(entity: Entity) -> str | None:
    return f"calls {entity.image}" if entity.image else None


def first_seen(entity: Entity, age: Age, line: int) -> Deviation:
    category, techniques, what = KINDS[entity.kind]
    return Deviation(kind="entity", family="entity", category=category, techniques=list(techniques),
                     key=f"{entity.host} {what}: {entity.combo[:80]}",
                     ref=str(Ref("entity", entity.host, (entity.kind, entity.combo))),
                     text=f"first {what} of its kind on {entity.host}: {entity.shown[:200]} (host history: "
                          f"{age.events:,} events over {age.days.clients()} days)",
                     lines=[line])
