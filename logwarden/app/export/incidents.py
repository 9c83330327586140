"""Incidents to SIEMs: JSONL (the stored shape), ECS (an alert whose related alerts are the
incident's records) and OCSF 1.7 Incident Finding (class 2005) naming its records' Detection
Findings in `finding_info_list`.

Owns: the incident layouts. Does not read the store: callers pass incidents with their members'
ids (`Incident.record_ids`). Splunk HEC and CEF carry records, not incidents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from logwarden.app.export.common import PRODUCT, SEVERITY_IDS, SEVERITY_NAMES, VENDOR, VERSION, epoch_ms, iso_utc
from logwarden.app.export.ecs import ECS_VERSION, technique_fields, workflow
from logwarden.app.export.ocsf import OCSF_VERSION, review_fields
from logwarden.app.safetext import json_safe
from logwarden.errors import InputError
from logwarden.schemas.incident import Incident
from logwarden.schemas.record import CLOSE_REASONS

INCIDENT_FORMATS = ("jsonl", "ecs", "ocsf")
OCSF_INCIDENT_CLASS, OCSF_FINDINGS, ACTIVITY_CREATE = 2005, 2, 1
# Incident Finding status_id (1 New, 2 In Progress, 5 Closed) of a review state; the verdict says why.
OCSF_STATUS = {"open": (1, "New"), "acknowledged": (2, "In Progress"), "in_progress": (2, "In Progress")}
OCSF_CLOSED = dict.fromkeys(CLOSE_REASONS, (5, "Closed"))


def to_ocsf_incident(incident: Incident) -> dict[str, Any]:
    severity_id = SEVERITY_IDS[incident.risk_level]
    event: dict[str, Any] = {
        "class_uid": OCSF_INCIDENT_CLASS, "class_name": "Incident Finding",
        "category_uid": OCSF_FINDINGS, "category_name": "Findings",
        "activity_id": ACTIVITY_CREATE, "activity_name": "Create",
        "type_uid": OCSF_INCIDENT_CLASS * 100 + ACTIVITY_CREATE, "type_name": "Incident Finding: Create",
        "severity_id": severity_id, "severity": SEVERITY_NAMES[severity_id],
        **review_fields(incident.status, incident.close_reason, incident.risk_level, OCSF_STATUS, OCSF_CLOSED),
        "desc": incident.summary or incident.title,
        "finding_info_list": [{"uid": record_id, "title": f"logwarden record {record_id}"}
                              for record_id in incident.record_ids],
        "metadata": {"version": OCSF_VERSION, "uid": incident.id, "profiles": ["incident"],
                     "product": {"name": PRODUCT, "vendor_name": VENDOR, "version": VERSION}},
        "time": epoch_ms(incident.last_ts) if incident.last_ts else None,
        "unmapped": {"logwarden": _custom(incident)},
    }
    if incident.first_ts:
        event["start_time"] = epoch_ms(incident.first_ts)
    if incident.last_ts:
        event["end_time"] = epoch_ms(incident.last_ts)
    if incident.owner:
        event["assignee"] = {"name": incident.owner}
    if incident.analyst_note:
        event["comment"] = incident.analyst_note
    return {k: v for k, v in event.items() if v is not None}


def to_ecs_incident(incident: Incident) -> dict[str, Any]:
    entities = incident.entities
    doc: dict[str, Any] = {
        "ecs": {"version": ECS_VERSION},
        "message": incident.summary or incident.title,
        "event": {"kind": "alert", "category": ["intrusion_detection"], "type": ["info"], "module": PRODUCT,
                  "dataset": f"{PRODUCT}.incident", "id": incident.id, "severity": SEVERITY_IDS[incident.risk_level],
                  "action": incident.category, "reason": incident.title},
        "rule": {"name": incident.title, "ruleset": PRODUCT},
        "observer": {"product": PRODUCT, "vendor": PRODUCT, "version": VERSION, "type": "log-analyser"},
        "labels": {"risk_level": incident.risk_level, "status": incident.status, "category": incident.category},
        "related": {"hosts": entities.get("hosts", []), "ip": entities.get("ips", []),
                    "user": entities.get("users", []), "hash": entities.get("hashes", [])},
        "threat": {"framework": "MITRE ATT&CK", "tactic": {"name": incident.tactics},
                   "technique": technique_fields(incident.techniques)},
        "kibana": {"alert": workflow(incident.status, incident.close_reason, incident.reviewer, incident.reviewed_at)},
        "logwarden": {"incident": _custom(incident)},
    }
    if incident.last_ts:
        doc["@timestamp"] = iso_utc(incident.last_ts)
        doc["event"]["end"] = iso_utc(incident.last_ts)
    if incident.first_ts:
        doc["event"]["start"] = iso_utc(incident.first_ts)
    return doc


def _custom(incident: Incident) -> dict[str, Any]:
    return {"id": incident.id, "title": incident.title, "summary": incident.summary, "stages": incident.stages,
            "next_steps": incident.next_steps, "story_by": incident.story_by, "record_ids": incident.record_ids,
            "cited": incident.cited, "hosts": incident.hosts, "pivots": incident.pivots, "owner": incident.owner,
            "close_reason": incident.close_reason, "reviewer": incident.reviewer}


def _json(build: Callable[[Incident], dict[str, Any]]) -> Callable[[Incident], str]:
    return lambda incident: json_safe(json.dumps(build(incident), ensure_ascii=False, separators=(",", ":")))


_SERIALIZERS: dict[str, Callable[[Incident], str]] = {
    "jsonl": lambda incident: json_safe(incident.model_dump_json()),
    "ecs": _json(to_ecs_incident),
    "ocsf": _json(to_ocsf_incident),
}


def export_incidents(incidents: Iterable[Incident], fmt: str) -> Iterator[str]:
    """One serialized event per incident (single-line JSON)."""
    serialize = _SERIALIZERS.get(fmt)
    if serialize is None:
        raise InputError(f"Incidents export as {', '.join(INCIDENT_FORMATS)}, not {fmt!r} (records do).")
    return (serialize(incident) for incident in incidents)
