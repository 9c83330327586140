"""Splunk HTTP Event Collector envelopes from risk records.

`event` carries the whole record; `fields` are HEC indexed fields, which Splunk accepts only as
strings or lists of strings (no nesting), so they are flattened and stringified here.

Owns: the HEC envelope. Does not send (see forward.py).
"""

from __future__ import annotations

import socket
from typing import Any

from logwarden.app.export.common import event_time, valid_ips
from logwarden.schemas import RiskRecord

SOURCETYPE = "logwarden:risk"


def to_splunk_hec(record: RiskRecord) -> dict[str, Any]:
    return {
        "time": round(event_time(record).timestamp(), 3),
        "host": record.hosts[0] if record.hosts else socket.gethostname(),
        "source": record.source,
        "sourcetype": SOURCETYPE,
        "event": record.model_dump(mode="json"),
        "fields": _indexed_fields(record),
    }


def _indexed_fields(record: RiskRecord) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {
        "risk_level": record.risk_level, "risk_score": str(record.risk_score), "category": record.category,
        "status": record.status, "record_id": record.id, "decided_by": record.decided_by,
    }
    lists = {"technique": [t.id for t in record.techniques], "src_ip": valid_ips(record.indicators.ips),
             "user": record.indicators.users, "detection": record.detections}
    fields.update({key: values for key, values in lists.items() if values})
    return fields
