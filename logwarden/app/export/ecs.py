"""Elastic Common Schema 8.x alert documents from risk records.

ECS categorisation values come from the ECS allowed-values lists (event.category / event.type),
picked per our category so that the pair is one ECS lists as expected. Our own fields that ECS
has no name for go under `logwarden.*` (custom fields in their own namespace, as ECS advises).

Owns: the ECS field layout. Does not serialize or send.
"""

from __future__ import annotations

from typing import Any

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

ECS_VERSION = "8.11.0"

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
        "logwarden": _custom(record),
    }
    if record.techniques:
        doc["threat"] = _threat(record)
    doc.update(_entities(record))
    return doc


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
    """ECS splits ATT&CK ids: `technique.*` holds techniques, `technique.subtechnique.*` sub-techniques."""
    techniques = [t for t in record.techniques if "." not in t.id]
    subs = [t for t in record.techniques if "." in t.id]
    parents = techniques + [t.model_copy(update={"id": t.id.split(".")[0], "name": ""}) for t in subs
                            if t.id.split(".")[0] not in {p.id for p in techniques}]
    technique: dict[str, Any] = {"id": [t.id for t in parents], "name": [t.name for t in parents],
                                 "reference": [attack_url(t.id) for t in parents]}
    if subs:
        technique["subtechnique"] = {"id": [t.id for t in subs], "name": [t.name for t in subs],
                                     "reference": [attack_url(t.id) for t in subs]}
    tactics = sorted({t.tactic for t in record.techniques if t.tactic})
    threat: dict[str, Any] = {"framework": "MITRE ATT&CK", "technique": technique}
    if tactics:
        threat["tactic"] = {"name": tactics}
    return threat


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
        "schema_version": record.schema_version, "status": record.status, "analyst_note": record.analyst_note,
        "indicators": record.indicators.model_dump(), "run_id": record.run_id,
    }
