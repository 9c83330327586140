"""How often each kind of log message occurs, per format and program: a message of a kind never
written before, in a source with a long history, is a novelty.

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

from logwarden.app.baseline.deviation import Deviation, make_ref
from logwarden.app.baseline.sketch import Support, client_hash
from logwarden.app.events import Event
from logwarden.app.mine import SourceMiner, Window

SCOPE_LINES = 5000
SCOPE_DAYS = 2
HOST_K = 8
DAY_K = 32
LINES_SHOWN = 20  # evidence lines per novel template and window


def scope_of(event: Event, fmt: str) -> str:
    return f"{fmt}/{(event.program or '-')[:80]}"


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

    def to_json(self) -> list:
        return [self.count, self.hosts.to_json(), self.first_day]

    @classmethod
    def from_json(cls, data: list) -> TemplateStats:
        return cls(int(data[0]), Support.from_json(HOST_K, data[1]), data[2])


class TemplateScope:
    """A scope's age: the lines and distinct days it has been seen for (its kinds are `TemplateStats` rows)."""

    __slots__ = ("lines", "days")

    def __init__(self) -> None:
        self.lines = 0
        self.days = Support(DAY_K)

    @property
    def warm(self) -> bool:
        return self.lines >= SCOPE_LINES and self.days.clients() >= SCOPE_DAYS

    def learn(self, lines: int, days: Iterable[int]) -> None:
        self.lines += lines
        for day in days:
            self.days.add(client_hash(str(day)))

    def merge(self, other: TemplateScope) -> None:
        self.lines += other.lines
        self.days.merge(other.days)

    def to_json(self) -> dict:
        return {"n": self.lines, "d": self.days.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> TemplateScope:
        scope = cls()
        scope.lines = int(data.get("n", 0))
        scope.days = Support.from_json(DAY_K, data.get("d"))
        return scope


def new_clusters(window: Window, miner: SourceMiner) -> set[int]:
    """The clusters the source's miner first made in this window (their size is all this window's)."""
    counts = Counter(window.cluster_ids)
    return {cid for cid, n in counts.items() if miner.cluster_size(cid) <= n}


def novelty(scope: str, template: str, age: TemplateScope, kinds: int, lines: list[int]) -> Deviation:
    return Deviation(kind="template", family="template", category="system_failure", techniques=[],
                     key=f"novel {template[:80]}", ref=make_ref("template", scope, template[:300]),
                     text=f"{scope} never wrote a message like {template[:160]!r} in {age.lines:,} lines over "
                          f"{age.days.clients()} days of history ({kinds:,} known kinds)",
                     lines=lines[:LINES_SHOWN])
