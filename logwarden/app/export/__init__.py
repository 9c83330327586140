"""Exports of risk records (and incidents, `incidents.py`) to SIEMs: serialization to JSONL, ECS, OCSF, Splunk HEC and CEF, and
forwarders to Splunk HEC (HTTP, indexer acknowledgement where offered) and syslog (RFC 5424 over UDP/TCP),
each destination's events sent once through a delivery cursor (`deliver.py`).

Does not read the store: callers pass records (e.g. from `Store.query_records`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from logwarden.app.export.cef import to_cef
from logwarden.app.export.deliver import RESEND, DeliveryReport, ForwardOptions, deliver, destination_key
from logwarden.app.export.ecs import to_ecs
from logwarden.app.export.errors import ForwardError
from logwarden.app.export.forward import forward_splunk_hec
from logwarden.app.export.incidents import INCIDENT_FORMATS, export_incidents, to_ecs_incident, to_ocsf_incident
from logwarden.app.export.ocsf import to_ocsf
from logwarden.app.export.splunk import to_splunk_hec
from logwarden.app.export.syslog import forward_syslog
from logwarden.app.export.tally import Tally
from logwarden.app.safetext import json_safe
from logwarden.errors import InputError
from logwarden.schemas import RiskRecord

FORMATS = ("jsonl", "ecs", "ocsf", "splunk-hec", "cef")


def _json(build: Callable[[RiskRecord], dict[str, Any]]) -> Callable[[RiskRecord], str]:
    # json_safe: the same JSON, with C1/bidi controls escaped (a SIEM console or a terminal may obey them raw)
    return lambda record: json_safe(json.dumps(build(record), ensure_ascii=False, separators=(",", ":")))


_SERIALIZERS: dict[str, Callable[[RiskRecord], str]] = {
    "jsonl": lambda record: json_safe(record.model_dump_json()),
    "ecs": _json(to_ecs),
    "ocsf": _json(to_ocsf),
    "splunk-hec": _json(to_splunk_hec),
    "cef": to_cef,
}


def export_records(records: Iterable[RiskRecord], fmt: str) -> Iterator[str]:
    """One serialized event per record, without a trailing newline (JSON is single-line)."""
    try:
        serialize = _SERIALIZERS[fmt]
    except KeyError:
        raise InputError(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.") from None
    return (serialize(record) for record in records)


__all__ = ["FORMATS", "INCIDENT_FORMATS", "RESEND", "DeliveryReport", "ForwardError", "ForwardOptions", "Tally",
           "deliver", "destination_key", "export_incidents", "export_records", "to_ecs_incident",
           "to_ocsf_incident", "forward_splunk_hec", "forward_syslog",
           "to_cef", "to_ecs", "to_ocsf", "to_splunk_hec"]
