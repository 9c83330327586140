"""OCSF 1.7 Detection Finding (class 2004) events from risk records.

The review is the finding's `status_id`, and, once closed, its `verdict_id` (the incident profile);
`priority_id` follows the risk level, and `disposition_id` is Detected (the security_control
profile): logwarden reads logs and blocks nothing. Both profiles are named in `metadata.profiles`.

Owns: the OCSF layout, enum ids (severity, status, verdict, priority, risk level, observable types). Does not
serialize or send. Our fields OCSF has no attribute for go to `unmapped`, as OCSF prescribes.
"""

from __future__ import annotations

from typing import Any

from logwarden.app import attack
from logwarden.app.export.common import (
    PRODUCT,
    SEVERITY_IDS,
    SEVERITY_NAMES,
    VENDOR,
    VERSION,
    epoch_ms,
    event_time,
    rule_id,
    title,
    valid_ips,
)
from logwarden.schemas import RiskRecord, risk_rank

OCSF_VERSION = "1.7.0"
CLASS_UID, CATEGORY_UID, ACTIVITY_CREATE = 2004, 2, 1

PROFILES = ["incident", "security_control"]
# Finding status_id (1 New, 2 In Progress, 3 Suppressed: benign or a false positive, 4 Resolved, 5
# Archived) of a review state; closed depends on why: a duplicate is archived (the other one stays).
STATUS_IDS = {"open": (1, "New"), "acknowledged": (2, "In Progress"), "in_progress": (2, "In Progress")}
CLOSED_STATUS_IDS = {"true_positive": (4, "Resolved"), "benign_positive": (3, "Suppressed"),
                     "false_positive": (3, "Suppressed"), "duplicate": (5, "Archived")}
VERDICT_IDS = {"false_positive": (1, "False Positive"), "true_positive": (2, "True Positive"),
               "benign_positive": (5, "Benign"), "duplicate": (10, "Duplicate")}
PRIORITY_IDS = {"info": (1, "Low"), "low": (1, "Low"), "medium": (2, "Medium"), "high": (3, "High"),
                "critical": (4, "Critical")}
DISPOSITION_DETECTED = (15, "Detected")
RISK_LEVEL_NAMES = ("Info", "Low", "Medium", "High", "Critical")  # risk_level_id 0..4
# Observable type_id per the OCSF observable object's enum.
OBSERVABLE_TYPES = {"hosts": (1, "Hostname"), "domains": (1, "Hostname"), "ips": (2, "IP Address"),
                    "users": (4, "User Name"), "urls": (6, "URL String"), "hashes": (8, "Hash"),
                    "processes": (9, "Process Name")}


def to_ocsf(record: RiskRecord) -> dict[str, Any]:
    severity_id = SEVERITY_IDS[record.risk_level]
    finding: dict[str, Any] = {
        "class_uid": CLASS_UID, "class_name": "Detection Finding",
        "category_uid": CATEGORY_UID, "category_name": "Findings",
        "activity_id": ACTIVITY_CREATE, "activity_name": "Create",
        "type_uid": CLASS_UID * 100 + ACTIVITY_CREATE, "type_name": "Detection Finding: Create",
        "severity_id": severity_id, "severity": SEVERITY_NAMES[severity_id],
        **review_fields(record.status, record.close_reason, record.risk_level, STATUS_IDS, CLOSED_STATUS_IDS),
        "disposition_id": DISPOSITION_DETECTED[0], "disposition": DISPOSITION_DETECTED[1],
        "risk_level_id": risk_rank(record.risk_level), "risk_level": RISK_LEVEL_NAMES[risk_rank(record.risk_level)],
        "risk_score": record.risk_score,
        "time": epoch_ms(event_time(record)),
        "message": record.anomaly,
        "metadata": _metadata(record),
        "finding_info": _finding_info(record),
        "observables": _observables(record),
        "evidences": _evidences(record),
        "unmapped": _unmapped(record),
    }
    if record.analyst_note:
        finding["comment"] = record.analyst_note
    if record.hosts:
        finding["device"] = {"hostname": record.hosts[0], "type_id": 0}
    return finding


def review_fields(status: str, reason: str | None, risk_level: str, open_ids: dict[str, tuple[int, str]],
                  closed_ids: dict[str, tuple[int, str]]) -> dict[str, Any]:
    """status_id / status, verdict_id / verdict once closed, and priority_id / priority."""
    status_id, caption = closed_ids[reason] if status == "closed" and reason else open_ids[status]
    fields: dict[str, Any] = {"status_id": status_id, "status": caption}
    if status == "closed" and reason:
        fields["verdict_id"], fields["verdict"] = VERDICT_IDS[reason]
    fields["priority_id"], fields["priority"] = PRIORITY_IDS[risk_level]
    return fields


def _metadata(record: RiskRecord) -> dict[str, Any]:
    return {"version": OCSF_VERSION, "profiles": PROFILES, "uid": record.id, "log_name": record.source,
            "logged_time": epoch_ms(record.created_at),
            "product": {"name": PRODUCT, "vendor_name": VENDOR, "version": VERSION}}


def _finding_info(record: RiskRecord) -> dict[str, Any]:
    info: dict[str, Any] = {
        "uid": record.id, "title": title(record), "desc": record.anomaly, "types": [record.category],
        "analytic": {"uid": rule_id(record), "name": rule_id(record), "type_id": 1, "type": "Rule"},
        "created_time": epoch_ms(record.created_at),
        "attacks": [_attack(t.id, t.name, t.tactic) for t in record.techniques],
    }
    if record.first_ts:
        info["first_seen_time"] = epoch_ms(record.first_ts)
    if record.last_ts:
        info["last_seen_time"] = epoch_ms(record.last_ts)
    return info


def _attack(technique_id: str, name: str, tactic: str) -> dict[str, Any]:
    """Names from the shipped ATT&CK table (a sub-technique's without its parent's), else the record's."""
    found: dict[str, Any] = {"technique": {"uid": technique_id,
                                           "name": attack.own_name(technique_id) or name or technique_id}}
    if "." in technique_id:
        parent = technique_id.split(".")[0]
        found["sub_technique"] = found.pop("technique")
        found["technique"] = {"uid": parent, "name": attack.own_name(parent) or parent}
    if tactic:
        found["tactic"] = {"name": tactic}
    return found


def _observables(record: RiskRecord) -> list[dict[str, Any]]:
    found = []
    indicators = record.indicators.model_dump()
    indicators["ips"] = valid_ips(indicators["ips"])
    for kind, values in indicators.items():
        type_id, type_name = OBSERVABLE_TYPES[kind]
        found += [{"name": f"indicators.{kind}", "type_id": type_id, "type": type_name, "value": v} for v in values]
    return found


def _evidences(record: RiskRecord) -> list[dict[str, Any]]:
    return [{"data": {"source": record.source, "line_no": line.line_no, "text": line.text}}
            for line in record.evidence.exemplars]


def _unmapped(record: RiskRecord) -> dict[str, Any]:
    return {"logwarden": {
        "trace": record.trace, "recommendation": record.recommendation, "source": record.source,
        "inode": record.inode, "line_start": record.line_start, "line_end": record.line_end,
        "line_count": record.line_count, "decided_by": record.decided_by, "detections": record.detections,
        "model": record.model, "prompt_version": record.prompt_version, "run_id": record.run_id,
        "reviewer": record.reviewer,
    }}
