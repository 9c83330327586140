"""An incident's deterministic parts, rolled up from its records: level, category, time span, hosts,
ATT&CK tactics and techniques, entities, and the title it keeps when no grounded story is written
("<top category> on <hosts> (<n> records)").

Knows nothing of the store or the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from logwarden.app.incidents.grouping import Group
from logwarden.schemas import risk_rank
from logwarden.schemas.incident import Incident, incident_id, story_key
from logwarden.schemas.record import RiskRecord

ENTITY_KINDS = ("hosts", "users", "ips", "domains", "hashes", "processes", "urls")
ENTITIES_MAX = 20
HOSTS_SHOWN = 3


def build_incident(group: Group, by_id: Mapping[str, RiskRecord]) -> Incident:
    """The incident of `group` (`by_id`: at least its records, by id) with its deterministic title.
    A mapping, not a list: built once per regrouping, not once per group (60k groups × 60k records)."""
    members = [by_id[i] for i in group.record_ids]
    top = max(members, key=lambda r: risk_rank(r.risk_level))
    incident = Incident(
        id=incident_id(group.record_ids[0]), title="", risk_level=top.risk_level, category=top_category(members),
        first_ts=min((r.first_ts or r.last_ts for r in members if r.first_ts or r.last_ts), default=None),
        last_ts=max((r.last_ts or r.first_ts for r in members if r.first_ts or r.last_ts), default=None),
        hosts=hosts_of(members), tactics=tactics_of(members), techniques=techniques_of(members),
        entities=entities_of(members), pivots=sorted(group.pivots), record_ids=list(group.record_ids),
        story_key=story_key(group.record_ids))
    incident.title = deterministic_title(incident)
    return incident


def deterministic_title(incident: Incident) -> str:
    n = len(incident.record_ids)
    where = _where(incident)
    return f"{incident.category.replace('_', ' ')}{where} ({n} record{'s' if n != 1 else ''})"


def _where(incident: Incident) -> str:
    if incident.hosts:
        shown = incident.hosts[:HOSTS_SHOWN]
        more = len(incident.hosts) - len(shown)
        return " on " + ", ".join(shown) + (f" +{more}" if more else "")
    ips = incident.entities.get("ips", [])
    return f" from {', '.join(ips[:HOSTS_SHOWN])}" if ips else ""


def top_category(members: Sequence[RiskRecord]) -> str:
    """The category with the most risk: summed scores, ties to the riskiest record's, then by name.
    Records a rule or the baseline backs speak first: what the model alone said (a log line can
    steer it) names the incident only when nothing else does."""
    weight: Counter[str] = Counter()
    for r in [r for r in members if r.decided_by != "llm"] or members:
        weight[r.category] += r.risk_score
    return max(sorted(weight), key=lambda c: weight[c])


def hosts_of(members: Sequence[RiskRecord]) -> list[str]:
    seen: dict[str, None] = {}
    for r in members:
        for host in r.hosts:
            seen.setdefault(host, None)
    return list(seen)


def tactics_of(members: Sequence[RiskRecord]) -> list[str]:
    """ATT&CK tactics in the order the incident first shows them."""
    seen: dict[str, None] = {}
    for r in members:
        for t in r.techniques:
            for tactic in filter(None, (x.strip() for x in t.tactic.split(","))):
                seen.setdefault(tactic, None)
    return list(seen)


def techniques_of(members: Sequence[RiskRecord]) -> list[str]:
    return list(dict.fromkeys(t.id for r in members for t in r.techniques))


def entities_of(members: Sequence[RiskRecord]) -> dict[str, list[str]]:
    """Per indicator kind, the values most records share first (at most ENTITIES_MAX each)."""
    found: dict[str, list[str]] = {}
    for kind in ENTITY_KINDS:
        counts: Counter[str] = Counter()
        for r in members:
            values = r.hosts + r.indicators.hosts if kind == "hosts" else getattr(r.indicators, kind)
            counts.update(set(values))
        if counts:
            found[kind] = [v for v, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:ENTITIES_MAX]
    return found
