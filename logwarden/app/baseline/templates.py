"""How often each kind of log message occurs, per format and program (per file for lines that name
no program): a message of a kind never written before, in a source with a long history, is a novelty.

Owns: the template profile of one scope (format + program: `syslog/sshd`, `windows/Microsoft-
Windows-Security-Auditing`…) — lines, distinct days and hosts seen, and each Drain template's count,
hosts and first day — and judging a window's new templates against it. A template is novel when
the source's own miner made a new cluster for it in this window AND no host writing to the shared
baseline has written it; a scope is judged only once it has `SCOPE_LINES` lines over `SCOPE_DAYS`
distinct days (nothing is judged on a first look at a log). Knows nothing of the store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import PurePath

from logwarden.app.baseline.deviation import Deviation, Ref
from logwarden.app.baseline.sketch import Age, Support, client_hash
from logwarden.app.events import Event
from logwarden.app.ingest.files import rotation_sort_key
from logwarden.app.mine import SourceMiner, Window

SCOPE_LINES = 5000
SCOPE_DAYS = 2
HOST_K = 8
LINES_SHOWN = 20  # evidence lines per novel template and window


def scope_of(event: Event, fmt: str, source: str) -> str:
    """What writes the line: its format and program, or — a line that names no program (generic
    text, an application's own log) — its file, rotations included: unrelated applications'
    logs in one scope would make each other's messages novel."""
    if event.program:
        return f"{fmt}/{event.program[:80]}"
    return f"{fmt}/file:{rotation_sort_key(PurePath(source).name)[0][:80]}"


def day_of(event: Event) -> int | None:
    return event.ts.toordinal() if event.ts is not None else None


class TemplateStats:
    """One message kind of one scope: how often, on how many hosts, since which day."""

    __slots__ = ("count", "hosts", "first_day")

    def __init__(self, count: int = 0, hosts: Support | None = None, first_day: int | None = None):
        self.count, self.hosts, self.first_day = count, hosts or Support(HOST_K), first_day

    def learn(self, lines: int, hosts: Iterable[str], day: int | None) -> None:
        self.count += lines
        for host in hosts:
            self.hosts.add(client_hash(host))
        if day is not None and (self.first_day is None or day < self.first_day):
            self.first_day = day

    def merge(self, other: TemplateStats) -> None:
        self.learn(other.count, (), other.first_day)
        self.hosts.merge(other.hosts)

    def weight(self) -> int:
        return self.hosts.clients()

    def to_json(self) -> dict:
        return {"count": self.count, "hosts": self.hosts.to_json(), "first_day": self.first_day}

    @classmethod
    def from_json(cls, data: dict) -> TemplateStats:
        return cls(int(data["count"]), Support.from_json(HOST_K, data.get("hosts")), data.get("first_day"))


def scope_warm(age: Age) -> bool:
    return age.warm(SCOPE_LINES, SCOPE_DAYS)


def new_clusters(window: Window, miner: SourceMiner) -> set[int]:
    """The clusters the source's miner first made in this window (their size is all this window's)."""
    counts = Counter(window.cluster_ids)
    return {cid for cid, n in counts.items() if miner.cluster_size(cid) <= n}


def novelty(scope: str, template: str, age: Age, kinds: int, lines: list[int]) -> Deviation:
    return Deviation(kind="template", family="template", category="system_failure", techniques=[],
                     key=f"novel {template[:80]}", ref=str(Ref("template", scope, (template[:300],))),
                     text=f"{scope} never wrote a message like {template[:160]!r} in {age.events:,} lines over "
                          f"{age.days.clients()} days of history ({kinds:,} known kinds)",
                     lines=lines[:LINES_SHOWN])
