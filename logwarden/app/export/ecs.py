"""Elastic Common Schema 9.x alert documents from risk records, with the review as Kibana's alert
workflow fields.

ECS categorisation values come from the ECS allowed-values lists (event.category / event.type),
picked per our category so that the pair is one ECS lists as expected. Our own fields that ECS
has no name for go under `logwarden.*` (custom fields in their own namespace, as ECS advises).
The review goes to `kibana.alert.workflow_*`, the fields Elastic Security's alerts carry (not ECS:
Kibana's alert field map, kbn-rule-data-utils): status open / acknowledged / closed, the closing
reason (Kibana's closing reasons), who changed it and when.

Owns: the ECS field layout. Does not serialize or send.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from logwarden.app import attack
from logwarden.app.export.common import (
    PRODUCT,
    SEVERITY_IDS,
    VERSION,
    attack_url,
    event_time,
    iso_utc,
    original_lines,
    rule_id,
    title,
    valid_ips,
)
from logwarden.schemas import RiskRecord

ECS_VERSION = "9.4.0"
# Kibana has no in-progress state for alerts (its old `in-progress` is read as acknowledged).
KIBANA_WORKFLOW = {"open": "open", "acknowledged": "acknowledged", "in_progress": "acknowledged", "closed": "closed"}

# our category → (event.category values, event.type values)
ECS_CATEGORIES: dict[str, tuple[list[str], list[str]]] = {
    "benign": (["host"], ["info"]),
    "brute_force": (["authentication"], ["start"]),
    "reconnaissance": (["network", "intrusion_detection"], ["info"]),
    "web_attack": (["web", "intrusion_detection"], ["info"]),
    "privilege_escalation": (["iam", "process"], ["change"]),
    "malware_execution": (["malware", "process"], ["info", "start"]),
    "account_persistence": (["iam"], ["creation", "user"]),
    "data_exfiltration": (["network", "file"], ["access"]),
    "system_failure": (["host"], ["info"]),
    "policy_violation": (["intrusion_detection"], ["info"]),
}


def to_ecs(record: RiskRecord) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "@timestamp": iso_utc(event_time(record)),
        "ecs": {"version": ECS_VERSION},
        "message": record.anomaly,
        "event": _event(record),
        "rule": {"id": rule_id(record), "name": title(record), "ruleset": PRODUCT, "version": record.prompt_version},
        "log": {"file": {"path": record.source}},
        "observer": {"product": PRODUCT, "vendor": PRODUCT, "version": VERSION, "type": "log-analyser"},
        "labels": {"risk_level": record.risk_level, "status": record.status, "category": record.category},
        "kibana": {"alert": workflow(record.status, record.close_reason, record.reviewer, record.reviewed_at)},
        "logwarden": _custom(record),
    }
    if record.techniques:
        doc["threat"] = _threat(record)
    doc.update(_entities(record))
    return doc


def workflow(status: str, reason: str | None, reviewer: str | None, when: datetime | None) -> dict[str, Any]:
    """`kibana.alert.workflow_*` of a review (a record's or an incident's)."""
    fields: dict[str, Any] = {"workflow_status": KIBANA_WORKFLOW[status]}
    if reason:
        fields["workflow_reason"] = reason
    if reviewer:
        fields["workflow_user"] = reviewer
    if when:
        fields["workflow_status_updated_at"] = iso_utc(when)
    return fields


def _event(record: RiskRecord) -> dict[str, Any]:
    categories, types = ECS_CATEGORIES[record.category]
    event: dict[str, Any] = {
        "kind": "alert", "category": categories, "type": types, "module": PRODUCT, "dataset": f"{PRODUCT}.risk",
        "severity": SEVERITY_IDS[record.risk_level], "risk_score": float(record.risk_score),
        "risk_score_norm": float(record.risk_score), "id": record.id, "action": record.category,
        "reason": record.anomaly, "created": iso_utc(record.created_at),
    }
    if record.first_ts:
        event["start"] = iso_utc(record.first_ts)
    if record.last_ts:
        event["end"] = iso_utc(record.last_ts)
    if record.evidence.exemplars:
        event["original"] = original_lines(record)
    return event


def _threat(record: RiskRecord) -> dict[str, Any]:
    """ECS splits ATT&CK ids: `technique.*` holds techniques (a sub-technique's parent too),
    `technique.subtechnique.*` sub-techniques. Names are the shipped ATT&CK table's own (a
    sub-technique's without its parent's), the record's where the table lacks the id."""
    given = {t.id: t.name for t in record.techniques}
    threat: dict[str, Any] = {"framework": "MITRE ATT&CK", "technique": technique_fields(list(given), given)}
    # a record's tactic is "Persistence, Privilege Escalation" when the technique serves several
    tactics = sorted({name.strip() for t in record.techniques for name in t.tactic.split(",") if name.strip()})
    if tactics:
        threat["tactic"] = {"name": tactics}
        ids = [attack.tactic_id(name) for name in tactics]
        if all(ids):  # ECS reads id, name and reference as parallel lists: all or none
            threat["tactic"].update(id=ids, reference=[f"https://attack.mitre.org/tactics/{i}/" for i in ids])
    return threat


def technique_fields(ids: list[str], given: dict[str, str] | None = None) -> dict[str, Any]:
    """`threat.technique` of these ATT&CK ids: the techniques and sub-techniques' parents, with
    `subtechnique` holding the sub-techniques; `given` names what the table does not know."""
    subs = [i for i in ids if "." in i]
    parents = list(dict.fromkeys([i for i in ids if "." not in i] + [sub.split(".")[0] for sub in subs]))
    technique = _named(parents, given or {})
    if subs:
        technique["subtechnique"] = _named(subs, given or {})
    return technique


def _named(ids: list[str], given: dict[str, str]) -> dict[str, Any]:
    return {"id": ids, "name": [attack.own_name(i) or given.get(i, "") for i in ids],
            "reference": [attack_url(i) for i in ids]}


def _entities(record: RiskRecord) -> dict[str, Any]:
    ind = record.indicators
    ips = valid_ips(ind.ips)
    found: dict[str, Any] = {}
    if ips:
        found["source"] = {"ip": ips[0]}
    if ind.users:
        found["user"] = {"name": ind.users[0]}
    if record.hosts or ind.hosts:
        found["host"] = {"name": (record.hosts or ind.hosts)[0]}
    if ind.urls:
        found["url"] = {"original": ind.urls[0]}
    related = {"ip": ips, "user": ind.users, "hosts": sorted({*ind.hosts, *record.hosts}),
               "hash": ind.hashes}
    found["related"] = {key: values for key, values in related.items() if values}
    return found


def _custom(record: RiskRecord) -> dict[str, Any]:
    return {
        "record_id": record.id, "trace": record.trace, "recommendation": record.recommendation,
        "line_start": record.line_start, "line_end": record.line_end, "line_count": record.line_count,
        "inode": record.inode, "decided_by": record.decided_by, "detections": record.detections,
        "model": record.model, "adapter": record.adapter, "prompt_version": record.prompt_version,
        "schema_version": record.schema_version, "status": record.status,
        "close_reason": record.close_reason, "analyst_note": record.analyst_note,
        "indicators": record.indicators.model_dump(), "run_id": record.run_id,
    }
