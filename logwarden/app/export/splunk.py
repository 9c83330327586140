"""Splunk HTTP Event Collector envelopes from risk records.

`event` carries the whole record; `fields` are HEC indexed fields, which Splunk accepts only as
strings or lists of strings (no nesting), so they are flattened and stringified here. `host` is the
host the logs name (the first; all of them in the `hosts` field); a record whose lines name none has
no `host` key, so Splunk gives it the input's default rather than the analyst's own machine.

Owns: the HEC envelope. Does not send (see forward.py).
"""

from __future__ import annotations

from typing import Any

from logwarden.app.export.common import event_time, valid_ips
from logwarden.schemas import RiskRecord

SOURCETYPE = "logwarden:risk"


def to_splunk_hec(record: RiskRecord) -> dict[str, Any]:
    envelope: dict[str, Any] = {"time": round(event_time(record).timestamp(), 3)}
    if record.hosts:
        envelope["host"] = record.hosts[0]
    envelope.update(source=record.source, sourcetype=SOURCETYPE, event=record.model_dump(mode="json"),
                    fields=_indexed_fields(record))
    return envelope


def _indexed_fields(record: RiskRecord) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {
        "risk_level": record.risk_level, "risk_score": str(record.risk_score), "category": record.category,
        "status": record.status, "record_id": record.id, "decided_by": record.decided_by,
    }
    if record.close_reason:  # indexed fields are strings: none when it is not closed
        fields["close_reason"] = record.close_reason
    lists = {"technique": [t.id for t in record.techniques], "src_ip": valid_ips(record.indicators.ips),
             "user": record.indicators.users, "detection": record.detections, "hosts": record.hosts}
    fields.update({key: values for key, values in lists.items() if values})
    return fields
