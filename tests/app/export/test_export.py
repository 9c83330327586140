"""Export formats checked against their specs' required fields and value sets; CEF parsed back
by an independent, regex-free state machine that follows the CEF spec, with hostile values."""

from __future__ import annotations

import ipaddress
import json
from datetime import datetime, timedelta, timezone

import pytest
from _schemas import ecs_problems, ocsf_problems
from _store_helpers import make_record
from hypothesis import given, settings
from hypothesis import strategies as st

from logwarden.app.export import FORMATS, export_records
from logwarden.errors import InputError
from logwarden.schemas import CATEGORIES, Evidence, ExemplarLine, Indicators, RiskRecord, Technique

# -- an independent CEF parser (spec: "Implementing ArcSight CEF", header + extension rules) ---

HEADER_FIELDS = ("version", "vendor", "product", "device_version", "signature_id", "name", "severity")
EXT_UNESCAPE = {"\\": "\\", "=": "=", "n": "\n", "r": "\r"}


def parse_cef(line: str) -> tuple[dict[str, str], dict[str, str]]:
    header, rest = _parse_header(line)
    assert header["version"].startswith("CEF:"), line
    header["version"] = header["version"][4:]
    return header, _parse_extension(rest)


def _parse_header(line: str) -> tuple[dict[str, str], str]:
    fields: list[str] = []
    current: list[str] = []
    i = 0
    while len(fields) < len(HEADER_FIELDS):
        assert i < len(line), f"truncated header: {line!r}"
        ch = line[i]
        if ch == "\\":
            nxt = line[i + 1]
            assert nxt in "\\|", f"bad header escape \\{nxt}"
            current.append(nxt)
            i += 2
            continue
        if ch == "|":
            fields.append("".join(current))
            current = []
        else:
            assert ch not in "\r\n", "line break in a header field"
            current.append(ch)
        i += 1
    return dict(zip(HEADER_FIELDS, fields)), line[i:]


def _parse_extension(text: str) -> dict[str, str]:
    """Keys run to the first `=`; a value runs until an unescaped `=`, whose key is the word after
    the value's last unescaped space."""
    pairs: dict[str, str] = {}
    key_chars: list[str] = []
    key: str | None = None
    value: list[str] = []
    last_space: int | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if key is None:
            if ch == "=":
                key = "".join(key_chars)
                assert key.isalnum() and key.isascii(), f"bad key {key!r}"
            else:
                key_chars.append(ch)
            i += 1
            continue
        if ch == "\\":
            assert text[i + 1] in EXT_UNESCAPE, f"bad extension escape \\{text[i + 1]}"
            value.append(EXT_UNESCAPE[text[i + 1]])
            i += 2
            continue
        assert ch not in "\r\n", "raw line break in an extension value"
        if ch == "=":
            assert last_space is not None, f"unescaped '=' inside the value of {key}"
            pairs[key] = "".join(value[:last_space])
            key = "".join(value[last_space + 1:])
            assert key.isalnum() and key.isascii(), f"bad key {key!r}"
            value, last_space = [], None
        else:
            if ch == " ":
                last_space = len(value)
            value.append(ch)
        i += 1
    if key is not None:
        pairs[key] = "".join(value)
    return pairs


def test_parser_reads_the_spec_example():
    line = ("CEF:0|security|threatmanager|1.0|100|detected a \\| in message|10|src=10.0.0.1 "
            "act=blocked a \\\\ dst=1.1.1.1 msg=line one\\nline two with \\= sign")
    header, ext = parse_cef(line)
    assert header["name"] == "detected a | in message" and header["severity"] == "10"
    assert ext == {"src": "10.0.0.1", "act": "blocked a \\", "dst": "1.1.1.1",
                   "msg": "line one\nline two with = sign"}


# -- CEF ---------------------------------------------------------------------------------------

HOSTILE = "pipe | back\\slash = equals\nnewline\r\ncrlf ünïcødé 用户 🚨 key=value \\|\\= end\\"


def test_cef_header_and_standard_keys():
    record = make_record()
    header, ext = parse_cef(next(export_records([record], "cef")))
    assert header["version"] == "0"
    assert (header["vendor"], header["product"]) == ("logwarden", "logwarden")
    assert header["signature_id"] == "ssh_brute_force"
    assert 0 <= int(header["severity"]) <= 10 and int(header["severity"]) >= 7  # high
    assert ext["src"] == "203.0.113.7" and ext["suser"] == "root" and ext["dhost"] == "bastion-1"
    assert ext["fname"] == record.source and ext["externalId"] == record.id
    assert int(ext["rt"]) == int(record.last_ts.timestamp() * 1000)
    labels = {ext[k + "Label"]: ext[k] for k in ext if k.startswith("cs") and not k.endswith("Label")}
    assert labels["mitreTechniques"] == "T1110.001" and labels["recommendation"] == record.recommendation


def test_cef_round_trips_hostile_values():
    record = make_record(anomaly=HOSTILE, trace="a=b c=d", host="h|o\\st",
                         indicators=Indicators(users=["do=main\\user name"], ips=["2001:db8::7"]))
    line = next(export_records([record], "cef"))
    assert "\n" not in line and "\r" not in line
    header, ext = parse_cef(line)
    assert ext["msg"] == HOSTILE
    assert ext["suser"] == "do=main\\user name" and ext["dhost"] == "h|o\\st"
    assert ext["c6a2"] == "2001:db8::7" and "src" not in ext  # src is IPv4-only in CEF
    assert header["name"].startswith("brute force (high) on h|o\\st: pipe | back\\slash = equals")


# printable text round-trips exactly; control and bidi characters are written visibly instead (tests/hostile)
cef_text = st.text(alphabet=st.sampled_from(list("ab =|\\\n\r\t€用🚨xyz="))
                   | st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), min_size=1, max_size=80)


@settings(max_examples=150, deadline=None)
@given(anomaly=cef_text, user=cef_text, trace=cef_text)
def test_cef_round_trip_property(anomaly, user, trace):
    record = make_record(anomaly=anomaly, trace=trace, indicators=Indicators(users=[user]))
    header, ext = parse_cef(next(export_records([record], "cef")))
    assert (ext["msg"], ext["suser"]) == (anomaly, user)
    labels = {ext[k + "Label"]: ext[k] for k in ext if k.startswith("cs") and not k.endswith("Label")}
    assert labels["trace"] == trace
    assert header["signature_id"] == "ssh_brute_force"


# -- JSONL and Splunk HEC ----------------------------------------------------------------------


def test_jsonl_is_the_record():
    record = make_record(anomaly=HOSTILE)
    line = next(export_records([record], "jsonl"))
    assert "\n" not in line and RiskRecord.model_validate_json(line) == record


def test_splunk_hec_envelope():
    record = make_record(techniques=[Technique(id="T1110.001"), Technique(id="T1078")])
    event = json.loads(next(export_records([record], "splunk-hec")))
    assert set(event) == {"time", "host", "source", "sourcetype", "event", "fields"}
    assert event["time"] == record.last_ts.timestamp() and event["sourcetype"] == "logwarden:risk"
    assert RiskRecord.model_validate(event["event"]) == record
    for name, value in event["fields"].items():  # HEC indexed fields: strings or lists of strings only
        assert isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)), name
    assert event["fields"]["technique"] == ["T1110.001", "T1078"]


# -- ECS ---------------------------------------------------------------------------------------

# ECS 8.x allowed values: event.category → its expected event.type values.
ECS_EXPECTED_TYPES = {
    "api": {"access", "admin", "allowed", "change", "creation", "deletion", "denied", "end", "info", "start", "user"},
    "authentication": {"start", "end", "info"}, "configuration": {"access", "change", "creation", "deletion", "info"},
    "database": {"access", "change", "info", "error"}, "driver": {"change", "end", "info", "start"},
    "email": {"info"}, "file": {"access", "change", "creation", "deletion", "info"},
    "host": {"access", "change", "end", "info", "start"},
    "iam": {"admin", "change", "creation", "deletion", "group", "info", "user"},
    "intrusion_detection": {"allowed", "denied", "info"}, "library": {"start"}, "malware": {"info"},
    "network": {"access", "allowed", "connection", "denied", "end", "info", "protocol", "start"},
    "package": {"access", "change", "deletion", "info", "installation", "start"},
    "process": {"access", "change", "end", "info", "start"}, "registry": {"access", "change", "creation", "deletion"},
    "session": {"start", "end", "info"}, "threat": {"indicator"},
    "vulnerability": {"info"}, "web": {"access", "error", "info"},
}
ECS_EVENT_KINDS = {"alert", "asset", "enrichment", "event", "metric", "state", "pipeline_error", "signal"}


@pytest.mark.parametrize("category", CATEGORIES)
def test_ecs_document(category):
    record = make_record(category=category, techniques=[Technique(id="T1110.001", name="Password Guessing",
                                                                  tactic="Credential Access")],
                         indicators=Indicators(ips=["not-an-ip", "198.51.100.9"], users=["alice"]))
    doc = json.loads(next(export_records([record], "ecs")))
    event = doc["event"]
    assert doc["@timestamp"] == "2026-11-29T10:03:00.000Z" and doc["ecs"]["version"] == "9.4.0"
    assert event["kind"] in ECS_EVENT_KINDS and event["kind"] == "alert"
    assert event["category"] and set(event["category"]) <= set(ECS_EXPECTED_TYPES)
    for event_type in event["type"]:
        assert any(event_type in ECS_EXPECTED_TYPES[c] for c in event["category"]), (category, event_type)
    assert isinstance(event["severity"], int) and 0 <= event["risk_score_norm"] <= 100
    assert event["original"] == record.evidence.exemplars[0].text and doc["message"] == record.anomaly
    assert doc["source"]["ip"] == "198.51.100.9" and doc["related"]["ip"] == ["198.51.100.9"]
    assert doc["user"]["name"] == "alice" and doc["host"]["name"] == "bastion-1"
    assert doc["log"]["file"]["path"] == record.source
    assert doc["rule"]["id"] == "ssh_brute_force" and doc["rule"]["ruleset"] == "logwarden"
    assert doc["logwarden"]["recommendation"] == record.recommendation
    assert ecs_problems(doc) == []
    assert doc["kibana"]["alert"] == {"workflow_status": "open"}


def test_ecs_threat_splits_techniques_and_subtechniques():
    record = make_record(techniques=[Technique(id="T1110.001", name="Password Guessing", tactic="Credential Access"),
                                     Technique(id="T1078", name="Valid Accounts", tactic="Persistence")])
    threat = json.loads(next(export_records([record], "ecs")))["threat"]
    assert threat["framework"] == "MITRE ATT&CK"
    assert threat["technique"]["id"] == ["T1078", "T1110"]
    assert threat["technique"]["reference"][0] == "https://attack.mitre.org/techniques/T1078/"
    assert threat["technique"]["subtechnique"]["id"] == ["T1110.001"]
    assert threat["technique"]["subtechnique"]["reference"] == ["https://attack.mitre.org/techniques/T1110/001/"]
    assert threat["tactic"]["name"] == ["Credential Access", "Persistence"]


# -- OCSF --------------------------------------------------------------------------------------

DETECTION_FINDING = "events/findings/detection_finding.json"
OCSF_REQUIRED = ("activity_id", "category_uid", "class_uid", "finding_info", "metadata", "severity_id", "time",
                 "type_uid")
OCSF_OBSERVABLE_TYPE_IDS = {"Hostname": 1, "IP Address": 2, "User Name": 4, "URL String": 6, "Hash": 8,
                            "Process Name": 9}


@pytest.mark.parametrize(("level", "severity_id"), [("info", 1), ("low", 2), ("medium", 3), ("high", 4),
                                                     ("critical", 5)])
def test_ocsf_detection_finding(level, severity_id):
    record = make_record(risk_level=level, status="closed", close_reason="false_positive", analyst_note="known scanner",
                         indicators=Indicators(ips=["203.0.113.7"], users=["root"], hosts=["web-1"],
                                               urls=["http://x/?q=1"], hashes=["d41d8cd98f00b204e9800998ecf8427e"],
                                               processes=["/bin/sh"]),
                         techniques=[Technique(id="T1110.001", name="Password Guessing", tactic="Credential Access")])
    finding = json.loads(next(export_records([record], "ocsf")))
    assert all(key in finding for key in OCSF_REQUIRED)
    assert (finding["class_uid"], finding["category_uid"], finding["activity_id"]) == (2004, 2, 1)
    assert finding["type_uid"] == finding["class_uid"] * 100 + finding["activity_id"] == 200401
    assert finding["severity_id"] == severity_id and finding["severity"]
    assert finding["time"] == int(record.last_ts.timestamp() * 1000)
    meta = finding["metadata"]
    assert meta["version"].startswith("1.") and {"name", "vendor_name", "version"} <= set(meta["product"])
    info = finding["finding_info"]
    assert info["uid"] == record.id and info["title"] and info["desc"] == record.anomaly
    assert info["attacks"] == [{"technique": {"uid": "T1110", "name": "Brute Force"},
                                "sub_technique": {"uid": "T1110.001",
                                "name": "Password Guessing"}, "tactic": {"name": "Credential Access"}}]
    for observable in finding["observables"]:
        assert OCSF_OBSERVABLE_TYPE_IDS[observable["type"]] == observable["type_id"]
    assert {o["type_id"] for o in finding["observables"]} == {1, 2, 4, 6, 8, 9}
    assert (finding["status_id"], finding["status"], finding["comment"]) == (3, "Suppressed", "known scanner")
    assert finding["evidences"][0]["data"]["text"] == record.evidence.exemplars[0].text
    assert finding["risk_level"] == level.capitalize() and 0 <= finding["risk_level_id"] <= 4
    assert (finding["verdict_id"], finding["verdict"]) == (1, "False Positive")
    assert finding["priority_id"] == {"info": 1, "low": 1, "medium": 2, "high": 3, "critical": 4}[level]
    assert (finding["disposition_id"], finding["metadata"]["version"]) == (15, "1.7.0")
    assert ocsf_problems(finding, DETECTION_FINDING) == []


# Kibana's alert workflow: status open / acknowledged / closed, closing reasons as Kibana lists them
# (kbn-rule-data-utils; @kbn/response-ops-detections-close-reason, whose "other" logwarden does not use).
KIBANA_STATUSES = ("open", "acknowledged", "closed")
KIBANA_REASONS = ("duplicate", "false_positive", "true_positive", "benign_positive", "other")


@pytest.mark.parametrize(("status", "reason", "kibana", "ocsf_status", "verdict"), [
    ("open", None, "open", (1, "New"), None),
    ("acknowledged", None, "acknowledged", (2, "In Progress"), None),
    ("in_progress", None, "acknowledged", (2, "In Progress"), None),
    ("closed", "true_positive", "closed", (4, "Resolved"), (2, "True Positive")),
    ("closed", "benign_positive", "closed", (3, "Suppressed"), (5, "Benign")),
    ("closed", "false_positive", "closed", (3, "Suppressed"), (1, "False Positive")),
    ("closed", "duplicate", "closed", (5, "Archived"), (10, "Duplicate")),
])
def test_every_review_state_exports_valid_ecs_9_4_and_ocsf_1_7(status, reason, kibana, ocsf_status, verdict):
    when = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
    record = make_record(status=status, close_reason=reason, reviewer="ana", reviewed_at=when,
                         techniques=[Technique(id="T1110.001", name="Password Guessing", tactic="Credential Access")],
                         indicators=Indicators(ips=["203.0.113.7"], users=["root"], hosts=["web-1"]))
    doc = json.loads(next(export_records([record], "ecs")))
    assert ecs_problems(doc) == []
    alert = doc["kibana"]["alert"]
    assert alert["workflow_status"] == kibana and alert["workflow_status"] in KIBANA_STATUSES
    assert alert.get("workflow_reason") == reason and (reason is None or reason in KIBANA_REASONS)
    assert (alert["workflow_user"], alert["workflow_status_updated_at"]) == ("ana", "2026-11-30T08:00:00.000Z")
    finding = json.loads(next(export_records([record], "ocsf")))
    assert ocsf_problems(finding, DETECTION_FINDING) == []
    assert (finding["status_id"], finding["status"]) == ocsf_status
    assert ((finding["verdict_id"], finding["verdict"]) if "verdict_id" in finding else None) == verdict


def test_the_validators_catch_what_the_schemas_forbid():
    """The checks can fail: a field ECS lacks, a value outside an enum, a missing required attribute."""
    doc = json.loads(next(export_records([make_record()], "ecs")))
    doc["event"]["kind"] = "finding"
    doc["event"]["outcome_code"] = 3
    assert {p.split(":")[0] for p in ecs_problems(doc)} == {"event.kind", "event.outcome_code"}
    finding = json.loads(next(export_records([make_record()], "ocsf")))
    finding["status_id"] = 9
    finding["verdict_id"] = 42
    del finding["finding_info"]
    assert {p.split(":")[0] for p in ocsf_problems(finding, DETECTION_FINDING)} == {
        "status_id", "verdict_id", "finding_info"}


# -- general -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_line_per_record_even_with_naive_times(fmt):
    naive = datetime(2026, 11, 29, 12, 0, 0)
    records = [make_record(line_start=n, line_end=n + 1, first_ts=naive, last_ts=naive, anomaly=HOSTILE,
                           evidence=Evidence(exemplars=[ExemplarLine(line_no=n, text=HOSTILE)]))
               for n in range(1, 4)]
    lines = list(export_records(records, fmt))
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    if fmt != "cef":
        assert all(isinstance(json.loads(line), dict) for line in lines)


def test_invalid_indicator_ips_never_reach_ip_fields():
    record = make_record(indicators=Indicators(ips=["999.1.1.1", "fe80::1%eth0x"]))
    doc = json.loads(next(export_records([record], "ecs")))
    assert "source" not in doc
    for observable in json.loads(next(export_records([record], "ocsf")))["observables"]:
        if observable["type_id"] == 2:
            ipaddress.ip_address(observable["value"])


def test_unknown_format():
    with pytest.raises(InputError, match="Unknown export format"):
        list(export_records([make_record()], "xml"))


def test_times_are_converted_to_utc():
    record = make_record(last_ts=datetime(2026, 11, 29, 18, 3, tzinfo=timezone(timedelta(hours=8))))
    assert json.loads(next(export_records([record], "ecs")))["@timestamp"] == "2026-11-29T10:03:00.000Z"
    assert json.loads(next(export_records([record], "ocsf")))["time"] == 1795946580000
