"""Deterministic grouping: records that share a pivot value within a time gap form one incident.

For each pivot value, the records carrying it are taken in time order and chained: a record joins
the chain when it starts within the pivot kind's gap of the chain's end (specific pivots — address,
logon id, process GUID, hash — bridge the long gap; broad ones — host, account — the short gap).
A chain is busy when it holds more than `max_fanout` records, or (for a value that is not a host)
spans more than `max_pivot_hosts` hosts: a domain controller, a proxy address or a service account
seen everywhere. A busy chain links nothing, so it cannot glue unrelated stories together; rarer
values still link the same records. Incidents are the connected components (union-find).

Pure: records in, groups out; the same records always give the same groups. Knows nothing of the
store or the model; its defaults are `Settings`' (app/config.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from logwarden.app.config import declared
from logwarden.app.incidents.pivots import HOST_KINDS, WEAK_KINDS, Pivot, host_key, pivots_of
from logwarden.schemas.record import RiskRecord


@dataclass(frozen=True, slots=True)
class GroupingPolicy:
    gap_s: float = declared("incident_gap_s")
    weak_gap_s: float = declared("incident_weak_gap_s")
    pivots: frozenset[str] = frozenset(declared("incident_pivots").split(","))
    max_fanout: int = declared("incident_max_fanout")
    max_pivot_hosts: int = declared("incident_max_pivot_hosts")

    def gap_for(self, kind: str) -> float:
        return self.weak_gap_s if kind in WEAK_KINDS else self.gap_s


@dataclass(slots=True)
class Group:
    """The record ids of one incident (time order) and the pivot values that linked them."""

    record_ids: list[str]
    pivots: set[str] = field(default_factory=set)
    busy: set[str] = field(default_factory=set)  # values that were seen but too busy to link


def group_records(records: Sequence[RiskRecord], policy: GroupingPolicy, *,
                  check: Callable[[], None] = lambda: None) -> list[Group]:
    """Connected components of the records under `policy`; records without a time are alone.
    `check` is called between chains (a stop request raises there)."""
    timed = sorted((r for r in records if _start(r) is not None), key=lambda r: (_start(r), r.id))
    links = _UnionFind([r.id for r in records])
    linked_by: dict[str, set[str]] = defaultdict(set)
    busy: dict[str, set[str]] = defaultdict(set)
    for pivot, chain in _chains(timed, policy):
        check()
        label = f"{pivot[0]}={pivot[1]}"
        if _is_busy(pivot, chain, policy):
            for r in chain:
                busy[r.id].add(label)
            continue
        for a, b in zip(chain, chain[1:]):
            links.union(a.id, b.id)
            linked_by[a.id].add(label)
            linked_by[b.id].add(label)
    return _groups(records, links, linked_by, busy)


def _chains(timed: Sequence[RiskRecord], policy: GroupingPolicy):
    """(pivot, records) runs: each value's records in time order, cut where the gap is exceeded."""
    by_value: dict[Pivot, list[RiskRecord]] = defaultdict(list)
    for record in timed:
        for pivot in pivots_of(record, policy.pivots):
            by_value[pivot].append(record)
    for pivot in sorted(by_value):
        chain: list[RiskRecord] = []
        end: datetime | None = None
        for record in by_value[pivot]:
            if chain and (_start(record) - end).total_seconds() > policy.gap_for(pivot[0]):
                yield pivot, chain
                chain, end = [], None
            chain.append(record)
            end = max(filter(None, (end, _end(record))))
        if chain:
            yield pivot, chain


def _is_busy(pivot: Pivot, chain: Sequence[RiskRecord], policy: GroupingPolicy) -> bool:
    if len(chain) > policy.max_fanout:
        return True
    if pivot[0] in HOST_KINDS:
        return False
    hosts = {host_key(h) for r in chain for h in r.hosts} - {""}
    return len(hosts) > policy.max_pivot_hosts


def _groups(records: Sequence[RiskRecord], links: _UnionFind, linked_by: dict[str, set[str]],
            busy: dict[str, set[str]]) -> list[Group]:
    order = {r.id: (_start(r) is None, _start(r) or datetime.min, r.id) for r in records}
    members: dict[str, list[str]] = defaultdict(list)
    for r in records:
        members[links.find(r.id)].append(r.id)
    groups = []
    for ids in members.values():
        ids.sort(key=order.__getitem__)
        groups.append(Group(record_ids=ids, pivots=set().union(*(linked_by[i] for i in ids)),
                            busy=set().union(*(busy[i] for i in ids))))
    return sorted(groups, key=lambda g: order[g.record_ids[0]])


def _start(record: RiskRecord) -> datetime | None:
    return record.first_ts or record.last_ts


def _end(record: RiskRecord) -> datetime | None:
    return record.last_ts or record.first_ts


class _UnionFind:
    def __init__(self, keys: Sequence[str]) -> None:
        self.parent = {k: k for k in keys}

    def find(self, key: str) -> str:
        root = key
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[key] != root:
            self.parent[key], key = root, self.parent[key]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
